"""Joint-space constraints: couplings, targets, locks and the posture (a rest configuration).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from ..errors import ExpressionError, InvalidConfiguration, MechanismModelError, UnknownFrame, UnknownJoint
from ..kinematics import forward_kinematics
from ..model import Mechanism, as_real_array
from ..spatial import inverse_left_jacobian_so3, log_so3, relative_motion, skew as _skew
from .base import Constraint, Evaluation, _Cartesian, _Common, _as_pose, _frame_check, _mask  # noqa: F401


# ---------------------------------------------------------------------------------------------- joints
def _joint_index(mechanism: Mechanism, name: str) -> int:
    try:
        return mechanism.coordinate_index(name)
    except UnknownJoint:
        raise UnknownJoint(name, list(mechanism.coordinate_names)) from None


@dataclass
class JointCoupling(_Common, Constraint):
    """``joint == f(other coordinates)`` (CLARAty 4.17.1): ``expression`` is an expression text read by the
    safe evaluator (``"2*joint1"``, ``"atan2(sin(a), cos(a)) - b"``) or a linear form ``(coefficients, b)``
    with ``coefficients`` a ``{coordinate: a}`` mapping or a vector over all coordinates. Residual: ``q[joint] - f(q)`` (rad or m)."""

    joint: str
    expression: object
    dimension: ClassVar[int] = 1
    kind: ClassVar[str] = "joint"

    def check(self, mechanism):
        from ..io.expressions import parse_expression

        self._i = _joint_index(mechanism, self.joint)
        others = [c for c in mechanism.coordinate_names if c != self.joint]
        if isinstance(self.expression, str):
            try:
                self._expr = parse_expression(self.expression, others)
            except ExpressionError as exc:
                raise ExpressionError(f"JointCoupling({self.joint!r}): {exc}") from None
            self._vars = {v: mechanism.coordinate_index(v) for v in sorted(self._expr.variables)}
            self._linear = None
        else:
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
            self._linear = (idx, np.array([float(a) for a in coeffs.values()]), float(b))

    def evaluate(self, ev, jac=True):
        q = ev.q
        J = np.zeros((1, q.shape[0]))
        J[0, self._i] = 1.0
        if self._linear is not None:
            idx, a, b = self._linear
            f = float(a @ q[idx]) + b
            np.subtract.at(J[0], idx, a)
        else:
            env = {v: float(q[i]) for v, i in self._vars.items()}
            f = float(self._expr(env))
            for v, g in self._expr.gradient(env).items():
                J[0, self._vars[v]] -= g
        return np.array([q[self._i] - f]), J

    def errors(self, r):
        return math.nan, abs(float(r[0]))


@dataclass
class JointTarget(_Common, Constraint):
    """Coordinate ``joint`` at ``value`` (rad or m): MSim's joint target. Residual ``q[joint] - value``."""

    joint: str
    value: float
    dimension: ClassVar[int] = 1
    kind: ClassVar[str] = "joint"

    def check(self, mechanism):
        self._i = _joint_index(mechanism, self.joint)

    def evaluate(self, ev, jac=True):
        J = np.zeros((1, ev.q.shape[0]))
        J[0, self._i] = 1.0
        return np.array([ev.q[self._i] - float(self.value)]), J

    def errors(self, r):
        return math.nan, abs(float(r[0]))


@dataclass
class JointLock(_Common, Constraint):
    """Hold ``joints`` (coordinate or joint names) exactly: at ``values`` if given (a mapping or a
    sequence in the order of ``joints``), else where the initial configuration has them. Locked coordinates
    are removed from the unknowns, so a lock can never be disturbed by any target (MSim: lock > target)."""

    joints: Sequence[str]
    values: object = None
    kind: ClassVar[str] = "lock"
    dimension: ClassVar[int] = 0

    def __post_init__(self):
        if isinstance(self.joints, str):
            self.joints = (self.joints,)
        self.joints = tuple(self.joints)

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

    def check(self, mechanism):
        self.coordinates(mechanism)

    def evaluate(self, ev, jac=True):
        return np.zeros(0), np.zeros((0, ev.q.shape[0]))


@dataclass
class Posture(_Common, Constraint):
    """A rest configuration ``q_rest`` (full or independent coordinates, or a mapping; the home
    configuration when None) pulling the free joints at ``weight``: always the lowest priority, it only
    breaks ties in the null space of every other constraint and never decides success."""

    q_rest: object = None
    kind: ClassVar[str] = "posture"

    def check(self, mechanism):
        self._q = mechanism.configuration(self.q_rest)
        self._n = mechanism.nq

    @property
    def dimension(self):
        return self._n

    def evaluate(self, ev, jac=True):
        return ev.q - self._q, np.eye(ev.q.shape[0])

    def errors(self, r):
        return math.nan, float(np.linalg.norm(r))
