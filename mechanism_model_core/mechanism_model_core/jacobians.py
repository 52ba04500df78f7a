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

from . import kinematics as _kin
from .errors import InvalidConfiguration, MechanismModelError
from .model import Mechanism
from .spatial import cross_rows, relative_motion


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


def _finish(Jf, Tf, Jr, Tr, conv: Convention) -> np.ndarray:
    """Apply ``relative_to`` and the reference convention to world-aligned columns.

    ``Jf``/``Tf``: LOCAL_WORLD_ALIGNED Jacobian (..., 6, nq) and pose of the frame relative to the ground;
    ``Jr``/``Tr`` the same for the reference frame, or None for the ground.
    """
    if Jr is None:
        R = Tf[..., :3, :3]
        p = Tf[..., :3, 3]
        J = Jf
    else:
        T, J = relative_motion(Tf, Jf, Tr, Jr)
        R = T[..., :3, :3]
        p = T[..., :3, 3]
    if conv is Convention.LOCAL_WORLD_ALIGNED:
        return J
    if conv is Convention.WORLD:
        out = J.copy()
        # v_origin_of_r = v_p + w x (0 - p) = v_p - w x p  -> column-wise: lin - ang x p
        out[..., :3, :] = J[..., :3, :] - cross_rows(np.swapaxes(J[..., 3:, :], -1, -2),
                                                 p[..., None, :]).swapaxes(-1, -2)
        return out
    RT = np.swapaxes(R, -1, -2)
    return np.concatenate([RT @ J[..., :3, :], RT @ J[..., 3:, :]], axis=-2)


_CONVENTIONS = {c: c for c in Convention}
_CONVENTIONS.update({c.value: c for c in Convention})


def _jacobian(fk, frame: str, relative_to, convention) -> np.ndarray:
    conv = _CONVENTIONS.get(convention) if isinstance(convention, str) else None
    if conv is None:
        conv = Convention.parse(convention)
    m = fk.mechanism
    if relative_to is None or relative_to == m.ground:
        if conv is Convention.LOCAL_WORLD_ALIGNED:
            return fk.ground_jacobian(frame)
        if conv is Convention.WORLD:
            return fk.ground_jacobian(frame, "ground")
        J = fk.ground_jacobian(frame)
        Rt = np.swapaxes(fk.rotation(frame), -1, -2)
        return np.concatenate([Rt @ J[..., :3, :], Rt @ J[..., 3:, :]], axis=-2)
    return _finish(fk.ground_jacobian(frame), fk.pose(frame), fk.ground_jacobian(relative_to),
                   fk.pose(relative_to), conv)


def jacobian_from_segments(mechanism: Mechanism, fk, frame: str, relative_to: str | None = None,
                           convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian_from_fk` (kept for callers of the earlier name; ``fk`` is a
    :class:`~.kinematics.ForwardKinematics` of ``mechanism``)."""
    if not isinstance(fk, _kin.ForwardKinematics) or fk.mechanism is not mechanism:
        raise MechanismModelError("jacobian_from_segments needs a ForwardKinematics result of the mechanism")
    return _jacobian(fk, frame, relative_to, convention)


def jacobian_from_fk(fk, frame: str, relative_to: str | None = None,
                     convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian` reusing the pass of a :class:`~.kinematics.ForwardKinematics` result."""
    return _jacobian(fk, frame, relative_to, convention)


def jacobian(mechanism: Mechanism, q, frame: str, relative_to: str | None = None,
             convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """Geometric Jacobian of ``frame`` relative to ``relative_to`` for joint values ``q``.

    Returns (6, nq), or (B, 6, nq) for a batch of configurations (B, nq). Columns are with respect to the
    full coordinate vector; for coupled mechanisms multiply by :meth:`Mechanism.coupling_jacobian` to get
    the Jacobian in the independent coordinates. To get poses and Jacobians of one configuration from a
    single forward pass, use ``fk = forward_kinematics(mechanism, q)`` then ``fk.pose(...)`` and
    ``fk.jacobian(...)``.
    """
    return _jacobian(_kin.forward_kinematics(mechanism, q), frame, relative_to, convention)


def frame_velocity(mechanism: Mechanism, q, qdot, frame: str, relative_to: str | None = None,
                   convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """Twist ``[v; w]`` (m/s, rad/s) of ``frame`` relative to ``relative_to`` for joint positions ``q``
    and rates ``qdot``, in the given convention (7.2). For one configuration ``qdot`` may be an array of
    length nq, the independent rates only, or a ``{coordinate: rate}`` mapping (coupled rates follow, see
    :meth:`Mechanism.joint_rates`); for a batch of configurations, an array (B, nq)."""
    qf = mechanism.configuration(q)
    J = jacobian(mechanism, qf, frame, relative_to, convention)
    if qf.ndim == 1:
        qd = mechanism.joint_rates(qf, qdot)
    else:
        qd = np.asarray(qdot, dtype=float)
        if qd.shape[-1] != mechanism.nq:
            raise InvalidConfiguration(f"expected {mechanism.nq} joint rates, got {qd.shape[-1]}")
    return (J @ qd[..., None])[..., 0]
