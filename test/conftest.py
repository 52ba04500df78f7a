"""Shared pytest configuration: hypothesis profiles (CI runs the same number of examples, derandomised), the
order xdist workers take the files in, and a check that no test module leaves the project's threads or child
processes running."""

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
#: child processes that may outlive a module: multiprocessing's own helpers, started once per process by the
#: first pool that needs them (the reach maps' forkserver pool) and idle afterwards
LASTING_CHILDREN = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")
#: how long a module's threads and child processes may take to end after its last test (s): a bound on a join or
#: a wait, never a sleep
END_BOUND = 5.0


def child_processes() -> dict[int, str]:
    """This process's live (not zombie) child processes, pid -> command line (from /proc; none elsewhere)."""
    me, out = os.getpid(), {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return out
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            state, ppid = stat[stat.rindex(b")") + 2:].split()[:2]
            if int(ppid) != me or state == b"Z":
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                out[pid] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
    return out


@pytest.fixture(scope="module", autouse=True)
def no_threads_left_running(request):
    """After each test module (its fixtures closed first): the project's threads started during the module
    (:data:`PROJECT_THREADS`) must end, each joined within :data:`END_BOUND` s in all, and the child processes
    it started must be gone by then (:data:`LASTING_CHILDREN` aside); the module's teardown fails naming those
    left. Before this, test_nodes_in_memory.py alone left 6 ``mm-memory-timers`` threads running for the rest
    of its worker's life."""
    threads_before = set(threading.enumerate())
    children_before = set(child_processes())
    yield
    started = [t for t in threading.enumerate() if t not in threads_before and t.name.startswith(PROJECT_THREADS)
               and t is not threading.current_thread()]
    end = time.monotonic() + END_BOUND
    for t in started:
        t.join(max(0.0, end - time.monotonic()))

    def new_children():
        return {pid: cmd for pid, cmd in child_processes().items()
                if pid not in children_before and not any(k in cmd for k in LASTING_CHILDREN)}
    children = new_children()
    while children and time.monotonic() < end:      # bounded: each look is a cheap /proc scan
        time.sleep(0.05)
        children = new_children()
    left = sorted(t.name for t in started if t.is_alive())
    problems = []
    if left:
        problems.append(f"{len(left)} thread(s) running: {', '.join(left)}")
    if children:
        problems.append(f"{len(children)} child process(es) running: "
                        + "; ".join(f"pid {pid} {cmd[:160]}" for pid, cmd in sorted(children.items())))
    if problems:
        pytest.fail(f"{request.module.__name__} left {' and '.join(problems)} after its last test (waited "
                    f"{END_BOUND:g} s)", pytrace=False)
