"""The constraint file (CLARAty 8.8): a small XML file of IK constraints, read into the constraint objects of
:mod:`mechanism_model_core.constraints`. Format: see :func:`load_constraints`."""

from __future__ import annotations

import os

from ..constraints.base import Constraint
from ..constraints.cartesian import LoopClosure, OrientationConstraint, PoseConstraint, PositionConstraint
from ..constraints.contact import ContactConstraint
from ..constraints.joint import JointCoupling, JointLock, JointTarget, Posture
from ..constraints.pointing import PointAtConstraint
from ..errors import ExpressionError, InvalidConfiguration, MechanismModelError, ModelFileError
from ..model import Mechanism
from .claraty_xml import parse_transform
from ..expressions import CONSTANTS, FUNCTIONS, evaluate, parse_expression
from .safe_xml import parse_file

__all__ = ["MAX_CONSTRAINT_FILE_BYTES", "load_constraints"]

MAX_CONSTRAINT_FILE_BYTES = 1024 * 1024

_FILE_DOC = """
Constraint file format (XML, parsed safely: no entities, no network, size-limited)::

    <Constraints>
      <Pose frame="tool" relative_to="base" priority="0" weight="1" mask="1 1 1 1 1 0">
        <Transform><Position x="0.4" y="0" z="0.3"/><Rotation type="EULER_XYZ" angle1="M_PI" angle2="0"
                   angle3="0"/></Transform>
      </Pose>
      <Position frame="tool" xyz="0.4 0 0.3"/>
      <Orientation frame="tool"><Transform>...</Transform></Orientation>
      <PointAt frame="camera" axis="0 0 1" point="3 0 0"/>
      <Contact frame="foot" surface="ground" normal_axis="2" opposed="false"/>
      <Coupling joint="right" expr="-left"/>
      <LoopClosure frame_a="a_tip" frame_b="b_tip" mask="1 1 1 0 0 0"/>
      <JointTarget joint="j1" value="0.3"/>
      <Lock joints="j1 j2" values="0 0.5"/>
      <Posture weight="0.01" q="0 0 0 0 0 0"/>
    </Constraints>

Numbers may be expressions of the safe evaluator (``M_PI/2``). Every error names the file and line.
"""


def load_constraints(path, mechanism: Mechanism | None = None) -> list[Constraint]:
    """Read constraints from an XML file (format below).

    Raises :class:`ModelFileError` with the file and line for malformed files, unknown elements or bad
    values; with ``mechanism`` given, also for frame and joint names it does not have (otherwise those are
    checked when the constraints are solved)."""
    path = os.fspath(path)
    root = parse_file(path, limit=MAX_CONSTRAINT_FILE_BYTES)
    if root.tag != "Constraints":
        raise ModelFileError(f"root element is <{root.tag}>, expected <Constraints>", path, root.sourceline)

    def err(el, msg):
        return ModelFileError(msg, path, el.sourceline)

    def numbers(el, attr, n=None, required=True):
        text = el.get(attr)
        if text is None:
            if required:
                raise err(el, f"<{el.tag}> needs attribute {attr!r}")
            return None
        try:
            vals = [evaluate(p) for p in text.replace(",", " ").split()]
        except ExpressionError as exc:
            raise err(el, f"<{el.tag} {attr}=...>: {exc}") from None
        if n is not None and len(vals) != n:
            raise err(el, f"<{el.tag} {attr}=...> needs {n} numbers, got {len(vals)}")
        return vals

    def transform(el):
        t = el.find("Transform")
        if t is None:
            raise err(el, f"<{el.tag}> needs a <Transform>")
        try:
            return parse_transform(t, path)
        except ModelFileError:
            raise
        except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
            bad = next((c for c in t if isinstance(c.tag, str)), t)
            raise err(bad, f"malformed <{bad.tag}> in <{el.tag}>'s <Transform> ({type(exc).__name__}: {exc})") \
                from None

    def required(el, attr):
        v = el.get(attr)
        if v is None:
            raise err(el, f"<{el.tag}> needs attribute {attr!r}")
        return v

    allowed = {
        "Pose": {"frame", "relative_to", "mask", "mask_frame"},
        "Position": {"frame", "relative_to", "mask", "xyz"},
        "Orientation": {"frame", "relative_to", "mask", "mask_frame"},
        "PointAt": {"frame", "relative_to", "axis", "point"},
        "Contact": {"frame", "relative_to", "surface", "normal_axis", "opposed"},
        "Coupling": {"joint", "expr", "coefficients", "b"},
        "LoopClosure": {"frame_a", "frame_b", "mask", "mask_frame"},
        "JointTarget": {"joint", "value"},
        "Lock": {"joints", "values"},
        "Posture": {"q"},
    }
    out: list[Constraint] = []
    for el in root:
        if not isinstance(el.tag, str):
            continue
        if el.tag not in allowed:
            raise err(el, f"unknown constraint <{el.tag}> (known: {', '.join(allowed)})")
        extra = set(el.attrib) - allowed[el.tag] - {"weight", "priority", "name"}
        if extra:
            raise err(el, f"<{el.tag}> does not take attribute(s) {sorted(extra)}")
        takes = {"Transform"} if el.tag in ("Pose", "Orientation", "Contact") else set()
        for child in el:
            if isinstance(child.tag, str) and child.tag not in takes:
                raise err(child, f"<{el.tag}> does not take a <{child.tag}> element"
                                 + (" (only <Transform>)" if takes else ""))
        for text in [el.text] + [child.tail for child in el]:
            if text and text.strip():
                raise err(el, f"<{el.tag}> does not take text content ({text.strip()[:40]!r})")
        common = {"name": el.get("name")}
        try:
            if el.get("weight") is not None:
                common["weight"] = numbers(el, "weight", 1)[0]
                if not common["weight"] >= 0:
                    raise err(el, "weight must be >= 0")
            if el.get("priority") is not None:
                common["priority"] = int(el.get("priority"))
        except ValueError:
            raise err(el, f"priority must be an integer, got {el.get('priority')!r}") from None
        t = el.tag
        try:
            if t == "Pose":
                c = PoseConstraint(required(el, "frame"), transform(el), el.get("relative_to"),
                                   numbers(el, "mask", 6, False), el.get("mask_frame", "reference"), **common)
            elif t == "Position":
                c = PositionConstraint(required(el, "frame"), numbers(el, "xyz", 3), el.get("relative_to"),
                                       numbers(el, "mask", 3, False), **common)
            elif t == "Orientation":
                c = OrientationConstraint(required(el, "frame"), transform(el)[:3, :3], el.get("relative_to"),
                                          numbers(el, "mask", 3, False), el.get("mask_frame", "reference"),
                                          **common)
            elif t == "PointAt":
                c = PointAtConstraint(required(el, "frame"), numbers(el, "point", 3),
                                      numbers(el, "axis", 3, False) or (0, 0, 1), el.get("relative_to"),
                                      **common)
            elif t == "Contact":
                surface = el.get("surface")
                if surface is None:
                    surface = transform(el)
                axis = 2
                if el.get("normal_axis") is not None:
                    v = numbers(el, "normal_axis", 1)[0]
                    if v not in (0, 1, 2):
                        raise err(el, f"normal_axis must be 0, 1 or 2 (x, y, z), got {el.get('normal_axis')!r}")
                    axis = int(v)
                opposed = el.get("opposed", "false").lower()
                if opposed not in ("true", "false"):
                    raise err(el, "opposed must be 'true' or 'false'")
                c = ContactConstraint(required(el, "frame"), surface, axis, opposed == "true",
                                      el.get("relative_to"), **common)
            elif t == "Coupling":
                if el.get("expr") is not None:
                    relation = el.get("expr")
                    parse_expression(relation, _names_in(relation))   # syntax check with the line number
                else:
                    names = required(el, "coefficients").split()
                    if len(names) % 2:
                        raise err(el, "coefficients must be pairs 'joint value ...'")
                    coeffs = {names[i]: evaluate(names[i + 1]) for i in range(0, len(names), 2)}
                    relation = (coeffs, numbers(el, "b", 1, False)[0] if el.get("b") else 0.0)
                c = JointCoupling(required(el, "joint"), relation, **common)
            elif t == "LoopClosure":
                c = LoopClosure(required(el, "frame_a"), required(el, "frame_b"), numbers(el, "mask", 6, False),
                                el.get("mask_frame", "reference"), **common)
            elif t == "JointTarget":
                c = JointTarget(required(el, "joint"), numbers(el, "value", 1)[0], **common)
            elif t == "Lock":
                joints = required(el, "joints").split()
                vals = numbers(el, "values", len(joints), False)
                c = JointLock(joints, vals, **common)
            else:
                c = Posture(numbers(el, "q", None, False), **common)
        except (ExpressionError, InvalidConfiguration) as exc:
            raise err(el, str(exc)) from None
        if mechanism is not None:
            try:
                c.check(mechanism)
            except MechanismModelError as exc:
                raise err(el, str(exc)) from None
        out.append(c)
    return out


def _names_in(text: str) -> list[str]:
    import ast

    try:
        return [n.id for n in ast.walk(ast.parse(text, mode="eval"))
                if isinstance(n, ast.Name) and n.id not in CONSTANTS and n.id not in FUNCTIONS]
    except SyntaxError:
        return []


load_constraints.__doc__ += _FILE_DOC
