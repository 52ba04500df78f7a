"""Shared pytest configuration: hypothesis profiles (CI runs the same number of examples, derandomised), the
order xdist workers take the files in, and a check that no test module leaves the project's threads running."""

import os
import threading
import time

import pytest
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


#: name prefixes of the threads the project starts (transports, nodes, serve); a test module must leave none of
#: them running: in a pytest-xdist worker they would keep working through every later module of the process
PROJECT_THREADS = ("mm-",)
#: how long a module's threads may take to end after its last test (s): a bound on a join, never a sleep
THREAD_END_BOUND = 5.0


@pytest.fixture(scope="module", autouse=True)
def no_threads_left_running(request):
    """After each test module (its fixtures closed first): the project's threads started during the module
    (:data:`PROJECT_THREADS`) must end, each joined within :data:`THREAD_END_BOUND` s in all; the module's
    teardown fails naming those that do not. Before this, test_nodes_in_memory.py alone left 6
    ``mm-memory-timers`` threads running for the rest of its worker's life."""
    before = set(threading.enumerate())
    yield
    started = [t for t in threading.enumerate()
               if t not in before and t.name.startswith(PROJECT_THREADS) and t is not threading.current_thread()]
    end = time.monotonic() + THREAD_END_BOUND
    for t in started:
        t.join(max(0.0, end - time.monotonic()))
    left = sorted(t.name for t in started if t.is_alive())
    if left:
        pytest.fail(f"{request.module.__name__} left {len(left)} thread(s) running after its last test "
                    f"(joined {THREAD_END_BOUND:g} s): {', '.join(left)}", pytrace=False)
