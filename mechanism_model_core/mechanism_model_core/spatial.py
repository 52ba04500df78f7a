"""Rigid transforms, rotations and twists.

Conventions (used everywhere in the package):

* ``T_a_b`` is the 4x4 homogeneous pose of frame *b* expressed in frame *a*; it maps b-coordinates to
  a-coordinates, and ``T_a_c = T_a_b @ T_b_c``.
* Quaternions are ``(x, y, z, w)``, as in ROS and scipy, with one sign: ``w >= 0`` (``canonical_quaternion``;
  when ``w == 0`` the first non-zero of ``x, y, z`` is positive). Quaternions read in may have either sign.
* Euler sequences named with capitals (``"XYZ"``) are *intrinsic*: about x, then the new y, then the new z.
  URDF's ``rpy`` is the extrinsic x-y-z sequence, i.e. ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``.
* Twists and Jacobian rows are ``[linear; angular]``; lengths in metres, angles in radians.

Conversions that are not on a hot path go through :class:`scipy.spatial.transform.Rotation`, which is
imported lazily so that ``import mechanism_model_core`` stays fast.
"""

from __future__ import annotations

import math

import numpy as np

_EYE4 = np.eye(4)
_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])
_TWO_PI = 2.0 * math.pi


def _rotation_class():
    from scipy.spatial.transform import Rotation

    return Rotation


def _writable(a) -> np.ndarray:
    """A float copy: scipy before 1.10 refuses read-only buffers (and the model's arrays are read-only)."""
    return np.array(a, dtype=float)


def identity() -> np.ndarray:
    """A fresh 4x4 identity transform."""
    return _EYE4.copy()


def make_transform(rotation=None, translation=None) -> np.ndarray:
    """4x4 transform from a 3x3 rotation matrix and a translation vector (metres)."""
    T = np.eye(4)
    if rotation is not None:
        T[:3, :3] = rotation
    if translation is not None:
        T[:3, 3] = translation
    return T


def translation(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> np.ndarray:
    """Pure translation transform."""
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def rot_x(angle: float) -> np.ndarray:
    """4x4 rotation about x by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def rot_y(angle: float) -> np.ndarray:
    """4x4 rotation about y by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1.0]])


def rot_z(angle: float) -> np.ndarray:
    """4x4 rotation about z by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def inverse(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid transform (or of a stack of them, shape (..., 4, 4))."""
    T = np.asarray(T, dtype=float)
    out = np.zeros_like(T)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def axis_angle_matrix(axis, angle) -> np.ndarray:
    """3x3 rotation matrix about a unit ``axis`` by ``angle`` (Rodrigues). Vectorised over ``angle``."""
    axis = np.asarray(axis, dtype=float)
    angle = np.asarray(angle, dtype=float)
    K = skew(axis)
    s = np.sin(angle)[..., None, None]
    c = np.cos(angle)[..., None, None]
    return np.eye(3) + s * K + (1.0 - c) * (K @ K)


def skew(v) -> np.ndarray:
    """The 3x3 cross-product matrix of ``v``: ``skew(a) @ b == cross(a, b)``."""
    x, y, z = v
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def cross_rows(a, b) -> np.ndarray:
    """Row-wise cross product of (..., 3) arrays (cheaper than ``np.cross`` for small inputs)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def wrap_angle(a, lower=None):
    """Angles (rad) brought to [-pi, pi): ``+pi`` maps to ``-pi``. The one angle wrap of the package; the
    angle nearest ``ref`` by whole turns is ``ref + wrap_angle(a - ref)``. Rounding can give exactly ``+pi``
    for an input a few ulps below an odd multiple of ``-pi`` (``a + pi`` rounds to a tiny negative number,
    and that plus ``2 pi`` rounds to ``2 pi``), as the seven hand-written copies it replaced did.

    With ``lower`` (rad, a scalar or an array broadcasting with ``a``): brought to ``[lower, lower + 2 pi)``
    instead, as ``lower + (a - lower) mod 2 pi`` (a full-turn joint's range from its lower limit, as IK
    wraps its unknowns).

    A Python ``float`` gives a ``float``; anything else (numpy scalars, sequences, arrays) a numpy value of
    the same shape. The arithmetic is ``(a + pi) mod 2 pi - pi`` with the modulo taking the sign of the
    divisor (Python's ``%``, ``np.remainder``), so the result is the same bit for bit in both cases."""
    if lower is not None:
        if type(a) is float and type(lower) is float:
            return lower + (a - lower) % _TWO_PI
        return lower + np.remainder(np.asarray(a) - lower, _TWO_PI)
    if type(a) is float:
        return (a + math.pi) % _TWO_PI - math.pi
    return (np.asarray(a) + np.pi) % _TWO_PI - np.pi


def rotation_z_to(axis) -> np.ndarray:
    """The smallest 3x3 rotation that takes +z onto the unit vector ``axis`` (its third column is ``axis``).

    Identity for +z, a half turn about x for -z; otherwise the rotation about ``z x axis`` (``axis`` need
    not be unit length). Used to turn a
    joint frame so that its axis is +z, and a contact normal into a frame.
    """
    a = np.asarray(axis, dtype=float)
    if a[0] == 0.0 and a[1] == 0.0:
        if a[2] > 0.0:
            return np.eye(3)
        if a[2] < 0.0:
            return np.diag([1.0, -1.0, -1.0])
    n = math.sqrt(float(a @ a))
    if not (n > 0.0 and math.isfinite(n)):
        raise ValueError(f"axis {tuple(a)} has zero or non-finite length")
    a = a / n
    # Rodrigues from z to a, written without the angle: v = z x a, c = z . a, R = I + [v] + [v]^2 / (1 + c);
    # near -z, 1 + c is taken as |v|^2 / (1 - c), which does not cancel
    vx, vy, c = -a[1], a[0], a[2]
    one_c = 1.0 + c if c >= 0.0 else (vx * vx + vy * vy) / (1.0 - c)
    K = np.array([[0.0, 0.0, vy], [0.0, 0.0, -vx], [-vy, vx, 0.0]])
    return np.eye(3) + K + (K @ K) / one_c


def log_so3(R) -> np.ndarray:
    """Rotation vector (axis times angle, radians, angle in [0, pi]) of a 3x3 rotation matrix, or of a
    stack of them (..., 3, 3): the SO(3) logarithm. Accurate near 0 (series) and near pi (axis from the
    symmetric part, angle from atan2)."""
    if type(R) is np.ndarray and R.shape == (3, 3) and R.dtype == np.float64:
        return _log_so3_one(R)                       # one float matrix: no conversion
    R = np.asarray(R, dtype=float)
    if R.ndim == 2:
        return _log_so3_one(R)
    flat = R.reshape(-1, 3, 3)
    # the formulas of _log_so3_one, on every matrix at once; those near pi (and non-finite) one by one
    c = 0.5 * (np.einsum("bii->b", flat) - 1.0)
    w = np.stack([flat[:, 2, 1] - flat[:, 1, 2], flat[:, 0, 2] - flat[:, 2, 0], flat[:, 1, 0] - flat[:, 0, 1]],
                 axis=1)
    regular = c > -0.99
    small = c > 0.999999
    cr = np.where(regular & ~small, c, 0.0)
    th = np.arccos(cr)
    f = np.where(small, 0.5 * (1.0 + (1.0 - np.minimum(c, 1.0)) / 3.0), 0.5 * th / np.sin(th))
    out = w * f[:, None]
    for k in np.nonzero(~regular)[0]:
        out[k] = _log_so3_one(flat[k])
    return out.reshape(R.shape[:-2] + (3,))


def _log_so3_one(R) -> np.ndarray:
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()   # floats: the same arithmetic, cheaper
    tr = r00 + r11 + r22
    c = 0.5 * (tr - 1.0)
    w0, w1, w2 = r21 - r12, r02 - r20, r10 - r01
    if c > -0.99:
        if c > 0.999999:              # small angle: theta / sin(theta) to second order
            f = 0.5 * (1.0 + (1.0 - min(c, 1.0)) / 3.0)
        else:
            th = math.acos(c)
            f = 0.5 * th / math.sin(th)
        return np.array((w0 * f, w1 * f, w2 * f))
    if not math.isfinite(c):
        return np.full(3, math.nan)
    # near pi: the axis from the symmetric part, its sign from the skew part, the angle from atan2
    c = max(c, -1.0)
    B = 0.5 * (R + R.T) - c * np.eye(3)
    k = int(np.argmax(np.diag(B)))
    axis = B[:, k] / math.sqrt(max(B[k, k], 1e-300))
    w = np.array((w0, w1, w2))
    if axis @ w < 0:
        axis = -axis
    axis /= np.linalg.norm(axis)
    return axis * math.atan2(0.5 * float(axis @ w), c)


def inverse_left_jacobian_so3(phi) -> np.ndarray:
    """``J_l(phi)^-1``: maps an angular velocity (left, world side) onto ``d phi / dt`` for ``phi = log(R)``.

    Capped just below pi, where the inverse Jacobian is singular."""
    theta = math.sqrt(phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2])
    K = skew(phi)
    if theta < 1e-6:
        return np.eye(3) - 0.5 * K + (K @ K) / 12.0
    if theta > math.pi - 1e-6:
        theta = math.pi - 1e-6
    coef = 1.0 / (theta * theta) - (1.0 + math.cos(theta)) / (2.0 * theta * math.sin(theta))
    return np.eye(3) - 0.5 * K + coef * (K @ K)


def quaternion_to_matrix(q) -> np.ndarray:
    """3x3 rotation from a quaternion ``(x, y, z, w)``; the quaternion is normalised first."""
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError(f"quaternion {tuple(q)} has zero or non-finite norm")
    return _rotation_class().from_quat(q / n).as_matrix()


def canonical_quaternion(q) -> np.ndarray:
    """The canonical sign of quaternions ``(x, y, z, w)`` (shape (..., 4)): ``q`` and ``-q`` are the same
    rotation, and the package always gives the one with ``w > 0``; when ``w == 0``, the one whose first
    non-zero component of ``(x, y, z)`` is positive (scipy's ``as_quat(canonical=True)`` rule). The norm is
    kept; a negative zero comes back as ``0.0``."""
    q = np.asarray(q, dtype=float)
    w = q[..., 3]
    xyz = q[..., :3]
    first = np.take_along_axis(xyz, np.argmax(xyz != 0, axis=-1)[..., None], axis=-1)[..., 0]
    flip = (w < 0) | ((w == 0) & (first < 0))
    return np.where(flip[..., None], -q, q) + 0.0


def matrix_to_quaternion(R) -> np.ndarray:
    """Quaternion ``(x, y, z, w)`` of a 3x3 rotation matrix, or (..., 4) of a stack (..., 3, 3), in the
    package's one sign convention (:func:`canonical_quaternion`: ``w >= 0``). Every quaternion the package
    writes -- model files, CLI output, ROS messages -- comes from here."""
    R = _writable(R)
    q = _rotation_class().from_matrix(R.reshape(-1, 3, 3)).as_quat()
    return canonical_quaternion(q.reshape(R.shape[:-2] + (4,)))


def euler_to_matrix(sequence: str, angles) -> np.ndarray:
    """3x3 rotation from Euler angles (radians).

    ``sequence`` in capitals is intrinsic (``"XYZ"``: about x, then the new y, then the new z), in
    lower case extrinsic, as scipy defines them.
    """
    return _rotation_class().from_euler(sequence, _writable(angles)).as_matrix()


def rpy_to_matrix(rpy) -> np.ndarray:
    """3x3 rotation from URDF roll-pitch-yaw (radians): ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def matrix_to_rpy(R) -> np.ndarray:
    """URDF roll, pitch, yaw (radians) of a 3x3 rotation matrix (inverse of :func:`rpy_to_matrix`).

    Well conditioned near pitch = +-pi/2 and silent there (gimbal lock: the yaw is taken from the first
    column, or 0 when that vanishes, and roll absorbs the rest). Yaw from the first column; then
    ``Rz(-yaw) R = Ry(pitch) Rx(roll)`` gives pitch and roll from entries that never vanish together.
    """
    R = np.asarray(R, dtype=float)
    y = math.atan2(R[1, 0], R[0, 0]) if math.hypot(R[0, 0], R[1, 0]) > 1e-12 else 0.0
    cy, sy = math.cos(y), math.sin(y)
    Rp = np.array([[cy, sy, 0.0], [-sy, cy, 0.0], [0.0, 0.0, 1.0]]) @ R
    r = math.atan2(-Rp[1, 2], Rp[1, 1])
    p = math.atan2(-Rp[2, 0], Rp[0, 0])
    return np.array([r, p, y])


def rotation_vector(R) -> np.ndarray:
    """Axis times angle (radians) of a 3x3 rotation matrix or a stack (..., 3, 3): :func:`log_so3`."""
    return log_so3(R)


def is_rotation(R, tol: float = 1e-6) -> bool:
    """True when ``R`` is orthonormal with determinant +1 to within ``tol``."""
    R = np.asarray(R, dtype=float)
    return (R.shape == (3, 3) and np.allclose(R @ R.T, np.eye(3), atol=tol)
            and abs(np.linalg.det(R) - 1.0) < tol)


def adjoint(T: np.ndarray) -> np.ndarray:
    """6x6 adjoint of ``T_a_b`` for twists ordered ``[linear; angular]``: ``V_a = Ad(T_a_b) @ V_b``."""
    R = T[:3, :3]
    p = T[:3, 3]
    Ad = np.zeros((6, 6))
    Ad[:3, :3] = R
    Ad[3:, 3:] = R
    Ad[:3, 3:] = skew(p) @ R
    return Ad


def pose_error(T_current: np.ndarray, T_target: np.ndarray) -> np.ndarray:
    """6-vector ``[dp; dtheta]`` that moves ``T_current`` to ``T_target``, both in the same reference frame.

    ``dp`` is the position difference and ``dtheta`` the rotation vector of ``R_target @ R_current.T``,
    both in the reference frame's axes.
    """
    e = np.empty(6)
    e[:3] = T_target[:3, 3] - T_current[:3, 3]
    e[3:] = log_so3(T_target[:3, :3] @ T_current[:3, :3].T)
    return e


def relative_motion(T_w_f, J_f, T_w_r, J_r):
    """Pose and Jacobian of frame f relative to a moving frame r, from both relative to the world.

    ``J_f``, ``J_r``: (..., 6, n) world-aligned Jacobians of the two origins (LOCAL_WORLD_ALIGNED rows
    [linear; angular] in world axes); ``T_w_f``, ``T_w_r``: their poses (..., 4, 4). Returns ``T_r_f`` and
    the Jacobian of ``T_r_f``'s motion in r's axes: ``w = R_r^T (w_f - w_r)``, and the velocity of f's
    origin seen from r, ``v = R_r^T (v_f - v_r - w_r x (p_f - p_r))``. ``J_f`` may be None (pose only).
    """
    if T_w_f.ndim == 2 and T_w_r.ndim == 2:            # one pose each: the common case, kept lean
        RrT = T_w_r[:3, :3].T
        d = T_w_f[:3, 3] - T_w_r[:3, 3]
        T = np.empty((4, 4))
        T[:3, :3] = RrT @ T_w_f[:3, :3]
        T[:3, 3] = RrT @ d
        T[3] = _LAST_ROW
        if J_f is None:
            return T, None
        J = np.empty((6, J_f.shape[1]))
        J[:3] = RrT @ (J_f[:3] - J_r[:3] + skew(d) @ J_r[3:])
        J[3:] = RrT @ (J_f[3:] - J_r[3:])
        return T, J
    RrT = np.swapaxes(T_w_r[..., :3, :3], -1, -2)
    d = T_w_f[..., :3, 3] - T_w_r[..., :3, 3]
    T = np.zeros(np.broadcast_shapes(np.shape(T_w_f), np.shape(T_w_r)))
    T[..., :3, :3] = RrT @ T_w_f[..., :3, :3]
    T[..., :3, 3] = (RrT @ d[..., None])[..., 0]
    T[..., 3, 3] = 1.0
    if J_f is None:
        return T, None
    lin = J_f[..., :3, :] - J_r[..., :3, :] - np.swapaxes(
        cross_rows(np.swapaxes(J_r[..., 3:, :], -1, -2), d[..., None, :]), -1, -2)
    ang = J_f[..., 3:, :] - J_r[..., 3:, :]
    return T, np.concatenate([RrT @ lin, RrT @ ang], axis=-2)
