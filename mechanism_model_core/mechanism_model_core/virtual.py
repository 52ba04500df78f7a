"""Virtual articulation (MSim, Vona 2009): add virtual joints and links to a mechanism at run time, constrain
them, operate them, remove them again.

A virtual link is an ordinary body marked virtual in the mechanism's metadata. Adding or removing one returns a
new :class:`~mechanism_model_core.model.Mechanism` (the original is never changed). Closing a chain through a
virtual link is a :class:`~mechanism_model_core.constraints.LoopClosure` between one of its frames and a frame of
the real mechanism; *operating* the virtual joint means holding it at a value and solving the closure, so the
real joints move as the virtual joint prescribes (MSim's ATHLETE example: a virtual revolute joint between the
ground and the deck tilts a camera about a chosen axis).

>>> m2 = add_virtual_link(rover, "tilt", Joint.revolute("tilt_joint", placement=T_ground_axis),
...                       frames={"tilt_handle": T_axis_handle})
>>> va = VirtualArticulation(m2, [LoopClosure("tilt_handle", "deck")], q_start)
>>> r = va.operate(tilt_joint=0.2)          # deck tilted by 0.2 rad about the virtual axis
>>> real_q = va.real_configuration(r.q)     # joint values of the original mechanism
>>> m = remove_virtual(m2)                   # the original structure again
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .constraints import Constraint
from .builder import edit
from .errors import ModelStructureError
from .ik import IKResult, solve_ik
from .joints import Joint
from .model import Mechanism

__all__ = ["VIRTUAL_KEY", "VirtualArticulation", "add_virtual_link", "real_coordinates", "remove_virtual",
           "virtual_bodies"]

#: metadata key holding the names of the virtual bodies
VIRTUAL_KEY = "virtual_bodies"


def virtual_bodies(mechanism: Mechanism) -> list[str]:
    """Names of the virtual bodies of ``mechanism``."""
    return list(mechanism.metadata.get(VIRTUAL_KEY, ()))


def add_virtual_link(mechanism: Mechanism, name: str, joint: Joint, parent: str | None = None,
                     frames: Mapping[str, np.ndarray] | None = None) -> Mechanism:
    """A new mechanism with a virtual body ``name`` joined by ``joint`` to the frame ``parent`` (the ground
    by default; a body frame or a named frame). ``joint.placement`` is relative to that frame; ``frames``
    are named frames of the virtual body (``T_body_frame``)."""
    b = edit(mechanism)
    if parent is None or parent == mechanism.ground:
        carrier, T = mechanism.ground, np.eye(4)
    else:
        carrier = mechanism.frame(parent).body
        T = mechanism.frame_in_body(parent)
    b.add_body(name, carrier, joint.with_(placement=T @ np.asarray(joint.placement)), frames=frames)
    b.metadata = dict(mechanism.metadata)
    b.metadata[VIRTUAL_KEY] = tuple(virtual_bodies(mechanism)) + (name,)
    return b.build()


def remove_virtual(mechanism: Mechanism, names: Sequence[str] | None = None) -> Mechanism:
    """A new mechanism without the virtual bodies ``names`` (all of them by default) and their subtrees."""
    virt = virtual_bodies(mechanism)
    names = virt if names is None else list(names)
    unknown = [n for n in names if n not in virt]
    if unknown:
        raise ModelStructureError(f"not virtual bodies: {unknown} (virtual: {virt})")
    b = edit(mechanism)
    for n in names:
        if b.has_body(n):
            b.remove_body(n)
    b.metadata = dict(mechanism.metadata)
    left = tuple(v for v in virt if v not in names and b.has_body(v))
    if left:
        b.metadata[VIRTUAL_KEY] = left
    else:
        b.metadata.pop(VIRTUAL_KEY, None)
    return b.build()


def real_coordinates(with_virtual: Mechanism, real: Mechanism, q) -> np.ndarray:
    """The joint values of ``real`` taken from a configuration ``q`` of ``with_virtual`` (by name)."""
    q = with_virtual.configuration(q)
    return np.array([q[with_virtual.coordinate_index(n)] for n in real.coordinate_names])


class VirtualArticulation:
    """Operate a mechanism that carries virtual links: holds the constraints that close chains through them
    and the current configuration, and moves the virtual joints on request."""

    def __init__(self, mechanism: Mechanism, constraints: Sequence[Constraint] = (), q=None):
        """``q``: a configuration of ``mechanism``, or the joint values of the real mechanism alone (the
        virtual joints then start at their home values)."""
        if not virtual_bodies(mechanism):
            raise ModelStructureError("the mechanism has no virtual bodies; use add_virtual_link first")
        self.mechanism = mechanism
        self.constraints = list(constraints)
        virt = set(self.virtual_coordinates())
        real = [c for c in mechanism.coordinate_names if c not in virt]
        if q is not None and not isinstance(q, Mapping) and np.ndim(q) == 1 and len(q) == len(real) \
                and len(real) != mechanism.nq:
            q = dict(zip(real, np.asarray(q, dtype=float).tolist()))   # values of the real mechanism
        self.q = mechanism.configuration(q)

    def virtual_coordinates(self) -> list[str]:
        m = self.mechanism
        out = []
        for name in virtual_bodies(m):
            for b in m.iter_bodies():
                if name in m.path_to_ground(b.name) and b.joint is not None:
                    out.extend(c for c in b.joint.coordinate_names if c not in out)
        return out

    def settle(self, **solve_options) -> IKResult:
        """Solve the constraints with every joint free (e.g. to close the chains after adding a link)."""
        r = solve_ik(self.mechanism, self.constraints, self.q, **solve_options)
        self.q = r.q
        return r

    def operate(self, values: Mapping[str, float] | None = None, locked: Sequence[str] = (),
                **kw_values) -> IKResult:
        """Set virtual (or real) joint coordinates to ``values`` and solve the constraints with those
        coordinates held, starting from the current configuration; the configuration follows a successful
        solve. ``locked`` holds further joints where they are."""
        vals = dict(values or {})
        vals.update(kw_values)
        solve_options = {k: vals.pop(k) for k in list(vals) if k in ("timeout", "rng", "solver")}
        q = self.q.copy()
        for k, v in vals.items():
            q[self.mechanism.coordinate_index(k)] = float(v)
        r = solve_ik(self.mechanism, self.constraints, q, locked=tuple(vals) + tuple(locked), **solve_options)
        if r.success:
            self.q = r.q
        return r

    def real_configuration(self, real: Mechanism, q=None) -> np.ndarray:
        """The current (or given) configuration restricted to the coordinates of ``real``."""
        return real_coordinates(self.mechanism, real, self.q if q is None else q)
