"""`mechanism-model ros2-control`: the <ros2_control> block and the controller_manager YAML written from the
motor groups, read back with lxml and PyYAML and compared with the model's joints and limits. (That the
export loads in the real ros2_control_node is test/ros/test_ros2_control_live.py.)"""

import pytest
import yaml
from lxml import etree

from mechanism_model_core import load_model
from mechanism_model_core.cli import main
from mechanism_model_core.library import model_path
from mechanism_model_core.io.motor_groups import load_motor_groups


def _export(tmp_path, model, *extra):
    urdf, ctl, block = tmp_path / "r.urdf", tmp_path / "c.yaml", tmp_path / "b.xml"
    assert main(["ros2-control", model, "--urdf", str(urdf), "--controllers", str(ctl), "--block", str(block),
                 *extra]) == 0
    return etree.parse(str(urdf)).getroot(), yaml.safe_load(ctl.read_text()), etree.parse(str(block)).getroot()


def _param(el, name):
    found = [p.text for p in el.findall("param") if p.get("name") == name]
    return float(found[0]) if found else None


def test_rocky8_block_matches_the_model(tmp_path):
    robot, ctl, block = _export(tmp_path, "rocky8/rocky8_rover.xml")
    mech = load_model(model_path("rocky8/rocky8_rover.xml"))
    motors = load_motor_groups(mech)
    rc = robot.find("ros2_control")
    assert etree.tostring(rc) .replace(b" ", b"").replace(b"\n", b"") == \
        etree.tostring(block).replace(b" ", b"").replace(b"\n", b"")
    assert rc.find("hardware/plugin").text == "mock_components/GenericSystem"
    urdf_joints = {j.get("name"): j for j in robot.findall("joint")}
    joints = {j.get("name"): j for j in rc.findall("joint")}
    for g in motors.groups:
        for k, name in enumerate(g.joint_names):
            el = joints.pop(name)
            assert name in urdf_joints
            (ci,) = el.findall("command_interface")
            assert ci.get("name") == g.interface.value
            lo, hi = g.limits_of()
            j = mech.joint(name)
            if g.interface.value == "position":
                assert (_param(ci, "min"), _param(ci, "max")) == (j.lower[0], j.upper[0])
            else:      # the wheels: +-vmax of the motor group
                assert (_param(ci, "min"), _param(ci, "max")) == (-3.0, 3.0) == (lo[k], hi[k])
            states = [s.get("name") for s in el.findall("state_interface")]
            assert states == ["position", "velocity"]
    # what is left: the passive suspension, state interfaces only; the coupled rocker mimics the other
    assert sorted(joints) == ["left_bogie", "left_rocker", "right_bogie", "right_rocker"]
    for el in joints.values():
        assert el.find("command_interface") is None
    assert joints["right_rocker"].find("param[@name='mimic']").text == "left_rocker"
    assert _param(joints["right_rocker"], "multiplier") == -1.0
    # floating chassis coordinates are not hardware joints
    assert not any(n.startswith("chassis") for n in joints)
    # transmissions: signed reduction = direction * gear
    trans = {t.find("joint").get("name"): float(t.find("joint/mechanical_reduction").text)
             for t in rc.findall("transmission")}
    assert trans["right_front_drive"] == -100.0 and trans["left_front_drive"] == 100.0
    assert trans["arm_wrist"] == 100.0 and len(trans) == 19


def test_rocky8_controller_yaml(tmp_path):
    _, ctl, _ = _export(tmp_path, "rocky8/rocky8_rover.xml")
    cm = ctl["controller_manager"]["ros__parameters"]
    assert cm["update_rate"] == 100
    assert cm["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert cm["steering_controller"]["type"] == "forward_command_controller/ForwardCommandController"
    assert cm["arm_controller"]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    steer = ctl["steering_controller"]["ros__parameters"]
    assert steer == {"joints": [f"{s}_{p}_steer" for s in ("left", "right") for p in ("front", "middle", "rear")],
                     "interface_name": "position"}
    assert ctl["wheel_controller"]["ros__parameters"]["interface_name"] == "velocity"
    arm = ctl["arm_controller"]["ros__parameters"]
    assert arm["joints"] == ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
    assert arm["command_interfaces"] == ["position"] and arm["state_interfaces"] == ["position", "velocity"]
    assert arm["constraints"]["arm_elbow"]["goal"] == 0.05
    assert "gains" not in arm


def test_velocity_groups_get_the_watchdog_controller_unless_told_otherwise(tmp_path):
    """Wheels (a forward-command velocity group) stop by themselves when commands stop (issue 19): their
    controller is TimedForwardCommandController with command_timeout; --command-timeout 0 writes the plain
    forward_command_controller; steering (positions) keeps it either way."""
    _, ctl, _ = _export(tmp_path, "rocky8/rocky8_rover.xml")
    cm = ctl["controller_manager"]["ros__parameters"]
    assert cm["wheel_controller"]["type"] == "mechanism_model_controllers/TimedForwardCommandController"
    assert ctl["wheel_controller"]["ros__parameters"]["command_timeout"] == 0.25
    assert "command_timeout" not in ctl["steering_controller"]["ros__parameters"]
    _, ctl, _ = _export(tmp_path, "rocky8/rocky8_rover.xml", "--command-timeout", "0.1")
    assert ctl["wheel_controller"]["ros__parameters"]["command_timeout"] == 0.1
    _, ctl, _ = _export(tmp_path, "rocky8/rocky8_rover.xml", "--command-timeout", "0")
    cm = ctl["controller_manager"]["ros__parameters"]
    assert cm["wheel_controller"]["type"] == "forward_command_controller/ForwardCommandController"
    assert "command_timeout" not in ctl["wheel_controller"]["ros__parameters"]


def test_hardware_plugin_parameters_and_passive_joints(tmp_path):
    robot, ctl, _ = _export(tmp_path, "rocky8/rocky8_rover.xml", "--hardware", "rocky8_hw/Rocky8System",
                            "--hardware-param", "port=/dev/ttyS0", "--update-rate", "250", "--no-passive")
    rc = robot.find("ros2_control")
    assert rc.find("hardware/plugin").text == "rocky8_hw/Rocky8System"
    assert {p.get("name"): p.text for p in rc.findall("hardware/param")} == {"port": "/dev/ttyS0"}
    assert "left_rocker" not in {j.get("name") for j in rc.findall("joint")}
    assert ctl["controller_manager"]["ros__parameters"]["update_rate"] == 250


def test_a_velocity_trajectory_group_gets_gains_and_home_is_the_initial_value(tmp_path):
    motors = tmp_path / "m.yaml"
    motors.write_text("motor_groups:\n  legs_controller:\n    controller: joint_trajectory\n"
                      "    interface: velocity\n    motors:\n" +
                      "".join(f"      - {{joint: leg{i}_knee}}\n" for i in range(1, 7)))
    robot, ctl, _ = _export(tmp_path, "lemur/lemur_hexapod.xml", "--motors", str(motors))
    legs = ctl["legs_controller"]["ros__parameters"]
    assert legs["command_interfaces"] == ["velocity"] and legs["gains"]["leg3_knee"]["p"] == 5.0
    mech = load_model(model_path("lemur/lemur_hexapod.xml"))
    rc = robot.find("ros2_control")
    for el in rc.findall("joint"):
        init = _param(el.find("state_interface[@name='position']"), "initial_value")
        assert init == pytest.approx(mech.home[mech.joint_slice(el.get("name"))][0])


def test_errors(tmp_path, capsys):
    assert main(["ros2-control", "fido/fido_rover.xml"]) == 1
    assert "defines no motor groups" in capsys.readouterr().err
    assert main(["ros2-control", "mer/mer_idd.xml", "--hardware-param", "novalue"]) == 1
    assert "NAME=VALUE" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("motor_groups:\n  g:\n    controller: joint_trajectory\n    motors: [{joint: idd_azimth}]\n")
    assert main(["ros2-control", "mer/mer_idd.xml", "--motors", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:4" in err and "did you mean 'idd_azimuth'" in err


def test_stdout_without_output_options(capsys):
    assert main(["ros2-control", "mer/mer_idd.xml"]) == 0
    out = capsys.readouterr().out
    block, _, ctl = out.partition("\n---\n")
    assert etree.fromstring(block.encode()).tag == "ros2_control"
    assert yaml.safe_load(ctl)["arm_controller"]["ros__parameters"]["joints"][0] == "idd_azimuth"


# ------------------------------------------------------------------ issue 19 item 11: hostile names
#: legal joint names (URDF and CLARAty take any string) that naive YAML writing turned into something else
ODD_JOINT_NAMES = ["key: value # c", "{a}", "tab\there", "new\nline", " leading space", "on", "null", "1.5",
                   "1e3", "- dash", "[x]", "'quote", '"double', "yes", "~", "&anchor"]


@pytest.mark.parametrize("controller, interface", [("joint_trajectory", "velocity"),
                                                   ("forward_command", "position")])
def test_every_joint_name_reads_back_as_itself(controller, interface):
    from mechanism_model_core.io.ros2_control import controllers_yaml
    from mechanism_model_core.locomotion import Motor, MotorGroup, MotorGroups, MotorLimits

    assert len(ODD_JOINT_NAMES) == 16
    group = MotorGroup("odd_controller", controller, interface,
                       [Motor(n, MotorLimits(-1.0, 1.0, 1.0, 1.0, 1.0)) for n in ODD_JOINT_NAMES])
    text = controllers_yaml(MotorGroups([group]))
    doc = yaml.safe_load(text)
    params = doc["odd_controller"]["ros__parameters"]
    assert params["joints"] == ODD_JOINT_NAMES
    assert all(type(j) is str for j in params["joints"])
    if controller == "joint_trajectory":
        constraints = params["constraints"]
        assert [k for k in constraints if k not in ("stopped_velocity_tolerance", "goal_time")] == ODD_JOINT_NAMES
        assert list(params["gains"]) == ODD_JOINT_NAMES
        assert all(constraints[n]["goal"] == 0.05 for n in ODD_JOINT_NAMES)
    # plain names stay unquoted (the file stays readable)
    assert "controller_manager:\n  ros__parameters:\n" in text


def test_output_dir_never_writes_outside_it(tmp_path):
    """A robot named ``../x`` (or an absolute path) writes DIR/_x.urdf, not DIR/../x.urdf."""
    src = load_model(model_path("rocky8/rocky8_rover.xml"))
    from mechanism_model_core.io.urdf import to_urdf
    for i, name in enumerate(["../x", "/tmp/abs", "..", "a/../../b"]):
        work = tmp_path / f"w{i}"
        out = work / "out"
        out.mkdir(parents=True)
        urdf = to_urdf(src).replace(f'<robot name="{src.name}"', f'<robot name="{name}"', 1)
        assert f'<robot name="{name}"' in urdf
        model = work / "robot.urdf"
        model.write_text(urdf)
        motors = work / "motors.yaml"
        motors.write_text("motor_groups:\n  wheel_controller:\n    controller: forward_command\n"
                          "    interface: velocity\n    motors:\n      - {joint: left_front_drive, vmax: 3.0}\n")
        assert main(["ros2-control", str(model), "--motors", str(motors), "-o", str(out)]) == 0
        written = sorted(p.name for p in out.iterdir())
        assert len(written) == 2 and all("/" not in w and not w.startswith(".") for w in written), written
        assert sorted(p.name for p in work.iterdir()) == ["motors.yaml", "out", "robot.urdf"]
