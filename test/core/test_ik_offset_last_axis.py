"""The near-decomposable closed form's iteration for a 6R chain whose last axis alone misses the wrist point
(``ik/closed_form/offset_last_axis.py``, optional extra eaik): the identity it rests on (the exact pose is the
moved chain's followed by a shift that depends on the last joint alone), its iterates' reported errors and
their answers judged by Pinocchio on the same URDF, within limits, and the solver using it (one exact-chain
evaluation confirms most answers). The arms are the generated ones of ``test_ik_near_decomposable``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanism_model_core import PoseConstraint
from mechanism_model_core.ik import solve_ik
from mechanism_model_core.ik.closed_form.near_decomposable import near_decomposable_solver_for
from mechanism_model_core.ik.closed_form.offset_last_axis import MAX_CALLS

from .optional_deps import require
from .test_ik_near_decomposable import arms  # noqa: F401  (the fixture)

require("eaik", "eaik")
pin = pytest.importorskip("pinocchio")


def _solver(arms, name="xarm6_like"):
    a = arms[name]
    return a, near_decomposable_solver_for(a.m, "tool")


def _full(a, s, x):
    q = np.array(a.m.home, dtype=float)
    q[s.coords] = x
    return q


def _errors(a, q, T):
    F = a.pose(q)
    return float(np.linalg.norm(F[:3, 3] - T[:3, 3])), float(np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)))


def test_only_a_6r_chain_whose_last_axis_misses_the_wrist_point_gets_the_iteration(arms):
    a, s = _solver(arms)
    assert s.kind == "near" and s._offset is not None
    # the xArm6-like wrist: the last axis (z through x = 0.207) 0.076 m from where the two before meet
    assert s._offset.offset == pytest.approx(0.076, abs=1e-12)
    # Baxter-like: the odd axis is the wrist's first (and the chain 7R); the lift arm is exact
    assert near_decomposable_solver_for(arms["baxter_like"].m, "tool")._offset is None
    assert near_decomposable_solver_for(arms["lift_arm"].m, "tool")._offset is None


def test_the_exact_pose_is_the_moved_chains_then_a_shift_by_the_last_joint_alone(arms):
    """Pinocchio's pose of the exact chain equals eaik's pose of the moved chain followed by the translation
    ``shift(q_last)`` in the frame's axes, at random configurations."""
    a, s = _solver(arms)
    off = s._offset
    rng = np.random.default_rng(4)
    for q in a.sample(rng, 50):
        x = q[s.coords]
        Tm = off.robot.fwdkin(x)
        D = np.eye(4)
        D[:3, 3] = off.shift(float(x[5]))
        assert np.allclose(Tm @ D, a.pose(q), atol=1e-12, rtol=0)
        # and the moved chain alone is off by that shift's length, 2 |u| |sin(q_last / 2)|
        assert np.linalg.norm(Tm[:3, 3] - a.pose(q)[:3, 3]) == pytest.approx(
            2 * off.offset * abs(math.sin(x[5] / 2)), abs=1e-12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(u=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12))
def test_each_iterate_reports_its_true_error_and_is_in_limits(arms, u):
    """Whatever it returns: within limits, the orientation exact, the reported position error the true one
    (Pinocchio), and the calls within MAX_CALLS; below the tolerance asked for unless it ran out of calls."""
    a, s = _solver(arms)
    u = np.array(u)
    q, q0 = a.lo + u[:6] * (a.hi - a.lo), a.lo + u[6:] * (a.hi - a.lo)
    T = a.pose(_full(a, s, q))
    hit = s._offset.solve(T, q0, 1e-8)
    if hit is None:
        return
    x, err, calls = hit
    assert np.all(x >= a.lo - 1e-12) and np.all(x <= a.hi + 1e-12)
    pe, oe = _errors(a, _full(a, s, x), T)
    assert oe < 1e-9
    assert pe == pytest.approx(err, abs=1e-9)
    assert 1 <= calls <= MAX_CALLS
    assert err <= 1e-8 or calls == MAX_CALLS or pe > 1e-8


def test_most_targets_are_reached_by_the_iteration_in_a_few_calls(arms):
    """Over random targets from mid-range and random seeds, the iteration reaches most within 1e-7 m (by
    Pinocchio) in a handful of closed-form calls."""
    a, s = _solver(arms)
    rng = np.random.default_rng(9)
    mid = 0.5 * (a.lo + a.hi)
    reached, calls = 0, []
    for k, q in enumerate(a.sample(rng, 200)):
        T = a.pose(q)
        q0 = mid if k % 2 else a.lo + rng.random(6) * (a.hi - a.lo)
        hit = s._offset.solve(T, q0, 1e-7)
        if hit is not None and hit[1] <= 1e-7:
            pe, oe = _errors(a, _full(a, s, hit[0]), T)
            assert pe <= 1e-7 and oe <= 1e-9
            reached += 1
            calls.append(hit[2])
    assert reached >= 140, reached
    assert np.median(calls) <= 6, np.median(calls)


def test_solve_ik_confirms_most_answers_with_one_evaluation(arms):
    """Through ``solve_ik`` (tolerance 1e-6): every answer reaches the target within limits by Pinocchio, and
    most come from the iteration, confirmed by one evaluation of the exact chain."""
    a, s = _solver(arms)
    rng = np.random.default_rng(12)
    mid = _full(a, s, 0.5 * (a.lo + a.hi))
    its = []
    for q in a.sample(rng, 60):
        T = a.pose(q)
        r = solve_ik(a.m, PoseConstraint("tool", T), mid, timeout=1.0, tol_position=1e-6, tol_orientation=1e-6)
        assert r.success and a.judge(r.q, T), r.reason
        its.append(r.iterations)
    assert sum(i == 1 for i in its) >= 40, its
