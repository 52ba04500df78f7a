"""Solver registries: generic solvers by name (:func:`register_solver`, used by ``solve_ik(solver=...)``) and
specialized solvers by mechanism name and frame (:func:`register_specialized`, used by ``solver="auto"``).
Both are thread-safe; they sit under :mod:`.ik`, :mod:`.ik_solvers` and :mod:`.specialized`, which register
into them and look solvers up through them.
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable

from ..constraints import PoseConstraint
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


def solver_factory(name: str) -> Callable[..., Solver]:
    try:
        return _SOLVERS[name]
    except KeyError:
        raise MechanismModelError(f"unknown IK solver {name!r}; known: "
                                  f"{', '.join(['auto'] + sorted(_SOLVERS))}") from None


# ---------------------------------------------------------------------------------------------- specialized


_REGISTRY: dict[tuple[str, str], Callable[[Mechanism], object]] = {}
#: (id(mechanism), frame) -> (weak reference to the mechanism, solver or _REFUSED). Keyed by identity, not
#: name: an edited mechanism of the same name gets its own solver built from its own geometry (or refused).
#: Weak, so cached mechanisms can be collected (dead entries are purged when a new one is added).
_CACHE: dict[tuple[int, str], tuple[weakref.ref, object]] = {}
_LOCK = threading.Lock()          # registry and cache are shared by every thread that solves
_REFUSED = object()               # the factory raised ModelStructureError for this mechanism


def register_specialized(mechanism_name: str, frame: str, factory: Callable[[Mechanism], object]) -> None:
    """Use ``factory(mechanism)`` for pose problems on ``frame`` of mechanisms named ``mechanism_name``.
    Thread-safe; solvers already built for that frame are dropped."""
    with _LOCK:
        _REGISTRY[(mechanism_name, frame)] = factory
        for k in [k for k in _CACHE if k[1] == frame]:
            del _CACHE[k]


def unregister_specialized(mechanism_name: str, frame: str) -> None:
    with _LOCK:
        _REGISTRY.pop((mechanism_name, frame), None)
        for k in [k for k in _CACHE if k[1] == frame]:
            del _CACHE[k]


def find_specialized(problem: IKProblem):
    """The registered specialized solver for this problem, or None."""
    if not _REGISTRY:
        return None
    m = problem.mechanism
    if len(problem.tasks) != 1 or not isinstance(problem.tasks[0], PoseConstraint):
        return None
    frame = problem.tasks[0].frame
    key = (id(m), frame)
    with _LOCK:
        factory = _REGISTRY.get((m.name, frame))
        hit = _CACHE.get(key)
    if factory is None:
        return None
    solver = hit[1] if hit is not None and hit[0]() is m else None
    if solver is None:
        try:
            solver = factory(m)
        except ModelStructureError:      # a mechanism of that name without the expected structure
            solver = _REFUSED
        with _LOCK:
            if _REGISTRY.get((m.name, frame)) is factory:        # not re-registered meanwhile
                for k in [k for k, (ref, _) in _CACHE.items() if ref() is None]:
                    del _CACHE[k]
                _CACHE[key] = (weakref.ref(m), solver)
    if solver is _REFUSED:
        return None
    return solver if solver.accepts(problem) else None
