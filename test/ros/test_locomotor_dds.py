"""The locomotor node in its own process over real DDS on loopback, on both transports (Cyclone, and rclpy
where ROS 2 is installed): cmd_vel from this process, the mock-hardware stand-in mirrors the controller
commands into joint_states, odometry and the Trigger services answer. (Against the real ros2_control_node:
test_locomotor_ros2_control.py.)"""

import math
import time

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel, point_turn_twist

from ros import ros_env
from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for
from ros.watchdog_timing import check_stop, heartbeat_lateness
from ros.wheel_standin import WheelStandIn

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CORE = WheeledLocomotorModel(load_model(model_path("rocky8/rocky8_rover.xml")))
STEER = [w.steering_joint for w in CORE.wheels]
DRIVE = [w.drive_joint for w in CORE.wheels]
PARAMS = ["-p", "cmd_vel_timeout:=0.25", "-p", "joint_states_timeout:=0.25", "-p", "max_angular_speed:=1.0",
          "-p", "command_rate:=50.0"]
HEARTBEAT = 1.0 / 50.0          # s: the locomotor's command_rate above


@pytest.fixture(params=["cyclone", "rclpy"])
def served(request):
    domain = unique_domain_id()
    args = ["--model", "rocky8/rocky8_rover.xml", "--nodes", "locomotor", *PARAMS]
    if request.param == "rclpy":
        ros_env.require("humble")
        proc = ros_env.start_serve(domain, *args)
    else:
        proc = start_serve(domain, "--transport", "cyclone", *args)
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    hw = WheelStandIn(CycloneNode("hardware", context=ctx), STEER, DRIVE)
    user = CycloneNode("user", context=ctx)
    pub = user.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    odom = []
    user.create_subscription("odom", "nav_msgs/msg/Odometry", qos.DEFAULT, odom.append)
    try:
        yield request.param, proc, hw, pub, user, odom
    finally:
        hw.close()
        user.close()
        if request.param == "rclpy":
            proc.stop()
        else:
            stop(proc)


def test_point_turn_closed_loop_and_watchdog(served):
    kind, proc, hw, pub, user, odom = served
    Twist = user.message_class("geometry_msgs/msg/Twist")
    twist = point_turn_twist(0.5)
    expect = CORE.drive(twist)

    def arrived():
        m = Twist()
        m.angular.z = twist[2]
        pub.publish(m)
        with hw.lock:
            return np.allclose([hw.steering[j] for j in STEER], expect.steering, atol=1e-9) and \
                np.allclose([hw.wheel_vel[j] for j in DRIVE], expect.rates, atol=1e-9)
    assert wait_for(arrived, 60, 0.02), (hw.steering, hw.wheel_vel)
    # odometry turns the right way (measured wheel rates through the least-squares twist)
    assert wait_for(lambda: odom and odom[-1].twist.twist.angular.z == pytest.approx(0.5, abs=1e-6), 10)
    # silence: the wheels stop within 0.5 s of the last cmd_vel, judged from the receive times of the node's
    # heartbeat commands (a tick the OS woke late is not the node's decision: watchdog_timing)
    m = Twist()
    m.angular.z = twist[2]
    t_last = time.monotonic()
    pub.publish(m)
    assert wait_for(lambda: hw.first_stop_after(t_last)[0] is not None, 5.0, 0.01), "the wheels never stopped"
    t_stop, ticks = hw.first_stop_after(t_last)
    check_stop(t_stop - t_last, heartbeat_lateness([t_last] + ticks, t_stop, HEARTBEAT))
    # stop latches through the Trigger service, on either transport
    stop_client = user.create_client("/locomotor/stop", "std_srvs/srv/Trigger")
    assert stop_client.wait_for_service(20)
    assert stop_client.call(stop_client.request(), timeout=10).success
    for _ in range(20):
        pub.publish(m)
        time.sleep(0.02)
    assert all(v == 0.0 for v in hw.wheel_vel.values())
    assert math.isfinite(odom[-1].pose.pose.position.x)
