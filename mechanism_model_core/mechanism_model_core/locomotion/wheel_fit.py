"""Wheels from meshes: fitting a wheel (axis, centre, radius, width) to the vertices of a wheel link's mesh.

Many published rover and mobile-base descriptions (the JPL Open Source Rover's among them) draw their wheels
with meshes only: no cylinder says how large a wheel is. :func:`fit_wheel` measures it from the mesh's
vertices, in the frame of the link that the drive joint spins:

* the **axis** is the drive joint's axis (a wheel spins about its joint); the principal axis of the vertex
  cloud nearest to it is reported as a check (``axis_angle``);
* the **centre** is the middle of the vertices' extent across the axis and along it;
* the **radius** is the largest distance of a vertex from the axis line through the centre (the tyre's
  outer surface), the **width** the extent along the axis;
* the fit is a wheel when the vertices make a body of revolution about that line: in each of
  :data:`SECTORS` angular sectors around the axis the outermost vertex lies within :data:`MIN_ROUNDNESS`
  of the radius (``roundness``: smallest over largest sector radius), and the centre lies on the joint
  axis (``offset``, at most :data:`MAX_OFFSET` radii; otherwise the joint would not spin the wheel about
  its hub).

Units: metres, radians; every vector in the frame of the wheel link (the drive joint's child frame).
Reading the mesh files needs ``trimesh`` (the optional extra ``mesh``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ..shapes import MeshFile
from ..collision.meshes import load_mesh_geometry

#: Angular sectors around the axis in which the outer radius is measured.
SECTORS = 24
#: Smallest accepted ratio of the smallest to the largest sector radius (tread lugs make it below 1).
MIN_ROUNDNESS = 0.85
#: Largest accepted distance of the wheel centre from the joint axis, in wheel radii.
MAX_OFFSET = 0.1


@dataclass(frozen=True)
class WheelFit:
    """A wheel measured from mesh vertices (link frame, metres): ``axis`` unit spin axis, ``center`` hub
    centre, ``radius`` outer radius, ``width`` extent along the axis, ``roundness`` (smallest / largest outer
    radius over the angular sectors, 1 for a perfect cylinder), ``offset`` distance of the centre from the
    joint axis line (m), ``axis_angle`` angle (rad) between the joint axis and the nearest principal axis of
    the vertices, ``vertices`` how many were fitted."""

    axis: np.ndarray
    center: np.ndarray
    radius: float
    width: float
    roundness: float
    offset: float
    axis_angle: float
    vertices: int

    @property
    def is_wheel(self) -> bool:
        """True when the vertices form a body of revolution centred on the joint axis (module docstring)."""
        return self.radius > 0 and self.roundness >= MIN_ROUNDNESS and self.offset <= MAX_OFFSET * self.radius

    def why(self) -> str:
        """One sentence: the measured figures and the verdict."""
        figures = (f"radius {self.radius:.4g} m, width {self.width:.4g} m, roundness {self.roundness:.3f}, "
                   f"centre {self.offset * 1000:.3g} mm off the joint axis")
        if self.is_wheel:
            return f"a body of revolution about the joint axis: {figures}"
        reasons = []
        if self.roundness < MIN_ROUNDNESS:
            reasons.append(f"not round about the joint axis (roundness {self.roundness:.3f} < {MIN_ROUNDNESS})")
        if self.offset > MAX_OFFSET * self.radius:
            reasons.append(f"its centre is {self.offset:.4g} m off the joint axis (more than {MAX_OFFSET:g} "
                           f"radii)")
        return "; ".join(reasons) + f" ({figures})"


def _perpendicular_basis(axis: np.ndarray):
    a = axis / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(a, helper)
    u /= np.linalg.norm(u)
    return a, u, np.cross(a, u)


def fit_wheel(points, axis, axis_point=(0.0, 0.0, 0.0)) -> WheelFit:
    """Fit a wheel spinning about ``axis`` (through ``axis_point``; link frame) to ``points`` (N, 3) m."""
    P = np.asarray(points, dtype=float).reshape(-1, 3)
    if len(P) < 3 or not np.all(np.isfinite(P)):
        raise ValueError("a wheel fit needs at least 3 finite vertices")
    a, u, v = _perpendicular_basis(np.asarray(axis, dtype=float))
    o = np.asarray(axis_point, dtype=float)
    pa, pu, pv = (P - o) @ a, (P - o) @ u, (P - o) @ v
    cu, cv = 0.5 * (pu.max() + pu.min()), 0.5 * (pv.max() + pv.min())
    ca = 0.5 * (pa.max() + pa.min())
    du, dv = pu - cu, pv - cv
    r = np.hypot(du, dv)
    radius = float(r.max())
    sector = ((np.arctan2(dv, du) + math.pi) / (2 * math.pi) * SECTORS).astype(int) % SECTORS
    outer = np.zeros(SECTORS)
    np.maximum.at(outer, sector, r)
    roundness = float(outer.min() / outer.max()) if outer.max() > 0 else 0.0
    # the principal axis of the vertices nearest the joint axis, as a check of the mounting
    _, vecs = np.linalg.eigh(np.cov((P - P.mean(axis=0)).T))
    cos = np.abs(vecs.T @ a).max()
    return WheelFit(axis=a, center=o + ca * a + cu * u + cv * v, radius=radius, width=float(pa.max() - pa.min()),
                    roundness=roundness, offset=float(math.hypot(cu, cv)),
                    axis_angle=float(math.acos(min(1.0, cos))), vertices=len(P))


def body_mesh_points(mechanism, body: str):
    """``(points (N, 3) in the body frame, [mesh names])`` of every collision mesh of ``body`` (scale and
    shape pose applied), or ``(None, [])`` when it has none; raises
    :class:`~mechanism_model_core.errors.ModelFileError` for a mesh that cannot be found or read."""
    pts, names = [], []
    for s in mechanism.body(body).shapes:
        if s.type not in ("mesh", "convex") or not s.mesh:
            continue
        src = s.source or (getattr(mechanism, "source", None), None)
        geo = load_mesh_geometry(MeshFile(s.mesh, s.mesh_path, s.dimensions or (1.0, 1.0, 1.0)), src[0], src[1])
        V = np.asarray(geo.vertices, dtype=float)
        T = np.asarray(s.transform, dtype=float)
        pts.append(V @ T[:3, :3].T + T[:3, 3])
        names.append(os.path.basename(s.mesh))
    if not pts:
        return None, []
    return np.vstack(pts), names
