"""A locomotor that ends -- SIGTERM, SIGINT from a launch shutdown, SIGKILL -- leaves no wheel turning
(issue 19, item 1). Against the real ``ros2_control_node`` (Humble, mock hardware, the controllers
``mechanism-model ros2-control`` exports for Rocky 8), with the locomotor in its own process over both
transports and cmd_vel still arriving from this process (an operator's joystick does not stop because the
node did):

* SIGTERM and a launch shutdown run against an export with plain forward_command_controllers
  (``--command-timeout 0``), so that only the node's own last command (``close()``: zero wheel rates) can
  stop the wheels;
* SIGKILL cannot be caught: it runs against the default export, whose wheel controller
  (mechanism_model_controllers/TimedForwardCommandController) writes zero when its commands stop.

The verdict is the rule itself: the first ``/joint_states`` stamped 0.5 s after the signal or later (the
controller manager's clock: the system clock, as the signal's time) shows every wheel's measured velocity at
zero. The latency (first zero after the signal) is printed for the
record, never asserted."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel, arc_twist

from ros import ros_env
from ros.dds_helpers import dds_env, start_serve, stop, unique_domain_id, wait_for
from ros.ros2_control_env import ControlledRobot
from ros.watchdog_timing import LIMIT

pytestmark = [pytest.mark.ros, pytest.mark.slow]

MODEL = "rocky8/rocky8_rover.xml"
ARGS = ["--model", MODEL, "--nodes", "locomotor", "-p", "cmd_vel_timeout:=0.25", "-p",
        "joint_states_timeout:=0.25", "-p", "command_rate:=50.0"]


def _robot(tmp_path_factory, command_timeout):
    return ControlledRobot(MODEL, unique_domain_id(), tmp_path_factory.mktemp("rocky8"),
                           controllers=["steering_controller", "wheel_controller"], command_timeout=command_timeout)


@pytest.fixture(scope="module")
def plain_robot(tmp_path_factory):
    """Plain forward_command_controllers: nothing but the node stops the wheels."""
    with _robot(tmp_path_factory, 0.0) as r:
        yield r


@pytest.fixture(scope="module")
def timed_robot(tmp_path_factory):
    """The default export: the wheel controller stops by itself when commands stop."""
    with _robot(tmp_path_factory, None) as r:
        yield r


class Joystick:
    """cmd_vel at 20 Hz from this process until stopped."""

    def __init__(self, robot, twist):
        self.pub = robot.publisher("cmd_vel", "geometry_msgs/msg/Twist")
        Twist = robot.node.message_class("geometry_msgs/msg/Twist")
        self.msg = Twist()
        self.msg.linear.x, self.msg.linear.y, self.msg.angular.z = (float(v) for v in twist)
        self.halt = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.halt.wait(0.05):
            self.pub.publish(self.msg)

    def close(self):
        self.halt.set()
        self.thread.join(timeout=5)


def _launch_file(tmp_path, cmd, env) -> str:
    path = tmp_path / "locomotor_test.launch.py"
    path.write_text(
        "from launch import LaunchDescription\n"
        "from launch.actions import ExecuteProcess\n\n\n"
        "def generate_launch_description():\n"
        f"    return LaunchDescription([ExecuteProcess(cmd={cmd!r}, env={env!r}, output='screen')])\n")
    return str(path)


class Locomotor:
    """The locomotor in its own process: ``serve`` over ``transport``, or a ``ros2 launch`` of it."""

    def __init__(self, robot, transport: str, launched: bool, tmp_path):
        self.launched = launched
        if transport == "rclpy":
            ros_env.require("humble")
        if launched:
            if transport == "rclpy":
                env = ros_env.ros_env(robot.domain, with_workspace=False)
                cmd = [ros_env.ROS_PYTHON]
            else:
                env = dds_env(robot.domain)
                cmd = [sys.executable]
            cmd += ["-m", "mechanism_model_ros.serve", "--transport", transport, "--status-period", "0",
                    "--log-level", "ERROR", *ARGS]
            self.proc = ros_env.start(["ros2", "launch", _launch_file(tmp_path, cmd, env)], robot.domain,
                                      name="launch", with_workspace=False)
        elif transport == "rclpy":
            self.proc = ros_env.start_serve(robot.domain, *ARGS)
        else:
            self.proc = start_serve(robot.domain, *ARGS)
        self.transport = transport

    @property
    def pid(self):
        return self.proc.pid

    def signal(self, sig):
        os.kill(self.pid, sig)          # the process alone (a launch then stops its children itself)

    def exited(self, timeout):
        p = self.proc.proc if hasattr(self.proc, "proc") else self.proc
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self):
        if hasattr(self.proc, "stop"):
            return self.proc.stop()
        return "".join(stop(self.proc))


def _drive_then(robot, transport, how, tmp_path, capsys):
    wheels = robot.motors["wheel_controller"]
    core = WheeledLocomotorModel(robot.mechanism, max_rates=dict(zip(wheels.joint_names, wheels.velocity)))
    drive = [w.drive_joint for w in core.wheels]
    twist = arc_twist(0.2, 2.0)
    expect = core.drive(twist)
    node = Locomotor(robot, transport, how == "launch", tmp_path)
    joystick = Joystick(robot, twist)
    try:
        assert robot.wait_joints(dict(zip(drive, expect.rates)), tol=1e-6, velocity=True, timeout=60), \
            f"the wheels never reached the commanded rates: {robot.joint_states}\n{node.output()[-3000:]}"
        if how == "launch":            # launch has started its child (its signal handling is in place)
            assert node.proc.wait_for_output("process started with pid", 30), node.proc.output()[-3000:]
        t0 = time.time()               # the clock of joint_state_broadcaster's stamps
        node.signal({"sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL, "launch": signal.SIGINT}[how])

        def stopped(js):
            return all(n in js and js[n][1] == 0.0 for n in drive)
        assert wait_for(lambda: robot.first_stamped_after(t0 + LIMIT)[0] is not None, 10.0, 0.01), \
            "no joint_states after the signal"
        _, state = robot.first_stamped_after(t0 + LIMIT)
        t_stop, _ = robot.first_stamped_after(t0, stopped)
        with capsys.disabled():
            print(f"\n[motor shutdown] {transport} {how}: wheels at zero {t_stop - t0:.3f} s after the signal"
                  if t_stop is not None else f"\n[motor shutdown] {transport} {how}: wheels never stopped")
        assert stopped(state), (f"{how}: wheel velocities {[state.get(n) for n in drive]} in the first joint_states "
                                f"{LIMIT} s after the signal\n{node.output()[-3000:]}")
        if how != "sigkill":
            assert node.exited(10.0) is not None, "the node did not exit"
    finally:
        joystick.close()
        node.output()


@pytest.mark.parametrize("transport", ["cyclone", "rclpy"])
@pytest.mark.parametrize("how", ["sigterm", "launch"])
def test_a_stopped_node_stops_its_wheels(plain_robot, transport, how, tmp_path, capsys):
    _drive_then(plain_robot, transport, how, tmp_path, capsys)


@pytest.mark.parametrize("transport", ["cyclone", "rclpy"])
def test_a_killed_node_leaves_the_controller_to_stop_the_wheels(timed_robot, transport, tmp_path, capsys):
    _drive_then(timed_robot, transport, "sigkill", tmp_path, capsys)
