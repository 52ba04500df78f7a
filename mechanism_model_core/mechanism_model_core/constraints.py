"""Constraints for inverse kinematics (CLARAty 8.2-8.8; MSim's targets, locks, closures and postures).

A constraint says what a configuration should satisfy. Each one gives a *residual* ``r(q)`` that is zero
when it holds and its Jacobian ``dr/dq`` (rows of ``r``, columns in ``mechanism.coordinate_names`` order),
both from one shared forward pass (:class:`Evaluation`): every frame's pose and geometric Jacobian is
computed at most once per solver iteration, whatever the number of constraints that use it.

Cartesian constraints (the pose of ``frame`` in ``relative_to``; the ground when ``relative_to`` is None):

* :class:`PoseConstraint` -- full pose, or a subset of its six axes through ``mask``;
* :class:`PositionConstraint`, :class:`OrientationConstraint` -- the two halves;
* :class:`PointAtConstraint` -- an axis of ``frame`` points at a point (a mast camera looking at a target);
* :class:`ContactConstraint` -- ``frame``'s origin on a surface's plane and its normal aligned with (or
  opposed to) the surface normal (a wheel or a foot on terrain);
* :class:`LoopClosure` -- two frames of the mechanism coincide (closed chains, CLARAty 4.4).

Joint constraints: :class:`JointCoupling` (linear ``joint = a . q + b`` or a non-linear expression read by
the safe evaluator), :class:`JointTarget`, :class:`JointLock` (joints held exactly where they are) and
:class:`Posture` (a rest configuration, always the lowest priority).

Residual conventions (the residual is *current minus desired*):

* position rows: ``p - p_target`` in metres, in ``relative_to``'s axes;
* orientation rows: ``log(R @ R_target.T)`` (rotation vector, radians) in ``relative_to``'s axes; their
  Jacobian is the exact derivative (the angular-velocity rows times the inverse left Jacobian of SO(3));
* ``mask`` holds six weights (or booleans) over ``[x, y, z, rx, ry, rz]``; a zero drops the row, so an
  unconstrained direction stays free. With ``mask_frame="target"`` the axes are the target frame's
  (e.g. ``mask=(1, 1, 1, 1, 1, 0)`` lets a symmetric tool turn freely about its own z axis).

Weights and priorities: within one priority level the solver minimises ``sum(weight * mask_i * r_i**2)``.
**A lower priority number is a higher priority; 0 is the highest level in ordinary use** (negative numbers
are allowed and rank higher still). Levels are solved strictly in order: a lower level only moves in the
null space of the levels above it. :class:`Posture` always ranks below every other level. Joint locks,
joint limits and the model's own couplings are not weighted at all: the solver enforces them exactly
(locked joints and coupled joints are eliminated from the unknowns, limits are an active set), which realises
MSim's order *invariant > limit > lock > target > posture* for them.

Constraints can also be read from a small XML file with :func:`load_constraints` (CLARAty 8.8).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import ClassVar, Mapping, Sequence

import numpy as np

from .errors import (ExpressionError, InvalidConfiguration, MechanismModelError, ModelFileError,
                     UnknownFrame, UnknownJoint)
from .kinematics import forward_kinematics
from .model import Mechanism, as_real_array
from .spatial import inverse_left_jacobian_so3, log_so3, relative_motion, skew as _skew

__all__ = [
    "Constraint", "ContactConstraint", "Evaluation", "JointCoupling", "JointLock", "JointTarget",
    "LoopClosure", "OrientationConstraint", "PointAtConstraint", "PoseConstraint", "PositionConstraint",
    "Posture", "load_constraints", "log_so3", "inverse_left_jacobian_so3",
]


# ---------------------------------------------------------------------------------------------- evaluation
class Evaluation:
    """One forward pass at a full configuration ``q``, shared by every constraint of a problem.

    ``world(frame)`` gives ``(T_ground_frame, J)`` with J the 6 x nq LOCAL_WORLD_ALIGNED Jacobian (rows
    [linear; angular], ground axes); ``relative(frame, ref)`` gives ``T_ref_frame`` and the Jacobian of that
    relative motion in ``ref``'s axes (velocity of ``frame``'s origin seen from ``ref``). Results are cached.
    """

    __slots__ = ("mechanism", "q", "fk", "_world")

    def __init__(self, mechanism: Mechanism, q: np.ndarray):
        self.mechanism = mechanism
        self.q = q
        self.fk = forward_kinematics(mechanism, q)
        self._world: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def world(self, frame: str, jac: bool = True):
        hit = self._world.get(frame)
        if hit is not None:
            return hit
        if frame == self.mechanism.ground:
            hit = (np.eye(4), np.zeros((6, self.mechanism.nq)))
        elif not jac:
            return self.fk.pose(frame), None
        else:
            hit = (self.fk.pose(frame), self.fk.ground_jacobian(frame))
        self._world[frame] = hit
        return hit

    def relative(self, frame: str, ref: str | None, jac: bool = True):
        """``(T_ref_frame, J)``; ``J`` is None when ``jac`` is False (pose only, cheaper)."""
        Tf, Jf = self.world(frame, jac)
        if ref is None or ref == self.mechanism.ground:
            return Tf, Jf
        Tr, Jr = self.world(ref, jac)
        return relative_motion(Tf, Jf, Tr, Jr)


# ---------------------------------------------------------------------------------------------- base
@dataclass(kw_only=True)
class _Common:
    weight: float = 1.0
    priority: int = 0
    name: str | None = None


class Constraint:
    """Interface of every constraint (see the module docstring for the conventions).

    Subclasses implement :meth:`check` (validate names against a mechanism), :meth:`evaluate` (residual
    and Jacobian at an :class:`Evaluation`) and :meth:`errors` (position/orientation/joint error sizes of a
    residual). ``row_weights`` multiplies rows (the square root of the effective per-row weight).
    """

    #: what the tolerances apply to: "cartesian", "joint", "posture" or "lock"
    kind: ClassVar[str] = "cartesian"

    def check(self, mechanism: Mechanism) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def evaluate(self, ev: Evaluation, jac: bool = True):  # pragma: no cover - interface
        """``(r, J)``: residual (m,) and Jacobian (m, nq) over the full coordinates (J None when ``jac`` is
        False)."""
        raise NotImplementedError

    def row_weights(self) -> np.ndarray:
        return np.sqrt(self.weight) * np.ones(self.dimension)

    def errors(self, r: np.ndarray) -> tuple[float, float]:
        """``(position error m, orientation error rad)`` of a residual (NaN where not applicable)."""
        return math.nan, math.nan

    @property
    def label(self) -> str:
        return self.name or type(self).__name__


def _frame_check(mechanism: Mechanism, *names):
    for n in names:
        if n is not None and n != mechanism.ground and not mechanism.has_frame(n):
            raise UnknownFrame(n, mechanism.frame_names)


def _as_pose(T, what: str) -> np.ndarray:
    A = np.array(as_real_array(T, f"{what}"), dtype=float)
    if A.shape != (4, 4) or not math.isfinite(float(A.sum())):
        raise InvalidConfiguration(f"{what}: expected a finite 4x4 transform, got shape {A.shape}")
    R = A[:3, :3]
    if float(np.abs(R @ R.T - _EYE3).max()) > 1e-6 or np.linalg.det(R) < 0:
        raise InvalidConfiguration(f"{what}: the rotation part is not a proper rotation matrix")
    return A


_EYE3 = np.eye(3)


def _mask(mask, n: int, what: str) -> np.ndarray:
    if mask is None:
        return np.ones(n)
    m = as_real_array(mask, "mask").reshape(-1)
    if m.shape != (n,) or not np.all(np.isfinite(m)) or np.any(m < 0):
        raise InvalidConfiguration(f"{what}: mask needs {n} non-negative weights or booleans, got {mask!r}")
    return m


class _Cartesian(Constraint):
    """Shared machinery of the pose-type constraints: target pose, mask, rows in reference/target axes."""

    _rows: ClassVar[slice] = slice(0, 6)

    def _prepare(self):
        n = self._rows.stop - self._rows.start
        self._m = _mask(self.mask, n, type(self).__name__)
        self._keep = np.nonzero(self._m > 0)[0]
        if self.mask_frame not in ("reference", "target"):
            raise InvalidConfiguration(f"{type(self).__name__}: mask_frame must be 'reference' or 'target'")

    @property
    def dimension(self) -> int:
        return len(self._keep)

    def row_weights(self) -> np.ndarray:
        return np.sqrt(self.weight * self._m[self._keep])

    def check(self, mechanism: Mechanism) -> None:
        _frame_check(mechanism, self.frame, self.relative_to)
        self._prepare()

    def _target_pose(self) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, ev: Evaluation, jac=True):
        T, J = ev.relative(self.frame, self.relative_to, jac)
        Tt = self._target_pose()
        r = np.empty(6)
        r[:3] = T[:3, 3] - Tt[:3, 3]
        phi = log_so3(T[:3, :3] @ Tt[:3, :3].T)
        r[3:] = phi
        rows = self._keep + self._rows.start
        if self.mask_frame == "target":
            Rt = Tt[:3, :3].T
            r[:3], r[3:] = Rt @ r[:3], Rt @ r[3:]
        if not jac:
            return r[rows], None
        Jr = np.empty((6, J.shape[1]))
        Jr[:3] = J[:3]
        Jr[3:] = inverse_left_jacobian_so3(phi) @ J[3:]
        if self.mask_frame == "target":
            Jr[:3], Jr[3:] = Rt @ Jr[:3], Rt @ Jr[3:]
        return r[rows], Jr[rows]

    def errors(self, r):
        rows = self._keep + self._rows.start
        pos = [r[i] for i, k in enumerate(rows) if k < 3]
        rot = [r[i] for i, k in enumerate(rows) if k >= 3]
        return (float(np.linalg.norm(pos)) if pos else math.nan,
                float(np.linalg.norm(rot)) if rot else math.nan)


@dataclass
class PoseConstraint(_Common, _Cartesian):
    """``frame`` at pose ``target`` (4x4 ``T_relative_to_target``), fully or on the axes of ``mask``."""

    frame: str
    target: np.ndarray
    relative_to: str | None = None
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"

    def __post_init__(self):
        self.target = _as_pose(self.target, f"PoseConstraint({self.frame!r}) target")
        self._prepare()

    def _target_pose(self):
        return self.target


@dataclass
class PositionConstraint(_Common, _Cartesian):
    """``frame``'s origin at ``target_xyz`` (metres, in ``relative_to``); ``mask`` has 3 entries."""

    frame: str
    target_xyz: Sequence[float]
    relative_to: str | None = None
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"
    _rows: ClassVar[slice] = slice(0, 3)

    def __post_init__(self):
        p = as_real_array(self.target_xyz, "target").reshape(-1)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise InvalidConfiguration(f"PositionConstraint({self.frame!r}): target_xyz needs 3 numbers")
        self.target_xyz = p
        if self.mask_frame == "target":
            raise InvalidConfiguration("PositionConstraint has no target orientation; use mask_frame='reference'")
        self._prepare()

    def _target_pose(self):
        T = np.eye(4)
        T[:3, 3] = self.target_xyz
        return T

    def evaluate(self, ev: Evaluation, jac=True):
        T, J = ev.relative(self.frame, self.relative_to, jac)
        r = (T[:3, 3] - self.target_xyz)[self._keep]
        return r, (None if J is None else J[:3][self._keep])


@dataclass
class OrientationConstraint(_Common, _Cartesian):
    """``frame``'s orientation equal to ``target_rotation`` (3x3, in ``relative_to``); ``mask`` has 3
    entries over the rotation-vector components."""

    frame: str
    target_rotation: np.ndarray
    relative_to: str | None = None
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"
    _rows: ClassVar[slice] = slice(3, 6)

    def __post_init__(self):
        T = np.eye(4)
        T[:3, :3] = as_real_array(self.target_rotation, "target rotation")
        self.target_rotation = _as_pose(T, f"OrientationConstraint({self.frame!r})")[:3, :3]
        self._prepare()

    def _target_pose(self):
        T = np.eye(4)
        T[:3, :3] = self.target_rotation
        return T

    def evaluate(self, ev: Evaluation, jac=True):
        T, J = ev.relative(self.frame, self.relative_to, jac)
        phi = log_so3(T[:3, :3] @ self.target_rotation.T)
        if not jac:
            if self.mask_frame == "target":
                phi = self.target_rotation.T @ phi
            return phi[self._keep], None
        Jr = inverse_left_jacobian_so3(phi) @ J[3:]
        if self.mask_frame == "target":
            Rt = self.target_rotation.T
            phi, Jr = Rt @ phi, Rt @ Jr
        return phi[self._keep], Jr[self._keep]


@dataclass
class LoopClosure(_Common, _Cartesian):
    """Two frames of the mechanism coincide (a closed chain cut open, CLARAty 4.4): ``frame_b``'s pose in
    ``frame_a`` is the identity on the axes of ``mask`` (e.g. ``(1, 1, 1, 0, 0, 0)`` for a pin joint that
    leaves the rotation free)."""

    frame_a: str
    frame_b: str
    mask: Sequence[float] | None = None
    mask_frame: str = "reference"

    def __post_init__(self):
        self._prepare()

    @property
    def frame(self):
        return self.frame_b

    @property
    def relative_to(self):
        return self.frame_a

    def _target_pose(self):
        return np.eye(4)


@dataclass
class PointAtConstraint(_Common, Constraint):
    """The unit ``axis`` of ``frame`` (in ``frame``'s axes) points at ``target_point`` (metres, in
    ``relative_to``), as a mast camera looking at a target. Residual: ``R @ axis - u`` with ``u`` the unit
    vector from ``frame``'s origin to the point (3 rows of rank 2; its norm is about the pointing angle)."""

    frame: str
    target_point: Sequence[float]
    axis: Sequence[float] = (0.0, 0.0, 1.0)
    relative_to: str | None = None
    dimension: ClassVar[int] = 3

    def __post_init__(self):
        p = as_real_array(self.target_point, "target_point").reshape(-1)
        a = as_real_array(self.axis, "axis").reshape(-1)
        if p.shape != (3,) or a.shape != (3,) or not np.all(np.isfinite(p)) or np.linalg.norm(a) < 1e-9:
            raise InvalidConfiguration(f"PointAtConstraint({self.frame!r}): target_point and axis need 3 "
                                       f"numbers each (a non-zero axis)")
        self.target_point = p
        self.axis = a / np.linalg.norm(a)

    def check(self, mechanism):
        _frame_check(mechanism, self.frame, self.relative_to)

    def evaluate(self, ev, jac=True):
        T, J = ev.relative(self.frame, self.relative_to)
        a = T[:3, :3] @ self.axis
        d = self.target_point - T[:3, 3]
        dist = float(np.linalg.norm(d))
        if dist < 1e-9:
            return np.zeros(3), np.zeros((3, J.shape[1]))
        u = d / dist
        r = a - u
        Jr = -_skew(a) @ J[3:] + ((np.eye(3) - np.outer(u, u)) / dist) @ J[:3]
        return r, Jr

    def errors(self, r):
        # |a - u| = 2 sin(angle / 2)
        return math.nan, float(2.0 * math.asin(min(1.0, 0.5 * np.linalg.norm(r))))


@dataclass
class ContactConstraint(_Common, Constraint):
    """Surface contact (CLARAty 8.4): ``frame``'s origin lies on the plane of the surface and ``frame``'s
    axis ``normal_axis`` (0, 1, 2 for x, y, z) is aligned with the surface normal (``opposed=True``:
    anti-parallel, as a foot's z against the ground's z).

    The surface is the plane through the origin of ``surface`` normal to its axis ``normal_axis``;
    ``surface`` is a frame name of the mechanism or a fixed 4x4 pose in ``relative_to`` (ground by default).
    Sliding on the plane and turning about the normal stay free. Residual rows: the signed distance (m)
    and ``R_s^T R_f e_k -/+ e_k`` (3 rows of rank 2)."""

    frame: str
    surface: object
    normal_axis: int = 2
    opposed: bool = False
    relative_to: str | None = None
    dimension: ClassVar[int] = 4

    def __post_init__(self):
        if self.normal_axis not in (0, 1, 2):
            raise InvalidConfiguration("ContactConstraint.normal_axis must be 0, 1 or 2")
        if not isinstance(self.surface, str):
            self.surface = _as_pose(self.surface, f"ContactConstraint({self.frame!r}) surface")

    def check(self, mechanism):
        _frame_check(mechanism, self.frame, self.relative_to)
        if isinstance(self.surface, str):
            _frame_check(mechanism, self.surface)

    def evaluate(self, ev, jac=True):
        k = self.normal_axis
        if isinstance(self.surface, str):
            T, J = ev.relative(self.frame, self.surface)
        else:
            T, J = ev.relative(self.frame, self.relative_to)
            Rs, ps = self.surface[:3, :3], self.surface[:3, 3]
            T = T.copy()
            T[:3, 3] = Rs.T @ (T[:3, 3] - ps)
            T[:3, :3] = Rs.T @ T[:3, :3]
            J = np.concatenate([Rs.T @ J[:3], Rs.T @ J[3:]])
        n = T[:3, k]                              # frame's normal axis in surface axes
        r = np.empty(4)
        r[0] = T[k, 3]
        r[1:] = n
        r[1 + k] -= -1.0 if self.opposed else 1.0
        Jr = np.empty((4, J.shape[1]))
        Jr[0] = J[k]
        Jr[1:] = -_skew(n) @ J[3:]
        return r, Jr

    def errors(self, r):
        return abs(float(r[0])), float(2.0 * math.asin(min(1.0, 0.5 * np.linalg.norm(r[1:]))))


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
        from .io.expressions import parse_expression

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


# ---------------------------------------------------------------------------------------------- files
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
    from .io.claraty_xml import _Reader
    from .io.expressions import evaluate
    from .io.safe_xml import parse_file

    path = os.fspath(path)
    root = parse_file(path, limit=MAX_CONSTRAINT_FILE_BYTES)
    if root.tag != "Constraints":
        raise ModelFileError(f"root element is <{root.tag}>, expected <Constraints>", path, root.sourceline)
    reader = _Reader(path)

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
            return reader.transform(t)
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
                    from .io.expressions import parse_expression

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

    from .io.expressions import CONSTANTS, FUNCTIONS

    try:
        return [n.id for n in ast.walk(ast.parse(text, mode="eval"))
                if isinstance(n, ast.Name) and n.id not in CONSTANTS and n.id not in FUNCTIONS]
    except SyntaxError:
        return []


load_constraints.__doc__ += _FILE_DOC
