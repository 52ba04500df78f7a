"""Moved to :mod:`mechanism_model_core.ik.registry` (kept so that old imports keep working)."""

from .ik.registry import (find_specialized, register_solver, register_specialized, registered_solvers,
                          solver_factory, unregister_specialized)

__all__ = ["find_specialized", "register_solver", "register_specialized", "registered_solvers", "solver_factory",
           "unregister_specialized"]
