"""IK review checks: continuous joints, strict priorities on a redundant arm, solver time budgets, locks of
coupled joints, the rover mast pointing at the ground around it, the four-bar's two assembly branches,
specialized solvers on edited mechanisms of the same name, hostile constraint files.

Every check is against forward kinematics, a closed form or a brute-force search, never against the
solver's own report alone.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics
from mechanism_model_core.constraints import JointTarget, PoseConstraint, Posture, log_so3
from mechanism_model_core.ik import solve_ik

from .test_ik_arms import UR5_DH, _paul_distal

TWO_PI = 2 * math.pi


def ur5_continuous():
    """The UR5 of test_ik_arms with every joint continuous (no limits), as many URDFs declare the wrist."""
    b = MechanismBuilder("ur5_continuous")
    parent, placement = None, np.eye(4)
    for i, (d, a, alpha) in enumerate(UR5_DH):
        b.add_body(f"link{i + 1}", parent, Joint.continuous(f"joint{i + 1}", placement))
        parent, placement = f"link{i + 1}", _paul_distal(d, a, alpha)
    b.add_frame(parent, "tool", placement)
    return b.build()


def pose_errors(m, q, frame, T):
    F = forward_kinematics(m, q).pose(frame)
    return (float(np.linalg.norm(F[:3, 3] - T[:3, 3])),
            float(np.linalg.norm(log_so3(F[:3, :3] @ T[:3, :3].T))))


# ---------------------------------------------------------------------------------------------- continuous
@pytest.mark.parametrize("solver", ["dls", "scipy"])
def test_continuous_joints_come_back_nearest_the_seed(solver):
    """Continuous joints: the solution reaches the target (forward kinematics) and every angle is the
    representative nearest the seed (within pi of it), also for seeds several turns away, never a value
    drifted by whole turns."""
    m = ur5_continuous()
    rng = np.random.default_rng(7)
    solved = 0
    for k in range(25):
        T = forward_kinematics(m, rng.uniform(-math.pi, math.pi, 6)).pose("tool")
        q0 = rng.uniform(-4 * math.pi, 4 * math.pi, 6)
        r = solve_ik(m, PoseConstraint("tool", T), q0, solver=solver, timeout=0.3)
        assert np.all(np.abs(r.q - q0) <= math.pi + 1e-9), (q0, r.q)
        if r.success:
            solved += 1
            pe, oe = pose_errors(m, r.q, "tool", T)
            assert pe < 1e-6 and oe < 1e-5
    assert solved >= 23


def test_continuous_joint_target_value_is_kept_and_posture_is_the_reference():
    """A joint target on a continuous joint means that very value (7 rad stays 7 rad, not 7 - 2 pi); with a
    posture, the other angles come back nearest the posture's rest values rather than the seed."""
    m = ur5_continuous()
    r = solve_ik(m, [JointTarget("joint6", 7.0)], np.zeros(6))
    assert r.success and r.q[5] == pytest.approx(7.0, abs=1e-9)
    T = forward_kinematics(m, [0.4, -1.0, 1.2, -0.8, 0.6, 0.2]).pose("tool")
    rest = np.array([4 * math.pi, -4 * math.pi, 0.0, 2 * math.pi, 0.0, -2 * math.pi])
    r = solve_ik(m, [PoseConstraint("tool", T), Posture(rest, weight=1e-6)], np.zeros(6), timeout=0.3)
    assert r.success
    pe, oe = pose_errors(m, r.q, "tool", T)
    assert pe < 1e-6 and oe < 1e-5
    assert np.all(np.abs(r.q - rest) <= math.pi + 1e-9), r.q
