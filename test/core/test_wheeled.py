"""Wheeled locomotion: closed forms of steering and rates, limits, odometry, terrain settling."""

import math

import numpy as np
import pytest

import mechanism_model_core as mm
from mechanism_model_core.library import model_path
from mechanism_model_core.io.mobility_yaml import load_mobility
from mechanism_model_core.locomotion.mobility import MobilityError, mobility_for, propose_mobility
from mechanism_model_core.locomotion.wheeled import (Odometry, WheeledLocomotorModel, arc_twist, crab_twist,
                                                     icr_twist, integrate_planar, point_turn_twist)
from mechanism_model_core.terrain import HeightField, Plane, TriangleMesh
from .robots import SAFETY

ROVERS = ["rocky8/rocky8_rover", "fido/fido_rover", "rocky7/rocky7_rover", "srr/srr_rover", "atrv/atrv_rover"]

# Rocky 8 geometry from its model file (models/rocky8/rocky8_rocker_bogie.xml): wheels at x = 0.4, 0, -0.4,
# y = +-0.35, radius 0.1; steering limits +-pi/2.
R8_X = {"front": 0.4, "middle": 0.0, "rear": -0.4}
R8_Y = {"left": 0.35, "right": -0.35}
R8_R = 0.1


@pytest.fixture(scope="module")
def rocky8():
    m = mm.load_model(model_path("rocky8/rocky8_rover.xml"))
    return WheeledLocomotorModel(m)


def wheel_xy(name):
    side, pos, _ = name.split("_")
    return R8_X[pos], R8_Y[side]


# ---------------------------------------------------------------------------------------- descriptions
@pytest.mark.parametrize("rover", ROVERS)
def test_every_library_rover_carries_its_mobility_and_the_proposal_reproduces_it(rover):
    m = mm.load_model(model_path(rover + ".xml"))
    shipped = mobility_for(m)
    assert shipped.source and shipped.source.endswith(rover + ".xml")      # the model file's <Mobility>
    proposed = propose_mobility(m)
    key = lambda s: [(w.name, w.drive_joint, w.steering_joint, w.radius, w.contact_frame) for w in s.wheels]
    assert key(proposed) == key(shipped)
    W = WheeledLocomotorModel(m)      # validates, and checks every declared mode against the steering ranges
    assert W.n == len(shipped.wheels)


def test_bad_descriptions_fail_at_load(tmp_path):
    m = mm.load_model(model_path("rocky8/rocky8_rover.xml"))
    good = mobility_for(m).to_dict()

    def variant(**changes):
        d = {**good, "wheels": [dict(w) for w in good["wheels"]]}
        for k, v in changes.items():
            if k.startswith("w0_"):
                if v is None:
                    d["wheels"][0].pop(k[3:], None)
                else:
                    d["wheels"][0][k[3:]] = v
            else:
                d[k] = v
        return d

    cases = [
        (variant(w0_drive_joint="no_such_joint"), "drive_joint 'no_such_joint' is not a joint"),
        (variant(w0_radius=None), "no radius"),
        (variant(w0_radius=-0.1), "positive number of metres"),
        (variant(w0_steering_joint="right_front_steer"), "does not carry"),
        (variant(w0_contact_frame="nowhere"), "contact_frame 'nowhere'"),
        (variant(body_frame="hull"), "body_frame 'hull'"),
        (variant(modes=["warp"]), "unknown mode"),
        (variant(colour="red"), "unknown key"),
    ]
    for d, msg in cases:
        with pytest.raises(MobilityError, match=msg):
            WheeledLocomotorModel(m, d)
    # a file: errors name it
    p = tmp_path / "bad_mobility.yaml"
    p.write_text("mobility:\n  body_frame: chassis\n  wheels: [ {drive_joint: left_front_drive} ]\n")
    with pytest.raises(MobilityError, match=r"bad_mobility.yaml: wheel 'left_front_drive': no radius"):
        WheeledLocomotorModel(m, load_mobility(p))
    p.write_text("mobility: [unclosed\n")
    with pytest.raises(MobilityError, match=r"bad_mobility.yaml:2: not valid YAML"):
        load_mobility(p)


def test_a_steering_range_that_makes_a_mode_impossible_fails_at_load():
    """Steering limited to +-0.3 rad cannot crab at 90 degrees nor turn in place: refused at load."""
    m = mm.load_model(model_path("rocky8/rocky8_rover.xml"))
    b = mm.edit(m)
    for j in m.joints:
        if j.name.endswith("_steer"):
            b.set_joint(m.child_body_of_joint(j.name), j.with_(lower=(-0.3,), upper=(0.3,)))
    limited = b.build()
    assert limited.joint("left_front_steer").upper[0] == 0.3
    d = mobility_for(m).to_dict()
    with pytest.raises(MobilityError, match="mode 'crab' is impossible.*outside"):
        WheeledLocomotorModel(limited, {**d, "modes": ["crab"]})
    with pytest.raises(MobilityError, match="mode 'turn_in_place' is impossible"):
        WheeledLocomotorModel(limited, {**d, "modes": ["turn_in_place"]})
    W = WheeledLocomotorModel(limited, {**d, "modes": ["ackermann"], "min_turn_radius": 2.0})
    cmd = W.drive(point_turn_twist(0.3))
    assert not cmd.ok and "outside" in cmd.reason and np.all(cmd.rates == 0)


# ---------------------------------------------------------------------------- <Mobility> in the model file
MOBILITY = """
  <Mobility body_frame="chassis" modes="{modes}" steering_tolerance="0.1">
    <Wheel name="lf" drive_joint="{lf_drive}" radius="{radius}" steering_joint="left_front_steer"/>
    <Wheel name="lm" drive_joint="left_middle_drive" radius="0.1" steering_joint="left_middle_steer"/>
    <Wheel name="lr" drive_joint="left_rear_drive" radius="0.1" steering_joint="left_rear_steer"/>
    <Wheel name="rf" drive_joint="right_front_drive" radius="0.1" steering_joint="right_front_steer"/>
    <Wheel name="rm" drive_joint="right_middle_drive" radius="0.1" steering_joint="right_middle_steer"/>
    <Wheel name="rr" drive_joint="right_rear_drive" radius="0.1" steering_joint="right_rear_steer" max_rate="2*M_PI"/>
    <Suspension joint="left_rocker"/>
    <Suspension joint="{susp}"/>
  </Mobility>
"""


def rocky8_with(tmp_path, name="r8.xml", limits_steer=None, **fields):
    """A copy of Rocky 8's rover file with its own <Mobility> (the attached files referenced by absolute
    path); returns (path, line of the <Mobility> element)."""
    import os
    import re
    src = open(model_path("rocky8/rocky8_rover.xml")).read()
    d = os.path.dirname(model_path("rocky8/rocky8_rover.xml"))
    src = re.sub(r'file="([^"]+)"', lambda mt: f'file="{os.path.join(d, mt.group(1))}"', src)
    src = src[:src.index("  <!-- mobility (CLARAty 12)")] + "</Mechanism_Model>\n"
    vals = {"modes": "ackermann crab turn_in_place", "lf_drive": "left_front_drive", "radius": "0.1",
            "susp": "left_bogie", **fields}
    text = src.replace("</Mechanism_Model>", MOBILITY.format(**vals) + "</Mechanism_Model>")
    p = tmp_path / name
    p.write_text(text)
    line = text[:text.index("<Mobility")].count("\n") + 1
    return p, line


def test_the_model_file_mobility_is_read_checked_and_written_back(tmp_path):
    p, _ = rocky8_with(tmp_path)
    m = mm.load_model(p)
    W = WheeledLocomotorModel(m)                           # no YAML anywhere: the model file says it all
    assert W.names == ["lf", "lm", "lr", "rf", "rm", "rr"]
    assert W.spec.source == str(p) and W.spec.steering_tolerance == 0.1
    assert W.spec.suspension_joints == ("left_rocker", "left_bogie")
    assert W.max_rates[5] == pytest.approx(min(2 * math.pi, m.joint("right_rear_drive").velocity))
    assert W.spec.modes == ("ackermann", "crab", "turn_in_place")
    # saved as one file, loaded again: the same description, the same driving
    out = tmp_path / "saved.xml"
    mm.save_model(m, out)
    assert "<Mobility" in out.read_text()
    m2 = mm.load_model(out)
    assert m2.metadata["mobility"] == m.metadata["mobility"]
    W2 = WheeledLocomotorModel(m2)
    cmd, cmd2 = W.drive(arc_twist(0.2, 1.5)), W2.drive(arc_twist(0.2, 1.5))
    np.testing.assert_array_equal(cmd.steering, cmd2.steering)
    np.testing.assert_array_equal(cmd.rates, cmd2.rates)


def test_a_yaml_beside_the_model_file_overrides_its_mobility(tmp_path):
    import yaml
    p, _ = rocky8_with(tmp_path, "r8y.xml")
    d = WheeledLocomotorModel(mm.load_model(p)).spec.to_dict()
    d["steering_tolerance"] = 0.02
    (tmp_path / "r8y_mobility.yaml").write_text(yaml.safe_dump({"mobility": d}))
    W = WheeledLocomotorModel(mm.load_model(p))
    assert W.spec.steering_tolerance == 0.02 and W.spec.source.endswith("r8y_mobility.yaml")


def test_bad_mobility_elements_fail_at_load_naming_file_and_line(tmp_path):
    from mechanism_model_core.errors import ModelFileError

    cases = [({"lf_drive": "no_such_joint"}, 1, "wheel 'lf': drive_joint 'no_such_joint' is not a joint"),
             ({"radius": "-0.1"}, 1, "positive number of metres"),
             ({"susp": "no_such_hinge"}, 8, "suspension joint 'no_such_hinge' is not a joint"),
             ({"modes": "warp"}, 0, "unknown mode 'warp'"),
             ({"radius": "M_PI/"}, 1, "radius")]
    for k, (fields, offset, msg) in enumerate(cases):
        p, line = rocky8_with(tmp_path, f"bad{k}.xml", **fields)
        with pytest.raises(ModelFileError, match=msg) as err:
            mm.load_model(p)
        assert err.value.file == str(p) and err.value.line == line + offset, (fields, err.value)
    # no radius at all: the DTD refuses it, with the line
    p, line = rocky8_with(tmp_path, "noradius.xml")
    p.write_text(p.read_text().replace('<Wheel name="lm" drive_joint="left_middle_drive" radius="0.1"',
                                       '<Wheel name="lm" drive_joint="left_middle_drive"'))
    with pytest.raises(ModelFileError, match="radius") as err:
        mm.load_model(p)
    assert err.value.line == line + 2
    # a steering range that makes a declared mode impossible: refused at load, at the <Mobility> line
    p, line = rocky8_with(tmp_path, "limited.xml")
    m = mm.load_model(p)
    b = mm.edit(m)
    for j in m.joints:
        if j.name.endswith("_steer"):
            b.set_joint(m.child_body_of_joint(j.name), j.with_(lower=(-0.3,), upper=(0.3,)))
    limited = b.build()
    out = tmp_path / "limited_saved.xml"
    mm.save_model(limited, out)
    loaded = mm.load_model(out)                 # the names are fine; the locomotor's kinematics refuse it
    with pytest.raises(ModelFileError, match="mode 'crab' is impossible") as err:
        WheeledLocomotorModel(loaded)
    mob_line = out.read_text()[:out.read_text().index("<Mobility")].count("\n") + 1
    assert err.value.file == str(out) and err.value.line == mob_line
    # a steering joint that does not carry its wheel: found by the locomotor, at that <Wheel>'s line
    p, line = rocky8_with(tmp_path, "wrongsteer.xml")
    p.write_text(p.read_text().replace('steering_joint="left_middle_steer"', 'steering_joint="right_rear_steer"'))
    with pytest.raises(ModelFileError, match="wheel 'lm': steering joint 'right_rear_steer' does not carry") as err:
        WheeledLocomotorModel(mm.load_model(p))
    assert err.value.line == line + 2


# ------------------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("R", [0.8, 1.5, -1.2, 5.0])
def test_double_ackermann_for_rocky8(rocky8, R):
    v = 0.2
    cmd = rocky8.drive(arc_twist(v, R), mode="ackermann")
    assert cmd.ok
    wz = v / R
    for name, delta, rate in zip(rocky8.names, cmd.steering, cmd.rates):
        x, y = wheel_xy(name)
        # ICR at (0, R): the wheel's heading is perpendicular to the line from the ICR
        expect = math.atan(x / (R - y))
        assert delta == pytest.approx(expect, abs=1e-12), name
        rho = math.hypot(x, R - y)
        assert rate == pytest.approx(abs(wz) * rho / R8_R * math.copysign(1, v), abs=1e-12), name
    # front and rear mirror each other (double Ackermann), middles straight
    s = dict(zip(rocky8.names, cmd.steering))
    assert s["left_front_wheel"] == pytest.approx(-s["left_rear_wheel"], abs=1e-12)
    assert s["left_middle_wheel"] == pytest.approx(0.0, abs=1e-12)


def test_point_turn_is_tangent_to_the_circle_through_the_centre(rocky8):
    wz = 0.4
    cmd = rocky8.drive(point_turn_twist(wz), mode="turn_in_place")
    for name, delta, rate in zip(rocky8.names, cmd.steering, cmd.rates):
        x, y = wheel_xy(name)
        heading = np.array([math.cos(delta), math.sin(delta)]) * math.copysign(1.0, rate)
        assert heading @ np.array([x, y]) == pytest.approx(0.0, abs=1e-12)       # tangent
        v = wz * np.array([-y, x])
        assert heading * abs(rate) * R8_R == pytest.approx(v, abs=1e-12)         # speed and direction
        assert abs(delta) <= math.pi / 2


def test_crab_and_its_reversal_past_the_steering_range(rocky8):
    cmd = rocky8.drive(crab_twist(0.15, 0.6), mode="crab")
    np.testing.assert_allclose(cmd.steering, 0.6, atol=1e-12)
    np.testing.assert_allclose(cmd.rates, 1.5, atol=1e-12)
    back = rocky8.drive(crab_twist(0.15, 2.2), mode="crab")        # 126 deg: outside +-90, turn by pi and reverse
    np.testing.assert_allclose(back.steering, 2.2 - math.pi, atol=1e-12)
    np.testing.assert_allclose(back.rates, -1.5, atol=1e-12)
    assert back.rolling_backward.all() and back.reversed is back.rolling_backward


def test_general_icr(rocky8):
    cx, cy, w = 0.7, -2.0, 0.2
    cmd = rocky8.drive(icr_twist(cx, cy, w))
    for name, delta in zip(rocky8.names, cmd.steering):
        x, y = wheel_xy(name)
        assert math.cos(delta) * (x - cx) + math.sin(delta) * (y - cy) == pytest.approx(0.0, abs=1e-12)


def test_skid_steer_atrv():
    m = mm.load_model(model_path("atrv/atrv_rover.xml"))
    W = WheeledLocomotorModel(m)
    v, wz = 0.5, 0.8
    cmd = W.drive((v, 0.0, wz), mode="skid")
    fk = mm.forward_kinematics(m)
    for w, rate, slip in zip(W.wheels, cmd.rates, cmd.slip):
        x, y, _ = fk.position(w.contact_frame, relative_to="chassis")
        assert rate == pytest.approx((v - wz * y) / w.radius, abs=1e-12)
        assert slip == pytest.approx(abs(wz * x), abs=1e-12)
    # a sideways command cannot be driven by wheels that never steer (the slip is reported, not hidden)
    assert W.drive((0.0, 0.3, 0.0), mode="skid").slip == pytest.approx([0.3] * 4)
    m7 = WheeledLocomotorModel(mm.load_model(model_path("rocky7/rocky7_rover.xml")))
    assert m7.drive((0.2, 0.0, 0.3), mode="skid").ok


def test_non_steered_wheels_refuse_sideways_slip_unless_skid():
    m = mm.load_model(model_path("rocky7/rocky7_rover.xml"))
    d = mobility_for(m).to_dict()
    W = WheeledLocomotorModel(m, {**d, "skid": False, "modes": []})
    cmd = W.drive((0.2, 0.1, 0.0))
    assert not cmd.ok and "cannot steer" in cmd.reason


# -------------------------------------------------------------------------------------------- limits
def test_rate_limit_scales_the_twist_and_keeps_the_curvature():
    m = mm.load_model(model_path("rocky8/rocky8_rover.xml"))
    d = mobility_for(m).to_dict()
    for w in d["wheels"]:
        w["max_rate"] = 2.0
    W = WheeledLocomotorModel(m, d)
    free = WheeledLocomotorModel(m).drive(arc_twist(0.5, 1.0))
    cmd = W.drive(arc_twist(0.5, 1.0))
    assert np.max(np.abs(cmd.rates)) == pytest.approx(2.0, abs=1e-12)
    np.testing.assert_allclose(cmd.steering, free.steering, atol=1e-12)
    assert cmd.twist[2] / cmd.twist[0] == pytest.approx(1.0, abs=1e-12)     # curvature 1/m kept
    assert cmd.scale == pytest.approx(2.0 / np.max(np.abs(free.rates)))


def test_steering_before_driving(rocky8):
    target = rocky8.drive(crab_twist(0.1, 0.5)).steering
    far = rocky8.drive(crab_twist(0.1, 0.5), steering=np.zeros(6))
    assert far.waiting and np.all(far.rates == 0)
    np.testing.assert_allclose(far.steering, target)
    near = rocky8.drive(crab_twist(0.1, 0.5), steering=target + 0.01)
    assert not near.waiting and np.all(near.rates > 0)
    off = rocky8.drive(crab_twist(0.1, 0.5), steering=np.zeros(6), steer_before_drive=False)
    assert not off.waiting and np.all(off.rates > 0)


def test_zero_and_bad_twists_hold_the_steering(rocky8):
    cur = np.full(6, 0.3)
    z = rocky8.drive((0, 0, 0), steering=cur)
    assert z.ok and np.all(z.rates == 0)
    np.testing.assert_allclose(z.steering, cur)
    bad = rocky8.drive((math.nan, 0, 0), steering=cur)
    assert not bad.ok and np.all(bad.rates == 0) and "NaN" in bad.reason


# ------------------------------------------------------------------------------------------ odometry
@pytest.mark.parametrize("twist", [arc_twist(0.3, 1.7), arc_twist(-0.2, -0.9), crab_twist(0.25, 0.7),
                                   point_turn_twist(0.6), (0.3, 0.0, 0.0)])
def test_odometry_reproduces_the_commanded_path(rocky8, twist):
    cmd = rocky8.drive(twist)
    odo = Odometry()
    dt, n = 0.02, 250
    for _ in range(n):
        t, res = rocky8.odometry_twist(cmd.rates, cmd.steering)
        assert res < 1e-12
        odo.update(t, dt)
    T = dt * n
    vx, vy, wz = twist
    # the exact pose after T seconds of a constant twist
    if abs(wz) > 0:
        th = wz * T
        x = (vx * math.sin(th) + vy * (math.cos(th) - 1)) / wz
        y = (vx * (1 - math.cos(th)) + vy * math.sin(th)) / wz
    else:
        th, x, y = 0.0, vx * T, vy * T
    np.testing.assert_allclose(odo.pose[:2], [x, y], atol=1e-9)
    assert math.remainder(odo.pose[2] - th, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)


def test_odometry_residual_flags_a_slipping_wheel(rocky8):
    cmd = rocky8.drive(arc_twist(0.3, 2.0))
    rates = cmd.rates.copy()
    rates[0] *= 1.5                                   # the front-left wheel spins 50 % faster than it should
    _, res = rocky8.odometry_twist(rates, cmd.steering)
    assert res > 0.01


def test_integrate_planar_small_angle_branch_agrees():
    a = integrate_planar((1.0, 2.0, 0.3), (0.4, 0.1, 1e-10), 1.0)
    b = integrate_planar((1.0, 2.0, 0.3), (0.4, 0.1, 0.0), 1.0)
    np.testing.assert_allclose(a, b, atol=1e-10)


def test_odometry_3d_on_a_slope():
    odo = Odometry()
    pitch = -0.2                                      # nose up by 0.2 rad (URDF pitch about y)
    odo.update((1.0, 0.0, 0.0), 1.0, attitude=(0.0, pitch))
    np.testing.assert_allclose(odo.position, [math.cos(pitch), 0.0, -math.sin(pitch)], atol=1e-12)


# ------------------------------------------------------------------------------------------- terrain
def rocker_bogie_brute_force(W, heights, yaw=0.0, x=0.0, y=0.0):
    """Independent settle for flat patches: every wheel's lowest rim point (upright wheels: centre - r) at the
    height of the flat patch under it, solved with scipy least squares over z, roll, pitch and the
    suspension (forward kinematics only; no terrain or IK code)."""
    from scipy.optimize import least_squares

    m = W.mechanism
    q0 = m.configuration()
    free = ["chassis.z", "chassis.roll", "chassis.pitch", "left_rocker", "left_bogie", "right_bogie"]
    idx = [m.coordinate_index(c) for c in free]
    q0[m.coordinate_index("chassis.x")], q0[m.coordinate_index("chassis.y")] = x, y
    q0[m.coordinate_index("chassis.yaw")] = yaw

    def res(u):
        q = q0.copy()
        q[idx] = u
        q = m.apply_couplings(q)
        fk = mm.forward_kinematics(m, q)
        out = []
        for w in W.wheels:
            body = m.child_body_of_joint(w.drive_joint)
            c = fk.position(body)
            a = fk.rotation(body) @ np.array([0.0, 1.0, 0.0])
            down = np.array([0, 0, -1.0]) - a[2] * a
            low = c + w.radius * down / np.linalg.norm(down)
            out.append(low[2] - heights(low[0], low[1]))
        return out

    sol = least_squares(res, q0[idx], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    q = q0.copy()
    q[idx] = sol.x
    return m.apply_couplings(q), np.max(np.abs(sol.fun))


def test_settle_on_a_flat_plane_is_the_ride_height(rocky8):
    s = rocky8.settle(Plane(), 0.5, -0.2, 0.7)
    assert s.success
    np.testing.assert_allclose(s.distances, 0.0, atol=1e-6)
    m = rocky8.mechanism
    home = m.configuration()
    for c in ("chassis.z", "chassis.roll", "chassis.pitch", "left_rocker", "left_bogie", "right_bogie"):
        assert s.q[m.coordinate_index(c)] == pytest.approx(home[m.coordinate_index(c)], abs=1e-6), c
    np.testing.assert_allclose(s.normals, np.tile([0, 0, 1.0], (6, 1)), atol=1e-12)


def test_settle_on_a_slope_lies_parallel_to_it(rocky8):
    P = Plane.from_slope(0.25, direction=0.4)
    s = rocky8.settle(P, 1.0, 2.0, 1.1)
    assert s.success
    np.testing.assert_allclose(s.distances, 0.0, atol=1e-6)
    np.testing.assert_allclose(P.signed_distance(s.points), 0.0, atol=1e-6)
    m = rocky8.mechanism
    fk = mm.forward_kinematics(m, s.q)
    np.testing.assert_allclose(fk.rotation("chassis")[:, 2], P.unit_normal, atol=1e-6)   # body parallel to slope
    for c in ("left_rocker", "left_bogie", "right_bogie"):
        assert s.q[m.coordinate_index(c)] == pytest.approx(0.0, abs=1e-6)
    assert s.q[m.coordinate_index("right_rocker")] == pytest.approx(-s.q[m.coordinate_index("left_rocker")],
                                                                    abs=1e-12)


def test_settle_with_one_wheel_on_a_step_against_brute_force(rocky8):
    h = 0.08
    # a box 8 cm high under the left front wheel (x 0.3..0.6, y 0.2..0.5), ground z = 0 elsewhere
    V = [(-3, -3, 0), (3, -3, 0), (3, 3, 0), (-3, 3, 0), (0.3, 0.2, h), (0.6, 0.2, h), (0.6, 0.5, h), (0.3, 0.5, h)]
    F = [(0, 1, 2), (0, 2, 3), (4, 5, 6), (4, 6, 7)]
    step = TriangleMesh(V, F)
    s = rocky8.settle(step, 0.0, 0.0, 0.0)
    assert s.success, s.reason
    assert np.all(np.abs(step.clearance(s.points)) <= 1e-6)
    heights = lambda x, y: h if (0.3 <= x <= 0.6 and 0.2 <= y <= 0.5) else 0.0
    q_ref, worst = rocker_bogie_brute_force(rocky8, heights)
    assert worst < 1e-10
    m = rocky8.mechanism
    for c in ("chassis.z", "chassis.roll", "chassis.pitch", "left_rocker", "left_bogie", "right_bogie",
              "right_rocker"):
        assert s.q[m.coordinate_index(c)] == pytest.approx(q_ref[m.coordinate_index(c)], abs=1e-6), c
    assert abs(s.q[m.coordinate_index("left_rocker")]) > 0.01   # the step really moved the suspension
    assert s.q[m.coordinate_index("right_rocker")] == pytest.approx(-s.q[m.coordinate_index("left_rocker")],
                                                                    abs=1e-12)


def test_settle_through_solve_ik_agrees_with_newton(rocky8):
    P = Plane.from_slope(0.2, direction=1.0)
    a = rocky8.settle(P, 0.4, 0.3, -0.6)
    b = rocky8.settle(P, 0.4, 0.3, -0.6, solver="ik", tol=1e-7, timeout=SAFETY)
    assert a.success and b.success, b.reason
    np.testing.assert_allclose(a.q, b.q, atol=1e-5)


def test_settle_warm_started_along_a_path_on_a_height_field(rocky8):
    hf = HeightField.from_function(lambda x, y: 0.05 * np.sin(1.3 * x) * np.cos(0.9 * y), (-2, 4), (-2, 2), 0.05)
    q = None
    for x in np.linspace(0.0, 1.0, 6):
        s = rocky8.settle(hf, x, 0.1, 0.2, q0=q)
        assert s.success, s.reason
        assert np.all(np.abs(hf.clearance(s.points)) <= 1e-6)
        q = s.q


def test_slope_drive_on_a_plane_matches_flat_driving_in_the_body_frame(rocky8):
    P = Plane.from_slope(0.2, direction=-0.5)
    s = rocky8.settle(P, 0.3, 0.1, 0.4)
    for twist in (arc_twist(0.2, 1.5), crab_twist(0.1, 0.4), point_turn_twist(0.3)):
        flat = rocky8.drive(twist)
        slope = rocky8.slope_drive(P, s.q, twist)
        assert slope.ok
        np.testing.assert_allclose(slope.steering, flat.steering, atol=1e-9)
        np.testing.assert_allclose(slope.rates, flat.rates, atol=1e-9)


def test_slope_drive_against_finite_differences_of_settling(rocky8):
    """Independent check on curved terrain: move the body's x, y, yaw by the slope-drive motion for a short
    time, settle again (the terrain contacts alone decide z, roll, pitch and the suspension), and compare:
    the suspension and body rates match the finite differences, every wheel centre moves along its rolling
    direction (no sideways slip) by rate * r * dt."""
    hf = HeightField.from_function(lambda x, y: 0.08 * np.sin(1.1 * x + 0.3) + 0.04 * y * np.cos(0.7 * x),
                                   (-2, 3), (-2, 2), 0.01, interpolation="bilinear")
    m = rocky8.mechanism
    s0 = rocky8.settle(hf, 0.2, 0.0, 0.3, tol=1e-11)
    assert s0.success
    cmd = rocky8.slope_drive(hf, s0.q, arc_twist(0.1, 2.0))
    assert cmd.ok
    q0 = s0.q.copy()
    for w, d in zip(rocky8.wheels, cmd.steering):                  # steer as commanded, then move
        q0[m.coordinate_index(w.steering_joint)] = d
    s0 = rocky8.settle(hf, 0.2, 0.0, 0.3, q0=q0, tol=1e-11)
    cmd = rocky8.slope_drive(hf, s0.q, arc_twist(0.1, 2.0))
    dt = 1e-3
    ix, iy, iyaw = (m.coordinate_index(f"chassis.{c}") for c in ("x", "y", "yaw"))
    s1 = rocky8.settle(hf, s0.q[ix] + cmd.qdot[ix] * dt, s0.q[iy] + cmd.qdot[iy] * dt,
                       s0.q[iyaw] + cmd.qdot[iyaw] * dt, q0=s0.q, tol=1e-11)
    assert s1.success
    fd = (s1.q - s0.q) / dt
    for c in ("chassis.z", "chassis.roll", "chassis.pitch", "left_rocker", "left_bogie", "right_bogie"):
        i = m.coordinate_index(c)
        assert fd[i] == pytest.approx(cmd.qdot[i], abs=5e-3 * (1 + abs(cmd.qdot[i]))), c
    fk0, fk1 = mm.forward_kinematics(m, s0.q), mm.forward_kinematics(m, s1.q)
    for k, (w, rate) in enumerate(zip(rocky8.wheels, cmd.rates)):
        carrier = m.parent_body_of_joint(w.drive_joint)
        body = m.child_body_of_joint(w.drive_joint)
        p = s0.points[k]
        # the point of the wheel's carrier at the contact: where it is after dt
        moved = fk1.pose(carrier) @ np.linalg.inv(fk0.pose(carrier)) @ np.append(p, 1.0)
        dp = moved[:3] - p
        a = fk0.rotation(body) @ m.joint(w.drive_joint).axis
        f = np.cross(a, fk0.position(body) - p)
        f /= np.linalg.norm(f)
        assert abs(a @ dp) < 2e-3 * np.linalg.norm(dp), w.name                  # no sideways slip
        assert abs(s0.normals[k] @ dp) < 2e-3 * np.linalg.norm(dp), w.name     # stays on the terrain
        assert f @ dp == pytest.approx(rate * w.radius * dt, rel=2e-3), w.name  # rolls, does not skid


def test_tipover_margin_uses_the_settled_contacts(rocky8):
    from mechanism_model_core.statics import center_of_mass

    flat = rocky8.settle(Plane(), 0.0, 0.0, 0.0)
    sp = rocky8.tipover_margin(Plane(), flat.q, method="support_polygon")
    cx, cy, _ = center_of_mass(rocky8.mechanism, flat.q)
    # the support polygon is the rectangle of the six contacts: |x| <= 0.4, |y| <= 0.35
    assert sp.margin == pytest.approx(min(0.4 - abs(cx), 0.35 - abs(cy)), abs=1e-9)
    # across a slope the force-angle margin falls as the slope steepens, and goes negative past tip-over
    margins = []
    for slope in (0.0, 0.3, 0.6, 1.0, 1.2):
        P = Plane.from_slope(slope, direction=math.pi / 2)          # rises to the rover's left
        s = rocky8.settle(P, 0.0, 0.0, 0.0)
        assert s.success
        margins.append(rocky8.tipover_margin(P, s.q).margin)
    assert all(a > b for a, b in zip(margins, margins[1:]))
    assert margins[0] > 0 and margins[-1] < 0


def test_cli_prints_and_proposes_mobility_that_loads_back(tmp_path, capsys):
    """`mechanism-model mobility MODEL [--propose] [--format yaml]`: the element pasted into the model file
    and the YAML file both load back to the same description."""
    from mechanism_model_core.cli import main

    ref = WheeledLocomotorModel(mm.load_model(model_path("rocky8/rocky8_rover.xml"))).spec.to_dict()
    assert main(["mobility", "rocky8/rocky8_rover.xml", "--propose"]) == 0
    element = capsys.readouterr().out
    assert element.startswith("<Mobility ")
    p, _ = rocky8_with(tmp_path, "pasted.xml")
    text = p.read_text()
    text = text[:text.index("<Mobility")] + element + "</Mechanism_Model>\n"
    p.write_text(text)
    got = WheeledLocomotorModel(mm.load_model(p)).spec.to_dict()
    assert [w for w in got["wheels"]] == [w for w in ref["wheels"]]
    assert got["suspension_joints"] == ref["suspension_joints"]
    out = tmp_path / "r8_mobility.yaml"
    assert main(["mobility", "rocky8/rocky8_rover.xml", "--format", "yaml", "-o", str(out)]) == 0
    assert load_mobility(out).to_dict() == ref


def test_integrate_planar_wraps_yaw_as_the_package_does():
    """The yaw after a step lies in [-pi, pi) (``spatial.wrap_angle``'s convention: pi itself is -pi) and
    equals the start yaw plus wz dt modulo 2 pi."""
    assert integrate_planar((0.0, 0.0, math.pi - 0.25), (0.0, 0.0, 0.5), 0.5)[2] == -math.pi
    rng = np.random.default_rng(7)
    for th, wz, dt in zip(rng.uniform(-10, 10, 200), rng.uniform(-5, 5, 200), rng.uniform(0, 3, 200)):
        yaw = integrate_planar((0.0, 0.0, th), (0.3, -0.1, wz), dt)[2]
        assert -math.pi <= yaw < math.pi
        d = (yaw - (th + wz * dt)) / (2 * math.pi)
        assert abs(d - round(d)) < 1e-12
