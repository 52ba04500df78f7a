"""Which node commands which motor group: one rule, so that two nodes never command one controller.

The rule reads the model alone, so it is the same wherever the nodes run (``rover.launch.py``,
``bringup.launch.py``, ``mechanism-model serve``, with or without a parameter file):

* the ``locomotor`` owns every motor group holding a steering or drive joint of the model's wheeled
  ``<Mobility>`` (whatever its controller kind: Curiosity's steering is a ``joint_trajectory`` group);
* the ``legged`` node owns every motor group holding a walking joint of a legged model (its default feet);
* the ``manipulator`` owns the remaining ``joint_trajectory`` groups (arms, masts, pan-tilts).

Any other group (a forward-command or effort group of no locomotion) has no owner here. The manipulator's
default ``controllers`` are :func:`manipulator_groups`; a ``controllers`` parameter is the user's explicit
choice and is honoured. :func:`mechanism_model_ros.bringup_plan.plan` reports the owners and starts a rover's
manipulator only when a group is left for it.
"""

from __future__ import annotations

from mechanism_model_core.errors import MechanismModelError
from mechanism_model_core.locomotion import ControllerKind, MotorGroups
from mechanism_model_core.locomotion.legged import LeggedLocomotorModel
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel


def _locomotion_joints(mechanism) -> dict[str, str]:
    """joint name -> the node that moves it for locomotion (``locomotor`` or ``legged``)."""
    joints: dict[str, str] = {}
    try:
        wheels = WheeledLocomotorModel(mechanism).wheels
    except MechanismModelError:                  # no wheeled <Mobility>
        wheels = []
    for w in wheels:
        for j in (w.steering_joint, w.drive_joint):
            if j:
                joints[j] = "locomotor"
    if not joints:
        try:
            legs = LeggedLocomotorModel(mechanism).joint_names
        except MechanismModelError:              # no feet on a floating body
            legs = ()
        joints.update({j: "legged" for j in legs})
    return joints


def motor_group_owners(mechanism, motors: MotorGroups) -> dict[str, str]:
    """``{motor group name: node}`` by the rule of this module, in the groups' order; groups without an
    owner are absent."""
    joints = _locomotion_joints(mechanism)
    owners: dict[str, str] = {}
    for g in motors.groups:
        movers = {joints[j] for j in g.joint_names if j in joints}
        if movers:
            owners[g.name] = sorted(movers)[0]
        elif g.controller is ControllerKind.JOINT_TRAJECTORY:
            owners[g.name] = "manipulator"
    return owners


def manipulator_groups(mechanism, motors: MotorGroups) -> list:
    """The motor groups the manipulator node takes by default: the ``joint_trajectory`` groups that no
    locomotion node commands, in the model's order."""
    owners = motor_group_owners(mechanism, motors)
    return [g for g in motors.groups if owners.get(g.name) == "manipulator"]


__all__ = ["manipulator_groups", "motor_group_owners"]
