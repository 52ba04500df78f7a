"""Locomotor node: ``cmd_vel`` in, steering and wheel commands to ros2_control out, odometry back.

A thin adapter over :class:`mechanism_model_core.locomotion.wheeled.WheeledLocomotorModel` (all the math
lives there):

* Subscribes ``cmd_vel`` (``geometry_msgs/Twist``; ``geometry_msgs/TwistStamped`` with parameter
  ``cmd_vel_stamped``, as Jazzy's controllers take it) and ``joint_states`` (the process's shared cache).
* Publishes ``std_msgs/Float64MultiArray`` on ``/<steering_controller>/commands`` (steering positions, rad)
  and ``/<wheel_controller>/commands`` (wheel rates, rad/s), each in its controller's joint order
  (``steering_joints`` / ``wheel_joints`` parameters; default: the mobility description's order), on every
  accepted ``cmd_vel`` (lowest latency) and at ``command_rate`` Hz (the watchdog's heartbeat). A steering
  motor group commanded by a joint trajectory controller gets a one-point ``trajectory_msgs/JointTrajectory``
  on ``/<steering_controller>/joint_trajectory`` instead, timed by the group's velocity limits
  (:meth:`~mechanism_model_core.locomotion.motor_group.MotorGroup.travel_time`).
* Publishes ``odom`` (``nav_msgs/Odometry``: pose in ``odom_frame``, twist in ``base_frame``; covariances:
  the parameters' diagonals as a floor, plus for x, y, yaw the least-squares twist's covariance derived from
  the wheels' disagreement (the slip residual) and the pose's propagated through each exact SE(2) step) and,
  with ``publish_tf``, the
  ``odom -> base_frame`` transform on ``/tf`` (REP-105). Odometry integrates the least-squares body twist of
  the measured wheel rates (``velocity`` of ``joint_states``, or differences of wheel positions) and
  steering angles.

Safety (every case also logged, rate-limited):

* ``cmd_vel`` silent for ``cmd_vel_timeout`` s, or any commanded joint (each steering and drive joint) not
  reported on ``joint_states`` for ``joint_states_timeout`` s (or never, with ``require_joint_states``;
  messages naming other joints do not count): wheel rates 0, steering held where it is, within one
  period of ``command_rate`` (defaults: 0.25 s + 20 ms, well inside 0.5 s);
* the node closing (``serve`` on SIGINT/SIGTERM, an exception, a lost middleware) or a heartbeat that
  fails: wheel rates 0, steering held, and no command after it; a killed node's wheels are stopped by the
  exported wheel controller's ``command_timeout`` (docs/ros.md, "Stopping when the commanding node dies");
* a ``cmd_vel`` with NaN/inf, or faster than ``max_linear_speed`` / ``max_angular_speed``, is rejected (the
  previous command ages out through the watchdog); a command the steering cannot follow is refused by the
  core with its reason and the wheels stop;
* ``~/stop`` (``std_srvs/Trigger``) latches a stop until ``~/release``;
* wheel rates never exceed the mobility's (or the joints') limits: the whole twist is scaled down, keeping
  the curvature; steering targets never leave the steering joints' ranges.

Drive mode: parameter ``drive_mode`` (``auto``, ``ackermann``, ``crab``, ``turn_in_place``, ``skid``) and
services ``~/drive_mode/<mode>`` (``std_srvs/Trigger``).

Drive policy (:mod:`mechanism_model_core.locomotion.drive_policy`): the mobility description's, each key
overridable by a parameter of the same name (``min_turn_radius``, ``max_turn_radius`` (m),
``radius_limit``, ``straight_deadband`` (rad/s), ``interpretation``, ``zero_speed``, ``in_place``,
``steer_only_speed`` (m/s)). ``cmd_vel_intuitive_topic`` (default empty; ``/cmd_vel_intuitive`` with the
``osr`` adapter): a second Twist input read with ``interpretation: intuitive`` and ``zero_speed:
steer_only``, as OSR's joystick topic.

Adapter: parameter ``adapter`` (:mod:`.drive_adapters`): ``ros2_control`` (default: the controllers'
``commands`` topics, state from ``joint_states``) or ``osr`` (the Open Source Rover's ``CommandCorner`` on
``/cmd_corner`` and ``CommandDrive`` on ``/cmd_drive``, state from ``/corner_state`` and ``/drive_state``;
the watchdog needs both state topics fresh).

Controllers, their joint order and limits come from the model's motor groups (``motor_groups``: a file;
empty: the model file's ``<Motor_Group>`` elements); without any, from the parameters below.

Parameters (units): ``mobility`` (path of a mobility YAML overriding the model file's
``<Mobility>`` element; default: ``<model>_mobility.yaml`` beside the model file if any, else the element), ``motor_groups``,
``cmd_vel_topic``, ``cmd_vel_stamped`` (bool), ``drive_mode``, ``command_rate`` (Hz), ``cmd_vel_timeout``
(s), ``joint_states_timeout`` (s), ``require_joint_states`` (bool), ``steering_controller``,
``wheel_controller``, ``steering_joints``, ``wheel_joints`` (lists of joint names), ``max_linear_speed``
(m/s), ``max_angular_speed`` (rad/s), ``steer_before_drive`` (bool), ``steering_tolerance`` (rad),
``odom_frame``, ``base_frame``, ``publish_tf`` (bool), ``imu_topic`` (``sensor_msgs/Imu``; empty: none.
With one, odometry steps follow the body's roll and pitch: 3-D odometry), ``pose_covariance_diagonal``,
``twist_covariance_diagonal`` (6 values each: m^2 and rad^2, (m/s)^2 and (rad/s)^2),
``environment_file`` (a YAML environment file, :mod:`mechanism_model_core.io.environment_file`: with a
``terrain`` -- height field, plane or mesh -- odometry is 3-D on it,
:class:`~mechanism_model_core.locomotion.terrain_odometry.TerrainOdometry`: each step in the body's plane, z,
roll and pitch from settling the rover on the terrain; the terrain's frame is ``odom_frame``),
``odometry_start`` (``[x, y, yaw]``, m and rad: where odometry starts on the terrain, default 0),
``odometry_rate_margin`` (a measured wheel rate beyond this factor times its motor limit is refused, default
1.5), ``odometry_max_step`` (s; a longer or negative time step between joint states is not integrated,
default 0.5): see :mod:`mechanism_model_core.locomotion.odometry_guard`.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from mechanism_model_core.io.environment_file import load_terrain
from mechanism_model_core.locomotion.drive_policy import POLICY_KEYS
from mechanism_model_core.locomotion.odometry_guard import MAX_STEP, RATE_MARGIN, OdometryGuard
from mechanism_model_core.io.mobility_yaml import load_mobility
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion.mobility import MODES, MobilityError
from mechanism_model_core.locomotion.motor_group import ControllerKind
from mechanism_model_core.locomotion.terrain_odometry import TerrainOdometry
from mechanism_model_core.locomotion.wheeled import Odometry, WheeledLocomotorModel
from mechanism_model_core.spatial import matrix_to_quaternion, rpy_to_matrix

from . import markers, qos
from .conversions import TwistRejected, planar_twist
from .drive_adapters import ADAPTERS, OsrJointStates, make_adapter
from .transports.base import RateLimitedLogger, Transport
from mechanism_model_core.spatial import matrix_to_rpy
from .conversions import BadMessage, quaternion_to_matrix
from .joint_state_cache import JointStateCache
from .serve import run_nodes

TRIGGER = "std_srvs/srv/Trigger"


def _motor_groups(mechanism, path: str, log):
    """The model's motor groups (``motor_groups`` parameter: a file; empty: the model file's), or None."""
    try:
        groups = load_motor_groups(mechanism, path or None)
    except Exception as exc:                     # a model without a file: the parameters decide
        if path:
            raise
        log.info("no motor groups (%s): controllers and joint order from the parameters", exc)
        return None
    return groups if len(groups) else None


def _groups_for(groups, model):
    """(steering group, wheel group) holding the mobility's steering and drive joints, or Nones."""
    if groups is None:
        return None, None
    out = []
    for joints, what in (([w.steering_joint for w in model.wheels if w.steering_joint], "steering"),
                         ([w.drive_joint for w in model.wheels], "drive")):
        if not joints:
            out.append(None)
            continue
        try:
            g = groups.group_of(joints[0])
        except Exception:
            out.append(None)
            continue
        if sorted(g.joint_names) != sorted(joints):
            raise MobilityError(f"motor group {g.name!r} must command exactly the mobility's {what} joints "
                                f"{joints}, it has {list(g.joint_names)}")
        out.append(g)
    return tuple(out)


class Locomotor:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, model_path: str | None = None, joint_states=None,
                 start_timer: bool = True):
        self.transport = transport
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        p = transport.get_parameter
        mob = str(p("mobility", ""))
        probe = WheeledLocomotorModel(mechanism, load_mobility(mob) if mob else None)
        self.motor_groups = _motor_groups(mechanism, str(p("motor_groups", "")), self.log)
        self.steer_group, self.wheel_group = _groups_for(self.motor_groups, probe)
        self.model = probe if self.wheel_group is None else WheeledLocomotorModel(
            mechanism, probe.spec, max_rates=dict(zip(self.wheel_group.joint_names, self.wheel_group.velocity)))
        spec = self.model.spec
        self.mode = str(p("drive_mode", "auto"))
        if self.mode not in MODES:
            raise MobilityError(f"drive_mode {self.mode!r} is not one of {MODES}")
        self.rate = float(p("command_rate", 50.0))
        self.cmd_timeout = float(p("cmd_vel_timeout", 0.25))
        self.js_timeout = float(p("joint_states_timeout", 0.25))
        self.require_js = bool(p("require_joint_states", True))
        self.max_v = float(p("max_linear_speed", 1.0))
        self.max_w = float(p("max_angular_speed", 2.0))
        self.steer_before_drive = bool(p("steer_before_drive", spec.steer_before_drive))
        self.odom_frame = str(p("odom_frame", "odom"))
        self.base_frame = str(p("base_frame", spec.body_frame))
        self.publish_tf = bool(p("publish_tf", True))
        self.pose_cov = [float(v) for v in p("pose_covariance_diagonal", [1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-2])]
        self.twist_cov = [float(v) for v in p("twist_covariance_diagonal", [1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 1e-2])]
        for what, v in (("command_rate", self.rate), ("cmd_vel_timeout", self.cmd_timeout),
                        ("joint_states_timeout", self.js_timeout), ("max_linear_speed", self.max_v),
                        ("max_angular_speed", self.max_w)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"parameter {what} must be a positive, finite number, got {v}")
        if len(self.pose_cov) != 6 or len(self.twist_cov) != 6:
            raise ValueError("pose_covariance_diagonal and twist_covariance_diagonal take 6 values each")
        wheels = self.model.wheels
        steer_default = [w.steering_joint for w in wheels if w.steering_joint]
        wheel_default = [w.drive_joint for w in wheels]
        self.steering_joints = list(p("steering_joints", steer_default)) or steer_default
        self.wheel_joints = list(p("wheel_joints", wheel_default)) or wheel_default
        if self.steer_group is not None:                 # the motor group decides: controller and joint order
            self.steering_joints = list(self.steer_group.joint_names)
        if self.wheel_group is not None:
            self.wheel_joints = list(self.wheel_group.joint_names)
        if sorted(self.steering_joints) != sorted(steer_default) or sorted(self.wheel_joints) != sorted(wheel_default):
            raise MobilityError(f"steering_joints/wheel_joints must list the mobility's joints: "
                                f"{steer_default} / {wheel_default}")
        by_steer = {w.steering_joint: i for i, w in enumerate(wheels) if w.steering_joint}
        by_drive = {w.drive_joint: i for i, w in enumerate(wheels)}
        self._steer_order = [by_steer[j] for j in self.steering_joints]
        self._wheel_order = [by_drive[j] for j in self.wheel_joints]
        steering_controller = self.steer_group.name if self.steer_group is not None else \
            str(p("steering_controller", "steering_controller"))
        wheel_controller = self.wheel_group.name if self.wheel_group is not None else \
            str(p("wheel_controller", "wheel_controller"))
        #: steering by a joint trajectory controller (the steering motor group's kind)
        self._steer_trajectory = self.steer_group is not None and \
            self.steer_group.controller is ControllerKind.JOINT_TRAJECTORY
        self.adapter_kind = str(p("adapter", "ros2_control"))
        if self.adapter_kind not in ADAPTERS:
            raise ValueError(f"parameter adapter is one of {ADAPTERS}, got {self.adapter_kind!r}")
        overrides = {}
        for k in POLICY_KEYS:
            v = p(k, None)
            if v is not None and v != "":
                overrides[k] = v if isinstance(v, str) else float(v)
        try:
            self.policy = self.model.policy.replace(**overrides)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"drive policy parameters: {exc}") from None
        self.intuitive_policy = self.policy.replace(interpretation="intuitive", zero_speed="steer_only")

        self._lock = threading.RLock()
        self._twist = np.zeros(3)
        self._angular_y = 0.0
        self._policy = self.policy
        self._cmd_time = -math.inf
        self._js_time = -math.inf
        self._stopped = False
        self._closed = False
        self._commanded_joints = list(self.steering_joints) + list(self.wheel_joints)
        self._targets = np.where(self.model.steered, 0.0, np.nan)     # last steering targets
        self.odom_guard = OdometryGuard(self.model.max_rates, [w.drive_joint for w in self.model.wheels],
                                        rate_margin=float(p("odometry_rate_margin", RATE_MARGIN)),
                                        max_step=float(p("odometry_max_step", MAX_STEP)))
        self.odometry = self._odometry(str(p("environment_file", "") or ""), p("odometry_start", [0.0, 0.0, 0.0]))
        self.odom_twist = np.zeros(3)
        self.odom_twist_cov = np.diag([self.twist_cov[0], self.twist_cov[1], self.twist_cov[5]])
        self.slip = 0.0
        self.counts = {"cmd_vel": 0, "rejected": 0, "refused": 0, "commands": 0, "watchdog_stops": 0,
                       "odom_rejected": 0}
        self._stopping_reason = "no cmd_vel yet"

        self.adapter = make_adapter(self.adapter_kind, transport, steering_controller=steering_controller,
                                    wheel_controller=wheel_controller, steering_joints=self.steering_joints,
                                    wheel_joints=self.wheel_joints, steering_trajectory=self._steer_trajectory)
        if self.adapter_kind == "osr":            # OSR's state topics, not the process's joint_states
            joint_states = OsrJointStates(transport, mechanism)
        if joint_states is None:
            joint_states = JointStateCache(transport, mechanism,
                                           reliable=bool(p("joint_states_reliable", False)))
        self.joint_states = joint_states
        self._last_command = (np.full(self.model.n, np.nan), np.zeros(self.model.n), np.zeros(3), "stopped")
        self._Odom = transport.message_class("nav_msgs/msg/Odometry")
        self.odom_pub = transport.create_publisher("odom", "nav_msgs/msg/Odometry", qos.DEFAULT)
        if self.publish_tf:
            self._TF = transport.message_class("tf2_msgs/msg/TFMessage")
            self._TS = transport.message_class("geometry_msgs/msg/TransformStamped")
            self.tf_pub = transport.create_publisher("/tf", "tf2_msgs/msg/TFMessage", qos.TF)
        stamped = bool(p("cmd_vel_stamped", False))
        self.cmd_sub = transport.create_subscription(
            str(p("cmd_vel_topic", "cmd_vel")),
            "geometry_msgs/msg/TwistStamped" if stamped else "geometry_msgs/msg/Twist", qos.DEFAULT,
            self.on_cmd_vel_stamped if stamped else self.on_cmd_vel)
        intuitive_topic = str(p("cmd_vel_intuitive_topic", "/cmd_vel_intuitive" if self.adapter_kind == "osr"
                                else ""))
        self.cmd_intuitive_sub = transport.create_subscription(
            intuitive_topic, "geometry_msgs/msg/Twist", qos.DEFAULT,
            lambda msg: self.on_cmd_vel(msg, intuitive=True)) if intuitive_topic else None
        self._attitude = None                     # (roll, pitch) from the IMU, rad
        imu = str(p("imu_topic", ""))
        self.imu_sub = transport.create_subscription(imu, "sensor_msgs/msg/Imu", qos.SENSOR_DATA, self.on_imu) \
            if imu else None
        joint_states.add_listener(self.on_joint_states)
        self.services = [transport.create_service("~/stop", TRIGGER, self.on_stop),
                         transport.create_service("~/release", TRIGGER, self.on_release)]
        for m in MODES:
            self.services.append(transport.create_service(f"~/drive_mode/{m}", TRIGGER,
                                                          lambda req, rep, m=m: self.on_mode(m, rep)))
        # RViz: each wheel's commanded velocity and the rotation centre (markers.wheel_command_markers), at
        # about 10 Hz and only while someone subscribes
        self.markers_pub = transport.create_publisher("~/markers", "visualization_msgs/msg/MarkerArray", qos.DEFAULT)
        self._marker_every = max(1, int(round(self.rate / 10.0)))
        self._ticks = 0
        # the heartbeat is the watchdog: it stops the wheels when cmd_vel or joint_states fall silent
        # (a thread of its own: a flood of joint states must not delay a stop)
        self.heartbeat = transport.create_timer(1.0 / self.rate, self._tick, own_thread=True) \
            if start_timer else None

    def _odometry(self, environment_file: str, start):
        """Planar odometry, or with a terrain in ``environment_file`` the core's 3-D terrain odometry starting
        at ``odometry_start`` ``[x, y, yaw]`` (m, m, rad; the terrain's frame is the odometry frame)."""
        start = [float(v) for v in start]
        if len(start) != 3 or not all(math.isfinite(v) for v in start):
            raise ValueError(f"parameter odometry_start takes 3 finite numbers [x, y, yaw], got {start}")
        terrain = load_terrain(environment_file) if environment_file else None
        if terrain is None:
            return Odometry(*start)
        self.log.info("odometry on the terrain of %s (%r), starting at %s", environment_file, terrain, start)
        return TerrainOdometry(self.model, terrain, *start)

    @classmethod
    def from_served(cls, transport, served) -> "Locomotor":
        """The node as ``serve`` starts it (:mod:`mechanism_model_ros.nodes`)."""
        return cls(transport, served.mechanism, served.model_path, joint_states=served.joint_states(transport))

    # ---------------------------------------------------------------------------------------- input
    def on_cmd_vel_stamped(self, msg) -> None:
        self.on_cmd_vel(msg.twist)

    def on_cmd_vel(self, msg, intuitive: bool = False) -> None:
        self.counts["cmd_vel"] += 1
        try:
            vx, vy, wz, wy = planar_twist(msg, self.max_v, self.max_w, angular_y=True)
        except TwistRejected as exc:
            self.counts["rejected"] += 1
            self.warn.warning(exc.key, str(exc))
            return
        with self._lock:
            self._twist = np.array((vx, vy, wz))
            self._angular_y = wy
            self._policy = self.intuitive_policy if intuitive else self.policy
            self._cmd_time = self.transport.monotonic()
        self.step()

    def on_joint_states(self, update) -> None:
        """Odometry from a joint-state message naming every drive joint (others -- an arm's, another
        publisher's -- add nothing): the wheel rates (``velocity``, else position differences from the last
        good message) and steering angles, integrated when the core's plausibility rule
        (:class:`~mechanism_model_core.locomotion.odometry_guard.OdometryGuard`) accepts the step; a refused
        step is counted (``counts["odom_rejected"]``) and logged, and integration resumes from the last good
        state."""
        now = self.transport.monotonic()
        msg = update.msg
        names = list(msg.name)
        idx = {n: i for i, n in enumerate(names)}
        with self._lock:
            self._js_time = now
        if not all(w.drive_joint in idx for w in self.model.wheels):
            return
        vel = list(msg.velocity) if len(msg.velocity) == len(names) else []
        latest = update.latest
        with self._lock:
            stamp = update.stamp
            t = stamp[0] + stamp[1] * 1e-9 if stamp is not None else now
            guard = self.odom_guard
            gap = None if guard.base_time is None else t - guard.base_time
            rates = []
            for w in self.model.wheels:
                j = w.drive_joint
                r = float(vel[idx[j]]) if vel else math.nan
                if not math.isfinite(r) and gap is not None and gap > 0 and guard.base_positions \
                        and j in latest and j in guard.base_positions:
                    r = (latest[j] - guard.base_positions[j]) / gap
                rates.append(r)
            steering = [latest.get(w.steering_joint, 0.0) if w.steering_joint else math.nan for w in self.model.wheels]
            positions = {w.drive_joint: latest[w.drive_joint] for w in self.model.wheels if w.drive_joint in latest}
            dt, problem = guard.step(t, rates, positions)
            if problem is not None:
                self.counts["odom_rejected"] += 1
                self.warn.warning("odom_step", f"odometry step refused ({problem}); integrating on from the last "
                                               f"good state ({guard.total_rejected} refused so far)")
            if dt is not None:
                twist, self.slip, cov = self.model.odometry_twist(rates, steering, covariance=True)
                self.odom_twist = twist
                self.odom_twist_cov = cov + np.diag([self.twist_cov[0], self.twist_cov[1], self.twist_cov[5]])
                self.odometry.update(twist, dt, attitude=self._attitude, twist_covariance=self.odom_twist_cov)

    def on_imu(self, msg) -> None:
        """Roll and pitch of the body from an IMU (its orientation in a gravity-aligned frame): odometry
        steps then follow the body's tilted plane (3-D odometry)."""
        try:
            R = quaternion_to_matrix(msg.orientation, "imu orientation")
        except BadMessage as exc:
            self.warn.warning("imu", f"imu message ignored: {exc}")
            return
        rpy = matrix_to_rpy(R)
        with self._lock:
            self._attitude = (float(rpy[0]), float(rpy[1]))

    # ------------------------------------------------------------------------------------- services
    def on_stop(self, request, response):
        with self._lock:
            self._stopped = True
        self.step()
        response.success = True
        response.message = "stopped (latched): call ~/release to drive again"
        return response

    def on_release(self, request, response):
        with self._lock:
            was = self._stopped
            self._stopped = False
            self._cmd_time = -math.inf            # a fresh cmd_vel is needed to move
        response.success = True
        response.message = "released" if was else "was not stopped"
        return response

    def on_mode(self, mode, response):
        with self._lock:
            self.mode = mode
        response.success = True
        response.message = f"drive mode {mode}"
        return response

    # ------------------------------------------------------------------------------------ commanding
    def measured_steering(self) -> np.ndarray:
        latest = self.joint_states.latest()
        return np.array([latest.get(w.steering_joint, t) if w.steering_joint else math.nan
                         for w, t in zip(self.model.wheels, self._targets)])

    def _state_stale(self) -> str | None:
        """Why the joint states do not allow driving (None: every commanded joint -- each steering and each
        drive joint -- was reported within ``joint_states_timeout``): a motor group drives on fresh state of
        its own joints, not on any joint_states message."""
        joint, age = self.joint_states.stalest(self._commanded_joints)
        if joint is None or age <= self.js_timeout:
            return None
        return f"joint_states stale ({joint})" if math.isfinite(age) else f"no joint_states yet ({joint})"

    def step(self) -> None:
        """Compute and publish one command (called on cmd_vel and by the heartbeat); nothing once closed
        (:meth:`close` sent the last command: zero rates)."""
        now = self.transport.monotonic()
        with self._lock:
            if self._closed:
                return
            steering = self.measured_steering()
            reason = None
            if self._stopped:
                reason = "stop service latched"
            elif now - self._cmd_time > self.cmd_timeout:
                reason = "cmd_vel silent" if self._cmd_time > -math.inf else "no cmd_vel yet"
            elif self.require_js:
                reason = self._state_stale()
            if reason is not None:
                if reason != self._stopping_reason:
                    if reason == "cmd_vel silent" or reason.startswith("joint_states stale"):
                        self.counts["watchdog_stops"] += 1
                        self.warn.warning("watchdog", f"wheels stopped: {reason}")
                    self._stopping_reason = reason
                steer = np.where(np.isnan(self._targets), np.nan, np.where(np.isfinite(steering), steering,
                                                                          self._targets))
                rates = np.zeros(self.model.n)
                twist, state = np.zeros(3), "stopped"
            else:
                self._stopping_reason = None
                cmd = self.model.command(self._twist, self._angular_y, mode=self.mode, policy=self._policy,
                                         steering=steering, steer_before_drive=self.steer_before_drive)
                if not cmd.ok:
                    self.counts["refused"] += 1
                    self.warn.warning("refused", f"cmd_vel refused: {cmd.reason}")
                steer, rates = cmd.steering, cmd.rates
                steer = np.where(np.isfinite(steer), steer, self._targets)
                twist = np.asarray(cmd.twist, dtype=float)
                state = "stopped" if not cmd.ok else ("waiting" if cmd.waiting else "driving")
            # the limits hold whatever happened above
            steer = np.clip(steer, self.model.steering_lower, self.model.steering_upper)
            rates = np.clip(np.nan_to_num(rates), -self.model.max_rates, self.model.max_rates)
            self._targets = np.where(self.model.steered, steer, np.nan)
            self._publish_commands(steer, rates)
            self._last_command = (steer.copy(), rates.copy(), twist, state)

    def publish_markers(self) -> bool:
        """The last command's markers on ``~/markers`` when someone subscribes; True when published."""
        if self.markers_pub.subscription_count == 0:
            return False
        with self._lock:
            steer, rates, twist, state = self._last_command
        specs = markers.wheel_command_markers(self.model.home_geometry, steer, rates, twist,
                                              self.model.spec.body_frame, state)
        self.markers_pub.publish(markers.marker_array(self.transport, specs, self.transport.now()))
        return True

    def _publish_commands(self, steer, rates) -> None:
        s_cmd = [float(steer[i]) for i in self._steer_order]
        w_cmd = [float(rates[i]) for i in self._wheel_order]
        # the motor groups' limits are the last word (the core's own limits already hold them)
        for group, cmd, key in ((self.steer_group, s_cmd, "clamp_steer"), (self.wheel_group, w_cmd, "clamp_wheel")):
            if group is not None and cmd:
                res = group.clamp(cmd)
                if res.any_clamped:
                    self.warn.warning(key, f"command clamped: {res.describe()}")
                cmd[:] = [float(v) for v in res.values]
        duration = 0.0
        if self._steer_trajectory:          # a joint trajectory controller: reach the targets within its limits
            measured = self.measured_steering()
            start = [float(measured[i]) if np.isfinite(measured[i]) else s_cmd[k]
                     for k, i in enumerate(self._steer_order)]
            duration = max(self.steer_group.travel_time(start, s_cmd), 2.0 / self.rate)
        self.adapter.publish(dict(zip(self.steering_joints, s_cmd)), dict(zip(self.wheel_joints, w_cmd)),
                             self.steering_joints, self.wheel_joints, steer_duration=duration)
        self.counts["commands"] += 1

    def publish_odometry(self) -> None:
        with self._lock:
            pos = self.odometry.position.copy()
            rpy = self.odometry.orientation_rpy
            twist = self.odom_twist.copy()
            twist_cov = self.odom_twist_cov.copy()
            pose_cov = self.odometry.covariance.copy()
        stamp = self.transport.now()
        q = matrix_to_quaternion(rpy_to_matrix(rpy))
        o = self._Odom()
        o.header.stamp.sec, o.header.stamp.nanosec = int(stamp[0]), int(stamp[1])
        o.header.frame_id = self.odom_frame
        o.child_frame_id = self.base_frame
        o.pose.pose.position.x, o.pose.pose.position.y, o.pose.pose.position.z = (float(v) for v in pos)
        (o.pose.pose.orientation.x, o.pose.pose.orientation.y, o.pose.pose.orientation.z,
         o.pose.pose.orientation.w) = (float(v) for v in q)
        o.twist.twist.linear.x, o.twist.twist.linear.y = float(twist[0]), float(twist[1])
        o.twist.twist.angular.z = float(twist[2])
        pc = [0.0] * 36
        tc = [0.0] * 36
        for i in range(6):
            pc[7 * i] = self.pose_cov[i]
            tc[7 * i] = self.twist_cov[i]
        planar = (0, 1, 5)                   # x, y, yaw of the 6x6 (x y z roll pitch yaw) matrices
        for a, i in enumerate(planar):
            for b, j in enumerate(planar):
                # the pose's: the parameters' floor plus what dead reckoning accumulated; the twist's: the
                # least-squares estimate's, from the wheels' disagreement, plus the parameters' floor
                pc[6 * i + j] += float(pose_cov[a, b])
                tc[6 * i + j] = float(twist_cov[a, b])
        o.pose.covariance = pc
        o.twist.covariance = tc
        self.odom_pub.publish(o)
        if self.publish_tf:
            ts = self._TS()
            ts.header.stamp.sec, ts.header.stamp.nanosec = int(stamp[0]), int(stamp[1])
            ts.header.frame_id = self.odom_frame
            ts.child_frame_id = self.base_frame
            ts.transform.translation.x, ts.transform.translation.y, ts.transform.translation.z = \
                (float(v) for v in pos)
            (ts.transform.rotation.x, ts.transform.rotation.y, ts.transform.rotation.z,
             ts.transform.rotation.w) = (float(v) for v in q)
            tf = self._TF()
            tf.transforms = [ts]
            self.tf_pub.publish(tf)

    def _tick(self) -> None:
        try:
            self.step()
        except Exception as exc:       # the heartbeat must never die: it is the watchdog
            self.warn.warning("tick", f"locomotor tick failed: {type(exc).__name__}: {exc}; wheels stopped")
            self._publish_stop()       # a node that cannot decide stops the wheels
        try:
            self.publish_odometry()
            self._ticks += 1
            if self._ticks % self._marker_every == 0:
                self.publish_markers()
        except Exception as exc:
            self.warn.warning("odom", f"odometry or markers not published: {type(exc).__name__}: {exc}")

    def _publish_stop(self) -> None:
        """Wheel rates 0, steering held at its last targets (never raises)."""
        try:
            with self._lock:
                self._publish_commands(np.where(np.isnan(self._targets), 0.0, self._targets),
                                       np.zeros(self.model.n))
        except Exception as exc:
            self.log.error("locomotor: the stop command failed: %s: %s", type(exc).__name__, exc)

    def status(self) -> str:
        c = self.counts
        x, y, yaw = self.odometry.pose
        state = "stopped (latched)" if self._stopped else (self._stopping_reason or "driving")
        return (f"locomotor {self.mode}: {state}; cmd_vel {c['cmd_vel']} (rejected {c['rejected']}, refused "
                f"{c['refused']}), odom ({x:.2f}, {y:.2f}, {math.degrees(yaw):.0f} deg)")

    def close(self, ack_timeout: float = 0.3) -> None:
        """The last command: wheel rates 0, steering held; no command follows (a cmd_vel or a tick arriving
        meanwhile publishes nothing). Waits up to ``ack_timeout`` s for the controllers' readers to
        acknowledge it (reliable publishers) so that closing the transport right after cannot lose it."""
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._publish_stop()
        try:
            self.adapter.wait_for_acks(ack_timeout)
        except Exception:
            pass


def main(argv=None) -> int:
    """Console script ``locomotor``: the node alone (with the state publisher's joint-state cache)."""
    return run_nodes(argv, nodes=("locomotor",), prog="locomotor", default_transport="auto")
