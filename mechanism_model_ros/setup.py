"""mechanism_model_ros: pip-installable and an ament_python package.

``colcon build`` installs the nodes as executables in ``lib/mechanism_model_ros`` (where ``ros2 run`` and
``ros2 launch`` look for them) and the suite's top-level ``launch/``, ``config/`` and ``models/`` into
``share/mechanism_model_ros``. The interface definitions of ``mechanism_model_msgs`` ship inside the
Python package too (``mechanism_model_ros/interfaces``), for the Cyclone transport's generated types.
"""

import os

from setuptools import find_packages, setup

package_name = "mechanism_model_ros"
here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)


def _tree(folder: str):
    """data_files entries installing ``<top>/<folder>`` under ``share/<package>/<folder>``."""
    root = os.path.join(top, folder)
    out = []
    for dirpath, _, files in os.walk(root, followlinks=True):
        files = [os.path.relpath(os.path.join(dirpath, f), here) for f in sorted(files)
                 if not f.endswith((".pyc",)) and "__pycache__" not in dirpath]
        if files:
            dest = os.path.join("share", package_name, os.path.relpath(dirpath, top))
            out.append((dest, files))
    return out


setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*"]),
    package_data={package_name: ["interfaces/msg/*.msg", "interfaces/srv/*.srv", "interfaces/action/*.action",
                                 "interfaces_external/README.md", "interfaces_external/*/*/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ] + _tree("launch") + _tree("config") + _tree("models") + _tree("rviz"),
    python_requires=">=3.10",
    install_requires=["mechanism_model_core", "numpy>=1.21", "scipy>=1.8", "pyyaml>=5.4"],
    extras_require={"cyclone": ["cyclonedds>=0.10.5", "rosbags>=0.10"]},
    tests_require=["pytest"],       # `colcon test` runs the package's test/ with pytest (setup.cfg)
    zip_safe=False,
    maintainer="mechanism_model developers",
    maintainer_email="mechanism-model@example.org",
    description="ROS 2 nodes (TF for any mechanism model, FK/Jacobian/IK services) over rclpy or plain "
                "Cyclone DDS.",
    license="Apache-2.0",
    entry_points={"console_scripts": [
        "mechanism-model-serve = mechanism_model_ros.start_up:serve",
        "mechanism-model-call = mechanism_model_ros.client_cli:call_main",
        "mechanism-model-echo = mechanism_model_ros.client_cli:echo_main",
        "state_publisher = mechanism_model_ros.start_up:state_publisher",
        "kinematics_server = mechanism_model_ros.start_up:kinematics_server",
        "manipulator = mechanism_model_ros.start_up:manipulator",
        "statics_server = mechanism_model_ros.start_up:statics_server",
        "reach_server = mechanism_model_ros.start_up:reach_server",
        "locomotor = mechanism_model_ros.start_up:locomotor",
        "legged = mechanism_model_ros.start_up:legged",
    ]},
)
