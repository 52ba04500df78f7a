"""Joint-space constraints: couplings, targets, locks and the posture (a rest configuration).

Each binds to a mechanism (:meth:`~.base.Constraint.bind`) as a new immutable object holding the coordinate
indices it reads; the constraint itself keeps only what it was built with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from ..errors import ExpressionError, InvalidConfiguration, UnknownJoint
from ..expressions import parse_expression
from ..model import Mechanism, as_real_array
from .base import BoundConstraint, Constraint, _Common, _frozen_array, _set


def _joint_index(mechanism: Mechanism, name: str) -> int:
    try:
        return mechanism.coordinate_index(name)
    except UnknownJoint:
        raise UnknownJoint(name, list(mechanism.coordinate_names)) from None


def _joint_row(nq: int, i: int) -> np.ndarray:
    J = np.zeros((1, nq))
    J[0, i] = 1.0
    return J


# ---------------------------------------------------------------------------------------------- coupling
@dataclass(frozen=True, eq=False)
class JointCoupling(_Common, Constraint):
    """``joint == f(other coordinates)`` (CLARAty 4.17.1): ``expression`` is an expression text read by the
    safe evaluator (``"2*joint1"``, ``"atan2(sin(a), cos(a)) - b"``) or a linear form ``(coefficients, b)``
    with ``coefficients`` a ``{coordinate: a}`` mapping or a vector over all coordinates. Residual: ``q[joint] - f(q)`` (rad or m)."""

    joint: str
    expression: object
    dimension: ClassVar[int] = 1
    kind: ClassVar[str] = "joint"

    def bind(self, mechanism) -> "BoundJointCoupling":
        i = _joint_index(mechanism, self.joint)
        others = [c for c in mechanism.coordinate_names if c != self.joint]
        if isinstance(self.expression, str):
            try:
                expr = parse_expression(self.expression, others)
            except ExpressionError as exc:
                raise ExpressionError(f"JointCoupling({self.joint!r}): {exc}") from None
            variables = tuple((v, mechanism.coordinate_index(v)) for v in sorted(expr.variables))
            return BoundJointCoupling(self, i, expr, variables, None)
        try:
            coeffs, b = self.expression
            if not isinstance(coeffs, Mapping):        # a vector over all coordinates
                vec = np.asarray(coeffs, dtype=float).reshape(-1)
                if vec.shape != (mechanism.nq,):
                    raise ValueError
                coeffs = {n: a for n, a in zip(mechanism.coordinate_names, vec.tolist()) if a != 0.0}
            coeffs = dict(coeffs)
        except (TypeError, ValueError):
            raise InvalidConfiguration(f"JointCoupling({self.joint!r}): expression must be a text "
                                       f"or (coefficients mapping, b)") from None
        idx = np.array([_joint_index(mechanism, c) for c in coeffs], dtype=int)
        idx.setflags(write=False)
        linear = (idx, _frozen_array([float(a) for a in coeffs.values()]), float(b))
        return BoundJointCoupling(self, i, None, (), linear)

    def errors(self, r):
        return math.nan, abs(float(r[0]))


@dataclass(frozen=True, eq=False)
class BoundJointCoupling(BoundConstraint):
    """:class:`JointCoupling` on one mechanism: coordinate ``index`` of the joint and either ``expr`` with
    ``variables`` ((name, index) pairs) or ``linear`` = (indices, coefficients, offset)."""

    constraint: JointCoupling
    index: int
    expr: object
    variables: tuple
    linear: tuple | None
    dimension: ClassVar[int] = 1

    @property
    def coordinates_read(self) -> tuple:
        read = [i for _, i in self.variables] if self.linear is None else self.linear[0].tolist()
        return (self.index, *read)

    def evaluate(self, ev, jac=True):
        q = ev.q
        J = _joint_row(q.shape[0], self.index)
        if self.linear is not None:
            idx, a, b = self.linear
            f = float(a @ q[idx]) + b
            np.subtract.at(J[0], idx, a)
        else:
            env = {v: float(q[i]) for v, i in self.variables}
            f = float(self.expr(env))
            where = dict(self.variables)
            for v, g in self.expr.gradient(env).items():
                J[0, where[v]] -= g
        return np.array([q[self.index] - f]), J


# ---------------------------------------------------------------------------------------------- target
@dataclass(frozen=True, eq=False)
class JointTarget(_Common, Constraint):
    """Coordinate ``joint`` at ``value`` (rad or m): MSim's joint target. Residual ``q[joint] - value``."""

    joint: str
    value: float
    dimension: ClassVar[int] = 1
    kind: ClassVar[str] = "joint"

    def bind(self, mechanism) -> "BoundJointTarget":
        return BoundJointTarget(self, _joint_index(mechanism, self.joint), float(self.value))

    def errors(self, r):
        return math.nan, abs(float(r[0]))


@dataclass(frozen=True, eq=False)
class BoundJointTarget(BoundConstraint):
    """:class:`JointTarget` on one mechanism: coordinate ``index`` held at ``value``."""

    constraint: JointTarget
    index: int
    value: float
    dimension: ClassVar[int] = 1

    @property
    def coordinates_read(self) -> tuple:
        return (self.index,)

    def evaluate(self, ev, jac=True):
        return np.array([ev.q[self.index] - self.value]), _joint_row(ev.q.shape[0], self.index)


# ---------------------------------------------------------------------------------------------- lock
@dataclass(frozen=True, eq=False)
class JointLock(_Common, Constraint):
    """Hold ``joints`` (coordinate or joint names) exactly: at ``values`` if given (a mapping or a
    sequence in the order of ``joints``), else where the initial configuration has them. Locked coordinates
    are removed from the unknowns, so a lock can never be disturbed by any target (MSim: lock > target)."""

    joints: Sequence[str]
    values: object = None
    kind: ClassVar[str] = "lock"
    dimension: ClassVar[int] = 0

    def __post_init__(self):
        _set(self, "joints", (self.joints,) if isinstance(self.joints, str) else tuple(self.joints))

    def coordinates(self, mechanism: Mechanism) -> list[int]:
        out = []
        for j in self.joints:
            if j in mechanism.coordinate_names:
                out.append(mechanism.coordinate_index(j))
            else:
                sl = mechanism.joint_slice(j)
                out.extend(range(sl.start, sl.stop))
        return out

    def lock_values(self, mechanism: Mechanism) -> dict[int, float]:
        if self.values is None:
            return {}
        idx = self.coordinates(mechanism)
        if isinstance(self.values, Mapping):
            return {mechanism.coordinate_index(k): float(v) for k, v in self.values.items()}
        vals = np.atleast_1d(as_real_array(self.values, "values"))
        if vals.shape != (len(idx),):
            raise InvalidConfiguration(f"JointLock: {len(idx)} values expected, got {vals.shape[0]}")
        return dict(zip(idx, vals.tolist()))

    def bind(self, mechanism):
        self.coordinates(mechanism)
        return self

    def evaluate(self, ev, jac=True):
        return np.zeros(0), np.zeros((0, ev.q.shape[0]))


# ---------------------------------------------------------------------------------------------- posture
@dataclass(frozen=True, eq=False)
class Posture(_Common, Constraint):
    """A rest configuration ``q_rest`` (full or independent coordinates, or a mapping; the home
    configuration when None) pulling the free joints at ``weight``: always the lowest priority, it only
    breaks ties in the null space of every other constraint and never decides success."""

    q_rest: object = None
    kind: ClassVar[str] = "posture"

    def bind(self, mechanism) -> "BoundPosture":
        return BoundPosture(self, _frozen_array(mechanism.configuration(self.q_rest)))

    def errors(self, r):
        return math.nan, float(np.linalg.norm(r))


@dataclass(frozen=True, eq=False)
class BoundPosture(BoundConstraint):
    """:class:`Posture` on one mechanism: ``q`` the full rest configuration."""

    constraint: Posture
    q: np.ndarray

    @property
    def dimension(self):
        return self.q.shape[0]

    def evaluate(self, ev, jac=True):
        return ev.q - self.q, np.eye(ev.q.shape[0])
