"""Arms for the IK tests, built in code, and checks of their forward kinematics against textbook
Denavit-Hartenberg products (so the IK tests stand on independently verified models).

* ``ur5()``: Universal Robots UR5, standard (Paul) D-H parameters as published by Universal Robots.
* ``panda()``: Franka Emika Panda, modified (Craig) D-H parameters and joint limits from Franka's
  documentation; frame ``flange`` 0.107 m beyond joint 7. Redundant (7 DOF).
* ``chain10()``: a 10-joint spatial chain, axes alternating z and y, 0.12 m links.
* ``ypppy()``: a MER-IDD-like yaw-pitch-pitch-pitch-yaw 5-DOF arm (CLARAty design doc section 14).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics
from mechanism_model_core.spatial import rot_x, translation

from .robots import PANDA_FLANGE, PANDA_LIMITS, PANDA_MDH, UR5_DH, YPPPY, chain10, panda, ur5, ypppy  # noqa: F401


def _paul(theta, d, a, alpha):
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st], [0, sa, ca, d],
                     [0, 0, 0, 1.0]])


def _craig(theta, a, alpha, d):
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -sa * d], [st * sa, ct * sa, ca, ca * d],
                     [0, 0, 0, 1.0]])


@pytest.mark.parametrize("seed", range(5))
def test_ur5_matches_textbook_dh(seed):
    q = np.random.default_rng(seed).uniform(-math.pi, math.pi, 6)
    T = np.eye(4)
    for qi, (d, a, alpha) in zip(q, UR5_DH):
        T = T @ _paul(qi, d, a, alpha)
    np.testing.assert_allclose(forward_kinematics(ur5(), q).pose("tool"), T, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_panda_matches_textbook_mdh(seed):
    m = panda()
    q = m.random_configuration(seed)
    T = np.eye(4)
    for qi, (a, alpha, d) in zip(q, PANDA_MDH):
        T = T @ _craig(qi, a, alpha, d)
    T = T @ translation(0, 0, PANDA_FLANGE)
    np.testing.assert_allclose(forward_kinematics(m, q).pose("flange"), T, atol=1e-12)


def test_ypppy_geometry_at_a_known_pose():
    m = ypppy()
    p = YPPPY
    # all pitches at zero, azimuth 90 deg: the arm lies along +y
    T = forward_kinematics(m, [math.pi / 2, 0, 0, 0, 0]).pose("tool")
    reach = p["shoulder"] + p["upper"] + p["fore"] + p["wrist"] + p["tool"]
    np.testing.assert_allclose(T[:3, 3], [0, reach, p["base_height"]], atol=1e-12)
    # first pitch +90 deg about y turns the x axis to -z: the arm hangs straight down
    T = forward_kinematics(m, [0, math.pi / 2, 0, 0, 0]).pose("tool")
    np.testing.assert_allclose(T[:3, 3], [p["shoulder"], 0, p["base_height"] - (reach - p["shoulder"])],
                               atol=1e-12)
