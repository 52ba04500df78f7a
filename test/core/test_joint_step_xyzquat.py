"""``joint_step_xyzquat``: the per-step transforms of ``joint_transforms`` as translation + quaternion, computed
from half-angles instead of converted from the matrices (what the state publisher puts on /tf). Checked
against the matrices (translation and rotation), against scipy's matrix-to-quaternion conversion in the
package's sign convention, at huge angles, for batches, and on random trees of every joint type."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from mechanism_model_core.kinematics import joint_step_xyzquat, joint_transforms

from core.test_kinematics_passes import random_mechanism
from core.test_large_angles import wheel_chain


def _check(mech, q):
    T = joint_transforms(mech, q)
    P = joint_step_xyzquat(mech, q)
    assert P.shape == T.shape[:-2] + (7,)
    np.testing.assert_allclose(P[..., :3], T[..., :3, 3], rtol=0, atol=1e-12)
    quat = P[..., 3:]
    np.testing.assert_allclose(np.linalg.norm(quat, axis=-1), 1.0, rtol=0, atol=1e-12)
    assert np.all(quat[..., 3] >= 0.0)
    R = Rotation.from_quat(quat.reshape(-1, 4)).as_matrix().reshape(T.shape[:-2] + (3, 3))
    np.testing.assert_allclose(R, T[..., :3, :3], rtol=0, atol=1e-12)
    # scipy's conversion of the matrix, canonical sign (w >= 0): the same numbers where w is clear of zero
    ref = Rotation.from_matrix(T[..., :3, :3].reshape(-1, 3, 3)).as_quat().reshape(quat.shape)
    ref = np.where(ref[..., 3:] < 0, -ref, ref)
    clear = np.abs(ref[..., 3]) > 1e-6
    np.testing.assert_allclose(quat[clear], ref[clear], rtol=0, atol=1e-12)
    return P


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), qseed=st.integers(0, 2**31), scale=st.sampled_from([1.0, 10.0, 1e6]))
def test_equals_the_matrices_on_random_trees(seed, qseed, scale):
    mech = random_mechanism(seed)
    q = np.random.default_rng(qseed).uniform(-math.pi, math.pi, mech.nq) * scale
    _check(mech, q)


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e12, 1e16])
def test_huge_angles(scale):
    mech = wheel_chain()
    rng = np.random.default_rng(int(math.log10(scale)))
    q = rng.uniform(-1, 1, mech.nq) * scale
    q[mech.coordinate_names.index("mast")] = 0.3          # a length, not an angle
    _check(mech, q)


def test_batch_equals_single_and_half_turns_keep_the_sign_convention():
    mech = wheel_chain()
    rng = np.random.default_rng(3)
    Q = rng.uniform(-4, 4, (5, mech.nq))
    Q[0] = np.pi                    # half turns: w is zero up to rounding
    Q[1] = 0.0
    P = _check(mech, Q)
    for k in range(len(Q)):
        np.testing.assert_array_equal(P[k], joint_step_xyzquat(mech, Q[k]))


def test_a_zero_w_takes_the_sign_of_the_first_nonzero_component():
    """A half turn about x in the placement and the joint at zero: w is exactly 0, and the package's rule
    (scipy's canonical form) gives the quaternion whose first non-zero component is positive."""
    from mechanism_model_core import Joint, MechanismBuilder
    from mechanism_model_core.spatial import make_transform
    b = MechanismBuilder("half_turn")
    b.add_body("a", None, Joint.revolute("j", make_transform(np.diag([1.0, -1.0, -1.0]), (0.1, 0, 0)),
                                         axis=(0, 0, 1), lower=-1, upper=1))
    mech = b.build()
    P = _check(mech, np.zeros(1))
    assert P[0, 6] == 0.0
    np.testing.assert_array_equal(P[0, 3:], [1.0, 0.0, 0.0, 0.0])
    P = _check(mech, np.array([-1.0]))          # still a half turn (about a horizontal axis): x first, positive
    assert P[0, 6] == 0.0 and P[0, 3] > 0
