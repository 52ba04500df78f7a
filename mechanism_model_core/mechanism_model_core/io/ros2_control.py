"""ros2_control configuration written from one motor-group definition
(:class:`~mechanism_model_core.locomotion.motor_group.MotorGroups`): the ``<ros2_control>`` URDF block and
the controller_manager YAML, so a robot integrator starts from a configuration that matches the model.

* ``<ros2_control name="<robot>" type="system">`` with the hardware plugin of the definition
  (``mock_components/GenericSystem`` unless told otherwise; for it ``calculate_dynamics`` is on, so a
  velocity-commanded wheel's position integrates its velocity as a real encoder would show). Each commanded
  joint has its group's command interface with ``min``/``max`` from the motor limits and the state
  interfaces ``position`` and ``velocity`` (position starts at the model's home value). Passive joints
  (rockers, bogies; ``passive_joints=True``) are listed with state interfaces only, so
  ``joint_state_broadcaster`` reports them as a real robot's sensors would; a coupled passive joint carries
  ros2_control's ``mimic``/``multiplier`` parameters where its coupling is ``k * other``. Multi-DOF joints
  (a rover's floating chassis) are not hardware joints and are left out. Every motor whose transmission is
  not the identity gets a ``transmission_interface/SimpleTransmission`` with its signed reduction and offset.
* The controller_manager YAML: ``update_rate``, ``joint_state_broadcaster``, and one controller per group:
  ``forward_command_controller/ForwardCommandController`` (``joints``, ``interface_name``) for a
  forward-command group of positions, :data:`TIMED_FORWARD` (the same, plus ``command_timeout``) for one of
  velocities or efforts -- a motor that keeps its last velocity would keep driving after its commanding node
  died, so these groups stop by themselves when their commands fall silent (docs/ros.md, "Stopping when
  the commanding node dies"); ``command_timeout=None`` writes plain forward command controllers -- or
  ``joint_trajectory_controller/JointTrajectoryController`` (``joints``, ``command_interfaces``,
  ``state_interfaces``, goal constraints, PID ``gains`` when the command interface is not position).
  It is written by PyYAML's emitter with every string (keys too) but plain identifiers double-quoted, so
  every joint name reads back as that string: in PyYAML (YAML 1.1), in YAML 1.2 parsers, and in rcl's parameter
  parser, which types unquoted scalars itself (``on``, ``null``, ``1.5``, ``1e3`` are strings only quoted).
"""

from __future__ import annotations

import math
import re
from typing import Mapping

from ..errors import MechanismModelError
from ..expressions import parse_expression
from ..joints import JointType
from ..locomotion.motor_group import CommandInterface, ControllerKind, MotorGroups
from .safe_xml import parse_bytes
from .urdf import to_urdf
from ..extras import install_hint

MOCK = "mock_components/GenericSystem"
#: the suite's forward command controller with a command watchdog (package mechanism_model_controllers)
TIMED_FORWARD = "mechanism_model_controllers/TimedForwardCommandController"
#: default ``command_timeout`` (s) of velocity and effort groups: with a 100 Hz controller manager a killed
#: node's wheels stop within 0.25 s + 10 ms, and a commanding node's 50 Hz heartbeat may miss 11 beats
COMMAND_TIMEOUT = 0.25


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else ("1e9" if v > 0 else "-1e9")


def _xml_attr(text: str) -> str:
    from xml.sax.saxutils import quoteattr
    return quoteattr(str(text))


def _xml_text(text: str) -> str:
    from xml.sax.saxutils import escape
    return escape(str(text))


def _home(mechanism, joint: str) -> float:
    return float(mechanism.home[mechanism.joint_slice(joint)][0])


def _mimic(mechanism, joint) -> tuple[str, float] | None:
    """(other joint, multiplier) when ``joint``'s coupling is ``multiplier * other``."""
    if joint.coupling is None:
        return None
    try:
        expr = parse_expression(joint.coupling, mechanism.joint_names)
        lin = expr.linear_coefficients()
    except MechanismModelError:
        return None
    if lin is None:
        return None
    coeffs, b = lin
    if len(coeffs) != 1 or abs(b) > 1e-12:
        return None
    (other, k), = coeffs.items()
    return other, float(k)


def ros2_control_element(mechanism, motors: MotorGroups, *, name: str | None = None,
                         passive_joints: bool = True, indent: str = "  ") -> str:
    """The ``<ros2_control>`` element (text) for ``motors`` on ``mechanism``."""
    if not len(motors):
        raise MechanismModelError(f"model {mechanism.name!r} defines no motor groups")
    lines = [f'<ros2_control name={_xml_attr(name or mechanism.name or "robot")} type="system">',
             f"{indent}<hardware>", f"{indent * 2}<plugin>{_xml_text(motors.hardware)}</plugin>"]
    params = dict(motors.hardware_parameters)
    if motors.hardware == MOCK:
        params.setdefault("calculate_dynamics", "true")
    for k, v in params.items():
        lines.append(f"{indent * 2}<param name={_xml_attr(k)}>{_xml_text(v)}</param>")
    lines.append(f"{indent}</hardware>")
    commanded = set(motors.joint_names)
    for group in motors.groups:
        iface = group.interface.value
        lo, hi = group.limits_of()
        for k, motor in enumerate(group.motors):
            home = min(max(_home(mechanism, motor.joint), motor.limits.lower), motor.limits.upper)
            lines += [f"{indent}<joint name={_xml_attr(motor.joint)}>",
                      f'{indent * 2}<command_interface name="{iface}">',
                      f'{indent * 3}<param name="min">{_num(lo[k])}</param>',
                      f'{indent * 3}<param name="max">{_num(hi[k])}</param>',
                      f"{indent * 2}</command_interface>",
                      f'{indent * 2}<state_interface name="position">',
                      f'{indent * 3}<param name="initial_value">{_num(home)}</param>',
                      f"{indent * 2}</state_interface>",
                      f'{indent * 2}<state_interface name="velocity"/>',
                      f"{indent}</joint>"]
    if passive_joints:
        for j in mechanism.joints:
            if j.name in commanded or j.dof != 1 or j.type is JointType.FIXED:
                continue
            lines.append(f"{indent}<joint name={_xml_attr(j.name)}>")
            mimic = _mimic(mechanism, j)
            if mimic is not None:
                lines += [f'{indent * 2}<param name="mimic">{_xml_text(mimic[0])}</param>',
                          f'{indent * 2}<param name="multiplier">{_num(mimic[1])}</param>']
            lines += [f'{indent * 2}<state_interface name="position">',
                      f'{indent * 3}<param name="initial_value">{_num(_home(mechanism, j.name))}</param>',
                      f"{indent * 2}</state_interface>",
                      f'{indent * 2}<state_interface name="velocity"/>',
                      f"{indent}</joint>"]
    for group in motors.groups:
        for motor in group.motors:
            if motor.reduction == 1.0 and motor.offset == 0.0:
                continue
            lines += [f"{indent}<transmission name={_xml_attr(motor.joint + '_transmission')}>",
                      f"{indent * 2}<plugin>transmission_interface/SimpleTransmission</plugin>",
                      f'{indent * 2}<actuator name={_xml_attr(motor.name)} role="actuator1"/>',
                      f'{indent * 2}<joint name={_xml_attr(motor.joint)} role="joint1">',
                      f"{indent * 3}<mechanical_reduction>{_num(motor.reduction)}</mechanical_reduction>",
                      f"{indent * 3}<offset>{_num(motor.offset)}</offset>",
                      f"{indent * 2}</joint>",
                      f"{indent}</transmission>"]
    lines.append("</ros2_control>")
    return "\n".join(lines) + "\n"


def urdf_with_ros2_control(mechanism, motors: MotorGroups, *, urdf: str | None = None, **kw) -> str:
    """The model's URDF (``urdf``, or :func:`~mechanism_model_core.io.urdf.to_urdf` of the mechanism) with
    the ``<ros2_control>`` block before ``</robot>``: a ``robot_description`` for ``ros2_control_node``.
    Every joint the block names must be a joint of that URDF."""
    if urdf is None:
        urdf = to_urdf(mechanism)
    root = parse_bytes(urdf, "<urdf>")
    if root.tag != "robot":
        raise MechanismModelError("the URDF text has no <robot> root")
    if root.find("ros2_control") is not None:
        raise MechanismModelError("the URDF already has a <ros2_control> block")
    urdf_joints = {j.get("name") for j in root.findall("joint")}
    block = ros2_control_element(mechanism, motors, name=kw.pop("name", None) or root.get("name"), **kw)
    named = parse_bytes(block, "<ros2_control>").findall("joint")
    missing = [j.get("name") for j in named if j.get("name") not in urdf_joints]
    if missing:
        raise MechanismModelError(f"the URDF has no joint(s) {missing} that the motor groups command")
    end = urdf.rstrip().rfind("</robot>")
    body = "".join("  " + ln + "\n" if ln else "\n" for ln in block.splitlines())
    return urdf[:end].rstrip() + "\n" + body + "</robot>\n"


#: strings written unquoted: identifiers and plugin names that no YAML parser reads as anything else
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_/]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}


def _yaml(doc) -> str:
    """Block-style YAML of ``doc`` by PyYAML's emitter, every string but plain identifiers double-quoted
    (escaped where needed), so that no joint name reads back as something else (``on``, ``null``, ``1.5``,
    ``1e3``, ``{a}``, ``key: value # c``, a tab, a newline or a leading space)."""
    try:
        import yaml
    except ImportError:
        raise MechanismModelError(f"writing the controller YAML needs PyYAML: {install_hint('yaml')}") from None

    class Quoted(yaml.SafeDumper):
        pass

    def string(dumper, text):
        plain = _PLAIN.fullmatch(text) is not None and text.lower() not in _YAML_WORDS
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=None if plain else '"')

    Quoted.add_representer(str, string)
    return yaml.dump(doc, Dumper=Quoted, sort_keys=False, default_flow_style=False, allow_unicode=True,
                     width=1 << 20)


def timed(group, command_timeout: float | None) -> bool:
    """Whether ``group`` gets :data:`TIMED_FORWARD`: a forward-command group of velocities or efforts, with a
    ``command_timeout``."""
    return command_timeout is not None and group.controller is ControllerKind.FORWARD_COMMAND and \
        group.interface is not CommandInterface.POSITION


def controller_plugin(group, command_timeout: float | None = COMMAND_TIMEOUT) -> str:
    """The pluginlib type of ``group``'s controller in the exported configuration."""
    return TIMED_FORWARD if timed(group, command_timeout) else group.controller.plugin


def controllers_yaml(motors: MotorGroups, *, goal_tolerance: float = 0.05, goal_time: float = 0.0,
                     stopped_velocity_tolerance: float = 0.01, state_publish_rate: float = 50.0,
                     gain: float = 5.0, command_timeout: float | None = COMMAND_TIMEOUT) -> str:
    """The controller_manager parameter file for ``motors`` (see the module documentation).

    ``goal_tolerance`` [rad or m]: joint_trajectory_controller's per-joint goal position tolerance;
    ``goal_time`` [s]: how late the goal may be reached (0: no limit); ``gain``: the proportional gain of a
    trajectory controller commanding velocity or effort; ``command_timeout`` [s]: how long a velocity or
    effort group's last command applies before its controller writes zero (None: plain
    forward_command_controller, which applies it until the next one)."""
    if not len(motors):
        raise MechanismModelError("no motor groups to write controllers for")
    if "joint_state_broadcaster" in motors:
        raise MechanismModelError("a motor group may not be named joint_state_broadcaster")
    if command_timeout is not None and not (math.isfinite(command_timeout) and command_timeout > 0):
        raise MechanismModelError(f"command_timeout must be a positive number of seconds, got {command_timeout}")
    cm: dict = {"update_rate": motors.update_rate,
                "joint_state_broadcaster": {"type": "joint_state_broadcaster/JointStateBroadcaster"}}
    for g in motors.groups:
        cm[g.name] = {"type": controller_plugin(g, command_timeout)}
    doc: dict = {"controller_manager": {"ros__parameters": cm}}
    for g in motors.groups:
        joints = list(g.joint_names)
        if g.controller is ControllerKind.FORWARD_COMMAND:
            params = {"joints": joints, "interface_name": g.interface.value}
            if timed(g, command_timeout):
                params["command_timeout"] = float(command_timeout)
        else:
            params = {"joints": joints, "command_interfaces": [g.interface.value],
                      "state_interfaces": ["position", "velocity"],
                      "state_publish_rate": float(state_publish_rate),
                      "action_monitor_rate": 20.0,
                      "allow_partial_joints_goal": False,
                      "constraints": {"stopped_velocity_tolerance": float(stopped_velocity_tolerance),
                                      "goal_time": float(goal_time),
                                      **{j: {"trajectory": 0.0, "goal": float(goal_tolerance)} for j in joints}}}
            if g.interface is not CommandInterface.POSITION:
                params["gains"] = {j: {"p": float(gain), "i": 0.0, "d": 0.0, "i_clamp": 0.0, "ff_velocity_scale":
                                       1.0 if g.interface is CommandInterface.VELOCITY else 0.0} for j in joints}
        doc[g.name] = {"ros__parameters": params}
    header = ["# controller_manager parameters written by `mechanism-model ros2-control` from the model's motor",
              "# groups (units: SI, rad). Commands: forward_command controllers take std_msgs/Float64MultiArray",
              "# on /<controller>/commands in the order of `joints`; joint_trajectory controllers take",
              "# /<controller>/joint_trajectory or the /<controller>/follow_joint_trajectory action.",
              "# mechanism_model_controllers/TimedForwardCommandController (package mechanism_model_controllers)",
              "# is a forward command controller that writes 0 when no command came for command_timeout s."]
    return "\n".join(header) + "\n" + _yaml(doc)
