"""The collision matrix: which body pairs may collide and are therefore checked (CLARAty section 10).

Default rule: every pair of bodies is checked except

* bodies joined rigidly: connected through fixed joints only (``Rigid``), and
* adjacent bodies: the rigid groups on either side of one moving joint (``Adjacent``; their shapes touch
  at the joint by design), except across a 6-DOF floating joint, which joins nothing physically (a free
  body is checked against what is fixed to the ground).

A model file may change it: SRDF ``<disable_collisions link1= link2= reason=/>`` (MoveIt's format, read by
:func:`mechanism_model_core.io.srdf.read_srdf`) or the CLARAty XML ``<Collision_Matrix>`` element
(``default="true|false"``, ``<Disable body1= body2= reason=/>`` and ``<Enable body1= body2=/>`` children), kept in ``Mechanism.metadata
["collision_matrix"]``. :func:`.generate.generate_collision_matrix` builds one as MoveIt's setup assistant
does.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..builder import build_mechanism
from ..errors import UnknownBody

METADATA_KEY = "collision_matrix"


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def rigid_groups(mech) -> dict[str, str]:
    """``{body: representative}``: bodies connected through fixed joints share a representative."""
    rep = {}
    for spec in mech.bodies:
        if spec.parent is not None and spec.joint is not None and spec.joint.dof == 0:
            rep[spec.name] = rep[spec.parent]
        else:
            rep[spec.name] = spec.name
    return rep


def default_disabled(mech) -> dict[tuple[str, str], str]:
    """The pairs the default rule leaves out, with the reason (``Rigid`` or ``Adjacent``)."""
    rep = rigid_groups(mech)
    groups: dict[str, list[str]] = {}
    for b, r in rep.items():
        groups.setdefault(r, []).append(b)
    out = {}
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                out[_key(a, b)] = "Rigid"
    for spec in mech.bodies:
        if spec.parent is None or spec.joint is None or spec.joint.dof == 0 or spec.joint.dof == 6:
            continue        # a 6-DOF (floating) joint joins nothing physically: its two sides are checked
        for a in groups[rep[spec.name]]:
            for b in groups[rep[spec.parent]]:
                out.setdefault(_key(a, b), "Adjacent")
    return out


class CollisionMatrix:
    """Which body pairs are checked. Immutable; ``disabled`` maps sorted body pairs to a reason string."""

    __slots__ = ("bodies", "disabled")

    def __init__(self, bodies: Iterable[str], disabled: Mapping[tuple[str, str], str] = ()):
        self.bodies = tuple(bodies)
        known = set(self.bodies)
        d = {}
        for (a, b), why in dict(disabled).items():
            for n in (a, b):
                if n not in known:
                    raise UnknownBody(n, list(self.bodies))
            if a != b:
                d[_key(a, b)] = str(why)
        self.disabled = d

    @classmethod
    def default(cls, mech) -> "CollisionMatrix":
        return cls(mech.body_names, default_disabled(mech))

    @classmethod
    def of(cls, mech) -> "CollisionMatrix":
        """The mechanism's own matrix: from its model file (metadata) or the default rule."""
        spec = mech.metadata.get(METADATA_KEY)
        if spec is None:
            return cls.default(mech)
        disabled = default_disabled(mech) if spec.get("default", True) else {}
        for a, b in spec.get("enabled", ()):
            disabled.pop(_key(a, b), None)
        for a, b, why in spec.get("disabled", ()):
            disabled[_key(a, b)] = why
        return cls(mech.body_names, disabled)

    def allowed(self, a: str, b: str) -> bool:
        """True when the pair (a, b) is checked."""
        return a != b and _key(a, b) not in self.disabled

    def pairs(self, bodies: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """The checked pairs among ``bodies`` (every body by default), in body order."""
        names = list(self.bodies if bodies is None else bodies)
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if self.allowed(a, b)]

    def disable(self, pairs, reason: str = "User") -> "CollisionMatrix":
        d = dict(self.disabled)
        for a, b in pairs:
            d[_key(a, b)] = reason
        return CollisionMatrix(self.bodies, d)

    def enable(self, pairs) -> "CollisionMatrix":
        d = dict(self.disabled)
        for a, b in pairs:
            d.pop(_key(a, b), None)
        return CollisionMatrix(self.bodies, d)

    def as_metadata(self) -> dict:
        """The form ``Mechanism.metadata["collision_matrix"]`` holds (every disabled pair listed)."""
        return {"default": False, "disabled": [(a, b, r) for (a, b), r in sorted(self.disabled.items())],
                "enabled": []}

    def to_srdf(self, robot_name: str) -> str:
        """An SRDF document with one ``disable_collisions`` per disabled pair (MoveIt's format)."""
        from lxml import etree

        root = etree.Element("robot", name=robot_name)
        root.append(etree.Comment(" collision matrix written by mechanism_model_core "))
        for (a, b), why in sorted(self.disabled.items()):
            etree.SubElement(root, "disable_collisions", link1=a, link2=b, reason=why)
        etree.indent(root, space="  ")
        return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="utf-8").decode()

    def __len__(self):
        return len(self.disabled)

    def __repr__(self):
        return f"<CollisionMatrix: {len(self.bodies)} bodies, {len(self.disabled)} disabled pairs>"


def with_collision_matrix(mech, matrix: CollisionMatrix):
    """A new mechanism like ``mech`` carrying ``matrix`` (written by the CLARAty XML saver)."""
    meta = dict(mech.metadata)
    meta[METADATA_KEY] = matrix.as_metadata()
    return build_mechanism(mech.name, list(mech.bodies), mech.ground, mech.source, meta)
