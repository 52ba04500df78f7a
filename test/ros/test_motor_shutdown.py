"""A locomotor that ends -- SIGTERM, SIGINT from a launch shutdown, SIGKILL -- leaves no wheel turning
(issue 19, item 1). Against the real ``ros2_control_node`` (Humble, mock hardware, the controllers
``mechanism-model ros2-control`` exports for Rocky 8), with the locomotor in its own process over both
transports and cmd_vel still arriving from this process (an operator's joystick does not stop because the
node did):

* SIGTERM and a launch shutdown run against an export with plain forward_command_controllers
  (``--command-timeout 0``), so that only the node's own last command (``close()``: zero wheel rates) can
  stop the wheels;
* SIGKILL cannot be caught: it runs against the default export, whose wheel controller
  (mechanism_model_controllers/TimedForwardCommandController) writes zero when its commands stop;
* an exception in serve's main loop and the loss of the process's DDS participant (``faulty_serve.py``:
  SIGUSR1, SIGUSR2) run against the plain export: the node's zero must get out (after a loss, through a
  fresh participant); a participant lost for good (no fresh one possible either) against the default export.

The verdict is the rule itself: the first ``/joint_states`` stamped 0.5 s after the signal or later (the
controller manager's clock: the system clock, as the signal's time) shows every wheel's measured velocity at
zero (issue 19, item 1: every ending of the node). The latency (first zero after the signal) is printed for the
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

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

MODEL = "rocky8/rocky8_rover.xml"
FAULTY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "faulty_serve.py")
#: the signal that ends the node each way (faulty_serve.py: SIGUSR1 raises in serve's main loop, SIGUSR2
#: takes the process's DDS participant away)
SIGNALS = {"sigterm": signal.SIGTERM, "sigkill": signal.SIGKILL, "launch": signal.SIGINT,
           "exception": signal.SIGUSR1, "participant_lost": signal.SIGUSR2}
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
def standin_robot(tmp_path_factory):
    """The ros2_control stand-in (test/ros/ros2_control_standin.py: the same topics, plain forward command
    controllers) for the node over rclpy on Jazzy, which has no ros2_control here (shared/ros2 installs a core
    Jazzy)."""
    with ControlledRobot(MODEL, unique_domain_id(), tmp_path_factory.mktemp("rocky8_standin"),
                         controllers=["steering_controller", "wheel_controller"], command_timeout=0.0,
                         real=False) as r:
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

    def __init__(self, robot, transport: str, launched: bool, tmp_path, faulty: bool = False, env=None):
        self.launched = launched
        transport, _, distro = transport.partition("-")       # rclpy-jazzy: rclpy on ROS 2 Jazzy
        distro = distro or "humble"
        if transport == "rclpy":
            ros_env.require(distro)
        if faulty:                      # serve under faulty_serve.py: SIGUSR1/SIGUSR2 trigger its faults
            args = [FAULTY, "--transport", transport, "--status-period", "0", "--log-level", "WARNING", *ARGS]
            if transport == "rclpy":
                self.proc = ros_env.start([ros_env.ROS_PYTHON, *args], robot.domain, distro=distro,
                                          name="faulty_serve", **(env or {}))
            else:
                self.proc = subprocess.Popen([sys.executable, *args], env={**dds_env(robot.domain), **(env or {})},
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        elif launched:
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
        self._output = None

    @property
    def pid(self):
        return self.proc.pid

    def signal(self, sig):
        if self.launched:
            # Ctrl-C in the launch's terminal: SIGINT to its whole process group, the locomotor included (as
            # test_rover_launch does). Sent to the launch process alone, two full clean-clone CI runs saw the
            # launch never hear it (no "user interrupted" in its log) although the test passes alone, in
            # test/core + it and in test/ros + it: not understood yet (closing note of stop 19)
            os.killpg(self.pid, sig)
        else:
            os.kill(self.pid, sig)      # the process alone

    def exited(self, timeout):
        p = self.proc.proc if hasattr(self.proc, "proc") else self.proc
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self):
        if hasattr(self.proc, "stop"):
            return self.proc.stop()
        if self._output is None:
            self._output = "".join(o or "" for o in stop(self.proc))
        return self._output


def _drive_then(robot, transport, how, tmp_path, capsys, env=None):
    """Drive the wheels on an arc, end the node ``how``, judge the stop; returns the exit code and output
    (None for SIGKILL)."""
    wheels = robot.motors["wheel_controller"]
    core = WheeledLocomotorModel(robot.mechanism, max_rates=dict(zip(wheels.joint_names, wheels.velocity)))
    drive = [w.drive_joint for w in core.wheels]
    twist = arc_twist(0.2, 2.0)
    expect = core.drive(twist)
    node = Locomotor(robot, transport, how == "launch", tmp_path, faulty=how in ("exception", "participant_lost"),
                     env=env)
    joystick = Joystick(robot, twist)
    try:
        assert robot.wait_joints(dict(zip(drive, expect.rates)), tol=1e-6, velocity=True, timeout=60), \
            f"the wheels never reached the commanded rates: {robot.joint_states}\n{node.output()[-3000:]}"
        if how == "launch":            # launch has started its child (its signal handling is in place)
            assert node.proc.wait_for_output("process started with pid", 30), node.proc.output()[-3000:]
        t0 = time.time()               # the clock of joint_state_broadcaster's stamps
        node.signal(SIGNALS[how])

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
            code = node.exited(10.0)
            assert code is not None, "the node did not exit"
            return code, node.output()
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


@pytest.mark.parametrize("transport", ["cyclone", "rclpy"])
def test_an_exception_in_serves_main_loop_stops_the_wheels(plain_robot, transport, tmp_path, capsys):
    """An exception raised in serve's main loop (faulty_serve.py, SIGUSR1) goes through serve's closing path:
    zero wheel rates from the node itself (plain controllers: nothing else stops the wheels), then the
    exception ends the process with its traceback."""
    code, out = _drive_then(plain_robot, transport, "exception", tmp_path, capsys)
    assert code != 0, out[-3000:]
    assert "serve failed: stopping the nodes" in out and "faulty_serve, SIGUSR1" in out, out[-3000:]


@pytest.mark.parametrize("transport", ["cyclone", "rclpy"])
def test_a_lost_participant_still_stops_the_wheels(plain_robot, transport, tmp_path, capsys):
    """The process's DDS participant goes away under the running node (faulty_serve.py, SIGUSR2: the rclpy
    context shut down, the Cyclone participant deleted). serve notices, re-creates the node's publishers on a
    fresh participant and the node's close() sends zero wheel rates through them (plain controllers: nothing
    else stops the wheels); the process exits with 1, naming the loss."""
    code, out = _drive_then(plain_robot, transport, "participant_lost", tmp_path, capsys)
    assert code == 1, out[-3000:]
    lost = "the rclpy context was shut down" if transport == "rclpy" else "the Cyclone DDS dispatcher stopped"
    assert lost in out and "stopping the nodes" in out and "on a fresh participant" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]


@pytest.mark.parametrize("transport", ["cyclone", "rclpy"])
def test_a_participant_lost_for_good_leaves_the_controller_to_stop_the_wheels(timed_robot, transport, tmp_path,
                                                                              capsys):
    """As above, but no fresh participant can be made either (faulty_serve.py's MM_FAULT_NO_REOPEN: as with
    no network): nothing the node sends reaches the controllers, and the default export's wheel controller
    stops the wheels by itself (its command_timeout); serve still closes the nodes and exits with 1."""
    code, out = _drive_then(timed_robot, transport, "participant_lost", tmp_path, capsys,
                            env={"MM_FAULT_NO_REOPEN": "1"})
    assert code == 1, out[-3000:]
    assert "cannot re-create the publishers" in out and "MM_FAULT_NO_REOPEN" in out, out[-3000:]


@pytest.mark.parametrize("how", ["exception", "participant_lost"])
def test_on_jazzy_an_exception_or_a_lost_participant_stops_the_wheels(standin_robot, how, tmp_path, capsys):
    """The same two endings over rclpy on ROS 2 Jazzy (its fresh context for the last command included),
    against the ros2_control stand-in: Jazzy here has no ros2_control."""
    code, out = _drive_then(standin_robot, "rclpy-jazzy", how, tmp_path, capsys)
    assert code != 0, out[-3000:]
    if how == "participant_lost":
        assert "the rclpy context was shut down" in out and "on a fresh participant" in out, out[-3000:]
        assert "Traceback" not in out, out[-3000:]
    else:
        assert "serve failed: stopping the nodes" in out, out[-3000:]
