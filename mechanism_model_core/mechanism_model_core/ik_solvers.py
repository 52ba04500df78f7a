"""Moved to :mod:`mechanism_model_core.ik.solvers` (kept so that old imports keep working)."""

from .ik.solvers import DLSSolver, ScipySolver

__all__ = ["DLSSolver", "ScipySolver"]
