"""The planar two-link elbow: the one law-of-cosines solve shared by the YPPPY, YPPP and YPP-leg closed forms."""

from __future__ import annotations

import numpy as np

__all__ = ["two_link"]


def two_link(dx, dy, l1: float, l2: float, tol: float = 1e-12):
    """Angles putting the end of a planar two-link arm at ``(dx, dy)`` (relative to the shoulder, any unit
    of length; scalars or arrays of one shape).

    ``l1``, ``l2``: link lengths (> 0). Returns ``(shoulder, elbow, reach)``, each of shape ``(2,) + shape``:
    branch 0 bends the elbow by ``+acos``, branch 1 by ``-acos``; ``shoulder`` is link 1's direction from
    the x axis and ``elbow`` link 2's direction relative to link 1 (radians, counter-clockwise); ``reach``
    is False where the point is out of reach (``|l1 - l2| <= d <= l1 + l2`` within ``tol``): there the angles
    point the stretched (or folded) arm at it, the nearest compromise."""
    dx = np.asarray(dx, dtype=float)
    dy = np.asarray(dy, dtype=float)
    d2 = dx * dx + dy * dy
    c = (d2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)
    reach = np.abs(c) <= 1.0 + tol
    g = np.arccos(np.clip(c, -1.0, 1.0))
    elbow = np.stack([g, -g])
    shoulder = np.arctan2(dy, dx) - np.arctan2(l2 * np.sin(elbow), l1 + l2 * np.cos(elbow))
    return shoulder, elbow, np.stack([reach, reach])
