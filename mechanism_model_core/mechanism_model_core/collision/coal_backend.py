"""The bridge to ``coal`` (the collision library behind Pinocchio: GJK/EPA, BVH meshes, height fields).

``coal`` is an optional extra, imported on first use: ``pip install coal`` (the ``collision``
extra).
"""

from __future__ import annotations

import numpy as np

from .. import shapes as S
from ..extras import install_hint

_coal = None


def coal():
    """The ``coal`` module, or an ImportError saying what to install."""
    global _coal
    if _coal is None:
        try:
            import coal as _c
        except ImportError:
            raise ImportError(f"collision checking needs coal: {install_hint('collision')}") from None
        _coal = _c
    return _coal


def _bvh(vertices, faces):
    c = coal()
    m = c.BVHModelOBBRSS()
    m.beginModel(len(faces), len(vertices))
    m.addVertices(np.ascontiguousarray(vertices, dtype=float))
    m.addTriangles(np.ascontiguousarray(faces, dtype=np.int64))
    m.endModel()
    return m


def heightfield_surface(g: S.HeightField):
    """``(vertices, faces)`` of a height field's surface: two triangles per grid cell."""
    X, Y = np.meshgrid(g.x, g.y)
    V = np.column_stack([X.ravel(), Y.ravel(), np.asarray(g.heights).ravel()])
    nx, ny = len(g.x), len(g.y)
    i, j = np.meshgrid(np.arange(ny - 1), np.arange(nx - 1), indexing="ij")
    a = (i * nx + j).ravel()
    b, c, d = a + 1, a + nx, a + nx + 1
    F = np.concatenate([np.column_stack([a, b, d]), np.column_stack([a, d, c])])
    return V, F


def to_coal(g: S.Geometry):
    """``(coal geometry, T_shape_coal)``: the coal object of a typed shape and where its frame sits in the
    shape frame (identity except for height fields, which coal centres on the grid)."""
    c = coal()
    T = np.eye(4)
    if isinstance(g, S.Sphere):
        return c.Sphere(g.radius), T
    if isinstance(g, S.Box):
        return c.Box(g.x, g.y, g.z), T
    if isinstance(g, S.Cylinder):
        return c.Cylinder(g.radius, g.length), T
    if isinstance(g, S.Capsule):
        return c.Capsule(g.radius, g.length), T
    if isinstance(g, S.Cone):
        return c.Cone(g.radius, g.length), T
    if isinstance(g, S.ConvexHull):
        v = c.StdVec_Vec3s()
        v.extend([np.asarray(p, dtype=float) for p in g.vertices])
        return c.Convex.convexHull(v, False, None), T
    if isinstance(g, S.TriangleMesh):
        return _bvh(g.vertices, g.faces), T
    if isinstance(g, S.HeightField):
        # coal's grid: x ascending, y DEscending from row 0, centred on its origin
        xc, yc = 0.5 * (g.x[0] + g.x[-1]), 0.5 * (g.y[0] + g.y[-1])
        hf = c.HeightFieldOBBRSS(float(g.x[-1] - g.x[0]), float(g.y[-1] - g.y[0]),
                                 np.ascontiguousarray(np.asarray(g.heights)[::-1, :]), float(g.bottom))
        T[:2, 3] = (xc, yc)
        return hf, T
    if isinstance(g, S.HalfSpace):
        return c.Halfspace(np.asarray(g.normal, dtype=float), g.offset), T
    raise TypeError(f"no coal geometry for {type(g).__name__} (load mesh files first)")


def transform(T: np.ndarray):
    """A coal ``Transform3s`` of a 4x4 pose."""
    return coal().Transform3s(T[:3, :3], T[:3, 3])
