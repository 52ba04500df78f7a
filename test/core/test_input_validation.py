"""Issue 10.6 and 10.7: bad numeric input to IK, forward kinematics, Jacobians and rates gets a clear error
of the package's family at once (never a late "SVD did not converge", a silent NaN, a dropped imaginary
part or a bare TypeError)."""

import math

import numpy as np
import pytest

from mechanism_model_core import (InvalidConfiguration, Joint, MechanismBuilder, MechanismModelError,
                                  PoseConstraint, PositionConstraint, forward_kinematics, frame_velocity,
                                  jacobian, solve_ik)
from mechanism_model_core.spatial import translation

from .robots import planar_3r


@pytest.fixture(scope="module")
def arm():
    return planar_3r()


def target(arm):
    return forward_kinematics(arm, [0.3, 0.2, 0.1]).pose("tip")


@pytest.mark.parametrize("weight", [math.nan, -1.0, math.inf, "1", True])
def test_bad_weights_are_refused_before_solving(arm, weight):
    with pytest.raises(InvalidConfiguration, match="weight"):
        solve_ik(arm, [PositionConstraint("tip", target(arm)[:3, 3], weight=weight)], timeout=5.0)


@pytest.mark.parametrize("priority", [math.nan, 0.5, math.inf, "0"])
def test_bad_priorities_are_refused(arm, priority):
    with pytest.raises(InvalidConfiguration, match="priority"):
        solve_ik(arm, [PositionConstraint("tip", target(arm)[:3, 3], priority=priority)])


@pytest.mark.parametrize("kw", [{"tol_position": math.inf}, {"tol_position": 1e300}, {"tol_position": 1e3},
                                {"tol_position": 0.0}, {"tol_position": -1e-6}, {"tol_orientation": math.nan},
                                {"tol_orientation": 4.0}, {"timeout": -1.0}, {"timeout": math.nan},
                                {"timeout": math.inf}, {"max_iterations": -5}, {"max_iterations": 0},
                                {"max_iterations": 2.5}, {"max_iterations": True}, {"rng": "abc"},
                                {"rng": -1}, {"rng": 1.5}])
def test_bad_options_are_refused(arm, kw):
    with pytest.raises(InvalidConfiguration):
        solve_ik(arm, [PoseConstraint("tip", target(arm))], **kw)


def test_far_target_is_not_a_success_with_the_largest_tolerance(arm):
    far = translation(100.0, 0.0, 0.0)
    r = solve_ik(arm, [PositionConstraint("tip", far[:3, 3])], tol_position=1.0, timeout=0.5)
    assert not r.success


def test_targets_of_strings_are_project_errors(arm):
    with pytest.raises(MechanismModelError):
        PositionConstraint("tip", ["a", "b", "c"])
    with pytest.raises(MechanismModelError):
        PoseConstraint("tip", [["1", 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    with pytest.raises(MechanismModelError):
        solve_ik(arm, "tip")


@pytest.mark.parametrize("q", [["0.5", 0.0, 0.0], "0.5 0 0", [True, False, True], [0.5 + 1j, 0.0, 0.0],
                               np.array([0.1, 0.2, 0.3], dtype=complex), np.array([1, 0, 1], dtype=bool),
                               {"j1": "0.5"}, {"j1": True}, {"j1": 1j}, [0.1, None, 0.2]])
def test_joint_values_must_be_real_numbers(arm, q):
    with pytest.raises(InvalidConfiguration):
        forward_kinematics(arm, q)
    with pytest.raises(InvalidConfiguration):
        jacobian(arm, q, "tip")


def test_integer_and_float32_values_are_fine(arm):
    a = forward_kinematics(arm, [0, 1, 0]).pose("tip")
    b = forward_kinematics(arm, np.array([0.0, 1.0, 0.0], dtype=np.float32)).pose("tip")
    np.testing.assert_allclose(a, b, atol=1e-7)


def test_batched_frame_velocity_refuses_nan_rates_like_the_single_path(arm):
    q = np.zeros((4, 3))
    qd = np.ones((4, 3))
    qd[2, 1] = math.nan
    with pytest.raises(InvalidConfiguration):
        frame_velocity(arm, q[0], qd[2], "tip")
    with pytest.raises(InvalidConfiguration):
        frame_velocity(arm, q, qd, "tip")
    with pytest.raises(InvalidConfiguration):
        frame_velocity(arm, q, np.ones((3, 3)), "tip")       # one rate row short
    with pytest.raises(InvalidConfiguration):
        frame_velocity(arm, q, np.full((4, 3), "1"), "tip")
    v = frame_velocity(arm, q, np.ones((4, 3)), "tip")
    assert v.shape == (4, 6) and np.all(np.isfinite(v))


def test_frame_none_and_unknown_frames_are_project_errors(arm):
    for bad in (None, 3, "nope"):
        with pytest.raises(MechanismModelError):
            jacobian(arm, [0.0, 0.0, 0.0], bad)
        with pytest.raises(MechanismModelError):
            forward_kinematics(arm, [0.0, 0.0, 0.0]).pose(bad)


def test_independent_only_batches_follow_the_last_axis():
    """The (29, 28) ambiguity, documented in Mechanism.configuration: the last axis decides."""
    b = MechanismBuilder("coupled")
    b.add_body("a", None, Joint.revolute("a"))
    b.add_body("b", "a", Joint.revolute("b", translation(1, 0, 0), coupling="2 * a"))
    b.add_body("c", "b", Joint.revolute("c", translation(1, 0, 0)))
    m = b.build()
    assert m.nq == 3 and len(m.independent_coordinates) == 2
    Q = m.configuration(np.zeros((3, 2)) + [0.1, 0.2])   # 3 configurations of the 2 independent coordinates
    assert Q.shape == (3, 3)
    np.testing.assert_allclose(Q[:, 1], 0.2)
