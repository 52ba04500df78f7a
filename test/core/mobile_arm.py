"""A generated test arm (``test_ik_near_decomposable``'s) on its own and mounted on a chassis whose pose is a
floating or planar joint, with the tool's world pose written out independently of the core: the base's pose by
hand and Pinocchio's forward kinematics of the arm's own URDF (the judge). Shared by the mobile-base IK tests."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mechanism_model_core.io.urdf import load_urdf
from mechanism_model_core.spatial import rot_x, rot_y, rot_z, translation

from .test_ik_near_decomposable import GEOMETRY, _urdf

pin = pytest.importorskip("pinocchio")      # the judge: the importing test module is skipped without it

#: the arm's mount on the chassis: origin as written in the URDF below
MOUNT = translation(0.2, -0.1, 0.3) @ rot_z(0.3)


class MobileArm:
    """Arm ``name`` (a key of ``GEOMETRY``) on its own (``arm``; Pinocchio's ``pm``) and mounted (``m``):
    world -> chassis (a ``kind`` joint ``base_pose``: floating or planar) -> base (fixed mount) -> the arm.
    ``cols``/``acols``: the arm joints' indices in ``m``/``arm``; ``base_cols``: the chassis coordinates';
    ``locked``: every coordinate of ``m`` that is not an arm joint."""

    def __init__(self, tmp, name, kind="floating"):
        text = _urdf(name, *GEOMETRY[name])
        mobile = text.replace('<link name="base"/>', f"""<link name="world"/>
  <link name="chassis"/>
  <link name="base"/>
  <joint name="base_pose" type="{kind}"><parent link="world"/><child link="chassis"/><axis xyz="0 0 1"/></joint>
  <joint name="mount" type="fixed">
    <parent link="chassis"/><child link="base"/><origin xyz="0.2 -0.1 0.3" rpy="0 0 0.3"/>
  </joint>""", 1)
        self.kind = kind
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (tmp / f"{name}.urdf").write_text(text)
            (tmp / f"{kind}_{name}.urdf").write_text(mobile)
            self.arm = load_urdf(str(tmp / f"{name}.urdf"))
            self.m = load_urdf(str(tmp / f"{kind}_{name}.urdf"))
        self.pm = pin.buildModelFromXML(text)
        self.pd = self.pm.createData()
        self.fid = self.pm.getFrameId("tool")
        self.joints = [self.pm.names[j] for j in range(1, self.pm.njoints)]
        self.cols = [self.m.coordinate_index(n) for n in self.joints]
        self.acols = [self.arm.coordinate_index(n) for n in self.joints]
        self.base_cols = [i for i, n in enumerate(self.m.coordinate_names) if n.startswith("base_pose.")]
        self.locked = [n for n in self.m.coordinate_names if n not in self.joints]
        self.lo, self.hi = self.m.lower_limits[self.cols], self.m.upper_limits[self.cols]

    def base_pose(self, q):
        """The mount's world pose (4x4) at full coordinates ``q``, written out by hand: a floating joint as
        translation then yaw, pitch, roll (URDF's fixed-axis roll-pitch-yaw), a planar one as x, y then the
        turn about z."""
        v = {n: float(q[i]) for i, n in enumerate(self.m.coordinate_names)}
        if self.kind == "planar":
            B = translation(v["base_pose.x"], v["base_pose.y"], 0.0) @ rot_z(v["base_pose.theta"])
        else:
            B = (translation(v["base_pose.x"], v["base_pose.y"], v["base_pose.z"]) @ rot_z(v["base_pose.yaw"])
                 @ rot_y(v["base_pose.pitch"]) @ rot_x(v["base_pose.roll"]))
        return B @ MOUNT

    def world_tool(self, q):
        """The tool's world pose (4x4): :meth:`base_pose` and Pinocchio's forward kinematics of the arm's own
        URDF."""
        pin.framesForwardKinematics(self.pm, self.pd, np.asarray(q, dtype=float)[self.cols])
        return self.base_pose(q) @ self.pd.oMf[self.fid].homogeneous

    def sample(self, rng):
        """A random base pose (every chassis coordinate within 3, m or rad) and random in-limit arm joints."""
        q = np.array(self.m.home, dtype=float)
        q[self.base_cols] = rng.uniform(-3.0, 3.0, len(self.base_cols))
        return self.with_arm(q, rng)

    def base_configuration(self, rng):
        """A random floating chassis pose (within 3 m, any orientation), the arm at home."""
        q = np.array(self.m.home, dtype=float)
        for n, val in zip(("base_pose.x", "base_pose.y", "base_pose.z"), rng.uniform(-3, 3, 3)):
            q[self.m.coordinate_index(n)] = val
        for n, val in zip(("base_pose.roll", "base_pose.pitch", "base_pose.yaw"),
                          rng.uniform(-math.pi, math.pi, 3)):
            q[self.m.coordinate_index(n)] = val
        return q

    def with_arm(self, q, rng):
        """``q`` with random in-limit arm joints."""
        q = np.array(q, dtype=float)
        q[self.cols] = self.lo + rng.random(len(self.cols)) * (self.hi - self.lo)
        return q
