"""Pointing: an axis of a frame points at a point (a mast camera looking at a target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from ..errors import InvalidConfiguration
from ..model import as_real_array
from ..spatial import skew
from .base import Constraint, _Common, _frame_check, _frozen_array, _set


@dataclass(frozen=True, eq=False)
class PointAtConstraint(_Common, Constraint):
    """The unit ``axis`` of ``frame`` (in ``frame``'s axes) points at ``target_point`` (metres, in
    ``relative_to``), as a mast camera looking at a target. Residual: ``R @ axis - u`` with ``u`` the unit
    vector from ``frame``'s origin to the point (3 rows of rank 2; its norm is about the pointing angle)."""

    frame: str
    target_point: Sequence[float]
    axis: Sequence[float] = (0.0, 0.0, 1.0)
    relative_to: str | None = None
    dimension: ClassVar[int] = 3

    def __post_init__(self):
        p = as_real_array(self.target_point, "target_point").reshape(-1)
        a = as_real_array(self.axis, "axis").reshape(-1)
        if p.shape != (3,) or a.shape != (3,) or not np.all(np.isfinite(p)) or np.linalg.norm(a) < 1e-9:
            raise InvalidConfiguration(f"PointAtConstraint({self.frame!r}): target_point and axis need 3 "
                                       f"numbers each (a non-zero axis)")
        _set(self, "target_point", _frozen_array(p))
        _set(self, "axis", _frozen_array(a / np.linalg.norm(a)))

    def bind(self, mechanism):
        _frame_check(mechanism, self.frame, self.relative_to)
        return self

    def evaluate(self, ev, jac=True):
        T, J = ev.relative(self.frame, self.relative_to)
        a = T[:3, :3] @ self.axis
        d = self.target_point - T[:3, 3]
        dist = float(np.linalg.norm(d))
        if dist < 1e-9:
            return np.zeros(3), np.zeros((3, J.shape[1]))
        u = d / dist
        r = a - u
        Jr = -skew(a) @ J[3:] + ((np.eye(3) - np.outer(u, u)) / dist) @ J[:3]
        return r, Jr

    def errors(self, r):
        # |a - u| = 2 sin(angle / 2)
        return math.nan, float(2.0 * math.asin(min(1.0, 0.5 * np.linalg.norm(r))))
