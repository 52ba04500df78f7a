"""Mutable construction of mechanisms; every edit of a built mechanism goes through here.

>>> b = MechanismBuilder("arm")
>>> b.add_body("link1", joint=Joint.revolute("joint1"))
>>> b.add_body("link2", parent="link1", joint=Joint.revolute("joint2", placement=translation(1, 0, 0)))
>>> b.add_frame("link2", "tool", translation(0.5, 0, 0))
>>> arm = b.build()

A body's parent defaults to the ground. :meth:`MechanismBuilder.attach` grafts another mechanism at a named
mount frame (CLARAty 6.3-6.6); :meth:`Mechanism.edit` (via :func:`edit`) starts a builder from a built
mechanism so that editing returns a new one.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

import numpy as np

from .errors import ExpressionError, ModelStructureError, UnknownBody, UnknownFrame
from .expressions import Expression, parse_expression
from .joints import Joint
from .model import GROUND, BodySpec, BoundingShape, MassProperties, Mechanism, _topological


class MechanismBuilder:
    """Collects bodies, joints and frames; :meth:`build` compiles them into an immutable Mechanism."""

    def __init__(self, name: str = "mechanism", ground: str = GROUND, source: str | None = None):
        self.name = name
        self.ground = ground
        self.source = source
        self.metadata: dict[str, object] = {}
        self._bodies: dict[str, BodySpec] = {}
        self._ground_spec = BodySpec(ground, None, None)   # the ground may carry frames, mass, shapes

    # ------------------------------------------------------------------ bodies
    def add_body(self, name: str, parent: str | None = None, joint: Joint | None = None,
                 frames: Mapping[str, np.ndarray] | None = None, mass: MassProperties | None = None,
                 shapes=(), graphics: str | None = None,
                 frame_kinds: Mapping[str, str] | None = None) -> "MechanismBuilder":
        """Add a body joined to ``parent`` (the ground if None) by ``joint`` (fixed at identity if None)."""
        if not name:
            raise ModelStructureError("a body needs a name")
        if name == self.ground or name in self._bodies:
            raise ModelStructureError(f"body {name!r} already exists", ("body", name))
        parent = self.ground if parent is None else parent
        joint = Joint.fixed(f"{name}_joint") if joint is None else joint
        self._bodies[name] = BodySpec(
            name, parent, joint, {k: _transform(v, f"frame {k!r}") for k, v in (frames or {}).items()},
            mass or MassProperties(), tuple(shapes), graphics, dict(frame_kinds or {}))
        return self

    def has_body(self, name: str) -> bool:
        return name == self.ground or name in self._bodies

    def body(self, name: str) -> BodySpec:
        if name == self.ground:
            return self._ground_spec
        try:
            return self._bodies[name]
        except KeyError:
            raise UnknownBody(name, list(self._bodies)) from None

    def update_body(self, name: str, **changes) -> "MechanismBuilder":
        """Replace fields of a body spec (``joint=``, ``mass=``, ``shapes=``, ``parent=`` ...)."""
        self._put(replace(self.body(name), **changes))
        return self

    def _put(self, spec: BodySpec) -> None:
        if spec.name == self.ground:
            if spec.parent is not None or spec.joint is not None:
                raise ModelStructureError(f"the ground body {self.ground!r} cannot have a parent or a joint")
            self._ground_spec = spec
        else:
            self._bodies[spec.name] = spec

    def set_joint(self, body: str, joint: Joint) -> "MechanismBuilder":
        return self.update_body(body, joint=joint)

    def remove_body(self, name: str) -> "MechanismBuilder":
        """Remove a body and its whole subtree."""
        if name == self.ground:
            raise ModelStructureError("the ground body cannot be removed")
        self.body(name)
        doomed = {name}
        changed = True
        while changed:
            changed = False
            for b in self._bodies.values():
                if b.parent in doomed and b.name not in doomed:
                    doomed.add(b.name)
                    changed = True
        for n in doomed:
            del self._bodies[n]
        return self

    def add_frame(self, body: str, name: str, transform=None, kind: str = "local",
                  relative_to: str | None = None) -> "MechanismBuilder":
        """Add a named frame to ``body``. ``transform`` is relative to the body frame, or to
        ``relative_to`` (another frame of the same body, CLARAty 6.7); it is stored relative to the body."""
        spec = self.body(body)
        T = _transform(np.eye(4) if transform is None else transform, f"frame {name!r}")
        if relative_to is not None and relative_to != body:
            if relative_to not in spec.frames:
                raise UnknownFrame(relative_to, list(spec.frames))
            T = np.asarray(spec.frames[relative_to]) @ T
        frames = dict(spec.frames)
        if name in frames:
            raise ModelStructureError(f"body {body!r} already has a frame {name!r}")
        frames[name] = T
        kinds = dict(spec.frame_kinds)
        kinds[name] = kind
        self._put(replace(spec, frames=frames, frame_kinds=kinds))
        return self

    def add_shape(self, body: str, shape: BoundingShape) -> "MechanismBuilder":
        spec = self.body(body)
        self._put(replace(spec, shapes=spec.shapes + (shape,)))
        return self

    def find_frame(self, name: str) -> tuple[str, np.ndarray]:
        """``(body, T_body_frame)`` of a body frame or named frame."""
        if name == self.ground or name in self._bodies:
            return name, np.eye(4)
        specs = [self._ground_spec, *self._bodies.values()]
        for b in specs:
            if name in b.frames:
                return b.name, np.asarray(b.frames[name])
        raise UnknownFrame(name, [self.ground, *self._bodies] + [f for b in specs for f in b.frames])

    # ------------------------------------------------------------------ assembly
    def attach(self, appendage, mount: str, prefix: str = "", placement=None) -> "MechanismBuilder":
        """Graft ``appendage`` (a Mechanism or builder) at the frame ``mount`` (CLARAty 6.3-6.6).

        The appendage's bodies on its ground are re-parented to the body that carries ``mount``. Their
        joint placement becomes ``T_body_mount @ placement @ own placement``, where ``placement`` (identity
        by default) overrides the mounting of the appendage; an appendage file holds no mounting of its own.
        Every body, joint and frame name of the appendage gets ``prefix``; couplings are renamed to match.
        The appendage's ground is rigidly the mount: its named frames and bounding shapes join the mount's
        body and its mass is lumped into that body's (:func:`combine_mass`).
        """
        mount_body, T_mount = self.find_frame(mount)
        P = np.eye(4) if placement is None else _transform(placement, "attach placement")
        specs = _specs_of(appendage)
        app_ground = appendage.ground
        renamed_joints = {b.joint.name for b in specs}
        for b in specs:
            joint = b.joint
            parent = b.parent
            if parent == app_ground:
                parent = mount_body
                joint = joint.with_(placement=T_mount @ P @ joint.placement)
            else:
                parent = prefix + parent
            changes = {"name": prefix + joint.name}
            if joint.coupling is not None and prefix:
                changes["coupling"] = _rename_variables(joint.coupling, renamed_joints, prefix)
            joint = joint.with_(**changes)
            frames = {prefix + k: v for k, v in b.frames.items()}
            kinds = {prefix + k: v for k, v in b.frame_kinds.items()}
            shapes = tuple(replace(s, name=prefix + s.name,
                                   parent=None if s.parent is None else prefix + s.parent)
                           for s in b.shapes)
            name = prefix + b.name
            if self.has_body(name):
                raise ModelStructureError(f"attaching at {mount!r}: body {name!r} already exists "
                                          f"(use a prefix)")
            self._bodies[name] = BodySpec(name, parent, joint, frames, b.mass, shapes, b.graphics, kinds)
        self._graft_ground(_ground_of(appendage), mount_body, T_mount @ P, prefix)
        return self

    def _graft_ground(self, g: BodySpec | None, body: str, T_body_g: np.ndarray, prefix: str) -> None:
        """The appendage's ground ``g`` is rigidly the mount: its named frames and bounding shapes join
        ``body`` (prefixed, placed by ``T_body_g``) and its mass is lumped into ``body``'s."""
        if g is None or not (g.frames or g.shapes or g.mass.mass or np.any(g.mass.inertia)):
            return
        for fname, T in g.frames.items():
            self.add_frame(body, prefix + fname, T_body_g @ np.asarray(T), g.frame_kinds.get(fname, "local"))
        spec = self.body(body)
        shapes = tuple(replace(s, name=prefix + s.name,
                               parent=None if s.parent is None else prefix + s.parent,
                               transform=T_body_g @ np.asarray(s.transform)) for s in g.shapes)
        self._put(replace(spec, shapes=spec.shapes + shapes,
                          mass=combine_mass(spec.mass, g.mass, T_body_g)))
        return None

    # ------------------------------------------------------------------ build
    def build(self) -> Mechanism:
        return build_mechanism(self.name, [self._ground_spec, *self._bodies.values()], self.ground, self.source,
                               self.metadata)


def build_mechanism(name: str, bodies, ground: str = GROUND, source: str | None = None,
                    metadata: Mapping[str, object] | None = None) -> Mechanism:
    """The :class:`Mechanism` of ``bodies`` (``BodySpec`` values, the ground's first or not at all), its joints'
    coupling text parsed here (:func:`parse_couplings`): the model takes finished values. What every reader
    and :meth:`MechanismBuilder.build` call; also for a mechanism's bodies again with other metadata."""
    bodies = list(bodies)
    coupled = any(b.joint is not None and b.joint.coupling is not None for b in bodies)
    # the joints in the model's order (depth first), so the dependencies-first order is the one it always had
    couplings = parse_couplings(b.joint for b in _topological(bodies, ground)[1:]) if coupled else {}
    return Mechanism(name, bodies, ground, source, metadata, couplings=couplings)


def parse_couplings(joints) -> dict[str, Expression]:
    """The coupling expressions of ``joints`` (their ``coupling`` text, ``"2*joint1"``) parsed with the safe
    evaluator against the other joints' coordinates, dependencies first: ``{joint name: Expression}``, what
    :class:`Mechanism` takes as ``couplings``. Raises :class:`ModelStructureError` on a syntax error, a name
    that is no other coordinate, or couplings that go round in a circle."""
    joints = list(joints)
    coords = {c for j in joints for c in j.coordinate_names}
    exprs = {}
    for j in joints:
        if j.coupling is None:
            continue
        try:
            exprs[j.name] = parse_expression(j.coupling, coords - {j.name})
        except ExpressionError as exc:
            raise ModelStructureError(f"joint {j.name!r}: coupling: {exc}", ("coupling", j.name)) from None
    order = []
    state: dict[str, int] = {}      # 1: on the current path, 2: done
    for root in exprs:              # depth first, dependencies first; iterative (chains of any length)
        if state.get(root) == 2:
            continue
        path, todo = [root], [iter(exprs[root].variables)]
        state[root] = 1
        while todo:
            for dep in todo[-1]:
                if dep not in exprs or state.get(dep) == 2:
                    continue
                if state.get(dep) == 1:
                    raise ModelStructureError(f"circular joint couplings: {' -> '.join(path + [dep])}",
                                              ("coupling", dep))
                state[dep] = 1
                path.append(dep)
                todo.append(iter(exprs[dep].variables))
                break
            else:
                todo.pop()
                n = path.pop()
                state[n] = 2
                order.append(n)
    return {n: exprs[n] for n in order}


def edit(mechanism: Mechanism) -> MechanismBuilder:
    """A builder holding everything of ``mechanism``; building it gives a new, independent mechanism."""
    b = MechanismBuilder(mechanism.name, mechanism.ground, mechanism.source)
    b.metadata = dict(mechanism.metadata)
    b._ground_spec = mechanism.bodies[0]
    for spec in mechanism.bodies[1:]:
        b._bodies[spec.name] = spec
    return b


def attach(base: Mechanism, appendage, mount: str, prefix: str = "", placement=None) -> Mechanism:
    """A new mechanism: ``base`` with ``appendage`` attached at ``mount``."""
    return edit(base).attach(appendage, mount, prefix, placement).build()


def combine_mass(a: MassProperties, b: MassProperties, T_a_b=None) -> MassProperties:
    """Mass properties of two rigidly joined parts, in ``a``'s body frame; ``b``'s are given in a frame
    whose pose in ``a``'s is ``T_a_b`` (identity by default). The inertia is about the joint centre of mass
    (parallel-axis theorem), kg m^2."""
    T = np.eye(4) if T_a_b is None else np.asarray(T_a_b, dtype=float)
    R = T[:3, :3]
    cb = R @ b.com + T[:3, 3]
    Ib = R @ b.inertia @ R.T
    m = a.mass + b.mass
    if m <= 0.0:
        return MassProperties(0.0, a.com, a.inertia + Ib)
    c = (a.mass * a.com + b.mass * cb) / m

    def shift(mass, d):
        return mass * (float(d @ d) * np.eye(3) - np.outer(d, d))

    return MassProperties(m, c, a.inertia + shift(a.mass, a.com - c) + Ib + shift(b.mass, cb - c))


def _ground_of(m) -> BodySpec | None:
    if isinstance(m, Mechanism):
        return m.bodies[0]
    if isinstance(m, MechanismBuilder):
        return m._ground_spec
    return None


def _specs_of(m) -> list[BodySpec]:
    if isinstance(m, Mechanism):
        return list(m.bodies[1:])
    if isinstance(m, MechanismBuilder):
        return list(m._bodies.values())
    raise TypeError(f"cannot attach a {type(m).__name__}")


def _rename_variables(expr: str, names, prefix: str) -> str:
    import ast

    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            node.id = prefix + node.id
    return ast.unparse(tree)


def _transform(T, what: str) -> np.ndarray:
    A = np.array(T, dtype=float)
    if A.shape != (4, 4) or not np.all(np.isfinite(A)):
        raise ModelStructureError(f"{what}: expected a finite 4x4 transform")
    A.setflags(write=False)
    return A

