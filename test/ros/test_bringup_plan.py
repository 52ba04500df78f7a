"""What rover.launch.py / walker.launch.py / arm.launch.py start, decided from the model
(``mechanism_model_ros.bringup_plan``): the robot's kind and nodes, one controller per motor group, a
robot_description that is a valid single-root URDF below the floating body whose <ros2_control> joints all
exist, the hardware plugin and its parameters, and the installed-plugin check (a fake ament prefix)."""

import os

import pytest
import yaml
from lxml import etree

from mechanism_model_core import load_model
from mechanism_model_core.errors import MechanismModelError
from mechanism_model_core.io.urdf_subtree import urdf_subtree
from mechanism_model_core.library import model_path
from mechanism_model_core.io.motor_groups import load_motor_groups

pytestmark = pytest.mark.ros

bp = pytest.importorskip("mechanism_model_ros.bringup_plan")


def _roots(urdf: str) -> set[str]:
    doc = etree.fromstring(urdf.encode())
    links = {el.get("name") for el in doc.findall("link")}
    children = {j.find("child").get("link") for j in doc.findall("joint")}
    return links - children


@pytest.mark.parametrize("model, kind, mover, fixed, base", [
    ("rocky8/rocky8_rover.xml", "rover", "locomotor", "odom", "chassis"),
    ("lemur/lemur_hexapod.xml", "walker", "legged", "lemur_body", "lemur_body"),
    ("mer/mer_idd.xml", "arm", "manipulator", "ground", None),
])
def test_the_model_decides_kind_nodes_controllers_and_fixed_frame(model, kind, mover, fixed, base):
    mech = load_model(model_path(model))
    p = bp.plan(mech)
    assert (p.kind, p.fixed_frame, p.base_frame, p.rviz_config) == (kind, fixed, base, f"{kind}.rviz")
    assert p.nodes[:3] == ["state_publisher", "kinematics_server", "statics_server"] and mover in p.nodes
    assert p.controllers == [g.name for g in load_motor_groups(mech).groups]
    assert p.hardware == "mock_components/GenericSystem"
    # the description: one root (the floating body for mobile robots), every <ros2_control> joint in the URDF
    doc = etree.fromstring(p.robot_description.encode())
    assert _roots(p.robot_description) == {base or mech.bodies[0].name}
    joints = {j.get("name") for j in doc.findall("joint")}
    block = doc.find("ros2_control")
    assert block is not None and block.find("hardware/plugin").text == "mock_components/GenericSystem"
    assert {j.get("name") for j in block.findall("joint")} <= joints
    # every link left is a frame of the model (on TF from the state publisher)
    assert all(mech.has_frame(el.get("name")) for el in doc.findall("link"))
    cm = yaml.safe_load(p.controllers_yaml)["controller_manager"]["ros__parameters"]
    assert set(p.controllers) | {"joint_state_broadcaster"} <= set(cm)


def test_the_rover_also_drives_its_mast_and_arm():
    p = bp.plan(load_model(model_path("rocky8/rocky8_rover.xml")))
    assert "manipulator" in p.nodes and {"mast_controller", "arm_controller"} <= set(p.controllers)


def test_a_real_plugin_gets_its_parameters_and_no_mock_ones():
    p = bp.plan(load_model(model_path("mer/mer_idd.xml")), hardware="odrive_ros2_control/ODriveHardwareInterface",
                hardware_params=bp.parse_hardware_params("{port: /dev/ttyACM0, baud: 115200, sim: true}"))
    hw = etree.fromstring(p.robot_description.encode()).find("ros2_control/hardware")
    assert hw.find("plugin").text == "odrive_ros2_control/ODriveHardwareInterface"
    assert {e.get("name"): e.text for e in hw.findall("param")} == {"port": "/dev/ttyACM0", "baud": "115200",
                                                                    "sim": "true"}


@pytest.mark.parametrize("text", ["[1, 2]", "{a: [1]}", "{: 1}", "{a: {b: 1}}", "a: b: c"])
def test_bad_hardware_params_are_refused_with_the_reason(text):
    with pytest.raises(bp.BringupError, match="hardware_params"):
        bp.parse_hardware_params(text)


def test_a_model_without_motors_is_refused():
    with pytest.raises(bp.BringupError, match="no motor groups"):
        bp.plan(load_model(model_path("fido/fido_rover.xml")))


def test_installed_plugins_come_from_the_ament_index(tmp_path):
    share = tmp_path / "share"
    (share / "ament_index" / "resource_index" / bp.HARDWARE_RESOURCE).mkdir(parents=True)
    (share / "ament_index" / "resource_index" / bp.HARDWARE_RESOURCE / "my_hw").write_text(
        "share/my_hw/plugins.xml\n")
    (share / "my_hw").mkdir()
    (share / "my_hw" / "plugins.xml").write_text(
        '<library path="my_hw"><class name="my_hw/MySystem" type="my_hw::MySystem" '
        'base_class_type="hardware_interface::SystemInterface"/></library>')
    assert set(bp.installed_hardware_plugins([str(tmp_path)])) == {"my_hw/MySystem"}
    bp.check_hardware_plugin("my_hw/MySystem", [str(tmp_path)])
    with pytest.raises(bp.BringupError, match=r"'no_such/Plugin' is not installed.*my_hw/MySystem"):
        bp.check_hardware_plugin("no_such/Plugin", [str(tmp_path)])


def test_the_wheel_watchdog_controller_must_be_installed(tmp_path):
    """The rover's wheel group gets mechanism_model_controllers' TimedForwardCommandController (issue 19): a
    bringup where it is not installed stops before starting anything, naming the package to build."""
    text = bp.plan(load_model(model_path("rocky8/rocky8_rover.xml"))).controllers_yaml
    with pytest.raises(bp.BringupError, match="mechanism_model_controllers"):
        bp.check_controller_plugins(text, [str(tmp_path)])
    index = tmp_path / "share" / "ament_index" / "resource_index" / bp.CONTROLLER_RESOURCE
    index.mkdir(parents=True)
    (index / "mechanism_model_controllers").write_text("share/mechanism_model_controllers/plugins.xml\n")
    (tmp_path / "share" / "mechanism_model_controllers").mkdir()
    (tmp_path / "share" / "mechanism_model_controllers" / "plugins.xml").write_bytes(
        open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "mechanism_model_controllers", "mechanism_model_controllers.xml"), "rb").read())
    bp.check_controller_plugins(text, [str(tmp_path)])


def test_urdf_subtree_keeps_the_tree_below_a_link_only():
    urdf = """<robot name="r"><link name="ground"/><link name="a"/><link name="b"/><link name="c"/>
      <link name="w"/><material name="red"><color rgba="1 0 0 1"/></material>
      <joint name="g_a" type="floating"><parent link="ground"/><child link="a"/></joint>
      <joint name="a_b" type="revolute"><parent link="a"/><child link="b"/></joint>
      <joint name="b_c" type="fixed"><parent link="b"/><child link="c"/></joint>
      <joint name="g_w" type="fixed"><parent link="ground"/><child link="w"/></joint></robot>"""
    out = etree.fromstring(urdf_subtree(urdf, "a").encode())
    assert [e.get("name") for e in out.findall("link")] == ["a", "b", "c"]
    assert [e.get("name") for e in out.findall("joint")] == ["a_b", "b_c"]
    assert out.find("material") is not None
    with pytest.raises(MechanismModelError, match="no link 'nowhere'"):
        urdf_subtree(urdf, "nowhere")
