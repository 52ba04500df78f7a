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

UR5_DH = [  # (d, a, alpha) per joint, Paul: T = Rz(q) Tz(d) Tx(a) Rx(alpha)
    (0.089159, 0.0, math.pi / 2),
    (0.0, -0.425, 0.0),
    (0.0, -0.39225, 0.0),
    (0.10915, 0.0, math.pi / 2),
    (0.09465, 0.0, -math.pi / 2),
    (0.0823, 0.0, 0.0),
]

PANDA_MDH = [  # (a_{i-1}, alpha_{i-1}, d_i), Craig: T = Rx(alpha) Tx(a) Tz(d) Rz(q)
    (0.0, 0.0, 0.333),
    (0.0, -math.pi / 2, 0.0),
    (0.0, math.pi / 2, 0.316),
    (0.0825, math.pi / 2, 0.0),
    (-0.0825, -math.pi / 2, 0.384),
    (0.0, math.pi / 2, 0.0),
    (0.088, math.pi / 2, 0.0),
]
PANDA_LIMITS = [(-2.8973, 2.8973), (-1.7628, 1.7628), (-2.8973, 2.8973), (-3.0718, -0.0698),
                (-2.8973, 2.8973), (-0.0175, 3.7525), (-2.8973, 2.8973)]
PANDA_FLANGE = 0.107


def _paul_distal(d, a, alpha):
    return translation(0, 0, d) @ translation(a, 0, 0) @ rot_x(alpha)


def ur5(limit=math.pi):
    b = MechanismBuilder("ur5")
    parent, placement = None, np.eye(4)
    for i, (d, a, alpha) in enumerate(UR5_DH):
        b.add_body(f"link{i + 1}", parent, Joint.revolute(f"joint{i + 1}", placement, lower=-limit,
                                                          upper=limit))
        parent, placement = f"link{i + 1}", _paul_distal(d, a, alpha)
    b.add_frame(parent, "tool", placement)
    return b.build()


def panda():
    b = MechanismBuilder("panda")
    parent = None
    for i, ((a, alpha, d), (lo, hi)) in enumerate(zip(PANDA_MDH, PANDA_LIMITS)):
        placement = rot_x(alpha) @ translation(a, 0, 0) @ translation(0, 0, d)
        b.add_body(f"link{i + 1}", parent, Joint.revolute(f"joint{i + 1}", placement, lower=lo, upper=hi))
        parent = f"link{i + 1}"
    b.add_frame(parent, "flange", translation(0, 0, PANDA_FLANGE))
    return b.build()


def chain10(link=0.12, limit=2.5):
    b = MechanismBuilder("chain10")
    parent = None
    for i in range(10):
        axis = (0, 0, 1) if i % 2 == 0 else (0, 1, 0)
        placement = np.eye(4) if i == 0 else translation(0, 0, link)
        b.add_body(f"link{i + 1}", parent, Joint.revolute(f"joint{i + 1}", placement, axis=axis,
                                                          lower=-limit, upper=limit))
        parent = f"link{i + 1}"
    b.add_frame(parent, "tool", translation(0, 0, link))
    return b.build()


YPPPY = dict(base_height=0.2, shoulder=0.05, upper=0.5, fore=0.45, wrist=0.1, tool=0.15)


def ypppy(p=YPPPY, limits=True):
    """Yaw (about z), three pitches (about the turned y axis), a final yaw about the tool axis, which
    points along the arm's x axis at zero (MER IDD-like). Lengths in metres."""
    lim = (dict(lower=-math.pi, upper=math.pi), dict(lower=-1.8, upper=1.8), dict(lower=-2.6, upper=2.6),
           dict(lower=-2.6, upper=2.6), dict(lower=-math.pi, upper=math.pi))
    if not limits:
        lim = ({},) * 5
    b = MechanismBuilder("ypppy")
    b.add_body("azimuth", None, Joint.revolute("yaw1", translation(0, 0, p["base_height"]), **lim[0]))
    b.add_body("upper_arm", "azimuth", Joint.revolute("pitch1", translation(p["shoulder"], 0, 0),
                                                      axis=(0, 1, 0), **lim[1]))
    b.add_body("forearm", "upper_arm", Joint.revolute("pitch2", translation(p["upper"], 0, 0), axis=(0, 1, 0),
                                                      **lim[2]))
    b.add_body("wrist", "forearm", Joint.revolute("pitch3", translation(p["fore"], 0, 0), axis=(0, 1, 0),
                                                  **lim[3]))
    b.add_body("turret", "wrist", Joint.revolute("yaw2", translation(p["wrist"], 0, 0), axis=(1, 0, 0),
                                                 **lim[4]))
    b.add_frame("turret", "tool", translation(p["tool"], 0, 0))
    return b.build()


# ------------------------------------------------------------------ independent FK checks
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
