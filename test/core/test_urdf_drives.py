"""A URDF's motor wiring (issue 25): ``<transmission>`` (ROS 1 style) and ``<ros2_control>`` blocks are read
(joint names, reductions, offsets, command interfaces and their limits), become the model's motor groups,
and survive a round trip through the URDF export and through CLARAty XML."""

from __future__ import annotations

import math
import warnings

import pytest

from mechanism_model_core import load_model, save_model
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.io.urdf import URDFWarning, loads_urdf, to_urdf

ROBOT = """\
<?xml version="1.0"?>
<robot name="cart">
  <link name="base"/>
  <link name="wheel"/>
  <link name="mast"/>
  <joint name="wheel_joint" type="continuous">
    <parent link="base"/><child link="wheel"/><axis xyz="0 1 0"/>
    <limit effort="20" velocity="12"/>
  </joint>
  <joint name="mast_joint" type="revolute">
    <parent link="base"/><child link="mast"/><origin xyz="0 0 0.4"/><axis xyz="0 0 1"/>
    <limit lower="-1.5" upper="1.5" effort="5" velocity="1"/>
  </joint>
  <transmission name="wheel_trans">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="wheel_joint">
      <hardwareInterface>hardware_interface/VelocityJointInterface</hardwareInterface>
      <mechanicalReduction>-50</mechanicalReduction>
    </joint>
    <actuator name="wheel_motor"><mechanicalReduction>-50</mechanicalReduction></actuator>
  </transmission>
  <transmission name="ghost_trans">
    <type>transmission_interface/SimpleTransmission</type>
    <joint name="no_such_joint"><mechanicalReduction>2</mechanicalReduction></joint>
  </transmission>
  <ros2_control name="CartSystem" type="system">
    <hardware>
      <plugin>mock_components/GenericSystem</plugin>
      <param name="calculate_dynamics">true</param>
    </hardware>
    <joint name="wheel_joint">
      <command_interface name="velocity">
        <param name="min">-8</param>
        <param name="max">8</param>
      </command_interface>
      <state_interface name="position"/>
      <state_interface name="velocity"/>
    </joint>
    <joint name="mast_joint">
      <command_interface name="position">
        <param name="min">-3</param>
        <param name="max">1.2</param>
      </command_interface>
      <state_interface name="position"/>
    </joint>
    <transmission name="mast_trans">
      <plugin>transmission_interface/SimpleTransmission</plugin>
      <actuator name="mast_motor" role="actuator1"/>
      <joint name="mast_joint" role="joint1">
        <mechanical_reduction>160</mechanical_reduction>
        <offset>0.25</offset>
      </joint>
    </transmission>
  </ros2_control>
</robot>
"""


def _no_lines(items):
    return [{k: v for k, v in d.items() if k != "line"} for d in items]


def _load(text, name="cart.urdf"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = loads_urdf(text, name=name)
    return m, [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]


def test_transmissions_and_ros2_control_are_read_and_a_missing_joint_is_warned_at_its_line():
    m, said = _load(ROBOT)
    ghost_line = next(n for n, ln in enumerate(ROBOT.splitlines(), 1) if "no_such_joint" in ln)
    assert any(s.startswith(f"cart.urdf:{ghost_line}: transmission 'ghost_trans': joint 'no_such_joint'")
               for s in said), said
    tr = {t["name"]: t for t in m.metadata["transmissions"]}
    assert tr["wheel_trans"]["joints"] == [{"name": "wheel_joint", "reduction": -50.0, "offset": 0.0,
                                           "interfaces": ["hardware_interface/VelocityJointInterface"]}]
    assert tr["mast_trans"]["joints"][0]["reduction"] == 160.0 and tr["mast_trans"]["joints"][0]["offset"] == 0.25
    assert tr["ghost_trans"]["joints"] == []
    (rc,) = m.metadata["ros2_control"]
    assert rc["plugin"] == "mock_components/GenericSystem" and rc["parameters"] == {"calculate_dynamics": "true"}
    assert rc["joints"][0]["command_interfaces"] == {"velocity": {"min": "-8", "max": "8"}}


def test_they_become_motor_groups_within_the_joints_own_limits(tmp_path):
    path = tmp_path / "cart.urdf"
    path.write_text(ROBOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        m = load_model(str(path))
    groups = load_motor_groups(m)
    wheel = groups["velocity_controller"]
    (motor,) = wheel.motors
    assert (motor.joint, motor.direction, motor.gear, motor.name) == ("wheel_joint", -1, 50.0, "wheel_motor")
    assert motor.limits.velocity == 8.0            # the command range, inside the joint's 12 rad/s
    (mast,) = groups["position_controller"].motors
    assert (mast.gear, mast.offset, mast.direction) == (160.0, 0.25, 1)
    assert (mast.limits.lower, mast.limits.upper) == (-1.5, 1.2)    # -3 clipped to the joint's -1.5
    assert groups.hardware == "mock_components/GenericSystem"


def test_the_wiring_survives_a_round_trip_through_the_urdf_export(tmp_path):
    m, _ = _load(ROBOT)
    with pytest.warns(UserWarning, match=r"<transmission name='ghost_trans'> not written"):
        text = to_urdf(m)      # the block naming a joint the robot lacks would not load in ros2_control
    m2, said = _load(text, "export.urdf")
    assert not said
    kept = [t for t in m.metadata["transmissions"] if t["name"] != "ghost_trans"]
    assert _no_lines(m2.metadata["transmissions"]) == _no_lines(kept)
    assert _no_lines(m2.metadata["ros2_control"]) == _no_lines(m.metadata["ros2_control"])


def test_and_through_claraty_xml_as_motor_groups(tmp_path):
    path = tmp_path / "cart.urdf"
    path.write_text(ROBOT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        m = load_model(str(path))
    xml = tmp_path / "cart.xml"
    save_model(m, str(xml))
    back = load_motor_groups(load_model(str(xml)))
    before = load_motor_groups(m)
    assert list(back) == list(before)
    for name in before:
        for a, b in zip(before[name].motors, back[name].motors):
            assert (a.joint, a.direction, a.gear, a.offset, a.name) == (b.joint, b.direction, b.gear, b.offset,
                                                                         b.name)
            for f in ("lower", "upper", "velocity", "effort"):
                x, y = getattr(a.limits, f), getattr(b.limits, f)
                assert x == y or (math.isinf(x) and math.isinf(y)), (name, f, x, y)


def test_a_bad_reduction_is_ignored_with_a_warning_not_an_error():
    text = ROBOT.replace("<mechanicalReduction>-50</mechanicalReduction>\n    </joint>",
                         "<mechanicalReduction>fast</mechanicalReduction>\n    </joint>")
    m, said = _load(text)
    assert any("reduction 'fast' is not a number; ignored" in s for s in said)
    tr = {t["name"]: t for t in m.metadata["transmissions"]}
    assert tr["wheel_trans"]["joints"][0]["reduction"] == 1.0


def test_an_exported_block_whose_joint_is_gone_is_left_out_with_a_warning():
    from mechanism_model_core.builder import build_mechanism

    m, _ = _load(ROBOT)
    # the same mechanism without the mast: its <ros2_control> block names mast_joint
    bodies = [b for b in m.bodies if b.name != "mast"]
    m2 = build_mechanism(m.name, bodies, m.ground, m.source, m.metadata)
    with pytest.warns(UserWarning, match=r"<ros2_control name='CartSystem'> not written.*mast_joint"):
        text = to_urdf(m2)
    assert "<ros2_control" not in text and "wheel_trans" in text
