"""PNG slices of a reachability map for reports (needs matplotlib).

Three panels: the reachability index on the planes x = x0, y = y0 and z = z0 through a point of the base frame
(default: the voxel with the largest index nearest the base origin's height), voxels coloured from 0 (white:
never reached) through dark blue (few approach directions reached) to yellow (all of them), axes in metres
in the chain's base frame.
"""

from __future__ import annotations

import numpy as np

__all__ = ["save_slices"]


def save_slices(rmap, path, point=None, dpi: int = 100) -> tuple:
    """Write the three slices of ``rmap`` (a :class:`~.map.ReachMap`) through ``point`` (m, base frame) to
    ``path`` (PNG); returns the (i, j, k) voxel the planes pass through."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = rmap.grid
    if point is None:
        ijk = np.unravel_index(int(np.argmax(rmap.index)), g.shape)
    else:
        v = rmap.voxel_of(point)
        ijk = v if v is not None else tuple(s // 2 for s in g.shape)
    o, r = np.asarray(g.origin), g.resolution
    lo = o - r / 2
    hi = o + r * (np.asarray(g.shape) - 0.5)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
    planes = [("x", 0, (1, 2)), ("y", 1, (0, 2)), ("z", 2, (0, 1))]
    im = None
    for ax, (name, a, (u, w)) in zip(axes, planes):
        sl = np.ma.masked_equal(np.take(rmap.index, ijk[a], axis=a), 0.0)
        cmap = matplotlib.colormaps["viridis"].copy()
        cmap.set_bad("white")
        im = ax.imshow(sl.T, origin="lower", extent=(lo[u], hi[u], lo[w], hi[w]), vmin=0, vmax=1, cmap=cmap,
                       interpolation="nearest")
        ax.set_xlabel(f"{'xyz'[u]} (m)")
        ax.set_ylabel(f"{'xyz'[w]} (m)")
        ax.set_title(f"{name} = {o[a] + r * ijk[a]:.3f} m")
        ax.set_aspect("equal")
    fig.colorbar(im, ax=list(axes), label="reachability index", shrink=0.85)
    fig.suptitle(f"{rmap.attrs.get('model_name', '')} {rmap.base}:{rmap.tool}, {g.resolution:g} m, "
                 f"{rmap.request['mode']} mode, {rmap.reached.shape[-1]} samples per voxel")
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return tuple(int(v) for v in ijk)
