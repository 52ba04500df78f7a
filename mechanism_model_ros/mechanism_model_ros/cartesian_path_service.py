"""``compute_cartesian_path``: MoveIt's GetCartesianPath on the loaded mechanism
(``mechanism_model_msgs/srv/ComputeCartesianPath``), served by the kinematics server.

The request names the link that follows the path, the chain (``group_name``: empty for the default chain
above the link, or the chain's base frame), the waypoints (poses of the link in ``header.frame_id``, the
chain's base frame when empty), MoveIt's ``max_step``, ``jump_threshold`` and per-type absolute jump
thresholds. The core's :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel` plans the path
(registered closed forms used automatically) and time-parameterizes the achieved part within the joints'
velocity and acceleration limits times the scaling factors; the reply holds it as a
``trajectory_msgs/JointTrajectory`` over the chain's joints with the fraction achieved.

Error codes (MoveIt's values). One difference from MoveIt: a partial path (fraction < 1) is not SUCCESS;
its code says why it stopped, and the partial trajectory and the fraction are still filled in:

===========================  =================================================================
SUCCESS (1)                  the whole path (fraction 1)
NO_IK_SOLUTION (-31)         stopped at a waypoint out of reach or off the chain's reachable set, or
                             against joint limits (partial path returned)
PLANNING_FAILED (-1)         stopped at a joint-space jump above a threshold (partial path returned)
INVALID_MOTION_PLAN (-2)     with avoid_collisions: stopped before the first step in collision (the whole
                             robot's bounding shapes at the start state with the chain's joints set,
                             against each other and against the node's world: the terrain and obstacles
                             of its environment_file, as check_state_validity has them); only pairs with
                             a body the chain moves count (a rover's wheels on the terrain do not); the
                             partial path is returned and the message names the colliding bodies or
                             obstacles
INVALID_GOAL_CONSTRAINTS     no waypoints, NaN/inf or zero-quaternion poses, max_step <= 0, negative or
(-16)                        non-finite thresholds, scaling factors outside [0, 1], too many waypoints or
                             steps, scaling factors so small that the trajectory would last 2**31 s or
                             more (beyond builtin_interfaces/Duration's int32 seconds)
INVALID_LINK_NAME (-18)      link_name empty or not a frame
INVALID_GROUP_NAME (-15)     group_name not a frame the link hangs from
FRAME_TRANSFORM_FAILURE      header.frame_id not a frame
(-21)
INVALID_ROBOT_STATE (-17)    start_state unknown joints, NaN, or outside the chain's limits
FAILURE (99999)              avoid_collisions asked where collision checking is unavailable; the time
                             parameterization library missing; anything else
===========================  =================================================================
"""

from __future__ import annotations

import math
import threading

import numpy as np

from mechanism_model_core import forward_kinematics
from mechanism_model_core.collision import coal_backend
from mechanism_model_core.errors import InvalidConfiguration, MechanismModelError, ModelStructureError
from mechanism_model_core.extras import install_hint

from . import markers
from .conversions import fill_joint_state
from .error_codes import ErrorCodes, RequestError
from .transports.base import request_cancelled
from .qos import DEFAULT
from mechanism_model_core.locomotion.manipulator import ManipulatorModel

#: most waypoints / interpolated steps one request may ask for (a bigger one would hold a service thread)
MAX_WAYPOINTS = 10_000
MAX_STEPS = 20_000
#: longest trajectory the reply can carry: builtin_interfaces/Duration's ``sec`` is an int32 (s)
MAX_DURATION = 2**31 - 1


def _pose_matrix(pose, what: str) -> np.ndarray:
    p, o = pose.position, pose.orientation
    v = [p.x, p.y, p.z, o.x, o.y, o.z, o.w]
    if not all(math.isfinite(float(x)) for x in v):
        raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, f"{what}: NaN or infinite value")
    q = np.array(v[3:], dtype=float)
    n = float(np.linalg.norm(q))
    if n < 1e-9:
        raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, f"{what}: zero quaternion")
    x, y, z, w = q / n
    T = np.eye(4)
    T[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                 [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                 [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    T[:3, 3] = v[:3]
    return T


def _finite_nonneg(value, what: str) -> float:
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, f"{what} must be finite and >= 0, got {v}")
    return v


class CartesianPathService:
    """The ``compute_cartesian_path`` handler of a :class:`~.kinematics_server.KinematicsServer` (uses its
    configuration, frame-name and stamp helpers)."""

    def __init__(self, server):
        self.server = server
        self._arms: dict = {}
        self._lock = threading.Lock()
        # RViz: the tool's positions along the last planned path (markers.planned_path_markers), while subscribed
        self.path_pub = server.transport.create_publisher("~/planned_path", "visualization_msgs/msg/MarkerArray",
                                                          DEFAULT)

    def manipulator(self, base: str | None, link: str):
        """The chain view for (base, link), built once."""
        key = (base, link)
        with self._lock:
            arm = self._arms.get(key)
        if arm is None:
            try:
                arm = ManipulatorModel(self.server.mechanism, tool=link, base=base)
            except ModelStructureError as exc:
                raise RequestError(ErrorCodes.INVALID_GROUP_NAME, f"group_name: {exc}") from None
            with self._lock:
                if len(self._arms) > 64:
                    self._arms.clear()
                self._arms[key] = arm
        return arm

    def __call__(self, req, rep) -> None:
        s = self.server
        m = s.mechanism
        q_full = s.configuration(req.start_state)
        fill_joint_state(rep.start_state, m.coordinate_names, q_full, s.transport.now())
        if not req.link_name:
            raise RequestError(ErrorCodes.INVALID_LINK_NAME, "link_name is empty")
        link = s._frame(req.link_name, ErrorCodes.INVALID_LINK_NAME, "link_name")
        base = s._frame(req.group_name, ErrorCodes.INVALID_GROUP_NAME, "group_name (the chain's base frame)") \
            if req.group_name else None
        ref = s._reference(req.header.frame_id)
        arm = self.manipulator(base, link)
        # parameters
        if len(req.waypoints) == 0:
            raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, "no waypoints")
        if len(req.waypoints) > MAX_WAYPOINTS:
            raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS,
                               f"{len(req.waypoints)} waypoints; at most {MAX_WAYPOINTS} are served")
        max_step = float(req.max_step)
        if not (math.isfinite(max_step) and max_step > 0):
            raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, f"max_step must be > 0 m, got {max_step}")
        jump = _finite_nonneg(req.jump_threshold, "jump_threshold")
        pj = _finite_nonneg(req.prismatic_jump_threshold, "prismatic_jump_threshold")
        rj = _finite_nonneg(req.revolute_jump_threshold, "revolute_jump_threshold")
        scales = []
        for what in ("max_velocity_scaling_factor", "max_acceleration_scaling_factor"):
            v = float(getattr(req, what))
            if not (math.isfinite(v) and 0 <= v <= 1):
                raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, f"{what} must be in [0, 1], got {v}")
            scales.append(v or 1.0)
        avoid = bool(req.avoid_collisions)
        if avoid:
            try:
                coal_backend.coal()   # the collision extra, imported on first use
            except ImportError:
                raise RequestError(ErrorCodes.FAILURE, "avoid_collisions: collision checking is not available "
                                                       f"in this installation ({install_hint('collision')}, or send "
                                                       "avoid_collisions false)") from None
        # waypoints in the chain's base frame (the reference frame's pose at the start state)
        fk = forward_kinematics(m, q_full)
        T_base_ref = np.linalg.inv(fk.pose(arm.base)) @ (fk.pose(ref) if ref else fk.pose(arm.base))
        wps = [T_base_ref @ _pose_matrix(p, f"waypoints[{i}]") for i, p in enumerate(req.waypoints)]
        q0 = arm.chain_q(q_full)
        if not arm.within_limits(q0, 1e-9):
            raise RequestError(ErrorCodes.INVALID_ROBOT_STATE, "start_state: the chain's joints are outside "
                                                               "their limits")
        T_prev, steps = arm.fk(q0), 0
        for T in wps:
            steps += max(1, math.ceil(float(np.linalg.norm(T[:3, 3] - T_prev[:3, 3])) / max_step))
            T_prev = T
        if steps > MAX_STEPS:
            raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS,
                               f"about {steps} steps of {max_step} m; at most {MAX_STEPS} are served (raise max_step)")
        absolute = np.where(arm.prismatic, pj, rj)
        # the node's world (environment_file, loaded once by the state validity part of the server), as MoveIt
        # checks its planning scene
        validity = getattr(s, "state_validity", None)
        env = validity.environment if avoid and validity is not None else None
        env = env if env is not None and len(env) else None
        # the transport's event for a departed client (Cyclone): every step is then refused, ending the path
        cancel = request_cancelled()
        still_wanted = None if cancel is None else (lambda q: not cancel.is_set())
        try:
            path = arm.cartesian_path(wps, q0, max_step=max_step, jump_threshold=jump,
                                      absolute_jump_threshold=absolute, avoid_collisions=avoid, q_full=q_full,
                                      environment=env, is_valid=still_wanted)
        except InvalidConfiguration as exc:
            raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, str(exc)) from None
        if cancel is not None and cancel.is_set():
            raise RequestError(ErrorCodes.FAILURE, "cancelled: the client left")
        rep.fraction = float(path.fraction)
        if self.path_pub.subscription_count and len(path.positions):
            specs = markers.planned_path_markers(arm, path.positions, path.fraction >= 1.0)
            for spec in specs:
                spec.frame = s.frame_prefix + spec.frame
            self.path_pub.publish(markers.marker_array(s.transport, specs, s.transport.now()))
        traj = rep.solution
        traj.header.frame_id = s.frame_prefix + arm.base
        traj.joint_names = list(arm.joint_names)
        traj.points = []
        if len(path.positions) > 1:
            try:
                jt = arm.time_parameterize(path.positions, velocity_scaling=scales[0],
                                           acceleration_scaling=scales[1])
            except MechanismModelError as exc:
                raise RequestError(ErrorCodes.FAILURE, f"time parameterization: {exc}") from None
            duration = float(jt.times[-1]) if len(jt) else 0.0
            if not (math.isfinite(duration) and duration < MAX_DURATION):
                raise RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS,
                                   f"the trajectory would last {duration:.3g} s at max_velocity_scaling_factor "
                                   f"{float(req.max_velocity_scaling_factor):g} and max_acceleration_scaling_factor "
                                   f"{float(req.max_acceleration_scaling_factor):g}: more than the "
                                   f"{MAX_DURATION} s a trajectory point's time_from_start holds (int32 "
                                   f"seconds); raise the scaling factors")
            Point = s.transport.message_class("trajectory_msgs/msg/JointTrajectoryPoint")
            for k in range(len(jt)):
                pt = Point()
                pt.positions = [float(v) for v in jt.positions[k]]
                pt.velocities = [float(v) for v in jt.velocities[k]]
                pt.accelerations = [float(v) for v in jt.accelerations[k]]
                t = float(jt.times[k])
                sec = int(math.floor(t))
                pt.time_from_start.sec = sec
                pt.time_from_start.nanosec = min(int(round((t - sec) * 1e9)), 999_999_999)
                traj.points.append(pt)
        if path.fraction < 1.0:
            code = {"jump": ErrorCodes.PLANNING_FAILED, "invalid": ErrorCodes.INVALID_MOTION_PLAN,
                    "collision": ErrorCodes.INVALID_MOTION_PLAN}.get(
                path.reason, ErrorCodes.NO_IK_SOLUTION)
            raise RequestError(code, f"fraction {path.fraction:.4f}: {path.message}")
        rep.message = ""
