"""Models and control-side descriptions for manipulators and locomotors (CLARAty 004 sections 11-13).

:mod:`.motor_group`: which motor drives which joint, through which ros2_control controller and command
interface, with which limits (13.2); :func:`load_motor_groups` reads them from a model's files.
"""

from .motor_group import (ClampResult, CommandInterface, ControllerKind, InvalidCommand, LimitViolation, Motor,
                          MotorGroup, MotorGroups, MotorLimits, motor_limits_for)
from ..io.motor_groups import load_motor_groups, motor_groups_from_xml, motor_groups_from_yaml

__all__ = ["ClampResult", "CommandInterface", "ControllerKind", "InvalidCommand", "LimitViolation", "Motor",
           "MotorGroup", "MotorGroups", "MotorLimits", "load_motor_groups", "motor_groups_from_xml",
           "motor_groups_from_yaml", "motor_limits_for"]
