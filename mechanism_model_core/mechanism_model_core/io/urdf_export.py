"""URDF export: :func:`to_urdf` and :func:`save_urdf`.

What each part of a mechanism becomes is listed in :mod:`.urdf`'s documentation, beside the import rules
that read it back (a round trip keeps the mechanism). :mod:`.urdf` re-exports these names."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ..errors import MechanismModelError
from ..joints import Joint, JointType
from ..model import BodySpec, BoundingShape, MassProperties, Mechanism
from .. import spatial
from . import appearance
from .urdf_drives import write_drive_blocks

#: Limits at or beyond this magnitude are read as unbounded, and written for unbounded limits.
UNBOUNDED = 1e9


class URDFWarning(UserWarning):
    """Something in a URDF file that was accepted but adjusted (e.g. an axis normalised), or a part of a
    mechanism that URDF cannot hold (written approximately or left out)."""


def _num(v: float) -> str:
    v = float(v)
    if v == 0.0:
        return "0"
    return repr(v)


def _vec(v) -> str:
    return " ".join(_num(x) for x in v)


def _limit(v: float) -> float:
    if math.isinf(v):
        return math.copysign(UNBOUNDED, v)
    return v


def _origin_el(etree, parent, T) -> None:
    T = np.asarray(T, dtype=float)
    xyz = T[:3, 3]
    rpy = spatial.matrix_to_rpy(T[:3, :3])
    if np.allclose(xyz, 0, atol=0) and np.allclose(rpy, 0, atol=0):
        return
    attrs = {}
    if np.any(xyz != 0):
        attrs["xyz"] = _vec(xyz)
    if np.any(rpy != 0):
        attrs["rpy"] = _vec(rpy)
    etree.SubElement(parent, "origin", attrs)


def _geometry_el(etree, parent, shape: BoundingShape) -> bool:
    g = etree.SubElement(parent, "geometry")
    d = shape.dimensions
    if shape.type == "box" and len(d) == 3:
        etree.SubElement(g, "box", size=_vec(d))
    elif shape.type == "cylinder" and len(d) >= 2:
        etree.SubElement(g, "cylinder", radius=_num(d[0]), length=_num(d[1]))
    elif shape.type == "sphere" and len(d) >= 1:
        etree.SubElement(g, "sphere", radius=_num(d[0]))
    elif shape.type in ("capsule", "cone") and len(d) >= 2:
        # URDF has neither: the enclosing cylinder (a capsule's full length), so a checker stays conservative
        etree.SubElement(g, "cylinder", radius=_num(d[0]),
                         length=_num(d[1] + 2 * d[0] if shape.type == "capsule" else d[1]))
    elif shape.type in ("mesh", "convex") and shape.mesh:
        attrs = {"filename": shape.mesh}
        if len(d) == 3 and tuple(d) != (1.0, 1.0, 1.0):
            attrs["scale"] = _vec(d)
        etree.SubElement(g, "mesh", attrs)
    else:
        return False
    return True


def _link_el(etree, robot, name: str, mass: MassProperties | None = None, shapes=(), graphics=None):
    link = etree.SubElement(robot, "link", name=name)
    if mass is not None and (mass.mass != 0 or np.any(mass.inertia)):
        inertial = etree.SubElement(link, "inertial")
        _origin_el(etree, inertial, spatial.make_transform(None, mass.com))
        etree.SubElement(inertial, "mass", value=_num(mass.mass))
        I = mass.inertia
        etree.SubElement(inertial, "inertia", ixx=_num(I[0, 0]), ixy=_num(I[0, 1]), ixz=_num(I[0, 2]),
                         iyy=_num(I[1, 1]), iyz=_num(I[1, 2]), izz=_num(I[2, 2]))
    for tag in ("visual", "collision"):
        for s in shapes:
            if s.type not in ("box", "cylinder", "sphere", "mesh", "capsule", "cone", "convex"):
                continue
            el = etree.SubElement(link, tag, name=s.name)
            _origin_el(etree, el, s.transform)
            if not _geometry_el(etree, el, s):
                link.remove(el)
            elif tag == "visual":
                _material_el(etree, el, appearance.shape_color(s, name))
    if graphics and not any(s.type == "mesh" for s in shapes):
        el = etree.SubElement(link, "visual", name=f"{name}_graphics")
        g = etree.SubElement(el, "geometry")
        etree.SubElement(g, "mesh", filename=graphics)
        _material_el(etree, el, appearance.body_color(name))
    return link


def _material_el(etree, visual, rgba) -> None:
    """``<material name="mm_rrggbbaa"><color rgba="r g b a"/></material>`` in a ``<visual>``."""
    mat = etree.SubElement(visual, "material", name=appearance.material_name(rgba))
    etree.SubElement(mat, "color", rgba=" ".join(_num(float(c)) for c in rgba))


def _joint_el(etree, robot, name, jtype, parent, child, T, axis=None, limits=None, mimic=None):
    j = etree.SubElement(robot, "joint", name=name, type=jtype)
    _origin_el(etree, j, T)
    etree.SubElement(j, "parent", link=parent)
    etree.SubElement(j, "child", link=child)
    if axis is not None:
        etree.SubElement(j, "axis", xyz=_vec(axis))
    if limits is not None:
        lo, hi, vel, eff = limits
        attrs = {}
        if lo is not None:
            attrs["lower"] = _num(_limit(lo))
            attrs["upper"] = _num(_limit(hi))
        attrs["effort"] = _num(eff if math.isfinite(eff) else 0.0)
        attrs["velocity"] = _num(vel if math.isfinite(vel) else 0.0)
        etree.SubElement(j, "limit", attrs)
    if mimic is not None:
        master, a, b = mimic
        etree.SubElement(j, "mimic", joint=master, multiplier=_num(a), offset=_num(b))
    return j


def _mimic_of(mech: Mechanism, joint: Joint):
    """``(master, multiplier, offset)`` when the coupling is affine in one single-DOF joint, else None."""
    expr = mech.couplings.get(joint.name)
    if expr is None:
        return None
    lin = expr.linear_coefficients()
    if lin is None:
        return None
    coeffs, b = lin
    coeffs = {k: v for k, v in coeffs.items() if v != 0.0}
    if len(coeffs) != 1:
        return None
    (master, a), = coeffs.items()
    if master not in mech.joint_names or mech.joint(master).dof != 1:
        return None
    return master, float(a), float(b)


#: How :func:`to_urdf` writes a floating joint from the ground body (a rover's or a legged robot's base).
FLOATING_BASE_STYLES = ("chain", "floating", "root")


def to_urdf(mechanism: Mechanism, name: str | None = None, floating_base: str = "chain") -> str:
    """The mechanism as URDF text (see the module documentation for how each part is written).

    ``floating_base``: how a floating joint on the ground body is written --

    * ``"chain"`` (default): six single-DOF joints named after its coordinates, through massless links, so
      robot_state_publisher and MoveIt move it from plain JointState messages;
    * ``"floating"``: one URDF ``floating`` joint from the ground link (MuJoCo makes it a free joint; loading
      the file back gives the same floating joint);
    * ``"root"``: the floating body is the URDF's root link and the ground body is left out (Gazebo's
      convention: the root link of a model is free); the ground's own frames and shapes cannot be written
      then (a warning says which), and a body other than the floating one on the ground is an error. Load
      it back with ``root_joint="floating"``.

    Simulators refuse moving bodies without mass: the ``"chain"`` style's massless links are for
    kinematics tools, ``"floating"`` or ``"root"`` for MuJoCo and Gazebo.
    """
    from lxml import etree

    if floating_base not in FLOATING_BASE_STYLES:
        raise MechanismModelError(f"floating_base={floating_base!r}: use one of {', '.join(FLOATING_BASE_STYLES)}")
    m = mechanism
    g = m.bodies[0]
    free = [s for s in m.bodies[1:] if s.parent == g.name and s.joint.type is JointType.FLOATING]
    as_root = floating_base == "root" and len(free) == 1
    if floating_base == "root" and free:
        on_ground = [s.name for s in m.bodies[1:] if s.parent == g.name]
        if len(free) > 1 or len(on_ground) > 1:
            raise MechanismModelError(f"cannot write {m.name!r} with floating_base='root': the ground body "
                                      f"{g.name!r} carries {', '.join(repr(n) for n in on_ground)}, and only "
                                      f"one floating body can be the root link")
        if g.frames or g.shapes or g.mass.mass:
            warnings.warn(f"{m.name!r} with floating_base='root': the ground body {g.name!r} is left out with "
                          f"its frames {sorted(g.frames)} and {len(g.shapes)} shape(s)", URDFWarning, stacklevel=2)
    robot = etree.Element("robot", name=name or m.name or "robot")
    robot.append(etree.Comment(
        f" Written by mechanism_model_core from mechanism {m.name!r}. Multi-DOF joints are chains of "
        f"single-DOF joints named after the coordinates (<joint>.<coordinate>); named frames are fixed "
        f"links on <frame>.<kind>_frame joints. "))
    used_links: set[str] = set()
    used_joints: set[str] = set()

    def link_name(n: str) -> str:
        if n in used_links:
            raise MechanismModelError(f"cannot write URDF: link name {n!r} would be used twice")
        used_links.add(n)
        return n

    def joint_name(n: str) -> str:
        if n in used_joints:
            raise MechanismModelError(f"cannot write URDF: joint name {n!r} would be used twice")
        used_joints.add(n)
        return n

    # reserve every body and frame name first, so generated names never take one of them
    reserved_links = set(m.frame_names)
    reserved_joints = set(m.joint_names)
    unexpressed = []

    def add_frames(spec: BodySpec):
        for fname, T in spec.frames.items():
            kind = spec.frame_kinds.get(fname, "local")
            jn = f"{fname}.{kind}_frame"
            if jn in reserved_joints:
                raise MechanismModelError(f"cannot write URDF: joint name {jn!r} (for frame {fname!r}) is "
                                          f"taken")
            _link_el(etree, robot, link_name(fname))
            _joint_el(etree, robot, joint_name(jn), "fixed", spec.name, fname, T)

    if not as_root:
        _link_el(etree, robot, link_name(g.name), g.mass, g.shapes, g.graphics)
        add_frames(g)
    for spec in m.bodies[1:]:
        j = spec.joint
        _link_el(etree, robot, link_name(spec.name), spec.mass, spec.shapes, spec.graphics)
        if spec in free and floating_base != "chain":
            if not as_root:
                _joint_el(etree, robot, joint_name(j.name), "floating", spec.parent, spec.name, j.placement)
        elif j.dof == 0:
            _joint_el(etree, robot, joint_name(j.name), "fixed", spec.parent, spec.name, j.placement)
        elif j.dof == 1:
            T = j.transform([0.0])   # fold the offset into the origin
            if j.type is JointType.PRISMATIC:
                jtype = "prismatic"
            elif j.type is JointType.CONTINUOUS or (math.isinf(j.lower[0]) and math.isinf(j.upper[0])):
                jtype = "continuous"
            else:
                jtype = "revolute"
            bounded = jtype != "continuous"
            mimic = _mimic_of(m, j)
            if j.coupling is not None and mimic is None:
                unexpressed.append(f"{j.name} = {j.coupling}")
            _joint_el(etree, robot, joint_name(j.name), jtype, spec.parent, spec.name, T, j.axis,
                      (j.lower[0] if bounded else None, j.upper[0], j.velocity, j.effort), mimic)
        else:
            parent = spec.parent
            motions = j.elementary_motions()
            coords = j.coordinate_names
            for k, (kind, axis, ci) in enumerate(motions):
                jn = coords[ci]
                if jn in reserved_joints:
                    raise MechanismModelError(f"cannot write URDF: joint name {jn!r} is taken")
                last = k == len(motions) - 1
                child = spec.name if last else f"{jn}_link"
                if not last:
                    if child in reserved_links:
                        raise MechanismModelError(f"cannot write URDF: link name {child!r} is taken")
                    _link_el(etree, robot, link_name(child))
                lo, hi = j.lower[ci], j.upper[ci]
                if kind == "P":
                    jtype = "prismatic"
                elif math.isinf(lo) and math.isinf(hi):
                    jtype = "continuous"
                else:
                    jtype = "revolute"
                _joint_el(etree, robot, joint_name(jn), jtype, parent, child,
                          j.placement if k == 0 else np.eye(4), axis,
                          (lo if jtype != "continuous" else None, hi, j.velocity, j.effort))
                parent = child
        add_frames(spec)
    # move the joints after the links for readability
    links = [e for e in robot if e.tag == "link"]
    joints = [e for e in robot if e.tag == "joint"]
    for e in links + joints:
        robot.remove(e)
    if unexpressed:
        robot.append(etree.Comment(" couplings URDF cannot express (not affine in one joint): "
                                   + "; ".join(unexpressed).replace("--", "- -") + " "))
    for e in links + joints:
        robot.append(e)
    write_drive_blocks(etree, robot, m.metadata, used_joints)
    etree.indent(robot, space="  ")
    return etree.tostring(robot, pretty_print=True, xml_declaration=True, encoding="utf-8").decode("utf-8")


def save_urdf(mechanism: Mechanism, path, floating_base: str = "chain") -> None:
    """Write :func:`to_urdf` of ``mechanism`` to ``path``."""
    text = to_urdf(mechanism, floating_base=floating_base)
    with open(os.fspath(path), "w", encoding="utf-8") as fh:
        fh.write(text)
