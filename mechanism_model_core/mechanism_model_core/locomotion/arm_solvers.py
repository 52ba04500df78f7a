"""Moved to :mod:`mechanism_model_core.ik.closed_form.yppp` (kept so that old imports keep working)."""

from ..ik.closed_form.yppp import YPPPSolver  # noqa: F401

__all__ = ["YPPPSolver"]
