"""Dead reckoning on a known terrain: 3-D odometry from the settled attitude.

:class:`TerrainOdometry` integrates the body twists of wheel odometry (``(vx, vy, wz)``: m/s, m/s, rad/s in
the body frame, e.g. :meth:`~.wheeled.WheeledLocomotorModel.odometry_twist`) as an :class:`~.wheeled.Odometry`
does, but on a terrain (a :mod:`mechanism_model_core.terrain` height field, plane or mesh, in the odometry
frame) where the body is not level:

1. the exact planar step (a straight line or circular arc, :func:`~.wheeled.integrate_planar`) is taken in
   the body's own plane: the body frame's pose ``T`` (4x4, odometry frame) becomes ``T @ [Rz(dyaw) | (dx, dy,
   0)]`` -- a rotation about the body's z axis, so on a tilted plane the heading turns in that plane, not
   about the vertical;
2. the rover is settled on the terrain (:meth:`~.wheeled.WheeledLocomotorModel.settle`, warm-started from the
   previous pose) at the x, y and yaw of that prediction: z, roll, pitch (and the suspension) come from the
   terrain, so height and attitude never drift; x, y and the heading come from the wheels.

On a plane the body rides parallel to the surface and step 2 returns step 1's pose: the result is the
planar SE(2) motion carried on the plane exactly (the test's closed form). Where settling fails (off the
terrain, a wheel that cannot reach the ground) the step-1 prediction is kept and :attr:`settle_failures`
counts it.

The pose is the body frame's (the mobility's ``body_frame``, on the body of the floating joint) in the
odometry frame, which is the terrain's frame: :attr:`position` (m), :attr:`orientation_rpy` (URDF
roll-pitch-yaw, rad), :attr:`pose` ``(x, y, yaw)``, :attr:`matrix` (4x4). :attr:`covariance` is the planar
``(x, y, yaw)`` covariance grown as :class:`~.wheeled.Odometry` grows it.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidConfiguration
from ..kinematics import forward_kinematics
from ..spatial import matrix_to_rpy
from .planar_motion import Odometry
from .wheeled_terrain import floating_joint

__all__ = ["TerrainOdometry"]


class TerrainOdometry(Odometry):
    """Odometry of ``model`` (a :class:`~.wheeled.WheeledLocomotorModel` on a floating joint) on ``terrain``,
    starting with its floating joint at ``(x, y, yaw)`` (m, m, rad; terrain frame) settled on the terrain
    (module docstring). ``settle_tol`` (m): the largest rim distance settling accepts."""

    def __init__(self, model, terrain, x: float = 0.0, y: float = 0.0, yaw: float = 0.0, *,
                 settle_tol: float = 1e-9):
        super().__init__(x, y, yaw)
        self.model = model
        self.terrain = terrain
        self.settle_tol = float(settle_tol)
        m = model.mechanism
        self._frame = model.spec.body_frame
        base = floating_joint(model)
        self._base_body = m.child_body_of_joint(base)
        if m.frame(self._frame).body != self._base_body:
            raise InvalidConfiguration(f"TerrainOdometry: the body frame {self._frame!r} must be on the body of "
                                       f"the floating joint {base!r} ({self._base_body!r})")
        home = forward_kinematics(m, model.configuration())
        F0 = home.pose(self._base_body)
        if not np.allclose(F0[:3, :3], np.eye(3), atol=1e-12):
            raise InvalidConfiguration("TerrainOdometry: the floating joint's zero must be level (placed by a "
                                       "translation only)")
        self._origin = F0[:3, 3].copy()                       # the floating joint's zero in the terrain frame
        self._offset = np.linalg.inv(F0) @ home.pose(self._frame)   # body frame in the floating body's frame
        self._settled = None
        self.settle_failures = 0
        self.matrix = np.eye(4)
        self._settle_at(float(x), float(y), float(yaw), None)

    @property
    def q(self):
        """The last settled configuration (None before a successful settling)."""
        return None if self._settled is None else self._settled.q

    def reset(self, x=0.0, y=0.0, yaw=0.0, z=0.0):
        self.__init__(self.model, self.terrain, x, y, yaw, settle_tol=self.settle_tol)

    def update(self, twist, dt: float, attitude=None, twist_covariance=None) -> np.ndarray:
        """One step with the body twist ``(vx, vy, wz)`` held for ``dt`` s (``attitude`` is ignored: the
        terrain gives it); returns :attr:`pose`."""
        _, local = self._step(twist, dt, twist_covariance)
        c, s = math.cos(local[2]), math.sin(local[2])
        step = np.array([[c, -s, 0.0, local[0]], [s, c, 0.0, local[1]], [0.0, 0.0, 1.0, 0.0], [0, 0, 0, 1.0]])
        predicted = self.matrix @ step
        F = predicted @ np.linalg.inv(self._offset)           # the floating body's pose
        x, y = F[0, 3] - self._origin[0], F[1, 3] - self._origin[1]
        yaw = math.atan2(F[1, 0], F[0, 0])
        self._settle_at(x, y, yaw, predicted)
        return self.pose

    def _settle_at(self, x, y, yaw, predicted):
        try:
            s = self.model.settle(self.terrain, x, y, yaw, q0=self._settled, tol=self.settle_tol)
            reason = s.reason
        except InvalidConfiguration as exc:          # e.g. a height field with outside="error", left
            s, reason = None, str(exc)
        if s is not None and s.success:
            self._settled = s
            T = forward_kinematics(self.model.mechanism, s.q).pose(self._frame)
        elif predicted is not None:
            self.settle_failures += 1
            T = predicted
        else:
            raise InvalidConfiguration(f"TerrainOdometry: the rover cannot be settled on the terrain at its "
                                       f"start ({x:g}, {y:g}, yaw {yaw:g}): {reason}")
        self.matrix = T
        self.position = T[:3, 3].copy()
        self.roll, self.pitch, self.yaw = (float(v) for v in matrix_to_rpy(T[:3, :3]))
