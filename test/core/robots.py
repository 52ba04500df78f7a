"""Small mechanisms for the core tests, built in code with the builder (no model files needed)."""

from __future__ import annotations

import math

import numpy as np

from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_core.spatial import rot_x, rot_y, rot_z, translation



#: time budget (s) of the IK solves in tests: only a safety net far above what any of them takes. A test's
#: verdict must not depend on machine load, so solves are bounded by iterations (``max_iterations``, restarts
#: included; the default 10000 where a solve succeeds, whose iteration count is then fixed by its seeds)
SAFETY = 60.0


def planar_arm(lengths=(1.0, 0.7, 0.4)):
    """Planar arm in the ground's x-y plane: revolute joints about +z, links along the body x axis.
    The tool frame sits at the end of the last link."""
    b = MechanismBuilder(f"planar{len(lengths)}")
    parent = None
    for i, _ in enumerate(lengths):
        placement = np.eye(4) if i == 0 else translation(lengths[i - 1], 0, 0)
        b.add_body(f"link{i + 1}", parent, Joint.revolute(f"joint{i + 1}", placement))
        parent = f"link{i + 1}"
    b.add_frame(parent, "tool", translation(lengths[-1], 0, 0))
    return b.build()


def gantry(offset=(0.1, 0.2, 0.3)):
    """Cartesian x-y-z gantry: three prismatic joints along the ground axes; tool at ``offset``."""
    b = MechanismBuilder("gantry")
    b.add_body("carriage_x", None, Joint.prismatic("x", axis=(1, 0, 0), lower=-1, upper=1))
    b.add_body("carriage_y", "carriage_x", Joint.prismatic("y", axis=(0, 1, 0), lower=-1, upper=1))
    b.add_body("carriage_z", "carriage_y", Joint.prismatic("z", axis=(0, 0, 1), lower=-1, upper=1))
    b.add_frame("carriage_z", "tool", translation(*offset))
    return b.build()


def mixed_tree():
    """A branched tree with every joint type, non-z axes, offsets, named frames and a fixed body:

    ground -floating-> base -revolute(x, offset)-> arm1 -prismatic(skew axis)-> arm2 -ball-> wrist
                        base -fixed-> sensor_mount -planar-> sled -continuous(y)-> wheel
    """
    b = MechanismBuilder("mixed")
    b.add_body("base", None, Joint.floating("base_float", translation(0.0, 0.0, 0.5)))
    b.add_body("arm1", "base", Joint.revolute("shoulder", translation(0.2, 0.1, 0.3) @ rot_z(0.4),
                                              axis=(1, 0, 0), lower=-2, upper=2, offset=0.3))
    b.add_body("arm2", "arm1", Joint.prismatic("slide", translation(0, 0.5, 0) @ rot_y(0.2),
                                               axis=(1, 2, 2), lower=-0.4, upper=0.4))
    b.add_body("wrist", "arm2", Joint.ball("wrist_ball", translation(0.1, 0, 0.2)))
    b.add_frame("wrist", "tool", translation(0.05, 0.02, 0.15) @ rot_x(0.5))
    b.add_body("sensor_mount", "base", Joint.fixed("mount_fix", translation(-0.3, 0, 0.1) @ rot_x(-0.7)))
    b.add_body("sled", "sensor_mount", Joint.planar("sled_plane", rot_y(0.3)))
    b.add_body("wheel", "sled", Joint.continuous("wheel_spin", translation(0, 0.2, 0), axis=(0, 1, 0)))
    b.add_frame("wheel", "rim", translation(0.1, 0, 0))
    b.add_frame("sensor_mount", "camera", translation(0, 0, 0.05) @ rot_z(math.pi / 3))
    return b.build()


def puma_zero_position_rows(a2=0.4318, a3=0.0203, d3=0.15005, d4=0.4318):
    """The PUMA 560 at zero, as joint locations and axes in the base frame, derived by hand from the
    geometry of Craig's frame assignment (Craig, Introduction to Robotics, sec. 3.7)."""
    return [
        ((0, 0, 1), (0, 0, 0)),
        ((0, 1, 0), (0, 0, 0)),
        ((0, 1, 0), (a2, d3, 0)),
        ((0, 0, -1), (a2 + a3, d3, -d4)),
        ((0, 1, 0), (a2 + a3, d3, -d4)),
        ((0, 0, -1), (a2 + a3, d3, -d4)),
    ]


# Craig's frame 6 at zero, in the base frame: x6 = x0, z6 = -z0, y6 = z6 x x6
PUMA_R6_AT_ZERO = np.array([[1.0, 0, 0], [0, -1, 0], [0, 0, -1]])


# ---------------------------------------------------------------------------------------------- arms
# Industrial arms from their published D-H tables (checked against the tables in test_ik_arms.py).
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


def nonlinear_coupled_arm():
    """A 4-joint arm whose third joint follows sin(3 j2) within +-0.5 rad (a non-linear coupling whose
    limits cannot be folded into j2's bounds) and whose fourth follows 2 j1 within +-1 rad; frame ``tip``."""
    b = MechanismBuilder("coupled")
    b.add_body("l1", None, Joint.revolute("j1", lower=-2, upper=2))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(1, 0, 0), axis=(0, 1, 0), lower=-2.5, upper=2.5))
    b.add_body("l3", "l2", Joint.revolute("j3", translation(1, 0, 0), axis=(0, 1, 0), lower=-0.5, upper=0.5,
                                          coupling="sin(3*j2)"))
    b.add_body("l4", "l3", Joint.revolute("j4", translation(0.5, 0, 0), axis=(0, 1, 0), lower=-1, upper=1,
                                          coupling="2*j1"))
    b.add_frame("l4", "tip", translation(0.5, 0, 0))
    return b.build()


def planar_3r():
    """Planar 3R arm, 1 m links, joints within +-3 rad, frame ``tip`` at the end."""
    b = MechanismBuilder("planar")
    b.add_body("l1", None, Joint.revolute("j1", lower=-3, upper=3))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(1, 0, 0), lower=-3, upper=3))
    b.add_body("l3", "l2", Joint.revolute("j3", translation(1, 0, 0), lower=-3, upper=3))
    b.add_frame("l3", "tip", translation(1, 0, 0))
    return b.build()


# ---------------------------------------------------------------------------------------------- rotations
# Elementary rotations written out, independent of mechanism_model_core.spatial (for oracle checks).
def Rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def Ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def Rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
