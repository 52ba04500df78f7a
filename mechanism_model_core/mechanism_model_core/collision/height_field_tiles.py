"""A height-field obstacle whose coal objects are built for the part a query reaches, on first use.

coal's ``HeightField`` keeps a bounding-volume node per cell and the surface BVH (coal has no distance to a
height field, so distances use a triangle BVH of its surface) keeps several per triangle: built whole for a
2000 x 2000 grid they took 34 s and 7.6 GB (about 1.9 KB per grid point) on the first collision check. Here
the grid stays a numpy array (8 bytes per point) and coal objects are built for small parts of it, the last
:data:`CACHED_TILES` of each kind kept (least recently used dropped). A rover checking its wheels and arm
against the ground reaches a few.

* Collision: one coal height field of the cells under the shape's box (widened by the margin) with a border
  of :data:`BORDER_CELLS` cells, corners snapped outward to multiples of :data:`SNAP_CELLS`. With the
  border, every cell the shape can touch has its neighbours, so coal decides exactly as on the whole grid
  (square tiles checked one by one did not: coal treats a tile's edge faces as the terrain's sides).
* Distance: square tiles of :data:`TILE_CELLS` cells sharing their edge rows, branch and bound over them,
  nearest box first, until the next tile's box is farther than the best distance found -- the same
  minimum as one BVH of the whole surface.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .. import shapes as S
from .coal_backend import _bvh, heightfield_surface, to_coal

#: cells along each side of a tile
TILE_CELLS = 32
#: tiles of each kind (collision patches, surface tiles) kept built per height field and thread
CACHED_TILES = 64
#: cells around a shape's box in a collision patch, and the multiple its corners are snapped to
BORDER_CELLS = 2
SNAP_CELLS = 8


class TiledHeightField:
    """The coal side of one :class:`~.shapes.HeightField` obstacle at pose ``T_ground_field`` (per thread,
    as every coal object of :mod:`.environment`)."""

    def __init__(self, field: S.HeightField, T_ground_field: np.ndarray, coal):
        self.field = field
        self.coal = coal
        self.T = np.asarray(T_ground_field, dtype=float)
        self.T_inv = np.linalg.inv(self.T)
        self.tf = coal.Transform3s(self.T[:3, :3], self.T[:3, 3])
        nx, ny = len(field.x), len(field.y)
        self.ix = np.arange(0, nx - 1, TILE_CELLS)          # first grid column of each tile column
        self.iy = np.arange(0, ny - 1, TILE_CELLS)
        self.jx = np.minimum(self.ix + TILE_CELLS, nx - 1)  # last grid column (shared with the next tile)
        self.jy = np.minimum(self.iy + TILE_CELLS, ny - 1)
        H = np.asarray(field.heights)                      # H[row (y), column (x)]
        R = np.maximum(np.maximum.reduceat(H, self.iy, axis=0), H[self.jy, :])      # tile rows, edge included
        self.top = np.maximum(np.maximum.reduceat(R, self.ix, axis=1), R[:, self.jx])  # highest point per tile
        top = self.top
        self.bottom = float(field.bottom)
        self.top_all = float(self.top.max())
        x, y = np.asarray(field.x), np.asarray(field.y)
        self.box_lo = np.stack(np.broadcast_arrays(x[self.ix][None, :], y[self.iy][:, None],
                                                   np.full(top.shape, self.bottom)), axis=-1)
        self.box_hi = np.stack(np.broadcast_arrays(x[self.jx][None, :], y[self.jy][:, None], top), axis=-1)
        self._collision = OrderedDict()
        self._surface = OrderedDict()
        self._aabbs = {}

    def __len__(self):
        return self.top.size

    # ------------------------------------------------------------------ tiles
    def _tile_shape(self, r: int, c: int) -> S.HeightField:
        f = self.field
        a, b, i, j = self.iy[r], self.jy[r], self.ix[c], self.jx[c]
        return S.HeightField(f.x[i:j + 1], f.y[a:b + 1], np.asarray(f.heights)[a:b + 1, i:j + 1],
                             bottom=self.bottom)

    def _cached(self, cache, key, build):
        got = cache.get(key)
        if got is None:
            got = cache[key] = build(*key)
            if len(cache) > CACHED_TILES:
                cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return got

    def _build_patch(self, r0, r1, c0, c1):
        f = self.field
        g, off = to_coal(S.HeightField(f.x[c0:c1 + 1], f.y[r0:r1 + 1], np.asarray(f.heights)[r0:r1 + 1, c0:c1 + 1],
                                       bottom=self.bottom))
        T = self.T @ off
        return g, self.coal.Transform3s(T[:3, :3], T[:3, 3])

    def _build_surface(self, r, c):
        V, F = heightfield_surface(self._tile_shape(r, c))
        return _bvh(V, F)

    def tiles_built(self) -> tuple[int, int]:
        """``(collision patches, surface tiles)`` built and kept now."""
        return len(self._collision), len(self._surface)

    # ------------------------------------------------------------------ queries
    def _box_in_field(self, geom, T_ground_shape):
        """The shape's axis-aligned box in the height field's frame ``(lo, hi)``."""
        key = id(geom)
        got = self._aabbs.get(key)
        if got is None or got[0] is not geom:
            geom.computeLocalAABB()
            a = geom.aabb_local
            got = self._aabbs[key] = (geom, np.array(a.min_, dtype=float), np.array(a.max_, dtype=float))
        lo, hi = got[1], got[2]
        M = self.T_inv @ T_ground_shape
        c, h = M[:3, :3] @ (0.5 * (lo + hi)) + M[:3, 3], np.abs(M[:3, :3]) @ (0.5 * (hi - lo))
        return c - h, c + h

    def _gaps(self, lo, hi):
        """Lower bounds of the distance from the box ``[lo, hi]`` to every tile, (tile rows, tile columns)."""
        sep = np.maximum(np.maximum(self.box_lo - hi, lo - self.box_hi), 0.0)
        return np.sqrt((sep * sep).sum(axis=-1))

    def collide(self, geom, tf, T_ground_shape, req, res):
        """The contacts ``[(point, normal, coal's penetration_depth: negative overlapping)]`` of shape
        ``geom`` at ``tf`` (its pose ``T_ground_shape``) with the height field, within
        ``req.security_margin``, as coal reports them; empty when apart. ``res``: a coal CollisionResult to
        reuse. Checked against one coal height field of the cells under the shape's box with a border of
        :data:`BORDER_CELLS` (so that coal sees every neighbour a cell's faces depend on), its corners
        snapped outward to multiples of :data:`SNAP_CELLS` so that nearby queries share it."""
        lo, hi = self._box_in_field(geom, T_ground_shape)
        m = max(float(req.security_margin), 0.0)
        f = self.field
        if lo[2] - m > self.top_all or hi[2] + m < self.bottom:
            return []
        nx, ny = len(f.x), len(f.y)
        dx, dy = f.x[1] - f.x[0], f.y[1] - f.y[0]
        c0 = int(np.floor((lo[0] - m - f.x[0]) / dx)) - BORDER_CELLS
        c1 = int(np.ceil((hi[0] + m - f.x[0]) / dx)) + BORDER_CELLS
        r0 = int(np.floor((lo[1] - m - f.y[0]) / dy)) - BORDER_CELLS
        r1 = int(np.ceil((hi[1] + m - f.y[0]) / dy)) + BORDER_CELLS
        if c1 < 0 or r1 < 0 or c0 > nx - 1 or r0 > ny - 1:
            return []
        c0, r0 = max(0, c0 // SNAP_CELLS * SNAP_CELLS), max(0, r0 // SNAP_CELLS * SNAP_CELLS)
        c1, r1 = min(nx - 1, -(-c1 // SNAP_CELLS) * SNAP_CELLS), min(ny - 1, -(-r1 // SNAP_CELLS) * SNAP_CELLS)
        c1, r1 = max(c1, min(c0 + 1, nx - 1)), max(r1, min(r0 + 1, ny - 1))      # at least one cell
        c0, r0 = min(c0, c1 - 1), min(r0, r1 - 1)
        g, gtf = self._cached(self._collision, (r0, r1, c0, c1), self._build_patch)
        res.clear()
        self.coal.collide(geom, tf, g, gtf, req, res)
        found = []
        if res.isCollision():
            for k in range(res.numContacts()):
                ct = res.getContact(k)
                found.append((np.array(ct.pos), np.array(ct.normal), float(ct.penetration_depth)))
        res.clear()
        return found

    def distance(self, geom, tf, T_ground_shape, dreq, res):
        """``(distance, witness on the shape, witness on the surface)`` from shape ``geom`` to the height
        field's surface (nearest tiles first, stopping where no farther tile can be nearer)."""
        lo, hi = self._box_in_field(geom, T_ground_shape)
        gaps = self._gaps(lo, hi)
        order = np.argsort(gaps, axis=None)
        best = (np.inf, None, None)
        flat = gaps.reshape(-1)
        ncols = gaps.shape[1]
        for k in order.tolist():
            if flat[k] >= best[0]:
                break
            key = (k // ncols, k % ncols)
            bvh = self._cached(self._surface, key, self._build_surface)
            res.clear()
            self.coal.distance(geom, tf, bvh, self.tf, dreq, res)
            if res.min_distance < best[0]:
                best = (float(res.min_distance), np.array(res.getNearestPoint1()),
                        np.array(res.getNearestPoint2()))
        return best
