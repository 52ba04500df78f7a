"""SIGTERM to the legged node, or the loss of its DDS participant, holds the legs where they are (issue 19,
item 1: the legged node's own test).

The LEMUR hexapod through the real ``ros2_control_node`` (Humble, mock hardware, the
joint_trajectory_controller ``legs_controller`` that ``mechanism-model ros2-control`` exports, a
ros2_control_node of this module's own), the legged node (``serve --nodes legged``, ``mode: action``) in its
own process over each transport, cmd_vel still arriving at 50 Hz. The signal is sent early in a gait cycle
(its phase read from the measured joints: more than a second of the running cycle left), so that a node
which did not hold would leave the controller walking the rest of its cycle.

The verdict, from ``/joint_states`` stamps (the controller manager's clock, the system clock, as the
signal's time): from 0.5 s after the signal on, every leg joint stands still (1e-6 rad over a further
second), at the position it had at the signal -- within what the gait moves a joint in 0.1 s (SIGTERM) or
0.25 s (a lost participant) (the node's closing hold is the pose the controller commands when ``close()``
runs, some milliseconds after the signal, or after serve has seen the loss).
The node exits with 0 (SIGTERM) or 1 (the participant lost)."""

import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from mechanism_model_core.locomotion.legged import LeggedLocomotorModel

from ros import ros_env
from ros.dds_helpers import dds_env, start_serve, stop, unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot
from ros.watchdog_timing import LIMIT

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

MODEL = "lemur/lemur_hexapod.xml"
FAULTY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "faulty_serve.py")
TWIST = (0.03, 0.0, 0.0)
PERIOD = 2.0            # s: the gait cycle
PARAMS = ["--model", MODEL, "--nodes", "legged", "-p", "mode:=action", "-p", "gait:=tripod", "-p",
          f"period:={PERIOD}", "-p", "command_rate:=50.0", "-p", "cmd_vel_timeout:=0.25", "-p",
          "joint_states_timeout:=0.25", "-p", "max_linear_speed:=0.1", "-p", "max_angular_speed:=0.3"]


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    with ControlledRobot(MODEL, unique_domain_id(), tmp_path_factory.mktemp("lemur_shutdown"),
                         controllers=["legs_controller"]) as r:
        yield r


class Joystick:
    """cmd_vel at 50 Hz from this process until closed."""

    def __init__(self, robot, twist):
        self.pub = robot.publisher("cmd_vel", "geometry_msgs/msg/Twist")
        self.msg = robot.node.message_class("geometry_msgs/msg/Twist")()
        self.msg.linear.x, self.msg.linear.y, self.msg.angular.z = (float(v) for v in twist)
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.halt.wait(0.02):
            self.pub.publish(self.msg)

    def close(self):
        self.halt.set()
        self.thread.join(timeout=5)


def _stamped(robot, names, t_from, t_to=float("inf")):
    """``(stamps, positions)`` of the joint_states stamped in [t_from, t_to)."""
    with robot._lock:
        rows = [(t, [v[n][0] for n in names]) for t, v in robot.stamped if t_from <= t < t_to]
    return np.array([t for t, _ in rows]), np.array([q for _, q in rows]).reshape(len(rows), len(names))


@pytest.mark.parametrize("transport", ["cyclone", "rclpy"])
@pytest.mark.parametrize("how", ["sigterm", "participant_lost"])
def test_the_legs_hold_where_they_are_when_the_node_ends(robot, transport, how, capsys):
    """``sigterm``: serve's closing hold as a goal of the controller's action. ``participant_lost``
    (faulty_serve.py, SIGUSR2: the rclpy context shut down, the Cyclone participant deleted): the action client
    is gone with it, serve re-creates the publishers on a fresh participant and the hold goes out on the
    controller's joint_trajectory topic; the node exits with 1."""
    names = list(robot.motors["legs_controller"].joint_names)
    walker = LeggedLocomotorModel(robot.mechanism)
    dense = walker.plan_gait("tripod", TWIST, period=PERIOD, cycles=1, samples_per_cycle=400).trajectory.positions
    faulty = [FAULTY, "--transport", transport, "--status-period", "0", "--log-level", "WARNING", *PARAMS]
    if transport == "rclpy":
        ros_env.require("humble")
        proc = ros_env.start(([ros_env.ROS_PYTHON, *faulty]), robot.domain, name="faulty_serve") \
            if how == "participant_lost" else ros_env.start_serve(robot.domain, *PARAMS)
        popen = proc.proc
    elif how == "participant_lost":
        proc = popen = subprocess.Popen([sys.executable, *faulty], env=dds_env(robot.domain), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
    else:
        proc = popen = start_serve(robot.domain, *PARAMS)
    joystick = Joystick(robot, TWIST)
    out = ""
    try:
        def phase():
            """Fraction of the gait cycle at the measured pose (None when off the cycle)."""
            d = np.max(np.abs(dense - np.array(robot.positions(names))), axis=1)
            return d.argmin() / len(dense) if d.min() < 5e-3 else None

        def walking():
            _, q = _stamped(robot, names, time.time() - 0.2)
            return len(q) > 2 and np.max(np.abs(q[-1] - q[0])) > 1e-3

        def early_in_a_cycle():
            p = phase()
            return p is not None and 0.05 < p < 0.4 and walking()
        # onto the cycle (the node first steps the legs to its first pose one at a time), then early in one
        assert wait_for(early_in_a_cycle, 90, 0.005), \
            f"the legs never walked the gait cycle (phase {phase()})\n{_output(transport, proc)[-3000:]}"
        t0 = time.time()                # the clock of joint_state_broadcaster's stamps
        os.kill(popen.pid, signal.SIGTERM if how == "sigterm" else signal.SIGUSR2)
        assert wait_for(lambda: len(_stamped(robot, names, t0 + LIMIT + 1.0)[0]) > 0, 10.0, 0.01), \
            "no joint_states 1.5 s after the signal"
        code = popen.wait(10)
        out = _output(transport, proc)
        # the legs were walking at the signal: what a joint moves in ``window`` s of the gait (the closing hold
        # is the pose the controller commands when close() runs: at once after SIGTERM; after a lost
        # participant once serve has seen the loss, within its 0.1 s check, and made a fresh one)
        window = 0.1 if how == "sigterm" else 0.25
        ts, qs = _stamped(robot, names, t0 - 0.5, t0 + window)
        assert len(ts) > 10, "too few joint_states around the signal"
        speed = np.max(np.abs(np.diff(qs, axis=0)) / np.diff(ts)[:, None], axis=0)       # rad/s per joint
        assert np.max(speed) > 0.05, f"the legs were not walking at the signal: {speed}"
        q_signal = qs[ts < t0][-1]
        # from 0.5 s after the signal: still, at the position of the signal
        ts_after, q_after = _stamped(robot, names, t0 + LIMIT, t0 + LIMIT + 1.0)
        assert len(ts_after) > 10, "too few joint_states after the signal"
        moved = np.max(np.abs(q_after - q_after[0]))
        off = np.abs(q_after[0] - q_signal)
        # when the legs came to rest: the first stamp from which they no longer moved (for the record)
        ts_all, q_all = _stamped(robot, names, t0, t0 + LIMIT + 1.0)
        still = np.max(np.abs(q_all - q_all[-1]), axis=1) <= 1e-6
        rest = ts_all[len(still) - np.argmin(still[::-1])] if not still.all() else ts_all[0]
        with capsys.disabled():
            print(f"\n[legged shutdown] {transport} {how}: legs at rest {rest - t0:.3f} s after the signal, "
                  f"{np.max(off):.4f} rad from the signal's pose (gait up to {np.max(speed):.2f} rad/s)")
        assert moved <= 1e-6, f"the legs still moved {moved:.2e} rad from {LIMIT} s after the signal\n{out[-3000:]}"
        assert np.all(off <= window * speed + 1e-4), \
            (f"held {np.max(off):.4f} rad from the pose at the signal (joint speeds {speed})\n{out[-3000:]}")
        assert code == (0 if how == "sigterm" else 1), out[-3000:]
        assert "Traceback" not in out, out[-3000:]
        if how == "participant_lost":
            assert "on a fresh participant" in out, out[-3000:]
    finally:
        joystick.close()
        if not out:
            _output(transport, proc)


def _output(transport, proc) -> str:
    if transport == "rclpy":
        return proc.stop()
    if proc.poll() is None:
        return "".join(stop(proc))
    try:
        o, e = proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError):
        return ""
    return (o or "") + (e or "")
