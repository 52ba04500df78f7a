"""Joint types and the constant data of one joint.

A joint connects a body to its parent (CLARAty 4.13, 4.16). It stores only constants:

* ``placement`` -- ``T_parent_joint``, the joint frame in the parent *body* frame (4x4);
* ``axis`` -- unit axis in the joint frame (+z by default) for revolute, continuous and prismatic joints;
* limits, offset, home, actuation, stiffness and an optional coupling expression.

The body frame coincides with the joint frame at zero articulation, so
``T_parent_body(q) = joint.transform(q)`` (the placement, then the motion). ``offset`` shifts the zero of the articulation:
a revolute joint turns by ``q + offset`` radians, a prismatic joint slides by ``q + offset`` metres.

Multi-DOF joints use minimal coordinates, in this order:

===========  ======================================  =============================================
type         coordinates                              motion ``T_joint_body``
===========  ======================================  =============================================
ball         roll, pitch, yaw (rad)                   ``Rz(yaw) Ry(pitch) Rx(roll)`` (URDF rpy)
planar       x, y (m), theta (rad)                    ``Trans(x, y, 0) Rz(theta)``
floating     x, y, z (m), roll, pitch, yaw (rad)      ``Trans(x, y, z) Rz(yaw) Ry(pitch) Rx(roll)``
===========  ======================================  =============================================

A coordinate of a single-DOF joint is named after the joint; those of a multi-DOF joint are named
``<joint>.<coordinate>`` (``chassis.yaw``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from enum import Enum

import numpy as np

from .errors import ModelStructureError
from . import spatial


class JointType(str, Enum):
    FIXED = "fixed"
    REVOLUTE = "revolute"
    CONTINUOUS = "continuous"
    PRISMATIC = "prismatic"
    BALL = "ball"
    PLANAR = "planar"
    FLOATING = "floating"

    @property
    def dof(self) -> int:
        return _DOF[self]

    @classmethod
    def parse(cls, text: str) -> "JointType":
        key = text.strip().lower()
        key = _ALIASES.get(key, key)
        try:
            return cls(key)
        except ValueError:
            raise ValueError(f"unknown joint type {text!r}; known: "
                             f"{', '.join(t.value for t in cls)}") from None


_DOF = {JointType.FIXED: 0, JointType.REVOLUTE: 1, JointType.CONTINUOUS: 1, JointType.PRISMATIC: 1,
        JointType.BALL: 3, JointType.PLANAR: 3, JointType.FLOATING: 6}
_ALIASES = {"general": "floating", "free": "floating", "spherical": "ball", "rotational": "revolute",
            "translational": "prismatic", "rigid": "fixed"}

COORDINATE_NAMES = {
    JointType.BALL: ("roll", "pitch", "yaw"),
    JointType.PLANAR: ("x", "y", "theta"),
    JointType.FLOATING: ("x", "y", "z", "roll", "pitch", "yaw"),
}

_X, _Y, _Z = np.eye(3)
#: Elementary motions of each joint type: (kind, axis in the frame reached so far, coordinate index).
#: kind "R" rotates about the axis, "P" slides along it; they are applied left to right.
ELEMENTARY_MOTIONS = {
    JointType.BALL: (("R", _Z, 2), ("R", _Y, 1), ("R", _X, 0)),
    JointType.PLANAR: (("P", _X, 0), ("P", _Y, 1), ("R", _Z, 2)),
    JointType.FLOATING: (("P", _X, 0), ("P", _Y, 1), ("P", _Z, 2), ("R", _Z, 5), ("R", _Y, 4),
                         ("R", _X, 3)),
}


def _readonly(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Joint:
    """Constant description of one joint. Build with the class methods or :func:`dataclasses.replace`.

    Units: radians for revolute coordinates, metres for prismatic ones; ``velocity`` in rad/s or m/s;
    ``effort`` in N m or N. ``lower``/``upper``/``home`` hold one value per coordinate.
    ``stiffness`` is ``(kx, ky, kz, tx, ty, tz)`` (N/m and N m/rad) or ``None``.
    ``coupling`` is an expression of other joints' coordinates (``"2*joint1"``) that fixes this joint's
    value; such a joint is *dependent* and is filled in when only independent joints are given.
    """

    name: str
    type: JointType = JointType.FIXED
    placement: np.ndarray = field(default_factory=lambda: _readonly(np.eye(4)))
    axis: np.ndarray = field(default_factory=lambda: _readonly((0.0, 0.0, 1.0)))
    lower: tuple = ()
    upper: tuple = ()
    velocity: float = math.inf
    effort: float = math.inf
    offset: float = 0.0
    home: tuple = ()
    actuated: bool = True
    stiffness: tuple | None = None
    coupling: str | None = None

    def __post_init__(self):
        subject = ("joint", self.name)     # what a ModelStructureError is about, for the file's line
        t = JointType.parse(self.type) if not isinstance(self.type, JointType) else self.type
        object.__setattr__(self, "type", t)
        P = np.array(self.placement, dtype=float)
        if P.shape != (4, 4) or not np.all(np.isfinite(P)):
            raise ModelStructureError(f"joint {self.name!r}: placement must be a finite 4x4 transform",
                                      subject)
        object.__setattr__(self, "placement", _readonly(P))
        axis = np.array(self.axis, dtype=float).reshape(-1)
        n = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
        if not math.isfinite(n) or n < 1e-9:
            raise ModelStructureError(f"joint {self.name!r}: axis {tuple(float(a) for a in axis)} is not a "
                                      f"usable direction" + (" (zero length)" if n == 0.0 else ""), subject)
        object.__setattr__(self, "axis", _readonly(axis / n))
        dof = t.dof
        lower = _per_coordinate(self.lower, dof, -math.inf, self.name, "lower limit")
        upper = _per_coordinate(self.upper, dof, math.inf, self.name, "upper limit")
        if t is JointType.CONTINUOUS:
            lower, upper = (-math.inf,), (math.inf,)
        if t is JointType.BALL:  # no rotation limits by default; keep what was given
            pass
        for lo, hi in zip(lower, upper):
            if lo > hi:
                raise ModelStructureError(f"joint {self.name!r}: lower limit {lo} above upper limit {hi}",
                                          subject)
        home = _per_coordinate(self.home, dof, 0.0, self.name, "home")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "home", home)
        if self.stiffness is not None:
            s = tuple(float(v) for v in self.stiffness)
            s = s + (0.0,) * (6 - len(s)) if len(s) <= 6 else s
            if len(s) != 6:
                raise ModelStructureError(f"joint {self.name!r}: stiffness takes up to 6 values", subject)
            if any(math.isnan(v) or v < 0 for v in s):
                raise ModelStructureError(f"joint {self.name!r}: stiffness values must be >= 0 (0 or inf: "
                                          f"rigid), got {s}", subject)
            object.__setattr__(self, "stiffness", s)
        if self.coupling is not None and dof != 1:
            raise ModelStructureError(f"joint {self.name!r}: only single-DOF joints can be coupled", subject)

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def fixed(cls, name: str, placement=None) -> "Joint":
        return cls(name, JointType.FIXED, _eye_if_none(placement))

    @classmethod
    def revolute(cls, name: str, placement=None, axis=(0, 0, 1), lower=-math.inf, upper=math.inf,
                 **kw) -> "Joint":
        return cls(name, JointType.REVOLUTE, _eye_if_none(placement), axis, (lower,), (upper,), **kw)

    @classmethod
    def continuous(cls, name: str, placement=None, axis=(0, 0, 1), **kw) -> "Joint":
        return cls(name, JointType.CONTINUOUS, _eye_if_none(placement), axis, **kw)

    @classmethod
    def prismatic(cls, name: str, placement=None, axis=(0, 0, 1), lower=-math.inf, upper=math.inf,
                  **kw) -> "Joint":
        return cls(name, JointType.PRISMATIC, _eye_if_none(placement), axis, (lower,), (upper,), **kw)

    @classmethod
    def ball(cls, name: str, placement=None, **kw) -> "Joint":
        return cls(name, JointType.BALL, _eye_if_none(placement), **kw)

    @classmethod
    def planar(cls, name: str, placement=None, **kw) -> "Joint":
        return cls(name, JointType.PLANAR, _eye_if_none(placement), **kw)

    @classmethod
    def floating(cls, name: str, placement=None, **kw) -> "Joint":
        return cls(name, JointType.FLOATING, _eye_if_none(placement), **kw)

    def with_(self, **changes) -> "Joint":
        """A copy with some fields changed (the joint itself never changes)."""
        return replace(self, **changes)

    # ------------------------------------------------------------------ queries
    @property
    def dof(self) -> int:
        return self.type.dof

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        if self.dof == 0:
            return ()
        if self.dof == 1:
            return (self.name,)
        return tuple(f"{self.name}.{c}" for c in COORDINATE_NAMES[self.type])

    @property
    def is_prismatic_coordinate(self) -> tuple[bool, ...]:
        """Per coordinate: True when it is a length (metres), False for an angle."""
        return tuple(kind == "P" for kind, _, _ in sorted(self.elementary_motions(), key=lambda m: m[2]))

    def elementary_motions(self):
        """The joint's motion as single-axis steps ``(kind, unit axis, coordinate index)``."""
        if self.dof == 0:
            return ()
        if self.dof == 1:
            kind = "P" if self.type is JointType.PRISMATIC else "R"
            return ((kind, self.axis, 0),)
        return ELEMENTARY_MOTIONS[self.type]

    def transform(self, q) -> np.ndarray:
        """``T_parent_body`` for this joint's coordinates ``q`` (sequence of length ``dof``): the placement,
        then each single-axis step of :meth:`elementary_motions` (rotation about / translation along its
        axis by the coordinate, plus ``offset`` for a one-DOF joint). The definition the compiled kinematics
        (:mod:`.kinematics`) is tested against; it is not on any fast path."""
        q = np.atleast_1d(np.asarray(q, dtype=float))
        T = np.array(self.placement, dtype=float)
        for kind, axis, i in self.elementary_motions():
            v = q[i] + (self.offset if self.dof == 1 else 0.0)
            step = np.eye(4)
            if kind == "R":
                step[:3, :3] = spatial.axis_angle_matrix(axis, v)
            else:
                step[:3, 3] = np.asarray(axis) * v
            T = T @ step
        return T


def _eye_if_none(T):
    return np.eye(4) if T is None else T


def _per_coordinate(values, dof, default, name, what) -> tuple:
    if values is None or (isinstance(values, tuple) and len(values) == 0):
        return (float(default),) * dof
    vals = np.atleast_1d(np.asarray(values, dtype=float)).tolist()
    if len(vals) == 1 and dof > 1:
        vals = vals * dof
    if len(vals) != dof:
        raise ModelStructureError(f"joint {name!r}: {what} needs {dof} value(s), got {len(vals)}",
                                  ("joint", name))
    if any(math.isnan(v) for v in vals):
        raise ModelStructureError(f"joint {name!r}: {what} is NaN", ("joint", name))
    return tuple(float(v) for v in vals)
