"""Manipulator_Model: the chain view, specialized solvers, Cartesian paths (MoveIt computeCartesianPath
semantics), time parameterization, pointing and serialization.

Oracles: the whole mechanism's forward kinematics (the chain is compiled separately), scipy's Slerp for the
orientations, the two-link closed form for reachability and jumps, finite differences of the executed
trajectory for the limits, and a brute-force forward/backward pass for the time-optimal duration."""

import math
import os

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from mechanism_model_core import InvalidConfiguration, Joint, MechanismBuilder, ModelFileError, load_model
from mechanism_model_core.kinematics import forward_kinematics
from mechanism_model_core.library import model_path
from mechanism_model_core.io.manipulator_xml import load_manipulator, save_manipulator
from mechanism_model_core.locomotion.manipulator import ManipulatorModel
from mechanism_model_core.locomotion.presets import MERArmModel, MoonriseArmModel, R8ArmModel, R8MastModel
from mechanism_model_core.spatial import rot_z, translation

from .optional_deps import require
from .robots import SAFETY

HERE = os.path.dirname(os.path.abspath(__file__))
PANDA = os.path.join(HERE, "..", "data", "robots", "panda", "panda.urdf")


@pytest.fixture(scope="module")
def mer():
    return MERArmModel(load_model(model_path("mer/mer_idd.xml")))


@pytest.fixture(scope="module")
def panda():
    return ManipulatorModel(load_model(PANDA), tool="panda_hand_tcp")


@pytest.fixture(scope="module")
def rover():
    return load_model(model_path("rocky8/rocky8_rover.xml"))


def two_link(l1=0.5, l2=0.5):
    """Planar 2R arm in the xy plane, continuous-range joints, tool at the end."""
    b = MechanismBuilder("two_link_test")
    b.add_body("l1", None, Joint.revolute("j1", lower=-10, upper=10, velocity=1.0))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(l1, 0, 0), lower=-10, upper=10, velocity=1.0))
    b.add_frame("l2", "tip", translation(l2, 0, 0))
    return b.build()


POS_ONLY = (1, 1, 1, 0, 0, 0)


def radial_line(arm, q0, dr, dz):
    """Target pose: the tool moved in the arm plane (radially by dr, vertically by dz), orientation kept --
    on a YPPPY arm's reachable set."""
    T0 = arm.fk(q0)
    psi = q0[0]
    T1 = T0.copy()
    T1[:3, 3] += dr * np.array([math.cos(psi), math.sin(psi), 0.0]) + np.array([0, 0, dz])
    return T0, T1


def assert_on_line(arm, path, T0, T1, tol_p=1e-6, tol_o=1e-5):
    """Every configuration puts the tool on the segment T0 -> T1 at its own parameter (equal steps), the
    orientation being scipy's slerp at that parameter."""
    n = len(path.positions) - 1
    slerp = Slerp([0, 1], Rotation.from_matrix([T0[:3, :3], T1[:3, :3]]))
    for k, q in enumerate(path.positions):
        u = k / path.steps_total
        T = arm.fk(q)
        p = (1 - u) * T0[:3, 3] + u * T1[:3, 3]
        assert np.linalg.norm(T[:3, 3] - p) <= tol_p, (k, n)
        R = slerp([u]).as_matrix()[0]
        ang = Rotation.from_matrix(T[:3, :3] @ R.T).magnitude()
        assert ang <= tol_o, (k, ang)
        assert arm.within_limits(q, 1e-12)


# ---------------------------------------------------------------------------------------------- chain view
def test_chain_view_matches_whole_mechanism(rover):
    """The arm chain of the rover, compiled on its own from arm_mount, gives the tool pose and the Jacobian
    of the whole rover's kinematics (relative to the mount), for random rover states."""
    arm = R8ArmModel(rover)
    assert arm.base == "arm_mount" and arm.joint_names == ("arm_yaw", "arm_shoulder", "arm_elbow",
                                                            "arm_wrist", "arm_turret")
    rng = np.random.default_rng(3)
    for qf in rover.random_configuration(rng, size=5):
        q = arm.chain_q(qf)
        fk = forward_kinematics(rover, qf)
        np.testing.assert_allclose(arm.fk(q), fk.pose("arm_tool", "arm_mount"), atol=1e-12)
        np.testing.assert_allclose(arm.T_world_base(qf) @ arm.fk(q), fk.pose("arm_tool"), atol=1e-12)
        np.testing.assert_allclose(arm.full_q(q, qf), qf, atol=1e-15)
        # Jacobian by central differences of the chain pose (position rows; rotation rows via the log map)
        J = arm.jacobian(q)
        h = 1e-6
        for i in range(arm.n):
            dq = np.zeros(arm.n)
            dq[i] = h
            Tp, Tm = arm.fk(q + dq), arm.fk(q - dq)
            np.testing.assert_allclose(J[:3, i], (Tp[:3, 3] - Tm[:3, 3]) / (2 * h), atol=1e-7)
            w = Rotation.from_matrix(Tp[:3, :3] @ Tm[:3, :3].T).as_rotvec() / (2 * h)
            np.testing.assert_allclose(J[3:, i], w, atol=1e-7)


def test_default_base_and_chain_excludes_other_branches(panda):
    assert panda.base == "panda_link0"
    assert panda.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8))       # no fingers


def test_tool_not_below_base_is_an_error(rover):
    from mechanism_model_core import ModelStructureError

    with pytest.raises(ModelStructureError, match="does not hang from the base"):
        ManipulatorModel(rover, tool="arm_tool", base="mast_head")


def test_specialized_solvers_used_automatically(mer, rover):
    """The MER IDD's registered closed form, and the Rocky 8 arm's (registered by its adaptation for the
    rover's arm chain), solve IK without being named."""
    q = np.array([0.4, 0.5, -1.4, 0.7, -0.3])
    r = mer.ik(mer.fk(q), np.zeros(5), timeout=SAFETY)
    assert r.success and r.solver == "ypppy"
    np.testing.assert_allclose(mer.fk(r.q), mer.fk(q), atol=1e-9)
    arm = R8ArmModel(rover)
    q = np.array([0.3, 0.4, -0.9, 0.3, 0.2])
    r = arm.ik(arm.fk(q), np.zeros(5), timeout=SAFETY)
    assert r.success and r.solver == "ypppy", r
    np.testing.assert_allclose(arm.fk(r.q), arm.fk(q), atol=1e-9)


def test_moonrise_closed_form_registered_per_adaptation():
    """The digging arm's YPPP closed form: every branch it enumerates for FK(q) reproduces the pose, q is one
    of them, and IK (used automatically) agrees with the generic solver on the pose."""
    from mechanism_model_core import PoseConstraint, solve_ik

    arm = MoonriseArmModel(load_model(model_path("moonrise/moonrise_arm.xml")))
    solver = arm.specialized_solver()
    assert solver is not None and solver.name == "yppp"
    rng = np.random.default_rng(5)
    for q in arm.chain.random_configuration(rng, size=30):
        T = arm.fk(q)
        sols = solver.all_solutions(T)
        assert min(np.max(np.abs((s - q + math.pi) % (2 * math.pi) - math.pi)) for s in sols) < 1e-9
        r = arm.ik(T, arm.home, timeout=SAFETY)
        assert r.success and r.solver == "yppp"
        np.testing.assert_allclose(arm.fk(r.q), T, atol=1e-8)
        g = solve_ik(arm.chain, [PoseConstraint("scoop_tip", T)], arm.home, solver="dls", rng=1,
                     timeout=SAFETY)
        if g.success:
            np.testing.assert_allclose(arm.fk(g.q), arm.fk(r.q), atol=1e-5)
    r = arm.dig_pose([1.0, 0.3, -0.2], 0.6, timeout=SAFETY)
    assert r.success and r.solver == "yppp"
    T = arm.fk(r.q)
    np.testing.assert_allclose(T[:3, 3], [1.0, 0.3, -0.2], atol=1e-9)


# ---------------------------------------------------------------------------------------------- paths
def test_straight_line_closed_form_mer(mer):
    q0 = np.array([0.3, 0.6, -1.6, 0.6, 0.2])
    T0, T1 = radial_line(mer, q0, -0.2, -0.1)
    path = mer.straight_line(T1, q0, max_step=0.005)
    assert path.fraction == 1.0 and path.reason == "ok"
    assert path.steps_total == math.ceil(np.linalg.norm(T1[:3, 3] - T0[:3, 3]) / 0.005)
    assert_on_line(mer, path, T0, T1)
    # continuity of the branch: no joint moves more than a few step sizes between steps
    assert np.max(np.abs(np.diff(path.positions, axis=0))) < 0.05
    # the closed form alone (no Newton steps) gives the same configurations: branch nearest each previous
    closed = mer.straight_line(T1, q0, max_step=0.005, max_iterations=0)
    assert closed.solver == "newton+ypppy" and closed.fraction == 1.0
    np.testing.assert_allclose(closed.positions, path.positions, atol=1e-6)


def test_straight_line_generic_panda_with_rotation(panda):
    """A 0.4 m line with a 0.6 rad turn of the hand: positions on the line, orientations slerped."""
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8])
    T0 = panda.fk(q0)
    T1 = T0.copy()
    T1[:3, 3] += [0.2, 0.25, -0.2]
    T1[:3, :3] = T0[:3, :3] @ Rotation.from_rotvec([0.3, -0.2, 0.45]).as_matrix()
    path = panda.straight_line(T1, q0, max_step=0.005, max_rotation_step=0.01)
    assert path.fraction == 1.0, path.message
    assert path.steps_total == max(math.ceil(np.linalg.norm(T1[:3, 3] - T0[:3, 3]) / 0.005),
                                   math.ceil(np.linalg.norm([0.3, -0.2, 0.45]) / 0.01))
    assert_on_line(panda, path, T0, T1)


def _seeded_path_length(q0, targets):
    """Joint-space length of the path MoveIt-style IK gives a 7-DOF Panda (each step's IK seeded with the
    previous solution, damped Newton steps to convergence), computed with Pinocchio (the test oracle)."""
    pin = require("pinocchio", "test")
    model = pin.buildModelFromUrdf(PANDA)
    data = model.createData()
    fid = model.getFrameId("panda_hand_tcp")
    q = np.zeros(model.nq)
    q[:7] = q0
    length = 0.0
    for Tt in targets:
        prev = q[:7].copy()
        for _ in range(50):
            pin.forwardKinematics(model, data, q)
            M = pin.updateFramePlacement(model, data, fid)
            e = np.concatenate([Tt[:3, 3] - M.translation, pin.log3(Tt[:3, :3] @ M.rotation.T)])
            if np.linalg.norm(e) < 1e-10:
                break
            J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:, :7]
            q[:7] += J.T @ np.linalg.solve(J @ J.T + 1e-10 * np.eye(6), e)
        assert np.linalg.norm(e) < 1e-8
        length += float(np.linalg.norm(q[:7] - prev))
    return length


def test_redundant_arm_does_not_drift_in_self_motion(panda):
    """A 7-DOF arm following a line moves its joints about as little as IK seeded with the previous step does
    (MoveIt's way): the path's predictor must not carry the self-motion on from step to step (a predictor
    that did wandered up to ten times further in joint space on lines like these)."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(12):
        q0 = panda.lower + (panda.upper - panda.lower) * rng.uniform(0.25, 0.75, panda.n)
        T0 = panda.fk(q0)
        T1 = T0.copy()
        d = rng.normal(size=3)
        T1[:3, 3] += rng.uniform(0.2, 0.5) * d / np.linalg.norm(d)
        T1[:3, :3] = T0[:3, :3] @ Rotation.from_rotvec(rng.uniform(-0.3, 0.3, 3)).as_matrix()
        path = panda.straight_line(T1, q0, max_step=0.005)
        if path.fraction < 1.0:
            continue
        checked += 1
        ours = float(np.linalg.norm(np.diff(path.positions, axis=0), axis=1).sum())
        ref = _seeded_path_length(q0, path.poses[1:])
        assert ours <= 1.3 * ref + 0.05, (ours, ref)
    assert checked >= 4


def test_waypoints_visit_each_pose(panda):
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8])
    T0 = panda.fk(q0)
    wps = []
    for d in ([0.1, 0, 0], [0.1, 0.1, 0], [0, 0.1, -0.1]):
        T = T0.copy()
        T[:3, 3] += d
        wps.append(T)
    path = panda.cartesian_path(wps, q0, max_step=0.01)
    assert path.fraction == 1.0
    ends = [int(np.nonzero(path.waypoint_index == k)[0][-1]) + 1 for k in range(3)]
    for k, i in enumerate(ends):
        np.testing.assert_allclose(panda.fk(path.positions[i]), wps[k], atol=1e-5)


def test_fraction_below_one_exactly_when_out_of_reach():
    """A 2R arm (reach 1.0 m) moving its tip along y = 0.3 from x = 0.5 to x = 1.2: the steps achieved are
    exactly those whose target lies within reach (closed form: |p| <= l1 + l2)."""
    arm = ManipulatorModel(two_link(), tool="tip")
    q0 = np.array([0.3, 1.2])
    T0 = arm.fk(q0)
    x0, y0 = T0[0, 3], T0[1, 3]
    T1 = T0.copy()
    T1[0, 3] = 1.2
    path = arm.straight_line(T1, q0, max_step=0.01, mask=POS_ONLY)
    n = path.steps_total
    reach = [math.hypot(x0 + (1.2 - x0) * k / n, y0) <= 1.0 - 1e-9 for k in range(1, n + 1)]
    expected = reach.index(False)
    assert not all(reach)
    assert len(path.positions) - 1 == expected
    assert path.fraction == pytest.approx(expected / n) and path.fraction < 1
    assert path.reason == "unreachable" and f"step {expected + 1} of {n}" in path.message
    # the same line stopped inside the reach is achieved whole
    T2 = T0.copy()
    T2[0, 3] = x0 + (1.2 - x0) * (expected - 1) / n
    assert arm.straight_line(T2, q0, max_step=0.01, mask=POS_ONLY).fraction == 1.0


def _two_link_ik(p, q_prev, l1=0.5, l2=0.5):
    c2 = (p @ p - l1 * l1 - l2 * l2) / (2 * l1 * l2)
    best = None
    for s2 in (math.sqrt(max(0.0, 1 - c2 * c2)), -math.sqrt(max(0.0, 1 - c2 * c2))):
        q2 = math.atan2(s2, c2)
        q1 = math.atan2(p[1], p[0]) - math.atan2(l2 * s2, l1 + l2 * c2)
        q = np.array([q1, q2])
        q = q_prev + (q - q_prev + math.pi) % (2 * math.pi) - math.pi
        if best is None or np.max(np.abs(q - q_prev)) < np.max(np.abs(best - q_prev)):
            best = q
    return best


def test_jump_thresholds_stop_the_path_exactly_at_the_jump():
    """The 2R tip passes 2 mm beside the base axis: the shoulder swings by almost pi within a few steps. The
    absolute threshold stops the path at the first step whose closed-form joint change exceeds it; without
    thresholds the whole line is achieved; MoveIt's relative threshold (factor x mean step) stops it too."""
    arm = ManipulatorModel(two_link(), tool="tip")
    p0, p1 = np.array([0.3, 0.002, 0.0]), np.array([-0.3, 0.002, 0.0])
    q0 = _two_link_ik(p0[:2], np.array([0.0, 2.0]))
    T0 = arm.fk(q0)
    np.testing.assert_allclose(T0[:3, 3], p0, atol=1e-12)
    T1 = T0.copy()
    T1[:3, 3] = p1
    free = arm.straight_line(T1, q0, max_step=0.01, mask=POS_ONLY)
    assert free.fraction == 1.0 and free.reason == "ok"
    # oracle: closed-form joint steps along the line, nearest branch each time
    n = free.steps_total
    q, steps = q0, []
    for k in range(1, n + 1):
        qn = _two_link_ik((p0 + (p1 - p0) * k / n)[:2], q)
        steps.append(np.max(np.abs(qn - q)))
        q = qn
    thr = 0.5
    first = next(k for k, d in enumerate(steps) if d > thr)
    cut = arm.straight_line(T1, q0, max_step=0.01, mask=POS_ONLY, absolute_jump_threshold=thr)
    assert cut.reason == "jump" and len(cut.positions) - 1 == first
    assert cut.fraction == pytest.approx(first / n) and cut.fraction < 1
    rel = arm.straight_line(T1, q0, max_step=0.01, mask=POS_ONLY, jump_threshold=5.0)
    d = np.linalg.norm(np.diff(free.positions, axis=0), axis=1)
    expected = int(np.nonzero(d > 5.0 * d.mean())[0][0])
    assert rel.reason == "jump" and len(rel.positions) - 1 == expected and rel.fraction < 1
    # a smooth line far from the axis has no jump under the same thresholds
    T2 = arm.fk(np.array([0.2, 1.8]))
    T3 = T2.copy()
    T3[1, 3] += 0.2
    ok = arm.straight_line(T3, np.array([0.2, 1.8]), max_step=0.01, mask=POS_ONLY, jump_threshold=5.0,
                           absolute_jump_threshold=thr)
    assert ok.fraction == 1.0


def test_off_reachable_set_of_five_dof_arm(mer):
    """A sideways line with the orientation held is off the 5-DOF IDD's reachable set: fraction 0 with a
    reason; leaving the rotation about the instrument's x axis free (mask) makes it reachable."""
    q0 = np.array([0.3, 0.6, -1.6, 0.6, 0.2])
    T0 = mer.fk(q0)
    T1 = T0.copy()
    T1[:3, 3] += 0.1 * np.array([-math.sin(0.3), math.cos(0.3), 0.0])
    p = mer.straight_line(T1, q0, max_step=0.005)
    assert p.fraction == 0.0 and p.reason == "unreachable" and "step 1 of 20" in p.message
    p = mer.straight_line(T1, q0, max_step=0.005, mask=(1, 1, 1, 0, 1, 1))
    assert p.fraction == 1.0
    for q, T in zip(p.positions, p.poses):
        Tq = mer.fk(q)
        assert np.linalg.norm(Tq[:3, 3] - T[:3, 3]) < 1e-6
        assert np.linalg.norm(Tq[:3, 0] - T[:3, 0]) < 1e-5          # the instrument axis kept


@pytest.mark.parametrize("bad", [
    np.full((4, 4), np.nan),
    np.diag([1.0, 1.0, 1.0, 1.0]) * 2,
    np.zeros((3, 3)),
])
def test_bad_waypoints_are_errors(panda, bad):
    with pytest.raises(InvalidConfiguration):
        panda.cartesian_path([bad], None)


def test_bad_parameters_are_errors(panda):
    T = panda.fk()
    for kw in ({"max_step": 0.0}, {"max_step": float("nan")}, {"jump_threshold": -1.0}, {"mask": (1, 1)}):
        with pytest.raises(InvalidConfiguration):
            panda.cartesian_path([T], None, **kw)
    with pytest.raises(InvalidConfiguration):
        panda.cartesian_path([T], np.full(7, np.nan))


def test_validity_callback_stops_path(panda):
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8])
    T1 = panda.fk(q0)
    T1[0, 3] += 0.1
    calls = []

    def valid(q):
        calls.append(q)
        return len(calls) < 5

    p = panda.straight_line(T1, q0, max_step=0.01, is_valid=valid)
    assert p.reason == "invalid" and len(p.positions) == 5 and p.fraction == pytest.approx(0.4)


# ---------------------------------------------------------------------------------------------- timing
def _brute_force_duration(Q, vmax, amax, n=4000):
    """Time-optimal duration along the piecewise-linear interpolation of Q sampled densely: speed cap from
    the velocity limits, forward/backward passes with the acceleration limits (curvature terms ignored on
    straight pieces, corners handled by the cap at the sample)."""
    seg = np.linalg.norm(np.diff(Q, axis=0), axis=1)
    s = np.concatenate([[0], np.cumsum(seg)])
    ss = np.linspace(0, s[-1], n)
    dQ = np.diff(Q, axis=0) / seg[:, None]
    k = np.clip(np.searchsorted(s, ss, side="right") - 1, 0, len(seg) - 1)
    tang = dQ[k]
    cap = np.min(vmax / np.maximum(np.abs(tang), 1e-12), axis=1)
    acc = np.min(amax / np.maximum(np.abs(tang), 1e-12), axis=1)
    v2 = cap ** 2
    v2[0] = v2[-1] = 0.0
    ds = np.diff(ss)
    for i in range(n - 1):
        v2[i + 1] = min(v2[i + 1], v2[i] + 2 * acc[i] * ds[i])
    for i in range(n - 2, -1, -1):
        v2[i] = min(v2[i], v2[i + 1] + 2 * acc[i] * ds[i])
    v = np.sqrt(v2)
    return float(np.sum(2 * ds / np.maximum(v[:-1] + v[1:], 1e-12)))


@pytest.mark.parametrize("which", ["mer", "panda"])
def test_time_parameterization_within_limits(which, mer, panda):
    require("toppra", "trajectory")
    if which == "mer":
        arm, q0 = mer, np.array([0.3, 0.6, -1.6, 0.6, 0.2])
        _, T1 = radial_line(mer, q0, -0.2, -0.1)
    else:
        arm, q0 = panda, np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.5, 0.8])
        T1 = panda.fk(q0)
        T1[:3, 3] += [0.3, 0.2, -0.3]
    path = arm.straight_line(T1, q0, max_step=0.005)
    assert path.fraction == 1.0
    traj = arm.time_parameterize(path.positions)
    vmax, amax = arm.velocity_limits, arm.acceleration_limits
    # every planned configuration is a point of the trajectory, in order, at increasing times
    idx = [int(np.argmin(np.max(np.abs(traj.positions - q), axis=1))) for q in path.positions]
    assert idx == sorted(idx) and idx[0] == 0 and idx[-1] == len(traj) - 1
    np.testing.assert_allclose(traj.positions[idx], path.positions, atol=1e-9)
    assert np.all(np.diff(traj.times) > 0)
    np.testing.assert_allclose(traj.velocities[[0, -1]], 0.0, atol=1e-12)
    # limits by differencing what the controller executes (quintics through the points)
    dt = 1e-3
    t = np.arange(0.0, traj.duration, dt)
    q, _, _ = traj.sample(t)
    v = np.diff(q, axis=0) / dt
    a = np.diff(q, 2, axis=0) / dt ** 2
    assert np.all(np.abs(v) <= vmax * (1 + 1e-3)), np.max(np.abs(v) / vmax)
    assert np.all(np.abs(a) <= amax * 1.01), np.max(np.abs(a) / amax)
    # the sampled positions follow the planned path: each lies near the polyline of configurations
    # and the duration is close to the brute-force time-optimal one (and never shorter than its velocity
    # bound)
    T_bf = _brute_force_duration(path.positions, vmax, amax)
    vel_bound = float(np.sum(np.max(np.abs(np.diff(path.positions, axis=0)) / vmax, axis=1)))
    assert traj.duration >= vel_bound * (1 - 1e-6)
    assert 0.8 * T_bf <= traj.duration <= 1.25 * T_bf, (traj.duration, T_bf)


def test_time_parameterization_scaling_and_bad_limits(panda):
    require("toppra", "trajectory")
    from mechanism_model_core.locomotion.trajectory import TrajectoryError, time_parameterize

    Q = np.linspace(np.zeros(7), np.full(7, 0.5), 20)
    full = panda.time_parameterize(Q)
    half = panda.time_parameterize(Q, velocity_scaling=0.5, acceleration_scaling=0.25)
    assert half.duration == pytest.approx(2 * full.duration, rel=0.02)
    with pytest.raises(TrajectoryError):
        time_parameterize(Q, -1.0, 1.0)
    with pytest.raises(InvalidConfiguration):
        time_parameterize(np.full((3, 2), np.nan), 1.0, 1.0)
    with pytest.raises(InvalidConfiguration):
        panda.time_parameterize(Q, velocity_scaling=0.0)
    one = time_parameterize(Q[:1], 1.0, 1.0)
    assert one.duration == 0.0 and len(one) == 1


# ---------------------------------------------------------------------------------------------- pointing
def test_mast_points_at_targets(rover):
    mast = R8MastModel(rover)
    assert mast.joint_names == ("mast_pan", "mast_tilt")
    for target in ([3.0, 1.0, -1.0], [2.0, -2.0, -1.3], [0.5, 4.0, 0.5]):
        r = mast.point_at(target)
        assert r.success, r
        T = mast.fk(r.q)
        d = np.asarray(target) - T[:3, 3]
        ang = math.acos(np.clip(T[:3, 0] @ d / np.linalg.norm(d), -1, 1))
        assert ang < 1e-4
        assert mast.within_limits(r.q)
    # straight down at the mast's foot: the tilt limit (1.4 rad) stops it
    r = mast.point_at([0.3, 0.0, -1.45])
    assert not r.success and r.reason == "limits" and mast.within_limits(r.q)
    with pytest.raises(InvalidConfiguration):
        mast.point_at([np.nan, 0, 0])


# ---------------------------------------------------------------------------------------------- files
def test_description_round_trip(tmp_path, rover):
    arm = R8ArmModel(rover, acceleration_limits=[1, 2, 3, 4, 5])
    f = tmp_path / "arm.xml"
    save_manipulator(arm, f)
    back = load_manipulator(f, rover)
    assert type(back) is R8ArmModel and back.base == arm.base and back.tools == arm.tools
    assert back.joint_names == arm.joint_names
    np.testing.assert_allclose(back.acceleration_limits, [1, 2, 3, 4, 5])
    q = np.array([0.1, 0.2, -0.3, 0.4, 0.5])
    np.testing.assert_allclose(back.fk(q), arm.fk(q), atol=1e-15)
    # loading the mechanism from the file's model attribute
    back2 = load_manipulator(f)
    np.testing.assert_allclose(back2.fk(q), arm.fk(q), atol=1e-12)


def test_description_errors_name_file_and_line(tmp_path, rover):
    f = tmp_path / "bad.xml"
    f.write_text('<?xml version="1.0"?>\n<Manipulator_Model name="x" kind="R8ArmModel" mechanism="rocky8"\n'
                 ' base="arm_mount" tool="arm_tool">\n  <Joint name="nope"/>\n</Manipulator_Model>\n')
    with pytest.raises(ModelFileError) as e:
        load_manipulator(f, rover)
    assert e.value.line == 4 and str(f) in str(e.value)
    f.write_text('<Manipulator_Model name="x" mechanism="other" base="a" tool="b"/>')
    with pytest.raises(ModelFileError, match="not of 'rocky8'"):
        load_manipulator(f, rover)


# ---------------------------------------------------------------------------------------------- statics
def _potential(m, qf, g=9.81):
    """Gravity potential (J) from each body's mass and centre of mass placed by forward kinematics."""
    fk = forward_kinematics(m, qf)
    V = 0.0
    for b in m.bodies[1:]:
        if b.mass.mass > 0:
            T = fk.pose(b.name)
            V += b.mass.mass * g * (T[:3, :3] @ b.mass.com + T[:3, 3])[2]
    return V


def test_gravity_torques_are_the_potential_gradient(rover):
    """The arm of a tilted rover: the torques that hold it are dV/dq of the whole rover's potential,
    by central differences (only the arm's coordinates are perturbed)."""
    arm = R8ArmModel(rover)
    qf = rover.configuration({"chassis.pitch": 0.2, "chassis.roll": -0.1, "left_rocker": 0.1})
    q = np.array([0.3, 0.4, -0.9, 0.3, 0.2])
    tau = arm.gravity_torques(q, qf)
    base = arm.full_q(q, qf)
    h = 1e-6
    for i, name in enumerate(arm.joint_names):
        k = rover.coordinate_index(name)
        qp, qm = base.copy(), base.copy()
        qp[k] += h
        qm[k] -= h
        assert tau[i] == pytest.approx((_potential(rover, qp) - _potential(rover, qm)) / (2 * h), abs=1e-6)
    assert np.any(np.abs(tau) > 0.1)


# ------------------------------------------------------------------ avoid_collisions (MoveIt's flag)
ROVER_ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
ROVER_Q_ARM = [0.2, 0.5, -1.2, 0.4, 0.1]


def _rover_arm(rover):
    arm = ManipulatorModel(rover, tool="arm_tool", base="arm_mount")
    return arm, arm.chain_q(rover.configuration(dict(zip(ROVER_ARM, ROVER_Q_ARM))))


def _first_colliding_step(arm, path, **kw):
    """Brute force: every step of the path planned without collision checking, checked as one batch."""
    from mechanism_model_core.collision import in_collision
    hits = in_collision(arm.mechanism, np.array([arm.full_q(q) for q in path.positions]), **kw)
    return int(np.argmax(hits)) if np.any(hits) else None


def test_avoid_collisions_stops_at_the_first_self_collision(rover):
    """The Rocky 8 arm pulled back and up along its own plane folds its forearm into its turret: with
    avoid_collisions the path ends at the step before the first colliding one (the same step a brute-force
    check of the unchecked path finds), the fraction says so, the message names the bodies."""
    require("coal", "collision")
    arm, q0 = _rover_arm(rover)
    T0 = arm.fk(q0)
    T1 = T0.copy()
    T1[:3, 3] += [-0.4 * math.cos(0.2), -0.4 * math.sin(0.2), 0.1]
    free = arm.cartesian_path([T1], q0, max_step=0.005)
    assert free.fraction == 1.0                                   # reachable, but through a fold
    k = _first_colliding_step(arm, free)
    assert k is not None and k > 1
    path = arm.cartesian_path([T1], q0, max_step=0.005, avoid_collisions=True)
    assert path.reason == "collision" and "arm_fore-arm_turret" in path.message
    assert len(path.positions) == k and path.fraction == pytest.approx((k - 1) / free.steps_total)
    np.testing.assert_allclose(path.positions, free.positions[:k], atol=1e-12)
    assert _first_colliding_step(arm, path) is None


def test_avoid_collisions_stops_before_an_obstacle(rover):
    """Straight down onto a rock whose top is 0.15 m below the tool: the path stops above the rock, at the
    step a brute-force check finds first in collision; without avoid_collisions (or without the rock) the
    whole line is planned."""
    require("coal", "collision")
    from mechanism_model_core.collision import Environment, Obstacle

    arm, q0 = _rover_arm(rover)
    T0 = arm.fk(q0)
    p_tool = forward_kinematics(rover, arm.full_q(q0)).position("arm_tool")
    rock = Environment([Obstacle.box("rock", (0.2, 0.2, 0.2), translation(*(p_tool + [0.0, 0.0, -0.25])))])
    T1 = T0.copy()
    T1[:3, 3] += [0.0, 0.0, -0.3]
    free = arm.cartesian_path([T1], q0, max_step=0.005)
    assert free.fraction == 1.0
    assert arm.cartesian_path([T1], q0, max_step=0.005, avoid_collisions=True).fraction == 1.0   # no rock
    path = arm.cartesian_path([T1], q0, max_step=0.005, avoid_collisions=True, environment=rock)
    assert path.reason == "collision" and "rock" in path.message and path.fraction < 1.0
    k = _first_colliding_step(arm, free, environment=rock)
    assert len(path.positions) == k
    descent = T0[2, 3] - path.poses[-1][2, 3]
    assert 0.0 < descent < 0.15                                   # stopped above the rock's top face
    # a margin stops it earlier
    wide = arm.cartesian_path([T1], q0, max_step=0.005, avoid_collisions=True, environment=rock,
                              collision_margin=0.03)
    assert wide.fraction < path.fraction
    with pytest.raises(InvalidConfiguration):
        arm.cartesian_path([T1], q0, environment=rock)            # an environment without avoid_collisions
    with pytest.raises(InvalidConfiguration):
        arm.cartesian_path([T1], q0, avoid_collisions=True, collision_margin=-1.0)


def test_avoid_collisions_ignores_pairs_the_chain_does_not_move(rover):
    """The rover's wheels sink into a terrain plane (a contact the arm cannot change): the arm's path is not
    stopped by it, but is stopped by the rock on its line at the brute-force step (the first step where an arm
    body touches the rock); the moving bodies are the arm's links, not the wheels or the chassis."""
    require("coal", "collision")
    from mechanism_model_core.collision import Environment, Obstacle, collisions
    from mechanism_model_core import shapes as S

    arm, q0 = _rover_arm(rover)
    moving = arm.moving_bodies()
    assert {"arm_turret", "arm_fore"} <= moving and not any(b.endswith("_wheel") for b in moving)
    assert "chassis" not in moving
    wheel_z = min(forward_kinematics(rover, arm.full_q(q0)).position(b.name)[2] for b in rover.bodies
                  if b.name.endswith("_wheel"))
    plane = Obstacle("terrain", S.HalfSpace((0.0, 0.0, 1.0), wheel_z - 0.08), np.eye(4))   # the wheels sink in
    p_tool = forward_kinematics(rover, arm.full_q(q0)).position("arm_tool")
    rock = Obstacle.box("rock", (0.2, 0.2, 0.2), translation(*(p_tool + [0.0, 0.0, -0.25])))
    T1 = arm.fk(q0)
    T1[:3, 3] += [0.0, 0.0, -0.2]
    free = arm.cartesian_path([T1], q0, max_step=0.005)
    assert any(c.body_a.endswith("_wheel") for c in collisions(rover, arm.full_q(q0), environment=Environment([plane])))
    alone = arm.cartesian_path([T1], q0, max_step=0.005, avoid_collisions=True, environment=Environment([plane]))
    assert alone.fraction == 1.0, alone.message
    path = arm.cartesian_path([T1], q0, max_step=0.005, avoid_collisions=True, environment=Environment([plane, rock]))
    k = next(i for i, q in enumerate(free.positions)
             if any(c.body_b == "rock" for c in collisions(rover, arm.full_q(q), environment=Environment([rock]))))
    assert path.reason == "collision" and "rock" in path.message and "wheel" not in path.message
    assert len(path.positions) == k
