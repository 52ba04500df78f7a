"""CLARAty Mechanism Model XML (corrected format v1): writing, :func:`to_claraty_xml` and
:func:`save_claraty_xml`.

Any mechanism is written in the format :mod:`.claraty_xml` reads (the semantics are listed there), and the
text is validated against the DTD before it is returned; loading the file gives the same kinematics for
every frame. :mod:`.claraty_xml` re-exports these names.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..joints import Joint
from ..model import BodySpec, MassProperties, Mechanism
from .. import spatial
from . import validation
from .safe_xml import validate_with_dtd
from .mobility_xml import write_mobility
from .motor_groups import model_motor_groups, write_motor_groups
from .safe_xml import parse_bytes

#: The format's DTD, shipped beside this module (the reader validates against it too).
DTD_PATH = os.path.join(os.path.dirname(__file__), "mechanism_model.dtd")
#: Limits at or beyond this magnitude are unbounded (read and written so).
UNBOUNDED = validation.UNBOUNDED


def _num(v: float) -> str:
    v = float(v)
    if math.isinf(v):
        v = math.copysign(UNBOUNDED, v)
    return "0" if v == 0.0 else repr(v)


def _list(values) -> str:
    vals = [_num(v) for v in values]
    return vals[0] if len(set(vals)) == 1 else ", ".join(vals)


def _transform_el(etree, parent, T) -> None:
    """A <Transform> of ``T``: a Position and a Quaternion (omitted when zero / identity)."""
    T = np.asarray(T, dtype=float)
    tel = etree.SubElement(parent, "Transform")
    p = T[:3, 3]
    if np.any(p != 0):
        etree.SubElement(tel, "Position", x=_num(p[0]), y=_num(p[1]), z=_num(p[2]))
    if not np.array_equal(T[:3, :3], np.eye(3)):
        q = spatial.matrix_to_quaternion(T[:3, :3])
        etree.SubElement(tel, "Quaternion", qi=_num(q[0]), qj=_num(q[1]), qk=_num(q[2]), qs=_num(q[3]))


def _mass_el(etree, parent, mass: MassProperties) -> None:
    if mass.mass == 0 and not np.any(mass.com) and not np.any(mass.inertia):
        return
    mel = etree.SubElement(parent, "Mass_Properties", mass=_num(mass.mass))
    if np.any(mass.com):
        _transform_el(etree, etree.SubElement(mel, "CM"), spatial.make_transform(None, mass.com))
    I = mass.inertia
    if np.any(I):
        etree.SubElement(mel, "Inertia", xx=_num(I[0, 0]), yy=_num(I[1, 1]), zz=_num(I[2, 2]),
                         xy=_num(I[0, 1]), xz=_num(I[0, 2]), yz=_num(I[1, 2]))


def _shapes_el(etree, parent, shapes) -> None:
    if not shapes:
        return
    bel = etree.SubElement(parent, "Bounding_Shape")
    for s in shapes:
        stype = {"none": "no_shape"}.get(s.type, s.type)
        attrs = {"name": s.name, "type": stype}
        if s.parent is not None:
            attrs["parent"] = s.parent
        if s.is_container:
            attrs["is_container"] = "true"
        if s.level != 1:
            attrs["level"] = str(int(s.level))
        if s.link is not None:
            attrs["link"] = s.link
        if s.ignore_collisions:
            attrs["ignore_collisions"] = "true"
        if s.tolerance:
            attrs["tol"] = _num(s.tolerance)
        if s.mesh is not None:
            attrs["mesh"] = s.mesh
        oel = etree.SubElement(bel, "Obj_Params", attrs)
        _transform_el(etree, oel, s.transform)
        d = s.dimensions
        dims = {}
        if s.type in ("box", "mesh", "convex") and len(d) == 3:
            dims = {"dim-x": d[0], "dim-y": d[1], "dim-z": d[2]}
        elif s.type in ("cylinder", "capsule", "cone") and len(d) >= 2:
            dims = {"dim-x": d[0], "dim-z": d[1]}
        elif s.type == "sphere" and len(d) >= 1:
            dims = {"dim-x": d[0]}
        if dims:
            etree.SubElement(oel, "Dimension", {k: _num(v) for k, v in dims.items()})


def _frames_el(etree, parent, spec: BodySpec, skip=()) -> None:
    for fname, T in spec.frames.items():
        if fname in skip:
            continue
        kind = spec.frame_kinds.get(fname, "local")
        fel = etree.SubElement(parent, "Frame", name=fname, type="mount" if kind == "mount" else "local")
        _transform_el(etree, fel, T)


def _joint_el(etree, parent, j: Joint) -> None:
    attrs = {"name": j.name, "type": j.type.value}
    if not j.actuated:
        attrs["actuated"] = "false"
    if j.dof == 1:
        if j.offset:
            attrs["offset"] = _num(j.offset)
        attrs["axis"] = " ".join(_num(a) for a in j.axis)
    if j.dof and any(j.home):
        attrs["home"] = _list(j.home)
    jel = etree.SubElement(parent, "ME_Joint", attrs)
    if not j.dof:
        return
    limited = (any(math.isfinite(v) for v in j.lower + j.upper) or math.isfinite(j.velocity)
               or math.isfinite(j.effort))
    if limited:
        la = {"min": _list(j.lower), "max": _list(j.upper),
              "vmax": _num(j.velocity) if math.isfinite(j.velocity) else "0"}
        if math.isfinite(j.effort):
            la["torque_min"] = _num(-j.effort)
            la["torque_max"] = _num(j.effort)
        etree.SubElement(jel, "Joint_Limits", la)
    if j.stiffness is not None:
        etree.SubElement(jel, "Joint_Stiffness", {k: _num(v) for k, v in
                                                  zip(("kx", "ky", "kz", "tx", "ty", "tz"), j.stiffness)})
    if j.coupling is not None:
        etree.SubElement(jel, "Joint_Constraint", expr=j.coupling)


def _matrix_el(etree, root, m: Mechanism) -> None:
    spec = m.metadata.get("collision_matrix")
    if not spec:
        return
    known = set(m.body_names)
    el = etree.SubElement(root, "Collision_Matrix")
    if not spec.get("default", True):
        el.set("default", "false")
    for a, b, why in spec.get("disabled", ()):
        if a in known and b in known:
            etree.SubElement(el, "Disable", body1=a, body2=b, reason=why)
    for a, b in spec.get("enabled", ()):
        if a in known and b in known:
            etree.SubElement(el, "Enable", body1=a, body2=b)


def to_claraty_xml(mechanism: Mechanism, motor_groups=None) -> str:
    """The whole mechanism as one CLARAty Mechanism Model XML document (corrected format v1).

    Every body is written in topological order with its joint (type, axis, offset, home, limits,
    stiffness, coupling), its placement as the body's reference frame (Position + Quaternion), its named
    frames (relative to the body), mass properties and bounding shapes; the ground's own frames, mass and
    shapes go into an ``ME_Body`` named like the ground; then the collision matrix, the motor groups and
    the mobility description. ``motor_groups`` (a
    :class:`~mechanism_model_core.locomotion.motor_group.MotorGroups`) are the groups to write; None
    writes those of the file the mechanism was loaded from (so load -> save -> load keeps them). The text
    is validated against the package DTD before it is returned.
    """
    from lxml import etree

    m = mechanism
    root = etree.Element("Mechanism_Model", name=m.name or "mechanism", version="1.0", ground=m.ground)
    root.append(etree.Comment(" written by mechanism_model_core (CLARAty Mechanism Model XML, corrected "
                              "format v1) "))
    g = m.bodies[0]
    if g.frames or g.mass.mass or np.any(g.mass.inertia) or g.shapes or g.graphics:
        gel = etree.SubElement(root, "ME_Body", name=g.name)
        _frames_el(etree, gel, g)
        _mass_el(etree, gel, g.mass)
        _shapes_el(etree, gel, g.shapes)
        if g.graphics:
            etree.SubElement(gel, "Display_Graphics", path=g.graphics)
    for spec in m.bodies[1:]:
        attrs = {"name": spec.name}
        if spec.parent != m.ground:
            attrs["parent"] = spec.parent
        bel = etree.SubElement(root, "ME_Body", attrs)
        _joint_el(etree, bel, spec.joint)
        # the reference frame carries the placement; a "reference" named frame at the body origin takes
        # its name (the reader restores it), otherwise it is named like the body
        ref = next((f for f, T in spec.frames.items() if spec.frame_kinds.get(f) == "reference"
                    and np.array_equal(np.asarray(T), np.eye(4))), None)
        fel = etree.SubElement(bel, "Frame", name=ref or spec.name, type="reference")
        _transform_el(etree, fel, spec.joint.placement)
        _frames_el(etree, bel, spec, skip=(ref,) if ref else ())
        _mass_el(etree, bel, spec.mass)
        _shapes_el(etree, bel, spec.shapes)
        if spec.graphics:
            etree.SubElement(bel, "Display_Graphics", path=spec.graphics)
    _matrix_el(etree, root, m)
    write_motor_groups(etree, root, m, model_motor_groups(m) if motor_groups is None else motor_groups)
    write_mobility(etree, root, m)
    etree.indent(root, space="  ")
    text = etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="utf-8").decode("utf-8")
    validate_with_dtd(parse_bytes(text.encode("utf-8"), "<to_claraty_xml>"), DTD_PATH, "<to_claraty_xml>")
    return text


def save_claraty_xml(mechanism: Mechanism, path, motor_groups=None) -> None:
    """Write :func:`to_claraty_xml` of ``mechanism`` (and ``motor_groups``) to ``path``."""
    text = to_claraty_xml(mechanism, motor_groups)
    with open(os.fspath(path), "w", encoding="utf-8") as fh:
        fh.write(text)
