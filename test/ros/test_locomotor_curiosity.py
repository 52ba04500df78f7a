"""The Space ROS Curiosity demo's controllers driven by the locomotor (models/curiosity/curiosity_rover.xml,
config/curiosity.yaml) in its own process over real DDS on loopback, on both transports: ``/cmd_vel`` in; the
demo's ``wheel_velocity_controller`` (Float64MultiArray on ``/wheel_velocity_controller/commands``, its joint
order) and ``steer_position_controller`` (a joint trajectory controller: JointTrajectory on
``/steer_position_controller/joint_trajectory``) out, with the numbers the core computes; a stand-in for the
demo's mock hardware (hardware only) mirrors them into joint_states; silence on cmd_vel or joint_states stops
the wheels within 0.5 s; the limits hold."""

import time
from pathlib import Path

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for
from system.serving import Server
from ros.watchdog_timing import check_stop, heartbeat_lateness
from ros.wheel_standin import WheelStandIn

pytestmark = [pytest.mark.ros, pytest.mark.slow]

MECH = load_model(model_path("curiosity/curiosity_rover.xml"))
CORE = WheeledLocomotorModel(MECH)
GROUPS = load_motor_groups(MECH)
STEER = list(GROUPS["steer_position_controller"].joint_names)
WHEELS = list(GROUPS["wheel_velocity_controller"].joint_names)
CONFIG = Path(__file__).resolve().parents[2] / "config" / "curiosity.yaml"
HEARTBEAT = 1.0 / 50.0


def test_the_model_carries_the_demos_controllers_and_joint_orders():
    assert WHEELS == ["front_wheel_L_joint", "middle_wheel_L_joint", "back_wheel_L_joint", "front_wheel_R_joint",
                      "middle_wheel_R_joint", "back_wheel_R_joint"]
    assert STEER == ["suspension_steer_F_L_joint", "suspension_steer_B_L_joint", "suspension_steer_F_R_joint",
                     "suspension_steer_B_R_joint"]
    assert GROUPS["steer_position_controller"].controller.value == "joint_trajectory"
    assert list(GROUPS["mast_joint_trajectory_controller"].joint_names) == ["mast_p_joint", "mast_02_joint",
                                                                           "mast_cameras_joint"]
    assert list(GROUPS["arm_joint_trajectory_controller"].joint_names) == [
        "arm_01_joint", "arm_02_joint", "arm_03_joint", "arm_04_joint", "arm_tools_joint"]
    # the demo's signs: driving straight ahead, left wheels positive, right wheels negative
    r = CORE.command((0.5, 0.0, 0.0), mode="ackermann", steer_before_drive=False).rates_by_joint(CORE)
    assert all(r[j] > 0 for j in WHEELS[:3]) and all(r[j] < 0 for j in WHEELS[3:])
    assert r["front_wheel_L_joint"] == pytest.approx(0.5 / 0.2426)


def expected(twist):
    cmd = CORE.command(twist, mode="ackermann", steer_before_drive=False)
    s, r = cmd.steering_by_joint(CORE), cmd.rates_by_joint(CORE)
    return np.array([s[j] for j in STEER]), np.array([r[j] for j in WHEELS]), cmd


@pytest.fixture(params=["cyclone", "rclpy-humble"])
def served(request):
    domain = unique_domain_id()
    args = ["--params-file", str(CONFIG), "--nodes", "locomotor"]
    server = Server(request.param, domain, *args)
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    hw = WheelStandIn(CycloneNode("gazebo_standin", context=ctx), STEER, WHEELS,
                      steering_controller="steer_position_controller", wheel_controller="wheel_velocity_controller",
                      steering_trajectory=True)
    user = CycloneNode("user", context=ctx)
    pub = user.create_publisher("/cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    try:
        yield request.param, hw, pub, user
    finally:
        hw.close()
        user.close()
        ctx.close()
        text = server.stop()
        if text.strip():
            print(f"serve ({request.param}) output:\n{text[-3000:]}")


def _send(user, pub, twist):
    m = user.message_class("geometry_msgs/msg/Twist")()
    m.linear.x, m.angular.z = twist[0], twist[2]
    pub.publish(m)


def drive_until(user, pub, hw, twist, want, timeout=60):
    def arrived():
        _send(user, pub, twist)
        with hw.lock:
            steer = np.array([hw.steering[j] for j in STEER])
            rates = np.array([hw.wheel_vel[j] for j in WHEELS])
        return np.allclose(steer, want[0], atol=1e-9) and np.allclose(rates, want[1], atol=1e-9)
    return wait_for(arrived, timeout, 0.02)


def test_cmd_vel_drives_the_demos_controllers_silence_stops_limits_hold(served):
    kind, hw, pub, user = served
    # an arc tighter than the steering allows: clipped to the model's 2.8 m about the middle axle
    want = expected((0.5, 0.0, 0.5))
    assert "clipped" in want[2].note
    assert drive_until(user, pub, hw, (0.5, 0.0, 0.5), want), (hw.steering, hw.wheel_vel)
    assert np.all(np.abs(want[0]) <= 0.6) and np.max(np.abs(want[0])) > 0.55
    # the steering trajectories reach their targets within the steering speed limit (10 rad/s): the one that
    # left the straight-ahead wheels took max |angle| / 10 s, none less than two command periods
    with hw.lock:
        durations = list(hw.steer_durations)
    assert min(durations) >= 2 * HEARTBEAT - 1e-9
    assert any(abs(d - np.max(np.abs(want[0])) / 10.0) < 1e-6 for d in durations), durations
    # straight back: the wheels reverse, the steering returns to zero
    want = expected((-0.4, 0.0, 0.0))
    assert drive_until(user, pub, hw, (-0.4, 0.0, 0.0), want), (hw.steering, hw.wheel_vel)
    # cmd_vel silence: the wheels stop within 0.5 s (the node's decision, see watchdog_timing)
    t_last = time.monotonic()
    _send(user, pub, (-0.4, 0.0, 0.0))
    assert wait_for(lambda: hw.first_stop_after(t_last)[0] is not None, 5.0, 0.01), "never stopped"
    t_stop, ticks = hw.first_stop_after(t_last)
    check_stop(t_stop - t_last, heartbeat_lateness([t_last] + ticks, t_stop, HEARTBEAT))


def test_silent_joint_states_stop_the_wheels(served):
    kind, hw, pub, user = served
    want = expected((0.3, 0.0, 0.05))
    assert drive_until(user, pub, hw, (0.3, 0.0, 0.05), want)
    hw.silent.set()
    t_silent = time.monotonic()

    def stopped():
        _send(user, pub, (0.3, 0.0, 0.05))            # commands keep coming: only the state is silent
        return hw.first_stop_after(t_silent)[0] is not None
    assert wait_for(stopped, 5.0, 0.02), "joint_states silence never stopped the wheels"
    t_stop, ticks = hw.first_stop_after(t_silent)
    check_stop(t_stop - t_silent, heartbeat_lateness([t_silent] + ticks, t_stop, HEARTBEAT))


def test_the_steering_trajectories_drive_a_real_joint_trajectory_controller(tmp_path):
    """Against real ros2_control (Humble; mock hardware): the export of the model's motor groups runs the
    demo's steer_position_controller as a joint_trajectory_controller and wheel_velocity_controller as a
    velocity controller; the locomotor (Cyclone, config/curiosity.yaml) turns an arc's cmd_vel into steering
    positions and wheel rates on /joint_states equal to the core's."""
    from ros.ros2_control_env import ControlledRobot, use_real_ros
    if not use_real_ros():
        pytest.skip("needs ros2_control_node (ROS 2 Humble)")
    with ControlledRobot("curiosity/curiosity_rover.xml", unique_domain_id(), tmp_path,
                         controllers=["steer_position_controller", "wheel_velocity_controller"]) as robot:
        proc = start_serve(robot.domain, "--transport", "cyclone", "--params-file", str(CONFIG),
                           "--nodes", "locomotor")
        try:
            cmd = robot.publisher("/cmd_vel", "geometry_msgs/msg/Twist")
            want = expected((0.4, 0.0, -0.3))
            Twist = robot.node.message_class("geometry_msgs/msg/Twist")

            def there():
                m = Twist()
                m.linear.x, m.angular.z = 0.4, -0.3
                cmd.publish(m)
                return robot.wait_joints(dict(zip(STEER, want[0])), tol=1e-6, timeout=0.05) and \
                    robot.wait_joints(dict(zip(WHEELS, want[1])), tol=1e-6, velocity=True, timeout=0.05)
            assert wait_for(there, 60, 0.0), (robot.positions(STEER), robot.velocities(WHEELS), want)
            # silence: the wheels come to rest, the steering stays on the arc
            assert robot.wait_joints(dict.fromkeys(WHEELS, 0.0), tol=1e-9, velocity=True, timeout=5.0)
            assert robot.wait_joints(dict(zip(STEER, want[0])), tol=1e-6, timeout=1.0)
        finally:
            stop(proc)
