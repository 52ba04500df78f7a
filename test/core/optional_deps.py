"""Optional dependencies in tests: skip where an extra is legitimately absent (the oldest-dependencies run),
fail in the main CI run, where requirements-test.txt installs every extra."""

import importlib
import os

import pytest


def require(module: str, extra: str):
    """Import ``module`` or skip; in CI (``CI`` set) outside the oldest-dependencies run
    (``MM_OLDEST_DEPS`` unset), a missing module fails the test instead."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if os.environ.get("CI") and not os.environ.get("MM_OLDEST_DEPS"):
            pytest.fail(f"{module} is missing in the main CI run (pip install './mechanism_model_core[{extra}]'): {e}")
        pytest.skip(f"{module} not installed (mechanism_model_core[{extra}])", allow_module_level=True)
