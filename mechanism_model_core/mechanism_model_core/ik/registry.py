"""Solver registries: generic solvers by name (:func:`register_solver`, used by ``solve_ik(solver=...)``) and
specialized solvers by mechanism name and frame (:func:`register_specialized`, used by ``solver="auto"``).
Both are thread-safe; they sit under :mod:`.ik`, :mod:`.ik_solvers` and :mod:`.specialized`, which register
into them and look solvers up through them.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..constraints import PoseConstraint
from ..data import memo
from ..errors import MechanismModelError, ModelStructureError
from .problem import IKProblem, Solver
from ..model import Mechanism

__all__ = ["find_specialized", "register_solver", "register_specialized", "registered_solvers", "solver_factory",
           "unregister_specialized"]


_SOLVERS: dict[str, Callable[..., Solver]] = {}


def register_solver(name: str, factory: Callable[..., Solver]) -> None:
    """Make ``solve_ik(..., solver=name)`` use ``factory(**solver_options)``."""
    if not name or name == "auto":
        raise ValueError("a solver needs a name other than 'auto'")
    _SOLVERS[name] = factory


def registered_solvers() -> list[str]:
    """Names registered so far (:func:`mechanism_model_core.ik.available_solvers` also loads the built-in
    ones)."""
    return sorted(_SOLVERS)


def has_solver(name: str) -> bool:
    """Whether a solver of that name is registered."""
    return name in _SOLVERS


def solver_factory(name: str) -> Callable[..., Solver]:
    try:
        return _SOLVERS[name]
    except KeyError:
        raise MechanismModelError(f"unknown IK solver {name!r}; known: "
                                  f"{', '.join(['auto'] + sorted(_SOLVERS))}") from None


# ---------------------------------------------------------------------------------------------- specialized


_REGISTRY: dict[tuple[str, str], Callable[[Mechanism], object]] = {}
_LOCK = threading.Lock()          # the registry is shared by every thread that solves
_REFUSED = object()               # the factory raised ModelStructureError for this mechanism
#: specialized solvers kept per mechanism (a memo of its derived data, :mod:`..data`, by frame and factory:
#: an edited mechanism of the same name gets its own solver built from its own geometry, or refused)
_SPECIALIZED_MAX = 64


def register_specialized(mechanism_name: str, frame: str, factory: Callable[[Mechanism], object]) -> None:
    """Use ``factory(mechanism)`` for pose problems on ``frame`` of mechanisms named ``mechanism_name``.
    Thread-safe; solvers built by an earlier factory for that frame are no longer used."""
    with _LOCK:
        _REGISTRY[(mechanism_name, frame)] = factory


def unregister_specialized(mechanism_name: str, frame: str) -> None:
    with _LOCK:
        _REGISTRY.pop((mechanism_name, frame), None)


def find_specialized(problem: IKProblem):
    """The registered specialized solver for this problem, or None."""
    if not _REGISTRY:
        return None
    m = problem.mechanism
    if len(problem.tasks) != 1 or not isinstance(problem.tasks[0], PoseConstraint):
        return None
    frame = problem.tasks[0].frame
    factory = _REGISTRY.get((m.name, frame))
    if factory is None:
        return None
    solvers = memo(m, "ik.specialized", _SPECIALIZED_MAX)
    solver = solvers.peek((frame, factory))
    if solver is None:
        solver = solvers.put((frame, factory), _build(factory, m))
    if solver is _REFUSED:
        return None
    return solver if solver.accepts(problem) else None


def _build(factory, m):
    try:
        return factory(m)
    except ModelStructureError:      # a mechanism of that name without the expected structure
        return _REFUSED
