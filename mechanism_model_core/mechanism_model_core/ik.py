"""Inverse kinematics: the constraint manager, the result object and the solver registry (CLARAty 7.4, 8).

>>> result = solve_ik(arm, [PoseConstraint("tool", T_target)], q0)
>>> result.success, result.reason, result.q                # q: full coordinates, within limits

:class:`ConstraintManager` stacks any number of constraints (:mod:`.constraints`) into one problem
(:class:`IKProblem`): it groups them by priority level, eliminates locked joints and the model's coupled
joints from the unknowns, collects the joint limits, and evaluates every constraint's residual and Jacobian
from one forward pass. A *solver* then works on the problem. Solvers are looked up by name:

``"dls"``    prioritized damped least squares (:class:`~.ik_solvers.DLSSolver`).
``"scipy"``  :func:`scipy.optimize.least_squares` with bounds (:class:`~.ik_solvers.ScipySolver`); priority
             levels become weights (each level 1e3 times the next), so it is not strictly prioritized.
``"auto"``   the default of :func:`solve_ik`: a specialized solver registered for this mechanism and frame
             (:mod:`.specialized`) when the problem suits it, else ``"dls"``.

Plugging in a solver: write a class with ``name`` and ``solve(problem, options) -> IKResult`` (see
:class:`Solver`), and ``register_solver("mine", factory)``; ``factory(**solver_options)`` returns an
instance. ``problem`` gives the unknowns (``free``, ``lower``, ``upper``), ``expand(x)`` to full coordinates,
``evaluate(x)`` for the stacked residuals and Jacobians per level, ``satisfied(...)`` for the tolerances and
``result(x, success, reason, options, iterations, restarts, name)`` to build the :class:`IKResult`.

Solving is re-entrant: a solve keeps its state in its own objects (the mechanism is immutable; the only
shared data are caches of constant chain geometry), so threads may solve on one mechanism at once.

An unreachable target does not raise: the result holds the best compromise found, ``success=False`` and a
``reason``: ``"converged"`` (success), ``"unreachable"`` (every attempt stalled with a residual left),
``"limits"`` (stalled against joint limits), ``"singular"`` (stalled at a singular Jacobian while a
descent direction remained), ``"timeout"`` (the time budget ended the first attempt while it was still
progressing) or ``"max_iterations"``.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Iterable, Mapping, Sequence

import numpy as np

from .constraints import Constraint
from .errors import InvalidConfiguration
from .ik_problem import IKOptions, IKProblem, IKResult, Residual, Solver
from .ik_registry import find_specialized, register_solver, registered_solvers, solver_factory
from .model import Mechanism

__all__ = ["ConstraintManager", "IKOptions", "IKProblem", "IKResult", "Residual", "Solver", "available_solvers",
           "register_solver", "solve_ik"]


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
        q = self.mechanism.configuration(q0)
        if q.ndim != 1:
            raise InvalidConfiguration("q0 must be one configuration, not a batch")
        fresh = len(self._bound) == len(self.constraints)      # else the list was edited directly: rebind
        return IKProblem(self.mechanism, self.constraints, q, self.locked, self._bound if fresh else None)

    def solve(self, q0=None, **kwargs) -> IKResult:
        """:func:`solve_ik` on these constraints."""
        return solve_ik(self.mechanism, self.constraints, q0, locked=self.locked, **kwargs)


# ---------------------------------------------------------------------------------------------- registry
def available_solvers() -> list[str]:
    _ensure_builtin()
    return registered_solvers()


def _ensure_builtin():
    if "dls" not in registered_solvers():
        from . import ik_solvers  # noqa: F401  (registers "dls" and "scipy")


def _get_solver(name_or_solver, problem: IKProblem, solver_options):
    _ensure_builtin()
    if not isinstance(name_or_solver, str):
        return name_or_solver
    if name_or_solver == "auto":
        spec = find_specialized(problem)
        if spec is not None:
            return spec
        name_or_solver = "dls"
    return solver_factory(name_or_solver)(**(solver_options or {}))


#: bounds of solve_ik's options: a time budget of more than an hour, a position tolerance above 1 m or an
#: orientation tolerance above pi rad (every orientation is within pi of every other) is a mistake, and
#: is refused rather than reported as a "success" that means nothing
MAX_TIMEOUT = 3600.0
MAX_TOL_POSITION = 1.0
MAX_TOL_ORIENTATION = math.pi


def _real_option(name, value, lo, hi, unit, open_low=False) -> float:
    if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(value, numbers.Real):
        raise InvalidConfiguration(f"{name} must be a number ({unit}), got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and (v > lo if open_low else v >= lo) and v <= hi):
        low = f"> {lo:g}" if open_low else f">= {lo:g}"
        raise InvalidConfiguration(f"{name} must be {low} and <= {hi:g} {unit}, got {value!r}")
    return v


def _check_rng(rng) -> None:
    ok = (rng is None or isinstance(rng, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence))
          or (isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)) and rng >= 0))
    if not ok:
        raise InvalidConfiguration(f"rng must be None, a non-negative integer seed or a numpy Generator, "
                                   f"got {rng!r}")


def _check_weight_and_priority(c: Constraint) -> None:
    label = getattr(c, "label", type(c).__name__)
    w = getattr(c, "weight", 1.0)
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, numbers.Real) or not (math.isfinite(w) and w >= 0):
        raise InvalidConfiguration(f"constraint {label}: weight must be a finite number >= 0, got {w!r}")
    p = getattr(c, "priority", 0)
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
             collision_margin: float = 0.0) -> IKResult:
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
    """
    if avoid_collisions:    # MoveIt's flag: never a colliding success (collision/constraint.py)
        from .collision.constraint import solve_ik_avoiding_collisions

        return solve_ik_avoiding_collisions(
            solve_ik, mechanism, constraints, q0, environment=environment, margin=collision_margin, timeout=timeout,
            rng=rng, solver=solver, tol_position=tol_position, tol_orientation=tol_orientation,
            max_iterations=max_iterations, locked=locked, restarts=restarts, solver_options=solver_options)
    t0 = time.perf_counter()
    timeout = _real_option("timeout", timeout, 0.0, MAX_TIMEOUT, "s")
    tol_position = _real_option("tol_position", tol_position, 0.0, MAX_TOL_POSITION, "m", open_low=True)
    tol_orientation = _real_option("tol_orientation", tol_orientation, 0.0, MAX_TOL_ORIENTATION, "rad",
                                   open_low=True)
    if isinstance(max_iterations, (bool, np.bool_)) or not isinstance(max_iterations, numbers.Integral) \
            or max_iterations < 1:
        raise InvalidConfiguration(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    _check_rng(rng)
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    elif isinstance(constraints, (str, bytes)) or not isinstance(constraints, Iterable):
        raise InvalidConfiguration(f"constraints must be a constraint or a sequence of them, got {constraints!r}")
    cm = ConstraintManager(mechanism, constraints, locked)
    problem = cm.problem(q0)
    opts = IKOptions(timeout=timeout, tol_position=tol_position,
                     tol_orientation=tol_orientation, max_iterations=int(max_iterations),
                     restarts=bool(restarts), rng=_LazyRng(0 if rng is None else rng),
                     start=t0, deadline=t0 + timeout)
    s = _get_solver(solver, problem, solver_options)
    if time.perf_counter() - t0 > 0.01:   # the first call imported a solver module: do not bill the import
        opts.start = time.perf_counter()
        opts.deadline = opts.start + float(timeout)
    return s.solve(problem, opts)
