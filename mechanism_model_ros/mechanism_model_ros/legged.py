"""Legged node: ``cmd_vel`` in, leg joint trajectories out to the legs' ``joint_trajectory_controller`` s.

A thin adapter over :class:`mechanism_model_core.locomotion.legged.LeggedLocomotorModel` (all the math lives
there: gait planning, leg IK, the static margin at every sample, refusals with reasons) and the robot's
motor groups (:mod:`mechanism_model_core.locomotion.motor_group`: which controller commands which joint,
in which order, within which limits -- the same definition the rover's locomotor and the manipulator node
use, and the one ``mechanism-model ros2-control`` exports):

* Subscribes ``cmd_vel`` (``geometry_msgs/Twist``: ``linear.x``, ``linear.y``, ``angular.z`` in the body
  frame) and ``joint_states`` (the process's shared cache).
* At each cycle boundary while commanded, plans one cycle of the gait for the latest twist and sends it to
  every joint-trajectory motor group commanding the walking joints as a goal of the controller's
  ``/<group>/follow_joint_trajectory`` action (``control_msgs/action/FollowJointTrajectory``, as MoveIt
  drives controllers; parameter ``mode: action``, the default) or, with ``mode: topic``, as a
  ``trajectory_msgs/JointTrajectory`` on ``/<group>/joint_trajectory``; over all of that group's joints in
  its order (a joint of the group
  that does not walk, such as a wheel-on-leg robot's ankle steering, is held where it is). The first point
  lies far enough ahead for the move from the measured positions within the motors' speed limits. Feet
  further than ``reposition_tolerance`` from their place in the cycle's first pose (standing, a gait
  stopped mid-cycle, a new twist with another stride) first step there one leg at a time, the others
  planted
  (:meth:`~mechanism_model_core.locomotion.legged.LeggedLocomotorModel.plan_stand`), in the same trajectory.
* Goals go out from a sender thread of their own (never from the watchdog's timer, whose transport thread
  delivers the action's replies): a newer trajectory for a group replaces one not yet sent (the controller
  would replace it anyway). Each goal replaces the running one in joint_trajectory_controller; a goal the
  controller rejects, or one that ends aborted, is logged and counted (``counts["goal_rejected"]``,
  ``counts["goal_aborted"]``); goals superseded by the next cycle end cancelled, which is normal. A cycle's
  timeline (when the next one goes out, what a hold samples) starts when the controller accepts its goal,
  not when it was planned: a goal that reaches the controller late never has its last poses cut short by
  the next one.

Safety (the rover's rules, every case logged, rate-limited):

* ``cmd_vel`` silent for ``cmd_vel_timeout`` s, or any joint of the node's groups not reported on
  ``joint_states`` for ``joint_states_timeout`` s (or never, with ``require_joint_states``; messages naming
  other joints do not count), or the node closing: a hold trajectory is published within one heartbeat period
  (``command_rate``; defaults 0.25 s + 50 ms, inside 0.5 s), once per stop. It holds the pose the controller
  is commanding at that moment (the published cycle sampled now; the measured positions when no cycle runs), so the legs
  stop where they are; since the planner keeps the static margin positive at every sample, every such pose
  is statically stable. Hold positions are clamped into the motor limits (``MotorGroup.clamp``; each
  clamped value is reported) and reached within the velocity limits. Without any joint state nothing is
  sent: the controller holds by itself.
* a ``cmd_vel`` with NaN/inf, or faster than ``max_linear_speed`` / ``max_angular_speed``, is rejected;
* the gait is planned within the motor groups' velocity limits; a gait the core refuses (static margin,
  reach, joint speed) is not sent: the legs hold, the reason is logged, counted and kept in
  ``last_refusal``;
* every trajectory is checked whole before it is sent (``MotorGroup.check_trajectory``: finite, every
  position within the motor limits, every velocity and acceleration within theirs, the speed implied
  between consecutive points and from the measured positions within the velocity limit); a trajectory that
  leaves them is not sent (never clamped: that would be another motion) and the legs hold.

Parameters (units): ``mode`` (``action`` or ``topic``), ``server_timeout`` (s to wait for an action server
or a goal's acceptance, default 2), ``gait`` (tripod, ripple, wave, crawl), ``period`` (s per cycle), ``swing_height`` (m),
``samples_per_cycle``, ``min_margin`` (m), ``motor_groups`` (a motor-group file; empty: the model file's
``<Motor_Group>`` elements), ``controller`` (the joint_trajectory_controller's name when the model has no
motor group for the legs: the joints' own limits apply then), ``command_rate`` (Hz), ``cmd_vel_timeout``
(s), ``joint_states_timeout`` (s), ``require_joint_states`` (bool), ``max_linear_speed`` (m/s),
``max_angular_speed`` (rad/s), ``reposition_tolerance`` (m, default 0.005: a foot closer than this to its
place slides there with the transition instead of stepping), ``legs`` (foot frames; empty: found from the
model).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion.legged import GaitInfeasible, LeggedLocomotorModel
from mechanism_model_core.locomotion.motor_group import (ControllerKind, Motor, MotorGroup, MotorLimits,
                                                         group_trajectories)

from . import qos
from .conversions import TwistRejected, planar_twist
from .transports.base import STATUS_ABORTED, RateLimitedLogger, Transport
from .joint_state_cache import JointStateCache
from .serve import run_nodes

TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"
ACTION = "control_msgs/action/FollowJointTrajectory"
MODES = ("action", "topic")
HOLD_TIME = 0.05          # s: the least time_from_start of a hold point


def leg_motor_groups(mechanism, walking_joints, path: str = "", controller: str = "legs_controller", log=None):
    """The joint-trajectory motor groups commanding ``walking_joints``, in definition order: from the motor
    groups of ``path`` (a file; empty: the model file's); when none commands them, one group named
    ``controller`` over the walking joints with the joints' own limits from the model (a joint without a
    velocity limit gets 1 rad/s or m/s). A walking joint in a forward-command group, or some walking joints
    in groups and others not, is a configuration error (ValueError)."""
    try:
        groups = load_motor_groups(mechanism, path or None)
    except Exception as exc:
        if path:
            raise
        if log is not None:
            log.info("no motor groups (%s): the legs' controller and limits from the parameters and the model", exc)
        groups = None
    covered = [j for j in walking_joints if groups is not None and j in groups.joint_names]
    if not covered:
        motors = []
        for j in walking_joints:
            joint = mechanism.joint(j)
            v = joint.velocity if math.isfinite(joint.velocity) else 1.0
            motors.append(Motor(j, MotorLimits(joint.lower[0], joint.upper[0], v, math.inf, joint.effort)))
        return [MotorGroup(controller, ControllerKind.JOINT_TRAJECTORY, "position", motors)]
    missing = [j for j in walking_joints if j not in covered]
    if missing:
        raise ValueError(f"walking joints {missing} are in no motor group, while {covered[:3]}... are")
    out = []
    for j in walking_joints:
        g = groups.group_of(j)
        if g.controller is not ControllerKind.JOINT_TRAJECTORY:
            raise ValueError(f"walking joint {j!r} is in motor group {g.name!r}, a {g.controller.value} "
                             f"controller; legs need joint_trajectory controllers")
        if g.interface.value != "position":
            raise ValueError(f"motor group {g.name!r} commands {g.interface.value}; legs need position")
        if all(g is not o for o in out):
            out.append(g)
    return out


class LeggedNode:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, joint_states=None, start_timer: bool = True,
                 motor_groups=None):
        self.transport = transport
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        p = transport.get_parameter
        feet = list(p("legs", [])) or None
        self.model = LeggedLocomotorModel(mechanism, feet=feet)
        m = mechanism
        self.gait = str(p("gait", "tripod"))
        self.period = float(p("period", 2.0))
        self.swing_height = float(p("swing_height", 0.03))
        self.samples = int(p("samples_per_cycle", 48))
        self.min_margin = float(p("min_margin", 0.0))
        self.rate = float(p("command_rate", 20.0))
        self.cmd_timeout = float(p("cmd_vel_timeout", 0.25))
        self.js_timeout = float(p("joint_states_timeout", 0.25))
        self.require_js = bool(p("require_joint_states", True))
        self.max_v = float(p("max_linear_speed", 0.2))
        self.max_w = float(p("max_angular_speed", 0.5))
        self.reposition_tolerance = float(p("reposition_tolerance", 0.005))
        for what, v in (("period", self.period), ("command_rate", self.rate), ("cmd_vel_timeout", self.cmd_timeout),
                        ("joint_states_timeout", self.js_timeout), ("reposition_tolerance", self.reposition_tolerance),
                        ("max_linear_speed", self.max_v), ("max_angular_speed", self.max_w)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"parameter {what} must be a positive, finite number, got {v}")
        self.joint_names = list(self.model.joint_names)          # the walking joints, leg by leg
        # the motor groups decide controllers, joint order and limits
        self.groups = list(motor_groups) if motor_groups is not None else leg_motor_groups(
            m, self.joint_names, str(p("motor_groups", "")), str(p("controller", "legs_controller")), self.log)
        self._walk_col = {j: k for k, j in enumerate(self.joint_names)}
        self._commanded_joints = [j for g in self.groups for j in g.joint_names]
        group_of = {j: g for g in self.groups for j in g.joint_names}
        vmax = np.array([group_of[j].velocity[group_of[j].index(j)] for j in self.joint_names])
        # plan within the motors' speed limits (narrower than the joints' own ones, or the same)
        self.model.velocity_limits = np.minimum(self.model.velocity_limits, vmax)
        self.vmax = self.model.velocity_limits
        self.amax = np.array([group_of[j].acceleration[group_of[j].index(j)] for j in self.joint_names])
        self._stand = {n: float(self.model.stand[m.coordinate_index(n)]) for g in self.groups for n in g.joint_names}
        self._Traj = transport.message_class(TRAJECTORY)
        self._Point = transport.message_class("trajectory_msgs/msg/JointTrajectoryPoint")
        self.mode = str(p("mode", "action"))
        if self.mode not in MODES:
            raise ValueError(f"parameter mode must be one of {MODES}, got {self.mode!r}")
        self.server_timeout = float(p("server_timeout", 2.0))
        self.pubs, self.clients = {}, {}
        #: action mode: the controllers' trajectory topics, used only once the middleware was lost under the
        #: node (``transport.reopened``: serve re-created the publishers on a fresh participant, the action
        #: clients are gone) for the closing hold; joint_trajectory_controller takes a trajectory on its topic
        #: as on its action, the newest replacing the running one
        self.fallback_pubs = {}
        for g in self.groups:
            topic = transport.create_publisher(f"/{g.name}/joint_trajectory", TRAJECTORY, qos.DEFAULT)
            if self.mode == "topic":
                self.pubs[g.name] = topic
            else:
                self.fallback_pubs[g.name] = topic
                self.clients[g.name] = transport.create_action_client(f"/{g.name}/follow_joint_trajectory", ACTION)
        self._outbox: dict = {}                  # group -> the newest trajectory message not yet sent
        self._outbox_cv = threading.Condition()
        self._sender = None
        self._sender_stop = False
        self.cmd_sub = transport.create_subscription("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT,
                                                     self.on_cmd_vel)
        if joint_states is None:
            joint_states = JointStateCache(transport, mechanism)
        self.joint_states = joint_states
        joint_states.add_listener(self.on_joint_states)
        self._lock = threading.RLock()
        self._twist = np.zeros(3)
        self._cmd_time = -math.inf
        self._js_time = -math.inf
        self._cycle_end = -math.inf          # monotonic time the published cycle ends
        self._sent = None                    # (monotonic start time, times, {joint: positions}) of the last cycle
        self._sent_msgs = ()                 # its trajectory messages (action mode: started when accepted)
        self._holding = False
        self._last_plan = None               # (twist, plan) of the last cycle planned
        self._last_hold = -math.inf
        self.counts = {"cmd_vel": 0, "rejected": 0, "refused": 0, "cycles": 0, "holds": 0, "unsafe": 0,
                       "clamped": 0, "returns": 0, "goals": 0, "goal_rejected": 0, "goal_aborted": 0}
        self.last_refusal = ""
        self._refused = None                 # the twist of the last refused gait (not replanned while unchanged)
        self._halt = threading.Event()
        self._closed = False
        self.heartbeat = None
        if self.mode == "action":
            self._sender = threading.Thread(target=self._send_loop, name="mm-legged-goals", daemon=True)
            self._sender.start()
        self.log.info("legged: %s gait over %s, %s", self.gait, self.mode,
                      "; ".join(f"{g.name}: {len(g)} joints" for g in self.groups))
        if start_timer:
            # the watchdog is a transport timer; planning runs on a thread of its own so that planning a
            # cycle never delays a hold
            self.heartbeat = transport.create_timer(1.0 / self.rate, self._tick, own_thread=True)
            threading.Thread(target=self._plan_loop, name="mm-legged-planner", daemon=True).start()

    @classmethod
    def from_served(cls, transport, served) -> "LeggedNode":
        return cls(transport, served.mechanism, joint_states=served.joint_states(transport))

    # ---------------------------------------------------------------------------------------- input
    def on_cmd_vel(self, msg) -> None:
        self.counts["cmd_vel"] += 1
        try:
            vx, vy, wz, _ = planar_twist(msg, self.max_v, self.max_w)
        except TwistRejected as exc:
            self.counts["rejected"] += 1
            self.warn.warning(exc.key, str(exc))
            return
        with self._lock:
            self._twist = np.array((vx, vy, wz))
            self._cmd_time = self.transport.monotonic()

    def on_joint_states(self, update) -> None:
        with self._lock:
            self._js_time = self.transport.monotonic()

    def measured(self, names=None) -> np.ndarray:
        """Latest measured positions of ``names`` (default: the walking joints); NaN where never heard."""
        latest = self.joint_states.latest()
        return np.array([latest.get(n, math.nan) for n in (self.joint_names if names is None else names)])

    # ------------------------------------------------------------------------------------ commanding
    def _stale(self, now: float):
        """Why the legs must hold now (None: commanded and fresh)."""
        if now - self._cmd_time > self.cmd_timeout:
            return "cmd_vel silent" if self._cmd_time > -math.inf else "no cmd_vel yet"
        if self.require_js:
            # fresh state of every joint the node commands (each group's), not any joint_states message
            joint, age = self.joint_states.stalest(self._commanded_joints)
            if joint is not None and age > self.js_timeout:
                return f"joint_states stale ({joint})" if math.isfinite(age) else f"no joint_states yet ({joint})"
        return None

    def watchdog(self) -> bool:
        """Hold the legs when cmd_vel or joint_states are stale; True when commanding may go on."""
        now = self.transport.monotonic()
        with self._lock:
            if self._closed:
                return False
            reason = self._stale(now)
            if reason is not None:
                self._hold(reason, now)
                return False
            return True

    def step(self) -> None:
        """Watchdog, then publish the next cycle when the last one ends (planned outside the lock; the
        watchdog is checked again before publishing)."""
        if not self.watchdog():
            return
        now = self.transport.monotonic()
        with self._lock:
            if now < self._cycle_end - 1.0 / self.rate:
                return                                       # the published cycle is still running
            twist = self._twist.copy()
            if self._refused is not None and np.array_equal(twist, self._refused):
                return                                       # refused already: keep holding, do not replan
        self._refused = None
        try:
            plan = self._plan(twist)
        except GaitInfeasible as exc:
            with self._lock:
                self._refused = twist
                self.counts["refused"] += 1
                self.last_refusal = f"{exc.reason}: {exc}"
                self.warn.warning("refused", f"gait refused ({exc.reason}): {exc}")
                self._hold("gait refused", now)
            return
        traj = plan.trajectory
        # where the legs are: the running cycle's commanded pose (joint_trajectory_controller follows it;
        # joint states lag it by their period and transport), else the measured one
        with self._lock:
            q_now = self.commanded(self.joint_names, self.transport.monotonic())
        if not np.all(np.isfinite(q_now)):
            with self._lock:
                self.warn.warning("unmeasured", "no joint_states for some walking joints: not walking")
                self._hold("walking joints not measured", now)
            return
        # onto the cycle's first pose first when the legs are elsewhere (core: start_from)
        try:
            spliced, returned = self.model.start_from(
                q_now, traj, swing_height=self.swing_height, min_margin=self.min_margin,
                acceleration_limits=self.amax, tolerance=self.reposition_tolerance)
        except GaitInfeasible as exc:
            with self._lock:
                self.counts["refused"] += 1
                self.last_refusal = f"{exc.reason}: {exc}"
                self.warn.warning("refused", f"return to the standing pose refused ({exc.reason}): {exc}")
                self._hold("return to the standing pose refused", now)
            return
        if returned:
            self.counts["returns"] += 1
        times, P, V, A = spliced.times, spliced.positions, spliced.velocities, spliced.accelerations
        commands, why = self._group_commands(times, P, V, A, dict(zip(self.joint_names, q_now)))
        # the messages are built before taking the lock (a cycle's hundreds of points cost milliseconds
        # under load, and the watchdog's hold must not wait for them)
        msgs = {} if commands is None else {g: self._trajectory_msg(names, times, Q, V, A)
                                            for g, (names, Q, V, A) in commands.items()}
        with self._lock:
            if self._closed:
                return                                       # closed while planning: the hold was the last command
            if self._stale(self.transport.monotonic()) is not None:
                return                                       # went stale while planning: the watchdog holds
            if commands is None:
                self.counts["unsafe"] += 1
                self.last_refusal = f"limits: {why}"
                self.warn.warning("unsafe", f"trajectory not sent: {why}")
                self._hold("trajectory outside the motor limits", now)
                return
            self._sent_msgs = tuple(self._send(g, msg) for g, msg in msgs.items())
            sent = self.transport.monotonic()
            self._sent = (sent, times, {n: Q[:, k] for _, (names, Q, _V, _A) in commands.items()
                                        for k, n in enumerate(names)})
            self._cycle_end = sent + float(times[-1])
            self._holding = False
            self.counts["cycles"] += 1

    def _plan(self, twist):
        """One cycle for ``twist`` (the last plan again when the twist is the same: planning is
        deterministic, and a cycle that follows the last one must not wait for the planner)."""
        key = tuple(float(v) for v in twist)
        cached = self._last_plan
        if cached is not None and cached[0] == key:
            return cached[1]
        plan = self.model.plan_gait(self.gait, twist, period=self.period, cycles=1.0,
                                    swing_height=self.swing_height, samples_per_cycle=self.samples,
                                    min_margin=self.min_margin)
        self._last_plan = (key, plan)
        return plan

    def _group_commands(self, times, P, V, A, reference):
        """Per motor group: (joint names, positions, velocities, accelerations) over all the group's joints,
        joints that do not walk held where they are, checked against the group's limits (core:
        ``group_trajectories``); ``(None, reason)`` when any leaves them. ``reference``: {joint: position}
        where the walking joints are; the measured positions for the others."""
        held = [n for g in self.groups for n in g.joint_names]
        start = dict(zip(held, self.measured(held)))
        start.update(reference)
        return group_trajectories(self.groups, times, self.joint_names, P, V, A, start)

    def commanded(self, names, now: float) -> np.ndarray:
        """The positions the controller is commanding at ``now`` (the last published cycle, linearly
        interpolated; its start and end outside it), else the measured ones; NaN where neither is known."""
        q = self.measured(names)
        if self._sent is not None:
            t0, times, Q = self._sent
            t = now - t0
            for k, n in enumerate(names):
                if n in Q:
                    if t < times[0] and np.isfinite(q[k]):
                        continue                            # still in the transition: where the legs are
                    q[k] = float(np.interp(t, times, Q[n]))
        return q

    def _hold(self, reason: str, now: float) -> None:
        """One point at the pose the controller is commanding now, once on the transition into holding
        (joint_trajectory_controller then holds it by itself, and other clients -- a manipulator node, an
        operator -- may command the legs meanwhile), clamped into the motor limits and reached within the
        velocity limits. Without joint states nothing is sent (retried on the next tick)."""
        if self._holding or self._closed:
            return
        self._cycle_end = -math.inf
        published = False
        for g in self.groups:
            names = list(g.joint_names)
            q = self.commanded(names, now)
            if not np.all(np.isfinite(q)):
                self.warn.warning("hold_unknown", f"{g.name}: no joint_states yet, nothing to hold (the "
                                                  f"controller holds by itself)")
                continue
            res = g.clamp(q)
            if res.any_clamped:
                self.counts["clamped"] += 1
                self.warn.warning("clamp", f"{g.name} hold clamped: {res.describe()}")
            # from where the controller is commanding (and where the joints are, when that is known: joint
            # states older than joint_states_timeout say where the legs were, and would slow the hold down)
            t = max(HOLD_TIME, g.travel_time(q, res.values))
            if now - self._js_time <= self.js_timeout:
                meas = self.measured(names)
                t = max(t, g.travel_time(np.where(np.isfinite(meas), meas, res.values), res.values))
            z = np.zeros((1, len(names)))
            self._send(g.name, self._trajectory_msg(names, np.array([t]), res.values[None], z, z))
            published = True
        if published:
            self.warn.warning("hold", f"legs holding: {reason}")
            self.counts["holds"] += 1
            self._holding = True
            self._last_hold = now
            self._sent = None
            self._sent_msgs = ()

    def _trajectory_msg(self, names, times, Q, V, A):
        """A ``trajectory_msgs/JointTrajectory`` over ``names`` (times in s from the start; positions in
        rad or m, velocities and accelerations per s and per s^2)."""
        msg = self._Traj()
        msg.joint_names = list(names)
        pts = []
        for k in range(len(times)):
            pt = self._Point()
            pt.positions = [float(x) for x in Q[k]]
            pt.velocities = [float(x) for x in V[k]]
            pt.accelerations = [float(x) for x in A[k]]
            t = float(times[k])
            pt.time_from_start.sec = int(math.floor(t))
            pt.time_from_start.nanosec = min(int(round((t - math.floor(t)) * 1e9)), 999_999_999)
            pts.append(pt)
        msg.points = pts
        return msg

    def _send(self, group, msg):
        """Send one trajectory to ``group``'s controller (topic, or a goal queued for the sender); returns
        the message."""
        if self.mode == "topic":
            self.pubs[group].publish(msg)
            return msg
        if self.transport.reopened:      # the action clients went with the lost middleware
            self.fallback_pubs[group].publish(msg)
            return msg
        with self._outbox_cv:
            self._outbox[group] = msg
            self._outbox_cv.notify()
        return msg

    # ------------------------------------------------------------------------------- action goals
    def _send_loop(self) -> None:
        """Send the newest trajectory of each group as a FollowJointTrajectory goal, in the order queued;
        runs until :meth:`close` and has flushed what was queued before it."""
        while True:
            with self._outbox_cv:
                while not self._outbox and not self._sender_stop:
                    self._outbox_cv.wait(0.5)
                if not self._outbox:
                    return                                   # closing, nothing left to send
                group = next(iter(self._outbox))
                msg = self._outbox.pop(group)
            try:
                self._send_goal(group, msg)
            except Exception as exc:        # noqa: BLE001 -- the sender must never die
                self.warn.warning("goal", f"{group}: goal not sent: {type(exc).__name__}: {exc}")

    def _send_goal(self, group: str, msg) -> None:
        client = self.clients[group]
        if not client.wait_for_server(self.server_timeout):
            self.warn.warning("no_server", f"no action server /{group}/follow_joint_trajectory: trajectory dropped")
            return
        goal = client.goal()
        goal.trajectory = msg
        handle = client.send_goal(goal, timeout=self.server_timeout)
        self.counts["goals"] += 1
        if not handle.accepted:
            self.counts["goal_rejected"] += 1
            self.warn.warning("goal_rejected", f"{group} rejected the goal")
            return
        self._started(msg, self.transport.monotonic())
        handle.result_future().add_done_callback(lambda f, g=group: self._goal_done(g, f))

    def _started(self, msg, t: float) -> None:
        """The controller accepted ``msg`` at ``t`` (monotonic s, when the acceptance reached the node). A goal
        without a header stamp starts when joint_trajectory_controller accepts it, not when the planner
        queued it: on a loaded machine the goal reaches the controller late (the sender thread still busy
        with the previous goal, a slow round trip), and a cycle timeline kept from the queueing runs ahead
        of the legs. The next cycle, sent at that timeline's end, would then replace the running one before
        its end: the controller cuts from where the legs are straight to the next cycle's start, across the
        last poses of the gait (a swing foot set down short, poses the planner never checked). So the
        running cycle's timeline starts at the acceptance: the next cycle goes out on time or a little late
        (the legs then wait at the cycle's last pose, a planned one), and a hold samples the cycle nearer to
        where the legs are."""
        with self._lock:
            if self._sent is None or not any(msg is m for m in self._sent_msgs):
                return                                       # held, or a newer cycle since: not the running one
            t0, times, Q = self._sent
            if t > t0:
                self._sent = (t, times, Q)
                self._cycle_end = t + float(times[-1])

    def _goal_done(self, group: str, future) -> None:
        try:
            r = future.result()
        except Exception:                  # noqa: BLE001 -- closing
            return
        if r.status == STATUS_ABORTED:
            self.counts["goal_aborted"] += 1
            self.warn.warning("goal_aborted", f"{group}: goal aborted "
                                              f"({getattr(r.result, 'error_code', '')}: "
                                              f"{getattr(r.result, 'error_string', '')})")

    def _tick(self) -> None:
        try:
            self.watchdog()
        except Exception as exc:       # the heartbeat is the watchdog: it must never die
            self.warn.warning("tick", f"legged watchdog failed: {type(exc).__name__}: {exc}")

    def _plan_loop(self) -> None:
        period = 1.0 / self.rate
        while not self._halt.is_set():
            try:
                self.step()
            except Exception as exc:
                self.warn.warning("plan", f"legged planning failed: {type(exc).__name__}: {exc}")
            self._halt.wait(period)

    def status(self) -> str:
        c = self.counts
        return (f"legged {self.gait}: cycles {c['cycles']}, holds {c['holds']}, cmd_vel {c['cmd_vel']} "
                f"(rejected {c['rejected']}, refused {c['refused']}, unsafe {c['unsafe']}, clamped holds {c['clamped']})")

    def close(self, ack_timeout: float = 0.3) -> None:
        """The last command: a hold of every group at the pose its controller is commanding (sent before the
        sender thread ends; topic mode: acknowledged by the controllers' readers within ``ack_timeout`` s);
        nothing is planned or sent after it."""
        self._halt.set()
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        with self._lock:
            if self._closed:
                return
            try:
                self._holding = False
                self._hold("node closing", self.transport.monotonic())
            except Exception as exc:       # noqa: BLE001 -- the sender below must still stop
                self.log.error("legged: the closing hold failed: %s: %s", type(exc).__name__, exc)
            self._closed = True
        for pub in [*self.pubs.values(), *self.fallback_pubs.values()]:
            try:
                pub.wait_for_acks(ack_timeout)
            except Exception:              # noqa: BLE001
                pass
        if self._sender is not None:
            with self._outbox_cv:
                self._sender_stop = True
                self._outbox_cv.notify()
            self._sender.join(timeout=self.server_timeout + 1.0)     # the hold goes out first


def main(argv=None) -> int:
    """Console script ``legged``: the node alone."""
    return run_nodes(argv, nodes=("legged",), prog="legged", default_transport="auto")
