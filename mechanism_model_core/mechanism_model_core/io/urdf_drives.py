"""A URDF's motor wiring: its ``<transmission>`` and ``<ros2_control>`` blocks, read instead of dropped, written
back by the URDF export, and turned into motor groups.

urdfdom does not read these blocks (ros2_control's own parsers do), so nothing in them makes a URDF fail to
load: what cannot be used is ignored with a :class:`~mechanism_model_core.io.urdf.URDFWarning` naming file
and line (a joint the robot does not have, a reduction that is not a finite non-zero number).

Read (:func:`read_drive_blocks`), into the mechanism's ``metadata``:

* ``metadata["transmissions"]``: one dict per transmission, ROS 1 style (``<transmission><type>``,
  ``<joint><hardwareInterface><mechanicalReduction>``, ``<actuator>``) or ros2_control style (inside
  ``<ros2_control>``: ``<plugin>``, ``<joint role><mechanical_reduction><offset>``): ``name``, ``type``,
  ``joints`` [{``name``, ``reduction``, ``offset``, ``interfaces``}], ``actuators`` [{``name``,
  ``reduction``}];
* ``metadata["ros2_control"]``: one dict per ``<ros2_control>`` block: ``name``, ``type``, ``plugin``,
  ``parameters``, ``joints`` [{``name``, ``command_interfaces`` {interface: {param: value}},
  ``state_interfaces`` [names], ``parameters``}];
* ``metadata["urdf_blocks"]``: the blocks' XML text as written, which :func:`write_drive_blocks` puts back
  into the exported URDF (every block whose joints the export still has), so loading the export gives the
  same two lists: the wiring survives a round trip.

:func:`motor_groups_from_urdf` makes :class:`~mechanism_model_core.locomotion.motor_group.MotorGroups` of
them: one group per command interface of the ``<ros2_control>`` joints (``position_controller`` as a joint
trajectory controller, ``velocity_controller`` and ``effort_controller`` as forward-command controllers; or
the ROS 1 transmissions' hardware interface where there is no ``<ros2_control>``), each motor with the
command interface's ``min``/``max`` within the joint's own limits as its limits (ros2_control clamps to
both) and its transmission's reduction as direction and gear.
A joint that cannot be a motor (fixed, coupled, no velocity limit anywhere) is left out with a warning.
"""

from __future__ import annotations

import math
import warnings

_IFACE = {"positionjointinterface": "position", "velocityjointinterface": "velocity",
          "effortjointinterface": "effort", "position": "position", "velocity": "velocity", "effort": "effort"}


def _text(el, *tags):
    for t in tags:
        c = el.find(t)
        if c is not None and c.text is not None:
            return c.text.strip()
    return None


def _number(text, where, warn, what):
    if text is None:
        return None
    try:
        v = float(text)
    except ValueError:
        warn(where, f"{what} {text!r} is not a number; ignored")
        return None
    if not math.isfinite(v):
        warn(where, f"{what} {text!r} is not finite; ignored")
        return None
    return v


def _iface(text):
    if not text:
        return None
    key = text.strip().rsplit("/", 1)[-1].lower()
    return _IFACE.get(key)


def _transmission(el, warn, joints):
    t = {"name": el.get("name") or "", "type": _text(el, "type", "plugin") or "", "line": el.sourceline,
         "joints": [], "actuators": []}
    for jel in el.findall("joint"):
        name = jel.get("name")
        if name not in joints:
            warn(jel.sourceline, f"transmission {t['name']!r}: joint {name!r} is not a joint of this robot; "
                                 f"ignored")
            continue
        red = _number(_text(jel, "mechanicalReduction", "mechanical_reduction"), jel.sourceline, warn,
                      f"transmission {t['name']!r}: reduction")
        if red == 0.0:
            warn(jel.sourceline, f"transmission {t['name']!r}: reduction 0 cannot drive a joint; read as 1")
            red = None
        off = _number(_text(jel, "offset"), jel.sourceline, warn, f"transmission {t['name']!r}: offset")
        ifaces = [c.text.strip() for c in jel.findall("hardwareInterface") if c.text]
        t["joints"].append({"name": name, "reduction": 1.0 if red is None else red,
                            "offset": 0.0 if off is None else off, "interfaces": ifaces})
    for ael in el.findall("actuator"):
        red = _number(_text(ael, "mechanicalReduction", "mechanical_reduction"), ael.sourceline, warn,
                      f"transmission {t['name']!r}: actuator reduction")
        t["actuators"].append({"name": ael.get("name") or "", "reduction": red})
    return t


def read_drive_blocks(root, joints, warn) -> dict:
    """The ``metadata`` entries of the module docstring from the ``<robot>`` element ``root``; ``joints``:
    the names of the robot's joints; ``warn(line, message)``."""
    from lxml import etree

    transmissions, controls, blocks = [], [], []
    for el in root:
        if el.tag == "transmission":
            transmissions.append(_transmission(el, warn, joints))
            blocks.append(etree.tostring(el, encoding="unicode", with_tail=False))
        elif el.tag == "ros2_control":
            hw = el.find("hardware")
            c = {"name": el.get("name") or "", "type": el.get("type") or "", "line": el.sourceline,
                 "plugin": (_text(hw, "plugin") if hw is not None else None) or "",
                 "parameters": {p.get("name"): (p.text or "").strip() for p in
                                (hw.findall("param") if hw is not None else ())}, "joints": []}
            for jel in el.findall("joint"):
                name = jel.get("name")
                if name not in joints:
                    warn(jel.sourceline, f"ros2_control {c['name']!r}: joint {name!r} is not a joint of this "
                                         f"robot; ignored")
                    continue
                c["joints"].append({
                    "name": name,
                    "command_interfaces": {ci.get("name"): {p.get("name"): (p.text or "").strip()
                                                             for p in ci.findall("param")}
                                           for ci in jel.findall("command_interface")},
                    "state_interfaces": [si.get("name") for si in jel.findall("state_interface")],
                    "parameters": {p.get("name"): (p.text or "").strip() for p in jel.findall("param")}})
            for tel in el.findall("transmission"):
                transmissions.append(_transmission(tel, warn, joints))
            controls.append(c)
            blocks.append(etree.tostring(el, encoding="unicode", with_tail=False))
    out = {}
    if transmissions:
        out["transmissions"] = transmissions
    if controls:
        out["ros2_control"] = controls
    if blocks:
        out["urdf_blocks"] = blocks
    return out


def write_drive_blocks(etree, robot, metadata, joint_names) -> None:
    """Append the ``urdf_blocks`` of ``metadata`` to the ``<robot>`` element ``robot``: every block whose
    joints are all in ``joint_names`` (others are left out with a warning: they would not load)."""
    for text in (metadata or {}).get("urdf_blocks", ()):
        el = etree.fromstring(text)
        named = {j.get("name") for j in el.iter("joint")}
        missing = sorted(n for n in named if n not in joint_names)
        if missing:
            warnings.warn(f"<{el.tag} name={el.get('name')!r}> not written: the URDF has no joint(s) {missing}",
                          stacklevel=3)
            continue
        robot.append(el)


def motor_groups_from_urdf(mechanism):
    """:class:`MotorGroups` from the mechanism's ``metadata`` (module docstring); empty when it has none."""
    from ..errors import ModelFileError
    from ..locomotion.motor_group import MotorGroups
    from .motor_groups import _Builder

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
                kind = _iface(iface)
                if kind:
                    wanted.setdefault(kind, []).append((j["name"], params))
                    break
    if not wanted:
        for t in meta.get("transmissions", ()):
            for j in t["joints"]:
                kind = next((_iface(i) for i in j["interfaces"] if _iface(i)), None)
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
            lo, hi = _float(params.get("min")), _float(params.get("max"))
            try:
                j = mechanism.joint(joint)
            except Exception:     # UnknownJoint: the builder below says so
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


def _float(text):
    if text is None:
        return None
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
