"""The machinery behind :mod:`.queries` (one query at one configuration or a batch): the result types
(:class:`Contact`, :class:`DistanceResult`, re-exported by :mod:`.queries` and the package), the posed
scene of one configuration with coal transforms made on demand, the tree descent of the bounding-shape
hierarchies (4.15.1.2), the broad phase (axis-aligned boxes of every shape from one product, pair gaps, the
single-configuration arrays reused call after call) and the environment's per-thread coal data.

Frames: ground frame; distances in metres, negative when shapes overlap (see :mod:`.queries`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data import per_thread
from ..kinematics import forward_kinematics, single_pass_output
from .coal_backend import transform as _tf
from .model import collision_data, collision_model
from .environment import EnvironmentData


RESOLUTIONS = ("fine", "coarse", "leaves")


@dataclass(frozen=True)
class Contact:
    """One contact between shape ``shape_a`` of body ``body_a`` and ``shape_b`` of ``body_b`` (an obstacle
    name when ``environment`` is True): ``point`` (ground frame, m), unit ``normal`` from a towards b and
    the penetration ``depth`` (m, positive when overlapping)."""

    body_a: str
    body_b: str
    shape_a: str
    shape_b: str
    point: np.ndarray
    normal: np.ndarray
    depth: float
    environment: bool = False


@dataclass(frozen=True)
class DistanceResult:
    """The minimum ``distance`` (m; negative: penetration depth) between ``body_a`` and ``body_b`` (an
    obstacle when ``environment``), reached at ``point_a`` on ``shape_a`` and ``point_b`` on ``shape_b``
    (witness points, ground frame). ``distance`` is ``inf`` and the names None when no pair was checked."""

    distance: float
    body_a: str | None = None
    body_b: str | None = None
    shape_a: str | None = None
    shape_b: str | None = None
    point_a: np.ndarray | None = None
    point_b: np.ndarray | None = None
    environment: bool = False

    @property
    def normal(self) -> np.ndarray | None:
        """Unit vector from ``point_a`` to ``point_b`` (flipped when penetrating, so it always points from
        a out towards b); None when undefined."""
        if self.point_a is None:
            return None
        v = self.point_b - self.point_a
        n = float(np.linalg.norm(v))
        if n < 1e-12:
            return None
        return v / n * (1.0 if self.distance >= 0 else -1.0)


class _Scene:
    """One configuration: world poses of the model's bodies, coal transforms made on demand. Nodes are
    object indices (>= 0) of the robot, and ``-1 - k`` for obstacle ``k`` of the environment."""

    __slots__ = ("model", "data", "T_obj", "env", "edata", "margin", "_tf")

    def __init__(self, model, data, T_obj, env, edata, margin):
        self.model, self.data, self.T_obj = model, data, T_obj
        self.env, self.edata, self.margin = env, edata, margin
        self._tf = {}

    def world(self, i: int) -> np.ndarray:
        """``T_ground_shape`` (the coal frame of the shape)."""
        if i >= 0:
            off = self.data.offsets[i]
            return self.T_obj[i] if off is None else self.T_obj[i] @ off
        return self.edata.poses[-1 - i]

    def tf(self, i: int):
        t = self._tf.get(i)
        if t is None:
            t = self._tf[i] = _tf(self.world(i)) if i >= 0 else self.edata.tf[-1 - i]
        return t

    def geom(self, i):
        return self.data.geoms[i] if i >= 0 else self.edata.geoms[-1 - i]

    def pad(self, i) -> float:
        return self.model.objects[i].padding if i >= 0 else self.env.obstacles[-1 - i].padding

    def children(self, i):
        return self.model.objects[i].children if i >= 0 else ()

    def level(self, i):
        return self.model.objects[i].level if i >= 0 else 0

    def name(self, i):
        return self.model.objects[i].name if i >= 0 else self.env.obstacles[-1 - i].name

    def owner(self, i):
        return self.model.objects[i].body if i >= 0 else self.env.obstacles[-1 - i].name

    def collide(self, i, j, contacts=None) -> bool:
        d = self.data
        req = d.creq_contacts if contacts is not None else d.creq
        m = self.margin + self.pad(i) + self.pad(j)
        if req.security_margin != m:
            req.security_margin = m
        res = d.cres
        res.clear()
        tiles = self.edata.tiles[-1 - j] if j < 0 else None
        if tiles is not None:       # a height field, tile by tile (height_field_tiles)
            found = tiles.collide(self.geom(i), self.tf(i), self.world(i), req, res)
            if found and contacts is not None:
                for pos, normal, pen in found:
                    contacts.append(Contact(self.owner(i), self.owner(j), self.name(i), self.name(j), pos,
                                            normal, -pen, True))
            return bool(found)
        if i >= 0 and j >= 0:
            key = (i, j)
            f = d.collide_fn.get(key)
            if f is None:
                f = d.collide_fn[key] = d.coal.ComputeCollision(d.geoms[i], d.geoms[j])
            f(self.tf(i), self.tf(j), req, res)
        else:
            d.coal.collide(self.geom(i), self.tf(i), self.geom(j), self.tf(j), req, res)
        hit = res.isCollision()
        if hit and contacts is not None:
            for k in range(res.numContacts()):
                c = res.getContact(k)
                contacts.append(Contact(self.owner(i), self.owner(j), self.name(i), self.name(j),
                                        np.array(c.pos), np.array(c.normal), float(-c.penetration_depth),
                                        j < 0))
        return hit

    def distance(self, i, j):
        """``(signed distance less the paddings, witness on i, witness on j)``."""
        d = self.data
        pads = self.pad(i) + self.pad(j)
        tiles = self.edata.tiles[-1 - j] if j < 0 else None
        if tiles is not None:    # a height field: penetration from collide, else distance to its surface
            contacts = []
            if self.collide(i, j, contacts) and contacts:
                c = contacts[0]
                p1 = c.point - 0.5 * c.depth * c.normal
                return -c.depth - pads, p1 + c.depth * c.normal, p1
            dist, p1, p2 = tiles.distance(self.geom(i), self.tf(i), self.world(i), d.dreq, d.dres)
            return dist - pads, p1, p2
        res = d.dres
        res.clear()
        if i >= 0 and j >= 0:
            key = (i, j)
            f = d.distance_fn.get(key)
            if f is None:
                f = d.distance_fn[key] = d.coal.ComputeDistance(d.geoms[i], d.geoms[j])
            f(self.tf(i), self.tf(j), d.dreq, res)
        else:
            d.coal.distance(self.geom(i), self.tf(i), self.geom(j), self.tf(j), d.dreq, res)
        return res.min_distance - pads, np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())


def _tree_collide(sc: _Scene, ra, rb, resolution: str, contacts=None) -> bool:
    """Whether the trees under roots ``ra`` and ``rb`` collide at ``resolution``; with ``contacts`` (a
    list) every contact of the finest colliding pairs is appended and the search goes on."""
    if resolution == "leaves":
        la = [n for r in ra for n in _leaves(sc, r)]
        lb = [n for r in rb for n in _leaves(sc, r)]
        stack = [(a, b) for a in la for b in lb]
    else:
        stack = [(a, b) for a in ra for b in rb]
    hit = False
    while stack:
        a, b = stack.pop()
        ga, gb = sc.geom(a) is not None, sc.geom(b) is not None
        final_a = ga and (resolution != "fine" or not sc.children(a))
        final_b = gb and (resolution != "fine" or not sc.children(b))
        if ga and gb:
            if not sc.collide(a, b, contacts if final_a and final_b else None):
                continue
            if final_a and final_b:
                hit = True
                if contacts is None:
                    return True
                continue
        if not final_a and (final_b or sc.level(a) <= sc.level(b)):
            stack.extend((c, b) for c in sc.children(a))
        elif not final_b:
            stack.extend((a, c) for c in sc.children(b))
    return hit


def _leaves(sc: _Scene, i):
    if i < 0:
        return [i]
    kids = sc.children(i)
    if not kids:
        return [i] if sc.geom(i) is not None else []
    return [n for c in kids for n in _leaves(sc, c)]


def _tree_distance(sc: _Scene, ra, rb, resolution: str, best):
    """Lower ``best`` = (d, a, b, pa, pb) with the closest pair under the roots (branch and bound: a
    parent's distance is a lower bound of its children's)."""
    if resolution == "leaves":
        stack = [(a, b) for r in ra for a in _leaves(sc, r) for s in rb for b in _leaves(sc, s)]
    else:
        stack = [(a, b) for a in ra for b in rb]
    while stack:
        a, b = stack.pop()
        ga, gb = sc.geom(a) is not None, sc.geom(b) is not None
        final_a = ga and (resolution != "fine" or not sc.children(a))
        final_b = gb and (resolution != "fine" or not sc.children(b))
        if ga and gb:
            d, pa, pb = sc.distance(a, b)
            if d >= best[0]:
                continue
            if final_a and final_b:
                best = (d, a, b, pa, pb)
                continue
        if not final_a and (final_b or sc.level(a) <= sc.level(b)):
            stack.extend((c, b) for c in sc.children(a))
        elif not final_b:
            stack.extend((a, c) for c in sc.children(b))
    return best


# ---------------------------------------------------------------------------------------------- setup
def _environment_data(env):
    """The coal data of ``env`` for this thread (coal objects are not shared between threads): a per-thread
    slot of the environment's derived data (:mod:`..data`), built once per environment and thread, and
    dropped with either."""
    return per_thread(env, "collision.environment_data", lambda: EnvironmentData(env))


def _check_margin(margin) -> float:
    m = float(margin)
    if not math.isfinite(m) or m < 0:
        raise ValueError(f"margin must be finite and non-negative, got {margin!r}")
    return m


def _prepare(mech_or_model, q, environment, resolution):
    """Model, per-thread data, the full ``q``, the segment poses (..., S, 4, 4) and the environment data."""
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be one of {RESOLUTIONS}, got {resolution!r}")
    model = collision_model(mech_or_model)
    data = collision_data(model)
    fk = forward_kinematics(model.mechanism, q)      # validates q (couplings filled)
    edata = _environment_data(environment) if environment is not None and len(environment) else None
    return model, data, fk.q, fk.segments, edata


def _shape_poses(model, segs):
    """Every shape's pose ``T_ground_shape = T_ground_segment @ T_segment_shape``, (..., N, 4, 4)."""
    return np.matmul(segs.take(model.obj_seg, axis=segs.ndim - 3), model.obj_P)


# ---------------------------------------------------------------------------------------------- broad phase
def _world_boxes(model, segs):
    """The corners of every shape's axis-aligned box in the ground frame, from the segment poses ``segs``
    ((..., S, 4, 4), forward kinematics), flat (..., S * 3 * 2K): index with ``model.obj_lo_idx`` /
    ``obj_hi_idx`` or ``rp_idx4``. Padding included; unbounded shapes have an empty box here (see
    :func:`_pair_sides`). One product for every shape."""
    T3 = segs[..., :3, :]
    Y = np.matmul(np.concatenate((T3, np.abs(T3)), axis=-1), model.obj_V)
    return Y.reshape(Y.shape[:-3] + (-1,))


def _pair_sides(model, Y):
    """The one-sided gaps ``lo_a - hi_b`` and ``lo_b - hi_a`` of every checked top-shape pair (aligned with
    ``model.rp_a``/``rp_b``) along every ground axis, from the boxes ``Y`` of :func:`_world_boxes`, shape
    (..., 6, P): rows (x, a-b), (x, b-a), (y, ...), .... A pair's boxes overlap iff all six are <= 0;
    the larger of an axis's two is the gap along that axis. Pairs with an unbounded shape get ``-inf``."""
    Z = Y.take(model.rp_idx2, axis=-1)                  # (..., 2, 6P): one gather
    d = np.subtract(Z[..., 0, :], Z[..., 1, :])
    d = d.reshape(d.shape[:-1] + (6, -1))
    if model.rp_any_unbounded:
        d[..., model.rp_unbounded] = -np.inf
    return d


def _single_sides(model, data, segs):
    """:func:`_world_boxes` and :func:`_pair_sides` of one configuration, written into this thread's
    reused arrays (the hot path of single queries): ``(Y, D)``, D of shape (6, P)."""
    T3 = segs[:, :3, :]
    W = data.buf_W
    W[..., :4] = T3
    np.abs(T3, out=W[..., 4:])
    Y = np.matmul(W, model.obj_V, out=data.buf_Y).reshape(-1)
    Z = Y.take(model.rp_idx2, out=data.buf_Z)
    D = np.subtract(Z[0], Z[1], out=data.buf_D).reshape(6, -1)
    if model.rp_any_unbounded:
        D[:, model.rp_unbounded] = -np.inf
    return Y, D


def _single_output(model, q):
    """``(q, out)``: the full joint values (validated, couplings filled) and, for one configuration, the
    raw output of the kinematics pass (read with ``model.w_idx``, ``pose_idx``, ``seg_idx``); ``out`` is
    None for a batch."""
    qq = math.inf
    if type(q) is np.ndarray and q.dtype is _F64 and q.ndim == 1 and q.shape[0] == model.nq:
        qq = float(q.dot(q))
    if not math.isfinite(qq):
        q = model.mechanism.configuration(q)
        if q.ndim != 1:
            return q, None
        qq = math.inf
    return q, single_pass_output(model.mechanism, q, qq)


_F64 = np.dtype(np.float64)
_ONES3 = np.ones(3)
_max_reduce, _less_equal = np.maximum.reduce, np.less_equal


def _single_boxes(model, data, out):
    """:func:`_single_sides` straight from the kinematics pass output ``out`` (no segment poses made):
    one gather, one abs, one product, one gather, one difference, all into this thread's arrays."""
    W = data.buf_W
    out.take(model.w_idx, out=W, mode="clip")
    np.abs(data.buf_W_abs, out=data.buf_W_abs)
    np.matmul(W, model.obj_V, out=data.buf_Y)
    Y = data.buf_Y_flat
    Y.take(model.rp_idx2, out=data.buf_Z, mode="clip")
    np.subtract(data.buf_Z0, data.buf_Z1, out=data.buf_D)
    D = data.buf_D6
    if model.rp_any_unbounded:
        D[:, model.rp_unbounded] = -np.inf
    return Y, D


def _place_all(model, data, out):
    """Every shape's pose ``T_ground_shape[:3]`` into ``data.buf_T3`` (viewed by ``data.tf_R``/``tf_t``)
    from the kinematics pass output: one gather, one product."""
    out.take(model.pose_idx, out=data.buf_G, mode="clip")
    np.matmul(data.buf_G, model.obj_P, out=data.buf_T3)


def _overlapping(model, Y, margin):
    """Boolean (..., P): the world boxes of the pair are within ``margin`` on every axis (conservative: a
    pair closer than ``margin`` is always among them)."""
    return _pair_sides(model, Y).max(axis=-2) <= margin


def _gaps(model, Y):
    """Lower bounds of the pair distances (0 where the boxes overlap), (..., P)."""
    d = _pair_sides(model, Y)
    s = np.maximum(d.reshape(d.shape[:-2] + (3, 2, -1)).max(axis=-2), 0.0)
    s *= s
    return np.sqrt(s.sum(axis=-2))


def _env_gaps(model, Y, edata):
    """Lower bounds of the distance of every (broad shape, obstacle) pair, (..., len(broad_objects), K)."""
    o = model.broad_objects
    lo, hi = Y[..., model.obj_lo_idx[o]][..., None, :], Y[..., model.obj_hi_idx[o]][..., None, :]
    unb = model.obj_unbounded[o][:, None, None]
    lo, hi = np.where(unb, -np.inf, lo), np.where(unb, np.inf, hi)
    sep = np.maximum(np.maximum(edata.lo - hi, lo - edata.hi), 0.0)
    return np.sqrt((sep * sep).sum(axis=-1))


# ---------------------------------------------------------------------------------------------- narrow phase
class _Direct:
    """The narrow phase of direct top-shape pairs of one configuration (segment poses ``segs``): reusable
    coal transforms, set only for the shapes that are tested; one cached collision or distance functor
    per pair."""

    __slots__ = ("model", "data", "segs", "placed", "margin")

    def __init__(self, model, data, segs, margin):
        self.model, self.data, self.segs, self.margin = model, data, segs, margin
        self.placed = set()
        data.cres.clear()
        data.creq.security_margin = margin

    def _place(self, i):
        m, d = self.model, self.data
        if self.segs is None:       # poses already in the data's arrays (_place_all)
            d.tfs[i].setTransform(d.tf_R[i], d.tf_t[i])
        else:
            T = self.segs[m.obj_seg_list[i]].dot(m.obj_P[i])
            d.tfs[i].setTransform(T[:3, :3], T[:3, 3])
        self.placed.add(i)

    def _placed_pair(self, k: int):
        """The object indices of direct pair ``k``, each placed at its pose (once per query)."""
        m = self.model
        i, j = m.rp_a_list[k], m.rp_b_list[k]
        if i not in self.placed:
            self._place(i)
        if j not in self.placed:
            self._place(j)
        return i, j

    def collide(self, k: int) -> bool:
        """Whether direct pair ``k`` collides (within the margin and the shapes' paddings)."""
        m = self.model
        i, j = self._placed_pair(k)
        d = self.data
        if m.rp_any_pad:
            d.creq.security_margin = self.margin + m.rp_pad[k]
        res = d.cres
        d.rp_collide[k](d.tfs[i], d.tfs[j], d.creq, res)
        if res.isCollision():
            res.clear()
            return True
        return False

    def distance(self, k: int):
        """Signed distance of direct pair ``k`` less the paddings; the witness points via :meth:`witness`."""
        m = self.model
        i, j = self._placed_pair(k)
        d = self.data
        res = d.dres
        res.clear()
        d.rp_distance[k](d.tfs[i], d.tfs[j], d.dreq, res)
        return res.min_distance - m.rp_pad[k]

    def witness(self):
        res = self.data.dres
        return np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())


def _single_scene(model, data, out, environment, edata, margin):
    """The :class:`_Scene` of one configuration from its kinematics pass output (for the tree descent)."""
    return _Scene(model, data, _shape_poses(model, out.take(model.seg_idx)), environment, edata, margin)


def _self_collides(model, data, out, ks, margin, env, resolution) -> bool:
    """Whether one of the top-shape pairs ``ks`` collides at the configuration whose kinematics pass
    output is ``out`` (stops at the first): direct pairs by their cached functor on reusable transforms,
    the others by the tree descent. (The loop of :meth:`_Direct.collide`, written out: this is the hot
    path of a verdict.)"""
    fns, tfs, req, res = data.rp_collide, data.tf_cur, data.creq, data.cres
    ra, rb = model.rp_a_list, model.rp_b_list
    seg, tseg, tP, sR, st = model.obj_seg_list, data.tf_seg, data.tf_P, data.seg_R, data.seg_t
    segset = set()
    pads = model.rp_pad if model.rp_any_pad else None
    res.clear()
    req.security_margin = margin
    placed = set()
    sc = None
    for k in ks:
        f = fns[k]
        if f is None:
            if sc is None:
                sc = _single_scene(model, data, out, env[0], env[1], margin)
            if _tree_collide(sc, (ra[k],), (rb[k],), resolution):
                return True
            req.security_margin = margin
            continue
        i, j = ra[k], rb[k]
        if i not in placed:         # T_ground_shape = T_ground_segment (buf_W) * T_segment_shape, in coal
            s = seg[i]
            if s not in segset:
                tseg[s].setTransform(sR[s], st[s])
                segset.add(s)
            tfs[i] = tseg[s] if tP[i] is None else tseg[s] * tP[i]
            placed.add(i)
        if j not in placed:
            s = seg[j]
            if s not in segset:
                tseg[s].setTransform(sR[s], st[s])
                segset.add(s)
            tfs[j] = tseg[s] if tP[j] is None else tseg[s] * tP[j]
            placed.add(j)
        if pads is not None:
            req.security_margin = margin + pads[k]
        f(tfs[i], tfs[j], req, res)
        if res.isCollision():
            res.clear()
            return True
    return False


def _env_collides(sc, ge, resolution) -> bool:
    m = sc.model
    for bi, ok in zip(*(x.tolist() for x in np.nonzero(ge <= sc.margin))):
        if _tree_collide(sc, (int(m.broad_objects[bi]),), (-1 - ok,), resolution):
            return True
    return False


def _candidates(model, segs, self_collision, edata):
    """Broad phase of the general queries: lower bounds of the distance of every top-shape pair of the
    checked body pairs (aligned with ``model.rp_a``/``rp_b``) and of every (broad shape, obstacle) pair
    (``len(model.broad_objects)`` x obstacles), from axis-aligned boxes in the ground frame."""
    gs = ge = None
    if not len(model.objects):
        return gs, ge
    Y = _world_boxes(model, segs)
    if self_collision and len(model.rp_a):
        gs = _gaps(model, Y)
    if edata is not None and len(model.broad_objects):
        ge = _env_gaps(model, Y, edata)
    return gs, ge


def _run(mech_or_model, q, environment, self_collision, resolution, margin, fn):
    model, data, q, segs, edata = _prepare(mech_or_model, q, environment, resolution)
    margin = _check_margin(margin)
    gs, ge = _candidates(model, segs, self_collision, edata)
    T_obj = _shape_poses(model, segs)
    if q.ndim == 1:
        return fn(_Scene(model, data, T_obj, environment, edata, margin), gs, ge)
    return [fn(_Scene(model, data, T_obj[k], environment, edata, margin), None if gs is None else gs[k],
               None if ge is None else ge[k]) for k in range(q.shape[0])]

