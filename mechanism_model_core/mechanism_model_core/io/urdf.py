"""URDF import and export.

Import (:func:`load_urdf`, :func:`loads_urdf`)
    * The URDF root link becomes the ground body (the mechanism's ``ground`` is named after it), so every
      link keeps its name as a frame and the pose of a link is the same as in robot_state_publisher,
      Pinocchio or KDL. ``root_joint="floating"`` (or ``"planar"``) instead hangs the root link from a new
      ground body (``ground_name``, "world" by default) by a joint named ``root_joint``.
    * Every other link is a body; its joint is the URDF joint whose child it is. A URDF child link frame is
      the joint frame, as is our body frame, so the joint ``origin`` is the placement as it stands.
    * All joint types: revolute, continuous, prismatic, fixed, floating, planar (a planar joint's axis is
      the plane normal; a normal other than +z is handled by an exact re-orientation through a massless
      body named ``<joint>.plane``). The axis defaults to +x, as URDF says; an axis that is not of unit
      length is normalised with a warning, a zero axis on a moving joint is an error.
    * ``limit``: lower/upper as given (wider than pi is fine); ``|value| >= 1e9`` reads as unbounded and a
      velocity or effort of 0 as "not given" (unlimited) -- the export writes these for unlimited values,
      because URDF requires the attributes.
    * URDF has no home position: a joint's home is 0, or the middle of its limits when 0 lies outside them
      (as MoveIt's default positions), so that :attr:`Mechanism.home` is a valid configuration.
    * ``mimic`` becomes a joint coupling ``multiplier*master + offset`` (a master whose name is not an
      identifier, e.g. ``gripper-left``, cannot appear in a coupling expression: the mimic joint is then
      left independent, with a warning).
    * ``inertial``: URDF gives the inertia about the centre of mass in the inertial frame's axes; it is
      rotated into body axes (our :class:`MassProperties` convention).
    * ``collision`` primitives (box, cylinder, sphere) become bounding shapes; meshes are kept as references
      with their scale, resolved (``package://`` through ``ROS_PACKAGE_PATH``, the ament index and the
      file's folder; relative names through the file's folder) when found; a mesh that cannot be found or
      read is reported, with this file's line, when a collision model is built (kinematics do not need it). ``visual`` geometry is ignored; the first visual mesh is kept as the body's graphics
      reference.
    * ``<transmission>`` and ``<ros2_control>`` blocks are read into ``metadata`` (reductions, joint names,
      command interfaces and their limits; :mod:`.urdf_drives`), and give the model's motor groups.
    * Errors name the file and line: unknown parent/child links, a link with two parents, cycles, several
      roots, unknown joint types, bad numbers (NaN, infinite), entities, files over the size limit.
    * What urdfdom reads loads, and what it ignores is ignored with a :class:`URDFWarning` naming file and
      line (docs/urdf.md): comments containing ``--`` (TinyXML2 reads them), content after the root element
      (a commented or second copy of the robot: urdfdom reads the first ``<robot>``), undeclared namespace
      prefixes (``<sensor:camera>`` in an old ``<gazebo>`` block), ``<mimic>`` on a fixed joint or naming a
      joint that does not exist or has several coordinates (the joint stays independent, as in KDL and
      Pinocchio), negative mesh scales (mirrored meshes), inertia tensors whose products of inertia make
      them slightly indefinite (clipped to positive semi-definite; a negative moment stays an error).

Export (:func:`to_urdf`, :func:`save_urdf`)
    Any mechanism, for ``robot_description`` (RViz, robot_state_publisher, MoveIt):

    * the ground body is the root link; every body a link; every named frame a massless child link on a
      fixed joint named ``<frame>.<kind>_frame`` (kind: local, mount, reference, ...);
    * multi-DOF joints become chains of single-DOF URDF joints named after our coordinates
      (``<joint>.x``, ``<joint>.roll`` ...; robot_state_publisher and MoveIt handle URDF ``floating`` and
      ``planar`` joints poorly), joined by massless links named ``<joint>.<coordinate>_link``; the
      JointState names of the exported robot are therefore exactly our coordinate names;
    * an articulation offset is folded into the joint origin (URDF has no offsets), so the poses of every
      link are identical for the same joint values;
    * a revolute joint without limits becomes ``continuous``;
    * couplings become ``mimic`` where the expression is affine in a single single-DOF joint; other
      couplings are listed in an XML comment (URDF cannot express them);
    * bounding shapes become both ``collision`` and ``visual`` primitives, so RViz shows something without
      meshes; capsules and cones (which URDF lacks) as their enclosing cylinders, convex hulls as their mesh.

    * the ``<transmission>`` and ``<ros2_control>`` blocks the mechanism was read with (its metadata,
      :mod:`.urdf_drives`) are written back, so a robot's motor wiring survives a round trip.

    :func:`load_urdf` recognises these patterns (chains named ``<joint>.<coordinate>`` and fixed leaf links
    on ``<frame>.<kind>_frame`` joints) and rebuilds the multi-DOF joints and named frames, so a mechanism
    survives a round trip through URDF.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ..builder import MechanismBuilder, build_mechanism
from ..errors import MechanismModelError, ModelFileError, SourceLines
from ..joints import COORDINATE_NAMES, Joint, JointType
from ..model import BodySpec, BoundingShape, MassProperties, Mechanism
from .. import spatial
from . import limits, validation
from .safe_xml import parse_bytes, parse_file
from .urdf_drives import read_drive_blocks
from .urdf_export import UNBOUNDED, URDFWarning
from .urdf_export import FLOATING_BASE_STYLES, save_urdf, to_urdf  # noqa: F401  (the export, re-exported)
from ..mesh_files import resolved_mesh_path

_URDF_TYPES = {"revolute": JointType.REVOLUTE, "continuous": JointType.CONTINUOUS,
               "prismatic": JointType.PRISMATIC, "fixed": JointType.FIXED,
               "floating": JointType.FLOATING, "planar": JointType.PLANAR}


# ====================================================================================== import
class _Reader:
    def __init__(self, name: str, model_file: str | None = None):
        self.file = name                                   # in messages
        self.model_file = model_file or name               # meshes resolve beside it; the model's source
        self.lines = SourceLines()
        self.problems: list | None = None   # check mode: errors of joints and inertials collected here

    def parse_file(self, path):
        """The root element of ``path``, read as urdfdom reads XML (:mod:`.safe_xml`, ``tolerant``)."""
        return parse_file(path, tolerant=True, warn=self.warn_line)

    def parse_bytes(self, text):
        return parse_bytes(text, self.file, tolerant=True, warn=self.warn_line)

    def warn_line(self, line, message: str) -> None:
        where = self.file + (f":{line}" if line else "")
        warnings.warn(f"{where}: {message}", URDFWarning, stacklevel=5)

    def error(self, el, message: str) -> ModelFileError:
        return ModelFileError(message, self.file, getattr(el, "sourceline", None))

    def warn(self, el, message: str) -> None:
        line = getattr(el, "sourceline", None)
        where = self.file + (f":{line}" if line else "")
        warnings.warn(f"{where}: {message}", URDFWarning, stacklevel=4)

    def noted(self, read, instead):
        """``read()``; in check mode a ModelFileError is noted and ``instead`` stands in, so reading goes on."""
        try:
            return read()
        except ModelFileError as exc:
            if self.problems is None:
                raise
            self.problems.append(exc)
            return instead

    # ---------------------------------------------------------------- numbers
    def number(self, el, attr: str, default=None) -> float:
        text = el.get(attr)
        if text is None:
            if default is None:
                raise self.error(el, f"<{el.tag}> needs attribute {attr!r}")
            return float(default)
        try:
            v = float(text.strip())
        except ValueError:
            raise self.error(el, f"<{el.tag} {attr}={text!r}>: not a number") from None
        if math.isnan(v):
            raise self.error(el, f"<{el.tag} {attr}={text!r}>: not a number")
        if not math.isfinite(v):
            raise self.error(el, f"<{el.tag} {attr}={text[:40]!r}>: not a finite number")
        return v

    def numbers(self, el, attr: str, n: int, default: str | None = None) -> np.ndarray:
        text = el.get(attr, default)
        if text is None:
            raise self.error(el, f"<{el.tag}> needs attribute {attr!r}")
        parts = text.split()
        if len(parts) != n:
            raise self.error(el, f"<{el.tag} {attr}={text!r}>: needs {n} numbers, got {len(parts)}")
        try:
            vals = np.array([float(p) for p in parts])
        except ValueError:
            raise self.error(el, f"<{el.tag} {attr}={text!r}>: not a list of numbers") from None
        if not np.all(np.isfinite(vals)):
            raise self.error(el, f"<{el.tag} {attr}={text!r}>: numbers must be finite")
        return vals

    def origin(self, parent_el) -> np.ndarray:
        el = parent_el.find("origin")
        if el is None:
            return np.eye(4)
        xyz = self.numbers(el, "xyz", 3, "0 0 0")
        rpy = self.numbers(el, "rpy", 3, "0 0 0")
        return spatial.make_transform(spatial.rpy_to_matrix(rpy), xyz)

    # ---------------------------------------------------------------- links
    def mass(self, link_el) -> MassProperties:
        iel = link_el.find("inertial")
        if iel is None:
            return MassProperties()
        T = self.origin(iel)
        mel = iel.find("mass")
        m = 0.0 if mel is None else self.number(mel, "value")
        problem = validation.mass_problem(m)
        if problem:
            raise self.error(mel, problem)
        I = np.zeros((3, 3))
        inel = iel.find("inertia")
        if inel is not None:
            xx, xy, xz, yy, yz, zz = (self.number(inel, a, 0) for a in
                                      ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
            I = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
            R = T[:3, :3]
            I = R @ I @ R.T
        problem = validation.mass_problem(m, T[:3, 3], I)
        if problem and "positive semi-definite" in problem and np.all(np.diag(I) >= -1e-12):
            # moments >= 0 but products too large (rounded files: iCub, TIAGo, Romeo): urdfdom, KDL and
            # Pinocchio read it as written; dynamics here need it PSD: clip, and say so. A negative moment
            # of inertia (beyond rounding, 1e-12 kg m^2) stays an error.
            w, V = np.linalg.eigh(0.5 * (I + I.T))
            I = (V * np.maximum(w, 0.0)) @ V.T
            self.warn(inel, f"link {link_el.get('name')!r}: {problem}; negative principal moments set to 0")
            problem = validation.mass_problem(m, T[:3, 3], I)
        if problem:
            raise self.error(iel, f"link {link_el.get('name')!r}: {problem}")
        return MassProperties(m, T[:3, 3], I)

    def geometry(self, owner_el):
        """``(type, dimensions, mesh filename)`` of an element's <geometry>, or None when unsupported."""
        gel = owner_el.find("geometry")
        if gel is None:
            raise self.error(owner_el, f"<{owner_el.tag}> has no <geometry>")
        shape = next((c for c in gel if isinstance(c.tag, str)), None)
        if shape is None:
            raise self.error(gel, "<geometry> is empty")
        if shape.tag == "box":
            return "box", tuple(self.numbers(shape, "size", 3)), None
        if shape.tag == "cylinder":
            return "cylinder", (self.number(shape, "radius"), self.number(shape, "length")), None
        if shape.tag == "sphere":
            return "sphere", (self.number(shape, "radius"),), None
        if shape.tag == "mesh":
            fname = shape.get("filename")
            if not fname:
                raise self.error(shape, "<mesh> needs a filename")
            return "mesh", tuple(self.numbers(shape, "scale", 3, "1 1 1")), fname
        self.warn(shape, f"geometry <{shape.tag}> is not supported; ignored")
        return None

    def shapes(self, link_el, link: str) -> tuple:
        out = []
        used = set()
        for k, cel in enumerate(link_el.findall("collision")):
            geo = self.geometry(cel)
            if geo is None:
                continue
            stype, dims, mesh = geo
            name = cel.get("name") or f"{link}_collision" + (f"_{k}" if k else "")
            base, n = name, 1
            while name in used:
                name = f"{base}_{n}"
                n += 1
            used.add(name)
            try:
                out.append(BoundingShape(name, stype, self.origin(cel), dims, link=link, mesh=mesh,
                                         mesh_path=resolved_mesh_path(mesh, self.model_file),
                                         source=(self.file, cel.sourceline), color=self.color(link_el)))
            except MechanismModelError as exc:
                raise self.error(cel, str(exc)) from None
        return tuple(out)

    def color(self, link_el) -> tuple | None:
        """RGBA of the link's first visual with a coloured material (inline, or a top-level named one)."""
        for mel in link_el.findall("visual/material"):
            cel = mel.find("color")
            if cel is None and mel.get("name"):
                named = [m for m in link_el.getparent().findall("material") if m.get("name") == mel.get("name")]
                cel = named[0].find("color") if named else None
            if cel is not None and cel.get("rgba"):
                rgba = tuple(self.numbers(cel, "rgba", 4))
                if not all(0.0 <= c <= 1.0 for c in rgba):
                    self.warn(cel, f"color rgba {cel.get('rgba')!r} outside [0, 1]; ignored")
                    return None
                return rgba
        return None

    def graphics(self, link_el) -> str | None:
        for vel in link_el.findall("visual"):
            mel = vel.find("geometry/mesh")
            if mel is not None and mel.get("filename"):
                return mel.get("filename")
        return None

    # ---------------------------------------------------------------- joints
    def joint(self, el, name: str, known_types) -> Joint:
        jtype = el.get("type")
        if jtype not in known_types:
            raise self.error(el, f"joint {name!r}: unknown joint type {jtype!r} (URDF knows "
                                 f"{', '.join(sorted(known_types))})")
        jt = _URDF_TYPES[jtype]
        placement = self.origin(el)
        kw: dict = {}
        axis = np.array([1.0, 0.0, 0.0])
        if jt.dof == 1:
            ael = el.find("axis")
            if ael is not None:
                axis = self.numbers(ael, "xyz", 3)
                n = float(np.linalg.norm(validation.axis_direction(axis)) * np.max(np.abs(axis)))
                axis = validation.axis_direction(axis)
                if n < 1e-9:
                    raise self.error(ael, f"joint {name!r}: axis {ael.get('xyz')!r} has zero length")
                if abs(n - 1.0) > 1e-9:
                    self.warn(ael, f"joint {name!r}: axis {ael.get('xyz')!r} has length {n:.9g}; "
                                   f"normalised")
                axis = axis / np.linalg.norm(axis)
        lel = el.find("limit")
        if lel is not None and jt.dof == 1:
            vel, eff = self.number(lel, "velocity", 0), self.number(lel, "effort", 0)
            problem = validation.limits_problem((), (), vel, eff)
            if problem:
                raise self.error(lel, f"joint {name!r}: {problem}")
            kw["velocity"] = vel if vel != 0 else math.inf
            kw["effort"] = eff if eff != 0 else math.inf
            if jt is not JointType.CONTINUOUS:
                lo, hi = self.number(lel, "lower", 0), self.number(lel, "upper", 0)
                if max(abs(lo), abs(hi)) > UNBOUNDED:     # exactly 1e9 is what to_urdf writes for "none"
                    self.warn(lel, f"joint {name!r}: limit of magnitude {max(abs(lo), abs(hi)):.3g} read as "
                                   f"unbounded (magnitudes of {UNBOUNDED:g} or more are)")
                lo, hi = validation.position_limit(lo), validation.position_limit(hi)
                if lo > hi:
                    raise self.error(lel, f"joint {name!r}: lower limit {lo} above upper limit {hi}")
                kw["lower"], kw["upper"] = (lo,), (hi,)
                if not lo <= 0.0 <= hi:     # URDF has no home: 0, or mid-range when 0 is out of limits
                    kw["home"] = (0.5 * (lo + hi),)
        elif jt in (JointType.REVOLUTE, JointType.PRISMATIC):
            self.warn(el, f"joint {name!r} of type {jtype} has no <limit>; taken as unlimited")
        try:
            return Joint(name, jt, placement, axis, **kw)
        except MechanismModelError as exc:
            raise self.error(el, str(exc)) from None

    def mimic(self, el, name: str, joints: dict) -> str | None:
        mel = el.find("mimic")
        if mel is None:
            return None
        master = mel.get("joint")
        if not master:
            raise self.error(mel, f"joint {name!r}: <mimic> needs a joint attribute")
        if joints[name].dof != 1:   # urdfdom reads it, and nothing moves it: ignore, as they do
            self.warn(mel, f"joint {name!r} of type {joints[name].type.value} has no coordinate to mimic "
                           f"{master!r} with; <mimic> ignored")
            return None
        # urdfdom does not check the master (KDL and Pinocchio then move the joint independently): so here
        if master not in joints:
            self.warn(mel, f"joint {name!r} mimics {master!r}, which is not a joint of this robot; <mimic> "
                           f"ignored, {name!r} is independent")
            return None
        if joints[master].dof != 1:
            self.warn(mel, f"joint {name!r} mimics {master!r}, which has {joints[master].dof} degrees of "
                           f"freedom (needs 1); <mimic> ignored, {name!r} is independent")
            return None
        if not master.isidentifier():
            self.warn(mel, f"joint {name!r} mimics {master!r}, a name that cannot appear in a coupling "
                           f"expression (letters, digits and '_' only); {name!r} is left independent")
            return None
        a = self.number(mel, "multiplier", 1.0)
        b = self.number(mel, "offset", 0.0)
        return _affine_text(a, master, b)

    # ---------------------------------------------------------------- robot
    def read(self, root, *, root_joint=None, ground_name="world", name=None, rebuild=True) -> Mechanism:
        if root.tag != "robot":
            raise self.error(root, f"root element is <{root.tag}>, expected <robot>")
        links: dict = {}
        budget = limits.Budget()
        for lel in root.findall("link"):
            problem = budget.add_bodies(1)
            if problem:
                raise limits.ReadLimitExceeded(problem, self.file, lel.sourceline)
            lname = lel.get("name")
            if not lname:
                raise self.error(lel, "<link> needs a name")
            if lname in links:
                raise self.error(lel, f"link {lname!r} is defined twice (first at line "
                                      f"{links[lname].sourceline})")
            links[lname] = lel
            self.lines.note("body", lname, lel.sourceline)
        if not links:
            raise self.error(root, "the robot has no links")
        jels: dict = {}
        joints: dict = {}
        parent_of: dict = {}
        for jel in root.findall("joint"):
            jname = jel.get("name")
            if not jname:
                raise self.error(jel, "<joint> needs a name")
            if jname in jels:
                raise self.error(jel, f"joint {jname!r} is defined twice (first at line "
                                      f"{jels[jname].sourceline})")
            pel, cel = jel.find("parent"), jel.find("child")
            if pel is None or not pel.get("link"):
                raise self.error(jel, f"joint {jname!r} needs <parent link=...>")
            if cel is None or not cel.get("link"):
                raise self.error(jel, f"joint {jname!r} needs <child link=...>")
            parent, child = pel.get("link"), cel.get("link")
            for role, ln, e in (("parent", parent, pel), ("child", child, cel)):
                if ln not in links:
                    raise self.error(e, f"joint {jname!r}: {role} link {ln!r} is not defined")
            if parent == child:
                raise self.error(jel, f"joint {jname!r} joins link {parent!r} to itself")
            if child in parent_of:
                raise self.error(jel, f"link {child!r} has two parents: joint {jname!r} and joint "
                                      f"{parent_of[child][0]!r} (line {jels[parent_of[child][0]].sourceline}); "
                                      f"URDF describes a tree")
            parent_of[child] = (jname, parent)
            jels[jname] = jel
            self.lines.note("joint", jname, jel.sourceline)
            if jel.find("mimic") is not None:
                self.lines.note("coupling", jname, jel.find("mimic").sourceline)
            joints[jname] = self.noted(lambda: self.joint(jel, jname, _URDF_TYPES), Joint(jname))
        couplings = {jn: self.mimic(jel, jn, joints) for jn, jel in jels.items()}
        roots = [ln for ln in links if ln not in parent_of]
        if not roots:
            jname = next(iter(jels))
            raise self.error(jels[jname], "the joints form a cycle: no link is without a parent")
        if len(roots) > 1:
            raise self.error(links[roots[1]], f"several root links ({', '.join(repr(r) for r in roots)}): "
                                              f"a URDF robot is one tree")
        # cycles: every link must reach the root (each link walked once: linear in the number of links)
        reaches_root: set = set()
        for ln in links:
            path, on_path, cur = [], set(), ln
            while cur in parent_of and cur not in reaches_root:
                if cur in on_path:
                    jname = parent_of[cur][0]
                    raise self.error(jels[jname], f"the joints form a cycle through links "
                                                  f"{' -> '.join(path[path.index(cur):] + [cur])}")
                path.append(cur)
                on_path.add(cur)
                cur = parent_of[cur][1]
            reaches_root.update(path)
        root_link = roots[0]

        robot_name = name or root.get("name") or "robot"
        specs: list[BodySpec] = []
        if root_joint is None:
            ground = root_link
        else:
            ground = ground_name
            if ground in links:
                raise self.error(links[ground], f"root_joint={root_joint!r} needs a new ground body but "
                                                f"{ground!r} is a link; pass ground_name=")
        ground_spec = BodySpec(ground, None, None, {}, MassProperties(), (), None, {})
        if ground == root_link:
            lel = links[root_link]
            ground_spec = BodySpec(ground, None, None, {}, self.noted(lambda: self.mass(lel), MassProperties()), self.shapes(lel, root_link),
                                   self.graphics(lel), {})
        else:
            try:
                jt = JointType.parse(root_joint)
            except ValueError as exc:
                raise ModelFileError(f"root_joint: {exc}", self.file) from None
            lel = links[root_link]
            specs.append(BodySpec(root_link, ground, Joint("root_joint", jt), {}, self.noted(lambda: self.mass(lel), MassProperties()),
                                  self.shapes(lel, root_link), self.graphics(lel), {}))
        for jn, jel in jels.items():
            j = joints[jn]
            if couplings[jn] is not None:
                j = j.with_(coupling=couplings[jn])
            parent = jel.find("parent").get("link")
            child = jel.find("child").get("link")
            lel = links[child]
            if j.type is JointType.PLANAR:
                nel = jel.find("axis")
                normal = np.array([0.0, 0.0, 1.0]) if nel is None else self.numbers(nel, "xyz", 3)
                if np.linalg.norm(normal) < 1e-9:
                    raise self.error(nel, f"planar joint {jn!r}: zero normal")
                normal = normal / np.linalg.norm(normal)
                if not np.allclose(normal, (0, 0, 1), atol=1e-12):
                    # planar motion about an arbitrary normal n: P R(n) M(q) R(n)^T, exactly
                    R = spatial.make_transform(spatial.rotation_z_to(normal))
                    plane = f"{jn}.plane"
                    specs.append(BodySpec(plane, parent, j.with_(placement=j.placement @ R), {},
                                          MassProperties(), (), None, {}))
                    parent = plane
                    j = Joint.fixed(f"{jn}.plane_fixed", spatial.inverse(R))
            specs.append(BodySpec(child, parent, j, {}, self.noted(lambda: self.mass(lel), MassProperties()), self.shapes(lel, child),
                                  self.graphics(lel), {}))
        if rebuild:
            specs, ground_spec = _rebuild(specs, ground_spec)
        b = MechanismBuilder(robot_name, ground, source=self.model_file)
        b.metadata["format"] = "urdf"
        b.metadata.update(read_drive_blocks(root, set(jels), self.warn_line))
        try:
            for s in specs:
                b.add_body(s.name, s.parent, s.joint, s.frames, s.mass, s.shapes, s.graphics, s.frame_kinds)
            m = b.build()
            if ground_spec.frames or ground_spec.mass.mass or ground_spec.shapes or ground_spec.graphics:
                m = build_mechanism(m.name, [ground_spec] + list(m.bodies[1:]), m.ground, m.source, m.metadata)
            validation.check_poses(m)
        except MechanismModelError as exc:
            raise self.lines.file_error(exc, self.file) from None
        return m


def _affine_text(a: float, var: str, b: float) -> str:
    text = var if a == 1.0 else f"{a!r}*{var}"
    if b > 0:
        text += f" + {b!r}"
    elif b < 0:
        text += f" - {-b!r}"
    return text


def _rebuild(specs: list[BodySpec], ground: BodySpec):
    """Fold the patterns :func:`to_urdf` writes back into multi-DOF joints and named frames."""
    by_name = {s.name: s for s in specs}
    children: dict[str, list[str]] = {}
    for s in specs:
        children.setdefault(s.parent, []).append(s.name)
    removed: set[str] = set()
    replaced: dict[str, BodySpec] = {}
    # 1. chains <J>.<c1>, <J>.<c2>, ... of single-DOF joints -> one multi-DOF joint J
    for s in specs:
        if s.name in removed or s.joint.dof != 1 or "." not in s.joint.name:
            continue
        jname, coord = s.joint.name.rsplit(".", 1)
        for jt in (JointType.FLOATING, JointType.PLANAR, JointType.BALL):
            proto = Joint(jname, jt)
            motions = proto.elementary_motions()
            names = COORDINATE_NAMES[jt]
            if coord != names[motions[0][2]]:
                continue
            chain = [s]
            ok = True
            for kind, axis, ci in motions[1:]:
                prev = chain[-1]
                kids = children.get(prev.name, [])
                if (len(kids) != 1 or prev.mass.mass != 0 or prev.shapes or prev.frames
                        or prev.name != f"{prev.joint.name}_link"):
                    ok = False
                    break
                nxt = by_name[kids[0]]
                if nxt.joint.name != f"{jname}.{names[ci]}" or nxt.joint.dof != 1:
                    ok = False
                    break
                if not np.allclose(nxt.joint.placement, np.eye(4), atol=1e-12):
                    ok = False
                    break
                chain.append(nxt)
            if not ok:
                continue
            steps_ok = all(
                (c.joint.type is JointType.PRISMATIC) == (kind == "P") and c.joint.offset == 0.0
                and c.joint.coupling is None and np.allclose(c.joint.axis, axis, atol=1e-12)
                for c, (kind, axis, _) in zip(chain, motions))
            if not steps_ok:
                continue
            lower = [0.0] * len(motions)
            upper = [0.0] * len(motions)
            for c, (_, _, ci) in zip(chain, motions):
                lower[ci] = c.joint.lower[0]
                upper[ci] = c.joint.upper[0]
            first, last = chain[0], chain[-1]
            joint = Joint(jname, jt, first.joint.placement, lower=tuple(lower), upper=tuple(upper),
                          velocity=first.joint.velocity, effort=first.joint.effort,
                          actuated=first.joint.actuated)
            for c in chain[:-1]:
                removed.add(c.name)
            replaced[last.name] = BodySpec(last.name, first.parent, joint, last.frames, last.mass,
                                           last.shapes, last.graphics, last.frame_kinds)
            break
    out = []
    for s in specs:
        if s.name in removed:
            continue
        out.append(replaced.get(s.name, s))
    # 2. fixed leaf links on "<frame>.<kind>_frame" joints -> named frames of the parent body
    has_children = {s.parent for s in out}
    frames: dict[str, dict] = {}
    kinds: dict[str, dict] = {}
    dropped = set()
    for s in out:
        j = s.joint
        if (j.type is not JointType.FIXED or s.name in has_children or s.mass.mass != 0 or s.shapes
                or s.graphics or s.frames or not j.name.startswith(s.name + ".")
                or not j.name.endswith("_frame")):
            continue
        kind = j.name[len(s.name) + 1:-len("_frame")]
        if not kind:
            continue
        frames.setdefault(s.parent, {})[s.name] = j.placement
        kinds.setdefault(s.parent, {})[s.name] = kind
        dropped.add(s.name)
    result = []
    for s in out:
        if s.name in dropped:
            continue
        if s.name in frames:
            s = BodySpec(s.name, s.parent, s.joint, {**s.frames, **frames[s.name]}, s.mass, s.shapes,
                         s.graphics, {**s.frame_kinds, **kinds[s.name]})
        result.append(s)
    if ground.name in frames:
        ground = BodySpec(ground.name, None, None, {**ground.frames, **frames[ground.name]}, ground.mass,
                          ground.shapes, ground.graphics, {**ground.frame_kinds, **kinds[ground.name]})
    return result, ground


def load_urdf(path, *, root_joint: str | None = None, ground_name: str = "world", name: str | None = None,
              rebuild: bool = True) -> Mechanism:
    """Load a URDF file into a :class:`Mechanism`.

    ``root_joint``: ``None`` makes the URDF root link the ground body; ``"floating"`` or ``"planar"``
    hangs the root link from a new ground body ``ground_name`` by a joint named ``root_joint`` (a rover or
    a legged robot). ``rebuild`` folds the patterns that :func:`to_urdf` writes (coordinate chains, frame
    links) back into multi-DOF joints and named frames. Problems raise :class:`ModelFileError` with the
    file and line; adjustments (a normalised axis) are reported with :class:`URDFWarning`.
    """
    path = os.fspath(path)
    reader = _Reader(path)
    return reader.read(reader.parse_file(path), root_joint=root_joint, ground_name=ground_name, name=name,
                       rebuild=rebuild)


def urdf_problems(path):
    """``(problems, mechanism or None)``: the problems of a URDF file as :class:`ModelFileError` s (empty
    when it loads); every bad joint and inertial is reported, reading going on past each."""
    path = os.fspath(path)
    reader = _Reader(path)
    reader.problems = []
    m = None
    try:
        m = reader.read(reader.parse_file(path))
    except ModelFileError as exc:
        reader.problems.append(exc)
    return reader.problems, (None if reader.problems else m)


def loads_urdf(text, name: str = "<string>", model_file: str | None = None, **options) -> Mechanism:
    """:func:`load_urdf` for URDF text (str or bytes), e.g. a ``robot_description`` parameter; ``name``
    is used in error messages; ``model_file`` (default ``name``) is where relative mesh names resolve and
    the mechanism's ``source``."""
    reader = _Reader(name, model_file)
    return reader.read(reader.parse_bytes(text), **options)
