"""Rigid transforms, rotations and twists.

Conventions (used everywhere in the package):

* ``T_a_b`` is the 4x4 homogeneous pose of frame *b* expressed in frame *a*; it maps b-coordinates to
  a-coordinates, and ``T_a_c = T_a_b @ T_b_c``.
* Quaternions are ``(x, y, z, w)``, as in ROS and scipy.
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


def quaternion_to_matrix(q) -> np.ndarray:
    """3x3 rotation from a quaternion ``(x, y, z, w)``; the quaternion is normalised first."""
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError(f"quaternion {tuple(q)} has zero or non-finite norm")
    return _rotation_class().from_quat(q / n).as_matrix()


def matrix_to_quaternion(R) -> np.ndarray:
    """Quaternion ``(x, y, z, w)`` with ``w >= 0`` of a 3x3 rotation matrix."""
    q = _rotation_class().from_matrix(_writable(R)).as_quat()
    return q if q[3] >= 0 else -q


def euler_to_matrix(sequence: str, angles) -> np.ndarray:
    """3x3 rotation from Euler angles (radians).

    ``sequence`` in capitals is intrinsic (``"XYZ"``: about x, then the new y, then the new z), in
    lower case extrinsic, as scipy defines them.
    """
    return _rotation_class().from_euler(sequence, _writable(angles)).as_matrix()


def rpy_to_matrix(rpy) -> np.ndarray:
    """3x3 rotation from URDF roll-pitch-yaw: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    return euler_to_matrix("xyz", rpy)


def matrix_to_rpy(R) -> np.ndarray:
    """URDF roll-pitch-yaw of a 3x3 rotation matrix (inverse of :func:`rpy_to_matrix`)."""
    return _rotation_class().from_matrix(_writable(R)).as_euler("xyz")


def rotation_vector(R) -> np.ndarray:
    """Axis times angle (radians) of a 3x3 rotation matrix, or of a stack of them (..., 3, 3).

    Robust near 0 and near pi; used for orientation errors.
    """
    R = _writable(R)
    if R.ndim == 2:
        return _rotation_class().from_matrix(R).as_rotvec()
    flat = R.reshape(-1, 3, 3)
    return _rotation_class().from_matrix(flat).as_rotvec().reshape(R.shape[:-2] + (3,))


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
    e[3:] = rotation_vector(T_target[:3, :3] @ T_current[:3, :3].T)
    return e
