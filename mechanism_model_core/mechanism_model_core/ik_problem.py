"""Moved to :mod:`mechanism_model_core.ik.problem` (kept so that old imports keep working)."""

from .ik.problem import *  # noqa: F401,F403
from .ik.problem import IKOptions, IKProblem, IKResult, Residual, RestartingSolver, Solver  # noqa: F401
