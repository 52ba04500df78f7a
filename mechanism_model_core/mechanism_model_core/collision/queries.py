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

import numpy as np

from ..kinematics import forward_kinematics
from .model import CollisionModel, collision_data, collision_model
from .scene import (RESOLUTIONS, Contact, DistanceResult, _ONES3, _Direct, _Scene,  # noqa: F401 (re-exported)
                    _check_margin, _env_collides, _env_gaps, _environment_data, _less_equal, _max_reduce,
                    _overlapping, _pair_sides, _place_all, _prepare, _run, _self_collides, _shape_poses,
                    _single_boxes, _single_output, _single_scene, _tree_collide, _tree_distance, _world_boxes)


# ---------------------------------------------------------------------------------------------- queries
def in_collision(mechanism, q, *, environment=None, self_collision: bool = True, resolution: str = "fine",
                 margin: float = 0.0, data=None):
    """True when some allowed body pair, or a body and an obstacle, collide at ``q`` (stops at the first
    hit). A batch ``q`` (B, n) gives a boolean array (B,).

    Broad phase: the world boxes of every checked top-shape pair in one array operation (for a batch, over
    the whole batch at once); coal is called only for pairs whose boxes overlap, through a cached functor
    per pair and reusable transforms. ``data`` (every query takes it): the mechanism's :class:`~..data.Data`
    (``data_of(mechanism)``, checked), whose collision model and per-thread collision data it uses."""
    if data is not None:
        mechanism = collision_model(mechanism, data=data)
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be one of {RESOLUTIONS}, got {resolution!r}")
    if margin != 0.0:
        margin = _check_margin(margin)
    model = collision_model(mechanism)
    data = collision_data(model)
    q, out = _single_output(model, q)      # validates q (couplings filled)
    edata = _environment_data(environment) if environment is not None and len(environment) else None
    if out is None:
        segs = forward_kinematics(model.mechanism, q).segments
        return _batch_in_collision(model, data, segs, environment, edata, self_collision, resolution, margin)
    Y = None
    if self_collision and model.rp_a_list:
        Y, D = _single_boxes(model, data, out)
        ks = _less_equal(_max_reduce(D, 0, None, data.buf_m), margin, data.buf_b).nonzero()[0].tolist()
        if ks and _self_collides(model, data, out, ks, margin, (environment, edata), resolution):
            return True
    if edata is not None and len(model.broad_objects):
        if Y is None:
            Y = _single_boxes(model, data, out)[0]
        return _env_collides(_single_scene(model, data, out, environment, edata, margin),
                             _env_gaps(model, Y, edata), resolution)
    return False


#: Configurations per chunk of a batch verdict (the broad phase of a chunk stays in the cache); the first
#: chunk is small so that the pair order learnt from it serves the rest.
_BATCH_CHUNK = 512
_FIRST_CHUNK = 64


def _batch_in_collision(model, data, segs, environment, edata, self_collision, resolution, margin):
    """Verdicts of a batch: the broad phase over a whole chunk of configurations in one array operation,
    then the narrow phase pair by pair over the configurations still undecided, the pairs that hit most
    often first (counted in this thread's data across calls; the order changes nothing but the time: a
    configuration stops at its first hit)."""
    B = segs.shape[0]
    out = np.zeros(B, dtype=bool)
    P = len(model.rp_a)
    tests, hits = data.rp_tests, data.rp_hits
    fns, tfs, req, res = data.rp_collide, data.tfs, data.creq, data.cres
    seg, Pl = model.obj_seg_list, model.obj_P
    ra, rb, pads = model.rp_a_list, model.rp_b_list, model.rp_pad
    s = 0
    while s < B:
        e = min(B, s + (_FIRST_CHUNK if s == 0 else _BATCH_CHUNK))
        S_ = segs[s:e]
        Y = _world_boxes(model, S_)
        o = out[s:e]
        if self_collision and P:
            M = np.ascontiguousarray(_overlapping(model, Y, margin).T)          # (P, b)
            order = np.argsort(-(hits / tests), kind="stable")
            order = order[M[order].any(axis=1)]
            res.clear()
            left = ~o
            for k in order.tolist():
                col = (M[k] & left).nonzero()[0].tolist()
                if not col:
                    continue
                tests[k] += len(col)
                f = fns[k]
                i, j = ra[k], rb[k]
                req.security_margin = margin + pads[k]
                if f is not None:           # both shapes' poses in every configuration of the column at once
                    Ti = np.matmul(S_[col, seg[i]], Pl[i])
                    Tj = np.matmul(S_[col, seg[j]], Pl[j])
                    Ri, ti, Rj, tj = Ti[:, :3, :3], Ti[:, :3, 3], Tj[:, :3, :3], Tj[:, :3, 3]
                    ti_, tj_ = tfs[i], tfs[j]
                for n, b in enumerate(col):
                    if f is not None:       # the shared transforms are set for every test (b changes)
                        ti_.setTransform(Ri[n], ti[n])
                        tj_.setTransform(Rj[n], tj[n])
                        f(ti_, tj_, req, res)
                        hit = res.isCollision()
                        if hit:
                            res.clear()
                    else:
                        hit = _tree_collide(_Scene(model, data, _shape_poses(model, S_[b]), environment, edata,
                                                   margin), (i,), (j,), resolution)
                        req.security_margin = margin + pads[k]
                    if hit:
                        o[b] = True
                        left[b] = False
                        hits[k] += 1
        if edata is not None and len(model.broad_objects):
            ge = _env_gaps(model, Y, edata)
            for b in np.flatnonzero(~o).tolist():
                o[b] = _env_collides(_Scene(model, data, _shape_poses(model, S_[b]), environment, edata, margin),
                                     ge[b], resolution)
        s = e
    return out


def collisions(mechanism, q, *, environment=None, self_collision: bool = True, resolution: str = "fine",
               margin: float = 0.0, data=None):
    """Every contact at ``q`` (a list of :class:`Contact`; a list of such lists for a batch): for each
    colliding pair of finest shapes, up to 4 contact points."""
    if data is not None:
        mechanism = collision_model(mechanism, data=data)

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


def distance(mechanism, q, body_a: str, body_b: str, *, environment=None, resolution: str = "fine", data=None):
    """Minimum distance between the shapes of ``body_a`` and ``body_b`` (a body, or an obstacle of
    ``environment``) at ``q``, whatever the collision matrix says: a :class:`DistanceResult` with the
    witness points (a list for a batch)."""
    model = collision_model(mechanism, data=data)
    ra = model.roots[model.bodies[model.body_position(body_a)]]
    if environment is not None and body_b in [o.name for o in environment.obstacles]:
        k = [o.name for o in environment.obstacles].index(body_b)
        rb = (-1 - k,)
    else:
        rb = model.roots[model.bodies[model.body_position(body_b)]]

    def fn(sc, gs, ge):
        return _result(sc, _tree_distance(sc, ra, rb, resolution, (math.inf, None, None, None, None)))

    return _run(model, q, environment, False, resolution, 0.0, fn)


def _min_distance_one(model, data, segs, environment, edata, self_collision, resolution, Y, D=None, out=None):
    """:func:`minimum_distance` of one configuration (``segs``: its segment poses, or None with ``out``,
    its kinematics pass output; ``Y``: its world boxes, ``D``: its pair sides when known)."""
    scene = []

    def sc():
        if not scene:
            S_ = segs if segs is not None else out.take(model.seg_idx)
            scene.append(_Scene(model, data, _shape_poses(model, S_), environment, edata, 0.0))
        return scene[0]

    best = (math.inf, None, None, None, None)
    if self_collision and model.rp_a_list:
        if D is None:
            D = _pair_sides(model, Y)
        g = np.maximum(D[0::2], D[1::2])                     # (3, P): the gap along each axis
        np.maximum(g, 0.0, out=g)
        g *= g
        g = np.sqrt(_ONES3.dot(g))
        order = g.argsort()
        if segs is None:
            _place_all(model, data, out)
        direct = _Direct(model, data, segs, 0.0)
        fns = data.rp_distance
        ra, rb = model.rp_a_list, model.rp_b_list
        best_k = last_k = -1
        for gap, k in zip(g[order].tolist(), order.tolist()):
            if gap >= best[0] and (gap > 0.0 or best[0] >= 0.0):   # overlapping boxes may penetrate deeper
                break
            if fns[k] is not None:
                d = direct.distance(k)
                last_k = k
                if d < best[0]:             # witness points read once at the end
                    best = (d, ra[k], rb[k], None, None)
                    best_k = k
            else:
                best = _tree_distance(sc(), (ra[k],), (rb[k],), resolution, best)
                last_k = -1                 # the distance result now holds another pair's
        if best_k >= 0 and best[3] is None:
            if last_k != best_k:
                direct.distance(best_k)     # the same call again (deterministic): its witness points
            best = best[:3] + direct.witness()
    if edata is not None and len(model.broad_objects):
        ge = _env_gaps(model, Y, edata)
        items = sorted((float(ge[bi, ok]), int(model.broad_objects[bi]), -1 - ok)
                       for bi in range(ge.shape[0]) for ok in range(ge.shape[1]))
        for gap, a, b in items:
            if gap >= best[0] and (gap > 0.0 or best[0] >= 0.0):
                break
            best = _tree_distance(sc(), (a,), (b,), resolution, best)
    if best[1] is None:
        return DistanceResult(math.inf)
    d, a, b, pa, pb = best
    return DistanceResult(float(d), _owner(model, environment, a), _owner(model, environment, b),
                          _name(model, environment, a), _name(model, environment, b), pa, pb, b < 0)


def _owner(model, env, i):
    return model.objects[i].body if i >= 0 else env.obstacles[-1 - i].name


def _name(model, env, i):
    return model.objects[i].name if i >= 0 else env.obstacles[-1 - i].name


def minimum_distance(mechanism, q, *, environment=None, self_collision: bool = True,
                     resolution: str = "fine", data=None):
    """The smallest distance over every allowed body pair (and every body-obstacle pair with an
    ``environment``) at ``q``, as a :class:`DistanceResult` naming the pair (a list for a batch). Pairs are
    visited nearest world boxes first and skipped once their box gap exceeds the best distance; in
    collision (a negative best) every pair whose boxes overlap is measured, so the result is the deepest
    penetration."""
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution must be one of {RESOLUTIONS}, got {resolution!r}")
    model = collision_model(mechanism, data=data)
    cdata = collision_data(model)
    q, out = _single_output(model, q)          # validates q (couplings filled)
    edata = _environment_data(environment) if environment is not None and len(environment) else None
    if out is not None:
        Y, D = _single_boxes(model, cdata, out)
        return _min_distance_one(model, cdata, None, environment, edata, self_collision, resolution, Y, D, out)
    segs = forward_kinematics(model.mechanism, q).segments
    Y = _world_boxes(model, segs)
    return [_min_distance_one(model, cdata, segs[b], environment, edata, self_collision, resolution, Y[b])
            for b in range(q.shape[0])]


def _pair_hits(model: CollisionModel, Q, resolution: str = "fine"):
    """For each configuration of the batch ``Q``, the set of allowed body pairs in collision."""
    model, data, Q, segs, _ = _prepare(model, Q, None, resolution)
    if Q.ndim == 1:
        Q, segs = Q[None], segs[None]
    out = [set() for _ in range(Q.shape[0])]
    if not len(model.rp_a):
        return out
    M = _overlapping(model, _world_boxes(model, segs), 0.0)
    for b, k in zip(*(x.tolist() for x in np.nonzero(M))):
        pair = model.pairs_checked[model.rp_pair[k]]
        if pair in out[b]:
            continue
        if data.rp_collide[k] is not None:
            hit = _Direct(model, data, segs[b], 0.0).collide(k)
        else:
            hit = _tree_collide(_Scene(model, data, _shape_poses(model, segs[b]), None, None, 0.0),
                                (model.rp_a_list[k],), (model.rp_b_list[k],), resolution)
        if hit:
            out[b].add(pair)
    return out
