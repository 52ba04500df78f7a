"""Terrain geometry in the ground frame, and where a wheel or a foot touches it.

Frames and units
----------------
* Every terrain is a surface ``z = h(x, y)`` over the x-y plane of the **ground frame** of a mechanism (the
  inertial root frame; z up, REP-103). Coordinates and heights are in metres.
* ``height(x, y)`` and ``normal(x, y)`` accept scalars or arrays of any (broadcastable) shape and return
  heights of that shape and unit upward normals of shape ``(..., 3)`` (``n_z > 0``).
* Where a query lies outside a height field or a mesh, ``outside`` decides: ``"clamp"`` (the height field's
  border cells extend flat; not available for meshes), ``"nan"`` (NaN heights and normals) or ``"error"``
  (:class:`~mechanism_model_core.errors.InvalidConfiguration`).

Terrains
--------
:class:`Plane`
    A plane through a point with an upward normal (closed forms for everything; ``Plane.from_slope``).
:class:`HeightField`
    A regular grid of heights, ``heights[i, j]`` at ``(x0 + i*dx, y0 + j*dy)`` (first index along x),
    interpolated ``"bilinear"`` (C0 surface, normal from the bilinear gradient) or ``"triangles"`` (each cell
    split along its diagonal from ``(i, j)`` to ``(i+1, j+1)``; piecewise planar, normals of the facets).
:class:`TriangleMesh`
    Any triangle soup seen from above: the height at ``(x, y)`` is that of the highest triangle the
    vertical line through the point crosses (vertical faces never answer, so steps and boxes are exact).
    ``TriangleMesh.from_trimesh`` / ``from_file`` use the optional ``trimesh`` package
    (:func:`~.extras.install_hint` ``('mesh')``).

Contacts
--------
:meth:`Terrain.wheel_contact` treats a wheel as a thin disc (centre, unit axis, radius) touching through its
rim: the contact is the rim point with the least vertical clearance ``z - h(x, y)``. :meth:`Terrain.foot_contact`
treats a foot as a sphere (radius 0 for a point foot). Both return a :class:`Contact` with the point on the
wheel or foot, the terrain point and unit normal there, and the signed distance along that normal (negative
when penetrating). On a plane both are exact closed forms; on other terrains the distance is measured to the
tangent plane at the terrain point below the contact (exact at touch, first order near it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import InvalidConfiguration
from .spatial import wrap_angle
from .extras import install_hint

__all__ = ["Contact", "Terrain", "Plane", "HeightField", "TriangleMesh"]

_OUTSIDE = ("clamp", "nan", "error")


@dataclass(frozen=True)
class Contact:
    """Where a wheel or a foot meets the terrain (ground frame, metres).

    ``point``: the point of the wheel rim / foot sphere nearest the terrain, ``(..., 3)``;
    ``terrain_point``: the terrain point below it (same x, y for a wheel), ``(..., 3)``;
    ``normal``: the terrain's unit upward normal at ``terrain_point``, ``(..., 3)``;
    ``distance``: signed distance of ``point`` from the terrain's tangent plane at ``terrain_point``, along
    ``normal`` (m, negative when penetrating), ``(...)``."""

    point: np.ndarray
    terrain_point: np.ndarray
    normal: np.ndarray
    distance: np.ndarray


def _xy(x, y):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    return np.broadcast_arrays(x, y)


def _unit(v, axis=-1):
    return v / np.linalg.norm(v, axis=axis, keepdims=True)


class Terrain:
    """Interface of every terrain (see the module docstring for frames and units)."""

    def height(self, x, y) -> np.ndarray:  # pragma: no cover - interface
        """Terrain height ``h(x, y)`` (m) in the ground frame; array of the broadcast shape of x and y."""
        raise NotImplementedError

    def normal(self, x, y) -> np.ndarray:  # pragma: no cover - interface
        """Unit upward normal ``(..., 3)`` at ``(x, y)``."""
        raise NotImplementedError

    def height_and_normal(self, x, y):
        """``(height, normal)`` in one call (subclasses share work)."""
        return self.height(x, y), self.normal(x, y)

    def clearance(self, points) -> np.ndarray:
        """Vertical clearance ``z - h(x, y)`` (m) of ground-frame points ``(..., 3)``."""
        p = np.asarray(points, dtype=float)
        return p[..., 2] - self.height(p[..., 0], p[..., 1])

    def _golden(self, rim, t0, step, iterations):
        gr = 0.5 * (math.sqrt(5.0) - 1.0)
        lo, hi = t0 - step, t0 + step
        x1 = hi - gr * (hi - lo)
        x2 = lo + gr * (hi - lo)
        f1, f2 = self._quiet_clearance(rim(x1)), self._quiet_clearance(rim(x2))
        for _ in range(iterations):
            left = ~(f1 > f2)                       # keep [lo, x2] where f1 <= f2 (NaN counts as larger)
            hi = np.where(left, x2, hi)
            lo = np.where(left, lo, x1)
            x1 = hi - gr * (hi - lo)
            x2 = lo + gr * (hi - lo)
            f1, f2 = self._quiet_clearance(rim(x1)), self._quiet_clearance(rim(x2))
        return np.where(f1 <= f2, x1, x2)

    def _quiet_height_and_normal(self, p):
        """Height and normal with NaN (never an error) outside the terrain."""
        return self.height_and_normal(p[..., 0], p[..., 1])

    def _quiet_clearance(self, p):
        """Clearance with NaN (never an error) outside the terrain: for the rim search."""
        return p[..., 2] - self._quiet_height(p[..., 0], p[..., 1])

    def _quiet_height(self, x, y):
        return self.height(x, y)

    # ----------------------------------------------------------------------------------- contacts
    def wheel_contact(self, center, axis, radius, samples: int = 36, iterations: int = 40) -> Contact:
        """Contact of thin discs (wheels) with the terrain.

        ``center`` ``(..., 3)`` (m, ground frame), ``axis`` ``(..., 3)`` the wheel's spin axis (any length,
        not vertical), ``radius`` scalar or ``(...)`` (m). The contact is the rim point of least vertical
        clearance, found by sampling ``samples`` rim angles, then from the best sample a fixed-point iteration
        of the tangency condition (smooth terrain; exact in one step on planes) or, where that leaves the
        sample's bracket or does worse (steps, creases), a golden-section search (``iterations`` steps: the
        angle to ~1e-8 rad). Returns a :class:`Contact` of shape ``(...)``.
        """
        c, a, r = _disc_args(center, axis, radius)
        u, v = _rim_basis(a)
        theta = np.linspace(-math.pi, math.pi, samples, endpoint=False)
        P = c[..., None, :] + r[..., None, None] * (np.cos(theta)[:, None] * u[..., None, :]
                                                    + np.sin(theta)[:, None] * v[..., None, :])
        g = self._quiet_clearance(P)
        if np.isnan(g).all(axis=-1).any():
            raise InvalidConfiguration("wheel_contact: a wheel lies entirely outside the terrain")
        k = np.nanargmin(g, axis=-1)
        t0 = theta[k]
        g0 = np.take_along_axis(g, k[..., None], -1)[..., 0]

        def rim(t):
            return c + r[..., None] * (np.cos(t)[..., None] * u + np.sin(t)[..., None] * v)

        # 1) smooth terrain: the least clearance is where the normal's projection on the disc plane points
        #    from the contact to the centre; iterate that condition from the best sample (exact on planes)
        t = t0
        p = rim(t)
        h, n = self._quiet_height_and_normal(p)
        for _ in range(12):
            tn = np.arctan2(-np.einsum("...i,...i->...", n, v), -np.einsum("...i,...i->...", n, u))
            dt = wrap_angle(tn - t)
            dt = np.where(np.isfinite(dt), dt, 0.0)
            t = t + dt
            p = rim(t)
            h, n = self._quiet_height_and_normal(p)
            if np.all(np.abs(dt) < 1e-7):                # the clearance is stationary: error ~ r dt^2
                break
        gt = p[..., 2] - h
        ok = np.abs(wrap_angle(t - t0)) <= 2 * math.pi / samples
        ok &= np.isfinite(gt) & (gt <= g0 + 1e-12)
        if np.all(ok):
            tp = p.copy()
            tp[..., 2] = h
            return Contact(point=p, terrain_point=tp, normal=n, distance=gt * n[..., 2])
        # 2) kinks and edges (steps, mesh creases): golden-section search around the best sample
        tg = self._golden(rim, t0, 2 * math.pi / samples, iterations)
        gg = self._quiet_clearance(rim(tg))
        tg = np.where(g0 < gg, t0, tg)                  # never worse than the best sample
        t = np.where(ok, t, tg)
        return self._contact_below(rim(t))

    def foot_contact(self, center, radius=0.0, iterations: int = 8) -> Contact:
        """Contact of spheres (feet; ``radius`` 0 for point feet) centred at ``center`` ``(..., 3)``.

        The contact point is ``center - radius * n`` with ``n`` the normal at the terrain point below it
        (a fixed-point iteration, ``iterations`` steps; exact on a plane)."""
        c = np.asarray(center, dtype=float)
        if c.shape[-1:] != (3,):
            raise InvalidConfiguration("foot_contact: center must have shape (..., 3)")
        r = np.broadcast_to(np.asarray(radius, dtype=float), c.shape[:-1])
        if np.any(r < 0):
            raise InvalidConfiguration("foot_contact: radius must be >= 0")
        p = c - r[..., None] * np.array([0.0, 0.0, 1.0])
        for _ in range(iterations if np.any(r > 0) else 0):
            n = self.normal(p[..., 0], p[..., 1])
            p = c - r[..., None] * n
        return self._contact_below(p)

    def _contact_below(self, point) -> Contact:
        h, n = self.height_and_normal(point[..., 0], point[..., 1])
        tp = point.copy()
        tp[..., 2] = h
        d = (point[..., 2] - h) * n[..., 2]           # (point - tp) is vertical
        return Contact(point=point, terrain_point=tp, normal=n, distance=d)


def _disc_args(center, axis, radius):
    c = np.asarray(center, dtype=float)
    a = np.asarray(axis, dtype=float)
    if c.shape[-1:] != (3,) or a.shape[-1:] != (3,):
        raise InvalidConfiguration("wheel_contact: center and axis must have shape (..., 3)")
    if c.shape != a.shape:
        c, a = np.broadcast_arrays(c, a)
    na = np.sqrt(np.einsum("...i,...i->...", a, a))
    if np.any(na < 1e-12):
        raise InvalidConfiguration("wheel_contact: zero wheel axis")
    a = a / na[..., None]
    if np.any(np.abs(a[..., 2]) > 1.0 - 1e-9):
        raise InvalidConfiguration("wheel_contact: a wheel axis is vertical (the wheel lies flat)")
    r = np.asarray(radius, dtype=float)
    if r.shape != c.shape[:-1]:
        r = np.broadcast_to(r, c.shape[:-1])
    if not np.all(r > 0):
        raise InvalidConfiguration("wheel_contact: radius must be > 0")
    return c, a, r


def _rim_basis(a):
    """Unit vectors of the disc plane: ``u`` points as far down as the disc allows, ``v = a x u``."""
    down = np.zeros_like(a)
    down[..., 2] = -1.0
    u = _unit(down - np.einsum("...i,...i->...", down, a)[..., None] * a)
    v = np.cross(a, u)
    return u, v


def _outside_check(outside):
    if outside not in _OUTSIDE:
        raise InvalidConfiguration(f"outside must be one of {_OUTSIDE}, got {outside!r}")
    return outside


# ------------------------------------------------------------------------------------------- plane
class Plane(Terrain):
    """The plane through ``point`` (m) with upward ``normal`` (any length, ``n_z > 0``), ground frame."""

    def __init__(self, point=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)):
        p = np.asarray(point, dtype=float).reshape(-1)
        n = np.asarray(normal, dtype=float).reshape(-1)
        if p.shape != (3,) or n.shape != (3,) or not (np.all(np.isfinite(p)) and np.all(np.isfinite(n))):
            raise InvalidConfiguration("Plane: point and normal need 3 finite numbers each")
        nn = np.linalg.norm(n)
        if nn < 1e-12 or n[2] / nn < 1e-9:
            raise InvalidConfiguration("Plane: the normal must point up (n_z > 0); a vertical plane is no terrain")
        self.point = p
        self.unit_normal = n / nn
        self.point.setflags(write=False)
        self.unit_normal.setflags(write=False)

    @classmethod
    def from_slope(cls, slope: float, direction: float = 0.0, height: float = 0.0) -> "Plane":
        """A plane through ``(0, 0, height)`` rising at ``slope`` radians towards the ground-frame direction
        ``direction`` (radians from +x about +z): ``h = height + tan(slope) * (x cos d + y sin d)``."""
        if not abs(slope) < math.pi / 2:
            raise InvalidConfiguration("Plane.from_slope: |slope| must be below pi/2")
        t = math.tan(slope)
        return cls((0.0, 0.0, height), (-t * math.cos(direction), -t * math.sin(direction), 1.0))

    def __repr__(self):
        return f"Plane(point={self.point.tolist()}, normal={self.unit_normal.tolist()})"

    def height(self, x, y):
        x, y = _xy(x, y)
        n, p = self.unit_normal, self.point
        return p[2] - (n[0] * (x - p[0]) + n[1] * (y - p[1])) / n[2]

    def normal(self, x, y):
        x, _ = _xy(x, y)
        return np.broadcast_to(self.unit_normal, x.shape + (3,)).copy()

    def height_and_normal(self, x, y):
        x, y = _xy(x, y)
        n, p = self.unit_normal, self.point
        return p[2] - (n[0] * (x - p[0]) + n[1] * (y - p[1])) / n[2], np.broadcast_to(n, x.shape + (3,)).copy()

    def signed_distance(self, points):
        """Signed distance (m) of ground-frame points ``(..., 3)`` from the plane along its normal."""
        return (np.asarray(points, dtype=float) - self.point) @ self.unit_normal

    def wheel_contact(self, center, axis, radius, samples: int = 36, iterations: int = 40) -> Contact:
        """Closed form: the rim point ``c - r * u``, ``u`` the normal's unit projection on the disc plane."""
        c, a, r = _disc_args(center, axis, radius)
        n = self.unit_normal
        w = n - (a @ n)[..., None] * a
        nw = np.sqrt(np.einsum("...i,...i->...", w, w))
        if np.any(nw < 1e-12):
            raise InvalidConfiguration("wheel_contact: a wheel lies flat on the plane (axis along the normal)")
        point = c - (r / nw)[..., None] * w
        d = (point - self.point) @ n
        tp = point.copy()
        tp[..., 2] -= d / n[2]
        return Contact(point=point, terrain_point=tp, normal=np.broadcast_to(n, point.shape).copy(), distance=d)

    def foot_contact(self, center, radius=0.0, iterations: int = 8) -> Contact:
        c = np.asarray(center, dtype=float)
        r = np.broadcast_to(np.asarray(radius, dtype=float), c.shape[:-1])
        if np.any(r < 0):
            raise InvalidConfiguration("foot_contact: radius must be >= 0")
        return self._contact_below(c - r[..., None] * self.unit_normal)


# -------------------------------------------------------------------------------------- height field
class HeightField(Terrain):
    """Heights on a regular grid: ``heights[i, j]`` (m) at ``(origin[0] + i*spacing[0], origin[1] +
    j*spacing[1])`` in the ground frame, interpolated ``"bilinear"`` or ``"triangles"`` (module docstring)."""

    def __init__(self, heights, spacing, origin=(0.0, 0.0), interpolation: str = "bilinear",
                 outside: str = "clamp"):
        H = np.array(heights, dtype=float)
        if H.ndim != 2 or H.shape[0] < 2 or H.shape[1] < 2:
            raise InvalidConfiguration(f"HeightField: heights must be a 2-D grid of at least 2x2, got {H.shape}")
        if not np.all(np.isfinite(H)):
            raise InvalidConfiguration("HeightField: heights must be finite")
        s = np.broadcast_to(np.asarray(spacing, dtype=float), (2,)).copy()
        if not np.all(s > 0):
            raise InvalidConfiguration("HeightField: spacing must be > 0")
        o = np.asarray(origin, dtype=float).reshape(-1)
        if o.shape != (2,) or not np.all(np.isfinite(o)):
            raise InvalidConfiguration("HeightField: origin needs 2 finite numbers")
        if interpolation not in ("bilinear", "triangles"):
            raise InvalidConfiguration("HeightField: interpolation is 'bilinear' or 'triangles'")
        self.heights, self.spacing, self.origin = H, s, o
        self.interpolation = interpolation
        self.outside = _outside_check(outside)
        for arr in (H, s, o):
            arr.setflags(write=False)

    @property
    def extent(self):
        """``((x_min, x_max), (y_min, y_max))`` of the grid (m)."""
        n = np.array(self.heights.shape) - 1
        hi = self.origin + n * self.spacing
        return (self.origin[0], hi[0]), (self.origin[1], hi[1])

    def __repr__(self):
        return (f"HeightField({self.heights.shape[0]}x{self.heights.shape[1]}, spacing={self.spacing.tolist()}, "
                f"origin={self.origin.tolist()}, {self.interpolation})")

    def _cells(self, x, y, quiet=False):
        """Cell indices, fractions, the outside mask and where the query left the grid along u / v."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if x.shape != y.shape:
            x, y = np.broadcast_arrays(x, y)
        nx, ny = self.heights.shape
        u = (x - self.origin[0]) * (1.0 / self.spacing[0])
        v = (y - self.origin[1]) * (1.0 / self.spacing[1])
        uc = np.clip(u, 0.0, nx - 1)
        vc = np.clip(v, 0.0, ny - 1)
        off_u = uc != u                            # NaN compares unequal: counts as outside
        off_v = vc != v
        out = off_u | off_v
        if out.any():
            tol = 1e-9
            out = (np.abs(uc - u) > tol) | (np.abs(vc - v) > tol) | np.isnan(u) | np.isnan(v)
            if not quiet and self.outside == "error" and out.any():
                raise InvalidConfiguration("HeightField: a query point lies outside the grid "
                                           f"(x in {self.extent[0]}, y in {self.extent[1]})")
            uc = np.where(np.isnan(uc), 0.0, uc)
            vc = np.where(np.isnan(vc), 0.0, vc)
        i = np.minimum(uc.astype(int), nx - 2)
        j = np.minimum(vc.astype(int), ny - 2)
        return i, j, uc - i, vc - j, (out, off_u, off_v)

    def _quiet_height(self, x, y):
        if self.outside != "error":
            return self.height(x, y)
        i, j, fu, fv, out = self._cells(x, y, quiet=True)
        return np.where(out[0], np.nan, self._interpolate(i, j, fu, fv)[0])

    def _quiet_height_and_normal(self, p):
        if self.outside != "error":
            return self.height_and_normal(p[..., 0], p[..., 1])
        i, j, fu, fv, out = self._cells(p[..., 0], p[..., 1], quiet=True)
        h, dhu, dhv = self._interpolate(i, j, fu, fv)
        h, n = self._finish(p[..., 0], p[..., 1], h, dhu, dhv, out)
        return np.where(out[0], np.nan, h), np.where(out[0][..., None], np.nan, n)

    def height_and_normal(self, x, y):
        i, j, fu, fv, out = self._cells(x, y)
        h, dhu, dhv = self._interpolate(i, j, fu, fv)
        return self._finish(x, y, h, dhu, dhv, out)

    def _interpolate(self, i, j, fu, fv):
        H = self.heights
        h00, h10, h01, h11 = H[i, j], H[i + 1, j], H[i, j + 1], H[i + 1, j + 1]
        if self.interpolation == "bilinear":
            h = h00 * (1 - fu) * (1 - fv) + h10 * fu * (1 - fv) + h01 * (1 - fu) * fv + h11 * fu * fv
            dhu = (h10 - h00) * (1 - fv) + (h11 - h01) * fv
            dhv = (h01 - h00) * (1 - fu) + (h11 - h10) * fu
        else:
            lower = fu >= fv                         # triangle (00, 10, 11) below the diagonal, else (00, 01, 11)
            dhu = np.where(lower, h10 - h00, h11 - h01)
            dhv = np.where(lower, h11 - h10, h01 - h00)
            h = h00 + dhu * fu + dhv * fv
        return h, dhu, dhv

    def _finish(self, x, y, h, dhu, dhv, masks):
        out, off_u, off_v = masks
        if self.outside == "clamp":
            # beyond the border the surface extends flat: the gradient across the border is zero
            if off_u.any():
                dhu = np.where(off_u, 0.0, dhu)
            if off_v.any():
                dhv = np.where(off_v, 0.0, dhv)
        gx = dhu * (-1.0 / self.spacing[0])
        gy = dhv * (-1.0 / self.spacing[1])
        k = 1.0 / np.sqrt(1.0 + gx * gx + gy * gy)
        n = np.stack([gx * k, gy * k, k], axis=-1)
        if self.outside == "nan" and out.any():
            h = np.where(out, np.nan, h)
            n = np.where(out[..., None], np.nan, n)
        return h, n

    def height(self, x, y):
        return self.height_and_normal(x, y)[0]

    def normal(self, x, y):
        return self.height_and_normal(x, y)[1]

    @classmethod
    def from_function(cls, f, x_range, y_range, spacing, **kw) -> "HeightField":
        """Sample ``f(X, Y)`` (vectorised, metres) on the grid covering ``x_range`` x ``y_range``."""
        s = np.broadcast_to(np.asarray(spacing, dtype=float), (2,))
        nx = int(round((x_range[1] - x_range[0]) / s[0])) + 1
        ny = int(round((y_range[1] - y_range[0]) / s[1])) + 1
        X, Y = np.meshgrid(x_range[0] + s[0] * np.arange(nx), y_range[0] + s[1] * np.arange(ny), indexing="ij")
        return cls(f(X, Y), s, (x_range[0], y_range[0]), **kw)


# ------------------------------------------------------------------------------------- triangle mesh
class TriangleMesh(Terrain):
    """Triangle soup ``vertices`` ``(V, 3)`` (m, ground frame), ``faces`` ``(F, 3)`` vertex indices; the
    surface seen from above (module docstring). ``outside`` is ``"nan"`` or ``"error"``."""

    def __init__(self, vertices, faces, outside: str = "error", cell: float | None = None):
        V = np.array(vertices, dtype=float)
        F = np.array(faces, dtype=int)
        if V.ndim != 2 or V.shape[1] != 3 or not np.all(np.isfinite(V)):
            raise InvalidConfiguration("TriangleMesh: vertices must be a finite (V, 3) array")
        if F.ndim != 2 or F.shape[1] != 3 or F.shape[0] == 0:
            raise InvalidConfiguration("TriangleMesh: faces must be a non-empty (F, 3) integer array")
        if F.min() < 0 or F.max() >= len(V):
            raise InvalidConfiguration("TriangleMesh: a face names a vertex index out of range")
        outside = _outside_check(outside)
        if outside == "clamp":
            raise InvalidConfiguration("TriangleMesh: outside is 'nan' or 'error' (a mesh has no border to extend)")
        self.outside = outside
        A, B, C = V[F[:, 0]], V[F[:, 1]], V[F[:, 2]]
        # keep faces that are not vertical seen from above (their x-y projection has area)
        det = (B[:, 0] - A[:, 0]) * (C[:, 1] - A[:, 1]) - (C[:, 0] - A[:, 0]) * (B[:, 1] - A[:, 1])
        keep = np.abs(det) > 1e-14 * (1.0 + np.abs(V[:, :2]).max() ** 2)
        if not np.any(keep):
            raise InvalidConfiguration("TriangleMesh: no face is visible from above")
        self.vertices, self.faces = V, F
        self._A, self._B, self._C, self._det = A[keep], B[keep], C[keep], det[keep]
        n = np.cross(self._B - self._A, self._C - self._A)
        n *= np.sign(n[:, 2])[:, None]
        self._n = _unit(n)
        lo = np.minimum(np.minimum(self._A, self._B), self._C)[:, :2]
        hi = np.maximum(np.maximum(self._A, self._B), self._C)[:, :2]
        self._lo, self._hi = lo, hi
        # uniform bins over the x-y bounding box: each bin lists the faces whose box overlaps it
        span = hi.max(axis=0) - lo.min(axis=0)
        if cell is None:
            cell = max(float(np.sqrt(span[0] * span[1] / max(len(lo), 1))) * 2.0, 1e-6)
        self._cell = cell
        self._org = lo.min(axis=0)
        self._nb = np.maximum(np.ceil(span / cell).astype(int), 1)
        bins: dict[int, list[int]] = {}
        i0 = np.floor((lo - self._org) / cell).astype(int)
        i1 = np.floor((hi - self._org) / cell).astype(int)
        i0 = np.clip(i0, 0, self._nb - 1)
        i1 = np.clip(i1, 0, self._nb - 1)
        for f in range(len(lo)):
            for bx in range(i0[f, 0], i1[f, 0] + 1):
                for by in range(i0[f, 1], i1[f, 1] + 1):
                    bins.setdefault(bx * self._nb[1] + by, []).append(f)
        self._bins = {k: np.array(v, dtype=int) for k, v in bins.items()}

    @classmethod
    def from_trimesh(cls, mesh, **kw) -> "TriangleMesh":
        """From a ``trimesh.Trimesh`` (its vertices are taken as ground-frame metres)."""
        return cls(np.asarray(mesh.vertices), np.asarray(mesh.faces), **kw)

    @classmethod
    def from_file(cls, path, **kw) -> "TriangleMesh":
        """Load a mesh file (STL, OBJ, PLY, ...) with the optional ``trimesh`` package."""
        try:
            import trimesh
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(f"TriangleMesh.from_file needs trimesh: {install_hint('mesh')}") from exc
        mesh = trimesh.load(str(path), force="mesh")
        return cls.from_trimesh(mesh, **kw)

    def __repr__(self):
        return f"TriangleMesh({len(self.vertices)} vertices, {len(self.faces)} faces)"

    def _quiet_height(self, x, y):
        return self.height_and_normal(x, y, quiet=True)[0]

    def _quiet_height_and_normal(self, p):
        return self.height_and_normal(p[..., 0], p[..., 1], quiet=True)

    def height_and_normal(self, x, y, quiet=False):
        x, y = _xy(x, y)
        shape = x.shape
        xs, ys = x.reshape(-1), y.reshape(-1)
        h = np.full(xs.shape, -np.inf)
        n = np.full(xs.shape + (3,), np.nan)
        b = np.floor((np.stack([xs, ys], -1) - self._org) / self._cell).astype(np.int64) \
            if xs.size else np.zeros((0, 2), dtype=np.int64)
        valid = np.all((b >= 0) & (b < self._nb), axis=-1) & np.isfinite(xs) & np.isfinite(ys)
        keys = np.where(valid, b[:, 0] * self._nb[1] + b[:, 1], -1)
        A, B, C = self._A, self._B, self._C
        for key in np.unique(keys[keys >= 0]):
            faces = self._bins.get(int(key))
            if faces is None:
                continue
            idx = np.nonzero(keys == key)[0]
            px, py = xs[idx][:, None], ys[idx][:, None]
            a, bb, c, det = A[faces], B[faces], C[faces], self._det[faces]
            # barycentric coordinates of (px, py) in each face's x-y projection
            l1 = ((px - a[:, 0]) * (c[:, 1] - a[:, 1]) - (c[:, 0] - a[:, 0]) * (py - a[:, 1])) / det
            l2 = ((bb[:, 0] - a[:, 0]) * (py - a[:, 1]) - (px - a[:, 0]) * (bb[:, 1] - a[:, 1])) / det
            tol = -1e-12
            inside = (l1 >= tol) & (l2 >= tol) & (l1 + l2 <= 1 - tol)
            z = a[:, 2] + l1 * (bb[:, 2] - a[:, 2]) + l2 * (c[:, 2] - a[:, 2])
            z = np.where(inside, z, -np.inf)
            best = np.argmax(z, axis=1)
            zb = z[np.arange(len(idx)), best]
            hit = np.isfinite(zb)
            h[idx[hit]] = zb[hit]
            n[idx[hit]] = self._n[faces[best[hit]]]
        missing = ~np.isfinite(h)
        if np.any(missing):
            if self.outside == "error" and not quiet:
                k = int(np.nonzero(missing)[0][0])
                raise InvalidConfiguration(f"TriangleMesh: no face under the point ({xs[k]:.6g}, {ys[k]:.6g})")
            h[missing] = np.nan
        return h.reshape(shape), n.reshape(shape + (3,))

    def height(self, x, y):
        return self.height_and_normal(x, y)[0]

    def normal(self, x, y):
        return self.height_and_normal(x, y)[1]
