"""The voxel grid of a reachability map, the workspace bound it covers, and the size caps.

Frames and units: every position is in metres in the chain's *base* frame. The grid's voxel centres are the
points ``origin + resolution * (i, j, k)`` for ``0 <= i < shape[0]`` etc.; the default bound puts the base
origin on a voxel centre and covers the ball of the chain's reach (:func:`chain_reach`), so the grid is a
cube of ``2 K + 1`` voxels a side with ``K = ceil(reach / resolution)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidConfiguration, ModelStructureError
from ..joints import JointType
from ..model import Mechanism

__all__ = ["VoxelGrid", "chain_reach", "grid_for", "MAX_SAMPLES", "MAX_VOXELS", "MAX_FILE_BYTES", "estimate_size"]

#: caps on one map request, checked before any work is scheduled (raise them with the ``max_*`` arguments of
#: :func:`~mechanism_model_core.reach.compute_map` when you mean it): IK samples (voxels x directions x rolls in
#: the reach ball), voxels in the grid, and the estimated size of the map file in bytes.
MAX_SAMPLES = 50_000_000
MAX_VOXELS = 20_000_000
MAX_FILE_BYTES = 8 * 1024 ** 3


@dataclass(frozen=True)
class VoxelGrid:
    """Voxel centres ``origin + resolution * index`` (m, base frame), ``shape`` voxels per axis."""

    origin: tuple
    resolution: float
    shape: tuple

    @property
    def n_voxels(self) -> int:
        return math.prod(int(v) for v in self.shape)

    def centers(self, flat=None) -> np.ndarray:
        """Centres (N, 3) of the voxels with flat (C-order) indices ``flat`` (all when None)."""
        flat = np.arange(self.n_voxels) if flat is None else np.asarray(flat, dtype=np.int64)
        ijk = np.stack(np.unravel_index(flat, self.shape), axis=-1)
        return np.asarray(self.origin, dtype=float) + self.resolution * ijk

    def index_of(self, points) -> np.ndarray:
        """Integer (i, j, k) of the voxels containing ``points`` (N, 3); -1 rows where outside the grid."""
        p = np.atleast_2d(np.asarray(points, dtype=float))
        ijk = np.floor((p - np.asarray(self.origin)) / self.resolution + 0.5).astype(np.int64)
        inside = np.all((ijk >= 0) & (ijk < np.asarray(self.shape)), axis=1) & np.all(np.isfinite(p), axis=1)
        ijk[~inside] = -1
        return ijk


def chain_reach(chain: Mechanism, tool: str) -> float:
    """An upper bound (m) of the distance from the chain's base origin to ``tool``'s origin over every
    configuration: the sum of the joint placements' offsets along the path, the prismatic joints' longest
    extension and the tool's offset in its body. Raises :class:`ModelStructureError` for an unbounded joint
    that translates (a prismatic joint without limits, a planar or floating joint)."""
    body = chain.frame(tool).body
    total = float(np.linalg.norm(chain.frame_in_body(tool)[:3, 3]))
    for b in chain.path_to_ground(body)[:-1]:
        j = chain.body(b).joint
        if j is None:
            continue
        total += float(np.linalg.norm(np.asarray(j.placement)[:3, 3]))
        if j.type == JointType.PRISMATIC:
            ext = max(abs(float(v)) for v in tuple(j.lower) + tuple(j.upper)) if j.lower else math.inf
            total += ext + abs(float(j.offset))
        elif j.type in (JointType.PLANAR, JointType.FLOATING):
            total = math.inf
        if not math.isfinite(total):
            raise ModelStructureError(f"joint {j.name!r} translates without bounds: the chain's reach is "
                                      f"unbounded; give the map an explicit bound")
    return total


def _positive(value, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidConfiguration(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise InvalidConfiguration(f"{name} must be a finite number > 0, got {value!r}")
    return v


def grid_for(reach: float, resolution: float, bound=None) -> VoxelGrid:
    """The grid at ``resolution`` (m) over ``bound`` ((lo, hi) corners, m, base frame) or, when None, over
    the cube around the ball of radius ``reach``. Sizes are computed in floating point first, so a
    resolution of 1e-9 over a big bound is refused with its size instead of allocating anything."""
    res = _positive(resolution, "resolution")
    if bound is None:
        r = _positive(reach, "reach")
        k = r / res
        if k > 1e7:
            raise InvalidConfiguration(f"resolution {res:g} m over a reach of {r:g} m gives about "
                                       f"{(2 * k + 1) ** 3:.3g} voxels (cap {MAX_VOXELS:.3g})")
        k = math.ceil(k - 1e-9)
        return VoxelGrid((-k * res,) * 3, res, (2 * k + 1,) * 3)
    b = np.asarray(bound, dtype=float)
    if b.shape != (2, 3) or not np.all(np.isfinite(b)) or np.any(b[1] < b[0]):
        raise InvalidConfiguration(f"bound must be two finite corners (lo, hi) with lo <= hi, got {bound!r}")
    n = (b[1] - b[0]) / res
    if np.any(n > 1e7):
        raise InvalidConfiguration(f"resolution {res:g} m over the bound {b.tolist()} gives about "
                                   f"{float(np.prod(n + 1)):.3g} voxels (cap {MAX_VOXELS:.3g})")
    shape = tuple(int(math.floor(v + 1e-9)) + 1 for v in n)
    return VoxelGrid(tuple(b[0]), res, shape)


def estimate_size(grid: VoxelGrid, n_active: int, samples_per_voxel: int, nq: int) -> tuple:
    """``(samples, file_bytes)``: IK samples of a map and the bytes its file needs uncompressed."""
    samples = int(n_active) * int(samples_per_voxel)
    per_voxel = samples_per_voxel + 4 * 3 + 4 * nq + 1
    return samples, grid.n_voxels * per_voxel


def check_caps(grid: VoxelGrid, n_active: int, samples_per_voxel: int, nq: int, max_samples=MAX_SAMPLES,
               max_voxels=MAX_VOXELS, max_file_bytes=MAX_FILE_BYTES) -> None:
    """Refuse (:class:`InvalidConfiguration`, with the estimate) a request beyond a cap."""
    samples, nbytes = estimate_size(grid, n_active, samples_per_voxel, nq)
    what = (f"{grid.shape[0]}x{grid.shape[1]}x{grid.shape[2]} voxels at {grid.resolution:g} m, {n_active} in "
            f"reach, {samples_per_voxel} samples each: {samples:.3g} IK samples, map file about "
            f"{nbytes / 1e6:.3g} MB")
    if grid.n_voxels > max_voxels:
        raise InvalidConfiguration(f"map too large: {what}; cap {max_voxels:.3g} voxels")
    if samples > max_samples:
        raise InvalidConfiguration(f"map too large: {what}; cap {max_samples:.3g} IK samples")
    if nbytes > max_file_bytes:
        raise InvalidConfiguration(f"map too large: {what}; cap {max_file_bytes / 1e6:.3g} MB")
