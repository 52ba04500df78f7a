"""Typed bounding-shape geometry (CLARAty 4.15.1.5): one class per kind, with named dimensions in metres.

Every shape is given in its own frame; a :class:`~mechanism_model_core.model.BoundingShape` places it in a
body frame (``transform`` = ``T_body_shape``) and says where it sits in the body's shape tree. These classes
are plain, immutable data (numpy only); :mod:`.collision.coal_backend` turns them into ``coal`` geometry.

========================  =========================================================================
kind                      geometry, in the shape frame
========================  =========================================================================
:class:`Sphere`           ``radius``, centred on the origin
:class:`Box`              full side lengths ``x``, ``y``, ``z``, centred on the origin
:class:`Cylinder`         ``radius``, full ``length`` along z, centred on the origin
:class:`Capsule`          ``radius``, ``length`` of the cylindrical part along z (total length + 2 r)
:class:`Cone`             base ``radius`` at z = -length/2, apex at z = +length/2
:class:`ConvexHull`       the convex hull of ``vertices`` (N x 3)
:class:`TriangleMesh`     ``vertices`` (N x 3) and ``faces`` (M x 3 indices); closed or open (a wall)
:class:`HeightField`      terrain ``heights[i, j]`` at ``x[j]``, ``y[i]`` (regular grids, ascending)
:class:`HalfSpace`        every point with ``normal . p <= offset`` (an infinite flat ground)
:class:`MeshFile`         a reference to a mesh file (``uri`` as written, ``path`` as resolved,
                          ``scale``); loaded into a :class:`TriangleMesh` or :class:`ConvexHull` when
                          a collision model is built (:mod:`.collision.meshes`)
========================  =========================================================================

Sizes may be 0 (a flat box is a wall, a zero-radius capsule a segment). Bad dimensions (negative, NaN,
infinite) raise :class:`ValueError` with what is
wrong; the model-file readers turn it into a ``ModelFileError`` naming the file and line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: The shape kinds a :class:`~mechanism_model_core.model.BoundingShape` may have.
SHAPE_TYPES = ("box", "cylinder", "sphere", "capsule", "cone", "mesh", "convex", "none")


def _size(name: str, v, allow_zero: bool = True) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} is not a number: {v!r}") from None
    if not math.isfinite(f):
        raise ValueError(f"{name} must be finite, got {v!r}")
    if f < 0 or (f == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}, got {f!r}")
    return f


def _scale(name: str, v) -> float:
    """A scale factor: finite and not zero (negative: a mirror)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{name} is not a number: {v!r}") from None
    if not math.isfinite(f) or f == 0:
        raise ValueError(f"{name} must be finite and not zero, got {v!r}")
    return f


def _points(name: str, a, min_rows: int = 1) -> np.ndarray:
    arr = np.array(a, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] < min_rows:
        raise ValueError(f"{name} must be an (N, 3) array with N >= {min_rows}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    arr.setflags(write=False)
    return arr


class Geometry:
    """Base of every shape kind."""

    kind = "none"

    def bounding_radius(self) -> float:
        """Radius (m) of a sphere about the shape-frame origin that contains the shape (inf if unbounded)."""
        raise NotImplementedError

    def support_points(self) -> np.ndarray:
        """Points (N x 3, shape frame) whose convex hull contains the shape; used for containment checks."""
        raise NotImplementedError


@dataclass(frozen=True)
class Sphere(Geometry):
    radius: float
    kind = "sphere"

    def __post_init__(self):
        object.__setattr__(self, "radius", _size("sphere radius", self.radius))

    def bounding_radius(self):
        return self.radius

    def support_points(self):
        r = self.radius
        # a cube around the sphere contains it
        return np.array([[sx * r, sy * r, sz * r] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])


@dataclass(frozen=True)
class Box(Geometry):
    x: float
    y: float
    z: float
    kind = "box"

    def __post_init__(self):
        for a in ("x", "y", "z"):
            object.__setattr__(self, a, _size(f"box size {a}", getattr(self, a)))

    @property
    def half_extents(self) -> np.ndarray:
        return 0.5 * np.array([self.x, self.y, self.z])

    def bounding_radius(self):
        return float(np.linalg.norm(self.half_extents))

    def support_points(self):
        h = self.half_extents
        return np.array([[sx * h[0], sy * h[1], sz * h[2]] for sx in (-1, 1) for sy in (-1, 1)
                         for sz in (-1, 1)])


@dataclass(frozen=True)
class Cylinder(Geometry):
    radius: float
    length: float
    kind = "cylinder"

    def __post_init__(self):
        object.__setattr__(self, "radius", _size("cylinder radius", self.radius))
        object.__setattr__(self, "length", _size("cylinder length", self.length))

    def bounding_radius(self):
        return math.hypot(self.radius, 0.5 * self.length)

    def support_points(self):
        return Box(2 * self.radius, 2 * self.radius, self.length).support_points()


@dataclass(frozen=True)
class Capsule(Geometry):
    radius: float
    length: float
    kind = "capsule"

    def __post_init__(self):
        object.__setattr__(self, "radius", _size("capsule radius", self.radius))
        object.__setattr__(self, "length", _size("capsule length", self.length))

    def bounding_radius(self):
        return 0.5 * self.length + self.radius

    def support_points(self):
        return Box(2 * self.radius, 2 * self.radius, self.length + 2 * self.radius).support_points()


@dataclass(frozen=True)
class Cone(Geometry):
    radius: float
    length: float
    kind = "cone"

    def __post_init__(self):
        object.__setattr__(self, "radius", _size("cone radius", self.radius))
        object.__setattr__(self, "length", _size("cone length", self.length))

    def bounding_radius(self):
        return math.hypot(self.radius, 0.5 * self.length)

    def support_points(self):
        return Cylinder(self.radius, self.length).support_points()


@dataclass(frozen=True, eq=False)
class ConvexHull(Geometry):
    vertices: np.ndarray
    kind = "convex"

    def __post_init__(self):
        object.__setattr__(self, "vertices", _points("convex hull vertices", self.vertices, 4))

    def bounding_radius(self):
        return float(np.max(np.linalg.norm(self.vertices, axis=1)))

    def support_points(self):
        return np.array(self.vertices)


@dataclass(frozen=True, eq=False)
class TriangleMesh(Geometry):
    vertices: np.ndarray
    faces: np.ndarray
    kind = "mesh"

    def __post_init__(self):
        object.__setattr__(self, "vertices", _points("mesh vertices", self.vertices, 3))
        f = np.array(self.faces)
        if f.ndim != 2 or f.shape[1] != 3 or f.shape[0] < 1 or not np.issubdtype(f.dtype, np.integer):
            raise ValueError(f"mesh faces must be an (M, 3) integer array, got shape {f.shape}")
        if f.min() < 0 or f.max() >= len(self.vertices):
            raise ValueError("mesh faces index vertices that do not exist")
        f = f.astype(np.int64)
        f.setflags(write=False)
        object.__setattr__(self, "faces", f)

    def bounding_radius(self):
        return float(np.max(np.linalg.norm(self.vertices, axis=1)))

    def support_points(self):
        return np.array(self.vertices)


#: largest |x|, |y| or height of a height field (m): far beyond any terrain map; coal's height-field queries
#: raise C++ RuntimeErrors (or overflow) for values near 1e300
MAX_HEIGHT_FIELD_COORDINATE = 1e6


@dataclass(frozen=True, eq=False)
class HeightField(Geometry):
    """Terrain heights (m) on a regular grid: ``heights[i, j]`` is the height at ``(x[j], y[i])``; ``x`` and
    ``y`` ascending and evenly spaced. The solid is everything between ``bottom`` and the surface."""

    x: np.ndarray
    y: np.ndarray
    heights: np.ndarray
    bottom: float | None = None
    kind = "heightfield"

    def __post_init__(self):
        x, y, h = (np.array(a, dtype=float) for a in (self.x, self.y, self.heights))
        if x.ndim != 1 or y.ndim != 1 or len(x) < 2 or len(y) < 2:
            raise ValueError("height field needs x and y grids of at least 2 points")
        if h.shape != (len(y), len(x)):
            raise ValueError(f"height field heights must have shape (len(y), len(x)) = {(len(y), len(x))}, "
                             f"got {h.shape}")
        for name, g in (("x", x), ("y", y)):
            d = np.diff(g)
            if not np.all(np.isfinite(g)) or np.any(d <= 0) or np.ptp(d) > 1e-9 * max(1.0, np.abs(g).max()):
                raise ValueError(f"height field {name} grid must be finite, ascending and evenly spaced")
        if not np.all(np.isfinite(h)):
            raise ValueError("height field heights must be finite")
        for name, v in (("x grid", x), ("y grid", y), ("heights", h)):
            if np.abs(v).max() > MAX_HEIGHT_FIELD_COORDINATE:
                raise ValueError(f"height field {name} must lie within +-{MAX_HEIGHT_FIELD_COORDINATE:g} m, got "
                                 f"{float(v.flat[np.abs(v).argmax()]):g} (coal's height-field arithmetic "
                                 f"overflows beyond)")
        for a, v in (("x", x), ("y", y), ("heights", h)):
            v.setflags(write=False)
            object.__setattr__(self, a, v)
        bottom = float(h.min()) - 1.0 if self.bottom is None else float(self.bottom)
        if not math.isfinite(bottom) or bottom > h.min():
            raise ValueError("height field bottom must be finite and below every height")
        if abs(bottom) > 2 * MAX_HEIGHT_FIELD_COORDINATE:
            raise ValueError(f"height field bottom must lie within +-{2 * MAX_HEIGHT_FIELD_COORDINATE:g} m "
                             f"(depth too large), got {bottom:g}")
        object.__setattr__(self, "bottom", bottom)

    def bounding_radius(self):
        return math.inf

    def support_points(self):
        return np.array([[x, y, z] for x in (self.x[0], self.x[-1]) for y in (self.y[0], self.y[-1])
                         for z in (self.bottom, float(self.heights.max()))])


@dataclass(frozen=True, eq=False)
class HalfSpace(Geometry):
    """Every point with ``normal . p <= offset`` (``normal`` made unit)."""

    normal: tuple = (0.0, 0.0, 1.0)
    offset: float = 0.0
    kind = "halfspace"

    def __post_init__(self):
        n = np.array(self.normal, dtype=float).reshape(3)
        norm = float(np.linalg.norm(n))
        if not math.isfinite(norm) or norm < 1e-12:
            raise ValueError("half-space normal must be a finite, non-zero vector")
        object.__setattr__(self, "normal", tuple(n / norm))
        off = float(self.offset)
        if not math.isfinite(off):
            raise ValueError("half-space offset must be finite")
        object.__setattr__(self, "offset", off)

    def bounding_radius(self):
        return math.inf


@dataclass(frozen=True)
class MeshFile(Geometry):
    """A mesh file reference: ``uri`` as written in the model file, ``path`` resolved on this machine (None
    when it could not be), ``scale`` per axis (finite, not zero; a negative scale mirrors the mesh, as the
    left arm of a robot drawn with its right arm's mesh: urdfdom, RViz and Pinocchio accept it);
    ``convex`` asks for its convex hull."""

    uri: str
    path: str | None = None
    scale: tuple = (1.0, 1.0, 1.0)
    convex: bool = False
    kind = "mesh"

    def __post_init__(self):
        s = tuple(self.scale)
        if len(s) != 3:
            raise ValueError(f"mesh scale needs 3 values, got {len(s)}")
        object.__setattr__(self, "scale", tuple(_scale(f"mesh scale {a}", v) for a, v in zip("xyz", s)))
        if not self.uri:
            raise ValueError("mesh needs a file name")


def geometry_from(shape_type: str, dimensions, mesh: str | None = None, mesh_path: str | None = None):
    """The typed geometry of a model's ``BoundingShape`` (``None`` for a pure container, type ``none``).

    ``dimensions`` as the model stores them: box (x, y, z), cylinder / capsule / cone (radius, length),
    sphere (radius,), mesh / convex (scale x, y, z). Raises :class:`ValueError` naming what is wrong.
    """
    d = tuple(dimensions)

    def need(n):
        if len(d) != n:
            raise ValueError(f"{shape_type} needs {n} dimension{'s' if n > 1 else ''}, got {len(d)}")

    if shape_type == "box":
        need(3)
        return Box(*d)
    if shape_type in ("cylinder", "capsule", "cone"):
        need(2)
        return {"cylinder": Cylinder, "capsule": Capsule, "cone": Cone}[shape_type](*d)
    if shape_type == "sphere":
        need(1)
        return Sphere(d[0])
    if shape_type in ("mesh", "convex"):
        return MeshFile(mesh or "", mesh_path, d or (1.0, 1.0, 1.0), convex=shape_type == "convex")
    if shape_type == "none":
        return None
    raise ValueError(f"unknown shape type {shape_type!r} (known: {', '.join(SHAPE_TYPES)})")


def dimensions_of(geometry: Geometry) -> tuple:
    """The inverse of :func:`geometry_from` for the kinds a model file stores."""
    if isinstance(geometry, Box):
        return (geometry.x, geometry.y, geometry.z)
    if isinstance(geometry, (Cylinder, Capsule, Cone)):
        return (geometry.radius, geometry.length)
    if isinstance(geometry, Sphere):
        return (geometry.radius,)
    if isinstance(geometry, MeshFile):
        return geometry.scale
    raise ValueError(f"{type(geometry).__name__} is not stored in model files")
