"""Manipulator node: joint trajectories for the arms and masts of a robot, sent to their ros2_control
``joint_trajectory_controller`` s after checking them against the motor groups (CLARAty 13.4.3).

For each joint-trajectory motor group (``arm_controller``, ``mast_controller``; parameter ``controllers``,
default: every one no locomotion node commands, :mod:`.motor_group_owners`: never a rover's steering) the node is a client of the controller's
``/<controller>/follow_joint_trajectory`` action (``control_msgs/action/FollowJointTrajectory``, as MoveIt
drives controllers), or, with parameter ``mode: topic``, a publisher on its ``/<controller>/joint_trajectory``
topic (no result beyond "sent").

Interface:

* service ``~/execute_trajectory`` (``mechanism_model_msgs/srv/ExecuteTrajectory``): a trajectory, the group
  (empty: the group commanding its joints) and ``wait``; the reply's ``error_code`` says what happened
  (SUCCESS, INVALID_MOTION_PLAN with the violated limits, INVALID_GROUP_NAME, INVALID_ROBOT_STATE,
  CONTROL_FAILED, PREEMPTED, TIMED_OUT), with the goal's status and the controller's error code;
* topic ``~/joint_trajectory`` (``trajectory_msgs/JointTrajectory``): the same without a reply (outcomes
  are logged);
* service ``~/cancel`` (``std_srvs/srv/Trigger``): cancel every goal this node has running (topic mode: an
  empty trajectory, which makes joint_trajectory_controller hold its position);
* service ``~/point_at`` (``mechanism_model_msgs/srv/PointAt``): aim a camera frame of a group (a mast) at a
  point or a frame of the model: the core's :meth:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel.point_at`
  (closed form for pan-tilt, limits respected, the residual reported outside the reachable cone) at the
  latest joint states, then, with ``execute``, a one-segment trajectory from there within the group's
  velocity limits through the same checks and controller as ``~/execute_trajectory``;
* action ``~/point_at`` (``mechanism_model_msgs/action/PointAt``): the same, always moving: feedback once the
  aim is solved (positions, residual), the result when the motion has ended; a cancel before the motion
  ends the goal with nothing sent, during it cancels the controller's goal.

Safety: a trajectory is checked whole before anything is sent (:meth:`MotorGroup.check_trajectory`): every
position within the motor limits, every given velocity and acceleration within theirs, the speed implied
between consecutive points and from the current joint state (``joint_states``) to the first point within
the velocity limit; it must name every joint of the group (the controller runs without partial goals) and
hold only finite numbers. Nothing is clamped: a trajectory that leaves the limits is refused. Without
joint states younger than ``state_timeout`` (s, default 0.35) nothing is sent, and a running goal is
cancelled when joint states fall silent for that long: the watchdog ticks every ``WATCHDOG_PERIOD`` (0.05 s),
so the cancel goes out within ``state_timeout + WATCHDOG_PERIOD`` (0.4 s) of the last joint state, inside
the project's rule that silence on state topics stops motion within ``STOP_LIMIT`` (0.5 s); a
``state_timeout`` that would break the rule is refused with ``ValueError`` (no larger value is allowed).

Parameters: ``controllers`` (list of group names; empty: every joint_trajectory group that the locomotor or
the legged node does not command, :func:`~.motor_group_owners.manipulator_groups`), ``mode``
(``action`` or ``topic``), ``motors`` (motor-group file; empty: the model's own), ``state_timeout`` (s),
``server_timeout`` (s to wait for an action server, default 5), ``result_timeout_margin`` (s added to the
trajectory's duration when waiting for a result, default 10). The node holds no mathematics: the checks
are the motor group's, the conversions :mod:`.conversions`'.
"""

from __future__ import annotations

import threading

import numpy as np

from mechanism_model_core.errors import MechanismModelError, UnknownFrame
from mechanism_model_core.kinematics import forward_kinematics
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion import ControllerKind, InvalidCommand
from mechanism_model_core.locomotion.manipulator import ManipulatorModel

from .conversions import BadMessage, fill_joint_trajectory, joint_trajectory_arrays
from .error_codes import ErrorCodes
from .motor_group_owners import manipulator_groups, motor_group_owners
from .qos import DEFAULT
from .transports.base import STATUS_CANCELED, STATUS_SUCCEEDED, RateLimitedLogger, Transport
from .conversions import joint_state_positions
from .serve import run_nodes

ACTION = "control_msgs/action/FollowJointTrajectory"
MODES = ("action", "topic")
#: silence on command or state topics stops motion within this many seconds (the project's rule)
STOP_LIMIT = 0.5
#: the joint-state watchdog's tick (s): a stale state is noticed at most this long after ``state_timeout``
WATCHDOG_PERIOD = 0.05
#: default ``state_timeout`` (s): 0.35 + 0.05 = 0.4 s worst case, 0.1 s of margin for scheduling
DEFAULT_STATE_TIMEOUT = 0.35


def check_state_timeout(value) -> float:
    """``state_timeout`` (s) as a float, or ``ValueError`` unless ``0 < value`` and ``value + WATCHDOG_PERIOD
    < STOP_LIMIT`` (a larger timeout would let the arm move on for more than 0.5 s after joint states stop)."""
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"state_timeout must be a number of seconds, got {value!r}") from None
    if not (t > 0.0 and t + WATCHDOG_PERIOD < STOP_LIMIT):
        raise ValueError(f"state_timeout must be > 0 and < {STOP_LIMIT - WATCHDOG_PERIOD:g} s (plus the "
                         f"watchdog's {WATCHDOG_PERIOD:g} s tick it must stop motion within {STOP_LIMIT:g} s "
                         f"of silent joint_states), got {t!r}")
    return t


class Refused(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class Manipulator:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, motors=None, joint_states=None):
        self.transport = transport
        self.mechanism = mechanism
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        motors_file = str(transport.get_parameter("motors", ""))
        self.motors = motors if motors is not None else load_motor_groups(mechanism, motors_file or None)
        wanted = list(transport.get_parameter("controllers", []))
        if wanted:
            unknown = [c for c in wanted if c not in self.motors]
            if unknown:
                raise ValueError(f"controllers {unknown} are not motor groups of the model "
                                 f"(groups: {list(self.motors)})")
            self.groups = {c: self.motors[c] for c in wanted}
            bad = [c for c, g in self.groups.items() if g.controller is not ControllerKind.JOINT_TRAJECTORY]
            if bad:
                raise ValueError(f"controllers {bad} are not joint_trajectory controllers")
            owners = motor_group_owners(mechanism, self.motors)
            for c in wanted:
                if owners.get(c, "manipulator") != "manipulator":
                    self.log.warning(f"controllers names {c!r}, which the {owners[c]} node commands: run only "
                                     f"one of the two nodes on it")
        else:
            # the one rule of motor_group_owners: never a group the locomotor or legged node commands
            self.groups = {g.name: g for g in manipulator_groups(mechanism, self.motors)}
        if not self.groups:
            raise ValueError("the model has no joint_trajectory motor group for the manipulator node (groups "
                             "commanded by the locomotor or legged node are not the manipulator's)")
        self.mode = str(transport.get_parameter("mode", "action"))
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        self.state_timeout = check_state_timeout(transport.get_parameter("state_timeout", DEFAULT_STATE_TIMEOUT))
        self.server_timeout = float(transport.get_parameter("server_timeout", 5.0))
        self.result_margin = float(transport.get_parameter("result_timeout_margin", 10.0))
        self._Trajectory = transport.message_class("trajectory_msgs/msg/JointTrajectory")
        self._Point = transport.message_class("trajectory_msgs/msg/JointTrajectoryPoint")
        self._lock = threading.Lock()
        self._positions: dict[str, float] = {}
        self._state_time: float | None = None
        self._active: dict[str, object] = {}            # group -> goal handle
        self._stale_cancelled: dict[int, object] = {}    # id -> goal handle the watchdog cancelled
        self.clients, self.publishers = {}, {}
        for name in self.groups:
            if self.mode == "action":
                self.clients[name] = transport.create_action_client(f"{name}/follow_joint_trajectory", ACTION)
            else:
                self.publishers[name] = transport.create_publisher(f"{name}/joint_trajectory",
                                                                   "trajectory_msgs/msg/JointTrajectory", DEFAULT)
        if joint_states is not None:
            joint_states.add_listener(self._on_state_update)
        else:
            transport.create_subscription("joint_states", "sensor_msgs/msg/JointState", DEFAULT, self._on_joint_state)
        transport.create_service("~/execute_trajectory", "mechanism_model_msgs/srv/ExecuteTrajectory",
                                 self._on_execute)
        transport.create_service("~/cancel", "std_srvs/srv/Trigger", self._on_cancel)
        transport.create_service("~/point_at", "mechanism_model_msgs/srv/PointAt", self._on_point_at)
        self._PointAtResult = transport.message_class("mechanism_model_msgs/action/PointAt_Result")
        self._PointAtFeedback = transport.message_class("mechanism_model_msgs/action/PointAt_Feedback")
        transport.create_action_server("~/point_at", "mechanism_model_msgs/action/PointAt", self._execute_point_at)
        self._pointers: dict = {}                       # (group, frame) -> ManipulatorModel
        transport.create_subscription("~/joint_trajectory", "trajectory_msgs/msg/JointTrajectory", DEFAULT,
                                      self._on_trajectory_topic)
        self.watchdog = transport.create_timer(WATCHDOG_PERIOD, self._check_state, own_thread=True)
        self.sent = self.refused = self.succeeded = self.failed = self.stale_cancels = 0
        self.stale_age: float | None = None
        self.stale_time: float | None = None
        self.log.info("manipulator: %s over %s (%s)", ", ".join(self.groups), self.mode,
                      "; ".join(f"{g}: {list(self.groups[g].joint_names)}" for g in self.groups))

    @classmethod
    def from_served(cls, transport, served) -> "Manipulator":
        """The node as ``serve`` starts it (:mod:`mechanism_model_ros.nodes`)."""
        return cls(transport, served.mechanism, joint_states=served.joint_states(transport))

    def status(self) -> str:
        return (f"trajectories sent: {self.sent}, refused: {self.refused}, succeeded: {self.succeeded}, "
                f"failed: {self.failed}")

    # ------------------------------------------------------------------ joint states
    def _on_state_update(self, update) -> None:
        with self._lock:
            self._positions.update(update.values)
            self._state_time = self.transport.monotonic()

    def _on_joint_state(self, msg) -> None:
        try:
            values, _unknown, _nonfinite = joint_state_positions(msg, skip_nonfinite=True)
        except BadMessage as exc:
            self.warn.warning("joint_states", f"joint_states message dropped: {exc}")
            return
        with self._lock:
            self._positions.update(values)
            self._state_time = self.transport.monotonic()

    def _state_is_fresh(self) -> bool:
        return self._state_time is not None and self.transport.monotonic() - self._state_time <= self.state_timeout

    def _check_state(self) -> None:
        """Watchdog: cancel running goals when joint states have been silent for ``state_timeout``."""
        with self._lock:
            if not self._active or self._state_is_fresh():
                return
            active = dict(self._active)
            if all(id(h) in self._stale_cancelled for h in active.values()):
                return                  # these goals were cancelled already: once per goal, not once per tick
            # the handles themselves are kept (not just ids) so that no later goal can reuse a cancelled id
            self._stale_cancelled = {id(h): h for h in active.values()}
        self.stale_cancels += 1
        self.stale_time = self.transport.monotonic()        # when the watchdog decided to stop (transport clock)
        self.stale_age = self.stale_time - self._state_time if self._state_time is not None else None
        self.warn.warning("stale", f"no joint_states for more than {self.state_timeout} s: cancelling "
                                   f"{', '.join(active)}")
        # not on this thread: the cancel's reply arrives through the thread that runs timers (Cyclone)
        threading.Thread(target=self._cancel_all, daemon=True, name="mm-manipulator-cancel").start()

    # ------------------------------------------------------------------ requests
    def _group_for(self, controller: str, names) -> object:
        if controller:
            if controller not in self.groups:
                raise Refused(ErrorCodes.INVALID_GROUP_NAME,
                              f"no joint_trajectory controller {controller!r} here (have {list(self.groups)})")
            return self.groups[controller]
        for g in self.groups.values():
            if set(names) <= set(g.joint_names):
                return g
        raise Refused(ErrorCodes.INVALID_GROUP_NAME,
                      f"no controller here commands all of {list(names)} (have "
                      f"{ {g: list(m.joint_names) for g, m in self.groups.items()} })")

    def check(self, msg, controller: str = ""):
        """``(group, names)`` of an acceptable trajectory message, else :class:`Refused`."""
        try:
            names, times, P, V, A = joint_trajectory_arrays(msg)
        except BadMessage as exc:
            raise Refused(ErrorCodes.INVALID_MOTION_PLAN, str(exc)) from None
        group = self._group_for(controller, names)
        missing = [j for j in group.joint_names if j not in names]
        if missing:
            raise Refused(ErrorCodes.INVALID_MOTION_PLAN,
                          f"trajectory for {group.name} lacks joint(s) {missing} (the controller takes whole goals)")
        with self._lock:
            fresh = self._state_is_fresh()
            start = [self._positions.get(j) for j in names]
        if not fresh or any(s is None for s in start):
            raise Refused(ErrorCodes.INVALID_ROBOT_STATE,
                          f"no joint_states younger than {self.state_timeout} s for {group.name}'s joints")
        try:
            violations = group.check_trajectory(times, P, V, A, joint_names=names, start=start)
        except InvalidCommand as exc:
            raise Refused(ErrorCodes.INVALID_MOTION_PLAN, str(exc)) from None
        if violations:
            shown = "; ".join(str(v) for v in violations[:5])
            more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
            raise Refused(ErrorCodes.INVALID_MOTION_PLAN, f"trajectory leaves the limits of {group.name}: "
                                                          f"{shown}{more}")
        return group, times

    def execute(self, msg, controller: str = "", wait: bool = True) -> dict:
        """Check and send one trajectory; the outcome as the service reply's fields."""
        try:
            group, times = self.check(msg, controller)
        except Refused as r:
            self.refused += 1
            self.warn.warning("refused", f"trajectory refused: {r.message}")
            return {"error_code": r.code, "message": r.message, "status": 0, "controller_error_code": 0}
        self.sent += 1
        if self.mode == "topic":
            self.publishers[group.name].publish(msg)
            return {"error_code": ErrorCodes.SUCCESS, "message": f"sent to {group.name}/joint_trajectory",
                    "status": 0, "controller_error_code": 0}
        client = self.clients[group.name]
        if not client.wait_for_server(self.server_timeout):
            self.failed += 1
            return {"error_code": ErrorCodes.CONTROL_FAILED, "status": 0, "controller_error_code": 0,
                    "message": f"no action server {group.name}/follow_joint_trajectory"}
        goal = client.goal()
        goal.trajectory = msg
        try:
            handle = client.send_goal(goal, timeout=self.server_timeout)
        except TimeoutError as exc:
            self.failed += 1
            return {"error_code": ErrorCodes.TIMED_OUT, "message": str(exc), "status": 0,
                    "controller_error_code": 0}
        if not handle.accepted:
            self.failed += 1
            return {"error_code": ErrorCodes.CONTROL_FAILED, "status": 0, "controller_error_code": 0,
                    "message": f"{group.name} rejected the goal"}
        with self._lock:
            self._active[group.name] = handle
        handle.result_future().add_done_callback(lambda f, g=group.name, h=handle: self._goal_done(g, h, f))
        if not wait:
            return {"error_code": ErrorCodes.SUCCESS, "message": f"{group.name} accepted the goal",
                    "status": handle.status, "controller_error_code": 0}
        try:
            result = handle.get_result(float(times[-1]) + self.result_margin)
        except TimeoutError:
            handle.cancel(self.server_timeout)
            self.failed += 1
            return {"error_code": ErrorCodes.TIMED_OUT, "status": handle.status, "controller_error_code": 0,
                    "message": f"{group.name} did not finish within {float(times[-1]) + self.result_margin} s; "
                               f"cancelled"}
        return self._reply_for(group.name, result)

    def _goal_done(self, group, handle, future) -> None:
        with self._lock:
            if self._active.get(group) is handle:
                del self._active[group]
        try:
            r = future.result()
        except Exception as exc:       # noqa: BLE001
            self.log.error("%s: no result: %s", group, exc)
            return
        if r.status == STATUS_SUCCEEDED:
            self.succeeded += 1
        else:
            self.failed += 1
            self.log.warning("%s: goal ended %s (%s)", group, r.status_name,
                             getattr(r.result, "error_string", "") if r.result is not None else "")

    @staticmethod
    def _reply_for(group, result) -> dict:
        code = int(getattr(result.result, "error_code", 0)) if result.result is not None else 0
        text = getattr(result.result, "error_string", "") if result.result is not None else ""
        if result.status == STATUS_SUCCEEDED and code == 0:
            return {"error_code": ErrorCodes.SUCCESS, "message": f"{group}: trajectory executed", "status":
                    result.status, "controller_error_code": code}
        if result.status == STATUS_CANCELED:
            return {"error_code": ErrorCodes.PREEMPTED, "message": f"{group}: cancelled", "status": result.status,
                    "controller_error_code": code}
        return {"error_code": ErrorCodes.CONTROL_FAILED, "status": result.status, "controller_error_code": code,
                "message": f"{group}: goal ended {result.status_name} ({code}: {text})"}

    def _cancel_all(self) -> list[str]:
        with self._lock:
            active = dict(self._active)
        done = []
        for name, handle in active.items():
            try:
                handle.cancel(self.server_timeout)
                done.append(name)
            except Exception as exc:    # noqa: BLE001 -- try the others
                self.log.error("cancel of %s failed: %s", name, exc)
        if self.mode == "topic":
            for name, pub in self.publishers.items():
                empty = self._Trajectory()
                fill_joint_trajectory(empty, self._Point, self.groups[name].joint_names, [], [])
                pub.publish(empty)
                done.append(name)
        return done

    # ------------------------------------------------------------------ ROS callbacks
    def _on_execute(self, request, response):
        out = self.execute(request.trajectory, str(request.controller), bool(request.wait))
        response.error_code.val = int(out["error_code"])
        response.message = out["message"]
        response.status = int(out["status"])
        response.controller_error_code = int(out["controller_error_code"])
        return response

    def _pointer(self, controller: str, frame: str):
        """The group and a :class:`ManipulatorModel` whose chain is that group's joints, for ``frame``."""
        if not self.mechanism.has_frame(frame):
            raise Refused(ErrorCodes.FRAME_TRANSFORM_FAILURE, f"no frame {frame!r} in {self.mechanism.name!r}")
        moving = [self.mechanism.body(b).joint.name for b in self.mechanism.path_to_ground(
            self.mechanism.frame(frame).body) if self.mechanism.body(b).joint is not None]
        if controller:
            group = self._group_for(controller, [])
        else:
            group = next((g for g in self.groups.values() if set(g.joint_names) & set(moving)), None)
            if group is None:
                raise Refused(ErrorCodes.INVALID_GROUP_NAME, f"no joint_trajectory group here moves {frame!r}")
        key = (group.name, frame)
        model = self._pointers.get(key)
        if model is None:
            joints = list(group.joint_names)
            if not set(joints) <= set(moving):
                raise Refused(ErrorCodes.INVALID_GROUP_NAME, f"{group.name} does not move {frame!r}")
            # the chain's base: the body just above the group's first joint on the frame's path
            path = self.mechanism.path_to_ground(self.mechanism.frame(frame).body)
            first = max(path.index(self.mechanism.child_body_of_joint(j)) for j in joints)
            base = path[first + 1] if first + 1 < len(path) else self.mechanism.ground
            model = ManipulatorModel(self.mechanism, tool=frame, base=base)
            if list(model.joint_names) != [j for j in model.joint_names if j in joints] or \
                    sorted(model.joint_names) != sorted(joints):
                raise Refused(ErrorCodes.INVALID_GROUP_NAME, f"{group.name}'s joints {joints} are not the chain "
                                                             f"to {frame!r} ({list(model.joint_names)})")
            self._pointers[key] = model
        return group, model

    def point_at(self, request) -> dict:
        """Solve (and with ``execute`` move) one ``PointAt`` request; the reply's fields."""
        try:
            group, model = self._pointer(str(request.controller), str(request.frame))
            with self._lock:
                fresh = self._state_is_fresh()
                positions = dict(self._positions)
            if not fresh or any(j not in positions for j in model.joint_names):
                raise Refused(ErrorCodes.INVALID_ROBOT_STATE,
                              f"no joint_states younger than {self.state_timeout} s for {group.name}'s joints")
            m = self.mechanism
            q_full = m.configuration({k: v for k, v in positions.items() if k in m.coordinate_names})
            q0 = [positions[j] for j in model.joint_names]
            fk = forward_kinematics(m, q_full)
            T_base = fk.pose(model.base)
            if str(request.target_frame):
                if not m.has_frame(str(request.target_frame)):
                    raise Refused(ErrorCodes.FRAME_TRANSFORM_FAILURE, f"no frame {request.target_frame!r}")
                p_world = fk.pose(str(request.target_frame))[:3, 3]
            else:
                ref = str(request.target.header.frame_id) or m.ground
                if ref != m.ground and not m.has_frame(ref):
                    raise Refused(ErrorCodes.FRAME_TRANSFORM_FAILURE, f"no frame {ref!r} for the target point")
                pt = request.target.point
                p = [float(pt.x), float(pt.y), float(pt.z)]
                if not all(v == v and abs(v) != float("inf") for v in p):
                    raise Refused(ErrorCodes.INVALID_MOTION_PLAN, "the target point has NaN or infinite values")
                T_ref = fk.pose(ref) if ref != m.ground else None
                p_world = p if T_ref is None else (T_ref[:3, :3] @ p + T_ref[:3, 3])
            p_base = np.linalg.inv(T_base) @ np.append(p_world, 1.0)
            r = model.point_at(p_base[:3], q0=q0, frame=str(request.frame), tolerance=1e-6)
        except Refused as exc:
            return {"error_code": exc.code, "message": exc.message, "joint_names": [], "positions": [],
                    "residual": 0.0}
        except MechanismModelError as exc:
            code = ErrorCodes.FRAME_TRANSFORM_FAILURE if isinstance(exc, UnknownFrame) else ErrorCodes.FAILURE
            return {"error_code": code, "message": str(exc), "joint_names": [], "positions": [], "residual": 0.0}
        out = {"joint_names": list(model.joint_names), "positions": [float(v) for v in r.q],
               "residual": float(r.error)}
        if not r.success:
            out.update(error_code=ErrorCodes.NO_IK_SOLUTION,
                       message=f"outside the reachable cone: {r.message or r.reason}; nothing sent")
            return out
        if not bool(request.execute):
            out.update(error_code=ErrorCodes.SUCCESS, message="aimed (not executed)")
            return out
        group_v = dict(zip(group.joint_names, (float(v) for v in group.velocity)))
        vmax = [min(float(v), group_v.get(j, float("inf"))) for j, v in zip(model.joint_names, model.velocity_limits)]
        shortest = max([abs(a - b) / v for a, b, v in zip(r.q, q0, vmax) if v > 0] + [0.0])
        T = max(float(request.duration), 1.25 * shortest, 0.1)
        msg = self._Trajectory()
        fill_joint_trajectory(msg, self._Point, list(model.joint_names), [T], [[float(v) for v in r.q]])
        ex = self.execute(msg, group.name, bool(request.wait))
        out.update(error_code=ex["error_code"], message=f"aim: {ex['message']}")
        return out

    def _on_point_at(self, request, response):
        out = self.point_at(request)
        response.error_code.val = int(out["error_code"])
        response.message = out["message"]
        response.joint_names = out["joint_names"]
        response.positions = out["positions"]
        response.residual = float(out["residual"])
        return response

    def _execute_point_at(self, handle) -> None:
        """Action ``~/point_at``: solve, report the aim as feedback, move, end with the result."""
        class _Request:                       # the service's request fields from the goal
            def __init__(self, goal, execute):
                self.controller, self.frame, self.target = goal.controller, goal.frame, goal.target
                self.target_frame, self.duration = goal.target_frame, goal.duration
                self.execute, self.wait = execute, True

        def result(out):
            r = self._PointAtResult()
            r.error_code.val = int(out["error_code"])
            r.message = out["message"]
            r.joint_names = out["joint_names"]
            r.positions = out["positions"]
            r.residual = float(out["residual"])
            return r

        aim = self.point_at(_Request(handle.request, False))
        if aim["joint_names"]:
            fb = self._PointAtFeedback()
            fb.joint_names, fb.positions, fb.residual = aim["joint_names"], aim["positions"], float(aim["residual"])
            handle.publish_feedback(fb)
        if aim["error_code"] != ErrorCodes.SUCCESS:
            handle.abort(result(aim))
            return
        if handle.is_cancel_requested:
            handle.canceled(result({**aim, "error_code": ErrorCodes.PREEMPTED, "message": "cancelled before the "
                                                                                          "motion; nothing sent"}))
            return
        done = threading.Event()

        def watch_cancel():
            while not done.wait(WATCHDOG_PERIOD):
                if handle.is_cancel_requested:
                    self._cancel_all()
                    return
        threading.Thread(target=watch_cancel, daemon=True, name="mm-point-at-cancel").start()
        try:
            out = self.point_at(_Request(handle.request, True))
        finally:
            done.set()
        if out["error_code"] == ErrorCodes.SUCCESS:
            handle.succeed(result(out))
        elif out["error_code"] == ErrorCodes.PREEMPTED:
            handle.canceled(result(out))
        else:
            handle.abort(result(out))

    def _on_trajectory_topic(self, msg) -> None:
        threading.Thread(target=self.execute, args=(msg, "", False), daemon=True,
                         name="mm-manipulator-topic").start()

    def _on_cancel(self, request, response):
        done = self._cancel_all()
        response.success = True
        response.message = f"cancelled: {', '.join(done)}" if done else "nothing to cancel"
        return response


def main(argv=None) -> int:
    """Console script ``manipulator``: the node alone."""
    return run_nodes(argv, nodes=("manipulator",), prog="manipulator", default_transport="auto")
