"""The ``<Mobility>`` element of CLARAty XML: the mobility description of a wheeled mechanism (CLARAty 12,
``Wheeled_Locomotor_Model``) kept in the model file, so that loading a rover gives its
:class:`~mechanism_model_core.locomotion.wheeled.WheeledLocomotorModel` with no other file::

    <Mobility body_frame="chassis" modes="ackermann crab turn_in_place auto" steering_tolerance="0.05">
      <Wheel name="left_front_wheel" drive_joint="left_front_drive" radius="0.1"
             steering_joint="left_front_steer" contact_frame="left_front_contact"/>
      ...
      <Suspension joint="left_rocker"/>
    </Mobility>

The attributes are the keys of the mobility YAML (``models/README.md``, "Mobility of the wheeled rovers");
numbers are expressions (``M_PI/2``, the file's ``<Constant>``s). Its names are checked against the
assembled mechanism when the file is loaded (unknown joints and frames, unknown modes, a radius not > 0); what
needs the locomotor's kinematics (a steering joint that does not carry its wheel, a mode the steering ranges
make impossible) is checked when a ``WheeledLocomotorModel`` is built from it, before anything drives. Every error is a
:class:`~mechanism_model_core.errors.ModelFileError` naming the file and the line of the ``<Wheel>``,
``<Suspension>`` or ``<Mobility>`` element at fault. The description is kept in the mechanism's
``metadata["mobility"]`` (the YAML mapping) and written back by :func:`~.claraty_xml.to_claraty_xml`.
Only the loaded file's own element counts: an attached file's ``<Mobility>`` is checked against that file
but the assembly's is the one kept.
"""

from __future__ import annotations

from ..locomotion.mobility import MODES
from ..builder import build_mechanism

__all__ = ["read_mobility", "write_mobility", "mobility_element"]

#: numeric attributes of ``<Mobility>`` (m, rad, rad/s, m/s: the YAML keys of the same names)
NUMBER_ATTRIBUTES = ("steering_tolerance", "max_crab_angle", "min_turn_radius", "max_turn_radius",
                     "straight_deadband", "steer_only_speed", "turn_centre_x")
#: the drive policy's word attributes and their values (:mod:`~mechanism_model_core.locomotion.drive_policy`)
WORD_ATTRIBUTES = {"radius_limit": ("clip", "refuse"), "interpretation": ("literal", "intuitive"),
                   "zero_speed": ("turn_in_place", "steer_only", "stop"), "in_place": ("none", "angular_y")}


def read_mobility(reader, m, el):
    """``m`` carrying the ``<Mobility>`` element ``el`` in its metadata (``mobility``: the YAML mapping;
    ``mobility_lines``: the lines of its elements), its names checked against ``m``. ``reader`` is the
    CLARAty reader (its ``num``/``error`` give expressions and file/line errors)."""
    d = {"body_frame": el.get("body_frame"), "wheels": [], "suspension_joints": [],
         "skid": el.get("skid", "false") == "true",
         "modes": el.get("modes", "").split(),
         "steer_before_drive": el.get("steer_before_drive", "true") == "true"}
    for attr in NUMBER_ATTRIBUTES:
        if el.get(attr) is not None:
            d[attr] = reader.num(el, attr)
    for attr, allowed in WORD_ATTRIBUTES.items():
        if el.get(attr) is not None:
            if el.get(attr) not in allowed:
                raise reader.error(el, f"<Mobility>: {attr} is one of {allowed}, got {el.get(attr)!r}")
            d[attr] = el.get(attr)
    bad_mode = [mode for mode in d["modes"] if mode not in MODES]
    if bad_mode:
        raise reader.error(el, f"<Mobility>: unknown mode {bad_mode[0]!r}; modes are {MODES}")
    if not (d["body_frame"] == m.ground or m.has_frame(d["body_frame"])):
        raise reader.error(el, f"<Mobility>: body_frame {d['body_frame']!r} is not a frame of {m.name!r}")
    lines = {"": el.sourceline, "wheels": {}, "suspension": {}}
    joints = set(m.joint_names)
    for child in el:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "Wheel":
            w = {"drive_joint": child.get("drive_joint"), "radius": reader.num(child, "radius")}
            w["name"] = child.get("name") or w["drive_joint"]
            for attr in ("steering_joint", "contact_frame"):
                if child.get(attr):
                    w[attr] = child.get(attr)
            if child.get("max_rate") is not None:
                w["max_rate"] = reader.num(child, "max_rate")
            if w["name"] in lines["wheels"]:
                raise reader.error(child, f"<Mobility>: two wheels named {w['name']!r}")
            for attr in ("drive_joint", "steering_joint"):
                if attr in w and w[attr] not in joints:
                    raise reader.error(child, f"<Mobility>: wheel {w['name']!r}: {attr} {w[attr]!r} is not a "
                                              f"joint of {m.name!r}")
            if "contact_frame" in w and not m.has_frame(w["contact_frame"]):
                raise reader.error(child, f"<Mobility>: wheel {w['name']!r}: contact_frame "
                                          f"{w['contact_frame']!r} is not a frame of {m.name!r}")
            if not w["radius"] > 0:
                raise reader.error(child, f"<Mobility>: wheel {w['name']!r}: radius must be a positive number "
                                          f"of metres, got {w['radius']!r}")
            lines["wheels"][w["name"]] = child.sourceline
            d["wheels"].append(w)
        elif child.tag == "Suspension":
            j = child.get("joint")
            if j not in joints:
                raise reader.error(child, f"<Mobility>: suspension joint {j!r} is not a joint of {m.name!r}")
            d["suspension_joints"].append(j)
            lines["suspension"][j] = child.sourceline
    meta = dict(m.metadata)
    meta["mobility"] = d
    meta["mobility_lines"] = lines
    return build_mechanism(m.name, list(m.bodies), m.ground, m.source, meta)


def _num(v: float) -> str:
    return repr(float(v))


def write_mobility(etree, root, m) -> None:
    """Append ``m.metadata["mobility"]`` as a ``<Mobility>`` element (skipped when the description names
    joints or frames the mechanism no longer has, e.g. after an edit removed them)."""
    d = m.metadata.get("mobility")
    if not d:
        return
    joints = set(m.joint_names)
    names = [w.get(k) for w in d["wheels"] for k in ("drive_joint", "steering_joint") if w.get(k)]
    names += list(d.get("suspension_joints", ()))
    frames = [d["body_frame"]] + [w["contact_frame"] for w in d["wheels"] if w.get("contact_frame")]
    if not all(n in joints for n in names) or not all(f == m.ground or m.has_frame(f) for f in frames):
        return
    mobility_element(etree, root, d)


def mobility_element(etree, parent, d: dict):
    """A ``<Mobility>`` element for the mobility mapping ``d`` (the YAML keys), appended to ``parent``."""
    attrs = {"body_frame": d["body_frame"]}
    if d.get("skid"):
        attrs["skid"] = "true"
    if d.get("modes"):
        attrs["modes"] = " ".join(d["modes"])
    if not d.get("steer_before_drive", True):
        attrs["steer_before_drive"] = "false"
    for k in NUMBER_ATTRIBUTES:
        if k in d and d[k] is not None and not (k == "max_turn_radius" and float(d[k]) == float("inf")):
            attrs[k] = _num(float(d[k]))
    for k in WORD_ATTRIBUTES:
        if d.get(k) is not None:
            attrs[k] = str(d[k])
    el = etree.SubElement(parent, "Mobility", attrs)
    for w in d["wheels"]:
        wa = {"name": w["name"], "drive_joint": w["drive_joint"], "radius": _num(float(w["radius"]))}
        for k in ("steering_joint", "contact_frame"):
            if w.get(k):
                wa[k] = w[k]
        if w.get("max_rate") is not None:
            wa["max_rate"] = _num(float(w["max_rate"]))
        etree.SubElement(el, "Wheel", wa)
    for j in d.get("suspension_joints", ()):
        etree.SubElement(el, "Suspension", joint=j)
    return el
