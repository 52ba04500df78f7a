"""Snapping a chain's axes where they miss being parallel or meeting by rounding (a model file's pi/2 written as
1.5708), so that a closed form that needs exact geometry (``eaik``'s decompositions) takes the chain; the answers
are then confirmed, and polished, on the exact chain by the caller."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SNAP_RATIO", "snap_geometry"]

#: an axis within SNAP_RATIO of the chain's reach bound (m) of meeting an earlier one, or turned by at most
#: SNAP_RATIO rad from parallel to an earlier axis, is snapped (:func:`snap_geometry`): rounding in a model
#: file (the xArm7's URDF writes pi/2 as 1.5708: its axes miss by 1e-6 m and 1e-5 rad), not an offset
SNAP_RATIO = 1e-5


def snap_geometry(H, O, tol, directions=True):
    """``(H2, O2, moved)``: axes with unit directions ``H`` (k, 3) through points ``O`` (k, 3) (m, ground)
    made exactly parallel or intersecting where they nearly are. First an axis within :data:`SNAP_RATIO` rad
    of parallel to an earlier axis as read is made parallel to that axis (as snapped); then an axis whose line
    passes within ``tol`` (m) of an earlier axis's without meeting it is moved across by the common normal so
    that they meet (the nearest such earlier axis in the chain; a parallel pair within ``tol``: made
    coincident). ``moved``: the largest move (m; a turn
    counted as its angle times ``tol / SNAP_RATIO``, the reach bound), 0.0 when nothing moved. Axes within
    :data:`SNAP_RATIO` rad of parallel count as parallel in the second step; ``directions=False`` leaves the
    directions as read (the first step skipped)."""
    H2 = np.array(H, dtype=float)
    O2 = np.array(O, dtype=float)
    reach = tol / SNAP_RATIO
    moved = 0.0
    for i in range(1, len(H2) if directions else 0):
        for j in range(i):
            c = np.cross(H[j], H[i])
            a = float(np.linalg.norm(c))
            if 0.0 < a <= SNAP_RATIO:
                H2[i] = math.copysign(1.0, float(H[j] @ H[i])) * H2[j]
                moved = max(moved, a * reach)
                break
    for i in range(1, len(H2)):
        for j in range(i - 1, -1, -1):              # the nearest earlier axis it nearly meets
            d = O2[i] - O2[j]
            c = np.cross(H2[j], H2[i])
            nc = float(np.linalg.norm(c))
            if nc > SNAP_RATIO:                         # crossing lines: their distance along the common normal
                u = c / nc
                off = float(d @ u) * u
            else:                                       # parallel lines: the offset across them
                off = d - float(d @ H2[i]) * H2[i]
            e = float(np.linalg.norm(off))
            if 0.0 < e <= tol:
                O2[i] -= off
                moved = max(moved, e)
                break
    return H2, O2, moved
