"""Models and control-side descriptions for manipulators and locomotors (CLARAty 004 sections 11-13).

:mod:`.wheeled`: ``Wheeled_Locomotor_Model`` -- steering and wheel rates from body motion, odometry, rocker-bogie
settling on terrain (12).
:mod:`.manipulator`: ``Manipulator_Model`` -- one chain as an arm or a mast: FK/IK/Jacobian in chain
coordinates, specialized solvers per adaptation, Cartesian paths, pointing, gravity compensation (11-13).
:mod:`.legged`: ``Legged_Locomotor_Model`` -- leg IK, body IK, static stability, gaits on flat ground and slopes.
:mod:`.trajectory`: joint trajectories and their time parameterization within limits.
:mod:`.motor_group`: which motor drives which joint, through which ros2_control controller and command
interface, with which limits (13.2); :func:`load_motor_groups` reads them from a model's files.
"""

from .motor_group import (ClampResult, CommandInterface, ControllerKind, InvalidCommand, LimitViolation, Motor,
                          MotorGroup, MotorGroups, MotorLimits, motor_limits_for)

_READERS = ("load_motor_groups", "motor_groups_from_xml", "motor_groups_from_yaml")


def __getattr__(name):
    """The motor-group readers live in :mod:`mechanism_model_core.io.motor_groups` (which imports this
    package); they are fetched on first use so that neither import depends on the other's order."""
    if name in _READERS:
        from ..io import motor_groups
        return getattr(motor_groups, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["ClampResult", "CommandInterface", "ControllerKind", "InvalidCommand", "LimitViolation", "Motor",
           "MotorGroup", "MotorGroups", "MotorLimits", "load_motor_groups", "motor_groups_from_xml",
           "motor_groups_from_yaml", "motor_limits_for"]
