"""Restarts of the prioritized DLS solver (the generic path: prioritized, multi-constraint, coupled and
closed-chain problems) from the seed table's configurations nearest the top level's targets, and from the
best of several random draws. Checked with Pinocchio (an independent forward kinematics) and closed forms,
never with the solver's own report alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint, PositionConstraint, forward_kinematics
from mechanism_model_core.ik import solve_ik
from mechanism_model_core.ik.batch import ORIENTATION_WEIGHT, chain_engine, top_level_nearest_starts
from mechanism_model_core.ik.problem import IKOptions
from mechanism_model_core.ik.solve import ConstraintManager
from mechanism_model_core.ik.solvers import DLSSolver

from .robots import SAFETY, nonlinear_coupled_arm
from .test_ik_batch import arm

pin = pytest.importorskip("pinocchio")

TOL_P, TOL_O = 1e-6, 1e-5


def _prioritized(m, tip, q):
    fk = forward_kinematics(m, q)
    return [PoseConstraint(tip, fk.pose(tip), priority=0),
            PositionConstraint("panda_link4", fk.pose("panda_link4")[:3, 3], priority=1)]


def test_restart_starts_are_the_table_entries_nearest_the_top_level_target():
    """Panda, flange pose at priority 0 and elbow position at priority 1: the restart starts are the seed table's
    entries whose flange pose (by Pinocchio, over the whole table) is nearest the priority-0 target by
    |dp|^2 + w (3 - trace(R_t^T R)), nearest first; the priority-1 task (a position on a shorter chain) gives
    none, being below the top level."""
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(4)
    qt, q0 = m.random_configuration(rng), m.random_configuration(rng)
    cs = _prioritized(m, tip, qt)
    P = ConstraintManager(m, cs).problem(q0)
    starts = top_level_nearest_starts(P, 6)
    assert len(starts) == 1
    var_x, X = starts[0]
    E = chain_engine(ConstraintManager(m, [cs[0]]).problem(q0))
    table = E.seed_table()[0]
    q = np.array(P.template)
    F = []
    for x in table:
        q[P.free[var_x]] = x
        F.append(oracle.pose(q))
    F = np.array(F)
    T = cs[0].target
    score = np.sum((F[:, :3, 3] - T[:3, 3]) ** 2, axis=1) + ORIENTATION_WEIGHT * (
        3.0 - np.einsum("kij,ij->k", F[:, :3, :3], T[:3, :3]))
    np.testing.assert_array_equal(X, table[np.argsort(score)[:6]])
    # the start the solver makes of restart k: the table entry on the chain, the other unknowns in limits
    s = DLSSolver(nearest_starts=6)
    o = IKOptions(rng=np.random.default_rng(0), deadline=math.inf)   # a solve with time left
    for k in (1, 3, 6):
        x = s.restart_point(None, P, o, k)
        np.testing.assert_array_equal(x[var_x], X[k - 1])
        assert np.all(x >= P.lower) and np.all(x <= P.upper)
    # past the table: random draws again
    assert not np.array_equal(s.restart_point(None, P, o, 7)[var_x], X[5])


def test_best_of_several_restart_draws_is_the_one_nearest_the_target():
    """restart_candidates=K: of K random draws the restart starts from the one whose tip is nearest the
    (single, unit-weight) position target, by Pinocchio's forward kinematics of each draw."""
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(8)
    target = forward_kinematics(m, m.random_configuration(rng)).pose(tip)[:3, 3]
    P = ConstraintManager(m, [PositionConstraint(tip, target), PositionConstraint("panda_link4", target)]
                          ).problem(m.home)
    for k in range(1, 6):
        g = np.random.default_rng(k)
        draws = [P.random_x(g, k) for _ in range(5)]

        def cost(x):
            q = P.expand(x)
            F4 = oracle_pose(oracle, q, "panda_link4")
            return (np.sum((oracle.pose(q)[:3, 3] - target) ** 2) + np.sum((F4[:3, 3] - target) ** 2))

        best = min(draws, key=cost)
        got = DLSSolver(restart_candidates=5, nearest_starts=0).restart_point(None, P, IKOptions(rng=np.random.default_rng(k)), k)
        np.testing.assert_array_equal(got, best)


def oracle_pose(oracle, q, frame):
    qp = pin.neutral(oracle.model)
    for i, k in oracle.cols:
        qp[i] = q[k]
    pin.framesForwardKinematics(oracle.model, oracle.data, qp)
    return oracle.data.oMf[oracle.model.getFrameId(frame)].homogeneous


@pytest.mark.parametrize("variant", [{}, dict(nearest_starts=0, restart_candidates=4),
                                     dict(nearest_starts=0, restart_candidates=1)])
def test_prioritized_answers_hold_by_pinocchio(variant):
    """Flange pose over elbow position on the Panda from random seeds, each variant of the restarts: every
    success reaches both targets by Pinocchio and lies within the limits; with an iteration budget (no wall
    clock) nearly all targets are met."""
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(21)
    ok = 0
    for _ in range(12):
        qt, q0 = m.random_configuration(rng), m.random_configuration(rng)
        cs = _prioritized(m, tip, qt)
        r = solve_ik(m, cs, q0, solver=DLSSolver(**variant), timeout=SAFETY, max_iterations=3000,
                     tol_position=TOL_P, tol_orientation=TOL_O)
        assert np.all(r.q >= m.lower_limits - 1e-12) and np.all(r.q <= m.upper_limits + 1e-12)
        if r.success:
            ok += 1
            F = oracle.pose(r.q)
            T = cs[0].target
            assert np.linalg.norm(F[:3, 3] - T[:3, 3]) <= TOL_P * 1.01
            assert np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)) <= TOL_O * 1.01
            E4 = oracle_pose(oracle, r.q, "panda_link4")
            assert np.linalg.norm(E4[:3, 3] - cs[1].target_xyz) <= TOL_P * 1.01
    assert ok >= 8, ok


def _coupled_tip(j1, j2):
    """Closed form of the coupled arm's tip: yaw j1 about z, then pitches j2, sin(3 j2), 2 j1 about y (links
    1, 1, 0.5, 0.5 m along x; a pitch about y tips x down by the angle)."""
    j3, j4 = math.sin(3 * j2), 2 * j1
    a2, a3, a4 = j2, j2 + j3, j2 + j3 + j4
    r = 1.0 + 1.0 * math.cos(a2) + 0.5 * math.cos(a3) + 0.5 * math.cos(a4)
    z = -(1.0 * math.sin(a2) + 0.5 * math.sin(a3) + 0.5 * math.sin(a4))
    return np.array([r * math.cos(j1), r * math.sin(j1), z])


def test_coupled_arm_best_of_draws_reaches_by_closed_form():
    """The coupled arm (j3 = sin(3 j2), j4 = 2 j1, limits on both; no seed table: the coupling is on the chain)
    with the default restarts (best of RESTART_CANDIDATES draws): every success
    reaches the tip target by the closed form above, the couplings hold and every joint is within limits."""
    m = nonlinear_coupled_arm()
    assert top_level_nearest_starts(ConstraintManager(m, [PositionConstraint("tip", [1, 0, 0])]).problem(m.home),
                                    8) == []
    rng = np.random.default_rng(3)
    ok = 0
    for _ in range(20):
        qt = m.random_configuration(rng)
        target = _coupled_tip(qt[0], qt[1])
        np.testing.assert_allclose(forward_kinematics(m, qt).pose("tip")[:3, 3], target, atol=1e-12)
        r = solve_ik(m, PositionConstraint("tip", target), m.random_configuration(rng),
                     solver=DLSSolver(fast=False), timeout=SAFETY, max_iterations=2000)
        q = r.q
        assert q[2] == pytest.approx(math.sin(3 * q[1]), abs=1e-12) and q[3] == pytest.approx(2 * q[0])
        assert np.all(q >= m.lower_limits) and np.all(q <= m.upper_limits)
        if r.success:
            ok += 1
            assert np.linalg.norm(_coupled_tip(q[0], q[1]) - target) <= 1e-6 * 1.01
    assert ok >= 18
