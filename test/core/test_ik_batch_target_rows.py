"""Batch IK of poses whose mask is in each target's own axes (``mask_frame="target"``, the roll about the tool's
z free: a reachability map's approach directions): one lane engine for targets of any orientation, each lane's
rows turned into its own target's axes. Checked with Pinocchio FK, against the engine with the rows turned
once for a single target (the static turn single solves use), and against one-target batches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint
from mechanism_model_core.ik import solve_ik_batch
from mechanism_model_core.ik.batch import LaneEngine, chain_engine, target_rows_engine
from mechanism_model_core.ik.solve import ConstraintManager
from mechanism_model_core.ik.solvers import _ChainKernel

from .test_ik_batch import TOL_O, TOL_P, _within, arm

pin = pytest.importorskip("pinocchio")

FREE_ROLL = (1, 1, 1, 1, 1, 0)


def _spun(T, angles):
    """Each pose turned about its own z by ``angles``: the same position and z axis."""
    c, s = np.cos(angles), np.sin(angles)
    Rz = np.zeros((len(angles), 4, 4))
    Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1] = c, -s, s, c
    Rz[:, 2, 2] = Rz[:, 3, 3] = 1.0
    return T @ Rz


def test_poses_free_about_their_own_z_are_solved_by_one_engine_and_reach_their_targets():
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(11)
    Q = m.random_configuration(rng, size=16)
    T = np.stack([oracle.pose(q) for q in Q])                     # targets from Pinocchio, not from us
    Ts = _spun(T, rng.uniform(-math.pi, math.pi, 16))             # each reachable only with its roll free
    seeds = m.random_configuration(rng, size=16)
    c = PoseConstraint(tip, np.eye(4), mask=FREE_ROLL, mask_frame="target")
    P = ConstraintManager(m, [PoseConstraint(tip, Ts[0], mask=FREE_ROLL, mask_frame="target")]).problem(seeds[0])
    assert chain_engine(P) is None                 # single solves keep their choice (rows turn with the target)
    assert target_rows_engine(P).target_rows
    res = solve_ik_batch(m, c, Ts, seeds, tol_position=TOL_P, tol_orientation=TOL_O)
    assert res.solver == "lm"                      # the lane engine, not one solve_ik per target
    assert res.success.all(), (res.reason[~res.success], res.position_error[~res.success])
    for k in range(16):
        F = oracle.pose(res.q[k])
        assert np.linalg.norm(F[:3, 3] - T[k, :3, 3]) <= TOL_P * 1.01, k
        assert math.acos(min(1.0, F[:3, 2] @ T[k, :3, 2])) <= TOL_O * 1.01, k     # the tool's z axis
        assert _within(m, res.q[k])
        # a target's answer is the one it gets alone
        if k < 4:
            one = solve_ik_batch(m, c, Ts[k:k + 1], seeds[k:k + 1], tol_position=TOL_P, tol_orientation=TOL_O)
            np.testing.assert_allclose(one.q[0], res.q[k], atol=1e-9)
            assert one.iterations[0] == res.iterations[k]


def test_lane_rows_turned_per_target_equal_rows_turned_once_for_that_target():
    """The turn per lane (R_t^T of each lane's target) against an engine whose rows are turned once by the
    target's R_t^T (how the single-solve kernel turns them): the same residuals and Jacobians, and the same
    answer."""
    m, tip, oracle, _ = arm("panda")
    rng = np.random.default_rng(5)
    Q = m.random_configuration(rng, size=3)
    Ts = _spun(np.stack([oracle.pose(q) for q in Q]), np.array([0.4, -2.0, 3.0]))
    Qs = m.random_configuration(rng, size=5)
    for k in range(3):
        P = ConstraintManager(m, [PoseConstraint(tip, Ts[k], mask=FREE_ROLL, mask_frame="target")]).problem(Qs[0])
        K = _ChainKernel.build(P)
        fixed = LaneEngine(K)                       # K.Rrow: this target's R_t^T, turned once
        X = np.stack([P.x_of(q)[fixed.var_x] for q in Qs])          # the chain's unknowns
        np.testing.assert_allclose(K.Rrow, Ts[k, :3, :3].T, atol=1e-15)
        lanes = target_rows_engine(P)
        pts = np.repeat(K.pt[None], 5, axis=0)
        RtT = np.repeat(K.RtT[None], 5, axis=0)
        for a, b in zip(fixed.evaluate(X, pts, RtT), lanes.evaluate(X, pts, RtT)):
            np.testing.assert_allclose(a, b, atol=1e-12)
        for a, b in zip(fixed.evaluate(X[:1], pts[:1], RtT[:1]), lanes.evaluate(X[:1], pts[:1], RtT[:1])):
            np.testing.assert_allclose(a, b, atol=1e-12)                   # the one-lane pass too
        ra = fixed.run(X[1:2], pts[:1], RtT[:1], TOL_P, TOL_O, max_iterations=500, seed=3)
        rb = lanes.run(X[1:2], pts[:1], RtT[:1], TOL_P, TOL_O, max_iterations=500, seed=3)
        np.testing.assert_allclose(ra[0], rb[0], atol=1e-9)
        assert ra[1][0] == rb[1][0] and ra[3][0] == rb[3][0]
