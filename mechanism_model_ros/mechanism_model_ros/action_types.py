"""ROS 2 action interfaces as message and service types, for the Cyclone transport's generated classes.

An action ``pkg/action/Name`` is, on the wire (rcl_action over any RMW), three services and two topics under
``<action name>/_action/``:

=================  =========================================  ==================================================
``send_goal``      service ``pkg/action/Name_SendGoal``       request ``goal_id`` (UUID), ``goal``; response
                                                              ``accepted``, ``stamp``
``get_result``     service ``pkg/action/Name_GetResult``      request ``goal_id``; response ``status``, ``result``
``cancel_goal``    service ``action_msgs/srv/CancelGoal``     request ``goal_info``; response ``return_code``,
                                                              ``goals_canceling``
``feedback``       topic ``pkg/action/Name_FeedbackMessage``  ``goal_id``, ``feedback`` (reliable, volatile)
``status``         topic ``action_msgs/msg/GoalStatusArray``  reliable, transient local, depth 1
=================  =========================================  ==================================================

with DDS type names ``pkg::action::dds_::Name_SendGoal_Request_`` and so on. :func:`action_types` builds these
definitions for a rosbags type store from the ``.action`` file; :func:`interface_text` finds each definition
file (installed ROS 2 first, else the minimal copies in ``interfaces_external/``, see its README) and
:func:`interface_source` says which one was used.
"""

from __future__ import annotations

import functools
import os
import re

EXTERNAL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "interfaces_external")
#: actions the Cyclone transport knows
ACTIONS = ("control_msgs/action/FollowJointTrajectory", "mechanism_model_msgs/action/PointAt")
#: other definitions rosbags lacks: what those actions need, std_srvs/Trigger (stop and cancel services) and
#: the Open Source Rover's commands (the locomotor's ``osr`` adapter)
EXTRA = ("control_msgs/msg/JointTolerance", "control_msgs/msg/JointComponentTolerance",
         "action_msgs/srv/CancelGoal", "std_srvs/srv/Trigger",
         "osr_interfaces/msg/CommandCorner", "osr_interfaces/msg/CommandDrive")
_SEPARATOR = re.compile(r"^---\s*$", re.MULTILINE)
_EXT = {"msg": ".msg", "srv": ".srv", "action": ".action"}


def _prefixes() -> list[str]:
    out = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for p in ("/opt/ros/humble", "/opt/ros/jazzy"):
        if p not in out:
            out.append(p)
    return out


@functools.lru_cache(maxsize=None)
def interface_source(name: str) -> str:
    """The file the definition of ``name`` (``control_msgs/action/FollowJointTrajectory``) is read from."""
    pkg, kind, base = name.split("/")
    rel = os.path.join(pkg, kind, base + _EXT[kind])
    for prefix in _prefixes():
        path = os.path.join(prefix, "share", rel)
        if os.path.isfile(path):
            return path
    path = os.path.join(EXTERNAL_DIR, rel)
    if os.path.isfile(path):
        return path
    if pkg == "mechanism_model_msgs":             # this suite's own, from the package beside this module
        path = os.path.join(os.path.dirname(EXTERNAL_DIR), "interfaces", kind, base + _EXT[kind])
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"no definition of {name} (looked in the ROS 2 installations and {EXTERNAL_DIR})")


def interface_text(name: str) -> str:
    with open(interface_source(name), encoding="utf-8") as fh:
        return fh.read()


def _parse(text: str, pkg: str, full_name: str) -> dict:
    """rosbags definitions of one message part, filed under ``full_name``; bare type names resolve to
    ``pkg/msg/...`` as rosidl does."""
    from rosbags.typesys import get_types_from_msg

    base = full_name.split("/")[-1]
    if not any(ln.split("#")[0].strip() and "=" not in ln for ln in text.splitlines()):
        # rosidl gives a structure without fields one placeholder member, and puts it on the wire
        text = "uint8 structure_needs_at_least_one_member\n" + text
    parsed = get_types_from_msg(text, f"{pkg}/msg/{base}")
    out = {}
    for key, value in parsed.items():
        out[full_name if key == f"{pkg}/msg/{base}" else key] = value
    return out


def action_types(action: str) -> dict:
    """rosbags type definitions of every wire type of ``action`` (``pkg/action/Name``)."""
    pkg, _, name = action.split("/")
    parts = _SEPARATOR.split(interface_text(action))
    if len(parts) != 3:
        raise ValueError(f"{interface_source(action)}: an .action file has three parts separated by '---'")
    types: dict = {}
    prefix = f"{pkg}/action/{name}"
    for part, suffix in zip(parts, ("_Goal", "_Result", "_Feedback")):
        types.update(_parse(part, pkg, prefix + suffix))
    wrappers = {
        "_SendGoal_Request": f"unique_identifier_msgs/msg/UUID goal_id\n{prefix}_Goal goal\n",
        "_SendGoal_Response": "bool accepted\nbuiltin_interfaces/msg/Time stamp\n",
        "_GetResult_Request": "unique_identifier_msgs/msg/UUID goal_id\n",
        "_GetResult_Response": f"int8 status\n{prefix}_Result result\n",
        "_FeedbackMessage": f"unique_identifier_msgs/msg/UUID goal_id\n{prefix}_Feedback feedback\n",
    }
    for suffix, text in wrappers.items():
        types.update(_parse(text, pkg, prefix + suffix))
    return types


def extra_types(name: str) -> dict:
    """rosbags definitions of a message or service of :data:`EXTRA`."""
    pkg, kind, base = name.split("/")
    text = interface_text(name)
    if kind == "msg":
        return _parse(text, pkg, name)
    req, rep = _SEPARATOR.split(text)
    return {**_parse(req, pkg, f"{name}_Request"), **_parse(rep, pkg, f"{name}_Response")}


def all_types() -> dict:
    """Every definition this module adds to the Cyclone transport's type store."""
    types: dict = {}
    for name in EXTRA:
        types.update(extra_types(name))
    for action in ACTIONS:
        types.update(action_types(action))
    return types
