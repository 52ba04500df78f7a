"""Drive policy (turn radius, deadband, cmd_vel interpretations, zero speed, angular.y, turn centre) and the
Open Source Rover model, against figures recorded from OSR's own rover.py and an independent rigid-body check.

``test/data/osr/rover_py_cmd_vel.json`` holds the outputs of nasa-jpl/osr-rover-code's ``Rover.cmd_cb``
(ROS/osr_control/osr_control/rover.py @ e7c9e87, its osr_params.yaml dimensions, ROS stubbed, run once outside
this repository) on 227 twists for ``/cmd_vel`` and ``/cmd_vel_intuitive`` each: the CommandCorner and
CommandDrive fields it published. Where rover.py is geometrically right (front corners and their wheels,
middle wheels, straight driving, the in-place front-left/back-right corners and every in-place rate) ours
must equal it within 1e-9; rover.py's known errors (back corners computed with the front distance, two
in-place corners with swapped distances, a -6.4 m radius steered while driven straight, speeds past the
no-load rate) are left out and checked instead by the rigid-body oracle below, which knows only the
published dimensions.
"""

import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mechanism_model_core as mm
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.drive_policy import DrivePolicy, interpret
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion.mobility import MobilityError
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "osr", "rover_py_cmd_vel.json")
OSR = "osr/osr_rover.xml"
# published dimensions (osr_params.yaml): the oracle's only knowledge of the rover
D1, D2, D3, D4, RW = 0.177, 0.310, 0.274, 0.253, 0.075
CONTACTS = {"left_front": (D3, D1), "left_middle": (0.0, D4), "left_back": (-D2, D1),
            "right_front": (D3, -D1), "right_middle": (0.0, -D4), "right_back": (-D2, -D1)}
MIN_R, MAX_R = 0.45, 6.4
MAX_VEL = RW * 223.0 / 60 * 2 * math.pi


@pytest.fixture(scope="module")
def osr():
    return WheeledLocomotorModel(mm.load_model(model_path(OSR)))


@pytest.fixture(scope="module")
def rows():
    with open(DATA, encoding="utf-8") as f:
        return json.load(f)["rows"]


def osr_fields(W, cmd):
    """Our command in CommandCorner/CommandDrive terms: the model carries OSR's joint names and signs."""
    st_ = cmd.steering_by_joint(W)
    rt = cmd.rates_by_joint(W)
    corner = [st_[f"corner_{k}"] for k in ("left_front", "left_back", "right_front", "right_back")]
    drive = [rt[f"drive_{k}"] for k in ("left_front", "left_middle", "left_back", "right_front", "right_middle",
                                        "right_back")]
    return np.array(corner), np.array(drive)


def policy_for(W, intuitive):
    return W.policy.replace(interpretation="intuitive", zero_speed="steer_only") if intuitive else W.policy


def rigid_body_residual(cmd_corner, cmd_drive, twist):
    """Largest difference (m/s) between each wheel's rolling velocity (from the OSR-signed corner angles and
    drive rates) and the body twist's velocity at the wheel's published contact point."""
    corner = dict(zip(("left_front", "left_back", "right_front", "right_back"), cmd_corner))
    drive = dict(zip(("left_front", "left_middle", "left_back", "right_front", "right_middle", "right_back"),
                     cmd_drive))
    vx, vy, wz = twist
    worst = 0.0
    for name, (x, y) in CONTACTS.items():
        heading = -corner.get(name, 0.0)                     # OSR corners: z down
        speed = drive[name] * RW * (1.0 if name.startswith("left") else -1.0)
        v = speed * np.array([math.cos(heading), math.sin(heading)])
        worst = max(worst, float(np.linalg.norm(v - np.array([vx - wz * y, vy + wz * x]))))
    return worst


# ------------------------------------------------------------------------------------------- the model
def test_osr_model_has_the_published_geometry_and_osr_names(osr):
    g = osr.home_geometry
    for w, p in zip(osr.wheels, g.contact):
        side, end, _ = w.name.split("_")
        assert np.allclose(p[:2], CONTACTS[f"{side}_{end}"], atol=1e-12)
        assert w.drive_joint == f"drive_{side}_{end}"
        assert w.steering_joint == (None if end == "middle" else f"corner_{side}_{end}")
    assert np.allclose(g.radius, RW)
    assert np.allclose(osr.max_rates, MAX_VEL / RW)
    assert osr.centre == pytest.approx((0.0, 0.0), abs=1e-12)        # the middle axle, found from the wheels
    m = osr.mechanism
    assert m.joint("right_rocker").coupling is not None                 # the differential
    assert "right_rocker" not in m.independent_coordinates
    groups = load_motor_groups(m)
    assert sorted(groups.group_of("corner_left_front").joint_names) == sorted(
        ["corner_left_front", "corner_left_back", "corner_right_front", "corner_right_back"])


# ---------------------------------------------------------------------------------- against rover.py
def test_ours_equal_rover_py_where_it_is_geometrically_right(osr, rows):
    compared = {"front corners": 0, "middle rates": 0, "front rates": 0, "straight": 0, "in place": 0}
    for row in rows:
        vx, wz, ay, intuitive = row["linear_x"], row["angular_z"], row["angular_y"], row["intuitive"]
        osr_corner, osr_drive = np.array(row["cmd_corner"]), np.array(row["cmd_drive"])
        cmd = osr.command((vx, 0.0, wz), ay, mode="ackermann", policy=policy_for(osr, intuitive))
        assert cmd.ok, (row, cmd.reason)
        corner, drive = osr_fields(osr, cmd)
        if ay and not vx:                                   # rotate in place
            assert corner[[0, 3]] == pytest.approx(osr_corner[[0, 3]], abs=1e-9)
            assert drive == pytest.approx(osr_drive, abs=1e-9)
            compared["in place"] += 1
            continue
        # OSR's radius (the policy we claim to share): its sign convention, clip, straight
        w = -wz if (intuitive and vx < 0) else wz
        if vx == 0:
            radius = (MIN_R * MAX_VEL / wz if wz else math.inf) if intuitive else math.inf
        else:
            radius = vx / w if w else math.inf
        if math.isfinite(radius):
            radius = math.copysign(min(max(abs(radius), MIN_R), MAX_R), radius)
        straight = abs(radius) >= MAX_R
        if radius > -MAX_R:                                  # rover.py steers a -6.4 m arc it drives straight
            assert corner[[0, 2]] == pytest.approx(osr_corner[[0, 2]], abs=1e-9), row
            compared["front corners"] += 1
            if straight:
                assert corner == pytest.approx(osr_corner, abs=1e-9)
        osr_speed_cap = MAX_VEL if straight else abs(radius) / (abs(radius) + D1) * MAX_VEL
        if cmd.scale == 1.0 and vx <= osr_speed_cap and abs(vx) <= MAX_VEL:   # neither side limited the speed
            assert drive[[1, 4]] == pytest.approx(osr_drive[[1, 4]], abs=1e-9), row
            assert drive[[0, 3]] == pytest.approx(osr_drive[[0, 3]], abs=1e-9), row
            compared["middle rates"] += 1
            compared["front rates"] += 1
            if straight:
                assert drive == pytest.approx(osr_drive, abs=1e-9)
                compared["straight"] += 1
    print(compared)
    assert min(compared.values()) >= 12, compared       # every case is actually exercised
    assert compared["front corners"] >= 390, compared


def test_rover_py_back_corners_are_wrong_and_ours_are_rigid(osr, rows):
    """rover.py computes the back corners with the front distance d3: off the rigid motion wherever it
    turns; ours are rigid everywhere, for both interpretations, within 1e-12 m/s."""
    osr_bad = 0
    for row in rows:
        vx, wz, ay, intuitive = row["linear_x"], row["angular_z"], row["angular_y"], row["intuitive"]
        cmd = osr.command((vx, 0.0, wz), ay, mode="ackermann", policy=policy_for(osr, intuitive))
        corner, drive = osr_fields(osr, cmd)
        assert rigid_body_residual(corner, drive, cmd.twist) < 1e-12, row
        if cmd.twist[2] != 0 and not cmd.steer_only:
            osr_bad += rigid_body_residual(row["cmd_corner"], row["cmd_drive"], cmd.twist) > 1e-3
    assert osr_bad > 100


def test_radius_policy_on_the_recorded_grid(osr, rows):
    for row in rows:
        vx, wz, ay, intuitive = row["linear_x"], row["angular_z"], row["angular_y"], row["intuitive"]
        cmd = osr.command((vx, 0.0, wz), ay, mode="ackermann", policy=policy_for(osr, intuitive))
        v, _, w = cmd.twist
        if ay and not vx:
            assert v == 0 and w == pytest.approx(-ay * cmd.scale)     # in place about the middle axle
        elif w != 0:
            assert MIN_R - 1e-12 <= abs(v / w) < MAX_R
        if not intuitive and vx == 0 and not ay:
            assert not np.any(cmd.rates) and not np.any(cmd.twist)    # literal: zero speed stops
        if intuitive and vx == 0 and wz != 0:
            assert cmd.steer_only and not np.any(cmd.rates)
            corner, _ = osr_fields(osr, cmd)
            if MIN_R * MAX_VEL / abs(wz) >= MAX_R:
                assert corner == pytest.approx(np.zeros(4))             # beyond the deadband: straight
            else:
                assert np.sign(-corner[0]) == np.sign(wz)              # steered towards the turn


def test_intuitive_keeps_the_steering_direction_when_reversing(osr):
    lit = osr.command((-0.3, 0, 0.5), mode="ackermann")
    intu = osr.command((-0.3, 0, 0.5), mode="ackermann", policy=osr.policy.replace(interpretation="intuitive"))
    fwd = osr.command((0.3, 0, 0.5), mode="ackermann")
    i = osr.names.index("left_front_wheel")
    assert intu.steering[i] == pytest.approx(fwd.steering[i])            # steers left as when going forward
    j = osr.names.index("right_front_wheel")
    assert lit.steering[i] == pytest.approx(-fwd.steering[j])            # the rigid twist steers right: mirrored
    assert np.sign(lit.steering[i]) == -np.sign(fwd.steering[i])
    assert intu.twist[2] == pytest.approx(-0.5) and lit.twist[2] == pytest.approx(0.5)


# --------------------------------------------------------------------------------------- the policy
@pytest.fixture(scope="module")
def rocky8():
    return WheeledLocomotorModel(mm.load_model(model_path("rocky8/rocky8_rover.xml")))


def test_min_radius_clips_or_refuses(rocky8):
    clip = DrivePolicy(min_turn_radius=0.8)
    cmd = rocky8.command((0.4, 0, 1.0), mode="ackermann", policy=clip)
    assert cmd.ok and cmd.twist == pytest.approx([0.4, 0, 0.5]) and "clipped" in cmd.note
    ref = rocky8.command((0.4, 0, 1.0), mode="ackermann", policy=clip.replace(radius_limit="refuse"),
                         steering=np.full(6, 0.1))
    assert not ref.ok and "tighter than min_turn_radius" in ref.reason
    assert not np.any(ref.rates) and ref.steering == pytest.approx(np.full(6, 0.1))
    ok = rocky8.command((0.4, 0, 0.4), mode="ackermann", policy=clip)      # 1 m: untouched
    assert ok.twist == pytest.approx([0.4, 0, 0.4]) and not ok.note


def test_wide_arcs_and_slow_turns_drive_straight(rocky8):
    wide = rocky8.command((0.5, 0, 0.05), mode="ackermann", policy=DrivePolicy(max_turn_radius=6.4))
    assert wide.twist == pytest.approx([0.5, 0, 0]) and wide.steering == pytest.approx(np.zeros(6))
    assert wide.rates == pytest.approx(np.full(6, 5.0) * np.sign(wide.rates))
    slow = rocky8.command((0.5, 0, 0.02), mode="ackermann", policy=DrivePolicy(straight_deadband=0.03))
    assert slow.twist[2] == 0
    turn = rocky8.command((0.5, 0, 0.1), mode="ackermann", policy=DrivePolicy(max_turn_radius=6.4))
    assert turn.twist == pytest.approx([0.5, 0, 0.1])


def test_zero_speed_rules(rocky8):
    stop = rocky8.command((0, 0, 0.5), policy=DrivePolicy(zero_speed="stop"), steering=np.full(6, 0.2))
    assert stop.ok and not np.any(stop.rates) and stop.steering == pytest.approx(np.full(6, 0.2))
    spin = rocky8.command((0, 0, 0.5), policy=DrivePolicy(zero_speed="turn_in_place"))
    assert spin.twist == pytest.approx([0, 0, 0.5])
    so = rocky8.command((0, 0, 0.5), policy=DrivePolicy(zero_speed="steer_only", steer_only_speed=0.5),
                        mode="ackermann")
    arc = rocky8.command((0.5, 0, 0.5), mode="ackermann")               # radius 1 m
    assert so.steer_only and not np.any(so.rates) and not np.any(so.twist)
    assert so.steering == pytest.approx(arc.steering)


def test_in_place_from_angular_y_turns_clockwise_for_positive(rocky8):
    cmd = rocky8.command((0, 0, 0), 0.4, policy=DrivePolicy(in_place="angular_y"))
    assert cmd.twist == pytest.approx([0, 0, -0.4])
    ignored = rocky8.command((0, 0, 0), 0.4)
    assert not np.any(ignored.rates)


@settings(max_examples=150, deadline=None)
@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(-3, 3), st.floats(0, 1), st.floats(1.5, 10),
       st.sampled_from(["literal", "intuitive"]), st.sampled_from(["turn_in_place", "steer_only", "stop"]))
def test_interpret_keeps_the_turn_centre_speed_and_limits_the_radius(vx, vy, wz, rmin, rmax, interp, zero):
    pol = DrivePolicy(min_turn_radius=rmin, max_turn_radius=rmax, interpretation=interp, zero_speed=zero)
    c = (0.3, -0.1)
    out = interpret(pol, (vx, vy, wz), 0.0, c)
    assert out.ok
    t = out.twist
    vc = np.array([t[0] - t[2] * c[1], t[1] + t[2] * c[0]])              # turn centre velocity, independent
    if out.in_place:
        assert vc == pytest.approx([0, 0], abs=1e-12)
        return
    if out.steer_only or not np.any(t):
        return
    w_in = -wz if (interp == "intuitive" and vx < 0) else wz
    speed_in = math.hypot(vx - w_in * c[1], vy + w_in * c[0])
    if t[2] != 0:
        assert rmin - 1e-9 <= math.hypot(*vc) / abs(t[2]) < rmax
        assert math.hypot(*vc) == pytest.approx(speed_in, rel=1e-9, abs=1e-12)
        if interp == "literal":
            assert np.sign(t[2]) == np.sign(wz)


def test_the_turn_centre_does_not_depend_on_the_body_frame(tmp_path):
    """The same rover described with its body frame 0.12 m forward and 0.05 m left of the middle axle: the
    Ackermann line is still the middle axle (no refusal) and the same physical command -- the twist moved to
    the new origin -- gives the same wheels, radius clip included."""
    text = open(model_path(OSR), encoding="utf-8").read()
    text = text.replace('''    <Frame name="imu" type="local">
      <Transform>
        <Position/>''', '''    <Frame name="imu" type="local">
      <Transform>
        <Position x="0.12" y="0.05"/>''')
    p = tmp_path / "osr_shifted.xml"
    p.write_text(text.replace('body_frame="base_link"', 'body_frame="imu"'), encoding="utf-8")
    W0 = WheeledLocomotorModel(mm.load_model(model_path(OSR)))
    W1 = WheeledLocomotorModel(mm.load_model(str(p)))
    assert W1.centre == pytest.approx((-0.12, -0.05), abs=1e-12)
    for vx, wz in [(0.3, 0.2), (0.3, 2.0), (-0.2, 0.5), (0.4, 0.0), (0.1, -1.5)]:
        a = W0.command((vx, 0, wz), mode="ackermann")
        # the same motion seen at the shifted origin: v_o' = v_o + wz z x (0.12, 0.05)
        b = W1.command((vx - wz * 0.05, 0.12 * wz, wz), mode="ackermann")
        assert a.ok and b.ok
        assert b.steering == pytest.approx(a.steering, abs=1e-12, nan_ok=True)
        assert b.rates == pytest.approx(a.rates, abs=1e-12)


def test_policy_errors_name_the_file_and_line(tmp_path):
    text = open(model_path(OSR), encoding="utf-8").read()
    p = tmp_path / "osr_bad.xml"
    p.write_text(text.replace('max_turn_radius="6.4"', 'max_turn_radius="0.2"'), encoding="utf-8")
    with pytest.raises(MobilityError, match="max_turn_radius 0.2 m must exceed") as e:
        WheeledLocomotorModel(mm.load_model(str(p)))
    assert "osr_bad.xml" in str(e.value)
    p.write_text(text.replace('zero_speed="stop"', 'zero_speed="spin"'), encoding="utf-8")
    with pytest.raises(mm.ModelFileError, match="osr_bad.xml"):
        mm.load_model(str(p))
    with pytest.raises(ValueError, match="interpretation"):
        DrivePolicy(interpretation="backwards")


def test_policy_round_trips_through_xml_and_yaml(tmp_path):
    from mechanism_model_core.io.claraty_xml import save_claraty_xml
    m = mm.load_model(model_path(OSR))
    W = WheeledLocomotorModel(m)
    p = tmp_path / "osr_saved.xml"
    save_claraty_xml(m, p)
    W2 = WheeledLocomotorModel(mm.load_model(str(p)))
    assert W2.policy == W.policy
    from mechanism_model_core.locomotion.mobility import MobilitySpec
    assert MobilitySpec.from_dict(W.spec.to_dict()).policy == W.policy
