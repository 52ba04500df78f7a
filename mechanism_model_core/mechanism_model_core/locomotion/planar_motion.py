"""Planar body motion of a locomotor: body twists for explicit commands (:func:`arc_twist`,
:func:`crab_twist`, :func:`point_turn_twist`, :func:`icr_twist`), their exact integration along lines and
arcs (:func:`integrate_planar`, SE(2)) and dead reckoning (:class:`Odometry`).

Twists are ``(vx, vy, wz)`` in m/s and rad/s in the body frame (REP-103: x forward, y left, z up), as
``geometry_msgs/Twist`` on ``cmd_vel``; poses ``(x, y, yaw)`` in m and rad in the odometry frame.
:mod:`.wheeled` re-exports these names.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidConfiguration
from ..spatial import rpy_to_matrix, wrap_angle

__all__ = ["arc_twist", "crab_twist", "point_turn_twist", "icr_twist", "integrate_planar", "Odometry"]


def arc_twist(speed: float, radius: float) -> np.ndarray:
    """Twist of an arc of ``radius`` (m; positive: centre on the left, inf: straight) at ``speed`` (m/s)."""
    return np.array([speed, 0.0, 0.0 if math.isinf(radius) else speed / radius])


def crab_twist(speed: float, heading: float) -> np.ndarray:
    """Straight motion at ``heading`` (rad from the body's x axis, positive to the left)."""
    return np.array([speed * math.cos(heading), speed * math.sin(heading), 0.0])


def point_turn_twist(rate: float) -> np.ndarray:
    """Turn in place about the body origin at ``rate`` rad/s."""
    return np.array([0.0, 0.0, rate])


def icr_twist(x: float, y: float, rate: float) -> np.ndarray:
    """Rotation at ``rate`` (rad/s) about the instantaneous centre ``(x, y)`` (m, body frame)."""
    return np.array([rate * y, -rate * x, rate])


def integrate_planar(pose, twist, dt: float) -> np.ndarray:
    """Pose ``(x, y, yaw)`` after moving with the constant body twist ``(vx, vy, wz)`` for ``dt`` seconds
    (exact: straight lines and circular arcs); yaw wrapped to [-pi, pi) (:func:`~..spatial.wrap_angle`)."""
    x, y, th = (float(v) for v in pose)
    vx, vy, wz = (float(v) for v in twist)
    a = wz * dt
    if abs(a) > 1e-9:
        s, c = math.sin(a), math.cos(a)
        dx = (vx * s + vy * (c - 1.0)) / wz
        dy = (vx * (1.0 - c) + vy * s) / wz
    else:                                   # series to second order: exact within rounding for tiny angles
        dx = (vx - 0.5 * vy * a) * dt
        dy = (vy + 0.5 * vx * a) * dt
    ct, st = math.cos(th), math.sin(th)
    return np.array([x + ct * dx - st * dy, y + st * dx + ct * dy, wrap_angle(th + a)])


class Odometry:
    """Dead reckoning from body twists: ``update(twist, dt)`` integrates exactly along arcs (SE(2)); with
    ``attitude=(roll, pitch)`` (rad, from settling or an IMU) the step is taken in the body's tilted plane
    and the pose is 3-D. ``pose`` is ``(x, y, yaw)``; ``position`` (3,) and ``orientation_rpy`` (3,) give
    the 3-D pose (m, rad, odom frame). ``covariance`` (3, 3): of ``(x, y, yaw)``, grown by each update's
    ``twist_covariance`` (3x3 of ``(vx, vy, wz)``, e.g. :meth:`WheeledLocomotorModel.odometry_twist`'s) through
    the exact step's Jacobians: ``P' = F P F^T + G Q G^T`` (first order in the noise)."""

    def __init__(self, x: float = 0.0, y: float = 0.0, yaw: float = 0.0, z: float = 0.0):
        self.position = np.array([x, y, z], dtype=float)
        self.yaw = float(yaw)
        self.roll = 0.0
        self.pitch = 0.0
        self.covariance = np.zeros((3, 3))

    @property
    def pose(self) -> np.ndarray:
        return np.array([self.position[0], self.position[1], self.yaw])

    @property
    def orientation_rpy(self) -> np.ndarray:
        return np.array([self.roll, self.pitch, self.yaw])

    def reset(self, x=0.0, y=0.0, yaw=0.0, z=0.0):
        self.__init__(x, y, yaw, z)

    def update(self, twist, dt: float, attitude=None, twist_covariance=None) -> np.ndarray:
        t, local = self._step(twist, dt, twist_covariance)
        if attitude is not None:
            self.roll, self.pitch = float(attitude[0]), float(attitude[1])
        R = rpy_to_matrix((self.roll, self.pitch, self.yaw))
        self.position = self.position + R @ np.array([local[0], local[1], 0.0])
        self.yaw = float(wrap_angle(self.yaw + local[2]))
        return self.pose

    def _step(self, twist, dt: float, twist_covariance=None):
        """Check the inputs, grow :attr:`covariance` by one step (the pose's yaw as it is before the step);
        ``(twist, local step (dx, dy, dyaw) in the body's plane)``."""
        t = np.asarray(twist, dtype=float)
        if not (t.shape == (3,) and np.all(np.isfinite(t)) and math.isfinite(dt) and dt >= 0):
            raise InvalidConfiguration("Odometry.update: finite twist (vx, vy, wz) and dt >= 0 required")
        local = integrate_planar((0.0, 0.0, 0.0), t, dt)
        if twist_covariance is not None:
            Q = np.asarray(twist_covariance, dtype=float)
            if Q.shape != (3, 3) or not np.all(np.isfinite(Q)):
                raise InvalidConfiguration("Odometry.update: twist_covariance must be a finite 3x3 matrix")
            c, s_ = math.cos(self.yaw), math.sin(self.yaw)
            R = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])
            F = np.eye(3)
            F[0, 2] = -s_ * local[0] - c * local[1]
            F[1, 2] = c * local[0] - s_ * local[1]
            G = np.empty((3, 3))                          # d(local step)/d(twist): central differences
            for k in range(3):
                h = 1e-6 * max(1.0, abs(t[k]))
                dp, dm = t.copy(), t.copy()
                dp[k] += h
                dm[k] -= h
                a = integrate_planar((0.0, 0.0, 0.0), dp, dt)
                b = integrate_planar((0.0, 0.0, 0.0), dm, dt)
                G[:, k] = (a - b) / (2 * h)
                G[2, k] = (dp[2] - dm[2]) * dt / (2 * h)      # yaw: no wrap in the derivative
            G = R @ G
            self.covariance = F @ self.covariance @ F.T + G @ Q @ G.T
        return t, local
