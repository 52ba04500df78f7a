"""The robot's surroundings for collision queries: terrain, boxes, walls, given in the ground frame.

An :class:`Environment` is an immutable list of :class:`Obstacle` (a name, a typed shape from
:mod:`.shapes` and its pose ``T_ground_obstacle``). Terrain comes in as a :class:`~.shapes.HeightField`, a
:class:`~.shapes.TriangleMesh` (a 2-D open mesh) or a :class:`~.shapes.HalfSpace`; :func:`terrain_obstacle`
converts the terrain objects of :mod:`mechanism_model_core.terrain` (plane, height field, mesh), and
:meth:`Environment.with_terrain` adds one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import shapes as S
from ..data import data_of
from .height_field_tiles import TiledHeightField
from .coal_backend import coal, to_coal, transform
from .. import terrain as terrains


@dataclass(frozen=True, eq=False)
class Obstacle:
    """One obstacle: ``geometry`` placed at ``pose`` (``T_ground_obstacle``, 4x4) in the ground frame."""

    name: str
    geometry: S.Geometry
    pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    padding: float = 0.0

    def __post_init__(self):
        T = np.array(self.pose, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ValueError(f"obstacle {self.name!r}: pose must be a finite 4x4 transform")
        T.setflags(write=False)
        object.__setattr__(self, "pose", T)
        if isinstance(self.geometry, S.MeshFile):
            raise ValueError(f"obstacle {self.name!r}: load the mesh file first (meshes.load_mesh_geometry)")

    @classmethod
    def box(cls, name: str, size, pose=None) -> "Obstacle":
        """A box of full side lengths ``size`` (m) centred at ``pose``."""
        return cls(name, S.Box(*size), np.eye(4) if pose is None else pose)

    @classmethod
    def wall(cls, name: str, corners) -> "Obstacle":
        """A flat, open wall: the quadrilateral of 4 ``corners`` (ground frame, in order), as 2 triangles."""
        V = np.asarray(corners, dtype=float).reshape(4, 3)
        return cls(name, S.TriangleMesh(V, [[0, 1, 2], [0, 2, 3]]))

    @classmethod
    def ground_plane(cls, name: str = "ground_plane", height: float = 0.0) -> "Obstacle":
        """Everything below ``z = height``."""
        return cls(name, S.HalfSpace((0.0, 0.0, 1.0), height))


class Environment:
    """Obstacles in the ground frame (immutable; :meth:`with_obstacles` returns a new one)."""

    __slots__ = ("obstacles", "__weakref__", "_mm_data")     # _mm_data: its derived data (data.ATTR)

    def __init__(self, obstacles=()):
        obs = tuple(obstacles)
        names = [o.name for o in obs]
        if len(set(names)) != len(names):
            raise ValueError(f"obstacle names must be unique: {names}")
        self.obstacles = obs

    def with_obstacles(self, *obstacles) -> "Environment":
        return Environment(self.obstacles + tuple(obstacles))

    def with_terrain(self, terrain, name: str = "terrain") -> "Environment":
        """A new environment with ``terrain`` (a :mod:`mechanism_model_core.terrain` object) added."""
        return self.with_obstacles(terrain_obstacle(terrain, name))

    def __len__(self):
        return len(self.obstacles)

    def __repr__(self):
        return f"<Environment: {', '.join(o.name for o in self.obstacles) or 'empty'}>"


def terrain_obstacle(terrain, name: str = "terrain", depth: float = 1.0) -> Obstacle:
    """The obstacle of a terrain of :mod:`mechanism_model_core.terrain`, in the ground frame:

    * ``terrain.HeightField`` -> a :class:`~.shapes.HeightField` on the same grid (solid down to ``depth``
      m below its lowest point; coal triangulates each cell, so between grid points the surface may differ
      from a bilinear interpolation by the cell's twist);
    * ``terrain.TriangleMesh`` -> a :class:`~.shapes.TriangleMesh` (an open surface);
    * ``terrain.Plane`` -> a :class:`~.shapes.HalfSpace` (everything below the plane).
    """
    if isinstance(terrain, terrains.HeightField):
        H = np.asarray(terrain.heights, dtype=float)            # heights[ix, iy]
        x = terrain.origin[0] + terrain.spacing[0] * np.arange(H.shape[0])
        y = terrain.origin[1] + terrain.spacing[1] * np.arange(H.shape[1])
        return Obstacle(name, S.HeightField(x, y, H.T, bottom=float(H.min()) - depth))
    if isinstance(terrain, terrains.TriangleMesh):
        return Obstacle(name, S.TriangleMesh(terrain.vertices, terrain.faces))
    if isinstance(terrain, terrains.Plane):
        n = np.asarray(terrain.unit_normal, dtype=float)
        return Obstacle(name, S.HalfSpace(n, float(n @ np.asarray(terrain.point, dtype=float))))
    raise TypeError(f"{type(terrain).__name__} is not a terrain of mechanism_model_core.terrain (Plane, "
                    f"HeightField, TriangleMesh)")


def _obstacle_coal(o: Obstacle):
    """``(coal geometry, T_ground_coal, coal transform, None)`` of one obstacle, or for a height field
    ``(tiles, T_ground_field, coal transform, tiles)`` with its :class:`~.height_field_tiles.TiledHeightField`;
    built once per obstacle and thread (a per-thread slot of the obstacle's derived data, :mod:`..data`: an
    environment made per request from the same obstacles, a large terrain among them, reuses them)."""
    return data_of(o).per_thread("collision.obstacle_coal", lambda: _build_obstacle_coal(o))


def _build_obstacle_coal(o: Obstacle):
    if isinstance(o.geometry, S.HeightField):    # tiles built as queries reach them (height_field_tiles)
        tiles = TiledHeightField(o.geometry, o.pose, coal())
        return tiles, o.pose, tiles.tf, tiles
    g, off = to_coal(o.geometry)
    T = o.pose @ off
    return g, T, transform(T), None


class EnvironmentData:
    """coal objects of an environment (each obstacle's built once per thread, see :func:`_obstacle_coal`)."""

    def __init__(self, env: Environment):
        c = coal()
        self.geoms, self.poses, self.tf, self.centers, self.radii, self.tiles = [], [], [], [], [], []
        for o in env.obstacles:
            g, T, tf, tiles = _obstacle_coal(o)
            self.geoms.append(g)
            self.poses.append(T)
            self.tf.append(tf)
            r = o.geometry.bounding_radius()
            if math.isfinite(r):
                self.centers.append(o.pose[:3, 3])
                self.radii.append(r + o.padding)
            else:
                self.centers.append(np.zeros(3))
                self.radii.append(math.inf)
            self.tiles.append(tiles)
        self.centers = np.array(self.centers).reshape(-1, 3)
        self.radii = np.array(self.radii)
        # broad phase: each obstacle's box in the ground frame (unbounded for a half-space)
        lo, hi = [], []
        for o in env.obstacles:
            if isinstance(o.geometry, S.HalfSpace):
                lo.append(np.full(3, -np.inf))
                hi.append(np.full(3, np.inf))
                continue
            P = o.geometry.support_points() @ o.pose[:3, :3].T + o.pose[:3, 3]
            lo.append(P.min(axis=0) - o.padding)
            hi.append(P.max(axis=0) + o.padding)
        self.lo = np.array(lo).reshape(-1, 3)
        self.hi = np.array(hi).reshape(-1, 3)
        self.coal = c
