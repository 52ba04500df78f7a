"""Approach directions and tool orientations sampled at every voxel of a reachability map.

Directions are unit vectors in the chain's base frame, spread uniformly over the sphere by the Fibonacci
(golden-angle) lattice: deterministic, nearly equal areas, any count. The *approach axis* is an axis of the
tool frame (``+z`` by default: the axis that points into the surface for an instrument); a sample asks that
axis to point along the direction. With ``rolls == 0`` the rotation about the approach axis is left free
(5 constraints: the common case for a symmetric instrument or a 5-DOF arm); with ``rolls = k >= 1`` the tool
is asked for the full pose at ``k`` roll angles ``2 pi i / k`` about the approach axis.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidConfiguration

__all__ = ["sphere_directions", "AXES", "align_axis", "frame_with_z", "orientation_for", "sample_neighbours",
           "sample_rotations"]

#: tool axes an approach direction may be given for, and their unit vectors in the tool frame
AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1), "-x": (-1, 0, 0), "-y": (0, -1, 0), "-z": (0, 0, -1)}


def sphere_directions(n: int) -> np.ndarray:
    """``n`` unit vectors (n, 3) on the Fibonacci sphere lattice (z from ``1 - 1/n`` down to ``-1 + 1/n``)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InvalidConfiguration(f"the number of directions must be an integer >= 1, got {n!r}")
    i = np.arange(n, dtype=float)
    z = 1.0 - (2.0 * i + 1.0) / n
    r = np.sqrt(np.clip(1.0 - z * z, 0.0, None))
    phi = i * math.pi * (3.0 - math.sqrt(5.0))
    return np.stack([r * np.cos(phi), r * np.sin(phi), z], axis=1)


def frame_with_z(d: np.ndarray) -> np.ndarray:
    """Rotations (N, 3, 3) whose z column is ``d`` (N, 3) and whose x column is the base x (or, near the
    x axis, the base y) made orthogonal: a fixed, continuous-almost-everywhere choice of the roll zero."""
    d = d / np.linalg.norm(d, axis=1, keepdims=True)
    ref = np.where(np.abs(d[:, :1]) < 0.9, np.array([[1.0, 0, 0]]), np.array([[0, 1.0, 0]]))
    x = ref - np.sum(ref * d, axis=1, keepdims=True) * d
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.cross(d, x)
    return np.stack([x, y, d], axis=2)


def _axis_to_z(axis: str) -> np.ndarray:
    """Rotation R_tool_t of a frame t whose z is the tool's ``axis`` (a fixed choice for each axis)."""
    a = np.array(AXES[axis], dtype=float)
    return frame_with_z(a[None])[0]


def orientation_for(directions, axis: str = "z", rolls: int = 0) -> np.ndarray:
    """Target rotations (D, max(1, rolls), 3, 3) of the tool, base frame: the tool's ``axis`` along each
    direction, at ``rolls`` angles about it (one arbitrary roll when ``rolls == 0``: a target whose roll the
    solver leaves free)."""
    if axis not in AXES:
        raise InvalidConfiguration(f"approach axis must be one of {sorted(AXES)}, got {axis!r}")
    if isinstance(rolls, bool) or not isinstance(rolls, (int, np.integer)) or rolls < 0:
        raise InvalidConfiguration(f"rolls must be an integer >= 0, got {rolls!r}")
    d = np.asarray(directions, dtype=float).reshape(-1, 3)
    if not np.all(np.isfinite(d)) or np.any(np.linalg.norm(d, axis=1) < 1e-9):
        raise InvalidConfiguration("directions must be finite non-zero vectors")
    R_base_t = frame_with_z(d)                         # t: z along the direction
    R_t_tool = _axis_to_z(axis).T                       # tool's axis on t's z
    angles = 2 * math.pi * np.arange(max(1, rolls)) / max(1, rolls)
    c, s = np.cos(angles), np.sin(angles)
    Rz = np.zeros((len(angles), 3, 3))
    Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1], Rz[:, 2, 2] = c, -s, s, c, 1.0
    return np.einsum("dij,rjk,kl->dril", R_base_t, Rz, R_t_tool)


def sample_rotations(directions, axis: str = "z", rolls: int = 0) -> np.ndarray:
    """:func:`orientation_for` flattened to (D * max(1, rolls), 3, 3), directions outermost."""
    R = orientation_for(directions, axis, rolls)
    return R.reshape(-1, 3, 3)


def align_axis(R: np.ndarray, axis, d: np.ndarray) -> np.ndarray:
    """Rotations (N, 3, 3) nearest ``R`` (N, 3, 3) that put the tool ``axis`` (3,) along ``d`` (N, 3, unit):
    ``R`` turned by the smallest rotation taking ``R axis`` to ``d`` (half a turn about an axis normal to
    both where they are opposite). A roll-free target built from a seed's own rotation starts with no roll
    error."""
    a = R @ np.asarray(axis, dtype=float)
    d = np.asarray(d, dtype=float)
    v = np.cross(a, d)
    c = np.sum(a * d, axis=1)
    K = np.zeros((len(a), 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -v[:, 2], v[:, 1], -v[:, 0]
    K[:, 1, 0], K[:, 2, 0], K[:, 2, 1] = v[:, 2], -v[:, 1], v[:, 0]
    near = c < -1.0 + 1e-9
    f = 1.0 / np.where(near, 1.0, 1.0 + c)
    A = np.eye(3) + K + (K @ K) * f[:, None, None]
    if np.any(near):
        n = frame_with_z(a[near])[:, :, 0]            # a unit vector normal to a
        A[near] = 2.0 * n[:, :, None] * n[:, None, :] - np.eye(3)
    return A @ R


def sample_neighbours(rotations: np.ndarray, axis, roll_free: bool, k: int = 6) -> np.ndarray:
    """(S, min(k, S - 1)) indices of each sample's nearest other samples, nearest first: by the angle between
    approach directions (``roll_free``), else by the angle of the relative rotation."""
    S = len(rotations)
    k = min(int(k), S - 1)
    if k <= 0:
        return np.zeros((S, 0), dtype=np.int64)
    if roll_free:
        d = rotations @ np.asarray(axis, dtype=float)
        dist = -(d @ d.T)
    else:
        dist = -np.einsum("aij,bij->ab", rotations, rotations)       # trace(Ra^T Rb): larger is nearer
    np.fill_diagonal(dist, np.inf)
    return np.argsort(dist, axis=1, kind="stable")[:, :k]
