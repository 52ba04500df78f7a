"""Test runs side by side on one machine never meet on a DDS domain: an id another process has drawn is
skipped (dds_helpers.unique_domain_id reserves it with a file lock). Two servers of one service on a domain
made a client's first request vanish: its wait_for_service was satisfied by the other run's server."""

import os
import subprocess
import sys

import pytest

from ros import dds_helpers

pytestmark = pytest.mark.ros

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _configured_range():
    spec = os.environ.get("MM_TEST_DOMAINS", "").strip()
    if not spec:
        return 1, 230
    a, _, b = spec.partition("-")
    return int(a), int(b or a)


def test_an_id_held_by_another_process_is_skipped():
    lo, hi = _configured_range()
    free = [d for d in range(lo, hi + 1) if d not in dds_helpers._held]
    if len(free) < 2:
        pytest.skip("fewer than two ids of MM_TEST_DOMAINS not yet drawn by this process")
    a, b = free[:2]
    other = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from ros import dds_helpers as h; d = h.unique_domain_id(); "
         "print(d, d in h._held, flush=True); sys.stdin.read()"],
        cwd=HERE, env={**os.environ, "MM_TEST_DOMAINS": f"{a}-{b}", "PYTHONPATH": HERE},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        held, reserved = other.stdout.readline().split()
        held = int(held)
        if reserved != "True":
            pytest.skip(f"ids {a} and {b} are both held by other processes")
        saved = os.environ.get("MM_TEST_DOMAINS")
        os.environ["MM_TEST_DOMAINS"] = f"{a}-{b}"
        try:
            draws = [dds_helpers.unique_domain_id() for _ in range(4)]
        finally:
            if saved is None:
                os.environ.pop("MM_TEST_DOMAINS")
            else:
                os.environ["MM_TEST_DOMAINS"] = saved
        assert held in (a, b) and held not in draws, (held, draws)
    finally:
        other.stdin.close()
        other.wait(30)
