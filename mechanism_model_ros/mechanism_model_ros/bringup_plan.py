"""What ``rover.launch.py`` (and the walker and arm launches) start for a model, decided from the model alone.

:func:`plan` reads the model's motor groups and its locomotion (a ``<Mobility>`` with wheels: a rover; feet
frames ``*foot`` on a floating body: a walker; otherwise an arm, mast or any fixed-base mechanism) and returns
a :class:`BringupPlan`: the robot's kind, the nodes to run, the controllers to spawn (one per motor group, in
the model's order), RViz's fixed frame and configuration, the ``robot_description`` (the model's URDF with
its ``<ros2_control>`` block for the chosen hardware plugin and its materials, rooted at the floating body
for mobile robots: odometry or localization owns the pose of that body) and the controller_manager YAML.
Everything is computed at launch time from the model file; nothing is written by hand.

:func:`check_hardware_plugin` tells, before anything starts, whether a ``hardware_interface`` plugin of that
name is installed (pluginlib's ament index of plugin descriptions, the list ``ros2_control_node`` itself
loads from), so a misspelt plugin stops the launch with the names that do exist instead of leaving a
half-started robot.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import yaml

from mechanism_model_core.errors import MechanismModelError
from mechanism_model_core.io.ros2_control import TIMED_FORWARD, controllers_yaml, urdf_with_ros2_control
from mechanism_model_core.io.urdf import to_urdf
from mechanism_model_core.io.urdf_subtree import urdf_subtree
from mechanism_model_core.joints import JointType
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion import MotorGroups
from mechanism_model_core.locomotion.legged import LeggedLocomotorModel
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

from .motor_group_owners import motor_group_owners
from mechanism_model_core.io.safe_xml import parse_bytes

#: robot kind -> the node that moves it (besides the state publisher and the three servers)
KIND_NODES = {"rover": ("locomotor",), "walker": ("legged",), "arm": ("manipulator",)}
SERVERS = ("state_publisher", "kinematics_server", "statics_server")
HARDWARE_RESOURCE = "hardware_interface__pluginlib__plugin"
CONTROLLER_RESOURCE = "controller_interface__pluginlib__plugin"


class BringupError(ValueError):
    """A launch that cannot start as asked (a model without motors, an unknown hardware plugin ...)."""


@dataclass
class BringupPlan:
    kind: str                   #: "rover", "walker" or "arm"
    nodes: list[str]            #: mechanism_model_ros executables to run
    controllers: list[str]      #: motor groups = controllers to spawn active, in the model's order
    fixed_frame: str            #: RViz's fixed frame
    rviz_config: str            #: file name in <share>/rviz
    robot_description: str      #: URDF with the <ros2_control> block
    controllers_yaml: str       #: controller_manager parameter file text
    hardware: str               #: hardware plugin
    base_frame: str | None = None   #: the floating body (odometry's child frame), if any
    #: motor group -> the node commanding it (:func:`.motor_group_owners.motor_group_owners`: one node each)
    owners: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def parse_hardware_params(text: str) -> dict[str, str]:
    """``hardware_params:=`` of the launch: a YAML mapping of scalars (``"{port: /dev/ttyACM0, baud: 115200}"``),
    as ``ros2 param`` takes values; empty: none. Values become the ``<param>`` texts of ``<hardware>``."""
    if not text or not text.strip():
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BringupError(f"hardware_params is not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and k for k in data):
        raise BringupError(f"hardware_params must be a mapping of parameter names to values, e.g. "
                           f"\"{{port: /dev/ttyACM0, baud: 115200}}\"; got {text!r}")
    out = {}
    for k, v in data.items():
        if isinstance(v, (dict, list)) or v is None:
            raise BringupError(f"hardware_params: {k!r} must be a single value, not {v!r}")
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def installed_hardware_plugins(prefixes: list[str] | None = None,
                               resource: str = HARDWARE_RESOURCE) -> dict[str, str]:
    """Every ``hardware_interface`` plugin class pluginlib can load (``resource``: another base class's
    plugin index, e.g. :data:`CONTROLLER_RESOURCE`): name -> description file, from the ament index of the
    ``AMENT_PREFIX_PATH`` prefixes (or ``prefixes``)."""
    if prefixes is None:
        prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    found: dict[str, str] = {}
    for prefix in prefixes:
        index = os.path.join(prefix, "share", "ament_index", "resource_index", resource)
        if not os.path.isdir(index):
            continue
        for pkg in sorted(os.listdir(index)):
            with open(os.path.join(index, pkg), encoding="utf-8") as fh:
                paths = [line.strip() for line in fh.read().splitlines() if line.strip()]
            for rel in paths:
                path = os.path.join(prefix, rel)
                try:
                    with open(path, "rb") as fh:
                        root = parse_bytes(fh.read(), path)
                except (OSError, MechanismModelError):
                    continue
                libraries = [root] if root.tag == "library" else root.findall("library")
                for lib in libraries:
                    for cls in lib.findall("class"):
                        name = cls.get("name") or cls.get("type")
                        if name:
                            found.setdefault(name, path)
    return found


def check_hardware_plugin(plugin: str, prefixes: list[str] | None = None) -> None:
    """Raise :class:`BringupError` naming the installed plugins when ``plugin`` is not one of them."""
    plugins = installed_hardware_plugins(prefixes)
    if plugin not in plugins:
        known = ", ".join(sorted(plugins)) or "none (is ros2_control installed and its setup sourced?)"
        raise BringupError(f"hardware plugin {plugin!r} is not installed: no hardware_interface plugin "
                           f"description names it (installed: {known}). Install its package and source "
                           f"its workspace, or use hardware:=mock")


def check_controller_plugins(controllers_yaml_text: str, prefixes: list[str] | None = None) -> None:
    """Raise :class:`BringupError` when the controller YAML names the suite's watchdog controller
    (``mechanism_model_controllers/TimedForwardCommandController``, for velocity and effort groups) and it is
    not installed: ``ros2_control_node`` would start without the wheel controller."""
    if TIMED_FORWARD in controllers_yaml_text and \
            TIMED_FORWARD not in installed_hardware_plugins(prefixes, CONTROLLER_RESOURCE):
        raise BringupError(f"controller plugin {TIMED_FORWARD} is not installed: build the package "
                           f"mechanism_model_controllers of this repository into your workspace (colcon build) "
                           f"and source it")


def robot_kind(mechanism, motors: MotorGroups) -> str:
    """``rover`` (the model's mobility names wheels), ``walker`` (feet on a floating body) or ``arm``."""
    try:
        WheeledLocomotorModel(mechanism)
        return "rover"
    except MechanismModelError:                 # MobilityError included
        pass
    try:
        LeggedLocomotorModel(mechanism)
        return "walker"
    except MechanismModelError:
        pass
    return "arm"


def floating_body(mechanism) -> str | None:
    """The body on the mechanism's first floating joint (a rover's chassis, a walker's body), if any."""
    for spec in mechanism.bodies[1:]:
        if spec.joint is not None and spec.joint.type is JointType.FLOATING:
            return spec.name
    return None


def plan(mechanism, motors: MotorGroups | None = None, *, hardware: str = "mock",
         hardware_params: dict[str, str] | None = None, kind: str = "auto") -> BringupPlan:
    """The bringup of ``mechanism`` (see the module documentation). ``hardware``: ``mock`` (the motor groups'
    own plugin, by default mock_components/GenericSystem) or a plugin name; ``hardware_params`` its
    ``<param>`` values; ``kind``: ``auto`` or one of :data:`KIND_NODES`."""
    if motors is None:
        motors = load_motor_groups(mechanism)
    if not len(motors):
        raise BringupError(f"model {mechanism.name!r} defines no motor groups: add <Motor_Group> elements "
                           f"(models/README.md) or use bringup.launch.py (no motors)")
    plugin = motors.hardware if hardware in ("", "mock") else hardware
    params = dict(motors.hardware_parameters) if plugin == motors.hardware else {}
    params.update(hardware_params or {})
    motors = MotorGroups(motors.groups, plugin, params, motors.update_rate, motors.source)
    if kind == "auto":
        kind = robot_kind(mechanism, motors)
    if kind not in KIND_NODES:
        raise BringupError(f"unknown robot kind {kind!r} (auto, {', '.join(KIND_NODES)})")
    nodes = list(SERVERS) + list(KIND_NODES[kind])
    owners = motor_group_owners(mechanism, motors)
    if kind == "rover" and "manipulator" in owners.values():
        nodes.append("manipulator")        # the rover's mast and arm (never its steering: motor_group_owners)
    base = floating_body(mechanism)
    urdf = to_urdf(mechanism)
    if base is not None:
        # a mobile robot's description starts at its body: odometry / localization own odom -> body
        urdf = urdf_subtree(urdf, base)
    description = urdf_with_ros2_control(mechanism, motors, urdf=urdf)
    if kind == "rover":
        fixed = "odom"
    else:
        fixed = base or mechanism.bodies[0].name
    return BringupPlan(kind=kind, nodes=nodes, controllers=[g.name for g in motors.groups],
                       fixed_frame=fixed, rviz_config=f"{kind}.rviz", robot_description=description,
                       controllers_yaml=controllers_yaml(motors), hardware=plugin, base_frame=base,
                       owners=owners)


__all__ = ["BringupError", "BringupPlan", "KIND_NODES", "check_hardware_plugin", "floating_body",
           "installed_hardware_plugins", "parse_hardware_params", "plan", "robot_kind"]
