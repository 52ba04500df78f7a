"""CLARAty Mechanism Model XML, corrected format v1: reading and writing.

The format and its DTD (``mechanism_model.dtd`` in this package) are the 2005 draft's, corrected so that the
samples are well-formed and every construct the design document asks for can be written; the changes are
listed in ``models/README.md``. Every file is parsed safely (:mod:`.safe_xml`), validated against the DTD,
and then checked for meaning (unknown parents, duplicate names, bad expressions), each error with its file and
line.

Semantics:

* ``ME_Body`` without ``parent`` hangs from the ground body.
* The body's ``Frame type="reference"`` gives the joint placement in the parent body frame (a Transform, a
  ``DH_Parameter`` or a ``Zero_Position``); with none the placement is the identity. The reference frame's
  name is kept as a named frame at the body origin.
* ``Frame type="local"|"mount"`` are fixed frames, relative to the body frame or to ``relative_to`` (another
  frame of the same body); they are stored relative to the body frame (CLARAty 5.4, 6.7).
* ``Transform`` is a ``Position`` followed by rotations applied in order (intrinsic), or a ``Matrix``.
* ``Joint_Limits`` without ``torque_min``/``torque_max`` (or both 0) leaves the effort unlimited.
* ``Attach`` loads another file (relative to this one) and attaches it at a mount frame with a prefix.
* An ``ME_Body`` named like the ground (``ground`` attribute of ``Mechanism_Model``) carries the ground's own
  frames, mass properties and bounding shapes; it has no joint and no reference frame.
* Multi-DOF joints (ball, planar, floating) take one value per coordinate in ``home``, ``min`` and
  ``max``, separated by commas (``min="-1, -1, -M_PI"``); a single value applies to every coordinate.
* ``vmax="0"`` means no velocity limit, as ``torque_min``/``torque_max`` of 0 mean no effort limit, and a
  limit whose magnitude is 1e9 or more is unbounded (:data:`UNBOUNDED`): the writer uses these for limits
  the model does not have.

:func:`to_claraty_xml` / :func:`save_claraty_xml` write any mechanism in this format (validated against the
DTD before it is returned); loading the file gives the same kinematics for every frame.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..builder import MechanismBuilder, build_mechanism
from ..errors import ExpressionError, MechanismModelError, ModelFileError, ModelStructureError, SourceLines
from ..joints import Joint, JointType
from ..model import BodySpec, BoundingShape, MassProperties, Mechanism
from .. import spatial
from . import dh
from ..expressions import CONSTANTS, evaluate
from . import limits, validation
from .safe_xml import parse_file, validate_with_dtd
from .claraty_xml_export import DTD_PATH, UNBOUNDED  # noqa: F401  (UNBOUNDED: documented here)
from .claraty_xml_export import save_claraty_xml, to_claraty_xml  # noqa: F401  (the writer, re-exported)
from . import claraty_extensions, load_model
from .mobility_xml import read_mobility
from ..mesh_files import resolved_mesh_path

#: Default include depth of ``<Attach>`` (the caps: :mod:`mechanism_model_core.io.limits`).
MAX_ATTACH_DEPTH = limits.ReadLimits().max_include_depth


def parse_transform(element, path: str):
    """A ``<Transform>`` element (its Translation/Rotation/Euler children, as in model files) as a 4x4 matrix;
    errors are :class:`ModelFileError` naming ``path`` and the element's line. Used by other readers of the
    package (the constraint file)."""
    return _Reader(path).transform(element)


class _Reader:
    def __init__(self, path: str, depth: int = 0, budget: limits.Budget | None = None,
                 cache: dict | None = None):
        self.path = path
        self.depth = depth
        self.constants = dict(CONSTANTS)
        self.lines = SourceLines()
        self.budget = budget if budget is not None else limits.Budget()
        self.problems: list | None = None   # check mode: element errors collected here, reading goes on
        self.cache = {} if cache is None else cache     # attached files read so far: realpath -> Mechanism

    # ------------------------------------------------------------------ helpers
    def error(self, el, message) -> ModelFileError:
        return ModelFileError(message, self.path, getattr(el, "sourceline", None))

    def num(self, el, attr, default=None) -> float:
        text = el.get(attr)
        if text is None:
            if default is None:
                raise self.error(el, f"<{el.tag}> needs attribute {attr!r}")
            return float(default)
        try:
            return evaluate(text, self.constants)
        except ExpressionError as exc:
            raise self.error(el, f"<{el.tag} {attr}=...>: {exc}") from None

    def nums(self, el, attr, default) -> tuple:
        """One value or a comma-separated list of values (expressions) of attribute ``attr``."""
        text = el.get(attr)
        if text is None:
            return (float(default),)
        parts = _split_top_level_commas(text)
        try:
            return tuple(evaluate(p, self.constants) for p in parts)
        except ExpressionError as exc:
            raise self.error(el, f"<{el.tag} {attr}=...>: {exc}") from None

    def vec(self, el, attr, default: str) -> np.ndarray:
        text = el.get(attr, default)
        parts = text.replace(",", " ").split()
        if len(parts) != 3:
            raise self.error(el, f"<{el.tag} {attr}=...> needs 3 numbers, got {text!r}")
        try:
            return np.array([evaluate(p, self.constants) for p in parts])
        except ExpressionError as exc:
            raise self.error(el, f"<{el.tag} {attr}=...>: {exc}") from None

    def transform(self, el) -> np.ndarray:
        """A <Transform> element as a 4x4 matrix."""
        T = np.eye(4)
        R = np.eye(3)
        for child in el:
            if not isinstance(child.tag, str):
                continue
            tag = child.tag
            if tag == "Position":
                T[:3, 3] = [self.num(child, a, 0) for a in ("x", "y", "z")]
            elif tag == "Quaternion":
                q = [self.num(child, a, d) for a, d in (("qi", 0), ("qj", 0), ("qk", 0), ("qs", 1))]
                try:
                    R = R @ spatial.quaternion_to_matrix(q)
                except ValueError as exc:
                    raise self.error(child, str(exc)) from None
            elif tag == "Rotation":
                seq = child.get("type").split("_", 1)[1]
                angles = [self.num(child, a, 0) for a in ("angle1", "angle2", "angle3")]
                R = R @ spatial.euler_to_matrix(seq, angles)
            elif tag in ("RX", "RY", "RZ"):
                R = R @ spatial.euler_to_matrix(tag[1], [self.num(child, "angle")])
            elif tag == "Matrix":
                T = self.matrix(child)
                R = T[:3, :3].copy()
        T[:3, :3] = R
        return T

    def matrix(self, el) -> np.ndarray:
        parts = el.get("values", "").replace(",", " ").split()
        if len(parts) not in (12, 16):
            raise self.error(el, f"<Matrix> needs 12 or 16 numbers, got {len(parts)}")
        try:
            vals = [evaluate(p, self.constants) for p in parts]
        except ExpressionError as exc:
            raise self.error(el, f"<Matrix>: {exc}") from None
        M = np.eye(4)
        M[:3, :] = np.reshape(vals[:12], (3, 4))
        if len(vals) == 16 and not np.allclose(vals[12:], (0, 0, 0, 1), atol=1e-9):
            raise self.error(el, "<Matrix> last row must be 0 0 0 1")
        if not spatial.is_rotation(M[:3, :3], tol=1e-5):
            raise self.error(el, "<Matrix> rotation part is not a proper rotation (orthonormal, det +1)")
        return M

    # ------------------------------------------------------------------ model
    def read(self, name: str | None = None) -> Mechanism:
        root = parse_file(self.path)
        if root.tag != "Mechanism_Model":
            raise ModelFileError(f"root element is <{root.tag}>, expected <Mechanism_Model>", self.path,
                                 root.sourceline)
        validate_with_dtd(root, DTD_PATH, self.path)
        b = MechanismBuilder(name or root.get("name"), root.get("ground", "ground"), source=self.path)
        b.metadata["version"] = root.get("version", "1.0")
        paul_distal: dict[str, np.ndarray] = {}
        zp_body_to_joint: dict[str, np.ndarray] = {}
        self.ground_el = None
        matrix_el = mobility_el = None
        for el in root:
            if not isinstance(el.tag, str):
                continue
            if el.tag == "Collision_Matrix":
                matrix_el = el
                continue
            if el.tag == "Mobility":
                mobility_el = el
                continue
            try:
                self.element(el, root, b, paul_distal, zp_body_to_joint)
            except ModelFileError as exc:
                if self.problems is None or isinstance(exc, limits.ReadLimitExceeded):
                    raise
                self.problems.append(exc)           # check mode: note it, keep reading
                self.placeholder(el, b)
        try:
            m = b.build()
        except ModelStructureError as exc:
            raise self.lines.file_error(exc, self.path) from None
        if self.ground_el is not None:
            m = self.with_ground(m, self.ground_el)
        if self.depth == 0:     # attached files are checked as part of the whole
            try:
                validation.check_poses(m)
            except ModelStructureError as exc:
                raise self.lines.file_error(exc, self.path) from None
        if matrix_el is not None:
            m = self.collision_matrix(m, matrix_el)
        if mobility_el is not None:
            m = read_mobility(self, m, mobility_el)
        return m

    def collision_matrix(self, m: Mechanism, el) -> Mechanism:
        """``m`` carrying the ``<Collision_Matrix>`` element in its metadata (body names checked)."""
        spec = {"default": el.get("default", "true") == "true", "disabled": [], "enabled": []}
        known = set(m.body_names)
        for child in el:
            if not isinstance(child.tag, str):
                continue
            a, c = child.get("body1"), child.get("body2")
            for n in (a, c):
                if n not in known:
                    raise self.error(child, f"<{child.tag}>: {n!r} is not a body of the model")
            if a == c:
                raise self.error(child, f"<{child.tag}>: a body with itself ({a!r})")
            if child.tag == "Disable":
                spec["disabled"].append((a, c, child.get("reason", "User")))
            else:
                spec["enabled"].append((a, c))
        meta = dict(m.metadata)
        meta["collision_matrix"] = spec
        return build_mechanism(m.name, list(m.bodies), m.ground, m.source, meta)

    def element(self, el, root, b: MechanismBuilder, paul_distal, zp_body_to_joint) -> None:
        """Read one top-level element into ``b``."""
        if el.tag == "Constant":
            cname = el.get("name")
            if not cname.isidentifier():
                raise self.error(el, f"constant name {cname!r} is not an identifier")
            if cname in CONSTANTS:
                raise self.error(el, f"constant {cname!r} is built in ({CONSTANTS[cname]!r}) and cannot be "
                                     f"redefined")
            if cname in self.constants:
                raise self.error(el, f"constant {cname!r} is defined twice")
            self.constants[cname] = self.num(el, "value")
        elif el.tag == "ME_Body" and el.get("name") == b.ground:
            if self.ground_el is not None:
                raise self.error(el, f"the ground body {b.ground!r} is described twice")
            if el.find("ME_Joint") is not None or any(f.get("type") == "reference"
                                                        for f in el.findall("Frame")):
                raise self.error(el, f"the ground body {b.ground!r} cannot have a joint or a reference "
                                     f"frame")
            self.ground_el = el
        elif el.tag == "ME_Body":
            self.body(el, b, paul_distal, zp_body_to_joint)
        elif el.tag == "Attach":
            self.attach(el, b)
        elif el.tag == "Block_DH":
            self.blocks(root, el, b)

    def placeholder(self, el, b: MechanismBuilder) -> None:
        """Check mode: a body that failed still exists (fixed, at its parent's origin), so that what refers
        to it is checked on its own merits instead of failing too."""
        name, parent = el.get("name"), el.get("parent")
        if el.tag != "ME_Body" or not name or b.has_body(name) or name == b.ground:
            return
        try:
            b.add_body(name, parent if parent is not None and b.has_body(parent) else None,
                       Joint.fixed(f"{name}_joint"))
        except MechanismModelError:
            pass

    def with_ground(self, m: Mechanism, el) -> Mechanism:
        """``m`` rebuilt with the ground body's own frames, mass and shapes from ``el``."""
        frames, kinds, pending = {}, {}, []
        for fel in el.findall("Frame"):
            fname = fel.get("name")
            inner = _first_element(fel)
            if inner.tag != "Transform":
                raise self.error(fel, f"frame {fname!r}: only reference frames take {inner.tag}")
            if fname in kinds:
                raise self.error(fel, f"the ground already has a frame {fname!r}")
            kinds[fname] = fel.get("type", "local")
            pending.append((fel, fname, self.transform(inner), fel.get("relative_to")))
        # as for bodies, a frame may be relative to a ground frame defined later in the file (6.7)
        while pending:
            ready = [p for p in pending if p[3] in (None, m.ground) or p[3] in frames]
            if not ready:
                fel, fname, _, rel = pending[0]
                raise self.error(fel, f"frame {fname!r}: relative_to {rel!r} is not a frame of the ground "
                                      f"(or the frames refer to each other)")
            for _, fname, T, rel in ready:
                frames[fname] = T if rel in (None, m.ground) else frames[rel] @ T
            pending = [p for p in pending if p not in ready]
        frames = {f: frames[f] for f in kinds}      # in file order
        gel = el.find("Display_Graphics")
        g = BodySpec(m.ground, None, None, frames, self.mass(el.find("Mass_Properties")),
                     self.shapes(el.find("Bounding_Shape")), None if gel is None else gel.get("path"), kinds)
        try:
            return build_mechanism(m.name, [g] + list(m.bodies[1:]), m.ground, m.source, m.metadata)
        except ModelStructureError as exc:
            for fel in el.findall("Frame"):
                self.lines.note("frame", fel.get("name"), fel.sourceline)
            raise ModelFileError(str(exc), self.path, self.lines.line_of(exc) or el.sourceline) from None

    def body(self, el, b: MechanismBuilder, paul_distal, zp_b2j):
        name = el.get("name")
        problem = self.budget.add_bodies(1)
        if problem:
            raise limits.ReadLimitExceeded(problem, self.path, el.sourceline)
        parent = el.get("parent")
        if parent is not None and not b.has_body(parent):
            raise self.error(el, f"body {name!r}: parent {parent!r} is not defined above it")
        if b.has_body(name):
            raise self.error(el, f"body {name!r} is defined twice")
        jel = el.find("ME_Joint")
        self.lines.note("body", name, el.sourceline)
        for fel in el.findall("Frame"):
            self.lines.note("frame", fel.get("name"), fel.sourceline)
        placement = np.eye(4)
        axis = None
        ref_name = None
        for fel in el.findall("Frame"):
            if fel.get("type", "local") != "reference":
                continue
            if ref_name is not None:
                raise self.error(fel, f"body {name!r} has more than one reference frame")
            ref_name = fel.get("name")
            inner = _first_element(fel)
            if inner.tag == "Transform":
                placement = self.transform(inner)
            elif inner.tag == "DH_Parameter":
                a, alpha = self.num(inner, "length", 0), self.num(inner, "twist", 0)
                d, theta = self.num(inner, "offset", 0), self.num(inner, "angle", 0)
                if inner.get("type") == "DH_Craig":
                    placement = dh.craig_placement(a, alpha, d, theta)
                else:
                    placement = paul_distal.get(parent, np.eye(4)) @ spatial.rot_z(theta)
                    paul_distal[name] = dh.paul_distal(a, alpha, d)
            else:  # Zero_Position
                b2j = self.vec(inner, "body_to_joint", "0 0 0")
                p2j = self.vec(inner, "parent_to_joint", "0 0 0")
                axis = self.vec(inner, "axis", "0 0 1")
                placement = dh.zero_position_placement(p2j, zp_b2j.get(parent, np.zeros(3)))
                zp_b2j[name] = b2j
        joint = self.joint(jel, name, placement, axis) if jel is not None else \
            Joint.fixed(f"{name}_joint", placement)
        mass = self.mass(el.find("Mass_Properties"))
        shapes = self.shapes(el.find("Bounding_Shape"))
        gel = el.find("Display_Graphics")
        try:
            b.add_body(name, parent, joint, mass=mass, shapes=shapes,
                       graphics=None if gel is None else gel.get("path"))
            if ref_name is not None and ref_name != name:
                b.add_frame(name, ref_name, np.eye(4), kind="reference")
            if name in paul_distal:
                b.add_frame(name, f"{name}_dh", paul_distal[name], kind="dh")
        except MechanismModelError as exc:
            raise self.error(el, str(exc)) from None
        pending = []
        for fel in el.findall("Frame"):
            kind = fel.get("type", "local")
            if kind == "reference":
                continue
            inner = _first_element(fel)
            if inner.tag != "Transform":
                raise self.error(fel, f"frame {fel.get('name')!r}: only reference frames take "
                                      f"{inner.tag}; use a Transform")
            pending.append((fel, self.transform(inner), kind, fel.get("relative_to")))
        # a frame may be given relative to another frame of the body defined later in the file (6.7)
        while pending:
            ready = [p for p in pending if p[3] in (None, name, ref_name) or p[3] in b.body(name).frames]
            if not ready:
                fel = pending[0][0]
                raise self.error(fel, f"frame {fel.get('name')!r}: relative_to {pending[0][3]!r} is not a "
                                      f"frame of body {name!r} (or the frames refer to each other)")
            for fel, T, kind, rel in ready:
                try:
                    b.add_frame(name, fel.get("name"), T, kind=kind,
                                relative_to=None if rel in (None, name, ref_name) else rel)
                except MechanismModelError as exc:
                    raise self.error(fel, str(exc)) from None
            pending = [p for p in pending if p not in ready]

    def joint(self, el, body, placement, axis) -> Joint:
        name = el.get("name")
        self.lines.note("joint", name, el.sourceline)
        try:
            jt = JointType.parse(el.get("type", "revolute"))
        except ValueError as exc:
            raise self.error(el, str(exc)) from None
        if axis is None:
            axis = self.vec(el, "axis", "0 0 1")
        axis = validation.axis_direction(axis)
        kw = dict(offset=self.num(el, "offset", 0), actuated=el.get("actuated", "true") == "true")
        dof = jt.dof
        if dof:
            kw["home"] = self.nums(el, "home", 0)
        lim = el.find("Joint_Limits")
        if lim is not None and dof:
            kw["lower"] = tuple(validation.position_limit(v) for v in self.nums(lim, "min", -math.pi))
            kw["upper"] = tuple(validation.position_limit(v) for v in self.nums(lim, "max", math.pi))
            vmax = self.num(lim, "vmax", 1.0)
            tmin, tmax = self.num(lim, "torque_min", 0), self.num(lim, "torque_max", 0)
            problem = validation.limits_problem((), (), vmax, names=("vmax", "torque"))   # lower > upper: Joint
            if problem is None and tmin > tmax:
                problem = f"torque_min {tmin:g} is above torque_max {tmax:g}"
            if problem:
                raise self.error(lim, f"joint {name!r}: {problem}")
            kw["velocity"] = vmax if vmax > 0 else math.inf
            effort = max(abs(tmin), abs(tmax))
            kw["effort"] = effort if effort > 0 else math.inf
        if dof and el.get("home") is not None:
            lower = kw.get("lower", (-math.inf,))
            upper = kw.get("upper", (math.inf,))
            n = max(len(kw["home"]), len(lower), len(upper))
            stretch = (lambda t: t * n if len(t) == 1 else t)
            problem = validation.home_problem(stretch(kw["home"]), stretch(lower), stretch(upper))
            if problem:
                raise self.error(el, f"joint {name!r}: {problem}")
        st = el.find("Joint_Stiffness")
        if st is not None:
            kw["stiffness"] = tuple(self.num(st, a, 0) for a in ("kx", "ky", "kz", "tx", "ty", "tz"))
        con = el.find("Joint_Constraint")
        if con is not None:
            kw["coupling"] = con.get("expr")
            self.lines.note("coupling", name, con.sourceline)
        try:
            return Joint(name, jt, placement, axis, **kw)
        except MechanismModelError as exc:
            raise self.error(el, str(exc)) from None

    def mass(self, el) -> MassProperties:
        if el is None:
            return MassProperties()
        if el.get("mass") is not None:
            m = self.num(el, "mass")
        elif el.get("rho") is not None and el.get("volume") is not None:
            m = self.num(el, "rho") * self.num(el, "volume")
        else:
            m = 0.0
        problem = validation.mass_problem(m)
        if problem:
            raise self.error(el, problem)
        com, R = np.zeros(3), np.eye(3)
        cm = el.find("CM")
        if cm is not None:
            T = self.transform(cm.find("Transform"))
            com, R = T[:3, 3], T[:3, :3]
        I = np.zeros((3, 3))
        iel = el.find("Inertia")
        if iel is not None:
            xx, yy, zz = (self.num(iel, a) for a in ("xx", "yy", "zz"))
            xy, xz, yz = (self.num(iel, a, 0) for a in ("xy", "xz", "yz"))
            I = R @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ R.T
        problem = validation.mass_problem(m, com, I)
        if problem:
            raise self.error(el, problem)
        return MassProperties(m, com, I)

    def shapes(self, el) -> tuple:
        if el is None:
            return ()
        out = []
        names = set()
        for o in el.findall("Obj_Params"):
            name = o.get("name")
            if name in names:
                raise self.error(o, f"bounding shape {name!r} is defined twice")
            parent = o.get("parent")
            if parent is not None and parent not in names:
                raise self.error(o, f"bounding shape {name!r}: parent {parent!r} is not defined above it")
            names.add(name)
            stype = {"cyl": "cylinder", "no_shape": "none"}.get(o.get("type"), o.get("type"))
            dim = o.find("Dimension")
            dx, dy, dz = ((self.num(dim, a, 0) for a in ("dim-x", "dim-y", "dim-z")) if dim is not None
                          else (0.0, 0.0, 0.0))
            dims = {"box": (dx, dy, dz), "cylinder": (dx, dz), "sphere": (dx,), "mesh": (dx or 1, dy or 1,
                                                                                         dz or 1)}.get(stype, ())
            try:
                level = int(self.num(o, "level", 1))
            except (TypeError, ValueError):
                raise self.error(o, "level must be an integer") from None
            dims = {"capsule": (dx, dz), "cone": (dx, dz), "convex": (dx or 1, dy or 1, dz or 1)}.get(stype, dims)
            mesh = o.get("mesh")
            if stype in ("mesh", "convex") and not mesh:
                raise self.error(o, f"bounding shape {name!r}: type {stype} needs a mesh file (mesh=...)")
            try:
                out.append(BoundingShape(name, stype, self.transform(o.find("Transform")), dims, parent,
                                         o.get("is_container", "false") == "true", level,
                                         o.get("ignore_collisions", "false") == "true", self.num(o, "tol", 0),
                                         o.get("link"), mesh, resolved_mesh_path(mesh, self.path),
                                         (self.path, o.sourceline)))
            except MechanismModelError as exc:
                raise self.error(o, str(exc)) from None
        return tuple(out)

    def attach(self, el, b: MechanismBuilder):
        problem = self.budget.depth_problem(self.depth) or self.budget.add_attachment()
        if problem:
            raise limits.ReadLimitExceeded(problem, self.path, el.sourceline)
        rel = el.get("file")
        path = rel if os.path.isabs(rel) else os.path.join(os.path.dirname(self.path), rel)
        if not os.path.exists(path):
            raise self.error(el, f"attached file {rel!r} does not exist")
        key = os.path.realpath(path)
        app = self.cache.get(key)
        if app is None:     # a file attached many times is read once per load (mechanisms never change)

            try:
                if path.lower().endswith(claraty_extensions()):
                    app = _Reader(path, self.depth + 1, self.budget, self.cache).read()
                else:
                    app = load_model(path)
            except ModelFileError as exc:   # name this file and line too: where the attached file came in
                raise type(exc)(f"attached file {rel!r}: {exc}", self.path, el.sourceline) from None
            self.cache[key] = app
        problem = self.budget.add_bodies(len(app.bodies) - 1)
        if problem:
            raise limits.ReadLimitExceeded(problem, self.path, el.sourceline)
        tel = el.find("Transform")
        placement = None if tel is None else self.transform(tel)
        try:
            b.attach(app, el.get("mount"), el.get("prefix", ""), placement)
        except MechanismModelError as exc:
            raise self.error(el, str(exc)) from None
        prefix = el.get("prefix", "")
        for frame in app.frame_names:     # what the appendage defines is defined at this <Attach>
            if frame != app.ground:
                self.lines.note("frame", prefix + frame, el.sourceline)
        for jname in app.joint_names:
            self.lines.note("joint", prefix + jname, el.sourceline)

    def blocks(self, root, el, b: MechanismBuilder):
        bj = root.find("Block_Joint")
        params = el.findall("DH_Parameter")
        joints = bj.findall("ME_Joint")
        if len(params) != len(joints):
            raise self.error(el, f"Block_DH has {len(params)} rows but Block_Joint {len(joints)} joints")
        kinds = {p.get("type") for p in params}
        if len(kinds) != 1:
            raise self.error(el, "Block_DH mixes DH_Craig and DH_Paul rows")
        rows, js = [], []
        for k, (p, j) in enumerate(zip(params, joints)):
            rows.append({"name": p.get("name") or f"link{k + 1}", "a": self.num(p, "length", 0),
                         "alpha": self.num(p, "twist", 0), "d": self.num(p, "offset", 0),
                         "theta": self.num(p, "angle", 0), "type": j.get("type", "revolute")})
            self.lines.note("body", rows[-1]["name"], p.sourceline)
            js.append(self.joint(j, rows[-1]["name"], np.eye(4), None))
        try:
            dh.build_dh_chain(b, rows, "craig" if kinds == {"DH_Craig"} else "paul", js)
        except MechanismModelError as exc:
            raise self.error(el, str(exc)) from None


def _first_element(el):
    """The first child element of ``el``, skipping comments (the DTD guarantees there is one)."""
    return next(child for child in el if isinstance(child.tag, str))


def _split_top_level_commas(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def load_claraty_xml(path, name: str | None = None) -> Mechanism:
    """Load a CLARAty Mechanism Model XML file (corrected format v1) into a Mechanism."""
    return _Reader(os.fspath(path)).read(name)


def claraty_xml_problems(path):
    """``(problems, mechanism or None)``: every problem of a CLARAty XML file as :class:`ModelFileError` s
    (empty when it loads). Each top-level element that fails is reported and reading goes on (a body that
    failed stands in as a fixed body, so what refers to it is still checked); then what building the whole
    finds."""
    reader = _Reader(os.fspath(path))
    reader.problems = []
    m = None
    try:
        m = reader.read()
    except ModelFileError as exc:
        reader.problems.append(exc)
    return reader.problems, (None if reader.problems else m)


def validate_claraty_xml(path) -> None:
    """Raise ModelFileError if ``path`` is not a valid model file (parses, validates and builds it)."""
    load_claraty_xml(path)
