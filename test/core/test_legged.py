"""Legged_Locomotor_Model: leg discovery, leg IK (closed form vs generic vs FK), body IK, gaits (stance feet
fixed, body velocity, static margin at every sample), slope walking, refusals with reasons, and the
ATHLETE-like model that walks and rolls.

Oracles: forward kinematics of the planned configurations (the plan's own foot arrays are not trusted),
statics.support_polygon_margin and statics.center_of_mass per sample, the terrain's height function."""

import math

import numpy as np
import pytest

from mechanism_model_core import InvalidConfiguration, load_model
from mechanism_model_core.kinematics import forward_kinematics
from mechanism_model_core.library import model_path
from mechanism_model_core.io.legged_xml import load_legged, save_legged
from mechanism_model_core.locomotion.legged import GaitInfeasible, LeggedLocomotorModel, YPPLegSolver
from mechanism_model_core.statics import center_of_mass, support_polygon_margin
from mechanism_model_core.terrain import HeightField


@pytest.fixture(scope="module")
def lemur():
    return LeggedLocomotorModel(load_model(model_path("lemur/lemur_hexapod.xml")))


@pytest.fixture(scope="module")
def athlete():
    return LeggedLocomotorModel(load_model(model_path("athlete/athlete.xml")))


def test_legs_found_and_classified(lemur, athlete):
    assert [l.name for l in lemur.legs] == [f"leg{i}" for i in range(1, 7)]
    assert [l.side for l in lemur.legs] == [1, 1, 1, -1, -1, -1]
    assert all(isinstance(lemur.solver_of(l.name), YPPLegSolver) for l in lemur.legs)
    # ATHLETE: the steering and wheel joints do not move the foot point: held, not walking joints
    l1 = athlete.leg("limb1")
    assert l1.joints == ("limb1_hip_yaw", "limb1_hip_pitch", "limb1_knee")
    assert l1.held == ("limb1_ankle_steer",)
    assert isinstance(athlete.solver_of("limb1"), YPPLegSolver)


@pytest.mark.parametrize("which", ["lemur", "athlete"])
def test_leg_ik_closed_form_against_generic_and_fk(which, lemur, athlete):
    """Foot points made by FK of random in-limit leg configurations (so reachable): the closed form reaches
    each (FK of its answer), every exact branch it enumerates reaches it too, and the generic solver agrees
    on the point."""
    w = lemur if which == "lemur" else athlete
    m = w.mechanism
    rng = np.random.default_rng(7)
    for leg in w.legs[:3]:
        idx = [m.coordinate_index(n) for n in leg.joints]
        Q = np.repeat(w.stand[None], 40, axis=0)
        lo, hi = m.lower_limits[idx], m.upper_limits[idx]
        Q[:, idx] = rng.uniform(lo, hi, size=(40, 3))
        fk = forward_kinematics(m, Q)
        P = np.einsum("bij,bj->bi", np.linalg.inv(fk.pose(w.body))[:, :3, :3], fk.position(leg.foot)) \
            + np.linalg.inv(fk.pose(w.body))[:, :3, 3]
        qc, ok = w.leg_ik(leg.name, P, Q[0, idx])
        assert np.all(ok)
        Qs = Q.copy()
        Qs[:, idx] = qc
        fks = forward_kinematics(m, Qs)
        Pc = np.einsum("bij,bj->bi", np.linalg.inv(fks.pose(w.body))[:, :3, :3], fks.position(leg.foot)) \
            + np.linalg.inv(fks.pose(w.body))[:, :3, 3]
        np.testing.assert_allclose(Pc, P, atol=1e-12)
        assert np.all(qc >= lo - 1e-12) and np.all(qc <= hi + 1e-12)
        S, exact = w.solver_of(leg.name).all_solutions(P)
        for k in range(4):
            Qk = Q.copy()
            Qk[:, idx] = S[k]
            fkk = forward_kinematics(m, Qk)
            Pk = np.einsum("bij,bj->bi", np.linalg.inv(fkk.pose(w.body))[:, :3, :3], fkk.position(leg.foot)) \
                + np.linalg.inv(fkk.pose(w.body))[:, :3, 3]
            err = np.linalg.norm(Pk - P, axis=1)
            assert np.all(err[exact[k]] < 1e-12)
        # the original configuration is one of the branches
        d = np.min(np.max(np.abs(((S - Q[:, idx][None]) + math.pi) % (2 * math.pi) - math.pi), axis=2), axis=0)
        assert np.all(d < 1e-9)
        qg, okg = w.leg_ik(leg.name, P[:10], Q[0, idx], generic=True)
        assert np.all(okg)
        Qg = Q[:10].copy()
        Qg[:, idx] = qg
        fkg = forward_kinematics(m, Qg)
        Pg = np.einsum("bij,bj->bi", np.linalg.inv(fkg.pose(w.body))[:, :3, :3], fkg.position(leg.foot)) \
            + np.linalg.inv(fkg.pose(w.body))[:, :3, 3]
        np.testing.assert_allclose(Pg, P[:10], atol=1e-9)


def test_leg_ik_out_of_reach(lemur):
    q, ok = lemur.leg_ik("leg1", [1.0, 1.0, 0.0])
    assert not ok
    with pytest.raises(InvalidConfiguration):
        lemur.leg_ik("leg1", [np.nan, 0, 0])


def test_body_ik_shift_and_tilt_with_feet_planted(lemur):
    feet = lemur.feet_positions(lemur.stand)
    T = lemur.body_pose(lemur.stand)
    T2 = T.copy()
    c, s = math.cos(0.1), math.sin(0.1)
    T2[:3, :3] = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]) @ T[:3, :3]      # pitch 0.1 rad
    T2[:3, 3] += [0.02, -0.01, 0.01]
    q, ok = lemur.body_ik(T2, feet)
    assert ok
    np.testing.assert_allclose(lemur.body_pose(q), T2, atol=1e-12)
    np.testing.assert_allclose(lemur.feet_positions(q), feet, atol=1e-12)


def _check_plan(w, plan, twist):
    """Independent checks of a plan: FK feet in stance fixed, margins from statics at every sample, the
    body's average velocity."""
    m = w.mechanism
    fk = forward_kinematics(m, plan.q)
    F = np.stack([fk.position(l.foot) for l in w.legs], axis=1)
    np.testing.assert_allclose(F, plan.feet, atol=1e-9)
    for i in range(len(w.legs)):
        st = plan.stance[:, i]
        for b in range(1, len(plan.times)):
            if st[b] and st[b - 1]:
                assert np.linalg.norm(F[b, i] - F[b - 1, i]) < 1e-9, (w.legs[i].name, b)
    com = center_of_mass(m, plan.q)
    for b in range(len(plan.times)):
        mg = support_polygon_margin(F[b, plan.stance[b]], com[b]).margin
        assert mg > 0, (b, mg)
        assert mg == pytest.approx(plan.margins[b], abs=1e-12)
    # the body follows the twist: displacement over the plan in the start body frame
    Tb = fk.pose(w.body)
    vx, vy, wz = twist
    dur = plan.times[-1]
    yaw = [math.atan2(T[1, 0], T[0, 0]) for T in Tb]
    assert np.unwrap(yaw)[-1] - yaw[0] == pytest.approx(wz * dur, abs=1e-9)
    if abs(wz) < 1e-12:
        d = Tb[0, :3, :3].T @ (Tb[-1, :3, 3] - Tb[0, :3, 3])
        np.testing.assert_allclose(d[:2] / dur, [vx, vy], atol=1e-12)
    # joint values within limits
    assert np.all(m.within_limits(plan.q, 1e-9))


@pytest.mark.parametrize("gait, twist, period", [
    ("tripod", (0.03, 0.0, 0.0), 2.0),
    ("tripod", (0.0, 0.02, 0.05), 2.0),
    ("ripple", (0.03, 0.0, 0.0), 3.0),
    ("wave", (0.02, 0.0, 0.0), 6.0),
])
def test_lemur_walks(lemur, gait, twist, period):
    plan = lemur.plan_gait(gait, twist, period=period, cycles=2)
    _check_plan(lemur, plan, twist)
    # swing feet lift to the swing height (flat ground at z = 0)
    assert np.max(plan.feet[..., 2]) == pytest.approx(0.03, abs=1e-3)
    n_stance = plan.stance.sum(axis=1)
    assert n_stance.min() >= {"tripod": 3, "ripple": 4, "wave": 5}[gait]
    # a stance foot moves backwards in the body frame, opposite the body's motion
    assert plan.trajectory.joint_names == lemur.joint_names
    assert plan.trajectory.positions.shape == (len(plan.times), 18)


def test_walks_up_a_slope_on_a_height_field(lemur):
    """A 10 % ramp along x with a bump: footholds on the ground (FK of the plan vs the terrain's height),
    the body keeps its height above the ground, the margin stays positive."""
    x = np.arange(-1.0, 2.0, 0.05)
    y = np.arange(-1.0, 1.0, 0.05)
    X, Y = np.meshgrid(x, y, indexing="ij")
    H = 0.1 * np.clip(X, 0, None) + 0.01 * np.exp(-((X - 0.4) ** 2 + Y ** 2) / 0.02)
    terrain = HeightField(H, (0.05, 0.05), (-1.0, -1.0))
    plan = lemur.plan_gait("ripple", (0.03, 0.0, 0.0), period=4.0, cycles=3, terrain=terrain)
    _check_plan(lemur, plan, (0.03, 0.0, 0.0))
    F = plan.feet
    st = plan.stance
    h = terrain.height(F[..., 0], F[..., 1])
    np.testing.assert_allclose(F[st][:, 2], h[st], atol=1e-9)
    assert np.all(F[~st][:, 2] >= h[~st] - 1e-9)              # swing feet above the ground
    assert plan.body[-1, 2, 3] > plan.body[0, 2, 3] + 0.01     # climbed


def test_infeasible_gaits_are_refused_with_reasons(lemur):
    with pytest.raises(GaitInfeasible, match="needs four legs") as e:
        lemur.plan_gait("crawl", (0.02, 0, 0))
    assert e.value.reason == "legs"
    with pytest.raises(GaitInfeasible, match="margin") as e:
        lemur.plan_gait("tripod", (0.03, 0, 0), min_margin=0.2)
    assert e.value.reason == "margin" and "in stance" in str(e.value)
    with pytest.raises(GaitInfeasible) as e:
        lemur.plan_gait("wave", (0.03, 0, 0), period=2.0)
    assert e.value.reason == "speed" and "rad/s" in str(e.value)
    with pytest.raises(GaitInfeasible) as e:
        lemur.plan_gait("tripod", (0.5, 0, 0), period=2.0)
    assert e.value.reason == "reach" and "out of the leg's reach" in str(e.value)
    for bad in ((np.nan, 0, 0), (1, 2), "fast"):
        with pytest.raises((InvalidConfiguration, ValueError)):
            lemur.plan_gait("tripod", bad)
    with pytest.raises(InvalidConfiguration, match="unknown gait"):
        lemur.plan_gait("gallop", (0.01, 0, 0))
    with pytest.raises(InvalidConfiguration):
        lemur.plan_gait("tripod", (0.01, 0, 0), period=-1.0)


def test_athlete_walks(athlete):
    plan = athlete.plan_gait("tripod", (0.1, 0.0, 0.0), period=4.0, cycles=1, swing_height=0.15)
    _check_plan(athlete, plan, (0.1, 0.0, 0.0))
    plan = athlete.plan_gait("wave", (0.0, 0.0, 0.03), period=12.0, cycles=1, swing_height=0.15)
    _check_plan(athlete, plan, (0.0, 0.0, 0.03))


def test_description_round_trip(lemur):
    d = lemur.description()
    w2 = LeggedLocomotorModel.from_description(lemur.mechanism, d)
    assert [l.name for l in w2.legs] == [l.name for l in lemur.legs]
    np.testing.assert_allclose(w2.stand, lemur.stand)
    with pytest.raises(InvalidConfiguration):
        LeggedLocomotorModel.from_description(lemur.mechanism, {"legs": 6})


@pytest.mark.parametrize("twist", [(0.2, 0.0, 0.0), (0.1, 0.1, 0.0), (0.0, 0.0, 0.1), (0.2, 0.0, 0.05)])
def test_athlete_rolls(twist):
    """The same ATHLETE model rolls: the wheeled locomotor reads athlete_mobility.yaml beside the model; with
    the commanded steering set, each wheel's rolling velocity (rate x radius along axle x up, from forward
    kinematics) equals the body twist's velocity at its contact point (no slip)."""
    from mechanism_model_core.locomotion.mobility import mobility_for
    from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

    m = load_model(model_path("athlete/athlete.xml"))
    spec = mobility_for(m)
    assert spec.body_frame == "deck" and len(spec.wheels) == 6
    rover = WheeledLocomotorModel(m, spec)
    cmd = rover.drive(twist, steer_before_drive=False)
    assert cmd.ok, cmd.reason
    q = m.configuration(cmd.steering_by_joint(rover))
    assert m.within_limits(q)
    fk = forward_kinematics(m, q)
    Tb = fk.pose("deck")
    vx, vy, wz = twist
    rates = cmd.rates_by_joint(rover)
    for w in spec.wheels:
        p = np.linalg.inv(Tb) @ fk.pose(w.contact_frame)[:, 3]
        v_body = np.array([vx - wz * p[1], vy + wz * p[0], 0.0])
        axle = Tb[:3, :3].T @ fk.pose(w.drive_joint)[:3, :3] @ m.joint(w.drive_joint).axis
        v_wheel = rates[w.drive_joint] * w.radius * np.cross(axle, [0.0, 0.0, 1.0])
        np.testing.assert_allclose(v_wheel, v_body, atol=1e-9)


def test_description_file_round_trip(tmp_path, athlete):
    from mechanism_model_core import ModelFileError

    f = tmp_path / "walker.xml"
    save_legged(athlete, f)
    back = load_legged(f)                      # the mechanism from the file's model attribute
    assert [l.name for l in back.legs] == [l.name for l in athlete.legs]
    assert [l.foot for l in back.legs] == [l.foot for l in athlete.legs]
    np.testing.assert_allclose(back.stand, athlete.stand)
    text = f.read_text().replace('value="0.0"', 'value="abc"', 1)
    f.write_text(text)
    with pytest.raises(ModelFileError) as e:
        load_legged(f, athlete.mechanism)
    assert e.value.line is not None and e.value.line > 1 and "abc" in str(e.value)


@pytest.mark.parametrize("gait,stop", [("tripod", 30), ("tripod", 6), ("wave", 20)])
def test_back_to_the_standing_pose_one_leg_at_a_time(lemur, gait, stop):
    """A gait stopped mid-cycle (a foot in the air, the others off their neutral points) goes back to the
    standing pose one leg at a time: at every sample (forward kinematics, body at the standing pose) only the
    moving foot moves -- every other foot stays where it is to 1e-9 --, the feet on the ground keep a
    positive static margin without the moving one (statics' support polygon), joint speeds stay within their
    limits, and the last sample is the standing pose."""
    period, v = (2.0, 0.03) if gait == "tripod" else (6.0, 0.01)
    plan = lemur.plan_gait(gait, (v, 0.0, 0.0), period=period)
    wq = plan.trajectory.positions[stop]
    traj = lemur.plan_stand(wq, swing_height=0.03)
    assert len(traj) > 1
    idx = [lemur.mechanism.coordinate_index(n) for n in lemur.joint_names]
    np.testing.assert_allclose(traj.positions[0], wq, atol=0)
    np.testing.assert_allclose(traj.positions[-1], lemur.stand[idx], atol=1e-9)
    Q = np.repeat(lemur.stand[None], len(traj), axis=0)
    Q[:, idx] = traj.positions
    F = np.array([lemur.feet_positions(q) for q in Q])                   # (N, L, 3)
    ground = float(np.mean(lemur.feet_positions(lemur.stand)[:, 2]))
    moves = np.linalg.norm(np.diff(F, axis=0), axis=2) > 1e-9          # (N-1, L)
    assert np.all(moves.sum(axis=1) <= 1)                                # one foot at a time
    com = center_of_mass(lemur.mechanism, Q)
    for k in range(1, len(Q)):
        support = (np.abs(F[k, :, 2] - ground) < 1e-6) & ~moves[k - 1]
        assert support_polygon_margin(F[k, support], com[k], (0, 0, -9.81)).margin > 0
    v = np.abs(np.diff(traj.positions, axis=0)) / np.diff(traj.times)[:, None]
    assert np.all(v <= lemur.velocity_limits * (1 + 1e-9))
    # with acceleration limits: the same path, slower, its accelerations (differences of the velocities)
    # within them
    slow = lemur.plan_stand(wq, swing_height=0.03, acceleration_limits=2.0)
    np.testing.assert_allclose(slow.positions, traj.positions, atol=0)
    vd = np.diff(slow.positions, axis=0) / np.diff(slow.times)[:, None]
    tm = 0.5 * (slow.times[1:] + slow.times[:-1])
    assert np.all(np.abs(slow.accelerations) <= 2.0)
    assert np.max(np.abs(np.diff(vd, axis=0)) / np.diff(tm)[:, None]) <= 2.0 * 1.1      # another estimate
    assert slow.duration > traj.duration
    # from the standing pose: nothing to do; to a cycle's first pose (feet half a stride off neutral)
    assert len(lemur.plan_stand(lemur.stand[idx])) == 0
    onto = lemur.plan_stand(lemur.stand[idx], target=plan.trajectory.positions[0])
    np.testing.assert_allclose(onto.positions[-1], plan.trajectory.positions[0], atol=1e-9)
    assert len(onto) > 1
    with pytest.raises(GaitInfeasible) as e:
        lemur.plan_stand(wq, min_margin=0.5)               # no leg may be lifted
    assert e.value.reason == "margin"
    with pytest.raises(InvalidConfiguration):
        lemur.plan_stand(wq[:-1])
    with pytest.raises(InvalidConfiguration):
        lemur.plan_stand(np.full_like(wq, np.nan))


def test_a_cycle_starts_from_where_the_legs_are(lemur):
    """start_from (what the legged node sends, tested here without ROS): from the cycle's own first pose the
    cycle unchanged, after the minimum delay; from elsewhere (standing, a gait stopped mid-swing) a return
    onto the first pose, then the cycle: continuous (the join is the cycle's first pose to 1e-9), times
    strictly increasing, the first point no sooner than the velocity limits allow (x1.5), the tail the cycle
    itself; a return that cannot keep its margin is refused."""
    plan = lemur.plan_gait("tripod", (0.03, 0.0, 0.0), period=2.0)
    cycle = plan.trajectory
    same, returned = lemur.start_from(cycle.positions[0], cycle)
    assert not returned
    np.testing.assert_array_equal(same.positions, cycle.positions)
    np.testing.assert_allclose(same.times, cycle.times + 0.02, atol=1e-15)
    idx = [lemur.mechanism.coordinate_index(n) for n in lemur.joint_names]
    for wq in (lemur.stand[idx], cycle.positions[30]):
        tr, returned = lemur.start_from(wq, cycle)
        assert returned and len(tr) > len(cycle)
        assert np.all(np.diff(tr.times) > 0)
        n = len(cycle) - 1                                   # the cycle's points after its first
        np.testing.assert_array_equal(tr.positions[-n:], cycle.positions[1:])
        np.testing.assert_allclose(np.diff(tr.times[-n - 1:]), np.diff(cycle.times), atol=1e-12)
        np.testing.assert_allclose(tr.positions[-n - 1], cycle.positions[0], atol=1e-9)
        assert tr.times[0] >= 1.5 * np.max(np.abs(tr.positions[0] - wq) / lemur.velocity_limits) - 1e-12
        assert tr.times[0] >= 0.02
        back = lemur.plan_stand(wq, target=cycle.positions[0])
        np.testing.assert_array_equal(tr.positions[:len(back) - 1], back.positions[1:])
    with pytest.raises(GaitInfeasible):
        lemur.start_from(cycle.positions[30], cycle, min_margin=0.5)
    with pytest.raises(InvalidConfiguration):
        lemur.start_from(cycle.positions[0][:-1], cycle)
