"""Batch IK (``solve_ik_batch``) and the population LM (``solver="lm"``), checked with Pinocchio as the
independent forward kinematics: every returned solution reaches its target within tolerance and lies within
limits; batch answers equal single solves; out-of-reach targets are reported without restarts; a model never
seen before meets its first deadline (caches are not billed); malformed input raises before solving."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mechanism_model_core import PoseConstraint, PositionConstraint, forward_kinematics, load_model
from mechanism_model_core.library import default_model_path
from mechanism_model_core.errors import InvalidConfiguration
from mechanism_model_core.ik import solve_ik, solve_ik_batch
from mechanism_model_core.ik.batch import FAR_ITERATIONS, ORIENTATION_WEIGHT, SEED_TABLE, chain_engine
from mechanism_model_core.ik.solve import ConstraintManager
from mechanism_model_core.kinematics import frame_chain
from mechanism_model_core.io.urdf import load_urdf

from . import cache_clock
from .robots import SAFETY, panda, ur5

pin = pytest.importorskip("pinocchio")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
#: (URDF, tip link): public arm descriptions vendored in test/data/robots (licences there)
ARMS = {"ur5": ("ur5/ur5.urdf", "tool0"), "panda": ("panda/panda.urdf", "panda_link8"),
        "arm7": ("arm7/arm7_primitives.urdf", None)}
TOL_P, TOL_O = 1e-5, 1e-5


class PinOracle:
    """Pinocchio's model of the same URDF: pose of ``tip`` at our configuration (joints matched by name)."""

    def __init__(self, path, mech, tip):
        self.model = pin.buildModelFromUrdf(path)
        self.data = self.model.createData()
        self.fid = self.model.getFrameId(tip)
        self.mech = mech
        self.cols = []
        for jid in range(1, self.model.njoints):
            name = self.model.names[jid]
            assert self.model.joints[jid].nq == 1, name
            self.cols.append((self.model.joints[jid].idx_q, mech.coordinate_index(name)))

    def pose(self, q):
        qp = pin.neutral(self.model)
        for i, k in self.cols:
            qp[i] = q[k]
        pin.framesForwardKinematics(self.model, self.data, qp)
        return self.data.oMf[self.fid].homogeneous

    def errors(self, q, T):
        F = self.pose(q)
        return float(np.linalg.norm(F[:3, 3] - T[:3, 3])), float(np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)))


def _arm(name):
    path, tip = ARMS[name]
    path = os.path.join(DATA, path)
    m = load_urdf(path)
    if tip is None:
        tip = m.frames[-1] if hasattr(m, "frames") and isinstance(m.frames, list) else _last_link(m)
    return m, tip, PinOracle(path, m, tip), path


def _last_link(m):
    from mechanism_model_core.kinematics import frame_chain

    names = [f for f in m.frame_names if f != m.ground]
    return max(names, key=lambda f: frame_chain(m, f).n)


_ARMS = {}


def arm(name):
    if name not in _ARMS:
        _ARMS[name] = _arm(name)
    return _ARMS[name]


def _within(m, q):
    return bool(np.all(q >= m.lower_limits - 1e-12) and np.all(q <= m.upper_limits + 1e-12))


@pytest.mark.parametrize("name", sorted(ARMS))
def test_batch_solutions_reach_their_targets_by_pinocchio(name):
    m, tip, oracle, _ = arm(name)
    rng = np.random.default_rng(7)
    Q = m.random_configuration(rng, size=40)
    T = np.stack([oracle.pose(q) for q in Q])                     # targets from Pinocchio, not from us
    seeds = m.random_configuration(rng, size=40)
    res = solve_ik_batch(m, tip, T, seeds, tol_position=TOL_P, tol_orientation=TOL_O)
    assert res.success.all(), (res.reason[~res.success], res.position_error[~res.success])
    for k in range(40):
        pe, oe = oracle.errors(res.q[k], T[k])
        assert pe <= TOL_P * 1.01 and oe <= TOL_O * 1.01, (k, pe, oe)
        assert _within(m, res.q[k])
        assert abs(res.position_error[k] - pe) < 1e-9


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_single_lm_solutions_meet_tolerance_and_limits(data):
    name = data.draw(st.sampled_from(sorted(ARMS)))
    m, tip, oracle, _ = arm(name)
    u = np.array(data.draw(st.lists(st.floats(0.0, 1.0), min_size=2 * m.nq, max_size=2 * m.nq)))
    lo, hi = m.lower_limits, m.upper_limits
    q_t = lo + u[:m.nq] * (hi - lo)
    q_0 = lo + u[m.nq:] * (hi - lo)
    T = oracle.pose(q_t)
    r = solve_ik(m, PoseConstraint(tip, T), q_0, timeout=SAFETY, tol_position=TOL_P, tol_orientation=TOL_O)
    assert r.success, r
    pe, oe = oracle.errors(r.q, T)
    assert pe <= TOL_P * 1.01 and oe <= TOL_O * 1.01
    assert _within(m, r.q)


def test_batch_equals_single_solves():
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(3)
    Q = m.random_configuration(rng, size=12)
    T = forward_kinematics(m, Q).pose(tip)
    seeds = m.random_configuration(rng, size=12)
    whole = solve_ik_batch(m, tip, T, seeds, tol_position=TOL_P, tol_orientation=TOL_O)
    wide = solve_ik_batch(m, tip, T, seeds, tol_position=TOL_P, tol_orientation=TOL_O, start_width=6)
    for k in range(12):
        one = solve_ik_batch(m, tip, T[k:k + 1], seeds[k:k + 1], tol_position=TOL_P, tol_orientation=TOL_O)
        assert one.success[0] == whole.success[k]
        np.testing.assert_allclose(one.q[0], whole.q[k], atol=1e-12)
        assert one.iterations[0] == whole.iterations[k] and one.restarts[0] == whole.restarts[k]
        # a single solve starts with the whole population: the batch does with start_width=population (a
        # single lane takes the single-configuration pass: equal to rounding, not bit for bit)
        single = solve_ik(m, PoseConstraint(tip, T[k]), seeds[k], solver="lm", timeout=SAFETY,
                          tol_position=TOL_P, tol_orientation=TOL_O, max_iterations=2000,
                          solver_options={"focus": False})
        assert single.success == bool(wide.success[k])
        np.testing.assert_allclose(single.q, wide.q[k], atol=1e-9)
        # the same iterations and restarts: the single target's own loop (LaneEngine._run_single) takes the
        # steps of the batch loop
        assert (single.iterations, single.restarts) == (wide.iterations[k], wide.restarts[k])
        r = whole.result(k)
        assert r.success == bool(whole.success[k]) and r.residuals[0].position <= TOL_P


def test_single_target_loop_restarts_stalled_lanes_as_the_batch_loop_does():
    """solve_ik's single target runs its own loop (LaneEngine._run_single); through stalled lanes and their
    restarts it takes the batch loop's steps: same answers, iterations and restarts as a batch started with
    the whole population (UR5: tight limits, several targets restart lanes)."""
    m, tip, oracle, _ = arm("ur5")
    rng = np.random.default_rng(4)
    Q = m.random_configuration(rng, size=30)
    T = forward_kinematics(m, Q).pose(tip)
    seeds = m.random_configuration(rng, size=30)
    wide = solve_ik_batch(m, tip, T, seeds, tol_position=TOL_P, tol_orientation=TOL_O, start_width=6,
                          max_iterations=600)
    assert wide.restarts.max() > 5                   # some targets restarted stalled lanes
    for k in range(30):
        single = solve_ik(m, PoseConstraint(tip, T[k]), seeds[k], solver="lm", timeout=SAFETY,
                          tol_position=TOL_P, tol_orientation=TOL_O, max_iterations=600,
                          solver_options={"focus": False})
        assert single.success == bool(wide.success[k])
        np.testing.assert_allclose(single.q, wide.q[k], atol=1e-9)
        assert (single.iterations, single.restarts) == (wide.iterations[k], wide.restarts[k])
        if single.success:
            pe, oe = oracle.errors(single.q, T[k])
            assert pe <= TOL_P * 1.01 and oe <= TOL_O * 1.01 and _within(m, single.q)


def test_focus_on_the_best_lane_saves_iterations_and_keeps_answers_exact():
    """A single solve goes on with its lane of lowest cost alone once that lane converges fast (FOCUS_AFTER):
    over 40 targets the median lane-iterations fall by at least a fifth against the population's steps
    (``focus=False``), every answer meets the tolerance by Pinocchio and lies within limits, and no target the
    population solves is lost."""
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(12)
    Q = m.random_configuration(rng, size=40)
    T = forward_kinematics(m, Q).pose(tip)
    seeds = m.random_configuration(rng, size=40)
    its = {True: [], False: []}
    for k in range(40):
        for focus in (True, False):
            r = solve_ik(m, PoseConstraint(tip, T[k]), seeds[k], solver="lm", timeout=SAFETY, max_iterations=600,
                         tol_position=TOL_P, tol_orientation=TOL_O, solver_options={"focus": focus})
            assert r.success, (k, focus, r)
            pe, oe = oracle.errors(r.q, T[k])
            assert pe <= TOL_P * 1.01 and oe <= TOL_O * 1.01 and _within(m, r.q)
            its[focus].append(r.iterations)
    assert np.median(its[True]) <= 0.8 * np.median(its[False]), (np.median(its[True]), np.median(its[False]))


def test_one_engine_serves_every_seed_and_locked_values_get_their_own():
    """The lane engine is shared by the problems of one shape: every seed of a mechanism whose coupled joints
    are off the chain (the Panda's mimic finger) gets the same engine (one was built per seed); a joint locked
    on the chain at another value gets another engine, and each solve holds it and reaches its target."""
    m, tip, oracle, _ = arm("panda")
    assert m.couplings
    rng = np.random.default_rng(8)
    Q = m.random_configuration(rng, size=3)
    T = forward_kinematics(m, Q).pose(tip)
    P1, P2 = (ConstraintManager(m, [PoseConstraint(tip, T[0])]).problem(q) for q in Q[1:])
    assert chain_engine(P1) is chain_engine(P2)
    j = frame_chain(m, tip).coords[0]
    name = m.coordinate_names[j]
    engines = []
    for v in (0.3, -0.5):
        q_t, q_0 = Q[1].copy(), Q[2].copy()
        q_t[j] = q_0[j] = v
        Tv = forward_kinematics(m, q_t).pose(tip)
        engines.append(chain_engine(ConstraintManager(m, [PoseConstraint(tip, Tv)], [name]).problem(q_0)))
        r = solve_ik(m, PoseConstraint(tip, Tv), q_0, locked=[name], solver="lm", timeout=SAFETY,
                     tol_position=TOL_P, tol_orientation=TOL_O)
        assert r.success and r.q[j] == v
        pe, oe = oracle.errors(r.q, Tv)
        assert pe <= TOL_P * 1.01 and oe <= TOL_O * 1.01
    assert engines[0] is not engines[1]


def test_targets_in_a_locked_chassis_frame_share_one_engine():
    """The IK service's requests give targets in the chassis frame with the rover's pose locked: every request
    at one rover pose shares one lane engine (one engine was built per request), another rover pose gets
    another, and each answer reaches its target in the chassis frame with the locked joints untouched."""
    m = load_model(default_model_path())
    arm = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
    ia = [m.coordinate_index(n) for n in arm]
    locked = [n for n in m.coordinate_names if n not in arm]
    il = [m.coordinate_index(n) for n in locked]
    rng = np.random.default_rng(12)
    engines = []
    for _rover in range(2):
        q0 = m.random_configuration(rng)
        for _ in range(3):
            qt = q0.copy()
            qt[ia] = m.random_configuration(rng)[ia]
            fk = forward_kinematics(m, qt)
            T = np.linalg.inv(fk.pose("chassis")) @ fk.pose("arm_turret")
            c = PoseConstraint("arm_turret", T, relative_to="chassis")
            engines.append(chain_engine(ConstraintManager(m, [c], locked).problem(q0)))
            r = solve_ik(m, c, q0, locked=locked, timeout=SAFETY, tol_position=TOL_P, tol_orientation=TOL_O)
            assert r.success, r.message
            np.testing.assert_array_equal(r.q[il], q0[il])
            fr = forward_kinematics(m, r.q)
            Tr = np.linalg.inv(fr.pose("chassis")) @ fr.pose("arm_turret")
            assert np.linalg.norm(Tr[:3, 3] - T[:3, 3]) <= TOL_P * 1.01
            cos = np.clip((np.trace(Tr[:3, :3].T @ T[:3, :3]) - 1) / 2, -1, 1)
            assert np.arccos(cos) <= TOL_O * 1.01
    assert engines[0] is not None
    assert engines[0] is engines[1] is engines[2] and engines[3] is engines[4] is engines[5]
    assert engines[0] is not engines[3]


def test_starting_lanes_are_the_seed_table_entries_nearest_the_target():
    """Besides the caller's seed, a target starts from the seed table's configurations whose frame pose is
    nearest its own (|dp|^2 + w (3 - trace(R_t^T R))): checked against Pinocchio's poses of the whole table,
    for full poses and for position targets (where only the distance counts)."""
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(9)
    Q = m.random_configuration(rng, size=4)
    T = forward_kinematics(m, Q).pose(tip)
    for c in (PoseConstraint(tip, T[0]), PositionConstraint(tip, T[0][:3, 3])):
        E = chain_engine(ConstraintManager(m, [c]).problem(Q[0]))
        X = E.seed_table()[0]
        assert X.shape == (SEED_TABLE, E.nv)
        assert np.all(X >= E.lo) and np.all(X <= E.hi)
        q = np.array(Q[0])
        F = []
        for x in X:
            q[E.var_x] = x
            F.append(oracle.pose(q))
        F = np.array(F)
        near = E.nearest_starts(T[:, :3, 3], T[:, :3, :3].transpose(0, 2, 1), 5)
        assert near.shape == (4, 5, E.nv)
        for k in range(4):
            score = np.sum((F[:, :3, 3] - T[k, :3, 3]) ** 2, axis=1)
            if isinstance(c, PoseConstraint):
                score = score + ORIENTATION_WEIGHT * (3.0 - np.einsum("kij,ij->k", F[:, :3, :3], T[k, :3, :3]))
            best = np.argsort(score)[:5]
            np.testing.assert_array_equal(near[k], X[best])
            # one target alone (solve_ik's look-up) takes the same entries
            one = E.nearest_starts(T[k:k + 1, :3, 3], T[k:k + 1, :3, :3].transpose(0, 2, 1), 5)
            np.testing.assert_array_equal(one[0], X[best])


def test_batch_position_targets_and_one_seed_for_all():
    m = ur5()
    rng = np.random.default_rng(5)
    Q = m.random_configuration(rng, size=20)
    P = forward_kinematics(m, Q).position("tool")
    res = solve_ik_batch(m, PositionConstraint("tool", [0, 0, 0]), P, m.home)
    assert res.success.all()
    got = forward_kinematics(m, res.q).position("tool")
    assert np.max(np.linalg.norm(got - P, axis=1)) <= 1e-6
    assert np.all(np.isnan(res.orientation_error))


def test_out_of_reach_is_reported_without_restarts():
    m = ur5()
    T = np.eye(4)
    T[:3, 3] = [3.0, 0.0, 0.5]                                   # the UR5 reaches about 1 m
    r = solve_ik(m, PoseConstraint("tool", T), m.home, timeout=SAFETY)
    assert not r.success and r.reason == "unreachable" and r.restarts == 0
    assert r.iterations <= FAR_ITERATIONS                        # one short attempt, never the whole budget
    res = solve_ik_batch(m, "tool", np.stack([T, forward_kinematics(m, m.home).pose("tool")]))
    assert list(res.reason) == ["unreachable", "converged"] and res.restarts[0] == 0


def test_out_of_reach_single_target_takes_the_lane_loops_steps():
    """A single target beyond the reach bound runs its one attempt in a scalar loop (LaneEngine._run_far_one);
    the same target in a batch with a reachable one runs in the lane loop: the same iterations and the same
    stretched compromise (to rounding: the batch evaluates its lanes together), reported unreachable."""
    m, tip, _, _ = arm("panda")
    rng = np.random.default_rng(11)
    home_tip = forward_kinematics(m, m.home).pose(tip)
    seeds = m.random_configuration(rng, size=6)
    for k in range(6):
        d = rng.normal(size=3)
        T = np.eye(4)
        T[:3, 3] = (1.5 + k) * d / np.linalg.norm(d)             # the Panda reaches about 1.2 m
        single = solve_ik(m, PoseConstraint(tip, T), seeds[k], solver="lm", timeout=SAFETY)
        both = solve_ik_batch(m, tip, np.stack([T, home_tip]), np.stack([seeds[k], m.home]), start_width=6)
        assert single.reason == "unreachable" and list(both.reason) == ["unreachable", "converged"]
        assert single.iterations == both.iterations[0] <= FAR_ITERATIONS and single.restarts == 0
        np.testing.assert_allclose(single.q, both.q[0], atol=1e-9)
        assert _within(m, single.q)


@pytest.mark.parametrize("solver", ["lm", "auto"])
def test_first_solve_on_a_new_model_is_not_billed_for_caches(monkeypatch, solver):
    """A fake clock jumps by 1 s whenever a per-chain cache (the chain, the LM constants, the closed form) is
    built: a 5 ms budget must still hold for the solve itself (caches are built outside the caller's budget)."""
    slow = cache_clock.install(monkeypatch)
    m = ur5()                                                     # never solved on before
    T = forward_kinematics(m, [0.3, -1.0, 1.0, -1.0, -1.0, 0.3]).pose("tool")
    r = solve_ik(m, PoseConstraint("tool", T), m.home, timeout=0.005, solver=solver)
    assert slow                                                   # caches were built in this solve
    assert r.success and r.reason == "converged", r


@pytest.mark.parametrize("targets, match", [
    (np.full((2, 4, 4), np.nan), "not finite"),
    (np.zeros((0, 4, 4)), "empty batch"),
    (np.zeros((3, 4, 3)), "targets must be"),
    (np.stack([np.eye(4), 2 * np.eye(4)]), "rigid"),
])
def test_bad_batches_raise(targets, match):
    m = ur5()
    with pytest.raises(InvalidConfiguration, match=match):
        solve_ik_batch(m, "tool", targets)


def test_bad_seeds_and_options_raise():
    m = ur5()
    T = np.stack([np.eye(4)] * 3)
    T[:, :3, 3] = 0.3
    with pytest.raises(InvalidConfiguration, match="3 targets"):
        solve_ik_batch(m, "tool", T, np.zeros((2, 6)))
    with pytest.raises(InvalidConfiguration):
        solve_ik_batch(m, "tool", T, np.zeros((3, 5)))
    with pytest.raises(InvalidConfiguration, match="tol_position"):
        solve_ik_batch(m, "tool", T, tol_position=0.0)
    with pytest.raises(InvalidConfiguration, match="solve_ik_batch takes"):
        solve_ik_batch(m, object(), T)
    Tn = np.eye(4)
    Tn[0, 3] = np.inf
    with pytest.raises(InvalidConfiguration):
        solve_ik(m, PoseConstraint("tool", Tn), m.home)


def test_batch_of_a_problem_the_engine_does_not_take_solves_each_target():
    """Locked joints that split the chain are fine; a target frame relative to a moving frame goes the
    generic way, one solve per target, with the same answers as single solves."""
    m = panda()
    rng = np.random.default_rng(11)
    Q = m.random_configuration(rng, size=4)
    T = forward_kinematics(m, Q).pose("flange", "link1")
    c = PoseConstraint("flange", np.eye(4), relative_to="link1")
    res = solve_ik_batch(m, c, T, Q[::-1].copy())
    for k in range(4):
        single = solve_ik(m, PoseConstraint("flange", T[k], relative_to="link1"), Q[::-1][k],
                          timeout=3600.0, rng=0, max_iterations=2000)
        assert res.success[k] == single.success
        np.testing.assert_allclose(res.q[k], single.q, atol=1e-12)


def test_damped_least_squares_step_matches_the_plain_normal_equations():
    """The one-lane damped least-squares step (``_dls``: damping added through a strided view of the normal
    matrix) is the plain formula's ``(J^T J + lam I)^-1 J^T e`` (both normal equations: fewer rows than
    columns and more), with J a column slice too (the clamped joints dropped), to 1e-9 relative."""
    from mechanism_model_core.ik.damped_step import _dls
    rng = np.random.default_rng(3)
    for m, n in [(6, 7), (6, 6), (6, 4), (3, 7), (6, 9)]:
        for lam in (1e-9, 1e-3, 0.5):
            J = rng.normal(size=(m, n + 2))[:, 1:n + 1]             # not contiguous
            e = rng.normal(size=m)
            if m <= n:
                want = J.T @ np.linalg.solve(J @ J.T + lam * np.eye(m), e)
            else:
                want = np.linalg.solve(J.T @ J + lam * np.eye(n), J.T @ e)
            got = _dls(J, e, lam)
            assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
            assert not np.allclose(_dls(J, e, lam + 1.0), want, rtol=1e-6)       # the damping is applied
