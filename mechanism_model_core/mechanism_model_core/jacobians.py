"""Geometric Jacobians and frame twists (CLARAty 7.2, 7.3).

``jacobian(mechanism, q, frame, relative_to=None, convention=...)`` returns the 6 x nq matrix ``J`` with
``[v; w] = J @ qdot``: rows linear then angular, columns in the order of ``mechanism.coordinate_names``.
It describes the motion of ``frame`` relative to ``relative_to`` (the ground when omitted) -- the time
derivative of ``T_relative_to_frame``. The reference conventions follow Pinocchio, with the reference frame
``r`` (``relative_to``) playing the role of Pinocchio's world:

``WORLD``
    spatial velocity in r: ``w`` in r's axes, ``v`` the velocity of the point (rigidly attached to
    ``frame``) that momentarily sits at r's origin.
``LOCAL_WORLD_ALIGNED``
    ``v`` the velocity of ``frame``'s origin, ``v`` and ``w`` both in r's axes. The default.
``LOCAL``
    ``v`` the velocity of ``frame``'s origin, ``v`` and ``w`` in ``frame``'s own axes.

Units: m/s and rad/s per unit joint rate (rad/s or m/s).
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from .kinematics import segment_poses
from .model import Mechanism
from .errors import MechanismModelError


class Convention(str, Enum):
    WORLD = "WORLD"
    LOCAL = "LOCAL"
    LOCAL_WORLD_ALIGNED = "LOCAL_WORLD_ALIGNED"

    @classmethod
    def parse(cls, value) -> "Convention":
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).upper())
        except ValueError:
            raise MechanismModelError(f"unknown Jacobian convention {value!r}; use "
                                      f"{', '.join(c.value for c in cls)}") from None


WORLD = Convention.WORLD
LOCAL = Convention.LOCAL
LOCAL_WORLD_ALIGNED = Convention.LOCAL_WORLD_ALIGNED


def _cross(a, b):
    """Row-wise cross product of (..., 3) arrays (cheaper than np.cross for small inputs)."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def _lwa_columns(mechanism: Mechanism, segs: np.ndarray, frame: str):
    """World-aligned Jacobian (origin velocity) of ``frame`` relative to the ground, and its pose.

    ``segs``: segment poses (S,4,4) or (B,S,4,4). Returns ``(J, T_world_frame)`` with J (..., 6, nq).
    """
    c = mechanism._compiled
    ref = mechanism.frame(frame)
    anc = c.seg_ancestors[ref.segment]
    Tf = segs[..., ref.segment, :, :] @ c.frame_T[ref.index]
    batch = segs.shape[:-3]
    J = np.zeros(batch + (6, mechanism.nq))
    if anc.size == 0:
        return J, Tf
    Ta = segs[..., anc, :, :]
    z = Ta[..., :3, 2]                       # (..., k, 3) joint axes in the world
    d = Tf[..., None, :3, 3] - Ta[..., :3, 3]
    kinds = c.seg_kind[anc]
    cols = c.seg_coord[anc]
    lin = _cross(z, d)
    ang = z.copy()
    pri = kinds == 2
    if pri.any():
        lin[..., pri, :] = z[..., pri, :]
        ang[..., pri, :] = 0.0
    J[..., :3, cols] = np.swapaxes(lin, -1, -2)
    J[..., 3:, cols] = np.swapaxes(ang, -1, -2)
    return J, Tf


def jacobian_from_segments(mechanism: Mechanism, segs: np.ndarray, frame: str,
                           relative_to: str | None = None,
                           convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian` for precomputed segment poses (lets a solver reuse one forward pass)."""
    conv = Convention.parse(convention)
    Jf, Tf = _lwa_columns(mechanism, segs, frame)
    if relative_to is None or relative_to == mechanism.ground:
        R = Tf[..., :3, :3]
        p = Tf[..., :3, 3]
        J = Jf
    else:
        Jr, Tr = _lwa_columns(mechanism, segs, relative_to)
        # d/dt T_r_f in world axes: w = wf - wr, v = vf - vr - wr x (pf - pr); then rotate into r's axes
        d = Tf[..., :3, 3] - Tr[..., :3, 3]
        lin = Jf[..., :3, :] - Jr[..., :3, :] - _cross(np.swapaxes(Jr[..., 3:, :], -1, -2),
                                                       d[..., None, :]).swapaxes(-1, -2)
        ang = Jf[..., 3:, :] - Jr[..., 3:, :]
        RrT = np.swapaxes(Tr[..., :3, :3], -1, -2)
        J = np.concatenate([RrT @ lin, RrT @ ang], axis=-2)
        R = RrT @ Tf[..., :3, :3]
        p = (RrT @ d[..., None])[..., 0]
    if conv is Convention.LOCAL_WORLD_ALIGNED:
        return J
    if conv is Convention.WORLD:
        out = J.copy()
        # v_origin_of_r = v_p + w x (0 - p) = v_p - w x p  -> column-wise: lin - ang x p
        out[..., :3, :] = J[..., :3, :] - _cross(np.swapaxes(J[..., 3:, :], -1, -2),
                                                 p[..., None, :]).swapaxes(-1, -2)
        return out
    RT = np.swapaxes(R, -1, -2)
    return np.concatenate([RT @ J[..., :3, :], RT @ J[..., 3:, :]], axis=-2)


def jacobian(mechanism: Mechanism, q, frame: str, relative_to: str | None = None,
             convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """Geometric Jacobian of ``frame`` relative to ``relative_to`` for joint values ``q``.

    Returns (6, nq), or (B, 6, nq) for a batch of configurations (B, nq). Columns are with respect to the
    full coordinate vector; for coupled mechanisms multiply by :meth:`Mechanism.coupling_jacobian` to get
    the Jacobian in the independent coordinates.
    """
    qf = mechanism.configuration(q)
    return jacobian_from_segments(mechanism, segment_poses(mechanism, qf), frame, relative_to, convention)


def frame_velocity(mechanism: Mechanism, q, qdot, frame: str, relative_to: str | None = None,
                   convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """Twist ``[v; w]`` (m/s, rad/s) of ``frame`` relative to ``relative_to`` for joint positions ``q``
    and rates ``qdot`` (arrays of length nq, or batches), in the given convention (7.2)."""
    J = jacobian(mechanism, q, frame, relative_to, convention)
    qd = np.asarray(qdot, dtype=float)
    if qd.shape[-1] != mechanism.nq:
        from .errors import InvalidConfiguration

        raise InvalidConfiguration(f"expected {mechanism.nq} joint rates, got {qd.shape[-1]}")
    return (J @ qd[..., None])[..., 0]
