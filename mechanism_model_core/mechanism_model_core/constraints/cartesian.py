"""Cartesian constraints on one frame's pose: full pose, position, orientation, and loop closures (two frames
of the mechanism coincide).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from ..errors import InvalidConfiguration
from ..model import as_real_array
from ..spatial import inverse_left_jacobian_so3, log_so3
from .base import Evaluation, _Cartesian, _Common, _as_pose, _frozen_array, _set


@dataclass(frozen=True, eq=False)
class PoseConstraint(_Common, _Cartesian):
    """``frame`` at pose ``target`` (4x4 ``T_relative_to_target``), fully or on the axes of ``mask``."""

    frame: str
    target: np.ndarray
    relative_to: str | None = None
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"

    def __post_init__(self):
        object.__setattr__(self, "target", _as_pose(self.target, "PoseConstraint({!r}) target", self.frame))
        self._prepare()

    def _target_pose(self):
        return self.target


@dataclass(frozen=True, eq=False)
class PositionConstraint(_Common, _Cartesian):
    """``frame``'s origin at ``target_xyz`` (metres, in ``relative_to``); ``mask`` has 3 entries."""

    frame: str
    target_xyz: Sequence[float]
    relative_to: str | None = None
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"
    _rows: ClassVar[slice] = slice(0, 3)

    def __post_init__(self):
        p = as_real_array(self.target_xyz, "target").reshape(-1)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise InvalidConfiguration(f"PositionConstraint({self.frame!r}): target_xyz needs 3 numbers")
        _set(self, "target_xyz", _frozen_array(p))
        if self.mask_frame == "target":
            raise InvalidConfiguration("PositionConstraint has no target orientation; use mask_frame='reference'")
        self._prepare()

    def _target_pose(self):
        T = np.eye(4)
        T[:3, 3] = self.target_xyz
        return T

    def evaluate(self, ev: Evaluation, jac=True):
        T, J = ev.relative(self.frame, self.relative_to, jac)
        r = (T[:3, 3] - self.target_xyz)[self._keep]
        return r, (None if J is None else J[:3][self._keep])


@dataclass(frozen=True, eq=False)
class OrientationConstraint(_Common, _Cartesian):
    """``frame``'s orientation equal to ``target_rotation`` (3x3, in ``relative_to``); ``mask`` has 3
    entries over the rotation-vector components."""

    frame: str
    target_rotation: np.ndarray
    relative_to: str | None = None
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"
    _rows: ClassVar[slice] = slice(3, 6)

    def __post_init__(self):
        T = np.eye(4)
        T[:3, :3] = as_real_array(self.target_rotation, "target rotation")
        _set(self, "target_rotation", _as_pose(T, f"OrientationConstraint({self.frame!r})")[:3, :3])
        self._prepare()

    def _target_pose(self):
        T = np.eye(4)
        T[:3, :3] = self.target_rotation
        return T

    def evaluate(self, ev: Evaluation, jac=True):
        T, J = ev.relative(self.frame, self.relative_to, jac)
        phi = log_so3(T[:3, :3] @ self.target_rotation.T)
        if not jac:
            if self.mask_frame == "target":
                phi = self.target_rotation.T @ phi
            return phi[self._keep], None
        Jr = inverse_left_jacobian_so3(phi) @ J[3:]
        if self.mask_frame == "target":
            Rt = self.target_rotation.T
            phi, Jr = Rt @ phi, Rt @ Jr
        return phi[self._keep], Jr[self._keep]


@dataclass(frozen=True, eq=False)
class LoopClosure(_Common, _Cartesian):
    """Two frames of the mechanism coincide (a closed chain cut open, CLARAty 4.4): ``frame_b``'s pose in
    ``frame_a`` is the identity on the axes of ``mask`` (e.g. ``(1, 1, 1, 0, 0, 0)`` for a pin joint that
    leaves the rotation free)."""

    frame_a: str
    frame_b: str
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"

    def __post_init__(self):
        self._prepare()

    @property
    def frame(self):
        return self.frame_b

    @property
    def relative_to(self):
        return self.frame_a

    def _target_pose(self):
        return np.eye(4)
