"""Mass properties compiled into per-body and per-segment arrays (CLARAty 6.10), and the centre of mass.

:func:`mass_model` builds a :class:`MassModel` for a mechanism once and caches it beside the mechanism (a
weak mapping keyed by the mechanism object: the mechanism itself stays immutable and holds no cache). Its
arrays are read-only.

Centre of mass and its Jacobian are computed on the compiled segment tree (one segment per elementary
motion, see :mod:`mechanism_model_core.model`): with ``M_i`` the mass and ``H_i`` the first moment (world) of
everything carried by segment ``i`` and its descendants, the centre-of-mass Jacobian column of a revolute
segment is ``z_i x (H_i - M_i o_i) / M`` and of a prismatic one ``z_i M_i / M``; generalized gravity is
``-M J_com^T g`` (:mod:`.gravity`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..data import check_data, derived
from ..errors import MechanismModelError, UnknownBody, UnknownFrame
from ..kinematics import segment_poses
from ..model import Mechanism

__all__ = ["MassModel", "Payload", "mass_model", "center_of_mass", "com_jacobian", "total_mass",
           "tree_arrays"]


def _ro(a, dtype=float) -> np.ndarray:
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class TreeArrays:
    """The segment tree of a mechanism as the statics needs it (read from the compiled model in one place).

    ``parent`` (S,), ``coord`` (S,) coordinate index or -1, ``kind`` (S,) 0 ground / 1 revolute about z / 2
    prismatic along z, ``frame_seg`` (F,) and ``frame_T`` (F, 4, 4): frame ``f`` is
    ``T_ground_seg[frame_seg[f]] @ frame_T[f]``; ``frame_index`` maps names to ``f``."""

    parent: np.ndarray
    coord: np.ndarray
    kind: np.ndarray
    frame_seg: np.ndarray
    frame_T: np.ndarray
    frame_index: dict


def tree_arrays(mechanism: Mechanism) -> TreeArrays:
    c = mechanism.segment_tree
    idx = {n: mechanism.frame(n).index for n in mechanism.frame_names}
    return TreeArrays(c.seg_parent, c.seg_coord, c.seg_kind, c.frame_seg, c.frame_T, idx)


@dataclass(frozen=True, eq=False)
class Payload:
    """A point mass (kg) rigidly attached to ``frame`` at ``offset`` (m, in ``frame``'s axes): a tool, a
    grasped object, an instrument. Payloads are state, passed to each call, never stored on the model."""

    frame: str
    mass: float
    offset: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        m = float(self.mass)
        if not np.isfinite(m) or m < 0:
            raise MechanismModelError(f"payload at {self.frame!r}: mass must be finite and >= 0, got {self.mass!r}")
        off = np.asarray(self.offset, dtype=float).reshape(-1)
        if off.shape != (3,) or not np.all(np.isfinite(off)):
            raise MechanismModelError(f"payload at {self.frame!r}: offset must be 3 finite numbers")
        object.__setattr__(self, "mass", m)
        object.__setattr__(self, "offset", tuple(off))


class MassModel:
    """Read-only mass arrays of one mechanism.

    Per body (body order of :attr:`Mechanism.bodies`, ground first): ``body_mass`` (kg), ``body_com`` (m,
    body frame), ``body_inertia`` (kg m^2, about the centre of mass, body axes), ``body_segment`` (the
    compiled segment carrying it) and ``body_com_in_segment`` (m). Per segment: ``seg_mass`` and
    ``seg_moment`` (kg m, in the segment frame) of the bodies it carries, ``subtree`` (S, S) with
    ``subtree[i, j] = 1`` when segment ``j`` is ``i`` or below it, ``seg_subtree_mass``. ``total_mass``
    counts every body except the ground.
    """

    def __init__(self, mechanism: Mechanism):
        t = tree_arrays(mechanism)
        bodies = mechanism.bodies
        S = len(t.parent)
        m = np.array([b.mass.mass for b in bodies])
        m[0] = 0.0                                           # the ground carries nothing that moves
        com = np.array([b.mass.com for b in bodies])
        inertia = np.array([b.mass.inertia for b in bodies])
        bseg = np.array([t.frame_seg[t.frame_index[b.name]] for b in bodies], dtype=int)
        bT = np.array([t.frame_T[t.frame_index[b.name]] for b in bodies])
        com_seg = np.einsum("bij,bj->bi", bT[:, :3, :3], com) + bT[:, :3, 3]
        seg_mass = np.zeros(S)
        seg_moment = np.zeros((S, 3))
        np.add.at(seg_mass, bseg, m)
        np.add.at(seg_moment, bseg, m[:, None] * com_seg)
        sub = np.eye(S)
        for j in range(S - 1, 0, -1):                        # parents come before children
            p = int(t.parent[j])
            sub[p] += sub[j]
        sub = (sub > 0).astype(float)
        self.tree = t
        self.body_mass, self.body_com, self.body_inertia = _ro(m), _ro(com), _ro(inertia)
        self.body_segment, self.body_com_in_segment = _ro(bseg, int), _ro(com_seg)
        self.seg_mass, self.seg_moment = _ro(seg_mass), _ro(seg_moment)
        self.subtree = _ro(sub)
        self.seg_subtree_mass = _ro(sub @ seg_mass)
        self.total_mass = float(m.sum())
        self.body_index = {b.name: i for i, b in enumerate(bodies)}
        moving = np.flatnonzero(t.kind[1:] > 0) + 1
        self.moving = _ro(moving, int)
        self.moving_coord = _ro(t.coord[moving], int)
        self.moving_revolute = _ro(t.kind[moving] == 1, bool)
        self.nq = mechanism.nq
        self.sub_moving = _ro(sub[moving])
        self.sub_moving_mass = _ro(sub[moving] @ seg_mass)
        self.seg_hom = _ro(np.concatenate([seg_moment, seg_mass[:, None]], axis=1)[:, :, None])   # (S, 4, 1)
        self.any_prismatic = bool((~self.moving_revolute).any())
        self.V = _ro(lever_weights(self, seg_mass, seg_moment))
        #: every segment but the ground moves (so the moving ones are segments 1..S-1)
        self.moving_is_tail = bool(np.array_equal(moving, np.arange(1, S)))
        #: (segment, parent) from the leaves up, parents not the ground: adding each segment's value into its
        #: parent's in this order leaves subtree sums
        self.accumulate = tuple((j, int(t.parent[j])) for j in range(S - 1, 0, -1) if int(t.parent[j]) > 0)
        #: every coordinate drives one segment, in coordinate order: per-segment results are per-coordinate
        self.coords_in_order = bool(len(moving) == self.nq and np.array_equal(self.moving_coord,
                                                                               np.arange(self.nq)))


def lever_weights(mm: "MassModel", seg_mass, seg_moment) -> np.ndarray:
    """(k, 4S) weights with ``r = V @ P`` for ``P`` the segment poses' top rows stacked as (4S, 3)
    (``P[4s + b, a] = T_s[a, b]``): ``r_i = H_i - M_i o_i``, the first moment of moving segment ``i``'s
    subtree about its origin, in one product."""
    sub = mm.subtree[mm.moving]                                      # (k, S)
    k, S = sub.shape
    V = np.zeros((k, S, 4))
    V[:, :, :3] = sub[:, :, None] * np.asarray(seg_moment)[None, :, :]
    V[:, :, 3] = sub * np.asarray(seg_mass)[None, :]
    V[np.arange(k), mm.moving, 3] -= sub @ np.asarray(seg_mass)
    return V.reshape(k, 4 * S)


def mass_model(mechanism: Mechanism) -> MassModel:
    """The :class:`MassModel` of ``mechanism`` (built on first use, kept in its derived data: :mod:`..data`)."""
    return derived(mechanism, "statics.mass_model", MassModel)


def total_mass(mechanism: Mechanism, subtree: str | None = None) -> float:
    """Mass (kg) of the whole mechanism (the ground excluded) or of the bodies from ``subtree`` down."""
    mm = mass_model(mechanism)
    if subtree is None:
        return mm.total_mass
    return float(mm.body_mass[_subtree_bodies(mechanism, subtree)].sum())


def _subtree_bodies(mechanism: Mechanism, body: str) -> np.ndarray:
    mm = mass_model(mechanism)
    if body not in mm.body_index:
        raise UnknownBody(body, mechanism.body_names)
    out, stack = [], [body]
    while stack:
        b = stack.pop()
        out.append(mm.body_index[b])
        stack.extend(mechanism.children(b))
    return np.array(sorted(out), dtype=int)


def _segment_masses(mechanism: Mechanism, mm: MassModel, payloads: Sequence[Payload] | None,
                    subtree: str | None):
    """(seg_mass, seg_moment) with payloads added and, for a subtree, only its bodies."""
    if subtree is None:
        sm, sh = mm.seg_mass, mm.seg_moment
    else:
        sel = _subtree_bodies(mechanism, subtree)
        sm = np.zeros(len(mm.seg_mass))
        sh = np.zeros((len(mm.seg_mass), 3))
        np.add.at(sm, mm.body_segment[sel], mm.body_mass[sel])
        np.add.at(sh, mm.body_segment[sel], mm.body_mass[sel, None] * mm.body_com_in_segment[sel])
    if payloads:
        sm, sh = np.array(sm), np.array(sh)
        for p in payloads:
            if not isinstance(p, Payload):
                p = Payload(*p)
            f = mm.tree.frame_index.get(p.frame)
            if f is None:
                raise UnknownFrame(p.frame, mechanism.frame_names)
            s = int(mm.tree.frame_seg[f])
            T = mm.tree.frame_T[f]
            sm[s] += p.mass
            sh[s] += p.mass * (T[:3, :3] @ np.asarray(p.offset) + T[:3, 3])
    return sm, sh


def _weighted_columns(mm: MassModel, segs: np.ndarray, seg_mass, seg_moment):
    """``W`` (..., k, 3) over the moving segments ``mm.moving``: ``z x (H - M o)`` (revolute) or ``z M``
    (prismatic), with ``M``/``H`` the subtree mass and world first moment; and the world first moment of
    the whole tree (..., 3)."""
    R = segs[..., :3, :3]
    o = segs[..., :3, 3]
    h_world = (R @ seg_moment[:, :, None])[..., 0] + seg_mass[:, None] * o      # (..., S, 3)
    sub = mm.subtree[mm.moving]
    H = sub @ h_world                                                              # (..., k, 3)
    M = sub @ seg_mass                                                             # (k,)
    z = R[..., :, 2].take(mm.moving, axis=-2)
    om = o[..., mm.moving, :]
    r = H - M[:, None] * om
    W = np.empty(np.broadcast_shapes(z.shape, r.shape))
    W[..., 0] = z[..., 1] * r[..., 2] - z[..., 2] * r[..., 1]
    W[..., 1] = z[..., 2] * r[..., 0] - z[..., 0] * r[..., 2]
    W[..., 2] = z[..., 0] * r[..., 1] - z[..., 1] * r[..., 0]
    if not mm.moving_revolute.all():
        pri = ~mm.moving_revolute
        W[..., pri, :] = z[..., pri, :] * M[pri, None]
    return W, h_world.sum(axis=-2)


def _segments(mechanism: Mechanism, q):
    qf = mechanism.configuration(q)
    return qf, segment_poses(mechanism, qf)


def center_of_mass(mechanism: Mechanism, q, subtree: str | None = None, payloads=None, *,
                   data=None) -> np.ndarray:
    """Centre of mass (m, ground frame) of the mechanism, or of the bodies from body ``subtree`` down, with
    optional :class:`Payload` point masses; shape (3,) or (B, 3) for a batch of configurations."""
    if data is not None:
        check_data(mechanism, data)
    mm = mass_model(mechanism)
    sm, sh = _segment_masses(mechanism, mm, payloads, subtree)
    M = float(sm.sum())
    if M <= 0:
        raise MechanismModelError(f"{'subtree ' + repr(subtree) if subtree else 'the mechanism'} has no mass")
    _, segs = _segments(mechanism, q)
    R = segs[..., :3, :3]
    h = (R @ sh[:, :, None])[..., 0] + sm[:, None] * segs[..., :3, 3]
    return h.sum(axis=-2) / M


def com_jacobian(mechanism: Mechanism, q, subtree: str | None = None, payloads=None,
                 independent: bool = False, *, data=None) -> np.ndarray:
    """Jacobian (3, nq) of :func:`center_of_mass` (ground frame) with respect to the full joint coordinates,
    or (B, 3, nq) for a batch; with ``independent=True`` and a coupled mechanism, with respect to the
    independent coordinates (single configuration)."""
    if data is not None:
        check_data(mechanism, data)
    mm = mass_model(mechanism)
    sm, sh = _segment_masses(mechanism, mm, payloads, subtree)
    M = float(sm.sum())
    if M <= 0:
        raise MechanismModelError(f"{'subtree ' + repr(subtree) if subtree else 'the mechanism'} has no mass")
    qf, segs = _segments(mechanism, q)
    W, _ = _weighted_columns(mm, segs, sm, sh)
    Jt = np.zeros(segs.shape[:-3] + (mm.nq, 3))
    Jt[..., mm.moving_coord, :] = W / M             # each coordinate drives exactly one segment
    J = np.swapaxes(Jt, -1, -2)
    if independent and mechanism.couplings:
        if qf.ndim != 1:
            raise MechanismModelError("independent=True takes one configuration")
        J = J @ mechanism.coupling_jacobian(qf)
    return J

