"""Moved to :mod:`mechanism_model_core.ik` (closed forms in :mod:`mechanism_model_core.ik.closed_form`, the
registry in :mod:`mechanism_model_core.ik.registry`); kept so that old imports keep working."""

from .ik.closed_form import YPPPYSolver, confirm_candidates
from .ik.registry import find_specialized, register_specialized, unregister_specialized  # noqa: F401
from .ik.verify import VerificationReport, verify_specialized  # noqa: F401

__all__ = ["VerificationReport", "YPPPYSolver", "confirm_candidates", "find_specialized", "register_specialized",
           "unregister_specialized", "verify_specialized"]
