"""The parts a mechanism is built from, as immutable values: :class:`BodySpec` (a body with its joint to the
parent, named frames ``T_body_frame``, mass properties and bounding shapes), :class:`MassProperties` (kg,
centre of mass in m and inertia about it in kg m^2, body axes), :class:`BoundingShape` (a shape placed in
its body), and :class:`ReadOnlyMapping`. :mod:`.model` compiles them into a :class:`~.model.Mechanism`
and re-exports these names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from .errors import ModelStructureError
from .joints import Joint
from .shapes import geometry_from


def _readonly(a, dtype=float) -> np.ndarray:
    a = np.array(a, dtype=dtype)
    a.setflags(write=False)
    return a


class ReadOnlyMapping(Mapping):
    """A mapping that cannot be changed (a copy of the one it is made from); unlike
    :class:`types.MappingProxyType` it pickles, so a mechanism can go to another process."""

    __slots__ = ("_data",)

    def __init__(self, data=()):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"ReadOnlyMapping({self._data!r})"


@dataclass(frozen=True, eq=False)
class MassProperties:
    """Mass (kg), centre of mass in the body frame (m), inertia tensor about the centre of mass in body
    axes (kg m^2)."""

    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: _readonly(np.zeros(3)))
    inertia: np.ndarray = field(default_factory=lambda: _readonly(np.zeros((3, 3))))

    def __post_init__(self):
        object.__setattr__(self, "mass", float(self.mass))
        object.__setattr__(self, "com", _readonly(np.reshape(self.com, 3)))
        object.__setattr__(self, "inertia", _readonly(np.reshape(self.inertia, (3, 3))))


@dataclass(frozen=True, eq=False)
class BoundingShape:
    """One node of a body's bounding-shape tree (CLARAty 4.12, 4.15.1), pose relative to the body frame.

    ``type`` is ``box`` (dimensions: full x, y, z lengths), ``cylinder``, ``capsule`` or ``cone`` (radius,
    length along z), ``sphere`` (radius), ``mesh`` or ``convex`` (``mesh`` holds the file reference as
    written, ``mesh_path`` the file it resolved to on this machine or None, dimensions the scale; ``convex``
    uses the mesh's convex hull) or ``none`` (a pure container). :attr:`geometry` is the typed shape
    (:mod:`mechanism_model_core.shapes`). ``parent`` names the enclosing shape of the same body
    (``None`` at the top; a parent contains its children); ``level`` is the resolution (1 coarsest);
    leaves are the finest shapes. ``tolerance`` (m) pads the shape in collision checks (a negative value,
    as the CLARAty samples' -1, means none); shapes with
    ``ignore_collisions`` are drawn but never checked. ``source`` is ``(file, line)`` where the shape was
    read, for error messages. Bad dimensions raise :class:`ModelStructureError`.
    """

    name: str
    type: str = "box"
    transform: np.ndarray = field(default_factory=lambda: _readonly(np.eye(4)))
    dimensions: tuple = ()
    parent: str | None = None
    is_container: bool = False
    level: int = 1
    ignore_collisions: bool = False
    tolerance: float = 0.0
    link: str | None = None
    mesh: str | None = None
    mesh_path: str | None = None
    source: tuple | None = None
    #: RGBA in [0, 1] for viewers (a URDF visual's material), or None: the body's default colour
    color: tuple | None = None

    def __post_init__(self):
        object.__setattr__(self, "transform", _readonly(self.transform))
        if self.color is not None:
            try:
                rgba = tuple(float(c) for c in self.color)
            except (TypeError, ValueError):
                rgba = ()
            if len(rgba) != 4 or not all(0.0 <= c <= 1.0 for c in rgba):
                raise ModelStructureError(f"bounding shape {self.name!r}: color {self.color!r} is not four "
                                          f"RGBA values in [0, 1]")
            object.__setattr__(self, "color", rgba)
        try:
            object.__setattr__(self, "dimensions", tuple(float(d) for d in self.dimensions))
            geometry_from(self.type, self.dimensions, self.mesh, self.mesh_path)
        except (TypeError, ValueError) as exc:
            raise ModelStructureError(f"bounding shape {self.name!r}: {exc}", ("shape", self.name)) from None
        if not math.isfinite(float(self.tolerance)):
            raise ModelStructureError(f"bounding shape {self.name!r}: tolerance must be finite, got "
                                      f"{self.tolerance!r}", ("shape", self.name))
        if not np.all(np.isfinite(self.transform)):
            raise ModelStructureError(f"bounding shape {self.name!r}: its pose is not finite",
                                      ("shape", self.name))

    @property
    def geometry(self):
        """The typed shape (:class:`~mechanism_model_core.shapes.Geometry`), None for ``none``."""
        return geometry_from(self.type, self.dimensions, self.mesh, self.mesh_path)


@dataclass(frozen=True, eq=False)
class BodySpec:
    """Constant data of one body: its joint to the parent, named frames (``T_body_frame``), mass, shapes."""

    name: str
    parent: str | None
    joint: Joint | None
    frames: Mapping[str, np.ndarray] = field(default_factory=dict)
    mass: MassProperties = field(default_factory=MassProperties)
    shapes: tuple = ()
    graphics: str | None = None
    frame_kinds: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):   # read-only copies: a built mechanism's frames cannot change under it
        object.__setattr__(self, "frames", ReadOnlyMapping({k: _readonly(T) for k, T in self.frames.items()}))
        object.__setattr__(self, "frame_kinds", ReadOnlyMapping(self.frame_kinds))
