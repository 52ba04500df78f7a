"""The locomotor's ``osr`` adapter in its own process over real DDS on loopback, on both transports (Cyclone,
and rclpy where ROS 2 is installed): ``/cmd_vel`` and ``/cmd_vel_intuitive`` in, OSR's ``CommandCorner`` on
``/cmd_corner`` and ``CommandDrive`` on ``/cmd_drive`` out, with the numbers the core computes for the shipped
Open Source Rover model; ``/corner_state`` and ``/drive_state`` back from a stand-in for OSR's servo and
RoboClaw nodes (hardware only: it mirrors the commands as those nodes report them); silence on the command or
on either state topic stops the wheels within 0.5 s; the limits hold. The process runs the shipped
config/osr.yaml, so its state publisher reads /corner_state and /drive_state: TF shows the rover's real
corner angles and wheel positions with no joint_states bridge."""

import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for
from system.serving import Server
from ros.watchdog_timing import check_stop, heartbeat_lateness

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CORE = WheeledLocomotorModel(load_model(model_path("osr/osr_rover.xml")))
CORNERS = ("left_front", "left_back", "right_front", "right_back")
DRIVES = ("left_front", "left_middle", "left_back", "right_front", "right_middle", "right_back")
PARAMS = ["-p", "adapter:=osr", "-p", "drive_mode:=ackermann", "-p", "cmd_vel_timeout:=0.25",
          "-p", "joint_states_timeout:=0.25", "-p", "command_rate:=50.0", "-p", "max_linear_speed:=3.0"]
HEARTBEAT = 1.0 / 50.0
CONFIG = Path(__file__).resolve().parents[2] / "config" / "osr.yaml"


class OsrStandIn:
    """OSR's servo_control and roboclaw_wrapper as seen on the wire: corner commands become corner positions,
    drive commands drive velocities (integrated into positions); JointState on /corner_state and
    /drive_state at 50 Hz."""

    def __init__(self, node):
        from mechanism_model_ros import qos
        self.lock = threading.Lock()
        self.corner = {f"corner_{k}": 0.0 for k in CORNERS}
        self.drive_pos = {f"drive_{k}": 0.0 for k in DRIVES}
        self.drive_vel = {f"drive_{k}": 0.0 for k in DRIVES}
        self.drive_history = []
        node.create_subscription("/cmd_corner", "osr_interfaces/msg/CommandCorner", qos.DEFAULT, self.on_corner)
        node.create_subscription("/cmd_drive", "osr_interfaces/msg/CommandDrive", qos.DEFAULT, self.on_drive)
        self.JS = node.message_class("sensor_msgs/msg/JointState")
        self.corner_pub = node.create_publisher("/corner_state", "sensor_msgs/msg/JointState", qos.DEFAULT)
        self.drive_pub = node.create_publisher("/drive_state", "sensor_msgs/msg/JointState", qos.DEFAULT)
        self.silent = {"corner": threading.Event(), "drive": threading.Event()}
        self.halt = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def on_corner(self, msg):
        with self.lock:
            for k in CORNERS:
                self.corner[f"corner_{k}"] = float(getattr(msg, f"{k}_pos"))

    def on_drive(self, msg):
        with self.lock:
            for k in DRIVES:
                self.drive_vel[f"drive_{k}"] = float(getattr(msg, f"{k}_vel"))
            self.drive_history.append((time.monotonic(), dict(self.drive_vel)))

    def first_stop_after(self, t0):
        with self.lock:
            hist = [(t, v) for t, v in self.drive_history if t >= t0]
        times = []
        for t, v in hist:
            if all(x == 0.0 for x in v.values()):
                return t, times
            times.append(t)
        return None, times

    def run(self):
        last = time.monotonic()
        while not self.halt.wait(0.02):
            now = time.monotonic()
            dt, last = now - last, now
            with self.lock:
                for j, v in self.drive_vel.items():
                    self.drive_pos[j] += v * dt
                corner = dict(self.corner)
                pos, vel = dict(self.drive_pos), dict(self.drive_vel)
            if not self.silent["corner"].is_set():
                m = self.JS()
                m.name, m.position = list(corner), list(corner.values())
                self.corner_pub.publish(m)
            if not self.silent["drive"].is_set():
                m = self.JS()
                m.name, m.position, m.velocity = list(pos), list(pos.values()), list(vel.values())
                self.drive_pub.publish(m)

    def positions(self):
        """The positions last reported on /corner_state and /drive_state."""
        with self.lock:
            return {**self.corner, **self.drive_pos}

    def commanded(self):
        with self.lock:
            return (np.array([self.corner[f"corner_{k}"] for k in CORNERS]),
                    np.array([self.drive_vel[f"drive_{k}"] for k in DRIVES]))


def expected(twist, angular_y=0.0, intuitive=False):
    pol = CORE.policy.replace(interpretation="intuitive", zero_speed="steer_only") if intuitive else CORE.policy
    cmd = CORE.command(twist, angular_y, mode="ackermann", policy=pol, steer_before_drive=False)
    s, r = cmd.steering_by_joint(CORE), cmd.rates_by_joint(CORE)
    return np.array([s[f"corner_{k}"] for k in CORNERS]), np.array([r[f"drive_{k}"] for k in DRIVES]), cmd


@pytest.fixture(params=["cyclone", "rclpy-humble"])
def served(request):
    domain = unique_domain_id()
    args = ["--params-file", str(CONFIG), "--model", "osr/osr_rover.xml", "--nodes", "state_publisher,locomotor",
            *PARAMS]
    server = Server(request.param, domain, *args)
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    hw = OsrStandIn(CycloneNode("osr_hardware", context=ctx))
    user = CycloneNode("user", context=ctx)
    pubs = {t: user.create_publisher(t, "geometry_msgs/msg/Twist", qos.DEFAULT)
            for t in ("/cmd_vel", "/cmd_vel_intuitive")}
    odom = []
    user.create_subscription("odom", "nav_msgs/msg/Odometry", qos.DEFAULT, odom.append)
    user.odom = odom
    try:
        yield request.param, hw, pubs, user
    finally:
        hw.halt.set()
        user.close()
        ctx.close()                     # and the stand-in's node with it
        text = server.stop()
        if text.strip():
            print(f"serve ({request.param}) output:\n{text[-3000:]}")


def drive_until(user, pub, hw, twist, want, angular_y=0.0, timeout=60):
    Twist = user.message_class("geometry_msgs/msg/Twist")

    def arrived():
        m = Twist()
        m.linear.x, m.linear.y, m.angular.z, m.angular.y = twist[0], twist[1], twist[2], angular_y
        pub.publish(m)
        corner, drive = hw.commanded()
        return np.allclose(corner, want[0], atol=1e-9) and np.allclose(drive, want[1], atol=1e-9)
    return wait_for(arrived, timeout, 0.02)


def test_cmd_vel_gives_osr_commands_silence_stops_limits_hold(served):
    kind, hw, pubs, user = served
    Twist = user.message_class("geometry_msgs/msg/Twist")
    # an arc, the radius clipped to OSR's 0.45 m (0.3 / 1.0 = 0.3 m asked)
    want = expected((0.3, 0.0, 1.0))
    assert want[2].note and "clipped" in want[2].note
    assert drive_until(user, pubs["/cmd_vel"], hw, (0.3, 0.0, 1.0), want), hw.commanded()
    # the joystick topic: reversing keeps the steering direction
    want = expected((-0.3, 0.0, 0.8), intuitive=True)
    assert drive_until(user, pubs["/cmd_vel_intuitive"], hw, (-0.3, 0.0, 0.8), want), hw.commanded()
    assert want[0][0] < 0                                  # left front steered left (OSR: negative)
    # in place from angular.y
    want = expected((0.0, 0.0, 0.0), angular_y=0.4)
    assert drive_until(user, pubs["/cmd_vel"], hw, (0.0, 0.0, 0.0), want, angular_y=0.4), hw.commanded()
    # limits: 2.5 m/s straight would spin the wheels at 33 rad/s; no-load is 23.35 rad/s
    want = expected((2.5, 0.0, 0.0))
    assert want[2].scale < 1
    assert drive_until(user, pubs["/cmd_vel"], hw, (2.5, 0.0, 0.0), want), hw.commanded()
    corner, drive = hw.commanded()
    assert np.all(np.abs(drive) <= CORE.max_rates[0] + 1e-12) and np.all(np.abs(corner) <= np.pi / 2)
    # odometry from /drive_state and /corner_state (OSR's signs) reads the straight run (rover.py's reads 0)
    speed = want[2].twist[0]

    def odom_straight():
        pubs["/cmd_vel"].publish(_twist(Twist, 2.5))
        return user.odom and abs(user.odom[-1].twist.twist.linear.x - speed) < 1e-6 and \
            abs(user.odom[-1].twist.twist.angular.z) < 1e-9
    assert wait_for(odom_straight, 10, 0.02), user.odom[-1].twist.twist if user.odom else "no odom"
    # cmd_vel silence: the wheels stop within 0.5 s (the node's decision, see watchdog_timing)
    m = Twist()
    m.linear.x = 2.5
    t_last = time.monotonic()
    pubs["/cmd_vel"].publish(m)
    assert wait_for(lambda: hw.first_stop_after(t_last)[0] is not None, 5.0, 0.01), "never stopped"
    t_stop, ticks = hw.first_stop_after(t_last)
    check_stop(t_stop - t_last, heartbeat_lateness([t_last] + ticks, t_stop, HEARTBEAT))


@pytest.mark.parametrize("which", ["corner", "drive"])
def test_silence_of_either_state_topic_stops_the_wheels(served, which):
    kind, hw, pubs, user = served
    Twist = user.message_class("geometry_msgs/msg/Twist")
    want = expected((0.3, 0.0, 0.2))
    assert drive_until(user, pubs["/cmd_vel"], hw, (0.3, 0.0, 0.2), want)
    hw.silent[which].set()
    t_silent = time.monotonic()
    m = Twist()
    m.linear.x, m.angular.z = 0.3, 0.2

    def stopped():
        pubs["/cmd_vel"].publish(m)                      # commands keep coming: only the state is silent
        return hw.first_stop_after(t_silent)[0] is not None
    assert wait_for(stopped, 5.0, 0.02), f"{which}_state silence never stopped the wheels"
    t_stop, ticks = hw.first_stop_after(t_silent)
    check_stop(t_stop - t_silent, heartbeat_lateness([t_silent] + ticks, t_stop, HEARTBEAT))


def test_tf_shows_the_corner_angles_and_wheel_positions_of_osr_state_topics(served):
    """The state publisher of config/osr.yaml reads /corner_state and /drive_state: after an arc (corners
    steered, wheels turned) and a stop, every transform on /tf equals the model's forward kinematics at the
    positions the stand-in reported (rockers and bogies, not measured, at home)."""
    from mechanism_model_core import forward_kinematics
    from mechanism_model_ros import qos

    from ros.dds_helpers import transform_to_matrix
    kind, hw, pubs, user = served
    tf, lock = {}, threading.Lock()

    def on_tf(msg):
        with lock:
            for ts in msg.transforms:
                tf[(ts.header.frame_id, ts.child_frame_id)] = transform_to_matrix(ts.transform)
    user.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, on_tf)
    want = expected((0.3, 0.0, 1.0))
    assert drive_until(user, pubs["/cmd_vel"], hw, (0.3, 0.0, 1.0), want), hw.commanded()
    t_last = time.monotonic()          # cmd_vel silent from here: the wheels stop, the corners hold
    assert wait_for(lambda: hw.first_stop_after(t_last)[0] is not None, 5.0, 0.01)
    m = CORE.mechanism
    corner_names = {f"corner_{k}" for k in CORNERS}

    def matches():
        values = hw.positions()
        if not all(abs(values[j]) > 0.05 for j in corner_names):
            return False
        fk = forward_kinematics(m, values)
        with lock:
            got = dict(tf)
        children = {c for _, c in got}
        moved = {m.child_body_of_joint(j) for j in values}
        if not moved <= children:
            return False
        for (parent, child), T in got.items():
            if parent == "odom":               # the locomotor's odometry, not a joint
                continue
            if not np.allclose(T, np.linalg.inv(fk.pose(parent)) @ fk.pose(child), atol=1e-9):
                return False
        return True
    assert wait_for(matches, 10.0, 0.05), (hw.positions(), sorted(tf))


def _twist(Twist, vx=0.0, wz=0.0):
    m = Twist()
    m.linear.x, m.angular.z = vx, wz
    return m
