"""Small mechanisms for the core tests, built in code with the builder (no model files needed)."""

from __future__ import annotations

import math

import numpy as np

from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_core.spatial import rot_x, rot_y, rot_z, translation


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
