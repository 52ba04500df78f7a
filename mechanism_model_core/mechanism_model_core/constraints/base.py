"""The shared forward pass of a problem (:class:`Evaluation`) and the interface every constraint implements
(:class:`Constraint`), with the helpers of the Cartesian kinds. Conventions: see :mod:`mechanism_model_core.constraints`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvalidConfiguration, UnknownFrame
from ..kinematics import forward_kinematics
from ..model import Mechanism, as_real_array
from ..spatial import inverse_left_jacobian_so3, log_so3, relative_motion


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
@dataclass(frozen=True, eq=False, kw_only=True)
class _Common:
    weight: float = 1.0
    priority: int = 0
    name: str | None = None


def _set(obj, field: str, value) -> None:
    """Normalise a field of a frozen constraint in ``__post_init__`` (construction only)."""
    object.__setattr__(obj, field, value)


def _frozen_array(a) -> np.ndarray:
    """A read-only float copy of ``a`` (constraint data never changes after construction)."""
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


class Constraint:
    """Interface of every constraint (see the module docstring for the conventions).

    Constraints are immutable values: nothing about a mechanism is stored on them, so one constraint can
    serve several mechanisms and threads at once. :meth:`bind` resolves a constraint against one mechanism
    (names checked, coordinate indices looked up) and returns the object a solver evaluates: the
    constraint itself for kinds that need nothing of the mechanism (the Cartesian ones), else a new, equally
    immutable :class:`BoundConstraint`.

    Subclasses implement :meth:`bind`, :meth:`evaluate` (residual and Jacobian at an :class:`Evaluation`;
    bound objects only) and :meth:`errors` (position/orientation/joint error sizes of a residual).
    ``row_weights`` multiplies rows (the square root of the effective per-row weight).
    """

    #: what the tolerances apply to: "cartesian", "joint", "posture" or "lock"
    kind: ClassVar[str] = "cartesian"
    #: coordinate indices whose literal value the constraint reads (not taken modulo 2 pi by solvers)
    coordinates_read: tuple = ()

    def bind(self, mechanism: Mechanism) -> "Constraint":  # pragma: no cover - interface
        """This constraint ready to evaluate on ``mechanism`` (raises UnknownFrame / UnknownJoint /
        InvalidConfiguration when it does not fit); ``self`` or a new immutable bound object."""
        raise NotImplementedError

    def check(self, mechanism: Mechanism) -> None:
        """Validate the constraint against ``mechanism`` (:meth:`bind`, result discarded)."""
        self.bind(mechanism)

    def evaluate(self, ev: Evaluation, jac: bool = True):
        """``(r, J)``: residual (m,) and Jacobian (m, nq) over the full coordinates (J None when ``jac`` is
        False). Kinds that bind to a new object evaluate through it (bind once and reuse it in loops)."""
        bound = self.bind(ev.mechanism)
        if bound is self:  # pragma: no cover - interface
            raise NotImplementedError
        return bound.evaluate(ev, jac)

    def row_weights(self) -> np.ndarray:
        return np.sqrt(self.weight) * np.ones(self.dimension)

    def errors(self, r: np.ndarray) -> tuple[float, float]:
        """``(position error m, orientation error rad)`` of a residual (NaN where not applicable)."""
        return math.nan, math.nan

    @property
    def label(self) -> str:
        return self.name or type(self).__name__


class BoundConstraint(Constraint):
    """A constraint resolved against one mechanism (what :meth:`Constraint.bind` returns for kinds that need
    mechanism data). ``constraint`` is the constraint it came from; weight, priority, name, kind and errors
    are its. Subclasses are frozen dataclasses with ``constraint`` as first field."""

    constraint: Constraint

    @property
    def weight(self):
        return self.constraint.weight

    @property
    def priority(self):
        return self.constraint.priority

    @property
    def name(self):
        return self.constraint.name

    @property
    def kind(self):
        return self.constraint.kind

    @property
    def label(self) -> str:
        return self.constraint.label

    def bind(self, mechanism: Mechanism) -> Constraint:
        return self.constraint.bind(mechanism)

    def errors(self, r):
        return self.constraint.errors(r)


def _frame_check(mechanism: Mechanism, *names):
    for n in names:
        if n is not None and n != mechanism.ground and not mechanism.has_frame(n):
            raise UnknownFrame(n, mechanism.frame_names)


def _as_pose(T, what: str, *args) -> np.ndarray:
    """A read-only float copy of ``T``, checked: a finite 4x4 transform whose rotation part is a proper
    rotation (orthonormal to 1e-6, determinant > 0). ``what`` names it in errors (``what.format(*args)``
    when ``args`` are given: the message is only formatted for an error)."""
    if type(T) is np.ndarray and T.dtype == np.float64 and T.shape == (4, 4):
        A = np.array(T)                              # the common case, as as_real_array takes it
        A.setflags(write=False)
    else:
        A = _frozen_array(as_real_array(T, what.format(*args) if args else what))
    if A.shape != (4, 4) or not math.isfinite(float(A.sum())):
        raise InvalidConfiguration(f"{what.format(*args) if args else what}: expected a finite 4x4 transform, "
                                   f"got shape {A.shape}")
    a, b, c = A[:3].tolist()
    # orthonormal rows and determinant > 0 (the triple product of the rows), in floats: a twentieth of
    # the cost of the array calls on a 3x3 matrix, which every solve's constraint pays
    err = max(abs(a[0] * a[0] + a[1] * a[1] + a[2] * a[2] - 1.0), abs(b[0] * b[0] + b[1] * b[1] + b[2] * b[2] - 1.0),
              abs(c[0] * c[0] + c[1] * c[1] + c[2] * c[2] - 1.0), abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]),
              abs(a[0] * c[0] + a[1] * c[1] + a[2] * c[2]), abs(b[0] * c[0] + b[1] * c[1] + b[2] * c[2]))
    det = (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
           + a[2] * (b[0] * c[1] - b[1] * c[0]))
    if not err <= 1e-6 or not det > 0:
        raise InvalidConfiguration(f"{what.format(*args) if args else what}: the rotation part is not a proper "
                                   f"rotation matrix")
    return A


#: n -> (mask of every axis (n,) ones, kept axes arange(n)), read-only: the constraints without a mask share them
_ALL = {n: (np.ones(n), np.arange(n)) for n in (3, 6)}
for _a in _ALL.values():
    for _b in _a:
        _b.setflags(write=False)


def _mask(mask, n: int, what: str) -> np.ndarray:
    if mask is None:
        return np.ones(n)
    m = as_real_array(mask, "mask").reshape(-1)
    if m.shape != (n,) or not np.all(np.isfinite(m)) or np.any(m < 0):
        raise InvalidConfiguration(f"{what}: mask needs {n} non-negative weights or booleans, got {mask!r}")
    return np.array(m, dtype=float)


class _Cartesian(Constraint):
    """Shared machinery of the pose-type constraints: target pose, mask, rows in reference/target axes."""

    _rows: ClassVar[slice] = slice(0, 6)

    @property
    def kept_axes(self) -> np.ndarray:
        """Indices (within this kind's axes: x y z for position, rx ry rz for orientation, all six for a
        pose) of the residual rows the mask keeps."""
        return self._keep

    @property
    def axis_weights(self) -> np.ndarray:
        """The mask as per-axis weights over this kind's axes (0 where an axis is free)."""
        return self._m

    def target_pose(self) -> np.ndarray:
        """The target as a 4x4 pose in ``relative_to`` (rotation or translation identity where the kind has
        none)."""
        return self._target_pose()

    def _prepare(self):
        n = self._rows.stop - self._rows.start
        if self.mask is None:
            m, keep = _ALL[n]                   # every axis (shared, read-only)
        else:
            m = _mask(self.mask, n, type(self).__name__)
            m.setflags(write=False)
            keep = np.nonzero(m > 0)[0]
            keep.setflags(write=False)
        object.__setattr__(self, "_m", m)              # (_set, inlined: every solve's constraint passes here)
        object.__setattr__(self, "_keep", keep)
        if self.mask_frame not in ("reference", "target"):
            raise InvalidConfiguration(f"{type(self).__name__}: mask_frame must be 'reference' or 'target'")

    @property
    def dimension(self) -> int:
        return len(self._keep)

    def row_weights(self) -> np.ndarray:
        return np.sqrt(self.weight * self._m[self._keep])

    def bind(self, mechanism: Mechanism) -> Constraint:
        _frame_check(mechanism, self.frame, self.relative_to)
        return self

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
        if (self.mask is None and type(r) is np.ndarray and r.shape == self._keep.shape and r.dtype == np.float64
                and r.flags.c_contiguous):
            # every axis kept: the position rows come first (np.linalg.norm's own arithmetic, sqrt(x . x),
            # on slices rather than on lists of scalars)
            n = r.shape[0]
            start = self._rows.start
            p = r[:3] if start == 0 else None
            o = (r[3:] if n == 6 else None) if start == 0 else r
            return (math.sqrt(p.dot(p)) if p is not None and p.shape[0] else math.nan,
                    math.sqrt(o.dot(o)) if o is not None and o.shape[0] else math.nan)
        rows = self._keep + self._rows.start
        pos = [r[i] for i, k in enumerate(rows) if k < 3]
        rot = [r[i] for i, k in enumerate(rows) if k >= 3]
        return (float(np.linalg.norm(pos)) if pos else math.nan,
                float(np.linalg.norm(rot)) if rot else math.nan)
