"""Ctrl-C while a node program starts ends it quietly, as it does once the nodes run (start_up.py, serve.py).

SIGINT reaches ``python -m mechanism_model_ros.serve`` (Cyclone DDS on loopback) at several moments of its
start-up: while Python imports its modules (numpy's extension is mapped into the process), once the DDS library
is loaded, while it waits for a robot description on a topic nobody publishes, while it creates the nodes, and
after start-up; the same over rclpy (ROS 2 Humble's Python: while importing, once rclpy's library is loaded,
after start-up); and the ``kinematics_server`` console script (setup.py) while it imports. Each time the process
ends within a bound, with status 0 (what serve returns after a SIGINT once running) and no traceback.

Each moment is a marker the test waits for (bounded); the signal may land later than its marker, and the
verdict is the same at every later moment, so it holds whatever the timing. Not covered: the interpreter's own
start-up before the program's first line (``site``, an editable install's ``.pth`` files: 50-300 ms on a loaded
machine), where CPython's default handler prints the KeyboardInterrupt itself; no program can change that.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from ros import ros_env
from ros.dds_helpers import dds_env, unique_domain_id, wait_for
from ros.ros_env import default_signal_handling

pytestmark = [pytest.mark.ros]

CYCLONE = ["--transport", "cyclone", "--status-period", "0", "--log-level", "INFO"]
NO_DESCRIPTION = ["--robot-description-topic", "/mm_nobody_publishes_this", "--description-timeout", "600"]


def _mapped(pid: int, library: str) -> bool:
    """Whether a file whose path contains ``library`` is mapped into process ``pid`` (an import under way)."""
    try:
        with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as fh:
            return library in fh.read()
    except OSError:
        return False


#: moment -> (extra arguments, marker(pid, stderr so far) -> bool)
MOMENTS = {
    "importing": ([], lambda pid, err: _mapped(pid, "_multiarray_umath")),
    "dds_loaded": ([], lambda pid, err: _mapped(pid, "libddsc")),
    "waiting_for_description": (NO_DESCRIPTION, lambda pid, err: "waiting for the robot description" in err),
    "creating_nodes": ([], lambda pid, err: "joint coordinates" in err),
    "running": ([], lambda pid, err: "serving over" in err),
}


#: the same over rclpy (a sourced ROS 2 Humble, its Python): rclpy installs signal handlers of its own
RCLPY_MOMENTS = {
    "importing": lambda pid, err: _mapped(pid, "_multiarray_umath"),
    "rclpy_loaded": lambda pid, err: _mapped(pid, "librcl.so"),
    "running": lambda pid, err: "serving over" in err,
}


def _interrupt_at(argv: list[str], marker, tmp_path, env=None) -> tuple[int, str]:
    """Start ``argv`` (stderr to a file), wait (bounded) for ``marker``, send SIGINT, wait (bounded) for the end;
    the exit status and everything it wrote to stderr."""
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(argv, env=env or dds_env(unique_domain_id()), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, preexec_fn=default_signal_handling)
    try:
        seen = wait_for(lambda: proc.poll() is not None or marker(proc.pid, err_path.read_text()), 120, 0.005)
        assert seen and proc.poll() is None, f"no marker before the end (status {proc.poll()}): " \
                                             f"{err_path.read_text()[-3000:]}"
        proc.send_signal(signal.SIGINT)
        try:
            code = proc.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 30 s after SIGINT: {err_path.read_text()[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return code, err_path.read_text()


@pytest.mark.parametrize("moment", sorted(MOMENTS))
def test_sigint_while_serve_starts_exits_quietly(moment, tmp_path):
    extra, marker = MOMENTS[moment]
    code, err = _interrupt_at([sys.executable, "-m", "mechanism_model_ros.serve", *CYCLONE, *extra], marker,
                              tmp_path)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert code == 0, (code, err[-3000:])


@pytest.mark.rclpy
@pytest.mark.parametrize("moment", sorted(RCLPY_MOMENTS))
def test_sigint_while_serve_starts_over_rclpy_exits_quietly(moment, tmp_path):
    env = ros_env.ros_env(unique_domain_id(), "humble")
    code, err = _interrupt_at([ros_env.ROS_PYTHON, "-m", "mechanism_model_ros.serve", "--transport", "rclpy",
                               "--status-period", "0", "--log-level", "INFO"], RCLPY_MOMENTS[moment], tmp_path, env)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert code == 0, (code, err[-3000:])


def test_sigint_while_a_console_script_imports_exits_quietly(tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "kinematics_server")
    if not os.path.exists(script):
        pytest.skip(f"no {script}: mechanism_model_ros is not pip-installed beside this Python")
    with open(script, encoding="utf-8", errors="replace") as fh:
        assert "mechanism_model_ros.start_up" in fh.read(), \
            f"{script} predates start_up.py: pip install -e './mechanism_model_ros[cyclone]' again"
    code, err = _interrupt_at([script, *CYCLONE], MOMENTS["importing"][1], tmp_path)
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert code == 0, (code, err[-3000:])
