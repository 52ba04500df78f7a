"""The locomotor node over the in-memory transport (real message classes, real core; a stand-in mirrors the
controllers' commands into joint_states as mock hardware does). The same scenarios run against real
ros2_control in test_locomotor_ros2_control.py."""

import math
import time

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel, arc_twist

from ros.dds_helpers import wait_for
from ros.watchdog_timing import LIMIT, check_stop, heartbeat_lateness
from ros.wheel_standin import WheelStandIn

pytestmark = pytest.mark.ros

ROVER = load_model(model_path("rocky8/rocky8_rover.xml"))
CORE = WheeledLocomotorModel(ROVER)
STEER = [w.steering_joint for w in CORE.wheels]
DRIVE = [w.drive_joint for w in CORE.wheels]


@pytest.fixture
def rig():
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    params = {"cmd_vel_timeout": 0.25, "joint_states_timeout": 0.25, "max_linear_speed": 0.5,
              "max_angular_speed": 1.0}
    served = Served(ROVER, "test")
    node = create("locomotor", MemoryNode("locomotor", parameters=params, bus=bus), served)
    hw = WheelStandIn(MemoryNode("hardware", bus=bus), STEER, DRIVE)
    user = MemoryNode("user", bus=bus)
    cmd = user.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", __import__("mechanism_model_ros.qos").qos.DEFAULT)
    odom = []
    user.create_subscription("odom", "nav_msgs/msg/Odometry", __import__("mechanism_model_ros.qos").qos.DEFAULT,
                             odom.append)
    Twist = user.message_class("geometry_msgs/msg/Twist")

    def send(vx=0.0, vy=0.0, wz=0.0, **extra):
        m = Twist()
        m.linear.x, m.linear.y, m.angular.z = vx, vy, wz
        for k, v in extra.items():
            setattr(m.angular if k == "wx" else m.linear, "x" if k == "wx" else "z", v)
        cmd.publish(m)

    yield node, hw, send, odom, user
    node.close()
    hw.close()


def drive_for(send, twist, seconds, period=0.02):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        send(*twist)
        time.sleep(period)


def test_arc_gives_the_core_steering_and_rates_and_odometry_follows(rig):
    node, hw, send, odom, _ = rig
    twist = arc_twist(0.2, 1.5)
    drive_for(send, twist, 1.5)
    expect = CORE.drive(twist)
    with hw.lock:
        steer = [hw.steering[j] for j in STEER]
        rates = [hw.wheel_vel[j] for j in DRIVE]
    np.testing.assert_allclose(steer, expect.steering, atol=1e-12)
    np.testing.assert_allclose(rates, expect.rates, atol=1e-12)
    # odometry: the body turned at wz = v / R while the wheels turned (the stand-in's measured rates)
    _, _, yaw = node.odometry.pose
    assert node.odom_twist == pytest.approx(twist, abs=1e-9)
    assert yaw > 0.05
    assert odom and odom[-1].header.frame_id == "odom" and odom[-1].child_frame_id == "chassis"
    assert odom[-1].twist.covariance[0] > 0


def test_silence_stops_the_wheels_within_half_a_second(rig):
    """The stop comes on the heartbeat's first tick after cmd_vel_timeout; a tick the OS woke late is not
    the node's decision (watchdog_timing)."""
    node, hw, send, _, _ = rig
    drive_for(send, (0.2, 0.0, 0.0), 0.6)
    send(0.2, 0.0, 0.0)
    t_last = node._cmd_time                    # the node's own stamp of the last command (same process)
    assert wait_for(lambda: hw.first_stop_after(t_last)[0] is not None, 5.0, 0.01), "the wheels never stopped"
    t_stop, ticks = hw.first_stop_after(t_last)
    check_stop(t_stop - t_last, heartbeat_lateness([t_last] + ticks, t_stop, 1.0 / node.rate))
    assert node.counts["watchdog_stops"] >= 1
    assert node.cmd_timeout + 1.0 / node.rate < LIMIT           # by design, with a margin for scheduling


def test_stale_joint_states_stop_the_wheels(rig):
    node, hw, send, _, _ = rig
    drive_for(send, (0.2, 0.0, 0.0), 0.5)
    hw.silent.set()
    t0 = time.monotonic()
    end = t0 + 5.0
    while time.monotonic() < end and hw.first_stop_after(t0)[0] is None:
        send(0.2, 0.0, 0.0)                      # cmd_vel keeps coming: only the state is stale
        time.sleep(0.02)
    t_stop, ticks = hw.first_stop_after(t0)
    assert t_stop is not None, "the wheels never stopped"
    # decisions come on every cmd_vel and every heartbeat tick: the gap before the stopping one is the delay
    check_stop(t_stop - t0, heartbeat_lateness([t0] + ticks, t_stop, 1.0 / node.rate))
    assert node.js_timeout + 1.0 / node.rate < LIMIT


def test_joint_states_of_other_joints_do_not_keep_the_wheels_driving(rig):
    """Issue 19, item 2: the wheel hardware falls silent while another publisher keeps sending joint_states
    of ``arm_yaw`` alone at 50 Hz. The locomotor's state watchdog asks for fresh state of the joints it
    commands, so the wheels stop (steering held) within the stale-state rule, cmd_vel still arriving."""
    node, hw, send, _, user = rig
    from mechanism_model_ros import qos
    arm = user.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    JS = user.message_class("sensor_msgs/msg/JointState")
    drive_for(send, (0.2, 0.0, 0.0), 0.5)
    with hw.lock:
        assert all(v != 0.0 for v in hw.wheel_vel.values())
    hw.silent.set()
    t0 = time.monotonic()
    end = t0 + 5.0
    while time.monotonic() < end and hw.first_stop_after(t0)[0] is None:
        send(0.2, 0.0, 0.0)
        m = JS()
        m.name, m.position = ["arm_yaw"], [0.1]
        arm.publish(m)
        time.sleep(0.02)
    t_stop, ticks = hw.first_stop_after(t0)
    assert t_stop is not None, "other joints' states kept the wheels driving"
    check_stop(t_stop - t0, heartbeat_lateness([t0] + ticks, t_stop, 1.0 / node.rate))
    assert "joint_states stale" in node.status()


def test_hostile_commands_never_leave_the_limits(rig):
    node, hw, send, _, _ = rig
    rng = np.random.default_rng(0)
    for k in range(150):
        v = rng.normal(scale=[2.0, 2.0, 5.0])
        if k % 10 == 0:
            v[rng.integers(3)] = [math.nan, math.inf, -math.inf][k % 3]
        send(*v)
        time.sleep(0.002)
    assert node.counts["rejected"] > 0
    lo, hi = CORE.steering_lower, CORE.steering_upper
    for _, steer, vel in hw.history:
        s = np.array([steer[j] for j in STEER])
        assert np.all(np.isfinite(s)) and np.all(s >= lo - 1e-12) and np.all(s <= hi + 1e-12)
        assert all(math.isfinite(x) for x in vel.values())


def test_stop_service_latches_until_released_and_modes_switch(rig):
    node, hw, send, _, user = rig
    stop = user.create_client("/locomotor/stop", "std_srvs/srv/Trigger")
    release = user.create_client("/locomotor/release", "std_srvs/srv/Trigger")
    crab = user.create_client("/locomotor/drive_mode/crab", "std_srvs/srv/Trigger")
    assert stop.call(stop.request()).success
    drive_for(send, (0.2, 0.0, 0.0), 0.3)
    with hw.lock:
        assert all(v == 0.0 for v in hw.wheel_vel.values())
    assert release.call(release.request()).success
    assert crab.call(crab.request()).success and node.mode == "crab"
    drive_for(send, (0.1, 0.1, 0.5), 0.8)                  # crab drops wz: all wheels at 45 deg
    with hw.lock:
        np.testing.assert_allclose([hw.steering[j] for j in STEER], math.pi / 4, atol=1e-12)
        assert all(v > 0 for v in hw.wheel_vel.values())


def test_imu_attitude_makes_odometry_three_dimensional():
    """Driving straight with the IMU reporting a nose-up pitch climbs in odom (z grows as sin(pitch))."""
    from mechanism_model_ros import qos
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    node = create("locomotor", MemoryNode("locomotor", parameters={"imu_topic": "imu"}, bus=bus), Served(ROVER, "t"))
    hw = WheelStandIn(MemoryNode("hardware", bus=bus), STEER, DRIVE)
    user = MemoryNode("user", bus=bus)
    imu = user.create_publisher("imu", "sensor_msgs/msg/Imu", qos.SENSOR_DATA)
    cmd = user.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    Imu, Twist = user.message_class("sensor_msgs/msg/Imu"), user.message_class("geometry_msgs/msg/Twist")
    pitch = -0.3                                      # URDF pitch about y: negative is nose up
    m = Imu()
    m.orientation.y, m.orientation.w = math.sin(pitch / 2), math.cos(pitch / 2)
    imu.publish(m)
    try:
        t = Twist()
        t.linear.x = 0.2
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            cmd.publish(t)
            time.sleep(0.02)
        x, _, z = node.odometry.position
        assert x > 0.05
        assert z / x == pytest.approx(math.tan(-pitch), rel=1e-6)
    finally:
        node.close()
        hw.close()


def test_twist_stamped_by_parameter():
    from mechanism_model_ros import qos
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    node = create("locomotor", MemoryNode("locomotor", parameters={"cmd_vel_stamped": True}, bus=bus),
                  Served(ROVER, "t"))
    hw = WheelStandIn(MemoryNode("hardware", bus=bus), STEER, DRIVE)
    user = MemoryNode("user", bus=bus)
    pub = user.create_publisher("cmd_vel", "geometry_msgs/msg/TwistStamped", qos.DEFAULT)
    TS = user.message_class("geometry_msgs/msg/TwistStamped")
    try:
        m = TS()
        m.header.frame_id = "chassis"
        m.twist.linear.x = 0.1
        def driven():                    # published until the wheels turn (a bound, not a fixed 0.6 s: ci26 under load)
            pub.publish(m)
            with hw.lock:
                return np.allclose([hw.wheel_vel[j] for j in DRIVE], 1.0, rtol=0.0, atol=1e-12)
        wait_for(driven, 10.0, 0.02)
        with hw.lock:
            np.testing.assert_allclose([hw.wheel_vel[j] for j in DRIVE], 1.0, atol=1e-12)   # 0.1 m/s / 0.1 m
    finally:
        node.close()
        hw.close()


def _locomotor(params):
    from mechanism_model_ros import qos
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    node = create("locomotor", MemoryNode("locomotor", parameters=params, bus=bus), Served(ROVER, "t"))
    hw = WheelStandIn(MemoryNode("hardware", bus=bus), STEER, DRIVE)
    user = MemoryNode("user", bus=bus)
    cmd = user.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    return node, hw, user, cmd, user.message_class("geometry_msgs/msg/Twist")


@pytest.mark.parametrize("publish_tf", [True, False])
def test_odometry_message_covariances_and_the_rep105_transform(publish_tf):
    """odom: header odom, child chassis, the parameters' covariance diagonals (the pose's x, y, yaw block grown
    by dead reckoning); /tf carries odom -> chassis
    equal to the odometry pose (REP-105), and nothing when publish_tf is false."""
    from mechanism_model_ros import qos
    pose_cov = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]
    twist_cov = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    node, hw, user, cmd, Twist = _locomotor({"publish_tf": publish_tf, "pose_covariance_diagonal": pose_cov,
                                             "twist_covariance_diagonal": twist_cov})
    odom, tf = [], []
    user.create_subscription("odom", "nav_msgs/msg/Odometry", qos.DEFAULT, odom.append)
    user.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf.append)
    try:
        t = Twist()
        t.linear.x, t.angular.z = 0.2, 0.2
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            cmd.publish(t)
            time.sleep(0.02)
        o = odom[-1]
        assert o.header.frame_id == "odom" and o.child_frame_id == "chassis"
        pc = np.reshape(o.pose.covariance, (6, 6))
        np.testing.assert_allclose(np.diag(pc)[2:5], pose_cov[2:5], atol=0)     # z, roll, pitch: the floor
        planar = np.ix_([0, 1, 5], [0, 1, 5])
        grown = pc[planar] - np.diag(np.array(pose_cov)[[0, 1, 5]])
        # dead reckoning with the twist floor's noise: the x, y, yaw block grows, symmetric, positive
        np.testing.assert_allclose(grown, grown.T, atol=1e-15)
        assert np.all(np.linalg.eigvalsh(grown) > -1e-15) and np.trace(grown) > 0
        tc = np.reshape(o.twist.covariance, (6, 6))
        np.testing.assert_allclose(np.diag(tc)[2:], twist_cov[2:], atol=0)
        np.testing.assert_allclose(np.diag(tc)[:2], twist_cov[:2], atol=1e-12)    # no slip: nothing added
        assert np.all(np.abs(tc - np.diag(np.diag(tc))) < 1e-20)     # rounding of an exact fit only
        if not publish_tf:
            assert tf == []
            return
        last = [m for m in tf if m.transforms][-1].transforms[0]
        assert last.header.frame_id == "odom" and last.child_frame_id == "chassis"
        match = [x for x in odom if (x.header.stamp.sec, x.header.stamp.nanosec) ==
                 (last.header.stamp.sec, last.header.stamp.nanosec)]
        assert match, "every transform has the stamp of an odometry message"
        p = match[-1].pose.pose
        assert [last.transform.translation.x, last.transform.translation.y, last.transform.translation.z] == \
            [p.position.x, p.position.y, p.position.z]
        assert [last.transform.rotation.x, last.transform.rotation.y, last.transform.rotation.z,
                last.transform.rotation.w] == [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w]
        assert p.position.x > 0.05 and p.orientation.z > 0.01          # it drove forward and turned left
    finally:
        node.close()
        hw.close()


def test_rejected_commands_are_warned_once_per_period(caplog):
    node, hw, user, cmd, Twist = _locomotor({"max_linear_speed": 0.5})
    try:
        with caplog.at_level("WARNING", logger="mechanism_model_ros"):
            for k in range(30):
                t = Twist()
                t.linear.x = math.nan if k % 2 else 5.0                  # NaN, then too fast
                cmd.publish(t)
                time.sleep(0.005)
        assert node.counts["rejected"] == 30
        nan = [r for r in caplog.records if "NaN or infinite" in r.getMessage()]
        fast = [r for r in caplog.records if "cmd_vel rejected: |v|" in r.getMessage()]
        assert len(nan) == 1 and len(fast) == 1                          # rate-limited: one each per 2 s
        with hw.lock:
            assert all(v == 0.0 for v in hw.wheel_vel.values())          # nothing was driven
    finally:
        node.close()
        hw.close()


def test_drive_mode_parameter_and_bad_parameters():
    node, hw, user, cmd, Twist = _locomotor({"drive_mode": "turn_in_place"})
    try:
        assert node.mode == "turn_in_place"
        t = Twist()
        t.linear.x, t.angular.z = 0.3, 0.5                               # turn in place drops vx
        expect = CORE.drive((0.0, 0.0, 0.5))

        def steered():                   # published until the wheels are steered (a bound, not a fixed 0.8 s)
            cmd.publish(t)
            with hw.lock:
                return np.allclose([hw.steering[j] for j in STEER], expect.steering, rtol=0.0, atol=1e-12)
        wait_for(steered, 10.0, 0.02)
        with hw.lock:
            np.testing.assert_allclose([hw.steering[j] for j in STEER], expect.steering, atol=1e-12)
    finally:
        node.close()
        hw.close()
    for bad in ({"drive_mode": "warp"}, {"pose_covariance_diagonal": [1.0, 2.0]}):
        with pytest.raises(Exception, match="drive_mode|covariance"):
            _locomotor(bad)


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "0", "-1.0", float("nan"), float("inf")])
@pytest.mark.parametrize("name", ["max_linear_speed", "max_angular_speed"])
def test_speed_limits_must_be_positive_and_finite(name, value):
    """Issue 19, item 5: a NaN or infinite speed limit would switch the cmd_vel range check off; the node
    refuses to start with the parameter named (values as a parameter file or -p gives them: YAML text)."""
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.params import parse_override
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    v = parse_override(f"{name}:={value}")[1] if isinstance(value, str) else value
    with pytest.raises(ValueError, match=name):
        create("locomotor", MemoryNode("locomotor", parameters={name: v}, bus=MemoryBus()), Served(ROVER, "test"))


def test_a_float_written_without_a_dot_is_a_float():
    """``1e9`` is a float in YAML 1.2 and in rcl's parameter parser; PyYAML (YAML 1.1) leaves it a string."""
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.params import parse_override
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    params = dict(parse_override(t) for t in ("max_linear_speed:=1e9", "max_angular_speed:=2E-1",
                                              "cmd_vel_timeout:=25e-2"))
    node = create("locomotor", MemoryNode("locomotor", parameters=params, bus=MemoryBus()), Served(ROVER, "test"))
    try:
        assert (node.max_v, node.max_w, node.cmd_timeout) == (1e9, 0.2, 0.25)
    finally:
        node.close()


def test_one_absurd_joint_state_does_not_corrupt_odometry(rig):
    """Issue 19, item 4: a joint_states message with every wheel at 1e300 rad/s, then one stamped 1e8 s in
    the future, arrive among the hardware's own; both are refused and counted, and odometry goes on from the
    last good state (the rover keeps driving at 0.2 m/s: x grows by what it drove, not by 1e299 m)."""
    node, hw, send, _, user = rig
    from mechanism_model_ros import qos
    pub = user.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    JS = user.message_class("sensor_msgs/msg/JointState")
    drive_for(send, (0.2, 0.0, 0.0), 0.5)
    x0 = node.odometry.pose[0]
    t0 = time.monotonic()
    for vel, ahead in ((1e300, 0.0), (0.0, 1e8)):
        with hw.lock:
            pos = dict(hw.wheel_pos)
        m = JS()
        m.name = list(DRIVE)
        m.position = [pos[j] for j in DRIVE]
        m.velocity = [vel] * len(DRIVE) if vel else [4.0] * len(DRIVE)
        # the stand-in's joint states carry no stamp (the node times them on its monotonic clock): the
        # future one is 1e8 s ahead of that clock; the other one is unstamped too
        m.header.stamp.sec = int(time.monotonic() + ahead) if ahead else 0
        pub.publish(m)
        drive_for(send, (0.2, 0.0, 0.0), 0.1)
    drive_for(send, (0.2, 0.0, 0.0), 0.4)
    driven = time.monotonic() - t0
    x1 = node.odometry.pose[0]
    assert node.counts["odom_rejected"] >= 2
    assert node.odom_guard.rejected["rate"] >= 1 and node.odom_guard.rejected["long_step"] >= 1
    # it drove on at 0.2 m/s: x grew by about what that gives (steps lost to the re-bases: a few cm)
    assert 0.0 < x1 - x0 <= 0.2 * driven + 0.05, (x0, x1, driven)


def test_a_heartbeat_that_raises_stops_the_wheels(rig):
    """Issue 19, item 1 (an exception in a node): when deciding a command raises, the heartbeat sends zero
    wheel rates (steering held) instead of leaving the last command in force."""
    node, hw, send, _, _ = rig
    drive_for(send, (0.2, 0.0, 0.0), 0.5)
    with hw.lock:
        assert all(v != 0.0 for v in hw.wheel_vel.values())

    def broken(*args, **kwargs):
        raise RuntimeError("a defect in the drive policy")
    node.model.drive = broken
    t0 = time.monotonic()

    def stopped():
        send(0.2, 0.0, 0.0)            # cmd_vel keeps coming: only the exception can stop the wheels
        return hw.first_stop_after(t0)[0] is not None
    assert wait_for(stopped, 5.0, 0.02), "the wheels kept driving"


def test_close_sends_zero_and_nothing_after_it(rig):
    """close() (serve on SIGINT/SIGTERM) sends zero wheel rates, and a cmd_vel arriving afterwards sends
    nothing."""
    node, hw, send, _, _ = rig
    drive_for(send, (0.2, 0.0, 0.0), 0.5)
    t0 = time.monotonic()
    node.close()
    t_stop, _ = hw.first_stop_after(t0)
    assert t_stop is not None
    n = len(hw.wheel_history)
    drive_for(send, (0.2, 0.0, 0.0), 0.2)
    with hw.lock:
        assert len(hw.wheel_history) == n and all(v == 0.0 for v in hw.wheel_vel.values())
