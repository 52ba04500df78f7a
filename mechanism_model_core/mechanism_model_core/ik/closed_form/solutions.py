"""Every closed-form IK branch of a frame's chain (:func:`ik_solutions`, optional extra ``eaik``): of the chains
:class:`~.eaik_solver.EAIKSolver` decomposes (as read, or with its axes snapped where a model file's rounding
makes them miss: :mod:`.axis_snap`), and of those :class:`~.near_decomposable.NearDecomposableSolver` takes --
an arm on a lift (the lift held at the reference's value: exact branches) and an arm near a decomposable chain.

Near a decomposable chain, the starts of Gauss-Newton steps on the exact chain are each branch of the
approximate chain (its three wrist axes moved to their least-squares common point) and the reference
configuration; where one wrist axis alone is off (:class:`~.axis_offset.AxisOffset`), also
:mod:`.offset_branches`' -- the last axis (the xArm6): every root of its one-unknown equation, exact answers;
another (Baxter's first wrist axis): every branch of the chain with that axis moved, and each after its
iteration. Measured against an exhaustive search (Newton steps by Pinocchio from 200 random starts per target,
``benchmarks/bench_ik_solutions.py``, 200 random targets): the xArm6 lists every in-limit branch (742 of 742;
the approximate branches alone: 627), Baxter 658 of 663 (the approximate branches alone: 608); Baxter's
remaining misses are branches near singular configurations to which no start's steps lead, so the list may
still be incomplete there.

Every branch listed is confirmed by the core's forward kinematics on the exact chain within
:data:`SOLUTION_TOL`; branches that meet (within :data:`DUPLICATE_TOL`) are merged."""

from __future__ import annotations

import math

import numpy as np

from ...constraints import PoseConstraint
from ...errors import InvalidConfiguration, ModelStructureError
from ...kinematics import frame_chain
from ...joints import JointType
from ...model import Mechanism
from ...spatial import log_so3
from ..batch import chain_engine
from ..problem import IKProblem
from .common import nearest_in_limits
from .eaik_solver import EAIKSolver, _robot_or_none, eaik_solver_for
from .near_decomposable import near_decomposable_solver_for
from .offset_branches import last_axis_branches, moved_starts

__all__ = ["SOLUTION_TOL", "ik_solutions"]

#: a branch is listed when the core's forward kinematics puts the frame within this of the target (m and rad)
SOLUTION_TOL = 1e-9
#: lightly damped Gauss-Newton steps on the exact chain from an approximate (or snapped) branch, at most
NEWTON_STEPS = 40
#: branches within this of each other in every joint (rad; m for a lift) are one (near a double root, Gauss-Newton
#: steps from two starts can stop 1e-6 apart within SOLUTION_TOL of the target)
DUPLICATE_TOL = 1e-5
#: joints of a mobile base: held at the reference's values where they start the chain
_BASE_JOINTS = (JointType.FLOATING, JointType.PLANAR)


def ik_solutions(mechanism: Mechanism, frame: str, T, q_ref=None, *, within_limits: bool = True,
                 swept_value: float | None = None) -> np.ndarray:
    """Every closed-form IK branch putting ``frame`` at ground pose ``T`` (4x4): (k, nq) full configurations
    (the other joints at ``q_ref``, home by default), nearest ``q_ref`` first (sum of squared joint
    differences); only in-limit ones (whole turns chosen per joint) unless ``within_limits=False``. A 7R
    chain's swept joint is held at ``swept_value`` (default: its ``q_ref`` value), an arm's lift (a prismatic
    first joint, TIAGo's torso) at its ``q_ref`` value (clamped into its stroke), a mobile base (floating and
    planar joints where the chain starts) at its ``q_ref`` values: the arm's branches for ``T`` moved into the
    frame where the base ends. Each branch is confirmed by the core's forward kinematics within
    :data:`SOLUTION_TOL` (m, rad). Raises :class:`ModelStructureError` when the chain has no closed form (the
    reason: ``eaik`` absent, no decomposition, not near one, a floating or planar joint after the arm's first
    joint), :class:`InvalidConfiguration` for a pose that is not a finite 4x4 or a ``q_ref`` that is not a
    configuration."""
    q_ref = mechanism.configuration(q_ref)
    held_base, problem = _base(mechanism, frame, q_ref)
    s = eaik_solver_for(mechanism, frame, problem)
    near = None if s is not None else near_decomposable_solver_for(mechanism, frame, problem)
    if s is None and near is None:
        if problem is None:
            EAIKSolver(mechanism, frame)                  # raises the reason
        else:
            ch = frame_chain(mechanism, frame)
            EAIKSolver(mechanism, frame, q_ref[ch.coords], np.arange(ch.n) >= len(held_base))
        raise ModelStructureError(f"no closed form for the chain to {frame!r}")
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise InvalidConfiguration(f"T must be a finite 4x4 pose, got shape {T.shape}")
    Tb = (s if s is not None else near).base.target(q_ref, T) if held_base else T   # where the base ends
    if s is not None:
        coords, Q, held, polish = _eaik_rows(s, Tb, q_ref[s.coords], swept_value)
    else:
        coords, Q, held, polish = _near_rows(near, Tb, q_ref[near.coords], swept_value)
    ref = q_ref[coords]
    lo, hi = mechanism.lower_limits[coords], mechanism.upper_limits[coords]
    prismatic = np.zeros(len(coords), dtype=bool)
    if near is not None and near.lift:
        prismatic[0] = True
    E = _engine(mechanism, frame, q_ref, held_base) if polish else None
    out = []
    for q in Q:
        if polish:
            q = _newton(E, q, T, held)
            if q is None:
                continue
        if within_limits:
            turned = nearest_in_limits(q[~prismatic], ref[~prismatic], lo[~prismatic], hi[~prismatic])
            if turned is None:
                continue
            q = q.copy()
            q[~prismatic] = turned
            if np.any(q < lo - 1e-12) or np.any(q > hi + 1e-12):
                continue
        if polish and not _confirmed(mechanism, frame, coords, q_ref, q, T):
            continue
        if any(np.max(np.abs(q - p)) <= DUPLICATE_TOL for _, p in out):
            continue
        out.append((float(np.sum((q - ref) ** 2)), q))
    out.sort(key=lambda t: t[0])
    full = np.tile(q_ref, (len(out), 1))
    for k, (_, q) in enumerate(out):
        full[k, coords] = q
    return full.reshape(-1, mechanism.nq)


def _eaik_rows(s, T, ref, swept_value):
    """``(coords, rows, held, polish)`` of a chain ``EAIKSolver`` decomposes: its exact branches (confirmed
    within :data:`SOLUTION_TOL` by the solver), or -- a chain decomposed with its axes snapped -- the snapped
    chain's, to be polished on the exact chain with the swept joint held."""
    v = 0.0 if s.swept is None else (ref[s.swept] if swept_value is None else float(swept_value))
    Q = s.branches(T, v, tol=None if s.snap else SOLUTION_TOL)
    if s.swept is not None:
        for q in Q:
            q[s.swept] = v
    held = np.zeros(len(s.coords), dtype=bool)
    if s.swept is not None:
        held[s.swept] = True
    return s.coords, Q, held, bool(s.snap)


def _near_rows(near, T, ref, swept_value):
    """``(coords, rows, held, polish)`` of a chain the near-decomposable solver takes: the lift (if any) at
    ``ref``'s value, the swept joint (7R) at ``swept_value`` or ``ref``'s; every branch of the (approximate)
    revolute chain -- least-squares ones too, as starts -- and (near kind) ``ref`` itself, to be polished on the
    exact chain with the lift and the swept joint held."""
    first = 1 if near.lift else 0
    n = len(near.coords)
    held = np.zeros(n, dtype=bool)
    v = None
    if near.swept is not None:
        lo, hi, _ = near._sweep
        v = float(ref[first + near.swept]) if swept_value is None else float(swept_value)
        v = min(max(v, lo), hi)
        held[first + near.swept] = True
    Tl = T
    s = near._lift(ref[0]) if near.lift else None
    if s is not None:
        held[0] = True
        Tl = T.copy()
        Tl[:3, 3] -= s * near.lift_axis
    robot = near._robot6 if v is None else _robot_or_none(near._EAIK, near.H, near.P, near.R0,
                                                          [(near.swept, v)])
    if robot is None:
        return near.coords, [], held, True
    try:
        sol = robot.calculate_IK(Tl)
    except RuntimeError:
        return near.coords, [], held, True
    rows = []
    for q in np.array(sol.Q, dtype=float).reshape(-1, n - first):
        if v is not None:
            q[near.swept] = v
        rows.append(q if s is None else np.concatenate([[s], q]))
    off = near._offset
    if off is not None and s is None:  # one axis's offset (axis_offset): its exact roots, or its moved chain's
        rows += last_axis_branches(off, T) if off.last else moved_starts(off, T, v)   # branches as starts
    if near.kind == "near":           # the reference too: a start whose answer the branches may all miss
        r = np.array(ref, dtype=float)
        if s is not None:
            r[0] = s
        if v is not None:
            r[first + near.swept] = v
        rows.append(r)
    return near.coords, rows, held, True


def _base(mechanism, frame, q_ref):
    """``(names, problem)``: the coordinates of the floating and planar joints where ``frame``'s chain starts (a
    mobile base's pose) and a problem that locks them at ``q_ref``'s values, or ``([], None)`` when the chain
    has none. Raises :class:`ModelStructureError` for such a joint after the chain's first other joint (no
    closed form moves it)."""
    ch = frame_chain(mechanism, frame)
    kinds = [mechanism.joint(mechanism.coordinate_joint[i]).type in _BASE_JOINTS for i in ch.coords]
    k = kinds.index(False) if False in kinds else len(kinds)
    if any(kinds[k:]):
        raise ModelStructureError(f"no closed form for the chain to {frame!r}: a floating or planar joint "
                                  f"follows its joint {mechanism.coordinate_names[ch.coords[k]]!r}")
    if not k:
        return [], None
    names = [mechanism.coordinate_names[i] for i in ch.coords[:k]]
    c = PoseConstraint(frame, np.eye(4)).bind(mechanism)
    return names, IKProblem(mechanism, [c], q_ref, names, [c])


def _engine(mechanism, frame, q_ref, held_base):
    """The lane engine of a full pose of ``frame`` (its one-lane pass gives the exact chain's residual and
    Jacobian in the ground frame), the coordinates ``held_base`` locked at ``q_ref``'s values."""
    c = PoseConstraint(frame, np.eye(4)).bind(mechanism)
    E = chain_engine(IKProblem(mechanism, [c], q_ref if held_base else mechanism.home, held_base, [c]))
    if E is None or E.nv != frame_chain(mechanism, frame).n - len(held_base):
        raise ModelStructureError(f"no chain engine for the full pose of {frame!r}")
    return E


def _newton(E, q, T, held):
    """Lightly damped Gauss-Newton steps (no limits; ``held`` joints kept) on the exact chain from ``q`` until
    within :data:`SOLUTION_TOL` (m and rad); the configuration reached, or None."""
    pt, RtT = T[:3, 3].copy(), T[:3, :3].T.copy()
    free = ~held
    x = np.array(q, dtype=float)
    r, J, ep, er = E._eval1(x, pt, RtT)
    c = float(r @ r)
    mu = 1e-3
    for _ in range(NEWTON_STEPS):
        if ep <= SOLUTION_TOL and er <= SOLUTION_TOL:
            return x
        Jf = J[:, free]
        A = Jf.T @ Jf
        A[np.diag_indices_from(A)] += mu * c + 1e-15
        try:
            dx = np.linalg.solve(A, Jf.T @ r)
        except np.linalg.LinAlgError:
            return None
        xn = x.copy()
        xn[free] -= dx
        rn, Jn, epn, ern = E._eval1(xn, pt, RtT)
        cn = float(rn @ rn)
        if cn < c:
            x, r, J, ep, er, c = xn, rn, Jn, epn, ern, cn
            mu = max(mu * 0.1, 1e-9)
        else:
            mu *= 10.0
            if mu > 1e6:
                break
    return x if ep <= SOLUTION_TOL and er <= SOLUTION_TOL else None


def _confirmed(mechanism, frame, coords, q_ref, q, T) -> bool:
    """Whether the core's forward kinematics of the chain puts ``frame`` within :data:`SOLUTION_TOL` of
    ``T`` at ``q`` (the chain's joints; the others at ``q_ref``)."""
    ch = frame_chain(mechanism, frame)
    full = np.array(q_ref, dtype=float)
    full[coords] = q
    Tf, _ = ch.evaluate(full[list(ch.coords)])
    return (math.sqrt(float(np.sum((Tf[:3, 3] - T[:3, 3]) ** 2))) <= SOLUTION_TOL
            and float(np.linalg.norm(log_so3(Tf[:3, :3] @ T[:3, :3].T))) <= SOLUTION_TOL)
