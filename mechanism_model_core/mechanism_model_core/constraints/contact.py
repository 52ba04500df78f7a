"""Contact: a frame's origin on a surface's plane, its normal aligned with (or opposed to) the surface's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvalidConfiguration
from ..spatial import skew
from .base import Constraint, _Common, _as_pose, _frame_check, _set


@dataclass(frozen=True, eq=False)
class ContactConstraint(_Common, Constraint):
    """Surface contact (CLARAty 8.4): ``frame``'s origin lies on the plane of the surface and ``frame``'s
    axis ``normal_axis`` (0, 1, 2 for x, y, z) is aligned with the surface normal (``opposed=True``:
    anti-parallel, as a foot's z against the ground's z).

    The surface is the plane through the origin of ``surface`` normal to its axis ``normal_axis``;
    ``surface`` is a frame name of the mechanism or a fixed 4x4 pose in ``relative_to`` (ground by default).
    Sliding on the plane and turning about the normal stay free. Residual rows: the signed distance (m)
    and ``R_s^T R_f e_k -/+ e_k`` (3 rows of rank 2)."""

    frame: str
    surface: object
    normal_axis: int = 2
    opposed: bool = False
    relative_to: str | None = None
    dimension: ClassVar[int] = 4

    def __post_init__(self):
        if self.normal_axis not in (0, 1, 2):
            raise InvalidConfiguration("ContactConstraint.normal_axis must be 0, 1 or 2")
        if not isinstance(self.surface, str):
            _set(self, "surface", _as_pose(self.surface, f"ContactConstraint({self.frame!r}) surface"))

    def bind(self, mechanism):
        _frame_check(mechanism, self.frame, self.relative_to)
        if isinstance(self.surface, str):
            _frame_check(mechanism, self.surface)
        return self

    def evaluate(self, ev, jac=True):
        k = self.normal_axis
        if isinstance(self.surface, str):
            T, J = ev.relative(self.frame, self.surface)
        else:
            T, J = ev.relative(self.frame, self.relative_to)
            Rs, ps = self.surface[:3, :3], self.surface[:3, 3]
            T = T.copy()
            T[:3, 3] = Rs.T @ (T[:3, 3] - ps)
            T[:3, :3] = Rs.T @ T[:3, :3]
            J = np.concatenate([Rs.T @ J[:3], Rs.T @ J[3:]])
        n = T[:3, k]                              # frame's normal axis in surface axes
        r = np.empty(4)
        r[0] = T[k, 3]
        r[1:] = n
        r[1 + k] -= -1.0 if self.opposed else 1.0
        Jr = np.empty((4, J.shape[1]))
        Jr[0] = J[k]
        Jr[1:] = -skew(n) @ J[3:]
        return r, Jr

    def errors(self, r):
        return abs(float(r[0])), float(2.0 * math.asin(min(1.0, 0.5 * np.linalg.norm(r[1:]))))
