"""solve_ik and solve_ik_batch: input checks, the constraint manager and the choice of solver (overview in
:mod:`mechanism_model_core.ik`)."""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..collision.constraint import solve_ik_avoiding_collisions   # collision never imports ik: solve_ik is passed in
from ..constraints import Constraint, OrientationConstraint, PoseConstraint, PositionConstraint
from ..errors import InvalidConfiguration
from ..kinematics import frame_chain
from .closed_form.eaik_solver import eaik_solver_for
from .closed_form.near_decomposable import near_decomposable_solver_for
from .batch import (POPULATION, WIDE_FROM, BatchIKResult, LMPopulationSolver, chain_engine, lane_data,
                    target_rows_engine)
from .problem import CancellableIKOptions, IKOptions, IKProblem, IKResult, Residual, Solver
from .registry import find_specialized, has_solver, register_solver, registered_solvers, solver_factory
from .solvers import DLSSolver, ScipySolver
from ..model import Mechanism

__all__ = ["BatchIKResult", "ConstraintManager", "IKOptions", "IKProblem", "IKResult", "Residual", "Solver",
           "available_solvers", "problem_and_solver", "register_solver", "solve_ik", "solve_ik_batch"]


class ConstraintManager:
    """Holds the constraints of an IK problem on one mechanism (CLARAty 8.1, 8.7) and solves them.

    >>> cm = ConstraintManager(arm)
    >>> cm.add(PoseConstraint("tool", T))
    >>> cm.add(Posture(weight=1e-3))
    >>> result = cm.solve(q0)
    """

    def __init__(self, mechanism: Mechanism, constraints: Sequence[Constraint] = (), locked: Sequence[str] = ()):
        self.mechanism = mechanism
        self.constraints: list[Constraint] = []
        self._bound: list[Constraint] = []          # the same, bound to the mechanism
        self.locked = list(locked)
        for c in constraints:
            self.add(c)

    def add(self, constraint: Constraint) -> Constraint:
        """Add a constraint (checked against the mechanism at once: unknown names raise here)."""
        if not isinstance(constraint, Constraint):
            raise InvalidConfiguration(f"not a constraint: {constraint!r}")
        _check_weight_and_priority(constraint)
        bound = constraint.bind(self.mechanism)
        self.constraints.append(constraint)
        self._bound.append(bound)
        return constraint

    def extend(self, constraints) -> None:
        for c in constraints:
            self.add(c)

    def remove(self, constraint_or_name) -> None:
        for k, c in enumerate(self.constraints):
            if c is constraint_or_name or (c.name is not None and c.name == constraint_or_name):
                del self.constraints[k], self._bound[k]
                return
        raise KeyError(constraint_or_name)

    def clear(self) -> None:
        self.constraints.clear()
        self._bound.clear()

    def problem(self, q0=None) -> IKProblem:
        fresh = len(self._bound) == len(self.constraints)      # else the list was edited directly: rebind
        return _problem(self.mechanism, self.constraints, q0, self.locked, self._bound if fresh else None)

    def solve(self, q0=None, **kwargs) -> IKResult:
        """:func:`solve_ik` on these constraints."""
        return solve_ik(self.mechanism, self.constraints, q0, locked=self.locked, **kwargs)


def _problem(m: Mechanism, constraints, q0, locked, bound) -> IKProblem:
    """The :class:`IKProblem` of checked and ``bound`` constraints from seed ``q0`` (anything
    :meth:`Mechanism.configuration` takes; one configuration)."""
    if (type(q0) is np.ndarray and q0.dtype == np.float64 and q0.shape == (m.nq,)
            and math.isfinite(sum(q0.tolist()))):
        # the common case, as Mechanism.configuration takes it (copied later); a sum that is not finite (a NaN,
        # an inf, or an overflow of huge finite values) takes the general path, which gives the same array or
        # the error
        q = q0
    else:
        q = m.configuration(q0)
    if q.ndim != 1:
        raise InvalidConfiguration("q0 must be one configuration, not a batch")
    return IKProblem(m, constraints, q, locked, bound)


# ---------------------------------------------------------------------------------------------- registry
def available_solvers() -> list[str]:
    _ensure_builtin()
    return registered_solvers()


def _ensure_builtin():
    if not has_solver("dls"):      # registered when .solvers was imported (by this module)
        register_solver("dls", DLSSolver)
        register_solver("scipy", ScipySolver)
        register_solver("lm", LMPopulationSolver)


def _get_solver(name_or_solver, problem: IKProblem, solver_options):
    _ensure_builtin()
    if not isinstance(name_or_solver, str):
        return name_or_solver
    if name_or_solver == "auto":
        spec = find_specialized(problem)
        if spec is not None:
            return spec
        c = problem.tasks[0] if len(problem.tasks) == 1 else None
        if isinstance(c, PoseConstraint) and not solver_options:
            closed = _plain_closed_form(problem) if problem.plain_pose is not None else _UNKEPT
            if closed is _UNKEPT:
                closed = _closed_form(problem, c)
            if closed is not None:
                return closed
        # one pose/position/orientation on one chain of WIDE_FROM (6) or more unknowns: the population LM
        # (.batch); shorter chains (a pan-tilt mast: 0.50 against 0.70 ms CPU median) and everything else:
        # prioritized DLS, whose single-chain kernel has the lower fixed cost
        E = chain_engine(problem) if not solver_options else None
        name_or_solver = "lm" if E is not None and E.nv >= WIDE_FROM else "dls"
    return solver_factory(name_or_solver)(**(solver_options or {}))


def _closed_form(problem: IKProblem, c: PoseConstraint):
    """The closed form ``auto`` takes for pose ``c`` of ``problem``: the eaik solver of a decomposable chain (eaik
    present), else the near-decomposable one (a lift, an offset wrist), when it accepts the problem; else None."""
    closed = eaik_solver_for(problem.mechanism, c.frame, problem)
    if closed is not None and closed.accepts(problem):
        return closed
    near = near_decomposable_solver_for(problem.mechanism, c.frame, problem)
    if near is not None and near.accepts(problem):
        return near
    return None


_UNKEPT = object()


def _plain_closed_form(problem: IKProblem):
    """:func:`_closed_form` of a :attr:`~.problem.IKProblem.plain_pose` problem, kept in its structure's solver
    constants by frame when every joint of the frame's chain is an unknown: the choice then depends on the
    structure and the frame alone (the closed forms are kept by frame, their ``accepts`` reads the unknowns and
    the constraint's kind, frame, mask and reference, which a plain pose fixes); ``_UNKEPT`` otherwise (locked
    joints on the chain: the eaik solver is kept per locked values)."""
    consts = problem.structure.solver_constants
    frame = problem.plain_pose.frame
    hit = consts.get(("auto", frame), _UNKEPT)
    if hit is _UNKEPT:
        chain = frame_chain(problem.mechanism, frame).coords
        if not (problem.all_free or bool(problem.free_mask[chain].all())):
            hit = consts[("auto", frame)] = _KEPT_NOT
        else:
            hit = consts[("auto", frame)] = _closed_form(problem, problem.plain_pose)
    return _UNKEPT if hit is _KEPT_NOT else hit


_KEPT_NOT = object()


#: bounds of solve_ik's options: a time budget of more than an hour, a position tolerance above 1 m or an
#: orientation tolerance above pi rad (every orientation is within pi of every other) is a mistake, and
#: is refused rather than reported as a "success" that means nothing
MAX_TIMEOUT = 3600.0
MAX_TOL_POSITION = 1.0
MAX_TOL_ORIENTATION = math.pi


def _real_option(name, value, lo, hi, unit, open_low=False) -> float:
    if type(value) is float or type(value) is int:          # the common case, without the ABC checks
        pass
    elif isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(value, numbers.Real):
        raise InvalidConfiguration(f"{name} must be a number ({unit}), got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and (v > lo if open_low else v >= lo) and v <= hi):
        low = f"> {lo:g}" if open_low else f">= {lo:g}"
        raise InvalidConfiguration(f"{name} must be {low} and <= {hi:g} {unit}, got {value!r}")
    return v


def _count_option(name, value) -> int:
    """An integer option that must be >= 1 (iterations, population sizes); bools and floats are refused."""
    if type(value) is int and value >= 1:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidConfiguration(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _check_rng(rng) -> None:
    if rng is None:
        return
    ok = (rng is None or isinstance(rng, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence))
          or (isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)) and rng >= 0))
    if not ok:
        raise InvalidConfiguration(f"rng must be None, a non-negative integer seed or a numpy Generator, "
                                   f"got {rng!r}")


def _check_weight_and_priority(c: Constraint) -> None:
    w = getattr(c, "weight", 1.0)
    p = getattr(c, "priority", 0)
    if (type(w) is float or type(w) is int) and type(p) is int and math.isfinite(w) and w >= 0:
        return                                               # the common case, without the ABC checks
    label = getattr(c, "label", type(c).__name__)
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real) or not (math.isfinite(w) and w >= 0):
        raise InvalidConfiguration(f"constraint {label}: weight must be a finite number >= 0, got {w!r}")
    if (isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not math.isfinite(p)
            or float(p) != int(p)):
        raise InvalidConfiguration(f"constraint {label}: priority must be an integer, got {p!r}")


class _LazyRng:
    """A numpy Generator created on first use (most solves never restart, and creating one costs time)."""

    __slots__ = ("_seed", "_gen")

    def __init__(self, seed):
        self._seed, self._gen = seed, None

    def __getattr__(self, name):
        if self._gen is None:
            self._gen = np.random.default_rng(self._seed)
        return getattr(self._gen, name)


def solve_ik(mechanism: Mechanism, constraints: Sequence[Constraint] | Constraint, q0=None, *,
             solver="auto", timeout: float = 0.05, tol_position: float = 1e-6, tol_orientation: float = 1e-5,
             max_iterations: int = 10000, rng=None, locked: Sequence[str] = (), restarts: bool = True,
             solver_options: Mapping | None = None, avoid_collisions: bool = False, environment=None,
             collision_margin: float = 0.0, cancel=None) -> IKResult:
    """Solve inverse kinematics for ``constraints`` on ``mechanism`` (CLARAty 7.4).

    ``q0``: initial configuration (array, independent-only array or ``{name: value}``; home when None),
    clamped into the limits. ``solver``: a registered name (``"auto"``, ``"dls"``, ``"scipy"``) or a solver
    object. ``timeout`` (s) bounds the whole solve including restarts; ``tol_position`` (m) and
    ``tol_orientation`` (rad) decide success for every constraint; ``locked`` names joints held at their
    ``q0`` value; ``restarts`` allows random restarts from in-limit configurations drawn from ``rng`` (a seed
    or a numpy Generator; a fixed seed by default, so solves are repeatable).
    Returns an :class:`IKResult`; it raises :class:`~.errors.InvalidConfiguration` (or another error of the
    package's family) only for malformed input, before any solving: unknown frames or joints, bad shapes,
    weights that are not finite numbers >= 0, priorities that are not integers, ``timeout`` outside
    [0, 3600] s, ``tol_position`` outside (0, 1] m, ``tol_orientation`` outside (0, pi] rad,
    ``max_iterations`` below 1, an ``rng`` that is not a seed or a numpy Generator.

    Every returned configuration lies within the joint limits, coupled joints included (a lock value beyond
    a limit holds the joint at the limit). Angles of revolute joints that matter only modulo 2 pi (continuous
    joints, or ranges of a full turn or more) come back as the turn nearest ``q0`` -- or the posture's rest
    value when there is a :class:`Posture` -- unless a coupling or a joint constraint reads them.

    ``avoid_collisions`` (MoveIt's flag; needs ``coal``): a configuration in self-collision, or in collision
    with ``environment`` (a :class:`~.collision.Environment`), or closer than ``collision_margin`` m, is never
    a success; the solver looks for a collision-free answer until ``timeout`` and otherwise fails with reason
    ``"collision"`` (:func:`~.collision.constraint.solve_ik_avoiding_collisions`).

    ``cancel``: anything with ``is_set()`` (a ``threading.Event``); once set, the solve ends at its next
    iteration as a timeout (reason ``"timeout"``), e.g. when the client that asked for it has left.
    """
    if avoid_collisions:    # MoveIt's flag: never a colliding success (collision/constraint.py)
        return solve_ik_avoiding_collisions(
            solve_ik, mechanism, constraints, q0, environment=environment, margin=collision_margin, timeout=timeout,
            rng=rng, solver=solver, tol_position=tol_position, tol_orientation=tol_orientation,
            max_iterations=max_iterations, locked=locked, restarts=restarts, solver_options=solver_options,
            cancel=cancel)
    t0 = time.perf_counter()
    # the options: plain floats within range pass without a call (the checks below, inlined)
    if not (type(timeout) is float and 0.0 <= timeout <= MAX_TIMEOUT):
        timeout = _real_option("timeout", timeout, 0.0, MAX_TIMEOUT, "s")
    if not (type(tol_position) is float and 0.0 < tol_position <= MAX_TOL_POSITION):
        tol_position = _real_option("tol_position", tol_position, 0.0, MAX_TOL_POSITION, "m", open_low=True)
    if not (type(tol_orientation) is float and 0.0 < tol_orientation <= MAX_TOL_ORIENTATION):
        tol_orientation = _real_option("tol_orientation", tol_orientation, 0.0, MAX_TOL_ORIENTATION, "rad",
                                       open_low=True)
    if not (type(max_iterations) is int and max_iterations >= 1):
        _count_option("max_iterations", max_iterations)
    if rng is not None:
        _check_rng(rng)
    problem, s = problem_and_solver(mechanism, constraints, q0, locked=locked, solver=solver,
                                    solver_options=solver_options)
    if cancel is None:
        opts = IKOptions(timeout, tol_position, tol_orientation, int(max_iterations), bool(restarts),
                         _LazyRng(0 if rng is None else rng), t0, t0 + timeout)
    else:
        opts = CancellableIKOptions(
            timeout=timeout, tol_position=tol_position, tol_orientation=tol_orientation,
            max_iterations=int(max_iterations), restarts=bool(restarts), rng=_LazyRng(0 if rng is None else rng),
            start=t0, deadline=t0 + timeout, cancel=cancel)
    if time.perf_counter() - t0 > 0.5e-3:   # the first solve on a chain built its caches: not billed
        opts.start = time.perf_counter()
        opts.deadline = opts.start + float(timeout)
    return s.solve(problem, opts)


def problem_and_solver(mechanism: Mechanism, constraints: Sequence[Constraint] | Constraint, q0=None, *,
                       locked: Sequence[str] = (), solver="auto", solver_options: Mapping | None = None):
    """``(problem, solver)``: what :func:`solve_ik` solves with for these arguments (the same meaning), without
    solving -- the :class:`IKProblem` of ``constraints`` (one or a sequence, checked and bound to
    ``mechanism``) from seed ``q0`` (home when None) with the joints ``locked`` held at their seed values, and
    the solver object ``solver`` names for it (``"auto"``: the choice the table of :mod:`mechanism_model_core.ik`
    describes -- a registered closed form, the eaik or near-decomposable closed form, the population LM or the
    prioritized DLS). Answer with ``solver.solve(problem, options)`` (:class:`IKOptions`, its ``start`` and
    ``deadline`` on the ``time.perf_counter`` clock). Builds what a first solve of this shape builds (the chain,
    the problem's structure, the closed form and its criteria), as :func:`~.prepare.prepare_ik` does ahead of
    time. Raises :class:`~.errors.InvalidConfiguration` (or another error of the package's family) for
    malformed input, as :func:`solve_ik` does."""
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    elif type(constraints) in (list, tuple):
        pass
    elif isinstance(constraints, (str, bytes)) or not isinstance(constraints, Iterable):
        raise InvalidConfiguration(f"constraints must be a constraint or a sequence of them, got {constraints!r}")
    bound = []
    for c in constraints:                           # ConstraintManager.add's checks, without the manager
        if type(c) is PoseConstraint and c.relative_to is None and type(c.priority) is int \
                and type(c.weight) is float and 0.0 <= c.weight < math.inf and mechanism.has_frame(c.frame):
            bound.append(c)                         # the common case: those checks passed, bound as it is
            continue
        if not isinstance(c, Constraint):
            raise InvalidConfiguration(f"not a constraint: {c!r}")
        _check_weight_and_priority(c)
        bound.append(c.bind(mechanism))
    if type(locked) is not tuple and type(locked) is not list:
        locked = list(locked)                       # read twice (a generator would be empty the second time)
    problem = _problem(mechanism, constraints, q0, locked, bound)
    return problem, _get_solver(solver, problem, solver_options)


# ---------------------------------------------------------------------------------------------- batch
#: solve_ik_batch's default cap on the lane-iterations spent on one target
BATCH_MAX_ITERATIONS = 2000


def _template_target(c, T):
    """``c`` with its target replaced by pose ``T`` (4x4; (3,) for a position)."""
    if isinstance(c, PoseConstraint):
        return dataclasses.replace(c, target=T)
    if isinstance(c, PositionConstraint):
        return dataclasses.replace(c, target_xyz=T[:3, 3] if T.shape == (4, 4) else T)
    return dataclasses.replace(c, target_rotation=T[:3, :3])


def _batch_targets(c, targets) -> np.ndarray:
    """(B, 4, 4) finite target poses from ``targets``: (B, 4, 4) poses, or (B, 3) points for a position."""
    try:
        T = np.asarray(targets, dtype=float)
    except (TypeError, ValueError):
        raise InvalidConfiguration("targets must be an array of poses (B, 4, 4) or points (B, 3)") from None
    if isinstance(c, PositionConstraint) and T.ndim == 2 and T.shape[1] == 3:
        P = np.zeros((T.shape[0], 4, 4))
        P[:] = np.eye(4)
        P[:, :3, 3] = T
        T = P
    elif isinstance(c, OrientationConstraint) and T.ndim == 3 and T.shape[1:] == (3, 3):
        P = np.zeros((T.shape[0], 4, 4))
        P[:] = np.eye(4)
        P[:, :3, :3] = T
        T = P
    if T.ndim != 3 or T.shape[1:] != (4, 4):
        want = "(B, 3) points or (B, 4, 4) poses" if isinstance(c, PositionConstraint) else "(B, 4, 4) poses"
        raise InvalidConfiguration(f"targets must be {want}, got shape {T.shape}")
    bad = np.flatnonzero(~np.all(np.isfinite(T), axis=(1, 2)))
    if bad.size:
        raise InvalidConfiguration(f"target {int(bad[0])} is not finite (NaN or inf): {T[bad[0]].tolist()}")
    R = T[:, :3, :3]
    err = np.abs(R @ R.transpose(0, 2, 1) - np.eye(3)).max(axis=(1, 2))
    bad = np.flatnonzero((err > 1e-6) | (np.abs(np.linalg.det(R) - 1.0) > 1e-6)
                         | np.any(np.abs(T[:, 3] - [0.0, 0.0, 0.0, 1.0]) > 1e-12, axis=1))
    if bad.size:
        raise InvalidConfiguration(f"target {int(bad[0])} is not a rigid transform (rotation not orthonormal "
                                   f"or last row not [0, 0, 0, 1])")
    return T


def solve_ik_batch(mechanism: Mechanism, constraint, targets, q0=None, *, timeout: float | None = None,
                   tol_position: float = 1e-6, tol_orientation: float = 1e-5,
                   max_iterations: int = BATCH_MAX_ITERATIONS, rng=None, locked: Sequence[str] = (),
                   restarts: bool = True, population: int = POPULATION, start_width: int = 1) -> BatchIKResult:
    """Solve one constraint for B targets at once: ``constraint`` is a :class:`PoseConstraint`,
    :class:`PositionConstraint` or :class:`OrientationConstraint` (frame, ``relative_to``, mask and weights
    as for :func:`solve_ik`; its own target is ignored) or a frame name (full pose); ``targets`` are (B, 4, 4)
    poses (a position constraint also takes (B, 3) points, an orientation one (B, 3, 3) rotations).

    ``q0``: one seed for every target (anything :func:`solve_ik` takes) or one per target, (B, nq).
    ``timeout`` (s) bounds the whole batch (None: no wall-clock bound, the answer depends on the inputs
    only); ``max_iterations`` bounds the lane-iterations spent on each target; ``population`` is the number of
    seeds a target is given once its first one stalls, ``start_width`` how many it starts with (1: the seed
    alone, the least work per target; more: the seed and the seed table's configurations whose frame pose is
    nearest the target, fewer iterations, as single solves do); ``rng`` (an
    integer) seeds the restart sequence, which is the same for every target. Target ``k``'s answer is the
    one ``solve_ik_batch`` gives for that target alone, and with ``start_width=population`` the one of
    ``solve_ik(..., solver="lm", solver_options={"focus": False})`` with the same settings and no time limit
    (to rounding) -- except for a mask in each target's own axes (``mask_frame="target"`` with a partial
    mask, such as a tool's roll left free), which the batch runs on the lane engine with each lane's rows
    turned to its target while a single solve of it takes the prioritized DLS: both reach the target within
    the tolerances, not necessarily at the same configuration.

    Returns a :class:`~.batch.BatchIKResult`. Raises :class:`~.errors.InvalidConfiguration` for malformed
    input before solving: an empty batch, targets of the wrong shape, not finite or not rigid transforms, seeds
    of the wrong shape, bad tolerances."""
    t0 = time.perf_counter()
    if isinstance(constraint, str):
        constraint = PoseConstraint(constraint, np.eye(4))
    if not isinstance(constraint, (PoseConstraint, PositionConstraint, OrientationConstraint)):
        raise InvalidConfiguration(f"solve_ik_batch takes one PoseConstraint, PositionConstraint or "
                                   f"OrientationConstraint (or a frame name), got {constraint!r}")
    _check_weight_and_priority(constraint)
    T = _batch_targets(constraint, targets)
    B = T.shape[0]
    if B == 0:
        raise InvalidConfiguration("empty batch: targets has no pose")
    _count_option("population", population)
    _count_option("start_width", start_width)
    if timeout is not None:
        timeout = _real_option("timeout", timeout, 0.0, MAX_TIMEOUT, "s")
    tol_position = _real_option("tol_position", tol_position, 0.0, MAX_TOL_POSITION, "m", open_low=True)
    tol_orientation = _real_option("tol_orientation", tol_orientation, 0.0, MAX_TOL_ORIENTATION, "rad",
                                   open_low=True)
    _count_option("max_iterations", max_iterations)
    if not (rng is None or (isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_))
                            and rng >= 0)):
        raise InvalidConfiguration(f"rng must be None or a non-negative integer seed, got {rng!r}")
    seed = 0 if rng is None else int(rng)
    # seeds: one for all, or one per target
    Q0 = None
    if q0 is not None and not isinstance(q0, Mapping):
        a = np.asarray(q0, dtype=float) if not isinstance(q0, (str, bytes)) else None
        if a is not None and a.ndim == 2:
            if a.shape[0] != B:
                raise InvalidConfiguration(f"q0 holds {a.shape[0]} seeds for {B} targets")
            Q0 = np.stack([mechanism.configuration(row) for row in a])
    base_q0 = None if Q0 is None else Q0[0]
    cm = ConstraintManager(mechanism, [_template_target(constraint, T[0])], locked)
    P = cm.problem(q0 if Q0 is None else base_q0)
    if Q0 is not None and P.locked.size and np.any(Q0[:, P.locked] != Q0[:1, P.locked]):
        raise InvalidConfiguration("per-target seeds must agree on the locked joints")
    E = target_rows_engine(P) if P.n else None
    deadline = math.inf if timeout is None else t0 + timeout
    o = IKOptions(timeout=math.inf if timeout is None else timeout, tol_position=tol_position,
                  tol_orientation=tol_orientation, max_iterations=int(max_iterations), restarts=bool(restarts),
                  rng=_LazyRng(seed), start=t0, deadline=deadline)
    nq = mechanism.nq
    seeds = np.broadcast_to(P.template, (B, nq)) if Q0 is None else Q0

    def problem_of(k):
        return ConstraintManager(mechanism, [_template_target(constraint, T[k])], locked).problem(seeds[k])

    if E is None:
        # not a single-chain task the lane engine takes: one solve per target with the same settings
        res = []
        for k in range(B):
            ok = dict(timeout=max(0.0, deadline - time.perf_counter()) if timeout is not None else MAX_TIMEOUT,
                      tol_position=tol_position, tol_orientation=tol_orientation, max_iterations=max_iterations,
                      rng=seed, locked=locked, restarts=restarts)
            res.append(solve_ik(mechanism, [_template_target(constraint, T[k])], seeds[k], **ok))
        q = np.stack([r.q for r in res])
        pe = np.array([r.residuals[0].position for r in res])
        oe = np.array([r.residuals[0].orientation for r in res])
        return BatchIKResult(q, np.array([r.success for r in res]), np.array([r.reason for r in res], dtype=object),
                             pe, oe, np.array([r.iterations for r in res]), np.array([r.restarts for r in res]),
                             time.perf_counter() - t0, res[0].solver if res else "", mechanism.coordinate_names,
                             lambda k: res[k])
    xf0, x0, _, _, T_wr = lane_data(P)
    Tg = T if T_wr is None else T_wr @ T
    pts = np.ascontiguousarray(Tg[:, :3, 3])
    RtT = np.ascontiguousarray(Tg[:, :3, :3].transpose(0, 2, 1))
    X0 = np.broadcast_to(x0, (B, E.nv)) if Q0 is None else np.clip(Q0[:, P.free], P.lower, P.upper)[:, E.var_x]
    if restarts and min(start_width, population) > 1:
        E.seed_table()                                                  # built once, before the budget
    if time.perf_counter() - t0 > 0.5e-3 and timeout is not None:      # the engine was built: not billed
        deadline += time.perf_counter() - t0
    xs, ok, st, its, nr = E.run(X0, pts, RtT, tol_position, tol_orientation, deadline=deadline,
                                      max_iterations=int(max_iterations), restarts=bool(restarts),
                                  population=population, seed=seed, start_width=start_width)
    _, _, ep, er = E.evaluate(xs, pts, RtT)
    if not E.need_pos:
        ep = np.full(B, np.nan)
    if not E.need_rot:
        er = np.full(B, np.nan)
    reason = np.where(ok, "converged", np.where(st == "out_of_reach", "unreachable",
                                                np.where(st == "stalled", "unreachable", st))).astype(object)
    q = np.empty((B, nq))
    ref_full = P.periodic_reference
    Xfull = None if Q0 is None else np.clip(Q0[:, P.free], P.lower, P.upper)
    for k in range(B):
        x = (xf0 if Xfull is None else Xfull[k]).copy()      # joints off the chain keep the target's seed
        x[E.var_x] = xs[k]
        if Xfull is not None:
            if P.any_periodic:
                P.periodic_reference = Xfull[k][P.periodic]
        q[k] = P.expand(P.wrap_near_reference(x))
    P.periodic_reference = ref_full
    elapsed = time.perf_counter() - t0

    def make(k):
        Pk = problem_of(k)
        ok_k = bool(ok[k])
        x = Pk.x_of(q[k])
        r = Pk.result(x, ok_k, str(reason[k]), o, int(its[k]), int(nr[k]), "lm")
        r.time = elapsed
        return r

    return BatchIKResult(q, ok.astype(bool), reason, ep, er, its, nr, elapsed, "lm", mechanism.coordinate_names,
                         make)
