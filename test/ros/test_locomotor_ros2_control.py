"""Closed loop against real ros2_control: ros2_control_node (Humble) runs the <ros2_control> block and
controller YAML that `mechanism-model ros2-control` exports for Rocky 8 (mock_components/GenericSystem,
joint_state_broadcaster, forward_command_controllers for steering positions and wheel velocities); the
locomotor runs in its own process (rclpy and Cyclone transports) and this process sends cmd_vel. Arcs, crab
and turn in place reach the core's steering positions and wheel rates on /joint_states, odometry reports the
commanded twist, silence stops the wheels within 0.5 s, and hostile commands never take a joint past the
motor group's limits. Where ROS 2 is absent (and not required) the ros2_control stand-in runs instead."""

import math
import time

import numpy as np
import pytest

from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel, arc_twist, crab_twist, point_turn_twist

from ros import ros_env
from ros.dds_helpers import start_serve, stop, unique_domain_id, wait_for
from ros.watchdog_timing import StallProbe, check_stop, heartbeat_lateness
# the ros2_control fixture (export + ros2_control_node, or its stand-in) lands with the motor groups
ControlledRobot = pytest.importorskip("ros.ros2_control_env",
                                      reason="needs test/ros/ros2_control_env.py (motor groups)").ControlledRobot

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

PARAMS = ["-p", "cmd_vel_timeout:=0.25", "-p", "joint_states_timeout:=0.25", "-p", "max_linear_speed:=1.0",
          "-p", "max_angular_speed:=2.0", "-p", "command_rate:=50.0"]
HEARTBEAT = 1.0 / 50.0          # s: the locomotor's command_rate above
JS_PERIOD = 1.0 / 100.0         # s: joint_states from the controller manager's update rate


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    """One ros2_control_node (or its stand-in) for both transports' locomotors, one after the other."""
    with ControlledRobot("rocky8/rocky8_rover.xml", unique_domain_id(), tmp_path_factory.mktemp("rocky8"),
                         controllers=["steering_controller", "wheel_controller"]) as r:
        yield r


@pytest.fixture(scope="module", params=["cyclone", "rclpy"])
def rig(request, robot):
    args = ["--model", "rocky8/rocky8_rover.xml", "--nodes", "locomotor", *PARAMS]
    if request.param == "rclpy":
        ros_env.require("humble")
        proc = ros_env.start_serve(robot.domain, *args)
    else:
        proc = start_serve(robot.domain, "--transport", "cyclone", *args)
    core = WheeledLocomotorModel(robot.mechanism, max_rates=dict(
        zip(robot.motors["wheel_controller"].joint_names, robot.motors["wheel_controller"].velocity)))
    from mechanism_model_ros import qos
    odom = []
    sub = robot.node.create_subscription("odom", "nav_msgs/msg/Odometry", qos.DEFAULT, odom.append)
    cmd = robot.publisher("cmd_vel", "geometry_msgs/msg/Twist")
    try:
        yield robot, core, cmd, odom
    finally:
        if request.param == "rclpy":
            proc.stop()
        else:
            stop(proc)
        odom.clear()
        del sub


def _send(robot, cmd, twist):
    Twist = robot.node.message_class("geometry_msgs/msg/Twist")
    m = Twist()
    m.linear.x, m.linear.y, m.angular.z = (float(v) for v in twist)
    cmd.publish(m)


def _drive_until(robot, cmd, twist, want_steer, want_rates, timeout=30.0):
    steer = [w.steering_joint for w in robot_core(robot).wheels]
    drive = [w.drive_joint for w in robot_core(robot).wheels]

    def there():
        _send(robot, cmd, twist)
        return robot.wait_joints(dict(zip(steer, want_steer)), tol=1e-6, timeout=0.05) and \
            robot.wait_joints(dict(zip(drive, want_rates)), tol=1e-6, velocity=True, timeout=0.05)
    return wait_for(there, timeout, 0.0)


_CORES = {}


def robot_core(robot):
    return _CORES.setdefault(id(robot), WheeledLocomotorModel(robot.mechanism))


@pytest.mark.parametrize("twist", [arc_twist(0.2, 1.2), crab_twist(0.15, -0.7), point_turn_twist(0.6)],
                         ids=["arc", "crab", "turn_in_place"])
def test_modes_reach_the_core_commands_and_odometry(rig, twist):
    robot, core, cmd, odom = rig
    expect = core.drive(twist)
    assert expect.ok
    assert _drive_until(robot, cmd, twist, expect.steering, expect.rates), robot.joint_states
    # odometry from the measured joint states reports the commanded twist
    n = len(odom)

    def odom_ok():
        _send(robot, cmd, twist)
        if len(odom) <= n:
            return False
        t = odom[-1].twist.twist
        return np.allclose([t.linear.x, t.linear.y, t.angular.z], expect.twist, atol=1e-6)
    assert wait_for(odom_ok, 10, 0.02), odom[-1].twist.twist if odom else None


def test_silence_stops_the_wheels_within_half_a_second(rig):
    robot, core, cmd, _ = rig
    twist = arc_twist(0.2, 2.0)
    expect = core.drive(twist)
    assert _drive_until(robot, cmd, twist, expect.steering, expect.rates)
    drive = [w.drive_joint for w in core.wheels]

    def stopped(js):
        return all(n in js and js[n][1] == 0.0 for n in drive)
    with StallProbe() as probe:
        t_last = time.monotonic()
        _send(robot, cmd, twist)
        assert wait_for(lambda: robot.first_state_after(t_last, stopped)[0] is not None, 5.0, 0.01), \
            "the wheels never stopped"
        t_stop, ticks = robot.first_state_after(t_last, stopped)
    # the stop reaches us through ros2_control's joint_states: a late message of that stream, or this
    # process not being scheduled, is not the locomotor's decision (watchdog_timing)
    late = max(heartbeat_lateness([t_last] + ticks, t_stop, max(JS_PERIOD, HEARTBEAT)), probe.stall(t_last + 0.25, t_stop))
    check_stop(t_stop - t_last, late)
    # steering held where it was
    steer = [w.steering_joint for w in core.wheels]
    np.testing.assert_allclose(robot.positions(steer), expect.steering, atol=1e-6)


def test_hostile_commands_keep_every_joint_within_the_motor_limits(rig):
    robot, core, cmd, _ = rig
    wheels = robot.motors["wheel_controller"]
    steering = robot.motors["steering_controller"]
    rng = np.random.default_rng(1)
    worst_rate, worst_steer = 0.0, 0.0
    for k in range(150):
        v = rng.normal(scale=[3.0, 3.0, 10.0])
        if k % 7 == 0:
            v[k % 3] = (math.nan, math.inf, -math.inf)[k % 3]
        _send(robot, cmd, v)
        time.sleep(0.01)
        rates = np.abs(robot.velocities(wheels.joint_names)) / wheels.velocity
        pos = np.array(robot.positions(steering.joint_names))
        worst_rate = max(worst_rate, float(np.max(rates)))
        worst_steer = max(worst_steer, float(np.max(np.maximum(pos - steering.upper, steering.lower - pos))))
    assert worst_rate <= 1.0 + 1e-9
    assert worst_steer <= 1e-9
