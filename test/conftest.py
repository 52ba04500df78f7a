"""Shared pytest configuration: hypothesis profiles (CI runs the same number of examples, derandomised)."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))

#: the order pytest-xdist workers are handed test files in (scripts/test.sh, --dist loadfile
#: --no-loadscope-reorder): the long system and ROS files, which mostly wait on their subprocesses, first; the
#: core's many short files last, so that at the end no worker idles while the other runs one long file
_XDIST_ORDER = {"system": 0, "ros": 1}


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: _XDIST_ORDER.get(item.path.parent.name, 2))   # stable: files keep their order
