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

:func:`~mechanism_model_core.io.motor_groups.motor_groups_from_urdf` makes
:class:`~mechanism_model_core.locomotion.motor_group.MotorGroups` of them: one group per command interface
of the ``<ros2_control>`` joints (``position_controller`` as a joint trajectory controller, ``velocity_controller`` and ``effort_controller`` as forward-command controllers; or
the ROS 1 transmissions' hardware interface where there is no ``<ros2_control>``), each motor with the
command interface's ``min``/``max`` within the joint's own limits as its limits (ros2_control clamps to
both) and its transmission's reduction as direction and gear.
A joint that cannot be a motor (fixed, coupled, no velocity limit anywhere) is left out with a warning.
"""

from __future__ import annotations

import math
import warnings

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
