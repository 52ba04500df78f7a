"""mechanism_model_core: pip-installable and an ament_python package (colcon builds it with this file)."""

import os
import sys

from setuptools import find_packages, setup

package_name = "mechanism_model_core"
here = os.path.dirname(os.path.abspath(__file__))


def _model_files():
    """The robot library (top-level models/) ships inside the package as mechanism_model_core/models."""
    root = os.path.join(here, package_name, "models")
    out = []
    for dirpath, _, files in os.walk(root, followlinks=True):
        for f in files:
            out.append(os.path.relpath(os.path.join(dirpath, f), os.path.join(here, package_name)))
    return out


# colcon's ament_python build (setup.py install / develop + symlink_data): also bin/mechanism-model, so that
# `source install/setup.bash` puts the CLI on PATH. Not for pip (PEP 517 wheels), whose console script
# already lands in the environment's bin.
_COLCON = bool({"install", "develop", "symlink_data"} & set(sys.argv[1:]))

# One YAML parser for every YAML file the core reads or writes (motor groups, wheeled-rover mobility files,
# ros2_control controller files): one extra, "yaml" (until session 7 also under a second name, "mobility").
_YAML = ["PyYAML>=5.4"]

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={package_name: ["io/*.dtd", "io/*.lark"] + _model_files()},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ] + ([("bin", [os.path.join(os.path.dirname(os.path.realpath(__file__)), "ros_bin", "mechanism-model")])]
         if _COLCON else []),
    python_requires=">=3.10",
    install_requires=["numpy>=1.21", "scipy>=1.8", "lxml>=4.8"],
    extras_require={
        "kindsl": ["lark>=1.1"],
        "render": ["matplotlib>=3.5"],
        "yaml": _YAML,                     # every YAML file: motor groups, mobility files, ros2_control
        "trajectory": ["toppra>=0.6"],     # time parameterization of joint paths (locomotion.trajectory)
        "mesh": ["trimesh>=3.9", "pycollada>=0.7"],   # mesh files (STL, OBJ; DAE through pycollada): terrain, bounding shapes
        "collision": ["coal>=3.0"],        # collision detection (mechanism_model_core.collision)
        "eaik": ["eaik>=1.2"],             # closed-form IK of decomposable 6R/7R arms (ik.closed_form.eaik_solver)
        "reach": ["h5py>=3.6", "tqdm>=4.60"],   # reachability map files, the CLI's progress bar (reach)
        "dask": ["distributed>=2022.2"],   # reachability maps on a Dask cluster (reach, executor="dask")
        "xacro": ["xacro>=2.0"],           # .xacro model files (io.xacro_file), expanded by the real xacro
    },
    zip_safe=False,
    maintainer="mechanism_model developers",
    maintainer_email="mechanism-model@example.org",
    description="One unified, stateless mechanism model (CLARAty) with forward, differential and inverse "
                "kinematics, for any robot.",
    license="Apache-2.0",
    entry_points={"console_scripts": ["mechanism-model = mechanism_model_core.cli:main"]},
)
