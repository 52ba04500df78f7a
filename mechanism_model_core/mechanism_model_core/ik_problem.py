"""Moved to :mod:`mechanism_model_core.ik.problem` (kept so that old imports keep working)."""

from .ik.problem import (IKOptions, IKProblem, IKResult, Residual, RestartingSolver, Solver, diagnose_failure,
                         restart_sample)

__all__ = ["IKOptions", "IKProblem", "IKResult", "Residual", "RestartingSolver", "Solver", "diagnose_failure",
           "restart_sample"]
