"""``ik_solutions`` for an arm on a mobile base (optional extra eaik): the floating or planar joint where the
chain starts is held at the reference's values, as a lift is, and the arm's branches are listed for the target
moved into the frame where the base ends. Judged by Pinocchio on the arm's own URDF composed with the base's
pose written out by hand, and against the same arm on a fixed base. The arms are ``test_ik_near_decomposable``'s
generated ones: the xArm7-like (the exact closed form, its axes snapped), the xArm6-like (near a decomposable
chain, its last axis offset) and the lift arm (a 7R arm on a lift)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics
from mechanism_model_core.errors import ModelStructureError
from mechanism_model_core.ik import eaik_solver_for, ik_solutions, near_decomposable_solver_for
from mechanism_model_core.io.urdf import load_urdf

from .mobile_arm import MobileArm
from .optional_deps import require
from .test_ik_near_decomposable import GEOMETRY, _urdf

require("eaik", "eaik")
pin = pytest.importorskip("pinocchio")

NAMES = ("xarm7_like", "xarm6_like", "lift_arm")
TOL = 1e-9


@pytest.fixture(scope="module")
def mobiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("solutions_on_a_base")
    return {(n, k): MobileArm(d, n, k) for n in NAMES for k in ("floating", "planar")}


def _held_arm_joints(a):
    """Our mobile model's indices of the arm joints ``ik_solutions`` holds (a lift, a 7R chain's swept joint)."""
    s = eaik_solver_for(a.arm, "tool")
    if s is not None:
        return [] if s.swept is None else [a.cols[a.acols.index(int(s.coords[s.swept]))]]
    n = near_decomposable_solver_for(a.arm, "tool")
    held = [int(n.coords[0])] if n.lift else []
    if n.swept is not None:
        held.append(int(n.coords[(1 if n.lift else 0) + n.swept]))
    return [a.cols[a.acols.index(i)] for i in held]


def test_the_independent_base_pose_matches_the_model(mobiles):
    rng = np.random.default_rng(1)
    for a in mobiles.values():
        q = a.sample(rng)
        np.testing.assert_allclose(a.world_tool(q), forward_kinematics(a.m, q).pose("tool"), atol=1e-12)


@pytest.mark.parametrize("kind", ["floating", "planar"])
@pytest.mark.parametrize("name", NAMES)
def test_ik_solutions_holds_the_base_at_the_reference_and_lists_the_arms_branches(mobiles, name, kind):
    a = mobiles[(name, kind)]
    held = _held_arm_joints(a)
    rng = np.random.default_rng(3)
    own = 0
    for _ in range(5):
        q, q_ref = a.sample(rng), a.sample(rng)
        q_ref[a.base_cols] = q[a.base_cols]   # the base where the target was made, the held joints too
        q_ref[held] = q[held]
        T = a.world_tool(q)
        B = ik_solutions(a.m, "tool", T, q_ref)
        assert len(B) >= 1
        for b in B:
            F = a.world_tool(b)
            assert np.linalg.norm(F[:3, 3] - T[:3, 3]) <= TOL
            assert np.linalg.norm(pin.log3(F[:3, :3] @ T[:3, :3].T)) <= TOL
            assert np.all(b[a.cols] >= a.lo - 1e-12) and np.all(b[a.cols] <= a.hi + 1e-12)
            others = np.setdiff1d(np.arange(a.m.nq), a.cols)
            assert np.array_equal(b[others], q_ref[others])           # the base held at the reference
        own += any(np.max(np.abs(b[a.cols] - q[a.cols])) < 1e-6 for b in B)
        # the same arm on a fixed base, the target in the mount's frame: the same branches
        Ta = np.linalg.solve(a.base_pose(q_ref), T)
        ra = np.array(a.arm.home, dtype=float)
        ra[a.acols] = q_ref[a.cols]
        A = ik_solutions(a.arm, "tool", Ta, ra)
        assert len(A) == len(B)
        np.testing.assert_allclose(B[:, a.cols], A[:, a.acols], atol=1e-6)
    assert own == 5


def test_a_floating_joint_after_the_arms_first_joint_raises_a_clear_error(tmp_path):
    text = _urdf("xarm6_like", *GEOMETRY["xarm6_like"]).replace(
        '<joint name="j1" type="revolute">', '<joint name="j1" type="floating">', 1)
    (tmp_path / "bad.urdf").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_urdf(str(tmp_path / "bad.urdf"))
    with pytest.raises(ModelStructureError, match="floating or planar joint follows its joint 'j0'"):
        ik_solutions(m, "tool", np.eye(4))
