"""``mechanism_model_ros.shutdown_delay``: the controller manager's wrapper in the robot launches.

A Ctrl-C to the launch's process group does not reach the wrapped process directly; the wrapper passes the
signal on no earlier than ``--delay`` after it arrived (a lower bound: a loaded machine only makes it later),
exactly once, and exits with the child's status; a killed wrapper takes its child with it. No ROS needed.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from ros.dds_helpers import wait_for

# the wrapped child: records every SIGINT/SIGTERM with its monotonic time, exits 3 on the first one
CHILD = r"""
import os, signal, sys, time
log = open(sys.argv[1], "a", buffering=1)
def on(sig, _f):
    log.write(f"{signal.Signals(sig).name} {time.monotonic()!r}\n")
    if sig == signal.SIGINT:
        sys.exit(3)
    if sig == signal.SIGTERM:
        sys.exit(4)
signal.signal(signal.SIGINT, on)
signal.signal(signal.SIGTERM, on)
log.write(f"ready {os.getpid()}\n")
while True:
    time.sleep(0.01)
"""


def _start(tmp_path, delay):
    log = tmp_path / "child.log"
    log.touch()
    cmd = [sys.executable, "-m", "mechanism_model_ros.shutdown_delay", "--delay", str(delay), "--",
           sys.executable, "-c", CHILD, str(log)]
    # its own group, as a launch's child is in the terminal's group: a signal to the group is a Ctrl-C
    proc = subprocess.Popen(cmd, start_new_session=True)
    assert wait_for(lambda: "ready" in log.read_text(), 30, 0.02), log.read_text()
    return proc, log


def _events(log):
    return [line.split() for line in log.read_text().splitlines() if not line.startswith("ready")]


def test_a_ctrl_c_reaches_the_child_once_and_only_after_the_delay(tmp_path):
    proc, log = _start(tmp_path, 0.4)
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)          # the whole group, as Ctrl-C in a terminal
    os.killpg(proc.pid, signal.SIGINT)          # a second one during the delay changes nothing
    assert proc.wait(30) == 3
    events = _events(log)
    assert [e[0] for e in events] == ["SIGINT"], events
    assert float(events[0][1]) - sent >= 0.4


def test_a_sigterm_after_the_passed_on_signal_goes_through_at_once(tmp_path):
    # the child ignores nothing here, so check the escalation on a child that survives SIGINT
    log = tmp_path / "child.log"
    log.touch()
    child = CHILD.replace("sys.exit(3)", "pass")
    proc = subprocess.Popen([sys.executable, "-m", "mechanism_model_ros.shutdown_delay", "--delay", "0.2", "--",
                             sys.executable, "-c", child, str(log)], start_new_session=True)
    assert wait_for(lambda: "ready" in log.read_text(), 30, 0.02)
    proc.send_signal(signal.SIGINT)
    assert wait_for(lambda: [e[0] for e in _events(log)] == ["SIGINT"], 30, 0.02), _events(log)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 4
    assert [e[0] for e in _events(log)] == ["SIGINT", "SIGTERM"]


def test_a_killed_wrapper_takes_its_child_with_it(tmp_path):
    proc, log = _start(tmp_path, 5.0)
    pid = int(next(line.split()[1] for line in log.read_text().splitlines() if line.startswith("ready")))
    proc.kill()
    proc.wait(30)
    assert wait_for(lambda: "SIGTERM" in log.read_text(), 30, 0.02), log.read_text()

    def gone():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as fh:           # a zombie until init reaps it counts as gone
            return fh.read().split()[2] == "Z"
    assert wait_for(gone, 30, 0.05)


def test_a_command_that_cannot_start_is_named():
    p = subprocess.run([sys.executable, "-m", "mechanism_model_ros.shutdown_delay", "--",
                        "/nonexistent/ros2_control_node"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 127 and "/nonexistent/ros2_control_node" in p.stderr


@pytest.mark.parametrize("args", [[], ["--delay", "-1", "--", "true"], ["--delay", "nan", "--", "true"]])
def test_bad_arguments_are_refused(args):
    p = subprocess.run([sys.executable, "-m", "mechanism_model_ros.shutdown_delay", *args], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and p.stderr
