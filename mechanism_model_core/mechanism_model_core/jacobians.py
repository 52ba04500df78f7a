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
    lin = cross_rows(z, d)
    ang = z.copy()
    pri = kinds == 2
    if pri.any():
        lin[..., pri, :] = z[..., pri, :]
        ang[..., pri, :] = 0.0
    J[..., :3, cols] = np.swapaxes(lin, -1, -2)
    J[..., 3:, cols] = np.swapaxes(ang, -1, -2)
    return J, Tf


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


def jacobian_from_segments(mechanism: Mechanism, segs, frame: str, relative_to: str | None = None,
                           convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian` for a precomputed forward pass (lets a solver reuse one pass).

    ``segs`` is a :class:`~.kinematics.ForwardKinematics` result (fastest) or the array of
    :func:`~.kinematics.segment_poses`.
    """
    if isinstance(segs, _kin.ForwardKinematics):
        return jacobian_from_fk(segs, frame, relative_to, convention)
    conv = Convention.parse(convention)
    Jf, Tf = _lwa_columns(mechanism, segs, frame)
    if relative_to is None or relative_to == mechanism.ground:
        return _finish(Jf, Tf, None, None, conv)
    Jr, Tr = _lwa_columns(mechanism, segs, relative_to)
    return _finish(Jf, Tf, Jr, Tr, conv)


# ------------------------------------------------------------------ fast paths on the compiled passes
def _single_columns(out, fj, nq: int, world: bool) -> np.ndarray:
    """6 x nq Jacobian of one frame relative to the ground from the one-configuration pass output.

    Column of a revolute ancestor with axis z and origin o: angular z; linear z x (p - o) for the frame
    origin p (LOCAL_WORLD_ALIGNED) or o x z (WORLD). A prismatic ancestor: linear z, angular 0. The pass
    carries every vector in three cyclic orders P1, P2, so each cross product is two elementwise products:
    ``V`` holds z, P1 z, P2 z, P2 o, P1 o, P2 p, P1 p (each 3 x k), and
    ``z x d = P1 z * P2 d - P2 z * P1 d``.
    """
    J = np.empty((6, nq)) if fj.full else np.zeros((6, nq))
    if fj.cols.size == 0:
        return J
    V = out.take(fj.index)
    if world:
        prod = V[3:5] * V[1:3]           # (P2 o * P1 z, P1 o * P2 z)
        lo, hi = prod[1], prod[0]
    else:
        prod = V[5:7] - V[3:5]           # (P2 d, P1 d) with d = p - o
        prod *= V[1:3]                   # (P1 z * P2 d, P2 z * P1 d)
        lo, hi = prod[0], prod[1]
    sl = fj.cols_slice
    if sl is not None:
        np.subtract(lo, hi, out=J[:3, sl])
        J[3:, sl] = V[0]
    else:
        J[:3, fj.cols] = lo - hi
        J[3:, fj.cols] = V[0]
    if fj.prismatic is not None:
        pc = fj.cols[fj.prismatic]
        J[:3, pc] = V[0][:, fj.prismatic]
        J[3:, pc] = 0.0
    return J


def _batch_columns(c, Tb, f: int, nq: int, B: int):
    """(B, 6, nq) LOCAL_WORLD_ALIGNED Jacobian of frame ``f`` relative to the ground, and the frame's pose
    components, from the batch pass (see :func:`.kinematics._batch_pass` for the layout). The columns are
    computed as rows over the configurations, then turned into (B, 6, nq) by one copy."""
    W = _kin._batch_frame_comps(c, Tb, f)
    nch, _, bc = W.shape
    fj = c.single.jac[f]
    anc = c.seg_ancestors[int(c.frame_seg[f])]
    k = anc.size
    if k == 0:
        return np.zeros((B, 6, nq)), W
    if anc[-1] - anc[0] + 1 == k:                     # a chain: a view, no copy
        A = Tb[anc[0] - 1:anc[-1], :, 6:]
    else:
        A = Tb[anc - 1, :, 6:]                          # (k, n_chunks, 6, chunk): axis z, origin
    Z = A[:, :, :3]
    D = W[None, :, 9:] - A[:, :, 3:]
    G = np.empty((6, k, nch, bc))                       # rows [linear; angular] x ancestor x configuration
    for i, (a, b) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.multiply(Z[:, :, a], D[:, :, b], out=G[i])
        G[i] -= Z[:, :, b] * D[:, :, a]
    G[3:] = Z.transpose(2, 0, 1, 3)
    if fj.prismatic is not None:
        G[:3, fj.prismatic] = Z[fj.prismatic].transpose(2, 0, 1, 3)
        G[3:, fj.prismatic] = 0.0
    cols = fj.cols
    if fj.full and fj.cols_slice == slice(0, nq):
        J = np.ascontiguousarray(G.transpose(2, 3, 0, 1)).reshape(nch * bc, 6, nq)
    else:
        J = np.zeros((nch, bc, 6, nq))
        J[..., cols] = G.transpose(2, 3, 0, 1)
        J = J.reshape(nch * bc, 6, nq)
    return J[:B], W


_CONVENTIONS = {c: c for c in Convention}
_CONVENTIONS.update({c.value: c for c in Convention})


def _fast_jacobian(mechanism: Mechanism, q: np.ndarray, out, tb, frame: str, relative_to, convention):
    conv = _CONVENTIONS.get(convention) if isinstance(convention, str) else None
    if conv is None:
        conv = Convention.parse(convention)
    ref = mechanism._frames.get(frame)
    if ref is None:
        ref = mechanism.frame(frame)
    c = mechanism._compiled
    nq = c.nq
    ground = relative_to is None or relative_to == mechanism.ground
    if out is not None:
        fj = c.single.jac[ref.index]
        if ground:
            if conv is Convention.LOCAL_WORLD_ALIGNED:
                return _single_columns(out, fj, nq, False)
            if conv is Convention.WORLD:
                return _single_columns(out, fj, nq, True)
            J = _single_columns(out, fj, nq, False)
            Rt = out.take(c.single.frame_flat[ref.index, :3, :3]).T
            return np.matmul(Rt, J.reshape(2, 3, nq)).reshape(6, nq)
        rref = mechanism.frame(relative_to)
        Jf = _single_columns(out, fj, nq, False)
        Jr = _single_columns(out, c.single.jac[rref.index], nq, False)
        flat = c.single.frame_flat
        return _finish(Jf, out.take(flat[ref.index]), Jr, out.take(flat[rref.index]), conv)
    B = q.shape[0]
    Jf, Wf = _batch_columns(c, tb, ref.index, nq, B)
    if ground and conv is Convention.LOCAL_WORLD_ALIGNED:
        return Jf
    Tf = _kin._comps_to_poses(Wf, B)
    if ground:
        return _finish(Jf, Tf, None, None, conv)
    rref = mechanism.frame(relative_to)
    Jr, Wr = _batch_columns(c, tb, rref.index, nq, B)
    return _finish(Jf, Tf, Jr, _kin._comps_to_poses(Wr, B), conv)


def jacobian_from_fk(fk, frame: str, relative_to: str | None = None,
                     convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """:func:`jacobian` reusing the pass of a :class:`~.kinematics.ForwardKinematics` result."""
    if fk._out is None and fk._tb is None:
        return jacobian_from_segments(fk.mechanism, fk._segs, frame, relative_to, convention)
    return _fast_jacobian(fk.mechanism, fk.q, fk._out, fk._tb, frame, relative_to, convention)


def jacobian(mechanism: Mechanism, q, frame: str, relative_to: str | None = None,
             convention=Convention.LOCAL_WORLD_ALIGNED) -> np.ndarray:
    """Geometric Jacobian of ``frame`` relative to ``relative_to`` for joint values ``q``.

    Returns (6, nq), or (B, 6, nq) for a batch of configurations (B, nq). Columns are with respect to the
    full coordinate vector; for coupled mechanisms multiply by :meth:`Mechanism.coupling_jacobian` to get
    the Jacobian in the independent coordinates. To get poses and Jacobians of one configuration from a
    single forward pass, use ``fk = forward_kinematics(mechanism, q)`` then ``fk.pose(...)`` and
    ``fk.jacobian(...)``.
    """
    qf = _kin._configuration(mechanism, q)
    c = mechanism._compiled
    if qf.ndim == 1:
        return _fast_jacobian(mechanism, qf, _kin._single_pass(c, qf), None, frame, relative_to,
                              convention)
    return _fast_jacobian(mechanism, qf, None, _kin._batch_pass(c, qf), frame, relative_to, convention)


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
