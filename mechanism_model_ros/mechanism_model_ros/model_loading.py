"""Loading the model a node serves: a file path or a name in the robot library (default: the library's
default model)."""

from __future__ import annotations

from mechanism_model_core import load_model
from mechanism_model_core.library import default_model_path, model_path


def resolve_model_path(model: str | None) -> str:
    if not model:
        return default_model_path()
    return model_path(model)


def load_served_model(model: str | None):
    """``(mechanism, path)``; raises the core's ModelFileError with file and line on a bad file."""
    path = resolve_model_path(model)
    return load_model(path), path
