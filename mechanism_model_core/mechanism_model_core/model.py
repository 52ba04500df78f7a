"""The immutable, compiled mechanism (CLARAty's Mechanism_Model tree, 4.1-4.17).

A :class:`Mechanism` is a tree of bodies rooted at the ground body, each body joined to its parent by one
joint. It holds constants only -- no joint values and no cached state -- so any number of threads may use
one mechanism at once (4.5-4.8). Editing goes through :class:`~mechanism_model_core.builder.MechanismBuilder`
and returns a new mechanism.

Construction compiles the tree into arrays (docs/architecture.md, "The kinematics kernel"):

* bodies in depth-first order from the ground (children in insertion order), so each branch -- an arm, a
  leg -- is contiguous;
* the joint-coordinate vector ``q``: every joint's coordinates, joints in body order; ``coordinate_names``
  documents it, and every function also accepts a ``{coordinate name: value}`` mapping;
* *segments*: one per elementary motion of a moving joint (a revolute joint is one segment, a floating joint
  six). Each segment frame has its motion axis along +z, so forward kinematics is a single pass of
  ``T_world_seg[i] = T_world_seg[parent[i]] @ P[i] @ M(q)`` with ``M`` a rotation about or translation along
  z. Bodies on fixed joints and named frames are constant offsets from a segment and cost nothing in the
  pass.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from types import MappingProxyType
from typing import Iterator, Mapping

import numpy as np

from .bodies import BodySpec, BoundingShape, MassProperties, ReadOnlyMapping, _readonly  # noqa: F401 (re-exported)
from .data import memo
from .errors import (InvalidConfiguration, ModelStructureError, UnknownBody, UnknownFrame,
                     UnknownJoint)
from .joints import Joint
from .named_values import finite_value as _finite_scalar
from .spatial import inverse, rotation_z_to
from .named_values import configuration_from_mapping

GROUND = "ground"


@dataclass(frozen=True)
class FrameRef:
    """Where a frame lives in the compiled tree: ``T_world_frame = T_world_seg[segment] @ offset``."""

    name: str
    body: str
    segment: int
    index: int
    kind: str


class Body:
    """A view of one body of a mechanism (no copy of the model; CLARAty 7.5-7.7).

    Its kinematic methods take the joint values, as every algorithm does.
    """

    __slots__ = ("mechanism", "index")

    def __init__(self, mechanism: "Mechanism", index: int):
        self.mechanism = mechanism
        self.index = index

    @property
    def spec(self) -> BodySpec:
        return self.mechanism._bodies[self.index]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def parent(self) -> "Body | None":
        p = self.spec.parent
        return None if p is None else self.mechanism.body(p)

    @property
    def joint(self) -> Joint | None:
        return self.spec.joint

    @property
    def frames(self) -> Mapping[str, np.ndarray]:
        """Named frames of this body, ``T_body_frame``."""
        return self.spec.frames

    @property
    def mass(self) -> MassProperties:
        return self.spec.mass

    @property
    def shapes(self) -> tuple:
        return self.spec.shapes

    @property
    def children(self) -> list["Body"]:
        return [self.mechanism.body(n) for n in self.mechanism.children(self.name)]

    def __repr__(self) -> str:
        return f"<Body {self.name!r} of {self.mechanism.name!r}>"


class SegmentTree:
    """The mechanism compiled to a tree of *segments*, one per elementary motion: constants, read-only.

    Segment 0 is the ground. Per segment ``i``: ``seg_parent[i]`` (the parent segment), ``seg_coord[i]``
    (its joint coordinate, -1 for the ground), ``seg_kind[i]`` (0 ground, 1 rotation about its own z, 2
    translation along its own z) and ``seg_P[i]``, its placement in the parent segment's frame, so that
    ``T_ground_seg[i] = T_ground_seg[parent] @ seg_P[i] @ M(q[seg_coord[i]])``. Frame ``f`` (in
    :attr:`Mechanism.frame_names` order) is ``T_ground_seg[frame_seg[f]] @ frame_T[f]``.

    For the joint-by-joint view of a TF publisher: segment ``i``'s *step frame* is ``T_ground_seg[i] @
    seg_R[i]`` (the joint frame after this step; the body frame after a joint's last step), and the edge
    from the frame the step moves against (the parent body frame for a joint's first step, the previous
    step frame otherwise) is ``seg_L[i] @ M(q) @ seg_R[i]``.

    :mod:`.kinematics` compiles its evaluation plans from these arrays and keeps them itself (the model
    holds no algorithm state).
    """

    __slots__ = ("n_seg", "nq", "seg_parent", "seg_coord", "seg_kind", "seg_P", "seg_L", "seg_R",
                 "frame_seg", "frame_T")

    # short public names (the arrays are the same objects)
    parent = property(lambda self: self.seg_parent)
    coord = property(lambda self: self.seg_coord)
    kind = property(lambda self: self.seg_kind)
    placement = property(lambda self: self.seg_P)

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)


class Mechanism:
    """An immutable, compiled tree of bodies, joints and frames. Build with
    :class:`~mechanism_model_core.builder.MechanismBuilder` or a loader such as
    :func:`mechanism_model_core.load_model`.

    Per joint coordinate, in the order of :attr:`coordinate_names` (radians for angles, metres for lengths;
    :attr:`coordinate_is_prismatic` says which): :attr:`lower_limits` and :attr:`upper_limits` (``-inf``/
    ``inf`` where unbounded), :attr:`home` (the home configuration, couplings applied) and
    :attr:`coordinate_joint` (the joint each coordinate belongs to). :attr:`couplings` maps each dependent
    coordinate to its expression, dependencies first; :attr:`independent_coordinates` and
    :attr:`dependent_coordinates` split the coordinates accordingly.

    ``couplings`` takes the joints' coupling expressions already parsed, ``{joint name: Expression}``
    dependencies first (:func:`mechanism_model_core.builder.parse_couplings`; :func:`~mechanism_model_core.builder.
    build_mechanism` and the builder pass them): the model parses nothing, and refuses coupled joints without them.
    """

    def __init__(self, name: str, bodies: list[BodySpec], ground: str = GROUND, source: str | None = None,
                 metadata: Mapping[str, object] | None = None, couplings: Mapping[str, object] | None = None):
        self.name = name
        self.ground = ground
        self.source = source
        self.metadata = dict(metadata or {})
        self._bodies = tuple(_topological(bodies, ground))
        self._body_index = {b.name: i for i, b in enumerate(self._bodies)}
        self._children: dict[str, list[str]] = {b.name: [] for b in self._bodies}
        for b in self._bodies[1:]:
            self._children[b.parent].append(b.name)
        self._joints = tuple(b.joint for b in self._bodies[1:])
        self._joint_index = {j.name: i for i, j in enumerate(self._joints)}
        if len(self._joint_index) != len(self._joints):
            dup = _duplicates([j.name for j in self._joints])
            raise ModelStructureError(f"duplicate joint names: {dup}", ("joint", dup[0]))
        self._build_coordinates()
        self._set_couplings(couplings or {})
        self._compile()

    # ------------------------------------------------------------------ structure queries
    @property
    def bodies(self) -> tuple[BodySpec, ...]:
        """Body specs in topological order, ground first."""
        return self._bodies

    @property
    def body_names(self) -> list[str]:
        return [b.name for b in self._bodies]

    @property
    def joints(self) -> tuple[Joint, ...]:
        """Joints in body order (the ground has none)."""
        return self._joints

    @property
    def joint_names(self) -> list[str]:
        return [j.name for j in self._joints]

    @property
    def frame_names(self) -> list[str]:
        """Every frame: each body frame (named like its body) and every named frame."""
        return list(self._frames)

    @property
    def nq(self) -> int:
        """Length of the joint-coordinate vector."""
        return len(self.coordinate_names)

    def body(self, name: str) -> Body:
        try:
            return Body(self, self._body_index[name])
        except KeyError:
            raise UnknownBody(name, self.body_names) from None

    def joint(self, name: str) -> Joint:
        try:
            return self._joints[self._joint_index[name]]
        except KeyError:
            raise UnknownJoint(name, self.joint_names) from None

    def frame(self, name: str) -> FrameRef:
        try:
            return self._frames[name]
        except KeyError:
            raise UnknownFrame(name, self.frame_names) from None

    def has_frame(self, name: str) -> bool:
        return name in self._frames

    def frame_in_body(self, name: str) -> np.ndarray:
        """``T_body_frame`` of a frame in the body that carries it (identity for a body frame)."""
        ref = self.frame(name)
        if ref.kind == "body":
            return np.eye(4)
        return np.array(self._bodies[self._body_index[ref.body]].frames[name])

    def children(self, body: str) -> list[str]:
        if body not in self._children:
            raise UnknownBody(body, self.body_names)
        return list(self._children[body])

    def parent_body_of_joint(self, joint: str) -> str:
        return self._bodies[self._joint_index_to_body(joint)].parent

    def child_body_of_joint(self, joint: str) -> str:
        return self._bodies[self._joint_index_to_body(joint)].name

    def _joint_index_to_body(self, joint: str) -> int:
        if joint not in self._joint_index:
            raise UnknownJoint(joint, self.joint_names)
        return self._joint_index[joint] + 1

    def path_to_ground(self, body: str) -> list[str]:
        """Body names from ``body`` up to and including the ground."""
        out = [body]
        while True:
            p = self._bodies[self._body_index[out[-1]]].parent
            if p is None:
                return out
            out.append(p)

    def iter_bodies(self) -> Iterator[Body]:
        for i in range(len(self._bodies)):
            yield Body(self, i)

    def __repr__(self) -> str:
        return (f"<Mechanism {self.name!r}: {len(self._bodies)} bodies, {len(self._joints)} joints, "
                f"nq={self.nq}, {len(self._frames)} frames>")

    # ------------------------------------------------------------------ coordinates
    def _build_coordinates(self):
        names, joint_of, lower, upper, home, prismatic = [], [], [], [], [], []
        self._joint_slices: dict[str, slice] = {}
        for j in self._joints:
            start = len(names)
            names.extend(j.coordinate_names)
            joint_of.extend([j.name] * j.dof)
            lower.extend(j.lower)
            upper.extend(j.upper)
            home.extend(j.home)
            prismatic.extend(j.is_prismatic_coordinate)
            self._joint_slices[j.name] = slice(start, len(names))
        self.coordinate_names: tuple[str, ...] = tuple(names)
        self._coord_index = {n: i for i, n in enumerate(names)}
        if len(self._coord_index) != len(names):
            raise ModelStructureError(f"duplicate coordinate names: {_duplicates(names)}")
        self.coordinate_joint: tuple[str, ...] = tuple(joint_of)
        self.lower_limits = _readonly(lower)
        self.upper_limits = _readonly(upper)
        self.home = _readonly(home)
        self.coordinate_is_prismatic = _readonly(prismatic, bool)

    def joint_slice(self, joint: str) -> slice:
        """Where ``joint``'s coordinates sit in ``q``."""
        try:
            return self._joint_slices[joint]
        except KeyError:
            raise UnknownJoint(joint, self.joint_names) from None

    @property
    def coordinate_indices(self) -> Mapping[str, int]:
        """``{coordinate name: index in q}`` (read-only)."""
        return MappingProxyType(self._coord_index)

    def coordinate_index(self, name: str) -> int:
        try:
            return self._coord_index[name]
        except KeyError:
            raise UnknownJoint(name, list(self.coordinate_names)) from None

    def _set_couplings(self, couplings: Mapping[str, object]):
        """Take the parsed coupling expressions (``{joint: Expression}``, dependencies first) that the builder
        made of the joints' coupling text (:func:`~mechanism_model_core.builder.parse_couplings`); checked
        against the joints, not parsed here."""
        coupled = [j.name for j in self._joints if j.coupling is not None]
        if set(couplings) != set(coupled):
            raise ModelStructureError(
                f"the joints with a coupling are {coupled}, but the couplings given are for {sorted(couplings)}: "
                f"build through MechanismBuilder or builder.build_mechanism, which parse the coupling "
                f"expressions", ("coupling", sorted(set(couplings) ^ set(coupled))[0]))
        done: set = set()
        for n, e in couplings.items():
            missing = [v for v in e.variables
                       if v not in self._coord_index or v == n or (v in couplings and v not in done)]
            if missing:
                raise ModelStructureError(f"joint {n!r}: coupling: {missing} are not coordinates it may follow "
                                          f"(other joints, dependencies first)", ("coupling", n))
            done.add(n)
        order = list(couplings)
        self.couplings = ReadOnlyMapping(dict(couplings))  # dependencies first
        dependent = {self._coord_index[n] for n in order}
        self.independent_coordinates: tuple[str, ...] = tuple(
            c for i, c in enumerate(self.coordinate_names) if i not in dependent)
        self._independent_idx = np.array([self._coord_index[c] for c in self.independent_coordinates],
                                         dtype=int)
        self.dependent_coordinates: tuple[str, ...] = tuple(order)
        if order:   # the home configuration obeys the couplings, as every configuration does
            with np.errstate(all="ignore"):   # a coupling undefined at home is reported when home is used
                self.home = _readonly(self.apply_couplings(self.home))

    def configuration(self, values=None, *, fill_couplings: bool | None = None,
                      measured: bool = False) -> np.ndarray:
        """The full joint-coordinate array for ``values``.

        ``values`` may be ``None`` (home), an array of length :attr:`nq` or of length
        ``len(independent_coordinates)`` (dependent joints are then computed from their couplings), a batch of
        such arrays (shape ``(B, n)``), or a mapping from coordinate names to values: coordinates not given
        take their home value, and coupled joints not given follow their coupling; a coupled joint given
        alone is solved for the joint it follows when the coupling is affine (with a warning), and one that
        contradicts its coupling is an error (:mod:`.named_values`).
        ``measured=True`` (joint states reported by a robot): a coupled joint given keeps the value given,
        unchecked, as robot_state_publisher shows what is reported.

        The last axis is always the coordinate axis, and its length alone says whether the values are full
        (:attr:`nq`) or independent-only: a ``(29, 28)`` array on a mechanism with nq = 29 and 28 independent
        coordinates is 29 configurations of the independent coordinates, never a transposed batch of 28 full
        configurations (transpose such a batch first).
        Raises :class:`InvalidConfiguration` for wrong shapes, unknown names (:class:`UnknownCoordinate`,
        also an ``UnknownJoint``), non-finite values, strings, booleans and complex values.
        """
        n = self.nq
        if values is None:
            return _all_finite(np.array(self.home), "the home configuration")
        if isinstance(values, Mapping):     # unknown names, couplings given from either side: named_values

            return configuration_from_mapping(self, values, measured)
        q = as_real_array(values, "joint values")
        if q.ndim not in (1, 2):
            raise InvalidConfiguration(f"joint values must have shape (n,) or (B, n), got {q.shape}")
        m = q.shape[-1]
        if m == n and not (fill_couplings and self.couplings):
            pass
        elif m == len(self.independent_coordinates) and self.couplings:
            full = np.empty(q.shape[:-1] + (n,))
            full[..., self._independent_idx] = q
            q = self.apply_couplings(full)
        elif m == n:
            q = self.apply_couplings(q)
        else:
            raise InvalidConfiguration(
                f"expected {n} joint values ({len(self.independent_coordinates)} independent), got {m}")
        if not np.all(np.isfinite(q)):
            raise InvalidConfiguration("joint values must be finite")
        return q

    def apply_couplings(self, q: np.ndarray, skip=()) -> np.ndarray:
        """A copy of ``q`` (shape (n,) or (B, n)) with every coupled joint set from its expression."""
        q = np.array(q, dtype=float)
        for name, expr in self.couplings.items():
            if name in skip:
                continue
            env = {v: q[..., self._coord_index[v]] for v in expr.variables}
            q[..., self._coord_index[name]] = expr(env)
        return q

    def coupling_jacobian(self, q) -> np.ndarray:
        """``dq_full / dq_independent`` (nq x n_independent) at ``q``: identity rows for independent
        coordinates, chain-rule rows for coupled ones."""
        q = np.asarray(q, dtype=float)
        n, m = self.nq, len(self.independent_coordinates)
        D = np.zeros((n, m))
        col = {c: k for k, c in enumerate(self.independent_coordinates)}
        for k, c in enumerate(self.independent_coordinates):
            D[self._coord_index[c], k] = 1.0
        for name, expr in self.couplings.items():
            env = {v: q[self._coord_index[v]] for v in expr.variables}
            row = np.zeros(m)
            for var, g in expr.gradient(env).items():
                row += g * D[self._coord_index[var]]
            D[self._coord_index[name]] = row
        del col
        return D

    def joint_rates(self, q, qdot) -> np.ndarray:
        """The full joint-rate vector (rad/s, m/s; length :attr:`nq`) at the full configuration ``q`` (shape
        (nq,)) for ``qdot`` given as an array of length :attr:`nq` (as given), an array of length
        ``len(independent_coordinates)`` (coupled rates follow by the chain rule,
        :meth:`coupling_jacobian`), or a ``{coordinate name: rate}`` mapping (rates not given are 0 for
        independent coordinates and follow the couplings for dependent ones)."""
        q = np.asarray(q, dtype=float)
        if isinstance(qdot, Mapping):
            rates = {}
            for k, v in qdot.items():
                if k not in self._coord_index:
                    raise InvalidConfiguration(f"unknown joint coordinate {k!r}")
                rates[k] = _finite_scalar(k, v)
            indep = np.array([rates.get(c, 0.0) for c in self.independent_coordinates])
            out = self.coupling_jacobian(q) @ indep if self.couplings else indep
            for k, v in rates.items():      # a dependent rate given explicitly is taken as given
                out[self._coord_index[k]] = v
            return out
        qd = as_real_array(qdot, "joint rates")
        _all_finite(qd, "the joint rates")
        if qd.shape == (self.nq,):
            out = qd.copy()
        elif self.couplings and qd.shape == (len(self.independent_coordinates),):
            out = self.coupling_jacobian(q) @ qd
        else:
            raise InvalidConfiguration(f"expected {self.nq} joint rates ({len(self.independent_coordinates)} "
                                       f"independent), got shape {qd.shape}")
        return _all_finite(out, "the joint rates")

    def within_limits(self, q, tol: float = 0.0) -> np.ndarray | bool:
        """True where every coordinate of ``q`` (shape (n,) or (B, n)) lies within its limits."""
        q = np.asarray(q, dtype=float)
        ok = (q >= self.lower_limits - tol) & (q <= self.upper_limits + tol)
        return ok.all(axis=-1)

    def random_configuration(self, rng=None, size=None, span: float = math.pi,
                             max_rounds: int = 100) -> np.ndarray:
        """Random joint values within limits: shape ``(nq,)``, or ``(size, nq)`` for an integer ``size``.

        Independent coordinates are uniform within their limits (unbounded ones in ``[-span, span]``,
        radians or metres); coupled coordinates follow their couplings. Draws whose coupled coordinates
        leave their own limits (``joint2 = 2*joint1`` with equal limits) are drawn again, so the result is
        uniform over the independent values that keep every coordinate within limits. A coupled coordinate
        that no draw of a first probe batch brings within its limits (a model whose mimic contradicts the
        limits) is not held to them; nor are draws still outside after ``max_rounds`` redraws.
        """
        rng = np.random.default_rng(rng)
        lo = np.where(np.isfinite(self.lower_limits), self.lower_limits, -span)
        hi = np.where(np.isfinite(self.upper_limits), self.upper_limits, span)

        def draw(n):
            q = rng.uniform(lo, hi, size=(n, self.nq))
            return self.apply_couplings(q) if self.couplings else q

        n = 1 if size is None else int(size)
        q = draw(n)
        if self.couplings and n:
            dep = self._attainable_dependents(lo, hi)

            def inside(x):
                return (x[:, dep] >= self.lower_limits[dep]) & (x[:, dep] <= self.upper_limits[dep])

            for _ in range(max_rounds):
                bad = np.flatnonzero(~inside(q).all(axis=1))
                if bad.size == 0:
                    break
                q[bad] = draw(bad.size)
        return q[0] if size is None else q

    def _attainable_dependents(self, lo, hi) -> np.ndarray:
        """Indices of the dependent coordinates whose limits some draw of a fixed probe batch meets (a
        property of the model, computed once per sampling range with its own seed and kept in the mechanism's
        derived data, :mod:`.data`)."""
        return memo(self, "model.attainable_dependents", 8).get(
            (lo.tobytes(), hi.tobytes()), lambda: self._probe_attainable(lo, hi))

    def _probe_attainable(self, lo, hi) -> np.ndarray:
        dep = np.array([self._coord_index[c] for c in self.dependent_coordinates], dtype=int)
        with np.errstate(all="ignore"):
            probe = self.apply_couplings(np.random.default_rng(0).uniform(lo, hi, size=(256, self.nq)))
        inside = (probe[:, dep] >= self.lower_limits[dep]) & (probe[:, dep] <= self.upper_limits[dep])
        result = dep[inside.any(axis=0)]
        result.flags.writeable = False
        return result

    # ------------------------------------------------------------------ compilation
    def _compile(self):
        c = SegmentTree()
        seg_parent = [-1]
        seg_coord = [-1]
        seg_kind = [0]          # 0 ground, 1 revolute about z, 2 prismatic along z
        seg_P = [np.eye(4)]
        seg_L = [np.eye(4)]
        seg_R = [np.eye(4)]
        body_seg = {self.ground: 0}
        body_T = {self.ground: np.eye(4)}  # T_seg_body
        for b in self._bodies[1:]:
            j = b.joint
            parent_seg = body_seg[b.parent]
            base = body_T[b.parent] @ j.placement   # joint frame in the parent segment frame
            motions = j.elementary_motions()
            if not motions:
                body_seg[b.name] = parent_seg
                body_T[b.name] = base
                continue
            start = self._joint_slices[j.name].start
            prev_R0 = None
            for k, (kind, axis, ci) in enumerate(motions):
                R0 = rotation_z_to(axis)
                if prev_R0 is None:
                    P = base.copy()
                else:
                    P = np.eye(4)
                    P[:3, :3] = prev_R0.T
                P[:3, :3] = P[:3, :3] @ R0
                if j.dof == 1 and j.offset != 0.0:
                    # fold the articulation offset into the placement: M(q + o) = M(o) M(q)
                    if kind == "R":
                        co, so = math.cos(j.offset), math.sin(j.offset)
                        P = P @ np.array([[co, -so, 0, 0], [so, co, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
                    else:
                        P = P @ np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, j.offset], [0, 0, 0, 1]])
                seg_parent.append(parent_seg if k == 0 else len(seg_P) - 1)
                seg_coord.append(start + ci)
                seg_kind.append(1 if kind == "R" else 2)
                seg_P.append(P)
                # edge view: the step frame is the segment frame turned back by R0
                if k == 0:
                    seg_L.append(inverse(body_T[b.parent]) @ P)
                else:
                    L = np.eye(4)
                    L[:3, :3] = prev_R0
                    seg_L.append(L @ P)
                R = np.eye(4)
                R[:3, :3] = R0.T
                seg_R.append(R)
                prev_R0 = R0
            body_seg[b.name] = len(seg_P) - 1
            T = np.eye(4)
            T[:3, :3] = prev_R0.T
            body_T[b.name] = T
        c.n_seg = len(seg_P)
        c.seg_parent = _readonly(seg_parent, int)
        c.seg_coord = _readonly(seg_coord, int)
        c.seg_kind = _readonly(seg_kind, int)
        c.seg_P = _readonly(np.array(seg_P))
        c.seg_L = _readonly(np.array(seg_L))
        c.seg_R = _readonly(np.array(seg_R))
        # frames: body frames first (in body order), then named frames
        frames: dict[str, FrameRef] = {}
        frame_seg, frame_T = [], []

        def add(name, body, T, kind):
            if name in frames:
                raise ModelStructureError(f"frame name {name!r} is used twice (frames and bodies share "
                                          f"one namespace)", ("frame", name))
            frames[name] = FrameRef(name, body, body_seg[body], len(frame_seg), kind)
            frame_seg.append(body_seg[body])
            frame_T.append(T)

        for b in self._bodies:
            add(b.name, b.name, body_T[b.name], "body")
        for b in self._bodies:
            for fname, Tf in b.frames.items():
                add(fname, b.name, body_T[b.name] @ np.asarray(Tf), b.frame_kinds.get(fname, "local"))
        c.frame_seg = _readonly(frame_seg, int)
        c.frame_T = _readonly(np.array(frame_T))
        c.nq = self.nq
        self._frames = frames
        self._compiled = c

    @property
    def segment_tree(self) -> SegmentTree:
        """The compiled segment tree (read-only arrays; see :class:`SegmentTree`)."""
        return self._compiled


def _all_finite(q: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(q)):
        raise InvalidConfiguration(f"{what}: not every value is finite (a coupling outside its domain?)")
    return q


def as_real_array(values, what: str) -> np.ndarray:
    """``values`` as a float array; strings, booleans and complex numbers are refused (``float('0.5')`` and
    ``float(True)`` would succeed, and numpy drops an imaginary part with only a warning)."""
    if isinstance(values, (str, bytes)):
        raise InvalidConfiguration(f"{what} must be numbers, got the string {values!r}")
    if type(values) is np.ndarray and values.dtype.kind == "f":
        return values.astype(float, copy=False)
    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as exc:   # ragged nesting
        raise InvalidConfiguration(f"{what} are not an array of numbers: {exc}") from None
    kind = a.dtype.kind
    if kind == "O":
        if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in a.flat):
            raise InvalidConfiguration(f"{what} must be real numbers (no strings, booleans or complex values)")
    elif kind not in "iuf":
        kinds = {"b": "booleans", "c": "complex numbers", "U": "strings", "S": "strings"}
        raise InvalidConfiguration(f"{what} must be real numbers, got {kinds.get(kind, a.dtype.name)}")
    try:
        return a.astype(float)
    except (TypeError, ValueError) as exc:
        raise InvalidConfiguration(f"{what} are not an array of numbers: {exc}") from None


def _duplicates(names) -> list[str]:
    seen, dup = set(), []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    return dup


def _topological(bodies: list[BodySpec], ground: str) -> list[BodySpec]:
    by_name: dict[str, BodySpec] = {}
    for b in bodies:
        if b.name in by_name:
            raise ModelStructureError(f"duplicate body name {b.name!r}", ("body", b.name))
        by_name[b.name] = b
    if ground in by_name:
        g = by_name.pop(ground)
        if g.parent is not None or g.joint is not None:
            raise ModelStructureError(f"the ground body {ground!r} cannot have a parent or a joint")
    else:
        g = BodySpec(ground, None, None)
    children: dict[str, list[BodySpec]] = {ground: []}
    for b in by_name.values():
        children.setdefault(b.name, [])
    for b in by_name.values():
        if b.parent is None or b.joint is None:
            raise ModelStructureError(f"body {b.name!r} needs a parent and a joint", ("body", b.name))
        if b.parent not in children:
            raise ModelStructureError(f"body {b.name!r}: parent {b.parent!r} does not exist",
                                      ("body", b.name))
        children[b.parent].append(b)
    # depth-first, children in insertion order: each branch (an arm, a leg) stays contiguous
    order = []
    stack = [g]
    while stack:
        b = stack.pop()
        order.append(b)
        stack.extend(reversed(children[b.name]))
    if len(order) != len(by_name) + 1:
        lost = sorted(set(by_name) - {b.name for b in order})
        raise ModelStructureError(f"bodies not connected to the ground (a cycle of parents?): {lost}",
                                  ("body", lost[0]))
    return order
