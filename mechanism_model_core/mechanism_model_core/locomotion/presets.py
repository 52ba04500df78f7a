"""The library's manipulator adaptations (CLARAty 11.3, 12.2): :class:`~.manipulator.ManipulatorModel` with the
tools, bases and closed-form solvers of one arm or mast. A ``<Manipulator_Model>`` file names one by its
``kind`` (:data:`MANIPULATOR_KINDS`; :mod:`mechanism_model_core.io.manipulator_xml`)."""

from __future__ import annotations

import math

import numpy as np

from ..ik import IKResult
from ..ik.closed_form import YPPPYSolver
from ..model import Mechanism
from ..spatial import axis_angle_matrix
from .manipulator import ManipulatorModel, register_chain_solver

__all__ = ["MANIPULATOR_KINDS", "MERArmModel", "MoonriseArmModel", "R8ArmModel", "R8MastModel"]


class R8ArmModel(ManipulatorModel):
    """Rocky 8's 5-DOF YPPPY arm (CLARAty's R8_Arm_Model): tool ``arm_tool``, base ``arm_mount`` when the
    mechanism has it (the rover), else the arm file's ground; IK by the YPPPY closed form."""

    def __init__(self, mechanism: Mechanism, tool: str = "arm_tool", base: str | None = None, **kw):
        register_chain_solver(mechanism.name, tool, lambda m, _t=tool: YPPPYSolver(m, _t))
        if base is None and mechanism.has_frame("arm_mount"):
            base = "arm_mount"
        super().__init__(mechanism, tool=tool, base=base, **kw)


class R8MastModel(ManipulatorModel):
    """Rocky 8's pan-tilt mast (CLARAty's FD_Mast_Model kind): pointing ``mast_camera``'s line of sight
    (x) at targets within the pan and tilt limits; base ``mast_mount`` when the mechanism has it."""

    def __init__(self, mechanism: Mechanism, tool: str = "mast_camera", base: str | None = None, **kw):
        if base is None and mechanism.has_frame("mast_mount"):
            base = "mast_mount"
        tools = [t for t in (tool, "left_navcam", "right_navcam", "mast_camera_optical") if mechanism.has_frame(t)]
        super().__init__(mechanism, tool=tool, base=base, tools=tools, **kw)


class MERArmModel(ManipulatorModel):
    """MER's Instrument Deployment Device: tools ``mi``, ``apxs``, ``mb``, ``rat`` (the closed form ships
    registered for ``mer_idd``)."""

    def __init__(self, mechanism: Mechanism, tool: str = "mi", **kw):
        tools = [t for t in ("mi", "apxs", "mb", "rat", "idd_turret") if mechanism.has_frame(t)]
        for t in tools:
            register_chain_solver(mechanism.name, t, lambda m, _t=t: YPPPYSolver(m, _t))
        super().__init__(mechanism, tool=tool, tools=tools, **kw)


class MoonriseArmModel(ManipulatorModel):
    """The Moonrise-style 4-DOF digging arm: yaw then three pitches ending in the scoop (``scoop_tip``,
    ``scoop_mouth``). A 4-DOF arm reaches a position and the scoop's pitch: :meth:`dig_pose` builds such a
    target; IK uses the registered YPPP closed form (:class:`~.arm_solvers.YPPPSolver`)."""

    def __init__(self, mechanism: Mechanism, tool: str = "scoop_tip", **kw):
        tools = [t for t in ("scoop_tip", "scoop_mouth") if mechanism.has_frame(t)]
        super().__init__(mechanism, tool=tool, tools=tools, **kw)

    def dig_pose(self, position, scoop_pitch: float, q0=None, **solve_kw) -> IKResult:
        """IK for the scoop tip at ``position`` (m, base frame) with the scoop's x axis pitched
        ``scoop_pitch`` rad below the horizontal, in the vertical plane through the base axis (the arm's
        reachable set); the tool's heading follows the arm's yaw."""
        p = np.asarray(position, dtype=float)
        yaw = math.atan2(p[1], p[0])
        T = np.eye(4)
        T[:3, :3] = axis_angle_matrix((0, 0, 1), yaw) @ axis_angle_matrix((0, 1, 0), scoop_pitch)
        T[:3, 3] = p
        return self.ik(T, q0, **solve_kw)


#: ``kind`` attribute of a ``<Manipulator_Model>`` file -> class
MANIPULATOR_KINDS: dict[str, type] = {cls.__name__: cls for cls in (ManipulatorModel, R8ArmModel, R8MastModel,
                                                                     MERArmModel, MoonriseArmModel)}
