"""Reading motor-group definitions (:mod:`mechanism_model_core.locomotion.motor_group`) from a model's
CLARAty XML files or from a YAML file, checked against the mechanism at load time.

**CLARAty XML** (the DTD's ``Motor_Group`` element, after the bodies of a ``Mechanism_Model``)::

    <Motor_Group name="wheel_controller" controller="forward_command" interface="velocity" amax="4">
      <Motor joint="left_front_drive" vmax="3"/>
      <Motor joint="right_front_drive" vmax="3" direction="-1" gear="100"/>
    </Motor_Group>

``Motor`` attributes: ``joint`` (required), ``name`` (actuator; default ``<joint>_motor``), ``direction``
(``1``/``-1``), ``gear`` (> 0), ``offset`` [motor rad], and limits ``min``/``max`` [rad or m], ``vmax``,
``amax``, ``effort``, each an expression (``M_PI/2``, the file's ``<Constant>``s). A limit not given is the
joint's own from the model (``amax``: the group's ``amax``, else unbounded); a limit wider than the
model's is an error. Groups of files brought in by ``<Attach>`` are included with the attachment's
``prefix`` on their group names and joint names, unless a group of the including file commands one of
their joints (the assembly's definition replaces the appendage's).

**YAML** (the same vocabulary)::

    hardware: {plugin: mock_components/GenericSystem, parameters: {}}   # optional
    update_rate: 100                                                      # optional, Hz
    motor_groups:
      arm_controller:
        controller: joint_trajectory
        interface: position
        amax: 2.0
        motors:
          - {joint: arm_yaw, vmax: 0.4}
          - {joint: arm_shoulder, direction: -1, gear: 160}

Errors are :class:`~mechanism_model_core.errors.ModelFileError` naming the file and line: unknown joints
(with suggestions), fixed/multi-coordinate/passive/coupled joints, a joint in two groups, limits wider than
the model's, a velocity limit missing for a motor (every motor needs a finite one), a position-commanded
joint without finite position limits (other than a continuous joint), bad directions or gears.
"""

from __future__ import annotations

import math
import os
import re
import warnings

from ..errors import ExpressionError, MechanismModelError, ModelFileError, UnknownJoint
from ..joints import JointType
from ..locomotion.motor_group import (CommandInterface, ControllerKind, Motor, MotorGroup, MotorGroups,
                                      motor_limits_for)
from ..expressions import CONSTANTS, evaluate
from .yaml_lines import line_of as _line, read_yaml_with_lines
from .limits import ReadLimits
from .safe_xml import root_tag, parse_file, validate_with_dtd

_CONTROLLER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_MOTOR_KEYS = {"joint", "name", "direction", "gear", "offset", "min", "max", "vmax", "amax", "effort"}
_GROUP_KEYS = {"controller", "interface", "amax", "motors"}
_TOP_KEYS = {"hardware", "update_rate", "motor_groups"}
#: The CLARAty XML DTD (claraty_xml.DTD_PATH; named here as claraty_xml imports this module to write groups).
_DTD_PATH = os.path.join(os.path.dirname(__file__), "mechanism_model.dtd")


def load_motor_groups(mechanism, path=None) -> MotorGroups:
    """The motor groups of ``mechanism``: from ``path`` (a ``.yaml``/``.yml`` file or a CLARAty XML file),
    or, when ``path`` is None, from the CLARAty XML file the mechanism was loaded from (its
    ``Motor_Group`` elements and those of the files it attaches; a URDF's ``<ros2_control>`` and
    ``<transmission>`` blocks, :mod:`.urdf_drives`). A model without any gives an empty
    :class:`MotorGroups`."""
    if path is None and (getattr(mechanism, "metadata", None) or {}).get("format") == "urdf":
        return _urdf_groups(mechanism)      # also a URDF from a robot_description parameter or topic
    if path is None:
        path = getattr(mechanism, "source", None)
        if not path:
            raise ModelFileError(f"mechanism {mechanism.name!r} was not loaded from a file; give the motor "
                                 f"group file")
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".yaml", ".yml"):
        return motor_groups_from_yaml(path, mechanism)
    if ext in (".urdf", ".xacro"):
        return _urdf_groups(mechanism)
    if ext in (".xml", ".mm"):
        tag = root_tag(path)
        if tag == "Mechanism_Model":
            return motor_groups_from_xml(path, mechanism)
        if tag == "robot":
            return _urdf_groups(mechanism)
    return MotorGroups(source=path)       # a KinDSL or D-H model carries no motor groups


def _urdf_groups(mechanism) -> MotorGroups:
    """The motor groups of a URDF's <ros2_control> / <transmission> blocks (:mod:`.urdf_drives`)."""
    return motor_groups_from_urdf(mechanism)


# ====================================================================================== common checks
class _Builder:
    """Turns raw group descriptions into MotorGroups, checking them against the mechanism."""

    def __init__(self, mechanism, file: str):
        self.m = mechanism
        self.file = file

    def fail(self, message, line=None):
        return ModelFileError(message, self.file, line)

    def motor(self, group: str, spec: dict, group_amax, line) -> Motor:
        jname = spec.get("joint")
        if not jname:
            raise self.fail(f"motor group {group!r}: a motor needs a joint", line)
        try:
            joint = self.m.joint(jname)
        except UnknownJoint as exc:
            raise self.fail(f"motor group {group!r}: {exc}", line) from None
        if joint.type is JointType.FIXED or joint.dof != 1:
            raise self.fail(f"motor group {group!r}: joint {jname!r} is {joint.type.value}; a motor drives a "
                            f"revolute, continuous or prismatic joint", line)
        if not joint.actuated:
            raise self.fail(f"motor group {group!r}: joint {jname!r} is passive (actuated=\"false\") in the "
                            f"model", line)
        if joint.coupling is not None:
            raise self.fail(f"motor group {group!r}: joint {jname!r} is coupled ({joint.coupling}); command "
                            f"the joint it follows", line)
        amax = spec.get("amax", group_amax)
        try:
            limits = motor_limits_for(joint, lower=spec.get("min"), upper=spec.get("max"),
                                      velocity=spec.get("vmax"), acceleration=amax,
                                      effort=spec.get("effort"))
            direction = spec.get("direction", 1)
            if direction not in (1, -1, 1.0, -1.0):
                raise ValueError(f"direction must be 1 or -1, got {direction!r}")
            motor = Motor(jname, limits, int(direction), spec.get("gear", 1.0), spec.get("offset", 0.0),
                          spec.get("name") or "")
        except (ValueError, MechanismModelError) as exc:
            raise self.fail(f"motor group {group!r}, joint {jname!r}: {exc}", line) from None
        if not math.isfinite(limits.velocity):
            raise self.fail(f"motor group {group!r}, joint {jname!r}: no velocity limit (the model has none): "
                            f"give vmax", line)
        return motor

    def group(self, name, controller, interface, motors, line) -> MotorGroup:
        if not name or not _CONTROLLER_NAME.match(name):
            raise self.fail(f"motor group name {name!r} is not a valid controller name (letters, digits and "
                            f"_, starting with a letter)", line)
        try:
            kind = ControllerKind.parse(controller)
            iface = CommandInterface.parse(interface)
            g = MotorGroup(name, kind, iface, motors)
        except ValueError as exc:
            raise self.fail(str(exc), line) from None
        if iface is CommandInterface.POSITION:
            for m in g.motors:
                j = self.m.joint(m.joint)
                if j.type is not JointType.CONTINUOUS and not (math.isfinite(m.limits.lower)
                                                               and math.isfinite(m.limits.upper)):
                    raise self.fail(f"motor group {name!r}: position-commanded joint {m.joint!r} has no finite "
                                    f"position limits: give min and max", line)
        if iface is CommandInterface.EFFORT:
            for m in g.motors:
                if not math.isfinite(m.limits.effort):
                    raise self.fail(f"motor group {name!r}: effort-commanded joint {m.joint!r} has no effort "
                                    f"limit: give effort", line)
        return g

    def collect(self, groups_with_lines, **kw) -> MotorGroups:
        seen: dict[str, str] = {}
        names: set[str] = set()
        for g, line in groups_with_lines:
            if g.name in names:
                raise self.fail(f"two motor groups named {g.name!r}", line)
            names.add(g.name)
            for j in g.joint_names:
                if j in seen:
                    raise self.fail(f"joint {j!r} is in motor groups {seen[j]!r} and {g.name!r}; a joint has "
                                    f"one motor", line)
                seen[j] = g.name
        try:
            return MotorGroups([g for g, _ in groups_with_lines], source=self.file, **kw)
        except ValueError as exc:
            raise self.fail(str(exc)) from None


# ====================================================================================== XML
def motor_groups_from_xml(path, mechanism) -> MotorGroups:
    """The ``Motor_Group`` elements of CLARAty XML file ``path`` (and of the files it attaches)."""
    path = os.fspath(path)
    b = _Builder(mechanism, path)
    groups = _xml_groups(path, b, prefix="", depth=0)
    return b.collect(groups)


def _xml_groups(path, b: _Builder, prefix: str, depth: int):
    root = parse_file(path)
    if root.tag != "Mechanism_Model":
        raise ModelFileError(f"root element is <{root.tag}>, expected <Mechanism_Model>", path, root.sourceline)
    validate_with_dtd(root, _DTD_PATH, path)
    fb = _Builder(b.m, path)
    constants = dict(CONSTANTS)

    def num(el, attr):
        text = el.get(attr)
        if text is None:
            return None
        try:
            return evaluate(text, constants)
        except ExpressionError as exc:
            raise ModelFileError(f"<{el.tag} {attr}=...>: {exc}", path, el.sourceline) from None

    own, attached = [], []
    for el in root:
        if not isinstance(el.tag, str):
            continue
        if el.tag == "Constant":
            value = num(el, "value")
            constants[el.get("name")] = value
        elif el.tag == "Attach" and depth < ReadLimits().max_include_depth:   # claraty_xml's cap
            rel = el.get("file")
            sub = rel if os.path.isabs(rel) else os.path.join(os.path.dirname(path), rel)
            if sub.lower().endswith((".xml", ".mm")) and os.path.exists(sub):
                attached.extend(_xml_groups(sub, b, prefix + el.get("prefix", ""), depth + 1))
        elif el.tag == "Motor_Group":
            gname = prefix + el.get("name")
            group_amax = num(el, "amax")
            motors = []
            for mel in el:
                if not isinstance(mel.tag, str) or mel.tag != "Motor":
                    continue
                spec = {"joint": prefix + mel.get("joint"), "name": mel.get("name")}
                if spec["name"]:
                    spec["name"] = prefix + spec["name"]
                for attr in ("gear", "offset", "min", "max", "vmax", "amax", "effort"):
                    v = num(mel, attr)
                    if v is not None:
                        spec[attr] = v
                spec["direction"] = int(mel.get("direction", "1"))
                motors.append(fb.motor(gname, spec, group_amax, mel.sourceline))
            own.append((fb.group(gname, el.get("controller"), el.get("interface", "position"), motors,
                                 el.sourceline), el.sourceline))
    claimed = {j for g, _ in own for j in g.joint_names}
    kept = [(g, line) for g, line in attached if not claimed.intersection(g.joint_names)]
    return kept + own


# ====================================================================================== YAML
def motor_groups_from_yaml(source, mechanism) -> MotorGroups:
    """Motor groups from a YAML file (path) or an already-parsed mapping (lines then unknown)."""
    if isinstance(source, dict):
        data, file = source, "<mapping>"
    else:
        file = os.fspath(source)
        data = read_yaml_with_lines(file, "YAML motor groups")
    b = _Builder(mechanism, file)
    if not isinstance(data, dict):
        raise b.fail("a motor group file is a mapping with a 'motor_groups' key", _line(data))
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise b.fail(f"unknown key(s) {sorted(unknown)} (known: {sorted(_TOP_KEYS)})", _line(data))
    groups_in = data.get("motor_groups")
    if not isinstance(groups_in, dict) or not groups_in:
        raise b.fail("'motor_groups' must map controller names to groups", _line(data))
    groups = []
    for gname, g in groups_in.items():
        line = _line(g) or _line(groups_in)
        if not isinstance(g, dict):
            raise b.fail(f"motor group {gname!r} must be a mapping", line)
        bad = set(g) - _GROUP_KEYS
        if bad:
            raise b.fail(f"motor group {gname!r}: unknown key(s) {sorted(bad)} (known: {sorted(_GROUP_KEYS)})",
                         line)
        motors_in = g.get("motors")
        if not isinstance(motors_in, list) or not motors_in:
            raise b.fail(f"motor group {gname!r}: 'motors' must be a non-empty list", line)
        group_amax = _yaml_num(b, g, "amax", line)
        motors = []
        for spec in motors_in:
            mline = _line(spec) or line
            if not isinstance(spec, dict):
                raise b.fail(f"motor group {gname!r}: each motor is a mapping with a 'joint'", mline)
            bad = set(spec) - _MOTOR_KEYS
            if bad:
                raise b.fail(f"motor group {gname!r}: unknown motor key(s) {sorted(bad)} (known: "
                             f"{sorted(_MOTOR_KEYS)})", mline)
            clean = {k: _yaml_num(b, spec, k, mline) for k in ("gear", "offset", "min", "max", "vmax", "amax",
                                                               "effort") if k in spec}
            clean["joint"] = str(spec.get("joint") or "")
            clean["name"] = str(spec["name"]) if spec.get("name") else ""
            clean["direction"] = spec.get("direction", 1)
            motors.append(b.motor(str(gname), clean, group_amax, mline))
        groups.append((b.group(str(gname), g.get("controller"), g.get("interface", "position"), motors, line),
                       line))
    hw = data.get("hardware") or {}
    if not isinstance(hw, dict):
        raise b.fail("'hardware' must be a mapping with 'plugin' and optional 'parameters'", _line(data))
    kw = {}
    if "plugin" in hw:
        kw["hardware"] = str(hw["plugin"])
    if "parameters" in hw:
        kw["hardware_parameters"] = {str(k): str(v) for k, v in (hw["parameters"] or {}).items()}
    if "update_rate" in data:
        rate = data["update_rate"]
        if isinstance(rate, bool) or not isinstance(rate, int) or rate <= 0:
            raise b.fail(f"update_rate must be a positive integer (Hz), got {rate!r}", _line(data))
        kw["update_rate"] = rate
    return b.collect(groups, **kw)


def _yaml_num(b, d, key, line):
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool):
        raise b.fail(f"{key} must be a number, got {v!r}", line)
    if isinstance(v, (int, float)):
        if not math.isfinite(v):
            raise b.fail(f"{key} must be finite, got {v!r}", line)
        return float(v)
    try:
        return evaluate(str(v))
    except ExpressionError as exc:
        raise b.fail(f"{key}: {exc}", line) from None


# ====================================================================================== URDF
#: ROS 1 hardware interfaces and ros2_control command interfaces -> the command interface of a group
_URDF_IFACE = {"positionjointinterface": "position", "velocityjointinterface": "velocity",
               "effortjointinterface": "effort", "position": "position", "velocity": "velocity",
               "effort": "effort"}


def _urdf_iface(text):
    if not text:
        return None
    key = text.strip().rsplit("/", 1)[-1].lower()
    return _URDF_IFACE.get(key)


def motor_groups_from_urdf(mechanism) -> MotorGroups:
    """:class:`MotorGroups` from the ``<ros2_control>`` / ``<transmission>`` blocks a URDF reader put in the
    mechanism's ``metadata`` (:mod:`.urdf_drives` says how); empty when it has none."""
    meta = getattr(mechanism, "metadata", None) or {}
    source = getattr(mechanism, "source", None) or "<urdf>"
    reduction = {}
    for t in meta.get("transmissions", ()):
        if len(t["joints"]) == 1:       # a SimpleTransmission; differentials are not one motor per joint
            j = t["joints"][0]
            reduction[j["name"]] = (j["reduction"], j["offset"], (t["actuators"][0]["name"]
                                                                  if t["actuators"] else ""))
    wanted = {}      # interface -> [(joint, params)]
    for c in meta.get("ros2_control", ()):
        for j in c["joints"]:
            for iface, params in j["command_interfaces"].items():
                kind = _urdf_iface(iface)
                if kind:
                    wanted.setdefault(kind, []).append((j["name"], params))
                    break
    if not wanted:
        for t in meta.get("transmissions", ()):
            for j in t["joints"]:
                kind = next((_urdf_iface(i) for i in j["interfaces"] if _urdf_iface(i)), None)
                if kind:
                    wanted.setdefault(kind, []).append((j["name"], {}))
    b = _Builder(mechanism, source)
    groups, seen = [], set()
    for kind in ("position", "velocity", "effort"):
        motors = []
        for joint, params in wanted.get(kind, ()):
            if joint in seen:
                continue
            spec = {"joint": joint}
            lo, hi = _urdf_float(params.get("min")), _urdf_float(params.get("max"))
            try:
                j = mechanism.joint(joint)
            except UnknownJoint:     # the builder below says so
                j = None
            # the command range within the joint's own limits (ros2_control clamps to both)
            if kind == "position" and j is not None and j.dof == 1:
                if lo is not None:
                    spec["min"] = max(lo, j.lower[0])
                if hi is not None:
                    spec["max"] = min(hi, j.upper[0])
            elif (lo is not None or hi is not None) and j is not None:
                mag = max(abs(v) for v in (lo, hi) if v is not None)
                key = "vmax" if kind == "velocity" else "effort"
                spec[key] = min(mag, j.velocity if kind == "velocity" else j.effort)
            if joint in reduction:
                r, off, actuator = reduction[joint]
                spec.update(direction=1 if r > 0 else -1, gear=abs(r), offset=off, name=actuator)
            try:
                motors.append(b.motor(f"{kind}_controller", spec, None, None))
                seen.add(joint)
            except ModelFileError as exc:
                warnings.warn(f"joint {joint!r} is not made a motor: {exc}", stacklevel=2)
        if motors:
            try:
                groups.append((b.group(f"{kind}_controller", "joint_trajectory" if kind == "position"
                                       else "forward_command", kind, motors, None), None))
            except ModelFileError as exc:
                warnings.warn(f"{source}: no {kind} motor group: {exc}", stacklevel=2)
    controls = meta.get("ros2_control", ())
    kw = {}
    if controls and controls[0]["plugin"]:
        kw["hardware"] = controls[0]["plugin"]
        kw["hardware_parameters"] = dict(controls[0]["parameters"])
    if not groups:
        return MotorGroups(source=source)
    return b.collect(groups, **kw)


def _urdf_float(text):
    if text is None:
        return None
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


# ====================================================================================== writing XML
def model_motor_groups(mechanism) -> MotorGroups:
    """The motor groups to write with ``mechanism``: those of the CLARAty XML file it was loaded from (and
    of the files that file attaches), or none. A source whose groups no longer fit the mechanism (a joint
    edited away) gives none, with a warning naming the problem."""
    source = getattr(mechanism, "source", None)
    if not source or not os.path.exists(source):
        return MotorGroups()
    try:
        return load_motor_groups(mechanism, source)
    except ModelFileError as exc:
        import warnings
        warnings.warn(f"{mechanism.name!r}: the motor groups of {source} do not fit this mechanism and are "
                      f"not written: {exc}", stacklevel=3)
        return MotorGroups()


def write_motor_groups(etree, root, mechanism, groups: MotorGroups) -> None:
    """Append one ``<Motor_Group>`` per group of ``groups`` to ``root`` (a ``Mechanism_Model`` element):
    every motor with its name, direction, gear and offset when not the default, and each finite limit
    written out (a limit the motor leaves unbounded is unbounded in the joint too, so it is omitted and
    reads back as the joint's). Reading the file back gives the same groups. A motor whose joint is not
    a one-coordinate joint of ``mechanism`` raises ValueError (the file would not load)."""
    def _num(v):        # finite values only (claraty_xml's writer form: repr, exact on reading back)
        return "0" if v == 0.0 else repr(float(v))

    for g in groups.groups:
        gel = etree.SubElement(root, "Motor_Group", name=g.name, controller=g.controller.value,
                               interface=g.interface.value)
        for m in g.motors:
            try:
                joint = mechanism.joint(m.joint)
            except UnknownJoint as exc:
                raise ValueError(f"motor group {g.name!r}: {exc}") from None
            if joint.dof != 1:
                raise ValueError(f"motor group {g.name!r}: joint {m.joint!r} is {joint.type.value}")
            attrs = {"joint": m.joint}
            if m.name != f"{m.joint}_motor":
                attrs["name"] = m.name
            if m.direction != 1:
                attrs["direction"] = "-1"
            if m.gear != 1.0:
                attrs["gear"] = _num(m.gear)
            if m.offset != 0.0:
                attrs["offset"] = _num(m.offset)
            lim = m.limits
            for attr, value in (("min", lim.lower), ("max", lim.upper), ("vmax", lim.velocity),
                                ("amax", lim.acceleration), ("effort", lim.effort)):
                if math.isfinite(value):
                    attrs[attr] = _num(value)
            etree.SubElement(gel, "Motor", attrs)
