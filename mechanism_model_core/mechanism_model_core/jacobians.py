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

import numpy as np

from . import kinematics as _kin
from .kinematics import LOCAL, LOCAL_WORLD_ALIGNED, WORLD, Convention  # noqa: F401  (public here too)
from .kinematics import ground_jacobian as _ground_jacobian
from .errors import InvalidConfiguration, MechanismModelError
from .model import Mechanism, as_real_array

_LWA, _WORLD = Convention.LOCAL_WORLD_ALIGNED, Convention.WORLD


def jacobian_from_segments(mechanism: Mechanism, fk, frame: str, relative_to: str | None = None,
                           convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian_from_fk` (kept for callers of the earlier name; ``fk`` is a
    :class:`~.kinematics.ForwardKinematics` of ``mechanism``)."""
    if not isinstance(fk, _kin.ForwardKinematics) or fk.mechanism is not mechanism:
        raise MechanismModelError("jacobian_from_segments needs a ForwardKinematics result of the mechanism")
    return _kin.frame_jacobian(fk, frame, relative_to, convention)


def jacobian_from_fk(fk, frame: str, relative_to: str | None = None,
                     convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian` reusing the pass of a :class:`~.kinematics.ForwardKinematics` result."""
    return _kin.frame_jacobian(fk, frame, relative_to, convention)


def jacobian(mechanism: Mechanism, q, frame: str, relative_to: str | None = None,
             convention=Convention.LOCAL_WORLD_ALIGNED, *, data=None) -> np.ndarray:
    """Geometric Jacobian of ``frame`` relative to ``relative_to`` for joint values ``q``.

    Returns (6, nq), or (B, 6, nq) for a batch of configurations (B, nq). Columns are with respect to the
    full coordinate vector; for coupled mechanisms multiply by :meth:`Mechanism.coupling_jacobian` to get
    the Jacobian in the independent coordinates. To get poses and Jacobians of one configuration from a
    single forward pass, use ``fk = forward_kinematics(mechanism, q)`` then ``fk.pose(...)`` and
    ``fk.jacobian(...)``. ``data``: the mechanism's :class:`~.data.Data` (``data_of(mechanism)``, checked).
    """
    if relative_to is None:                      # relative to the ground: kept lean
        if convention is _LWA:
            return _ground_jacobian(mechanism, q, frame, data=data)
        if convention is _WORLD or (type(convention) is str and convention == "WORLD"):
            return _ground_jacobian(mechanism, q, frame, "ground", data=data)
    return _kin.frame_jacobian(_kin.forward_kinematics(mechanism, q, data=data), frame, relative_to, convention)


def frame_velocity(mechanism: Mechanism, q, qdot, frame: str, relative_to: str | None = None,
                   convention=Convention.LOCAL_WORLD_ALIGNED, *, data=None) -> np.ndarray:
    """Twist ``[v; w]`` (m/s, rad/s) of ``frame`` relative to ``relative_to`` for joint positions ``q``
    and rates ``qdot``, in the given convention (7.2). For one configuration ``qdot`` may be an array of
    length nq, the independent rates only, or a ``{coordinate: rate}`` mapping (coupled rates follow, see
    :meth:`Mechanism.joint_rates`); for a batch of configurations, an array (B, nq)."""
    qf = mechanism.configuration(q)
    J = jacobian(mechanism, qf, frame, relative_to, convention, data=data)
    if qf.ndim == 1:
        qd = mechanism.joint_rates(qf, qdot)
    else:
        qd = as_real_array(qdot, "joint rates")
        if qd.ndim != 2 or qd.shape != (qf.shape[0], mechanism.nq):
            raise InvalidConfiguration(f"expected joint rates of shape ({qf.shape[0]}, {mechanism.nq}) for the "
                                       f"batch, got {qd.shape}")
        if not np.all(np.isfinite(qd)):
            raise InvalidConfiguration("the joint rates: not every value is finite")
    return (J @ qd[..., None])[..., 0]


