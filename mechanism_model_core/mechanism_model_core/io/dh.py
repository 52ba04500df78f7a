"""Denavit-Hartenberg (Craig and Paul) and zero-position (DARTS) parameters (CLARAty 6.11, Appendix B).

Craig's (modified) convention, row i describes joint i relative to frame i-1::

    T_{i-1,i} = Rx(alpha_{i-1}) Tx(a_{i-1}) Tz(d_i) Rz(theta_i)

Paul's (standard) convention, row i describes frame i relative to frame i-1, the joint turning first::

    T_{i-1,i} = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)

In the mechanism's terms a revolute joint turns about its joint frame's z axis. For Craig the body frame is
frame i. For Paul the joint frame is frame i-1 turned by theta, and frame i (``Tz(d) Tx(a) Rx(alpha)`` from
the body frame) becomes the named frame ``<body>_dh`` that the next body is placed at.

The column names in files follow CLARAty: ``length`` = a, ``twist`` = alpha, ``offset`` = d,
``angle`` = theta (the constant part; the joint value is added to it for revolute joints, to d for
prismatic ones).

Zero position (DARTS style): all frames are aligned at zero; each body gives ``body_to_joint`` (from its own
body origin to its joint) and ``parent_to_joint`` (from its parent's body origin to the joint) and the joint
axis. The mechanism puts each body frame at its joint, so the joint placement is the translation
``parent_to_joint - body_to_joint(parent)``.

A ``.dh`` text table (see :func:`load_dh_table`) is a plain file format for D-H chains.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..errors import ExpressionError, MechanismModelError, ModelFileError, SourceLines
from ..joints import Joint, JointType
from ..spatial import rot_x, rot_z, translation
from ..expressions import evaluate
from . import limits, validation
from .safe_xml import read_limited
from ..builder import MechanismBuilder


def craig_placement(a: float, alpha: float, d: float, theta: float) -> np.ndarray:
    """Joint placement ``Rx(alpha) Tx(a) Tz(d) Rz(theta)`` of Craig's row (a, alpha of the previous link)."""
    return rot_x(alpha) @ translation(a, 0, 0) @ translation(0, 0, d) @ rot_z(theta)


def paul_distal(a: float, alpha: float, d: float) -> np.ndarray:
    """``Tz(d) Tx(a) Rx(alpha)``: Paul's frame i in the body frame (the joint frame turned by theta)."""
    return translation(0, 0, d) @ translation(a, 0, 0) @ rot_x(alpha)


def craig_matrix(a, alpha, d, theta) -> np.ndarray:
    """Textbook ``T_{i-1,i}`` for Craig's parameters (reference formula, used by tests and docs)."""
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([[ct, -st, 0, a],
                     [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d],
                     [0, 0, 0, 1.0]])


def paul_matrix(a, alpha, d, theta) -> np.ndarray:
    """Textbook ``T_{i-1,i}`` for Paul's parameters."""
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0, sa, ca, d],
                     [0, 0, 0, 1.0]])


def build_dh_chain(builder, rows, convention: str, joints=None, parent: str | None = None,
                   tool_name: str = "tool") -> None:
    """Add a serial chain to ``builder`` from D-H ``rows``.

    ``rows``: dicts with ``name`` (body), ``a``, ``alpha``, ``d``, ``theta`` and optionally ``type``
    (revolute / prismatic), ``lower``, ``upper``. ``joints``: optional list of :class:`Joint` (name, type,
    limits, offset ...) matched to rows by position; their placement and axis are set here.
    For Paul's convention the last frame n is added as named frame ``tool_name``; for Craig's, frame n is
    the last body frame, and ``tool_name`` is added there as an identity frame.
    """
    convention = convention.lower()
    if convention not in ("craig", "paul"):
        raise ValueError(f"unknown D-H convention {convention!r} (craig or paul)")
    prev_body = parent
    prev_distal = np.eye(4)
    for k, row in enumerate(rows):
        jt = JointType.parse(row.get("type", "revolute"))
        body = row.get("name") or f"link{k + 1}"
        a, alpha, d, theta = (float(row.get(x, 0.0)) for x in ("a", "alpha", "d", "theta"))
        if convention == "craig":
            if jt is JointType.PRISMATIC:
                placement = rot_x(alpha) @ translation(a, 0, 0) @ rot_z(theta) @ translation(0, 0, d)
            else:
                placement = craig_placement(a, alpha, d, theta)
            distal = np.eye(4)
        else:
            if jt is JointType.PRISMATIC:
                placement = prev_distal @ rot_z(theta) @ translation(0, 0, d)
                distal = paul_distal(a, alpha, 0.0)
            else:
                placement = prev_distal @ rot_z(theta)
                distal = paul_distal(a, alpha, d)
        if joints is not None and k < len(joints) and joints[k] is not None:
            j = joints[k]
            joint = j.with_(placement=placement, axis=(0, 0, 1))
        else:
            lower = row.get("lower", -math.inf)
            upper = row.get("upper", math.inf)
            jname = row.get("joint") or f"joint{k + 1}"
            joint = Joint(jname, jt, placement, lower=(lower,), upper=(upper,))
        builder.add_body(body, parent=prev_body, joint=joint)
        if convention == "paul":
            builder.add_frame(body, f"{body}_dh", distal, kind="dh")
        prev_body = body
        prev_distal = distal
    if tool_name and prev_body is not None:
        builder.add_frame(prev_body, tool_name, prev_distal if convention == "paul" else np.eye(4),
                          kind="tool")


def zero_position_placement(parent_to_joint, parent_body_to_joint) -> np.ndarray:
    """Joint placement in the parent's body frame (which sits at the parent's own joint)."""
    return translation(*(np.asarray(parent_to_joint, float) - np.asarray(parent_body_to_joint, float)))


def load_dh_table(path, name: str | None = None, problems: list | None = None):
    """Load a ``.dh`` text table into a Mechanism.

    Format (``#`` starts a comment; values may be expressions such as ``M_PI/2``)::

        convention craig            # or paul
        name  mechanism_name        # optional
        # body  joint  type      a     alpha   d     theta  [lower upper]
        link1   j1     revolute  0     0       0     0      -M_PI  M_PI
        link2   j2     revolute  0    -M_PI/2  0     0

    Errors name the file and line. With a list as ``problems`` (check mode) every bad row is appended to it
    and reading goes on; the mechanism is then built from the good rows.
    """
    path = os.fspath(path)
    convention = None
    rows = []
    lines = SourceLines()
    mech_name = name or os.path.splitext(os.path.basename(path))[0]
    budget = limits.Budget()
    try:
        text = read_limited(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = read_limited(path)[:exc.start].count(b"\n") + 1
        raise ModelFileError("not UTF-8 text (a D-H table is a text file)", path, line) from None

    def row_of(lineno, raw):
        nonlocal convention, mech_name
        line = raw.split("#", 1)[0].strip()
        if not line:
            return
        parts = line.split()
        key = parts[0].lower()
        if key == "convention":
            if len(parts) != 2 or parts[1].lower() not in ("craig", "paul"):
                raise ModelFileError("expected 'convention craig' or 'convention paul'", path, lineno)
            convention = parts[1].lower()
            return
        if key == "name":
            if len(parts) != 2:
                raise ModelFileError("expected 'name <mechanism name>'", path, lineno)
            mech_name = name or parts[1]
            return
        if len(parts) not in (7, 9):
            raise ModelFileError(f"a D-H row has 7 or 9 columns (body joint type a alpha d theta "
                                 f"[lower upper]), found {len(parts)}", path, lineno)
        try:
            jt = JointType.parse(parts[2])
            if jt not in (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC):
                raise ValueError(f"D-H rows take revolute, continuous or prismatic joints, not {parts[2]!r}")
            vals = [evaluate(v) for v in parts[3:]]
        except (ValueError, ExpressionError) as exc:
            raise ModelFileError(str(exc), path, lineno) from None
        row = {"name": parts[0], "joint": parts[1], "type": jt.value,
               "a": vals[0], "alpha": vals[1], "d": vals[2], "theta": vals[3]}
        if len(vals) == 6:
            row["lower"], row["upper"] = validation.position_limit(vals[4]), validation.position_limit(vals[5])
        problem = budget.add_bodies(1)
        if problem:
            raise limits.ReadLimitExceeded(problem, path, lineno)
        rows.append(row)
        lines.note("body", parts[0], lineno)
        lines.note("joint", parts[1], lineno)

    for lineno, raw in enumerate(text.splitlines(), 1):
        try:
            row_of(lineno, raw)
        except ModelFileError as exc:
            if problems is None or isinstance(exc, limits.ReadLimitExceeded):
                raise
            problems.append(exc)        # check mode: note it, read on
    if convention is None:
        raise ModelFileError("missing 'convention craig|paul' line", path)
    if not rows:
        raise ModelFileError("no D-H rows", path)
    b = MechanismBuilder(mech_name, source=path)
    try:
        build_dh_chain(b, rows, convention)
        m = b.build()
        validation.check_poses(m)
    except MechanismModelError as exc:
        raise lines.file_error(exc, path) from None
    return m


def dh_table_problems(path):
    """``(problems, mechanism or None)``: every problem of a ``.dh`` table as :class:`ModelFileError` s
    (empty when it loads)."""
    problems: list = []
    m = None
    try:
        m = load_dh_table(path, problems=problems)
    except ModelFileError as exc:
        problems.append(exc)
    return problems, (None if problems else m)
