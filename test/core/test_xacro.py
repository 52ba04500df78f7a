"""xacro files read directly (issue 25): arguments, includes through ``$(find pkg)`` resolved by a package path
(``--package-path``, ``MM_PACKAGE_PATH``) without ROS, the same resolution for ``package://`` meshes, a
missing package named in the error, and the expansion checked against Pinocchio reading the same text."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from mechanism_model_core import ModelFileError, UnsafeModelFileError, forward_kinematics, load_model
from mechanism_model_core import package_paths as packages
from mechanism_model_core.io.xacro_file import expand_xacro

from .optional_deps import require

require("xacro", "xacro")

ARM_MACRO = """\
<?xml version="1.0"?>
<robot xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:macro name="arm" params="prefix length">
    <link name="${prefix}base"/>
    <link name="${prefix}upper">
      <collision><geometry><mesh filename="package://my_arm_description/meshes/upper.stl"/></geometry></collision>
    </link>
    <link name="${prefix}tool"/>
    <joint name="${prefix}shoulder" type="revolute">
      <parent link="${prefix}base"/><child link="${prefix}upper"/>
      <origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
      <limit lower="${-pi/2}" upper="${pi/2}" effort="10" velocity="2"/>
    </joint>
    <joint name="${prefix}elbow" type="continuous">
      <parent link="${prefix}upper"/><child link="${prefix}tool"/>
      <origin xyz="${length} 0 0" rpy="0 0 ${pi/4}"/><axis xyz="0 0 1"/>
    </joint>
  </xacro:macro>
</robot>
"""

ROBOT = """\
<?xml version="1.0"?>
<robot name="two_link" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:arg name="prefix" default=""/>
  <xacro:arg name="length" default="0.5"/>
  <xacro:include filename="$(find my_arm_description)/urdf/arm.xacro"/>
  <xacro:arm prefix="$(arg prefix)" length="$(arg length)"/>
</robot>
"""


@pytest.fixture()
def workspace(tmp_path, monkeypatch):
    """A package my_arm_description (package.xml, urdf/arm.xacro, meshes/upper.stl) under tmp/pkgs and a
    robot.urdf.xacro elsewhere that includes it through $(find)."""
    for var in ("MM_PACKAGE_PATH", "ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"):
        monkeypatch.delenv(var, raising=False)
    packages.clear_package_paths()
    pkg = tmp_path / "pkgs" / "src_checkout"          # a folder name that is not the package's name
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "meshes").mkdir()
    (pkg / "package.xml").write_text("<package format='3'><name>my_arm_description</name></package>\n")
    (pkg / "urdf" / "arm.xacro").write_text(ARM_MACRO)
    (pkg / "meshes" / "upper.stl").write_text("solid s\nendsolid s\n")
    robot = tmp_path / "robots" / "robot.urdf.xacro"
    robot.parent.mkdir()
    robot.write_text(ROBOT)
    yield str(robot), str(pkg)
    packages.clear_package_paths()


def test_arguments_and_an_include_through_find_with_the_package_path_in_the_environment(workspace, monkeypatch):
    robot, pkg = workspace
    monkeypatch.setenv("MM_PACKAGE_PATH", os.pathsep.join(["/nonexistent", f"my_arm_description={pkg}"]))
    m = load_model(robot, xacro_args={"prefix": "r1_", "length": "0.7"})
    assert set(m.frame_names) == {"r1_base", "r1_upper", "r1_tool"}
    assert m.coordinate_names == ("r1_shoulder", "r1_elbow")
    assert m.joint("r1_shoulder").upper == pytest.approx((np.pi / 2,))
    assert m.source == robot
    T = forward_kinematics(m, [0.0, 0.0]).pose("r1_tool")
    np.testing.assert_allclose(T[:3, 3], [0.7, 0, 0.3], atol=1e-15)
    # defaults of <xacro:arg>
    m = load_model(robot)
    assert "base" in m.frame_names and forward_kinematics(m, [0.0, 0.0]).pose("tool")[0, 3] == pytest.approx(0.5)
    # the package:// mesh resolves through the same package path
    (shape,) = m.body("upper").shapes
    assert shape.mesh_path == os.path.join(pkg, "meshes", "upper.stl")


def test_a_folder_of_packages_is_searched_by_package_xml(workspace, monkeypatch):
    robot, pkg = workspace
    monkeypatch.setenv("MM_PACKAGE_PATH", os.path.dirname(pkg))     # the folder holding src_checkout/
    with pytest.raises(ModelFileError, match="my_arm_description"):
        load_model(robot)       # one level down, named src_checkout: only a NAME=DIR or DIR that is it
    monkeypatch.setenv("MM_PACKAGE_PATH", pkg)                      # the package folder: package.xml names it
    assert "tool" in load_model(robot).frame_names


def test_a_missing_package_is_named_with_the_file_that_asks_for_it(workspace):
    robot, _ = workspace
    with pytest.raises(ModelFileError) as info:
        load_model(robot)
    err = info.value
    assert err.file == robot
    assert "package 'my_arm_description' not found" in str(err) and "--package-path my_arm_description=DIR" \
        in str(err)


def test_a_missing_package_inside_an_included_file_names_that_file(workspace, monkeypatch):
    robot, pkg = workspace
    monkeypatch.setenv("MM_PACKAGE_PATH", f"my_arm_description={pkg}")
    inc = os.path.join(pkg, "urdf", "arm.xacro")
    with open(inc) as fh:
        text = fh.read()
    with open(inc, "w") as fh:
        fh.write(text.replace('<xacro:macro name="arm"', '<xacro:include filename="$(find gripper_pkg)/g.xacro"/>'
                              '\n  <xacro:macro name="arm"'))
    with pytest.raises(ModelFileError, match="package 'gripper_pkg' not found") as info:
        load_model(robot)
    assert info.value.file == inc


def test_xacro_errors_name_the_file(workspace, monkeypatch):
    robot, pkg = workspace
    monkeypatch.setenv("MM_PACKAGE_PATH", f"my_arm_description={pkg}")
    with open(robot, "w") as fh:
        fh.write(ROBOT.replace('length="$(arg length)"', 'length="${undefined_property}"'))
    with pytest.raises(ModelFileError, match="xacro: .*undefined_property") as info:
        load_model(robot)
    assert info.value.file in (robot, os.path.join(pkg, "urdf", "arm.xacro"))


def test_an_entity_in_an_included_file_is_refused(workspace, monkeypatch):
    robot, pkg = workspace
    monkeypatch.setenv("MM_PACKAGE_PATH", f"my_arm_description={pkg}")
    inc = os.path.join(pkg, "urdf", "arm.xacro")
    with open(inc, "w") as fh:
        fh.write('<?xml version="1.0"?>\n<!DOCTYPE robot [ <!ENTITY x SYSTEM "file:///etc/passwd"> ]>\n'
                 '<robot xmlns:xacro="http://www.ros.org/wiki/xacro"><link name="&x;"/></robot>\n')
    with pytest.raises(UnsafeModelFileError, match="entities") as info:
        load_model(robot)
    assert info.value.file == inc and info.value.line == 2


def test_the_expansion_matches_pinocchio(workspace, monkeypatch):
    pin = require("pinocchio", "test")
    from .test_pinocchio_oracle import pin_configuration

    robot, pkg = workspace
    monkeypatch.setenv("MM_PACKAGE_PATH", f"my_arm_description={pkg}")
    text = expand_xacro(robot, {"prefix": "a_", "length": "0.45"})
    m = load_model(robot, xacro_args={"prefix": "a_", "length": "0.45"})
    pmodel = pin.buildModelFromXML(text)
    pdata = pmodel.createData()
    rng = np.random.default_rng(5)
    for _ in range(10):
        q = m.random_configuration(rng)
        pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, m, q))
        poses = forward_kinematics(m, q).all_poses()
        for f in m.frame_names:
            np.testing.assert_allclose(pdata.oMf[pmodel.getFrameId(f, pin.FrameType.BODY)].homogeneous, poses[f],
                                       atol=1e-9)


def test_the_command_line_takes_xacro_args_and_package_paths(workspace, tmp_path):
    robot, pkg = workspace
    env = {k: v for k, v in os.environ.items() if k not in ("MM_PACKAGE_PATH", "ROS_PACKAGE_PATH",
                                                           "AMENT_PREFIX_PATH")}
    cmd = [sys.executable, "-m", "mechanism_model_core"]
    out = subprocess.run(cmd + ["info", robot, "--xacro-arg", "prefix:=left_", "--package-path",
                                f"my_arm_description={pkg}"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "left_shoulder" in out.stdout and "left_elbow" in out.stdout
    out = subprocess.run(cmd + ["info", robot], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 1 and "package 'my_arm_description' not found" in out.stderr
    urdf = tmp_path / "expanded.urdf"
    out = subprocess.run(cmd + ["convert", robot, str(urdf), "--xacro-arg", "length:=0.9", "--package-path",
                                f"my_arm_description={pkg}"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_model(str(urdf))
    assert forward_kinematics(m, [0.0, 0.0]).pose("tool")[0, 3] == pytest.approx(0.9)
    out = subprocess.run(cmd + ["check", robot, "--xacro-arg", "prefix:=x_", "--package-path",
                                f"my_arm_description={pkg}"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0 and "ok (two_link: 3 bodies, 2 joints" in out.stdout, out.stderr
