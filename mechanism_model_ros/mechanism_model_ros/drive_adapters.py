"""Where the locomotor's steering and wheel commands go, and where the measured joints come from: one adapter
per rover software stack, chosen by the locomotor's ``adapter`` parameter.

* ``ros2_control`` (default): ``std_msgs/Float64MultiArray`` on ``/<steering controller>/commands`` and
  ``/<wheel controller>/commands`` (forward_command_controllers, each in its controller's joint order); state
  from the process's ``joint_states`` cache (joint_state_broadcaster). A steering group commanded by a
  joint trajectory controller (the Space ROS Curiosity demo's ``steer_position_controller``) gets a one-point
  ``trajectory_msgs/JointTrajectory`` on ``/<steering controller>/joint_trajectory`` instead, reaching the
  targets after the ``steer_duration`` the locomotor gives (each new one replaces the last).
* ``osr``: the JPL Open Source Rover's own interfaces (osr-rover-code, ``osr_interfaces``):
  ``CommandCorner`` on ``/cmd_corner`` (``left_front_pos``, ``left_back_pos``, ``right_front_pos``,
  ``right_back_pos``: rad, positive to the right) and ``CommandDrive`` on ``/cmd_drive`` (``left_front_vel``
  ... ``right_back_vel``: rad/s, right side negated), as its ``rover.py`` publishes them for its
  ``servo_control`` and ``roboclaw_wrapper`` nodes; state from ``sensor_msgs/JointState`` on
  ``/corner_state`` and ``/drive_state`` (the names ``corner_left_front`` ... ``drive_right_back``). The
  model must carry OSR's joint names and signs (``models/osr/osr_rover.xml`` does), so that joint
  coordinates and message fields are the same numbers: this adapter renames, never converts.

Adapters hold no math: the locomotor computes and limits every command before :meth:`publish`.
"""

from __future__ import annotations

import threading

from . import qos
from .conversions import fill_joint_trajectory
from .joint_state_cache import MergedJointStates

__all__ = ["ADAPTERS", "Ros2ControlAdapter", "OsrAdapter", "OsrJointStates", "make_adapter", "OSR_CORNERS",
           "OSR_DRIVES"]

ADAPTERS = ("ros2_control", "osr")
#: OSR's corner (steering) and drive joint names, in CommandCorner's / CommandDrive's field order
OSR_CORNERS = ("corner_left_front", "corner_left_back", "corner_right_front", "corner_right_back")
OSR_DRIVES = ("drive_left_front", "drive_left_middle", "drive_left_back", "drive_right_front",
              "drive_right_middle", "drive_right_back")


class Ros2ControlAdapter:
    """Float64MultiArray commands to forward_command_controllers; steering to a joint trajectory controller
    with ``steering_trajectory``."""

    name = "ros2_control"

    def __init__(self, transport, steering_controller: str, wheel_controller: str, has_steering: bool,
                 steering_trajectory: bool = False):
        F64 = "std_msgs/msg/Float64MultiArray"
        JT = "trajectory_msgs/msg/JointTrajectory"
        self._F64 = transport.message_class(F64)
        self.steering_trajectory = bool(steering_trajectory)
        self.steer_pub = None
        if has_steering and self.steering_trajectory:
            self._JT = transport.message_class(JT)
            self._Point = transport.message_class("trajectory_msgs/msg/JointTrajectoryPoint")
            self.steer_pub = transport.create_publisher(f"/{steering_controller}/joint_trajectory", JT, qos.DEFAULT)
        elif has_steering:
            self.steer_pub = transport.create_publisher(f"/{steering_controller}/commands", F64, qos.DEFAULT)
        self.wheel_pub = transport.create_publisher(f"/{wheel_controller}/commands", F64, qos.DEFAULT)

    def publish(self, steering: dict, rates: dict, steering_order, wheel_order, steer_duration: float = 0.0) -> None:
        """``steering``/``rates``: ``{joint: value}`` (rad, rad/s), sent in the controllers' joint order;
        ``steer_duration`` (s): the trajectory's ``time_from_start`` for a joint trajectory controller."""
        if self.steer_pub is not None and self.steering_trajectory:
            m = self._JT()
            fill_joint_trajectory(m, self._Point, list(steering_order), [float(steer_duration)],
                                  [[float(steering[j]) for j in steering_order]])
            self.steer_pub.publish(m)
        elif self.steer_pub is not None:
            m = self._F64()
            m.data = [float(steering[j]) for j in steering_order]
            self.steer_pub.publish(m)
        m = self._F64()
        m.data = [float(rates[j]) for j in wheel_order]
        self.wheel_pub.publish(m)

    def wait_for_acks(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s each) until the controllers acknowledged the last commands."""
        for pub in (self.steer_pub, self.wheel_pub):
            if pub is not None:
                pub.wait_for_acks(timeout)


class OsrAdapter:
    """CommandCorner on ``/cmd_corner`` and CommandDrive on ``/cmd_drive`` (module docstring)."""

    name = "osr"

    def __init__(self, transport, steering_joints, wheel_joints, corner_topic: str = "/cmd_corner",
                 drive_topic: str = "/cmd_drive"):
        check_osr_joints(steering_joints, wheel_joints)
        self._Corner = transport.message_class("osr_interfaces/msg/CommandCorner")
        self._Drive = transport.message_class("osr_interfaces/msg/CommandDrive")
        self.corner_pub = transport.create_publisher(corner_topic, "osr_interfaces/msg/CommandCorner", qos.DEFAULT)
        self.drive_pub = transport.create_publisher(drive_topic, "osr_interfaces/msg/CommandDrive", qos.DEFAULT)

    def publish(self, steering: dict, rates: dict, steering_order=None, wheel_order=None,
                steer_duration: float = 0.0) -> None:
        c = self._Corner()
        for j in OSR_CORNERS:
            setattr(c, j[len("corner_"):] + "_pos", float(steering[j]))
        d = self._Drive()
        for j in OSR_DRIVES:
            setattr(d, j[len("drive_"):] + "_vel", float(rates[j]))
        self.corner_pub.publish(c)
        self.drive_pub.publish(d)

    def wait_for_acks(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s each) until the rover acknowledged the last commands."""
        for pub in (self.corner_pub, self.drive_pub):
            pub.wait_for_acks(timeout)


def check_osr_joints(steering_joints, wheel_joints) -> None:
    """The ``osr`` adapter needs OSR's joint names (ValueError naming what differs)."""
    if sorted(steering_joints) != sorted(OSR_CORNERS) or sorted(wheel_joints) != sorted(OSR_DRIVES):
        raise ValueError(f"adapter 'osr' needs a model with OSR's joint names: steering {list(OSR_CORNERS)} and "
                         f"drive {list(OSR_DRIVES)}; this one has {sorted(steering_joints)} and "
                         f"{sorted(wheel_joints)} (models/osr/osr_rover.xml has them)")


class OsrJointStates(MergedJointStates):
    """The measured joints of an Open Source Rover: ``/corner_state`` and ``/drive_state`` merged
    (:class:`~.joint_state_cache.MergedJointStates`). Listeners hear ``/drive_state`` updates only (the wheel
    rates odometry needs; each carries the merged latest values); :meth:`last_heard` gives the older of the
    two topics' last arrivals for the watchdog."""

    def __init__(self, transport, mechanism, corner_topic: str = "/corner_state",
                 drive_topic: str = "/drive_state", reliable: bool = True):
        super().__init__(transport, mechanism, (corner_topic, drive_topic), reliable=reliable)
        self.corner, self.drive = self.caches
        self._lock = threading.Lock()
        self._heard = {"corner": -float("inf"), "drive": -float("inf")}
        self.corner.add_listener(lambda u: self._heard_now("corner"))
        self.drive.add_listener(lambda u: self._heard_now("drive"))

    def _heard_now(self, which):
        with self._lock:
            self._heard[which] = self.transport.monotonic()

    def last_heard(self) -> float:
        """The older of the two topics' last arrivals (monotonic s; -inf until both were heard)."""
        with self._lock:
            return min(self._heard.values())

    def add_listener(self, listener, on_drained=None, topics=None) -> None:
        super().add_listener(listener, on_drained, topics=(self.topics[1],) if topics is None else topics)

    def status(self) -> str:
        return f"corner_state: {self.corner.status()}; drive_state: {self.drive.status()}"


def make_adapter(kind: str, transport, *, steering_controller: str, wheel_controller: str, steering_joints,
                 wheel_joints, steering_trajectory: bool = False):
    """The adapter named ``kind`` (one of :data:`ADAPTERS`; ValueError otherwise)."""
    if kind == "ros2_control":
        return Ros2ControlAdapter(transport, steering_controller, wheel_controller, bool(steering_joints),
                                  steering_trajectory)
    if kind == "osr":
        return OsrAdapter(transport, steering_joints, wheel_joints)
    raise ValueError(f"parameter adapter is one of {ADAPTERS}, got {kind!r}")
