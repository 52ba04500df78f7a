"""Models and control-side descriptions for manipulators and locomotors (CLARAty 004 sections 11-13).

:mod:`.wheeled`: ``Wheeled_Locomotor_Model`` -- steering and wheel rates from body motion, odometry, rocker-bogie
settling on terrain (12); :mod:`.mobility`: its mobility description.
:mod:`.manipulator`: ``Manipulator_Model`` -- one chain as an arm or a mast: FK/IK/Jacobian in chain
coordinates, specialized solvers per adaptation, Cartesian paths, pointing, gravity compensation (11-13);
:mod:`.presets`: the library's arm and mast adaptations.
:mod:`.legged`: ``Legged_Locomotor_Model`` -- leg IK, body IK, static stability, gaits on flat ground and slopes.
:mod:`.trajectory`: joint trajectories and their time parameterization within limits.
:mod:`.motor_group`: which motor drives which joint, through which ros2_control controller and command
interface, with which limits (13.2).

The files these are read from and written to are :mod:`mechanism_model_core.io`'s: ``io.mobility_yaml``,
``io.mobility_xml``, ``io.manipulator_xml``, ``io.legged_xml``, ``io.motor_groups`` (``load_motor_groups``).
"""

from .motor_group import (ClampResult, CommandInterface, ControllerKind, InvalidCommand, LimitViolation, Motor,
                          MotorGroup, MotorGroups, MotorLimits, motor_limits_for)

__all__ = ["ClampResult", "CommandInterface", "ControllerKind", "InvalidCommand", "LimitViolation", "Motor",
           "MotorGroup", "MotorGroups", "MotorLimits", "motor_limits_for"]
