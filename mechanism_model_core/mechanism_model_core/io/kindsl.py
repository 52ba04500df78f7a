"""RobCoGen Kinematics-DSL (KinDSL) import.

The grammar is ``kindsl.lark`` next to this module, parsed with lark (an optional dependency:
``pip install lark``). What a file means (RobCoGen's documentation):

* ``RobotBase`` is the base link. A fixed base becomes the ground body (named like the base); a
  ``RobotBase <name> floating`` hangs from a new ground body ``world`` by a 6-DOF floating joint named
  ``<name>_floating``.
* ``link`` blocks list their ``children { child via joint }``; each joint joins the link to that child.
* ``r_joint`` / ``p_joint``: revolute / prismatic about / along +z of the joint frame. ``ref_frame`` gives
  the joint frame in the predecessor's link frame: the translation first, then the intrinsic rotations
  about x, then the new y, then the new z (radians). The successor's link frame is the joint frame at
  zero, as in our model, so ``ref_frame`` is the joint placement. KinDSL has no joint limits: revolute
  joints are unlimited.
* ``frames { name { translation rotation } }``: named frames relative to the link frame.
* ``inertia_properties``: mass (kg), ``CoM`` (m) and the moments ``Ix Iy Iz Ixy Ixz Iyz`` (kg m^2), all in
  the *link frame*, about its *origin* -- not about the centre of mass. The products are the plain
  integrals (``Ixy = sum m x y``), so the inertia tensor has ``-Ixy`` off the diagonal. They are converted
  to our convention (tensor about the centre of mass, body axes) with the parallel-axis theorem.
* Numbers: literals, ``PI``, arithmetic ``+ - * /`` with parentheses, a few functions (``sin``, ``cos``,
  ``sqrt`` ...), inline named constants ``<name=value>`` (a constant defined where it is first used,
  usable by name afterwards), and *parameters*: a bare name (``jC_tz``) or a name with a default value
  (``m1[1.0]``). Parameters are bound at load time with ``parameters={"jC_tz": 0.1}``; a parameter with
  neither a binding nor a default is an error naming its line and column.

Syntax errors raise :class:`ModelFileError` with the line and column.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ..builder import MechanismBuilder, build_mechanism
from ..errors import MechanismModelError, ModelFileError, SourceLines
from ..joints import Joint, JointType
from ..model import BodySpec, MassProperties, Mechanism
from .. import spatial
from . import limits, validation
from ..expressions import CONSTANTS, FUNCTIONS
from .safe_xml import read_limited
from ..extras import install_hint

GRAMMAR_PATH = os.path.join(os.path.dirname(__file__), "kindsl.lark")
MAX_BYTES = 4 * 1024 * 1024
#: Unary signs and parentheses one expression may nest (1,000 minus signs are legal KinDSL).
MAX_NESTING = 5000
_PARSER = None


def _parser():
    global _PARSER
    if _PARSER is None:
        try:
            import lark
        except ImportError:
            raise ModelFileError(f"reading KinDSL files needs the 'lark' package: {install_hint('kindsl')}") \
                from None
        with open(GRAMMAR_PATH, encoding="utf-8") as fh:
            _PARSER = lark.Lark(fh.read(), parser="lalr", propagate_positions=True, maybe_placeholders=False)
    return _PARSER


def _describe(parser, terminal: str) -> str:
    """A terminal as the user would write it: ``','`` rather than ``COMMA``."""
    try:
        pattern = parser.get_terminal(terminal).pattern
    except (KeyError, AttributeError):
        return terminal
    if type(pattern).__name__ == "PatternStr":
        return repr(pattern.value)
    return {"NAME": "a name", "NUMBER": "a number"}.get(terminal, terminal.lower())


def _pos(node):
    """(line, column) of a lark Tree or Token."""
    meta = getattr(node, "meta", None)
    if meta is not None and not getattr(meta, "empty", True):
        return meta.line, meta.column
    return getattr(node, "line", None), getattr(node, "column", None)


class _Evaluator:
    """Evaluates expression subtrees; records which parameters were used."""

    def __init__(self, file: str, parameters: dict):
        self.file = file
        self.parameters = dict(parameters)
        self.constants = {k: v for k, v in CONSTANTS.items()}
        self.used: set[str] = set()
        self.defaults: dict[str, float] = {}

    def error(self, node, message) -> ModelFileError:
        line, col = _pos(node)
        return ModelFileError(message, self.file, line, col)

    def __call__(self, node) -> float:
        try:
            v = self._eval(node)
        except RecursionError:
            raise self.error(node, "expression nested too deeply") from None
        if not math.isfinite(v):
            raise self.error(node, "expression is not a finite number")
        return float(v)

    def finite(self, node, value: float) -> float:
        """``value``, or an error when an intermediate result overflowed (``1/(1e308*10)`` would otherwise
        end as 0, silently)."""
        if not math.isfinite(value):
            raise self.error(node, f"an intermediate value of the expression is not finite ({value}): overflow")
        return value

    def _eval(self, node) -> float:
        from lark import Token

        sign, top, levels = 1.0, node, 0
        while not isinstance(node, Token):      # unary minus and parentheses unwrapped without recursion
            if node.data == "neg":
                sign = -sign
            elif node.data not in ("unary", "expr", "sum", "product", "atom") or not node.children:
                break
            node = node.children[-1]
            levels += 1
            if levels > MAX_NESTING:
                raise self.error(top, f"expression nested too deeply (more than {MAX_NESTING} levels)")
        return sign * self._eval_node(node)

    def _eval_node(self, node) -> float:
        from lark import Token

        if isinstance(node, Token):  # a bare NUMBER can arrive unwrapped
            v = float(node)
            if not math.isfinite(v):
                raise self.error(node, f"number {str(node)[:40]!r} is too large (not finite)")
            return v
        k = node.data
        c = node.children
        if k == "number":
            v = float(c[0])
            if not math.isfinite(v):
                raise self.error(node, f"number {str(c[0])[:40]!r} is too large (not finite)")
            return v
        if k == "name":
            n = str(c[0])
            if n in self.parameters:
                self.used.add(n)
                return float(self.parameters[n])
            if n in self.constants:
                return self.constants[n]
            if n in self.defaults:
                self.used.add(n)
                return self.defaults[n]
            raise self.error(node, f"parameter {n!r} has no value: bind it with parameters={{{n!r}: ...}}")
        if k == "parameter_default":
            n = str(c[0])
            self.used.add(n)
            default = self._eval(c[1])
            self.defaults.setdefault(n, default)
            return float(self.parameters.get(n, default))
        if k == "named_constant":
            n = str(c[0])
            v = self._eval(c[1])
            if n in CONSTANTS:
                raise self.error(node, f"constant {n!r} is built in ({CONSTANTS[n]!r}) and cannot be "
                                       f"redefined")
            if n in self.constants and self.constants[n] != v:
                raise self.error(node, f"constant {n!r} is defined twice with different values")
            self.constants[n] = v
            return v
        if k == "call":
            fname = str(c[0])
            if fname not in FUNCTIONS or fname == "atan2":
                raise self.error(node, f"function {fname!r} is not allowed")
            with np.errstate(all="ignore"):
                return self.finite(node, float(FUNCTIONS[fname](self._eval(c[1]))))
        if k == "neg":
            return -self._eval(c[0])
        if k in ("add", "sub", "mul", "div"):
            a, b = self._eval(c[0]), self._eval(c[1])
            if k == "add":
                return self.finite(node, a + b)
            if k == "sub":
                return self.finite(node, a - b)
            if k == "mul":
                return self.finite(node, a * b)
            if b == 0:
                raise self.error(node, "division by zero")
            return self.finite(node, a / b)
        if k in ("unary", "expr", "sum", "product", "atom"):
            return self._eval(c[-1])
        raise self.error(node, f"unexpected expression element {k!r}")

    def vector(self, node) -> np.ndarray:
        return np.array([self(ch) for ch in node.children])


def _pose(ev: _Evaluator, node) -> np.ndarray:
    """``pose`` subtree -> 4x4: translation, then intrinsic rotations about x, new y, new z."""
    t = ev.vector(node.children[0])
    r = ev.vector(node.children[1])
    R = spatial.rot_x(r[0])[:3, :3] @ spatial.rot_y(r[1])[:3, :3] @ spatial.rot_z(r[2])[:3, :3]
    return spatial.make_transform(R, t)


class _Link:
    __slots__ = ("name", "node", "children", "frames", "mass", "is_base", "floating")

    def __init__(self, name, node):
        self.name = name
        self.node = node
        self.children = []          # (child link, joint name, node)
        self.frames = {}
        self.mass = MassProperties()
        self.is_base = False
        self.floating = False


def _inertia(ev: _Evaluator, node, link: str) -> MassProperties:
    values = {}
    com = np.zeros(3)
    for item in node.children:
        if item.data == "com":
            com = ev.vector(item.children[0])
        elif item.data == "inertia_frame":
            raise ev.error(item, f"link {link!r}: inertia given in another frame (ref_frame) is not "
                                 f"supported")
        else:
            key = str(item.children[0])
            if key in values:
                raise ev.error(item, f"link {link!r}: {key} is given twice")
            values[key] = ev(item.children[1])
    m = values.get("mass", 0.0)
    ix, iy, iz = (values.get(k, 0.0) for k in ("Ix", "Iy", "Iz"))
    ixy, ixz, iyz = (values.get(k, 0.0) for k in ("Ixy", "Ixz", "Iyz"))
    # tensor about the link-frame origin: products of inertia enter with a minus sign
    I_o = np.array([[ix, -ixy, -ixz], [-ixy, iy, -iyz], [-ixz, -iyz, iz]])
    # parallel-axis theorem: I_o = I_c + m (|c|^2 E - c c^T)
    I_c = I_o - m * (float(com @ com) * np.eye(3) - np.outer(com, com))
    problem = validation.mass_problem(m, com, I_o)    # the file's own tensor (parameters may rebind m)
    if problem:
        raise ev.error(node, f"link {link!r}: {problem}")
    return MassProperties(m, com, I_c)


def _read(text: str, file: str, parameters: dict | None, name: str | None) -> Mechanism:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    parser = _parser()
    try:
        tree = parser.parse(text)
    except UnexpectedToken as exc:
        expected = ", ".join(sorted(_describe(parser, t) for t in (exc.accepts or exc.expected))[:10])
        tok = exc.token
        what = "end of file" if tok.type == "$END" else repr(str(tok))
        raise ModelFileError(f"syntax error: unexpected {what}; expected one of: {expected}", file,
                             exc.line if exc.line != -1 else None,
                             exc.column if exc.column != -1 else None) from None
    except UnexpectedCharacters as exc:
        raise ModelFileError(f"syntax error: unexpected character {exc.char!r}", file, exc.line,
                             exc.column) from None
    except UnexpectedEOF as exc:
        raise ModelFileError("syntax error: the file ends too early (a missing '}'?)", file,
                             text.count("\n") + 1, None) from exc
    except UnexpectedInput as exc:  # pragma: no cover - other lark input errors
        raise ModelFileError(f"syntax error: {exc}", file, getattr(exc, "line", None),
                             getattr(exc, "column", None)) from None

    params = dict(parameters or {})
    for k, v in params.items():
        try:
            fv = float(v)
        except (TypeError, ValueError):
            raise ModelFileError(f"parameter {k!r}: value {v!r} is not a number", file) from None
        if not math.isfinite(fv):
            raise ModelFileError(f"parameter {k!r}: value {v!r} is not finite", file)
        if k in CONSTANTS:
            raise ModelFileError(f"parameter {k!r} would redefine a built-in constant", file)
        params[k] = fv
    ev = _Evaluator(file, params)
    robot_name = str(tree.children[0])
    links: dict[str, _Link] = {}
    joints: dict[str, tuple] = {}   # name -> (JointType, placement, node)
    lines = SourceLines()
    budget = limits.Budget()
    for node in tree.children[1:]:
        if node.data in ("base", "link"):
            problem = budget.add_bodies(1)
            if problem:
                raise limits.ReadLimitExceeded(problem, file, _pos(node)[0])
            lname = str(node.children[0])
            if lname in links:
                raise ev.error(node, f"link {lname!r} is defined twice")
            link = _Link(lname, node)
            lines.note("body", lname, _pos(node)[0])
            link.is_base = node.data == "base"
            items = node.children[1:]
            if items and not hasattr(items[0], "data"):   # the FLOATING token
                link.floating = True
                items = items[1:]
            for item in items:
                if item.data == "inertia":
                    link.mass = _inertia(ev, item, lname)
                elif item.data == "children":
                    for ch in item.children:
                        link.children.append((str(ch.children[0]), str(ch.children[1]), ch))
                elif item.data == "frames":
                    for fr in item.children:
                        fname = str(fr.children[0])
                        if fname in link.frames:
                            raise ev.error(fr, f"link {lname!r} has two frames named {fname!r}")
                        link.frames[fname] = _pose(ev, fr.children[1])
                        lines.note("frame", fname, _pos(fr)[0])
                elif item.data == "id_item":
                    ev(item.children[0])
            links[lname] = link
        elif node.data == "joint":
            kind, jname = str(node.children[0]), str(node.children[1])
            if jname in joints:
                raise ev.error(node, f"joint {jname!r} is defined twice")
            pose_node = node.children[2]
            jt = JointType.REVOLUTE if kind == "r_joint" else JointType.PRISMATIC
            joints[jname] = (jt, _pose(ev, pose_node), node)
            lines.note("joint", jname, _pos(node)[0])
    base = next(l for l in links.values() if l.is_base)
    # structure: every child link defined, one parent each, every joint defined and used once
    parent_of: dict[str, tuple] = {}
    joint_used: dict[str, str] = {}
    for link in links.values():
        for child, jname, node in link.children:
            if child not in links:
                raise ev.error(node, f"link {link.name!r}: child link {child!r} is not defined")
            if jname not in joints:
                raise ev.error(node, f"link {link.name!r}: joint {jname!r} is not defined")
            if child in parent_of:
                raise ev.error(node, f"link {child!r} has two parents ({parent_of[child][0]!r} and "
                                     f"{link.name!r})")
            if jname in joint_used:
                raise ev.error(node, f"joint {jname!r} is used twice (also by link {joint_used[jname]!r})")
            if child == base.name:
                raise ev.error(node, f"the robot base {child!r} cannot be a child")
            parent_of[child] = (link.name, jname)
            joint_used[jname] = link.name
    for lname, link in links.items():
        if not link.is_base and lname not in parent_of:
            raise ev.error(link.node, f"link {lname!r} is not a child of any link")
    for jname, (_, _, node) in joints.items():
        if jname not in joint_used:
            warnings.warn(f"{file}:{_pos(node)[0]}: joint {jname!r} is defined but joins no links",
                          UserWarning, stacklevel=3)
    # cycles (a link reachable only from itself)
    for lname in links:
        seen, cur = {lname}, lname
        while cur in parent_of:
            cur = parent_of[cur][0]
            if cur in seen:
                raise ev.error(links[lname].node, f"the links form a cycle through {lname!r}")
            seen.add(cur)
    unknown = set(params) - ev.used
    if unknown:
        warnings.warn(f"{file}: parameters {sorted(unknown)} are not used by the model", UserWarning,
                      stacklevel=3)

    ground = "world" if base.floating else base.name
    b = MechanismBuilder(name or robot_name, ground, source=file)
    b.metadata["format"] = "kindsl"
    b.metadata["parameters"] = {n: params.get(n, ev.defaults.get(n)) for n in sorted(ev.used)}
    specs = []
    if base.floating:
        specs.append(BodySpec(base.name, ground, Joint(f"{base.name}_floating", JointType.FLOATING),
                              base.frames, base.mass, (), None, {}))
    # bodies in the order links appear in their parents' children lists (depth first from the base)
    stack = [base.name]
    while stack:
        lname = stack.pop()
        for child, jname, _ in links[lname].children:
            jt, placement, jnode = joints[jname]
            link = links[child]
            try:
                joint = Joint(jname, jt, placement)
            except MechanismModelError as exc:
                raise ev.error(jnode, str(exc)) from None
            specs.append(BodySpec(child, lname, joint, link.frames, link.mass, (), None, {}))
        stack.extend(reversed([c for c, _, _ in links[lname].children]))
    try:
        for s in specs:
            b.add_body(s.name, s.parent, s.joint, s.frames, s.mass)
        m = b.build()
        if not base.floating and (base.frames or base.mass.mass):
            g = BodySpec(ground, None, None, base.frames, base.mass, (), None, {})
            m = build_mechanism(m.name, [g] + list(m.bodies[1:]), m.ground, m.source, m.metadata)
        validation.check_poses(m)
    except MechanismModelError as exc:
        raise lines.file_error(exc, file) from None
    return m


def _read_guarded(text: str, file: str, parameters: dict | None, name: str | None) -> Mechanism:
    try:
        return _read(text, file, parameters, name)
    except RecursionError:
        raise ModelFileError("the file nests expressions too deeply", file) from None


def load_kindsl(path, parameters: dict | None = None, name: str | None = None) -> Mechanism:
    """Load a RobCoGen KinDSL robot model; ``parameters`` binds the model's named parameters (SI units)."""
    path = os.fspath(path)
    data = read_limited(path, MAX_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} (KinDSL files are UTF-8)", path,
                             data[:exc.start].count(b"\n") + 1) from None
    return _read_guarded(text, path, parameters, name)


def loads_kindsl(text: str, parameters: dict | None = None, name: str = "<string>") -> Mechanism:
    """:func:`load_kindsl` for KinDSL text; ``name`` is used in error messages."""
    if len(text) > MAX_BYTES:
        raise ModelFileError(f"text longer than {MAX_BYTES} characters", name)
    return _read_guarded(text, name, parameters, None)
