"""Jacobians and twists against finite differences of forward kinematics, in every convention.

The oracle is the numerical derivative of poses from forward kinematics (central differences), turned into a
twist by the definitions of the conventions (Pinocchio's meanings), independently of the Jacobian code.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import (InvalidConfiguration, MechanismModelError, forward_kinematics,
                                  frame_velocity, jacobian)

from .robots import mixed_tree, planar_arm

MECH = mixed_tree()
FRAMES = ["tool", "wrist", "rim", "camera", "arm1", "base", "sensor_mount", "ground"]
REFERENCES = [None, "base", "camera", "arm2", "rim"]
CONVENTIONS = ["WORLD", "LOCAL_WORLD_ALIGNED", "LOCAL"]


def random_q(seed):
    return MECH.random_configuration(np.random.default_rng(seed))


def numeric_twist(mech, q, qd, frame, ref, convention, h=1e-6):
    """Twist of ``frame`` relative to ``ref`` from central differences of T_ref_frame(q + t qd)."""
    Tp = forward_kinematics(mech, q + h * qd).pose(frame, ref)
    Tm = forward_kinematics(mech, q - h * qd).pose(frame, ref)
    T = forward_kinematics(mech, q).pose(frame, ref)
    dT = (Tp - Tm) / (2 * h)
    R, p = T[:3, :3], T[:3, 3]
    W = dT[:3, :3] @ R.T            # skew(w) in ref axes
    w = np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2
    v = dT[:3, 3]                   # velocity of the frame origin in ref axes
    if convention == "LOCAL_WORLD_ALIGNED":
        return np.concatenate([v, w])
    if convention == "WORLD":
        return np.concatenate([v - np.cross(w, p), w])
    return np.concatenate([R.T @ v, R.T @ w])


@given(seed=st.integers(0, 2**32 - 1), frame=st.sampled_from(FRAMES), ref=st.sampled_from(REFERENCES),
       convention=st.sampled_from(CONVENTIONS))
def test_jacobian_matches_finite_differences(seed, frame, ref, convention):
    q = random_q(seed)
    qd = np.random.default_rng(seed + 1).normal(size=MECH.nq)
    J = jacobian(MECH, q, frame, ref, convention)
    assert J.shape == (6, MECH.nq)
    np.testing.assert_allclose(J @ qd, numeric_twist(MECH, q, qd, frame, ref, convention), atol=2e-7)


@given(seed=st.integers(0, 2**32 - 1), frame=st.sampled_from(FRAMES), ref=st.sampled_from(REFERENCES),
       convention=st.sampled_from(CONVENTIONS))
def test_frame_velocity_is_the_twist(seed, frame, ref, convention):
    q = random_q(seed)
    qd = np.random.default_rng(seed + 7).normal(size=MECH.nq)
    V = frame_velocity(MECH, q, qd, frame, ref, convention)
    np.testing.assert_allclose(V, numeric_twist(MECH, q, qd, frame, ref, convention), atol=2e-7)


@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1), frame=st.sampled_from(FRAMES), ref=st.sampled_from(REFERENCES),
       convention=st.sampled_from(CONVENTIONS))
def test_batch_equals_single(seed, frame, ref, convention):
    Q = MECH.random_configuration(np.random.default_rng(seed), size=5)
    JB = jacobian(MECH, Q, frame, ref, convention)
    TB = forward_kinematics(MECH, Q).pose(frame, ref)
    assert JB.shape == (5, 6, MECH.nq) and TB.shape == (5, 4, 4)
    for i in range(5):
        np.testing.assert_allclose(JB[i], jacobian(MECH, Q[i], frame, ref, convention), atol=1e-12)
        np.testing.assert_allclose(TB[i], forward_kinematics(MECH, Q[i]).pose(frame, ref), atol=1e-12)


def test_conventions_relate_by_adjoint():
    """LOCAL = R^T applied to LOCAL_WORLD_ALIGNED; WORLD linear = LWA linear - w x p."""
    q = random_q(3)
    T = forward_kinematics(MECH, q).pose("tool")
    lwa = jacobian(MECH, q, "tool", convention="LOCAL_WORLD_ALIGNED")
    loc = jacobian(MECH, q, "tool", convention="LOCAL")
    wor = jacobian(MECH, q, "tool", convention="WORLD")
    R, p = T[:3, :3], T[:3, 3]
    np.testing.assert_allclose(loc[:3], R.T @ lwa[:3], atol=1e-12)
    np.testing.assert_allclose(loc[3:], R.T @ lwa[3:], atol=1e-12)
    np.testing.assert_allclose(wor[:3], lwa[:3] - np.cross(lwa[3:].T, p).T, atol=1e-12)


def test_columns_of_joints_off_the_path_are_zero():
    q = random_q(5)
    J = jacobian(MECH, q, "rim")
    for name in ("shoulder", "slide", "wrist_ball.roll", "wrist_ball.pitch", "wrist_ball.yaw"):
        assert not J[:, MECH.coordinate_index(name)].any()
    # relative to itself a frame never moves
    assert not jacobian(MECH, q, "rim", "rim").any()


def test_the_body_view_holds_constants_only():
    """A ``Body`` is a view of the model's constants; its pose, Jacobian and velocity are the free functions'
    (forward_kinematics, jacobian, frame_velocity), as Pinocchio's model holds no algorithm."""
    body = MECH.body("wrist")
    assert body.mechanism is MECH and body.parent.name == "arm2"
    assert not any(hasattr(body, name) for name in ("pose", "jacobian", "velocity"))
    assert not any(hasattr(MECH, name) for name in ("edit", "save", "attach"))


def test_bad_inputs():
    m = planar_arm((1.0, 1.0))
    with pytest.raises(InvalidConfiguration):
        jacobian(m, [0.0], "tool")
    with pytest.raises(InvalidConfiguration):
        jacobian(m, [0.0, math.nan], "tool")
    with pytest.raises(MechanismModelError, match="unknown frame 'toool'.*did you mean 'tool'"):
        jacobian(m, [0.0, 0.0], "toool")
    with pytest.raises(MechanismModelError, match="convention"):
        jacobian(m, [0.0, 0.0], "tool", convention="GLOBAL")
    with pytest.raises(InvalidConfiguration):
        frame_velocity(m, [0.0, 0.0], [1.0], "tool")
