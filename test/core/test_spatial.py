"""The SO(3)/SE(3) helpers of ``spatial``, each the one implementation in the package, checked against
scipy's Rotation (an independent implementation) and against finite differences."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from mechanism_model_core import spatial

RNG = np.random.default_rng(7)


def random_rotations(n):
    return Rotation.random(n, random_state=11).as_matrix()


def test_skew_is_the_cross_product():
    for _ in range(20):
        a, b = RNG.normal(size=3), RNG.normal(size=3)
        np.testing.assert_allclose(spatial.skew(a) @ b, np.cross(a, b), atol=1e-15)
        np.testing.assert_allclose(spatial.cross_rows(a[None], b[None])[0], np.cross(a, b), atol=1e-15)


@pytest.mark.parametrize("axis", [(0, 0, 1), (0, 0, -1), (1, 0, 0), (0, -1, 0), (1e-13, 0, -1),
                                  (0.3, -0.4, 0.2), (1e-9, 2e-9, -1.0), (0, 0, 5.0)])
def test_rotation_z_to_takes_z_onto_the_axis_by_the_smallest_rotation(axis):
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    R = spatial.rotation_z_to(axis)
    assert spatial.is_rotation(R, 1e-12)
    np.testing.assert_allclose(R[:, 2], a, atol=1e-12)
    # smallest rotation: its angle is the angle between z and the axis
    angle = np.linalg.norm(Rotation.from_matrix(R).as_rotvec())
    assert angle == pytest.approx(math.acos(np.clip(a[2], -1, 1)), abs=1e-6)


def test_rotation_z_to_refuses_a_zero_axis():
    with pytest.raises(ValueError):
        spatial.rotation_z_to((0.0, 0.0, 0.0))
    with pytest.raises(ValueError):
        spatial.rotation_z_to((math.nan, 1.0, 0.0))


def test_log_so3_against_scipy_and_exp():
    Rs = random_rotations(200)
    ref = Rotation.from_matrix(Rs).as_rotvec()
    np.testing.assert_allclose(spatial.log_so3(Rs), ref, atol=1e-12)       # stack
    for R, r in zip(Rs[:20], ref[:20]):
        np.testing.assert_allclose(spatial.log_so3(R), r, atol=1e-12)     # one matrix


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-7, 1e-3, 1.0, math.pi - 0.2, math.pi - 1e-6,
                                   math.pi - 1e-10, math.pi])
def test_log_so3_near_zero_and_pi(angle):
    for axis in (np.array([1.0, 2.0, -0.5]), np.array([0.0, 0.0, 1.0]), np.array([-1.0, 1e-3, 0.0])):
        u = axis / np.linalg.norm(axis)
        R = spatial.axis_angle_matrix(u, angle)
        phi = spatial.log_so3(R)
        # exp(log(R)) == R: the independent check (the sign at exactly pi is free)
        np.testing.assert_allclose(spatial.axis_angle_matrix(phi / max(np.linalg.norm(phi), 1e-300),
                                                             np.linalg.norm(phi)), R, atol=1e-9)
        assert np.linalg.norm(phi) == pytest.approx(angle, abs=1e-9)
        if angle < math.pi - 1e-6:
            np.testing.assert_allclose(phi, u * angle, atol=1e-9)


def test_log_so3_stack_mixes_small_regular_and_near_pi_angles():
    """A stack is computed at once except the angles near pi: every kind in one stack gives what one matrix
    at a time gives, and exp(log R) == R; a non-finite matrix gives NaN without spoiling the others."""
    axis = np.array([0.3, -1.0, 0.4]) / np.linalg.norm([0.3, -1.0, 0.4])
    angles = [0.0, 1e-12, 1e-4, 0.7, 2.5, math.pi - 1e-3, math.pi - 1e-9, math.pi]
    Rs = np.array([spatial.axis_angle_matrix(axis, a) for a in angles] + [np.full((3, 3), np.nan)])
    phi = spatial.log_so3(Rs.reshape(3, 3, 3, 3)).reshape(-1, 3)
    assert np.all(np.isnan(phi[-1]))
    for R, p, a in zip(Rs[:-1], phi[:-1], angles):
        # to rounding: numpy's vector loops may round a stack and a single matrix differently (one ulp seen
        # with numpy 1.23)
        np.testing.assert_allclose(p, spatial.log_so3(R), rtol=0, atol=8 * np.finfo(float).eps * max(1.0, a))
        np.testing.assert_allclose(spatial.axis_angle_matrix(p / max(np.linalg.norm(p), 1e-300), np.linalg.norm(p)),
                                   R, atol=1e-9)
        assert np.linalg.norm(p) == pytest.approx(a, abs=1e-9)


def test_rotation_vector_is_log_so3():
    Rs = random_rotations(5)
    np.testing.assert_array_equal(spatial.rotation_vector(Rs), spatial.log_so3(Rs))


def test_inverse_left_jacobian_by_finite_differences():
    for R in random_rotations(10):
        phi = spatial.log_so3(R)
        Jinv = spatial.inverse_left_jacobian_so3(phi)
        for k in range(3):
            w = np.zeros(3)
            w[k] = 1e-7
            dR = spatial.axis_angle_matrix(w / 1e-7, 1e-7)
            d = (spatial.log_so3(dR @ R) - spatial.log_so3(dR.T @ R)) / 2e-7
            np.testing.assert_allclose(Jinv[:, k], d, atol=1e-6)


def test_rpy_against_scipy_and_round_trip():
    for rpy in RNG.uniform(-math.pi, math.pi, (100, 3)):
        rpy[1] /= 2.0
        R = spatial.rpy_to_matrix(rpy)
        np.testing.assert_allclose(R, Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-14)
        np.testing.assert_allclose(spatial.matrix_to_rpy(R), rpy, atol=1e-10)


@pytest.mark.parametrize("pitch", [math.pi / 2, -math.pi / 2, math.pi / 2 - 1e-9])
def test_matrix_to_rpy_at_gimbal_lock_reproduces_the_matrix(pitch, recwarn):
    R = spatial.rpy_to_matrix((0.4, pitch, -1.1))
    np.testing.assert_allclose(spatial.rpy_to_matrix(spatial.matrix_to_rpy(R)), R, atol=1e-8)
    assert not recwarn.list


def _exp_twist(T, v, w, t):
    """Move pose T by origin velocity v and angular velocity w (world axes) for time t."""
    out = T.copy()
    n = np.linalg.norm(w)
    out[:3, :3] = spatial.axis_angle_matrix(w / n, n * t) @ T[:3, :3] if n > 0 else T[:3, :3]
    out[:3, 3] = T[:3, 3] + v * t
    return out


def test_relative_motion_by_finite_differences():
    """Frames f and r move with given origin velocities and angular velocities (one column each); the
    composed Jacobian must be the time derivative of T_r_f (velocity of f's origin and angular velocity,
    both in r's axes)."""
    for _ in range(10):
        Tf = spatial.make_transform(Rotation.random(random_state=RNG.integers(1 << 30)).as_matrix(),
                                    RNG.normal(size=3))
        Tr = spatial.make_transform(Rotation.random(random_state=RNG.integers(1 << 30)).as_matrix(),
                                    RNG.normal(size=3))
        Jf, Jr = RNG.normal(size=(6, 1)), RNG.normal(size=(6, 1))
        T, J = spatial.relative_motion(Tf, Jf, Tr, Jr)
        np.testing.assert_allclose(T, spatial.inverse(Tr) @ Tf, atol=1e-12)
        h = 1e-6
        Tp = spatial.inverse(_exp_twist(Tr, Jr[:3, 0], Jr[3:, 0], h)) @ _exp_twist(Tf, Jf[:3, 0], Jf[3:, 0], h)
        Tm = spatial.inverse(_exp_twist(Tr, Jr[:3, 0], Jr[3:, 0], -h)) @ _exp_twist(Tf, Jf[:3, 0], Jf[3:, 0], -h)
        v = (Tp[:3, 3] - Tm[:3, 3]) / (2 * h)
        # angular velocity in r's axes: dR/dt R^T = [w]
        W = (Tp[:3, :3] - Tm[:3, :3]) / (2 * h) @ T[:3, :3].T
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        np.testing.assert_allclose(J[:3, 0], v, atol=1e-6)
        np.testing.assert_allclose(J[3:, 0], w, atol=1e-6)
        # the batched form gives the same
        Tb, Jb = spatial.relative_motion(Tf[None], Jf[None], Tr[None], Jr[None])
        np.testing.assert_allclose(Tb[0], T, atol=1e-14)
        np.testing.assert_allclose(Jb[0], J, atol=1e-13)


# ---------------------------------------------------------------------------------------------- angle wrap
@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_wrap_angle_is_the_remainder_of_a_turn_in_minus_pi_to_pi(a):
    w = spatial.wrap_angle(a)
    assert type(w) is float                                    # a float stays a float (messages, JSON)
    assert -math.pi <= w <= math.pi                           # +pi only by rounding (the next test)
    # math.remainder (IEEE remainder, an independent implementation) differs from it only by a whole turn
    # at +-pi and by the rounding of a + pi
    d = w - math.remainder(a, 2 * math.pi)
    assert min(abs(d), abs(abs(d) - 2 * math.pi)) <= 1e-15 * max(1.0, abs(a)) * 8


def test_wrap_angle_boundaries_and_arrays():
    assert spatial.wrap_angle(math.pi) == -math.pi               # [-pi, pi): +pi is taken to -pi
    assert spatial.wrap_angle(-math.pi) == -math.pi
    below = math.nextafter(-math.pi, -4.0)                      # documented rounding edge: gives +pi, not -pi
    assert spatial.wrap_angle(below) == math.pi == (below + math.pi) % (2 * math.pi) - math.pi
    assert spatial.wrap_angle(3 * math.pi / 2) == pytest.approx(-math.pi / 2)
    a = np.array([[0.1, 7.0], [-7.0, 100.0]])
    w = spatial.wrap_angle(a)
    assert w.shape == a.shape
    assert np.array_equal(w, (a + np.pi) % (2 * np.pi) - np.pi)      # the formula the 7 call sites used
    assert np.array_equal(spatial.wrap_angle([0.1, 7.0]), w[0])
    assert isinstance(spatial.wrap_angle(np.float64(7.0)), np.floating)
    ref = np.array([10.0, -10.0])                              # the nearest turn to a reference
    q = ref + spatial.wrap_angle(np.array([0.5, 0.5]) - ref)
    assert np.all(np.abs(q - ref) <= math.pi)
    assert np.allclose(np.sin(q), math.sin(0.5)) and np.allclose(np.cos(q), math.cos(0.5))


@given(st.floats(min_value=-1e4, max_value=1e4, allow_nan=False), st.floats(min_value=-10.0, max_value=10.0))
def test_wrap_angle_from_a_lower_limit(a, lower):
    """``wrap_angle(a, lower)``: the same angle in [lower, lower + 2 pi) -- a full-turn joint's range, as
    IK wraps its unknowns (its four copies of ``lo + np.mod(x - lo, 2 pi)`` call it now)."""
    w = spatial.wrap_angle(a, lower)
    assert type(w) is float
    assert lower <= w <= lower + 2 * math.pi                    # the upper end only by rounding
    d = w - math.remainder(a, 2 * math.pi)                      # a whole number of turns apart
    turns = d / (2 * math.pi)
    assert abs(turns - round(turns)) <= 1e-12 * max(1.0, abs(a))
    x, lo = np.array([a, a + 1.0]), np.array([lower, -math.pi])
    assert np.array_equal(spatial.wrap_angle(x, lo), lo + np.mod(x - lo, 2 * math.pi))   # the copies' formula
    assert spatial.wrap_angle(a, -math.pi) == spatial.wrap_angle(a)                    # the default range


# ---------------------------------------------------------------------------------------- quaternion sign
def test_matrix_to_quaternion_has_one_sign_and_is_scipys_rotation():
    R = random_rotations(200)
    q = spatial.matrix_to_quaternion(R)                        # a stack
    assert q.shape == (200, 4)
    assert np.all(q[:, 3] >= 0)
    assert np.allclose(Rotation.from_quat(q).as_matrix(), R, atol=1e-12)
    for Ri, qi in zip(R[:20], q[:20]):                           # one matrix gives the same as the stack
        assert np.allclose(spatial.matrix_to_quaternion(Ri), qi, atol=1e-15)
    assert spatial.matrix_to_quaternion(R.reshape(10, 20, 3, 3)).shape == (10, 20, 4)


@pytest.mark.parametrize("axis", [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, -1), (1, -1, 0), (-1, 0, 1)])
def test_half_turns_get_one_sign_too(axis):
    """At w == 0 (a half turn: R = 2 a a^T - I, exact for these axes) q and -q both have w >= 0; the first
    non-zero of x, y, z decides."""
    v = np.asarray(axis, dtype=float)
    R = 2.0 * np.outer(v, v) / (v @ v) - np.eye(3)
    q = spatial.matrix_to_quaternion(R)
    assert q[3] == 0.0
    assert q[np.flatnonzero(q[:3])[0]] > 0
    assert np.allclose(Rotation.from_quat(q).as_matrix(), R, atol=1e-15)
    assert np.array_equal(spatial.canonical_quaternion(-q), q)


def test_canonical_quaternion_picks_the_sign_only():
    q = np.array([[0.1, -0.2, 0.3, -0.9], [0.0, -0.6, 0.8, 0.0], [-0.0, 0.0, -1.0, -0.0], [0.5, 0.5, 0.5, 0.5]])
    c = spatial.canonical_quaternion(q)
    assert np.array_equal(c, [[-0.1, 0.2, -0.3, 0.9], [0.0, 0.6, -0.8, 0.0], [0.0, 0.0, 1.0, 0.0],
                              [0.5, 0.5, 0.5, 0.5]])
    assert not np.any(np.signbit(c[c == 0]))                    # no negative zeros written out
    assert np.array_equal(spatial.canonical_quaternion(q[0]), c[0])
