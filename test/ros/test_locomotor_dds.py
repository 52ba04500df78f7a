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

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for
from system.serving import Server
from ros.watchdog_timing import LIMIT, check_stop, heartbeat_lateness
from ros.wheel_standin import WheelStandIn

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.serial]

CORE = WheeledLocomotorModel(load_model(model_path("rocky8/rocky8_rover.xml")))
STEER = [w.steering_joint for w in CORE.wheels]
DRIVE = [w.drive_joint for w in CORE.wheels]
PARAMS = ["-p", "cmd_vel_timeout:=0.25", "-p", "joint_states_timeout:=0.25", "-p", "max_angular_speed:=1.0",
          "-p", "command_rate:=50.0"]
HEARTBEAT = 1.0 / 50.0          # s: the locomotor's command_rate above


@pytest.fixture(params=["cyclone", "rclpy-humble"])
def served(request):
    domain = unique_domain_id()
    args = ["--model", "rocky8/rocky8_rover.xml", "--nodes", "locomotor", *PARAMS]
    server = Server(request.param, domain, *args)
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
        yield request.param, server, hw, pub, user, odom
    finally:
        hw.close()
        user.close()
        ctx.close()
        text = server.stop()
        if text.strip():
            print(f"serve ({request.param}) output:\n{text[-3000:]}")


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


def _flood(user, stop, size_bytes: int = 1_500_000):
    """Publish one ~``size_bytes`` joint_states message (names of joints no model has) as fast as DDS takes
    it, pre-serialized, until ``stop`` is set; returns the thread and a list counting the messages."""
    import threading

    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import _write_serialized
    pub = user.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    JS = user.message_class("sensor_msgs/msg/JointState")
    n = size_bytes // 20
    m = JS()
    m.name = [f"f{k:06d}" for k in range(n)]
    m.position = [0.0] * n
    data = m.serialize(use_version_2=False)
    sent = []

    def run():
        while not stop.is_set():
            _write_serialized(pub.writer, data)
            sent.append(len(data))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, sent


def test_a_flood_of_huge_joint_states_does_not_delay_the_stop(served):
    """Issue 19, item 3: 1.5 MB joint_states messages flood the node while it drives (the wheel hardware's
    own states still arriving); then cmd_vel stops. The watchdog has a thread of its own, and messages beyond
    ``joint_states_max_bytes`` are dropped before they are deserialized, so the stop is not queued behind
    them: the wheel command in force 0.5 s after the last cmd_vel is zero."""
    import threading
    kind, proc, hw, pub, user, odom = served
    Twist = user.message_class("geometry_msgs/msg/Twist")
    m = Twist()
    m.linear.x = 0.2
    expect = CORE.drive((0.2, 0.0, 0.0))

    def driving():
        with hw.lock:
            return np.allclose([hw.wheel_vel[j] for j in DRIVE], expect.rates, atol=1e-9)

    def arrived():
        pub.publish(m)
        return driving()
    assert wait_for(arrived, 60, 0.02), hw.wheel_vel
    halt = threading.Event()
    flooder, sent = _flood(user, halt)
    try:
        for _ in range(50):                          # 1 s of driving under the flood
            pub.publish(m)
            time.sleep(0.02)
        assert driving(), "the flood stopped the wheels before cmd_vel did (no test of the stop's latency)"
        t_last = time.monotonic()
        pub.publish(m)
        assert wait_for(lambda: hw.first_stop_after(t_last)[0] is not None, 5.0, 0.01), "the wheels never stopped"
    finally:
        halt.set()
        flooder.join(timeout=5)
    t_stop, _ = hw.first_stop_after(t_last)
    print(f"\n[flood] {kind}: wheels stopped {t_stop - t_last:.3f} s after the last cmd_vel; {len(sent)} messages "
          f"of {sent[0] / 1e6:.1f} MB sent")
    # the rule itself: the wheel command in force 0.5 s after the last cmd_vel is zero (a heartbeat queued
    # behind the flood sends nothing at all, so "no non-zero command" would not do)
    assert t_stop <= t_last + LIMIT, f"the wheels stopped {t_stop - t_last:.3f} s after the last cmd_vel"
