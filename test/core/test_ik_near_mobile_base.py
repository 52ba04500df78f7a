"""The near-decomposable closed form (arms on a lift, arms near a decomposable chain; optional extra eaik) for
an arm on a moving base: the locked joints before the arm's first free one (a floating base's pose) only move
the target's frame, so one solver serves every pose of the base, as for the exact closed form
(test_ik_mobile_base.py). Answers are judged by Pinocchio on the arm's own URDF composed with the base's pose
written out by hand, and equal those of the same arm on a fixed base for the target moved into its base
frame; a locked joint after a free one is declined (the population LM answers)."""

from __future__ import annotations

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint, forward_kinematics
from mechanism_model_core.data import memo
from mechanism_model_core.ik import near_decomposable_solver_for, solve_ik
from mechanism_model_core.ik.batch import chain_engine
from mechanism_model_core.ik.problem import IKProblem

from .mobile_arm import MobileArm
from .optional_deps import require
from .robots import SAFETY

require("eaik", "eaik")
pin = pytest.importorskip("pinocchio")

NAMES = ("lift_arm", "baxter_like")
TOL = 1e-9


@pytest.fixture(scope="module")
def mobiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("near_mobile")
    return {name: MobileArm(d, name) for name in NAMES}


def _errors(F, T):
    return float(np.linalg.norm(F[:3, 3] - T[:3, 3])), float(np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)))


def test_the_independent_base_pose_matches_the_model(mobiles):
    a = mobiles["baxter_like"]
    rng = np.random.default_rng(1)
    q = a.with_arm(a.base_configuration(rng), rng)
    np.testing.assert_allclose(a.world_tool(q), forward_kinematics(a.m, q).pose("tool"), atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_one_near_closed_form_serves_every_pose_of_the_base(mobiles, name):
    """Eight base poses: every answer from the near-decomposable closed form (not the population LM), one
    solver built, the target reached by Pinocchio within 1e-9, within the limits, the locked joints kept."""
    a = mobiles[name]
    m = a.m
    rng = np.random.default_rng(5)
    keep = [m.coordinate_index(n) for n in a.locked]
    solvers = set()
    for _ in range(8):
        q_base = a.base_configuration(rng)
        target = a.world_tool(a.with_arm(q_base, rng))
        start = a.with_arm(q_base, rng)
        c = PoseConstraint("tool", target)
        r = solve_ik(m, c, start, locked=a.locked, timeout=SAFETY, tol_position=TOL, tol_orientation=TOL)
        assert r.solver == "near-eaik", r.solver
        assert r.success
        pe, oe = _errors(a.world_tool(r.q), target)
        assert pe < TOL and oe < TOL, (pe, oe)
        assert m.within_limits(r.q, 1e-12)
        np.testing.assert_array_equal(r.q[keep], start[keep])
        P = IKProblem(m, [c], start, locked=a.locked)
        # the reported residual is the ground frame's (the core's own evaluation at the answer)
        np.testing.assert_allclose(r.residuals[0].vector, P.plain_residual(r.q), atol=1e-12)
        s = near_decomposable_solver_for(m, "tool", IKProblem(m, [c], start, locked=a.locked))
        assert s.base_steps == 6
        solvers.add(id(s))
    assert len(solvers) == 1
    assert len(memo(m, "ik.near_decomposable", 64)) == 1            # built once, not once per base pose


@pytest.mark.parametrize("name", NAMES)
def test_answers_equal_the_same_arm_on_a_fixed_base(mobiles, name):
    """Solving in the base frame changes nothing: the same answer as the arm alone (its own URDF) for the target
    moved into the arm's base frame, from the same seed, within 1e-9."""
    a = mobiles[name]
    m, arm = a.m, a.arm
    rng = np.random.default_rng(8)
    for _ in range(8):
        q_base = a.base_configuration(rng)
        target = a.world_tool(a.with_arm(q_base, rng))
        start = a.with_arm(q_base, rng)
        r = solve_ik(m, PoseConstraint("tool", target), start, locked=a.locked, timeout=SAFETY)
        B = forward_kinematics(m, start).pose("base")
        a0 = np.array(arm.home, dtype=float)
        a0[a.acols] = start[a.cols]
        ra = solve_ik(arm, PoseConstraint("tool", np.linalg.inv(B) @ target), a0, timeout=SAFETY)
        assert r.solver == ra.solver == "near-eaik"
        np.testing.assert_allclose(r.q[a.cols], ra.q[a.acols], atol=1e-9)


def test_targets_in_the_chassis_frame_are_solved_in_it(mobiles):
    """A target given in the chassis frame (held by the locked base pose, as the IK service's requests give it):
    reached in that frame by the one solver."""
    a = mobiles["baxter_like"]
    m = a.m
    rng = np.random.default_rng(11)
    for _ in range(4):
        q_base = a.base_configuration(rng)
        qt = a.with_arm(q_base, rng)
        C = forward_kinematics(m, qt).pose("chassis")
        T = np.linalg.inv(C) @ a.world_tool(qt)
        start = a.with_arm(q_base, rng)
        r = solve_ik(m, PoseConstraint("tool", T, relative_to="chassis"), start, locked=a.locked,
                     timeout=SAFETY, tol_position=TOL, tol_orientation=TOL)
        assert r.solver == "near-eaik" and r.success
        pe, oe = _errors(a.world_tool(r.q), C @ T)
        assert pe < TOL and oe < TOL, (pe, oe)


def test_a_locked_joint_after_a_free_one_is_declined(mobiles):
    """The Baxter-like arm's third joint locked too: the held steps are no prefix, the near-decomposable closed
    form is not used (its solver was built for the arm's whole chain), and the answer keeps the joint."""
    a = mobiles["baxter_like"]
    m = a.m
    locked = a.locked + ["j2"]
    rng = np.random.default_rng(13)
    q_base = a.base_configuration(rng)
    target = a.world_tool(a.with_arm(q_base, rng))
    start = a.with_arm(q_base, rng)
    start[m.coordinate_index("j2")] = 0.4
    c = PoseConstraint("tool", target)
    assert near_decomposable_solver_for(m, "tool", IKProblem(m, [c], start, locked=locked)) is None
    r = solve_ik(m, c, start, locked=locked, timeout=0.05)
    assert not r.solver.startswith("near-eaik"), r.solver
    assert r.q[m.coordinate_index("j2")] == 0.4


@pytest.mark.parametrize("name", NAMES)
def test_the_reach_bounds_from_the_base_hold_and_a_target_beyond_is_reported_at_once(mobiles, name):
    """The lane engine's and the near solver's reach bounds with the base held (from the frame where the base
    ends, not the ground's, which counts the floating joint's free travel: no bound) contain the tool at 200
    random arm values over random base poses; a target 5 m beyond is reported unreachable from the seed alone
    (no restart, the locked joints kept) rather than after the whole budget."""
    a = mobiles[name]
    m = a.m
    rng = np.random.default_rng(21)
    keep = [m.coordinate_index(n) for n in a.locked]
    for _ in range(20):
        q_base = a.base_configuration(rng)
        P = IKProblem(m, [PoseConstraint("tool", np.eye(4))], q_base, locked=a.locked)
        E = chain_engine(P)
        assert E.bound_applies
        s = near_decomposable_solver_for(m, "tool", P)
        B = s.base.pose(q_base)                 # the solver's base frame (where the floating joint's steps end)
        for _ in range(10):
            T = a.world_tool(a.with_arm(q_base, rng))
            assert np.linalg.norm(T[:3, 3] - E.origin) <= E.reach
            Tb = np.linalg.inv(B) @ T
            assert np.linalg.norm(Tb[:3, 3] - s._base_origin) <= s._base_reach
    q_base = a.base_configuration(rng)
    T = a.world_tool(a.with_arm(q_base, rng))
    T[:3, 3] += (np.linalg.norm(T[:3, 3] - chain_engine(IKProblem(m, [PoseConstraint("tool", T)], q_base,
                                                                  locked=a.locked)).origin) + 5.0) * np.array([0.6, 0.8, 0.0])
    start = a.with_arm(q_base, rng)
    r = solve_ik(m, PoseConstraint("tool", T), start, locked=a.locked, timeout=SAFETY)
    assert not r.success and r.reason == "unreachable" and r.restarts == 0, (r.reason, r.restarts)
    np.testing.assert_array_equal(r.q[keep], start[keep])
