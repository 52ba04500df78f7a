"""Moved to :mod:`mechanism_model_core.ik.registry` (kept so that old imports keep working)."""

from .ik.registry import *  # noqa: F401,F403
