"""The collision model of a mechanism: its bounding-shape trees as geometry objects, beside the mechanism
(as Pinocchio's ``GeometryModel`` sits beside its ``Model``).

A :class:`CollisionModel` is built once per mechanism (and collision matrix) and never changes: it holds the
typed shapes (meshes loaded), each shape's placement in its body frame, the shape trees, the body pairs the
collision matrix allows, and one bounding sphere per body for the broad phase. The ``coal`` objects that the
queries need are built from it once per thread and kept outside it (:class:`CollisionData`), so a model may
be shared by any number of threads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data import check_data, derived, per_thread
from ..errors import ModelFileError, UnknownBody
from .. import shapes as S
from .matrix import CollisionMatrix
from .coal_backend import coal, to_coal
from ..mesh_files import load_mesh_geometry
from ..kinematics import single_pass_index, forward_kinematics


@dataclass(frozen=True, eq=False)
class GeometryObject:
    """One node of a body's shape tree. ``placement`` is ``T_body_shape``; ``geometry`` is None for a pure
    container (descended into without a test); ``parent`` / ``children`` are indices into
    :attr:`CollisionModel.objects`; ``padding`` (m) is the shape's tolerance."""

    name: str
    body: str
    placement: np.ndarray
    geometry: S.Geometry | None
    parent: int
    children: tuple
    level: int
    padding: float

    @property
    def is_leaf(self) -> bool:
        return not self.children


def _bounding_sphere(points: np.ndarray) -> tuple[np.ndarray, float]:
    lo, hi = points.min(axis=0), points.max(axis=0)
    c = 0.5 * (lo + hi)
    return c, float(np.max(np.linalg.norm(points - c, axis=1)))


class CollisionModel:
    """The geometry of ``mechanism`` for collision queries.

    ``matrix``: a :class:`CollisionMatrix` (default: the mechanism's own, from its model file, or the default
    rule; an SRDF file's: ``io.read_srdf(path, mechanism)``). Mesh shapes are read here
    (a missing or broken mesh is a :class:`ModelFileError` naming the model file and line).

    Attributes: ``objects`` (every :class:`GeometryObject`), ``bodies`` (names of the bodies that have at
    least one checked shape), ``roots`` / ``leaves`` (per body, object indices), ``pairs_checked`` (the body
    pairs the matrix allows among ``bodies``), and for the broad phase each shape's box in its own frame
    (``obj_center``, ``obj_half``: centre and half extents, padding included).
    """

    def __init__(self, mechanism, matrix: CollisionMatrix | None = None):
        self.mechanism = mechanism
        self.matrix = matrix if matrix is not None else CollisionMatrix.of(mechanism)
        objects: list[GeometryObject] = []
        roots, leaves = {}, {}
        for spec in mechanism.bodies:
            start = len(objects)
            by_name = {}
            pending = []
            for s in spec.shapes:
                geo = s.geometry
                if s.ignore_collisions:
                    geo = None
                if isinstance(geo, S.MeshFile):
                    file, line = s.source if s.source else (mechanism.source, None)
                    geo = load_mesh_geometry(geo, file, line)
                by_name[s.name] = len(pending)
                pending.append((s, geo))
            kids: dict[int, list[int]] = {}
            parents = []
            for k, (s, geo) in enumerate(pending):
                p = -1 if s.parent is None else start + by_name.get(s.parent, 0)
                if s.parent is not None and s.parent not in by_name:
                    file, line = s.source if s.source else (mechanism.source, None)
                    raise ModelFileError(f"bounding shape {s.name!r} of body {spec.name!r}: parent "
                                         f"{s.parent!r} is not a shape of that body", file, line)
                parents.append(p)
                if p >= 0:
                    kids.setdefault(p, []).append(start + k)
            for k, (s, geo) in enumerate(pending):
                objects.append(GeometryObject(s.name, spec.name, np.array(s.transform), geo, parents[k],
                                              tuple(kids.get(start + k, ())), int(s.level),
                                              max(0.0, float(s.tolerance))))
            # prune subtrees with nothing to test (an ignored leaf, a container of ignored shapes)
            mine = list(range(start, len(objects)))

            def live(i):
                o = objects[i]
                return o.geometry is not None or any(live(c) for c in o.children)

            r = tuple(i for i in mine if objects[i].parent < 0 and live(i))
            if r:
                roots[spec.name] = r
                leaves[spec.name] = tuple(i for i in mine if objects[i].is_leaf and objects[i].geometry
                                          is not None and self._under(objects, i, r))
        self.objects = tuple(objects)
        self.roots = roots
        self.leaves = leaves
        self.bodies = tuple(b for b in mechanism.body_names if b in roots)
        self.body_frame_index = np.array([mechanism.frame(b).index for b in self.bodies], dtype=int)
        self._body_pos = {b: k for k, b in enumerate(self.bodies)}
        # broad phase: each object's box in its placement frame (centre, half extents; inf if unbounded);
        # a body's box is the union of its top shapes' world boxes (they contain the leaves)
        n = len(self.objects)
        self.obj_body = np.array([self._body_pos.get(o.body, 0) for o in self.objects], dtype=int)
        self.obj_center = np.zeros((n, 3))
        self.obj_half = np.zeros((n, 3))
        for i, o in enumerate(self.objects):
            if o.geometry is None:
                self.obj_half[i] = np.inf if not o.children else self._children_half(i)
                continue
            if not math.isfinite(o.geometry.bounding_radius()):
                self.obj_half[i] = np.inf
                continue
            P = o.geometry.support_points()
            lo, hi = P.min(axis=0), P.max(axis=0)
            self.obj_center[i] = 0.5 * (lo + hi)
            self.obj_half[i] = 0.5 * (hi - lo) + o.padding
        self.obj_placement = np.array([o.placement for o in self.objects]).reshape(-1, 4, 4)
        self.obj_unbounded = ~np.all(np.isfinite(self.obj_half), axis=1)
        self.obj_half_finite = np.where(np.isfinite(self.obj_half), self.obj_half, 0.0)
        self.any_unbounded = bool(self.obj_unbounded.any())
        self.obj_center_h = np.hstack([self.obj_center, np.ones((n, 1))])[:, :, None]
        self.obj_half_col = self.obj_half_finite[:, :, None]
        # per body, the shapes the broad phase tests: its top shapes, or the leaves under a geometry-less top
        self.broad = {}
        for b in self.bodies:
            mine = []
            for r in roots[b]:
                mine += [r] if self.objects[r].geometry is not None else \
                    [i for i in self.leaves[b] if self._under(self.objects, i, (r,))]
            self.broad[b] = tuple(mine)
        self.broad_objects = np.array([i for b in self.bodies for i in self.broad[b]], dtype=int)
        # every shape's pose from the segment poses of forward kinematics: T_ground_shape =
        # T_ground_segment @ obj_P, with obj_P = T_segment_body @ T_body_shape (taken once at home)

        fk0 = forward_kinematics(mechanism, mechanism.home)
        segs0 = fk0.segments
        self.obj_seg = np.zeros(n, dtype=int)
        self.obj_P = np.zeros((n, 4, 4))
        for i, o in enumerate(self.objects):
            seg = mechanism.frame(o.body).segment
            T_seg_body = np.linalg.solve(segs0[seg], fk0.pose(o.body))
            T_seg_body[3] = (0, 0, 0, 1)
            self.obj_seg[i] = seg
            self.obj_P[i] = T_seg_body @ o.placement
        self.obj_seg_list = self.obj_seg.tolist()
        pairs = self.matrix.pairs(self.bodies)
        self.pairs_checked = tuple(pairs)
        # the top-shape pairs of every checked body pair: the broad phase compares their world boxes
        ra, rb, rp = [], [], []
        for k, (a, b) in enumerate(pairs):
            for i in self.broad[a]:
                for j in self.broad[b]:
                    ra.append(i)
                    rb.append(j)
                    rp.append(k)
        self.rp_a = np.array(ra, dtype=int)
        self.rp_b = np.array(rb, dtype=int)
        self.rp_pair = np.array(rp, dtype=int)
        self.rp_a_list, self.rp_b_list = ra, rb
        self.rp_ab = np.concatenate([self.rp_a, self.rp_b])
        # the fast path: a top-shape pair is "direct" when both shapes are leaves with geometry in their own
        # frame (no height field, whose coal frame is offset): its verdict and distance are one coal call at
        # every resolution; other pairs go through the tree descent
        def direct(i):
            o = self.objects[i]
            return o.geometry is not None and not o.children and not isinstance(o.geometry, S.HeightField)

        self.rp_direct = [direct(a) and direct(b) for a, b in zip(ra, rb)]
        self.rp_pad = [self.objects[a].padding + self.objects[b].padding for a, b in zip(ra, rb)]
        self.rp_any_pad = any(p != 0.0 for p in self.rp_pad)
        # per pair, the sum of the two shapes' half extents (inf when either is unbounded): the world boxes
        # of a and b overlap iff |c_a - c_b| <= half_a + half_b on every axis
        self.rp_unbounded = self.obj_unbounded[self.rp_a] | self.obj_unbounded[self.rp_b] if len(ra) else \
            np.zeros(0, dtype=bool)
        self.rp_any_unbounded = bool(self.rp_unbounded.any())
        # world boxes straight from the segment poses of forward kinematics, all in one product: with
        # W_s = [T[:3, :] | |T[:3, :]|] (3 x 8) of segment s, W_s @ [c; 1; -h; 0] is the low corner and
        # W_s @ [c; 1; h; 0] the high corner of the world box of a shape with box centre c and half extents
        # h in the segment frame (h = |R_P| h_shape bounds the shape's own box whatever its rotation R_P
        # in the segment, exactly when R_P is a signed axis permutation); columns (2 per shape, up to K
        # shapes per segment) in obj_V: (S, 8, 2K)
        nseg = segs0.shape[0]
        slot = np.zeros(n, dtype=int)
        count = np.zeros(nseg, dtype=int)
        for i in range(n):
            slot[i] = count[self.obj_seg[i]]
            count[self.obj_seg[i]] += 1
        K = max(1, int(count.max()) if n else 1)
        self.obj_V = np.zeros((nseg, 8, 2 * K))
        for i in range(n):
            s_, k = self.obj_seg[i], slot[i]
            c = self.obj_P[i] @ self.obj_center_h[i, :, 0]
            h = np.abs(self.obj_P[i, :3, :3]) @ self.obj_half_finite[i]
            self.obj_V[s_, :4, 2 * k] = self.obj_V[s_, :4, 2 * k + 1] = c
            self.obj_V[s_, 4:7, 2 * k] = -h
            self.obj_V[s_, 4:7, 2 * k + 1] = h
        # flat indices into the (S, 3, 2K) product: low and high corner of every shape per axis, (2, N, 3)
        ax = np.arange(3)
        base = (self.obj_seg * 3 * 2 * K + 2 * slot)[:, None] + ax * 2 * K
        self.obj_lo_idx, self.obj_hi_idx = base, base + 1
        # per pair, two rows of gather indices, each (axis, side, pair)-major: [lo_a; lo_b] and [hi_b; hi_a]
        # per axis; their difference is the two one-sided gaps, whose larger is the gap along the axis
        A, B = base[self.rp_a].T, base[self.rp_b].T                       # (3, P) low corners
        self.rp_idx2 = np.array([np.stack([A, B], axis=1).ravel(), np.stack([B + 1, A + 1], axis=1).ravel()],
                                dtype=np.intp).reshape(2, -1)
        # the one-configuration hot path reads the kinematics pass output directly: flat indices of
        # W_s = [T3 | T3] per segment (the second half is made |T3| in place) and of every shape's
        # segment T3 (N, 3, 4) (its pose is that @ obj_P)

        sf = single_pass_index(mechanism)
        self.nq = mechanism.nq
        self.w_idx = np.ascontiguousarray(np.concatenate([sf[:, :3, :], sf[:, :3, :]], axis=-1), dtype=np.intp)
        self.pose_idx = np.ascontiguousarray(sf[self.obj_seg, :3, :], dtype=np.intp)
        self.seg_idx = sf

    def _children_half(self, i) -> np.ndarray:
        """A container without geometry: its box is unbounded (it is never tested, only descended into)."""
        return np.full(3, np.inf)

    @staticmethod
    def _under(objects, i, roots) -> bool:
        while objects[i].parent >= 0:
            i = objects[i].parent
        return i in roots

    def body_position(self, body: str) -> int:
        try:
            return self._body_pos[body]
        except KeyError:
            if body not in self.mechanism.body_names:
                raise UnknownBody(body, self.mechanism.body_names) from None
            raise UnknownBody(f"{body} (it has no bounding shapes to check)", list(self.bodies)) from None

    def object_names(self, body: str) -> list[str]:
        return [self.objects[i].name for i in range(len(self.objects)) if self.objects[i].body == body]

    def __repr__(self):
        return (f"<CollisionModel of {self.mechanism.name!r}: {len(self.objects)} shapes on "
                f"{len(self.bodies)} bodies, {len(self.pairs_checked)} body pairs checked>")


class CollisionData:
    """Per-thread ``coal`` objects of a :class:`CollisionModel` (Pinocchio's ``GeometryData``): one coal
    geometry per shape and cached pair functors. Made by :func:`collision_data`; not shared between threads."""

    def __init__(self, model: CollisionModel):
        c = coal()
        self.coal = c
        self.geoms = []
        self.offsets = []       # T_shape_coal, identity except height fields
        for o in model.objects:
            if o.geometry is None:
                self.geoms.append(None)
                self.offsets.append(None)
            else:
                g, T = to_coal(o.geometry)
                self.geoms.append(g)
                self.offsets.append(None if np.array_equal(T, np.eye(4)) else T)
        self.placements = np.array([o.placement if off is None else o.placement @ off
                                    for o, off in zip(model.objects, self.offsets)]).reshape(-1, 4, 4)
        self.collide_fn = {}
        self.distance_fn = {}
        self.creq = c.CollisionRequest()
        self.creq_contacts = c.CollisionRequest()
        self.creq_contacts.enable_contact = True
        self.creq_contacts.num_max_contacts = 4
        self.cres = c.CollisionResult()
        self.dreq = c.DistanceRequest()
        self.dreq.enable_signed_distance = True
        self.dreq.gjk_tolerance = 1e-9      # distances to 1e-9 m, not GJK's default 1e-6 relative
        self.dres = c.DistanceResult()
        # the fast path: one reusable coal transform per shape, one collision and one distance functor per
        # direct top-shape pair (None for pairs that go through the tree descent)
        self.tfs = [c.Transform3s() for _ in model.objects]
        self.rp_collide = [c.ComputeCollision(self.geoms[a], self.geoms[b]) if ok else None
                           for a, b, ok in zip(model.rp_a_list, model.rp_b_list, model.rp_direct)]
        self.rp_distance = [c.ComputeDistance(self.geoms[a], self.geoms[b]) if ok else None
                            for a, b, ok in zip(model.rp_a_list, model.rp_b_list, model.rp_direct)]
        # the single-configuration broad phase's arrays, reused call after call (see queries.in_collision)
        S_, _, K2 = model.obj_V.shape
        self.buf_W = np.empty((S_, 3, 8))
        self.buf_Y = np.empty((S_, 3, K2))
        self.buf_Z = np.empty(model.rp_idx2.shape)
        self.buf_D = np.empty(model.rp_idx2.shape[1])
        self.buf_W_abs = self.buf_W[..., 4:]
        self.buf_Y_flat = self.buf_Y.reshape(-1)
        self.buf_Z0, self.buf_Z1 = self.buf_Z[0], self.buf_Z[1]
        self.buf_D6 = self.buf_D.reshape(6, -1)
        self.buf_m = np.empty(self.buf_D6.shape[1])
        self.buf_b = np.empty(self.buf_D6.shape[1], dtype=bool)
        # every shape's pose (N, 3, 4) from one product, and per shape views of its rotation and
        # translation for the coal transforms (views stay valid: the arrays are written in place)
        n = len(model.objects)
        self.buf_G = np.empty((n, 3, 4))
        self.buf_T3 = np.empty((n, 3, 4))
        self.tf_R = [self.buf_T3[i, :, :3] for i in range(n)]
        self.tf_t = [self.buf_T3[i, :, 3] for i in range(n)]
        # the coal transforms straight from the segment poses in buf_W (its first 4 columns): one per
        # segment, set from views, and per shape the constant T_segment_shape (None: identity), composed in
        # coal; tf_cur holds the current transform of each shape (the segment's own when identity)
        self.tf_seg = [c.Transform3s() for _ in range(S_)]
        self.seg_R = [self.buf_W[s, :, :3] for s in range(S_)]
        self.seg_t = [self.buf_W[s, :, 3] for s in range(S_)]
        self.tf_P = [None if np.array_equal(P, np.eye(4)) else c.Transform3s(P[:3, :3].copy(), P[:3, 3].copy())
                     for P in model.obj_P]
        self.tf_cur = [None] * n
        # how often each pair was tested and hit in batch verdicts (orders the narrow phase of batches)
        self.rp_tests = np.ones(len(model.rp_a_list))
        self.rp_hits = np.ones(len(model.rp_a_list))


def collision_model(mechanism_or_model, *, data=None) -> CollisionModel:
    """The :class:`CollisionModel` of a mechanism (built once per mechanism, kept in its derived data:
    :mod:`..data`), or the model itself when given one. ``data``: the mechanism's
    :class:`~..data.Data` (``data_of(mechanism)``, checked) to take it from."""
    if isinstance(mechanism_or_model, CollisionModel):
        if data is not None:
            check_data(mechanism_or_model.mechanism, data)
        return mechanism_or_model
    if data is None:
        return derived(mechanism_or_model, "collision.model", CollisionModel)
    return check_data(mechanism_or_model, data).get("collision.model", lambda: CollisionModel(mechanism_or_model))


def collision_data(model: CollisionModel) -> CollisionData:
    """This thread's :class:`CollisionData` of ``model`` (Pinocchio's ``GeometryData``: a per-thread slot of
    the model's derived data, :mod:`..data`, built on the thread's first use)."""
    return per_thread(model, "collision.data", lambda: CollisionData(model))
