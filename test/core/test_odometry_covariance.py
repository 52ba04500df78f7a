"""Odometry covariances: the twist's from the least-squares residual, the pose's propagated through the
exact SE(2) steps; both against Monte Carlo simulation (independent of the formulas)."""

import math

import numpy as np
import pytest

import mechanism_model_core as mm
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import Odometry, WheeledLocomotorModel, integrate_planar


def test_twist_covariance_from_the_residual_matches_monte_carlo():
    """Every wheel's contact velocity measured with independent noise of sigma m/s on both components (rate
    noise sigma / r along the wheel, steering noise sigma / speed across it; Rocky 8 steers all six): the
    estimates' scatter is sigma^2 (A^T A)^-1, and the covariance each estimate reports from its own residual
    averages to it."""
    rover = WheeledLocomotorModel(mm.load_model(model_path("rocky8/rocky8_rover.xml")))
    rng = np.random.default_rng(3)
    cmd = rover.command((0.3, 0.0, 0.4), mode="ackermann", steer_before_drive=False)
    sigma = 0.002
    r = rover.home_geometry.radius
    speed = np.abs(cmd.rates) * r
    est, reported = [], []
    for _ in range(4000):
        noisy = cmd.rates + rng.normal(0.0, sigma, rover.n) / r
        steer = cmd.steering + rng.normal(0.0, sigma, rover.n) / speed
        twist, rms, cov = rover.odometry_twist(noisy, steer, covariance=True)
        est.append(twist)
        reported.append(cov)
    est = np.array(est)
    empirical = np.cov(est.T)
    mean_reported = np.mean(reported, axis=0)
    assert np.mean(est, axis=0) == pytest.approx(cmd.twist, abs=5e-4)
    for i in range(3):
        assert mean_reported[i, i] == pytest.approx(empirical[i, i], rel=0.15)
    # no slip, no covariance
    _, rms, cov = rover.odometry_twist(cmd.rates, cmd.steering, covariance=True)
    assert rms < 1e-12 and np.all(np.abs(cov) < 1e-20)


def test_pose_covariance_propagation_matches_monte_carlo():
    rng = np.random.default_rng(5)
    twist = np.array([0.4, 0.0, 0.3])
    Q = np.diag([0.02, 0.005, 0.01]) ** 2
    dt, steps = 0.1, 40
    odo = Odometry(yaw=0.2)
    for _ in range(steps):
        odo.update(twist, dt, twist_covariance=Q)
    ends = []
    L = np.linalg.cholesky(Q)
    for _ in range(3000):
        pose = np.array([0.0, 0.0, 0.2])
        for _ in range(steps):
            pose = integrate_planar(pose, twist + L @ rng.normal(size=3), dt)
        ends.append(pose)
    ends = np.array(ends)
    empirical = np.cov(ends.T)
    assert odo.pose == pytest.approx(integrate_planar((0, 0, 0.2), twist, dt * steps), abs=1e-9)
    for i in range(3):
        assert odo.covariance[i, i] == pytest.approx(empirical[i, i], rel=0.12)
    assert odo.covariance[0, 1] == pytest.approx(empirical[0, 1], abs=0.15 * math.sqrt(empirical[0, 0] * empirical[1, 1]))
