"""Collision queries for one configuration or a batch: verdicts, contacts, distances with witness points.

Every function takes a mechanism (its :class:`~.model.CollisionModel` is built once and cached) or a
collision model, joint values ``q`` (anything :meth:`Mechanism.configuration` accepts; shape (B, n) for a
batch), and these keywords:

``environment``
    an :class:`~.environment.Environment` (obstacles in the ground frame); the robot is checked against it.
``self_collision``
    check the body pairs the collision matrix allows (default True).
``resolution``
    ``"fine"`` (default): test the coarse shapes of each body pair and descend to the children only where
    they overlap; the verdict is that of the leaves (4.15.1.2). ``"coarse"``: the top shape of each tree
    only. ``"leaves"``: every leaf pair, without the tree (for checking the tree).
``margin``
    extra clearance (m): shapes closer than ``margin`` (plus their own tolerances) count as colliding.

Broad phase: each body's shapes sit in one bounding sphere (in the body frame); body pairs whose spheres
are farther apart than the margin are never passed to the narrow phase, and for distances the sphere
gap is a lower bound that prunes pairs that cannot beat the best distance found so far.

Frames: every point, normal and pose is in the ground frame; distances in metres, negative when the
shapes overlap (the penetration depth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..kinematics import forward_kinematics
from .coal_backend import transform as _tf
from .model import CollisionModel, collision_data, collision_model

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
        surf = self.edata.surfaces[-1 - j] if j < 0 else None
        if surf is not None:     # a height field: penetration from collide, else distance to its surface
            contacts = []
            if self.collide(i, j, contacts) and contacts:
                c = contacts[0]
                p1 = c.point - 0.5 * c.depth * c.normal
                return -c.depth - pads, p1 + c.depth * c.normal, p1
            res = d.dres
            res.clear()
            d.coal.distance(self.geom(i), self.tf(i), surf[0], surf[1], d.dreq, res)
            return res.min_distance - pads, np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2())
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
_env_data = {}


def _environment_data(env):
    import threading
    import weakref

    from .environment import EnvironmentData

    key = threading.get_ident()
    cache = _env_data.get(key)
    if cache is None:
        cache = _env_data[key] = weakref.WeakKeyDictionary()
    d = cache.get(env)
    if d is None:
        d = cache[env] = EnvironmentData(env)
    return d


def _prepare(mech_or_model, q, environment, resolution):
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be one of {RESOLUTIONS}, got {resolution!r}")
    model = collision_model(mech_or_model)
    data = collision_data(model)
    fk = forward_kinematics(model.mechanism, q)      # validates q (couplings filled)
    q = fk.q
    segs = fk.segments
    # every shape's pose at once: T_ground_shape = T_ground_segment @ T_segment_shape
    T_obj = np.matmul(segs[..., model.obj_seg, :, :], model.obj_P)
    edata = _environment_data(environment) if environment is not None and len(environment) else None
    return model, data, q, T_obj, edata


def _boxes(model, T_obj):
    """World boxes ``(lo, hi)`` of every shape, (N, 3) or (B, N, 3) for a batch of poses."""
    c = np.matmul(T_obj[..., :3, :], model.obj_center_h)[..., 0]
    h = np.matmul(np.abs(T_obj[..., :3, :3]), model.obj_half_col)[..., 0]
    if model.any_unbounded:
        h[..., model.obj_unbounded, :] = np.inf
    return c - h, c + h


def _gap(lo_a, hi_a, lo_b, hi_b):
    """Lower bound of the distance between boxes (0 where they overlap)."""
    sep = np.maximum(np.maximum(lo_b - hi_a, lo_a - hi_b), 0.0)
    return np.sqrt((sep * sep).sum(axis=-1))


def _candidates(model, T_obj, self_collision, edata):
    """Broad phase: lower bounds of the distance of every top-shape pair of the checked body pairs
    (aligned with ``model.rp_a``/``rp_b``) and of every (broad shape, obstacle) pair
    (``len(model.broad_objects)`` x obstacles), from axis-aligned boxes in the ground frame."""
    gs = ge = None
    if not len(model.objects):
        return gs, ge
    lo, hi = _boxes(model, T_obj)                       # works on a batch too: (B, N, 3)
    if self_collision and len(model.rp_a):
        n = len(model.rp_a)
        L, H = lo[..., model.rp_ab, :], hi[..., model.rp_ab, :]   # both ends of every pair, one gather each
        sep = np.maximum(np.maximum(L[..., n:, :] - H[..., :n, :], L[..., :n, :] - H[..., n:, :]), 0.0)
        gs = np.sqrt(np.einsum("...ij,...ij->...i", sep, sep))
    if edata is not None and len(model.broad_objects):
        o = model.broad_objects
        ge = _gap(lo[..., o, None, :], hi[..., o, None, :], edata.lo, edata.hi)
    return gs, ge


def _one(model, data, T_obj, env, edata, margin, self_collision, fn):
    sc = _Scene(model, data, T_obj, env, edata, margin)
    gs, ge = _candidates(model, T_obj, self_collision, edata)
    return fn(sc, gs, ge)


def _run(mech_or_model, q, environment, self_collision, resolution, margin, fn):
    model, data, q, T_obj, edata = _prepare(mech_or_model, q, environment, resolution)
    margin = float(margin)
    if not math.isfinite(margin) or margin < 0:
        raise ValueError(f"margin must be finite and non-negative, got {margin!r}")
    if q.ndim == 1:
        return _one(model, data, T_obj, environment, edata, margin, self_collision, fn)
    # a batch: the broad phase once for every configuration, then the narrow phase one by one
    gs, ge = _candidates(model, T_obj, self_collision, edata)
    return [fn(_Scene(model, data, T_obj[k], environment, edata, margin), None if gs is None else gs[k],
               None if ge is None else ge[k]) for k in range(q.shape[0])]


# ---------------------------------------------------------------------------------------------- queries
def in_collision(mechanism, q, *, environment=None, self_collision: bool = True, resolution: str = "fine",
                 margin: float = 0.0):
    """True when some allowed body pair, or a body and an obstacle, collide at ``q`` (stops at the first
    hit). A batch ``q`` (B, n) gives a boolean array (B,)."""
    def fn(sc, gs, ge):
        m = sc.model
        if gs is not None:
            ra, rb = m.rp_a_list, m.rp_b_list
            for k in np.flatnonzero(gs <= sc.margin).tolist():
                if _tree_collide(sc, (ra[k],), (rb[k],), resolution):
                    return True
        if ge is not None:
            for bi, ok in zip(*(x.tolist() for x in np.nonzero(ge <= sc.margin))):
                if _tree_collide(sc, (int(m.broad_objects[bi]),), (-1 - ok,), resolution):
                    return True
        return False

    out = _run(mechanism, q, environment, self_collision, resolution, margin, fn)
    return np.array(out, dtype=bool) if isinstance(out, list) else out


def collisions(mechanism, q, *, environment=None, self_collision: bool = True, resolution: str = "fine",
               margin: float = 0.0):
    """Every contact at ``q`` (a list of :class:`Contact`; a list of such lists for a batch): for each
    colliding pair of finest shapes, up to 4 contact points."""
    def fn(sc, gs, ge):
        m = sc.model
        out = []
        if gs is not None:
            ra, rb = m.rp_a_list, m.rp_b_list
            for k in np.flatnonzero(gs <= sc.margin).tolist():
                _tree_collide(sc, (ra[k],), (rb[k],), resolution, out)
        if ge is not None:
            for bi, ok in zip(*(x.tolist() for x in np.nonzero(ge <= sc.margin))):
                _tree_collide(sc, (int(m.broad_objects[bi]),), (-1 - ok,), resolution, out)
        return out

    return _run(mechanism, q, environment, self_collision, resolution, margin, fn)


def _result(sc, best) -> DistanceResult:
    d, a, b, pa, pb = best
    if a is None:
        return DistanceResult(math.inf)
    return DistanceResult(float(d), sc.owner(a), sc.owner(b), sc.name(a), sc.name(b), pa, pb, b < 0)


def distance(mechanism, q, body_a: str, body_b: str, *, environment=None, resolution: str = "fine"):
    """Minimum distance between the shapes of ``body_a`` and ``body_b`` (a body, or an obstacle of
    ``environment``) at ``q``, whatever the collision matrix says: a :class:`DistanceResult` with the
    witness points (a list for a batch)."""
    model = collision_model(mechanism)
    ra = model.roots[model.bodies[model.body_position(body_a)]]
    if environment is not None and body_b in [o.name for o in environment.obstacles]:
        k = [o.name for o in environment.obstacles].index(body_b)
        rb = (-1 - k,)
    else:
        rb = model.roots[model.bodies[model.body_position(body_b)]]

    def fn(sc, gs, ge):
        return _result(sc, _tree_distance(sc, ra, rb, resolution, (math.inf, None, None, None, None)))

    return _run(model, q, environment, False, resolution, 0.0, fn)


def minimum_distance(mechanism, q, *, environment=None, self_collision: bool = True,
                     resolution: str = "fine"):
    """The smallest distance over every allowed body pair (and every body-obstacle pair with an
    ``environment``) at ``q``, as a :class:`DistanceResult` naming the pair (a list for a batch). Pairs are
    visited nearest bounding spheres first and skipped once their sphere gap exceeds the best distance."""
    def fn(sc, gs, ge):
        m = sc.model
        items = []
        if gs is not None:
            items += [(g, (a,), (b,)) for g, a, b in zip(gs.tolist(), m.rp_a.tolist(), m.rp_b.tolist())]
        if ge is not None:
            items += [(float(ge[bi, ok]), (int(m.broad_objects[bi]),), (-1 - ok,)) for bi in range(ge.shape[0])
                      for ok in range(ge.shape[1])]
        items.sort(key=lambda t: t[0])
        best = (math.inf, None, None, None, None)
        for gap, ra, rb in items:
            if gap >= best[0]:
                break
            best = _tree_distance(sc, ra, rb, resolution, best)
        return _result(sc, best)

    return _run(mechanism, q, environment, self_collision, resolution, 0.0, fn)


def _pair_hits(model: CollisionModel, Q, resolution: str = "fine"):
    """For each configuration of the batch ``Q``, the set of allowed body pairs in collision."""
    def fn(sc, gs, ge):
        m = sc.model
        hits = set()
        if gs is not None:
            for k in np.flatnonzero(gs <= 0.0).tolist():
                pair = m.pairs_checked[m.rp_pair[k]]
                if pair not in hits and _tree_collide(sc, (m.rp_a_list[k],), (m.rp_b_list[k],), resolution):
                    hits.add(pair)
        return hits

    return _run(model, Q, None, True, resolution, 0.0, fn)
