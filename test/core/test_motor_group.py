"""Motor groups (CLARAty 13.2): definitions read from the library's model files and from YAML, load-time
errors with file and line, and the safety rules: NaN/inf refused whole, every other command clamped into the
limits and reported, rates limited, trajectories checked before they are sent."""

import math
import textwrap

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from mechanism_model_core import ModelFileError, load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion import (CommandInterface, ControllerKind, InvalidCommand, Motor, MotorGroup,
                                             MotorLimits)

ROCKY8 = model_path("rocky8/rocky8_rover.xml")


@pytest.fixture(scope="module")
def rocky8():
    return load_model(ROCKY8)


@pytest.fixture(scope="module")
def rocky8_motors(rocky8):
    return load_motor_groups(rocky8)


# ---------------------------------------------------------------------------------------------- library
def test_rocky8_groups_come_from_the_attached_files(rocky8_motors):
    assert list(rocky8_motors) == ["steering_controller", "wheel_controller", "mast_controller", "arm_controller"]
    sides = [f"{s}_{p}" for s in ("left", "right") for p in ("front", "middle", "rear")]
    steer = rocky8_motors["steering_controller"]
    assert steer.joint_names == tuple(w + "_steer" for w in sides)
    assert (steer.controller, steer.interface) == (ControllerKind.FORWARD_COMMAND, CommandInterface.POSITION)
    wheels = rocky8_motors["wheel_controller"]
    assert wheels.joint_names == tuple(w + "_drive" for w in sides)
    assert wheels.interface is CommandInterface.VELOCITY
    assert rocky8_motors["mast_controller"].joint_names == ("mast_pan", "mast_tilt")
    assert rocky8_motors["arm_controller"].controller.plugin == \
        "joint_trajectory_controller/JointTrajectoryController"
    # passive rockers and bogies and the floating chassis have no motor
    for j in ("left_rocker", "right_rocker", "left_bogie", "chassis"):
        with pytest.raises(KeyError):
            rocky8_motors.group_of(j)
    assert rocky8_motors.group_of("mast_tilt").name == "mast_controller"


def test_limits_default_to_the_models_and_narrow_where_given(rocky8, rocky8_motors):
    steer = rocky8_motors["steering_controller"]
    # from rocky8_rocker_bogie.xml's Joint_Limits: +-pi/2, vmax 1, torque 20; amax from the group
    np.testing.assert_allclose(steer.lower, -math.pi / 2)
    np.testing.assert_allclose(steer.upper, math.pi / 2)
    np.testing.assert_allclose(steer.velocity, 1.0)
    np.testing.assert_allclose(steer.effort, 20.0)
    np.testing.assert_allclose(steer.acceleration, 4.0)
    wheels = rocky8_motors["wheel_controller"]
    assert np.all(np.isinf(wheels.lower)) and np.all(np.isinf(wheels.upper))     # continuous joints
    np.testing.assert_allclose(wheels.velocity, 3.0)                               # given: model has none
    tilt = rocky8_motors["mast_controller"].motor("mast_tilt")
    j = rocky8.joint("mast_tilt")
    assert (tilt.limits.lower, tilt.limits.upper, tilt.limits.velocity) == (j.lower[0], j.upper[0], j.velocity)
    assert [m.direction for m in wheels] == [1, 1, 1, -1, -1, -1]


@pytest.mark.parametrize("name, group, n", [("mer/mer_idd.xml", "arm_controller", 5),
                                            ("lemur/lemur_hexapod.xml", "legs_controller", 18),
                                            ("rocky8/rocky8_arm.xml", "arm_controller", 5)])
def test_other_library_groups(name, group, n):
    groups = load_motor_groups(load_model(model_path(name)))
    assert list(groups) == [group] and len(groups[group]) == n


def test_a_model_without_groups_gives_none():
    assert len(load_motor_groups(load_model(model_path("fido/fido_rover.xml")))) == 0


# ---------------------------------------------------------------------------------------------- files
ARM_ONLY = model_path("rocky8/rocky8_arm.xml")


def _assembly(tmp_path, body: str, name="asm.xml"):
    """An assembly file in tmp_path attaching library files by absolute path."""
    text = ('<?xml version="1.0"?>\n<Mechanism_Model name="asm">\n'
            + textwrap.indent(textwrap.dedent(body).strip("\n"), "  ") + "\n</Mechanism_Model>\n")
    p = tmp_path / name
    p.write_text(text)
    return p


def _groups(path):
    return load_motor_groups(load_model(path))


def test_the_assembly_replaces_an_appendage_group_and_prefixes_apply(tmp_path):
    p = _assembly(tmp_path, f"""
        <Constant name="slow" value="0.25"/>
        <Attach file="{ARM_ONLY}" mount="ground"/>
        <Attach file="{model_path('mer/mer_idd.xml')}" mount="ground" prefix="b_"/>
        <Motor_Group name="yaw_only" controller="forward_command" interface="position">
          <Motor joint="arm_yaw" vmax="slow" min="-M_PI/4" max="M_PI/4"/>
        </Motor_Group>
        """)
    groups = _groups(p)
    # rocky8_arm's own arm_controller names arm_yaw, so the assembly's definition replaces it
    assert list(groups) == ["b_arm_controller", "yaw_only"]
    assert groups["b_arm_controller"].joint_names[0] == "b_idd_azimuth"
    m = groups["yaw_only"].motor("arm_yaw")
    assert (m.limits.lower, m.limits.upper, m.limits.velocity) == (-math.pi / 4, math.pi / 4, 0.25)


@pytest.mark.parametrize("motor, message", [
    ('<Motor joint="arm_yw"/>', "unknown joint 'arm_yw' (did you mean 'arm_yaw'"),
    ('<Motor joint="arm_yaw" vmax="5"/>', "velocity limit 5 is wider than the joint's own limit 0.5"),
    ('<Motor joint="arm_yaw" min="-3"/>', "lower position limit -3 is wider"),
    ('<Motor joint="arm_yaw" gear="0"/>', "gear must be a positive number"),
    ('<Motor joint="arm_yaw" amax="-1"/>', "acceleration limit must be positive"),
    ('<Motor joint="arm_yaw" vmax="1/0"/>', "vmax"),
    ('<Motor joint="arm_yaw"/><Motor joint="arm_yaw"/>', "lists joint(s) ['arm_yaw'] twice"),
])
def test_bad_motor_definitions_name_file_and_line(tmp_path, motor, message):
    p = _assembly(tmp_path, f"""
        <Attach file="{ARM_ONLY}" mount="ground" prefix="x_"/>
        <ME_Body name="post"><ME_Joint name="arm_yaw" type="revolute">
          <Joint_Limits min="-1" max="1" vmax="0.5"/></ME_Joint></ME_Body>
        <Motor_Group name="g" controller="joint_trajectory">
          {motor}
        </Motor_Group>
        """)
    with pytest.raises(ModelFileError) as err:
        _groups(p)
    assert message in str(err.value)
    assert err.value.file == str(p)
    line = p.read_text().splitlines()[err.value.line - 1]
    assert "Motor" in line


def test_joints_that_cannot_have_a_motor(tmp_path):
    rover = model_path("rocky8/rocky8_rover.xml")
    cases = {"left_rocker": "passive", "chassis": "floating", "mast_post_joint": None,
             "left_front_drive": "no velocity limit"}
    m = load_model(rover)
    for joint, message in cases.items():
        if joint not in m.joint_names:
            continue
        p = _assembly(tmp_path, f"""
            <Attach file="{rover}" mount="ground"/>
            <Motor_Group name="g" controller="forward_command" interface="velocity">
              <Motor joint="{joint}"/>
            </Motor_Group>
            """)
        with pytest.raises(ModelFileError, match=message):
            _groups(p)


def test_a_coupled_joint_and_a_joint_in_two_groups_are_refused(tmp_path):
    rover = model_path("rocky8/rocky8_rover.xml")
    m = load_model(rover)
    assert m.joint("right_rocker").coupling is not None
    p = _assembly(tmp_path, f"""
        <Attach file="{model_path('four_bar/four_bar.xml')}" mount="ground"/>
        <Motor_Group name="a" controller="forward_command" interface="velocity"><Motor joint="crank" vmax="1"/>
          </Motor_Group>
        <Motor_Group name="b" controller="forward_command" interface="velocity"><Motor joint="crank" vmax="1"/>
          </Motor_Group>
        """)
    with pytest.raises(ModelFileError, match="in motor groups 'a' and 'b'"):
        _groups(p)
    p = _assembly(tmp_path, """
        <ME_Body name="l1"><ME_Joint name="j1"><Joint_Limits vmax="1"/></ME_Joint></ME_Body>
        <ME_Body name="l2" parent="l1"><ME_Joint name="j2"><Joint_Limits vmax="1"/>
          <Joint_Constraint expr="2*j1"/></ME_Joint></ME_Body>
        <Motor_Group name="g" controller="joint_trajectory"><Motor joint="j2"/></Motor_Group>
        """)
    with pytest.raises(ModelFileError, match="coupled"):
        _groups(p)


@pytest.mark.parametrize("group", ['name="9bad" controller="joint_trajectory"',
                                   'name="g" controller="diff_drive"',
                                   'name="g" controller="joint_trajectory" interface="torque"'])
def test_bad_group_attributes(tmp_path, group):
    p = _assembly(tmp_path, f"""
        <ME_Body name="l1"><ME_Joint name="j1"><Joint_Limits vmax="1"/></ME_Joint></ME_Body>
        <Motor_Group {group}><Motor joint="j1"/></Motor_Group>
        """)
    with pytest.raises(ModelFileError):
        _groups(p)


def test_position_control_needs_position_limits(tmp_path):
    p = _assembly(tmp_path, """
        <ME_Body name="l1"><ME_Joint name="j1" type="prismatic"><Joint_Limits min="-1e9" max="1e9" vmax="1"/>
          </ME_Joint></ME_Body>
        <Motor_Group name="g" controller="joint_trajectory"><Motor joint="j1"/></Motor_Group>
        """)
    with pytest.raises(ModelFileError, match="no finite position limits"):
        _groups(p)


YAML_ARM = """\
hardware:
  plugin: my_robot/ArmSystem
  parameters: {port: /dev/ttyUSB0}
update_rate: 250
motor_groups:
  arm_controller:
    controller: joint_trajectory
    interface: position
    amax: 1
    motors:
      - {joint: arm_yaw, gear: 160}
      - {joint: arm_shoulder, gear: 160}
      - {joint: arm_elbow, gear: 160}
      - {joint: arm_wrist, gear: 100}
      - {joint: arm_turret, gear: 100}
"""


def test_yaml_gives_the_same_groups_as_the_xml(tmp_path):
    arm = load_model(ARM_ONLY)
    p = tmp_path / "motors.yaml"
    p.write_text(YAML_ARM)
    from_yaml = load_motor_groups(arm, p)
    from_xml = load_motor_groups(arm)
    a, b = from_yaml["arm_controller"], from_xml["arm_controller"]
    assert a.joint_names == b.joint_names and a.motors == b.motors
    assert (from_yaml.hardware, from_yaml.hardware_parameters, from_yaml.update_rate) == \
        ("my_robot/ArmSystem", {"port": "/dev/ttyUSB0"}, 250)
    assert from_xml.hardware == "mock_components/GenericSystem"


@pytest.mark.parametrize("edit, message, line", [
    (("arm_yaw, gear", "arm_yow, gear"), "unknown joint 'arm_yow'", 11),
    (("gear: 160}\n      - {joint: arm_elbow", "gear: 160, speed: 2}\n      - {joint: arm_elbow"),
     "unknown motor key(s) ['speed']", 12),
    (("amax: 1", "amax: [1]"), "amax", 7),
    (("update_rate: 250", "update_rate: fast"), "update_rate", 1),
    (("motors:\n      - {joint: arm_yaw", "motors:\n      - {joint: arm_yaw, vmax: .nan"), "finite", 11),
    (("  arm_controller:", "  arm controller:"), "not a valid controller name", 7),
])
def test_yaml_errors_name_the_line(tmp_path, edit, message, line):
    p = tmp_path / "motors.yaml"
    assert edit[0] in YAML_ARM
    p.write_text(YAML_ARM.replace(edit[0], edit[1]))
    with pytest.raises(ModelFileError) as err:
        load_motor_groups(load_model(ARM_ONLY), p)
    assert message in str(err.value) and err.value.file == str(p)
    assert err.value.line == line


# ---------------------------------------------------------------------------------------------- commands
GROUP = MotorGroup("g", "forward_command", "position", [
    Motor("a", MotorLimits(-1.0, 2.0, 0.5, 3.0, 10.0)),
    Motor("b", MotorLimits(-math.inf, math.inf, 4.0, 1.0, 2.0)),
    Motor("c", MotorLimits(0.0, 0.0, 1.0, math.inf, 1.0)),
])

finite = st.floats(-1e6, 1e6, allow_nan=False)
commands = st.lists(finite, min_size=3, max_size=3)


@given(commands, st.sampled_from(list(CommandInterface)))
def test_clamp_never_leaves_the_limits_and_reports_every_change(values, interface):
    result = GROUP.clamp(values, interface)
    v = np.asarray(values)
    lo = {"position": [-1, -np.inf, 0], "velocity": [-0.5, -4, -1], "effort": [-10, -2, -1]}[interface.value]
    hi = {"position": [2, np.inf, 0], "velocity": [0.5, 4, 1], "effort": [10, 2, 1]}[interface.value]
    assert np.all(result.values >= lo) and np.all(result.values <= hi)
    inside = (v >= lo) & (v <= hi)
    np.testing.assert_array_equal(result.values[inside], v[inside])          # nothing else changes
    np.testing.assert_array_equal(result.clamped, ~inside)
    assert [x.joint for x in result.violations] == [n for n, ok in zip("abc", inside) if not ok]
    for x in result.violations:
        assert x.quantity == interface.value


@given(commands, st.integers(0, 2), st.sampled_from([math.nan, math.inf, -math.inf]))
def test_non_finite_commands_are_refused_whole(values, where, bad):
    values[where] = bad
    with pytest.raises(InvalidCommand, match="non-finite"):
        GROUP.clamp(values)


def test_command_shapes_and_names():
    with pytest.raises(InvalidCommand, match="2 values for 3 joints"):
        GROUP.clamp([0, 0])
    with pytest.raises(InvalidCommand, match="unknown joint"):
        GROUP.clamp({"a": 0, "b": 0, "c": 0, "d": 0})
    with pytest.raises(InvalidCommand, match="no value for joint"):
        GROUP.clamp({"a": 0, "b": 0})
    with pytest.raises(InvalidCommand):
        GROUP.clamp(["x", 0, 0])
    np.testing.assert_array_equal(GROUP.clamp({"c": 5, "b": 1, "a": 3}).values, [2, 1, 0])


@example(prev=[0.0, 0.5, 0.0], target=[0.0, -1.0158665659741592e-265, 0.0], dt=0.5,
         interface=CommandInterface.VELOCITY)   # prev - step rounded past a reachable target
@given(commands, commands, st.floats(0, 0.5), st.sampled_from([CommandInterface.POSITION,
                                                               CommandInterface.VELOCITY]))
def test_slew_bounds_the_rate(prev, target, dt, interface):
    prev = GROUP.clamp(prev, interface).values        # a command the group made
    r = GROUP.slew(prev, target, dt, interface)
    lo, hi = GROUP.limits_of(interface)
    assert np.all(r.values >= lo) and np.all(r.values <= hi)
    rate = GROUP.velocity if interface is CommandInterface.POSITION else GROUP.acceleration
    step = np.abs(r.values - prev)
    allowed = np.array([r * dt if math.isfinite(r) else math.inf for r in rate])
    assert np.all(step <= allowed * (1 + 1e-12) + 1e-12 * (1 + np.abs(prev)))
    # reaching the target is never withheld when the step is allowed
    reach = GROUP.clamp(target, interface).values
    free = np.abs(reach - prev) <= allowed
    np.testing.assert_allclose(r.values[free], reach[free])


def test_trajectory_check_finds_exactly_the_constructed_violations():
    arm = MotorGroup("arm", "joint_trajectory", "position", [
        Motor("j1", MotorLimits(-1, 1, 0.5, 2)), Motor("j2", MotorLimits(-2, 2, 1.0, 2))])
    t = [1.0, 2.0, 4.0]
    ok = [[0.4, 0.5], [0.8, 1.2], [0.0, 0.0]]
    assert arm.check_trajectory(t, ok, start=[0.0, 0.0]) == []
    # point 1 of j1 beyond its upper limit; the step 1 -> 2 of j2 at 1.5 rad/s > 1.0
    bad = [[0.7, 0.5], [1.1, 2.0], [0.0, 0.0]]
    found = {(v.joint, v.quantity, v.index) for v in arm.check_trajectory(t, bad)}
    assert found == {("j1", "position", 1), ("j2", "velocity", 1), ("j1", "velocity", 2)}
    # from the start: 0.9 rad in 1 s at 0.5 rad/s is too fast
    found = arm.check_trajectory([1.0], [[0.9, 0.0]], start=[0.0, 0.0])
    assert [(v.joint, v.quantity, v.index, round(v.value, 9)) for v in found] == [("j1", "velocity", 0, 0.9)]
    # given velocities and accelerations are checked too; a subset of joints in any order is allowed
    found = arm.check_trajectory([1.0], [[0.0]], velocities=[[1.5]], accelerations=[[-3.0]], joint_names=["j2"])
    assert {(v.quantity, v.limit) for v in found} == {("velocity", 1.0), ("acceleration", 2.0)}
    with pytest.raises(InvalidCommand, match="unknown joint"):
        arm.check_trajectory([1.0], [[0.0]], joint_names=["j3"])
    with pytest.raises(InvalidCommand, match="strictly"):
        arm.check_trajectory([1.0, 1.0], [[0, 0], [0, 0]])
    with pytest.raises(InvalidCommand, match="non-finite"):
        arm.check_trajectory([1.0], [[math.nan, 0]])


@given(st.floats(-10, 10), st.sampled_from([1, -1]), st.floats(0.01, 1000), st.floats(-5, 5))
def test_transmission_round_trip(q, direction, gear, offset):
    m = Motor("j", direction=direction, gear=gear, offset=offset)
    for iface in CommandInterface:
        assert m.to_joint(m.to_motor(q, iface), iface) == pytest.approx(q, rel=1e-12, abs=1e-9)
    assert m.to_motor(q, "position") == pytest.approx(direction * gear * q + offset)
    assert m.to_motor(q, "effort") == pytest.approx(q / (direction * gear))   # torque drops by the ratio
    assert m.name == "j_motor"


# ----------------------------------------------- a walking trajectory as each motor group receives it
def _legs():
    """Two groups: a leg (hip, knee, a wrist the gait does not move) and a second leg (hip only)."""
    lim = MotorLimits(-1.0, 1.0, 2.0, 10.0, 5.0)
    return [MotorGroup("leg1", "joint_trajectory", "position", [Motor("hip1", lim), Motor("knee1", lim),
                                                                Motor("wrist1", lim)]),
            MotorGroup("leg2", "joint_trajectory", "position", [Motor("hip2", lim)])]


def test_group_trajectories_hold_the_joints_that_do_not_walk():
    """The legged node's per-group commands (issue 23: were the node's own code): the walking joints follow
    the trajectory, the others hold their start at zero rate, each group's whole trajectory within limits."""
    from mechanism_model_core.locomotion.motor_group import group_trajectories

    t = np.array([0.1, 0.2, 0.3])
    walking = ["knee1", "hip1", "hip2"]
    P = np.array([[0.1, 0.2, -0.1], [0.15, 0.25, -0.12], [0.2, 0.3, -0.14]])
    V, A = np.full_like(P, 0.5), np.full_like(P, 1.0)
    start = {"hip1": 0.2, "knee1": 0.1, "wrist1": 0.7, "hip2": -0.1}
    out, why = group_trajectories(_legs(), t, walking, P, V, A, start)
    assert why == "" and set(out) == {"leg1", "leg2"}
    names, Q, Vg, Ag = out["leg1"]
    assert names == ["hip1", "knee1", "wrist1"]
    np.testing.assert_array_equal(Q, np.column_stack([P[:, 1], P[:, 0], np.full(3, 0.7)]))
    np.testing.assert_array_equal(Vg, np.column_stack([V[:, 1], V[:, 0], np.zeros(3)]))
    np.testing.assert_array_equal(Ag[:, 2], 0.0)
    np.testing.assert_array_equal(out["leg2"][1][:, 0], P[:, 2])


def test_group_trajectories_refuse_a_group_outside_its_limits_or_without_a_start():
    from mechanism_model_core.locomotion.motor_group import group_trajectories

    t = np.array([0.1, 0.2])
    P = np.array([[0.1, 0.9], [0.2, 1.5]])            # hip2 beyond its upper limit (1.0) at the second point
    V = A = np.zeros_like(P)
    start = {"hip1": 0.1, "knee1": 0.0, "wrist1": 0.0, "hip2": 0.85}
    out, why = group_trajectories(_legs(), t, ["hip1", "hip2"], P, V, A, start)
    assert out is None and why.startswith("leg2: ") and "hip2" in why and "position" in why
    out, why = group_trajectories(_legs(), t, ["hip1", "hip2"], P * 0.5, V, A, {"hip1": 0.1, "hip2": 0.4})
    assert out is None and why == "leg1: joints without joint_states"       # knee1, wrist1 unmeasured
