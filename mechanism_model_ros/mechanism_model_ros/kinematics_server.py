"""Kinematics server: ``compute_fk``, ``compute_jacobian``, ``compute_ik``, ``compute_cartesian_path``
(:mod:`.cartesian_path_service`) and ``check_state_validity`` (:mod:`.state_validity`, with the bounding
shapes on ``collision_shapes``) on the loaded mechanism.

Shapes follow MoveIt's GetPositionFK / GetPositionIK (``mechanism_model_msgs/srv/*``), error codes are
MoveIt's values, read from ``ErrorCodes.msg`` (:mod:`.error_codes`, which also maps exceptions to codes). Joint values come from the request; joints the request leaves out take the latest
value received on ``joint_states``, then their coupling or home value. Every failure is an error code
and a message in the reply, never an exception out of a handler:

===========================  =================================================================
code                         when
===========================  =================================================================
INVALID_ROBOT_STATE (-17)    joint names unknown, names/positions of different lengths, NaN/inf
INVALID_LINK_NAME (-18)      a requested or constrained frame the model does not have
FRAME_TRANSFORM_FAILURE      a reference frame (``header.frame_id``, ``reference_frame``) unknown
(-21)
INVALID_GOAL_CONSTRAINTS     IK: no constraint, mismatched ik_link_names/pose_stamped_vector,
(-16)                        NaN or zero-quaternion targets, unknown constraint kind, NaN/inf/negative
                             tolerances, negative or non-finite timeout, more than MAX_LIST_ENTRIES
                             ik_link_names or constraints
INVALID_GROUP_NAME (-15)     IK: ``active_joints`` names an unknown joint coordinate
TIMED_OUT (-6)               IK: the time budget ran out (counted from the request's arrival)
SERVER_BUSY (-50)            IK: ``ik_max_concurrent`` requests running and ``ik_max_queued`` waiting
NO_IK_SOLUTION (-31)         IK: the solver converged to no solution within tolerance
FAILURE (99999)              more than MAX_LIST_ENTRIES fk_link_names; an unknown Jacobian convention;
                             anything else (the message says what)
===========================  =================================================================

Parameters: ``model``, ``frame_prefix`` (accepted and stripped on frame names in requests),
``ik_timeout`` (s, default 1.0, used when a request's timeout is zero), ``max_ik_timeout`` (s, default
10.0, upper bound on any request's timeout), ``ik_prepare`` (default true: at start-up, before the services
are offered, IK's caches are built for the tip frames of the model's motor groups -- every joint free, and the
group's joints free with the others locked, as a request's ``active_joints`` has it -- with
:func:`~mechanism_model_core.ik.prepare_ik`, so that the first request is answered as fast as the thousandth),
``ik_prepare_frames`` (frame names to prepare instead of the groups' tips, every joint free),
``ik_prepare_kinds`` (default ``[pose, position, orientation]``: the constraint kinds prepared; each costs its
engines' tables, 10-14 MB for full poses alone on the Rocky 8 and Curiosity, 20-26 MB for all three), ``motors``
(the motor group file, as the manipulator node's; default: the model's own groups).
"""

from __future__ import annotations

import math
import time

import numpy as np

from mechanism_model_core import forward_kinematics, jacobian
from mechanism_model_core.errors import InvalidConfiguration, MechanismModelError, UnknownFrame
from mechanism_model_core.io.motor_groups import load_motor_groups

from .conversions import (BadMessage, constraint_from, duration_seconds, fill_joint_state, fill_pose,
                          joint_state_positions, normalized_stamp, pose_constraint_from, residual_size,
                          set_stamp)
from .cartesian_path_service import CartesianPathService
from .error_codes import ErrorCodes, RequestError, code_for
from .joint_state_cache import JointStateCache
from .transports.base import RateLimitedLogger, Transport, request_arrival, request_cancelled
# (loads the IK solvers and their LAPACK bindings, ~0.1 s, at start)
from mechanism_model_core.ik import group_tip_frames, prepare_ik, solve_ik
from mechanism_model_core.ik.prepare import KINDS
from .serve import run_nodes
from .state_validity import REQUEST_LIMITS, StateValidity

# the codes by name, for code that imported them from here
SUCCESS = ErrorCodes.SUCCESS
FAILURE = ErrorCodes.FAILURE
TIMED_OUT = ErrorCodes.TIMED_OUT
INVALID_GROUP_NAME = ErrorCodes.INVALID_GROUP_NAME
INVALID_GOAL_CONSTRAINTS = ErrorCodes.INVALID_GOAL_CONSTRAINTS
INVALID_ROBOT_STATE = ErrorCodes.INVALID_ROBOT_STATE
INVALID_LINK_NAME = ErrorCodes.INVALID_LINK_NAME
FRAME_TRANSFORM_FAILURE = ErrorCodes.FRAME_TRANSFORM_FAILURE
NO_IK_SOLUTION = ErrorCodes.NO_IK_SOLUTION

CONVENTIONS = ("LOCAL_WORLD_ALIGNED", "WORLD", "LOCAL")
#: longest fk_link_names / ik_link_names / constraints list a request may carry (a bigger one is refused
#: before any work: it would hold a service thread for seconds)
MAX_LIST_ENTRIES = 10_000


class KinematicsServer:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, model_path: str | None = None,
                 joint_states: JointStateCache | None = None):
        """``joint_states``: the process's shared cache (``serve`` passes it); None: subscribe here."""
        self.transport = transport
        self.mechanism = mechanism
        self.model_path = model_path
        self.frame_prefix = str(transport.get_parameter("frame_prefix", ""))
        self.ik_timeout = float(transport.get_parameter("ik_timeout", 1.0))
        self.max_ik_timeout = float(transport.get_parameter("max_ik_timeout", 10.0))
        self.ik_max_concurrent = int(transport.get_parameter("ik_max_concurrent", 2))
        self.ik_max_queued = int(transport.get_parameter("ik_max_queued", 8))
        if self.ik_max_concurrent < 1 or self.ik_max_queued < 0:
            raise ValueError(f"parameters ik_max_concurrent (>= 1) and ik_max_queued (>= 0) got "
                             f"{self.ik_max_concurrent}, {self.ik_max_queued}")
        self.busy = 0
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        self._coords = set(mechanism.coordinate_names)
        self.joint_states = joint_states if joint_states is not None else JointStateCache(transport, mechanism)
        #: what :meth:`prepare` built (PreparedFrame records), before the services are offered
        self.prepared = self.prepare() if bool(transport.get_parameter("ik_prepare", True)) else []
        self.calls = {"compute_fk": 0, "compute_jacobian": 0, "compute_ik": 0, "compute_cartesian_path": 0,
                      "check_state_validity": 0}
        self.failures = 0
        self.services = [
            transport.create_service("compute_fk", "mechanism_model_msgs/srv/ComputeFK",
                                     self._guard("compute_fk", self.compute_fk)),
            transport.create_service("compute_jacobian", "mechanism_model_msgs/srv/ComputeJacobian",
                                     self._guard("compute_jacobian", self.compute_jacobian)),
            # IK is the one expensive service: its own bounded share of threads and queue, the excess
            # refused with SERVER_BUSY at once, so FK/Jacobian stay fast while IK is saturated
            transport.create_service("compute_ik", "mechanism_model_msgs/srv/ComputeIK",
                                     self._guard("compute_ik", self.compute_ik),
                                     concurrency=self.ik_max_concurrent, queue=self.ik_max_queued,
                                     busy=self._busy("compute_ik")),
            transport.create_service("compute_cartesian_path", "mechanism_model_msgs/srv/ComputeCartesianPath",
                                     self._guard("compute_cartesian_path", CartesianPathService(self))),
        ]
        # state validity and the bounding-shape markers (state_validity.py)
        self.state_validity = StateValidity(self)
        self.services.append(transport.create_service(
            "check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity",
            self._guard("check_state_validity", self.state_validity.check), limits=REQUEST_LIMITS))

    def prepare(self) -> list:
        """Build IK's caches (:func:`~mechanism_model_core.ik.prepare_ik`) for the frames of parameter
        ``ik_prepare_frames``, else for the tip frames of each motor group (every joint free, and the group's
        joints alone free, as requests with ``active_joints`` lock the rest); returns the PreparedFrame records.
        An unknown frame in ``ik_prepare_frames`` is a bad parameter (ValueError)."""
        t0 = time.monotonic()
        m = self.mechanism
        frames = [str(f) for f in self.transport.get_parameter("ik_prepare_frames", []) or []]
        kinds = [str(k) for k in self.transport.get_parameter("ik_prepare_kinds", list(KINDS)) or []]
        if not set(kinds) <= set(KINDS):
            raise ValueError(f"ik_prepare_kinds must be among {list(KINDS)}, got {kinds}")
        plan = [(frames, ())] if frames else []
        if not frames:
            try:
                motors = load_motor_groups(m, str(self.transport.get_parameter("motors", "")) or None)
            except (MechanismModelError, OSError) as exc:
                self.log.info("IK not prepared ahead: no motor groups (%s)", exc)
                return []
            for g in motors.groups:
                tips = group_tip_frames(m, g.joint_names)
                if tips:
                    plan += [(tips, ()), (tips, tuple(locked_for(m, g.joint_names)))]
        done = []
        for names, locked in plan:
            try:
                done += prepare_ik(m, names, locked=locked, kinds=kinds)
            except MechanismModelError as exc:
                if frames:                    # a frame the parameter names that the model does not have
                    raise ValueError(f"ik_prepare_frames: {exc}") from None
                self.log.warning("IK not prepared for %s: %s", ", ".join(names), exc)
            except Exception as exc:          # noqa: BLE001 -- a head start, never a reason not to serve
                self.log.warning("IK not prepared for %s: %s: %s", ", ".join(names), type(exc).__name__, exc)
        if done:
            self.log.info("IK prepared in %.0f ms for %s", 1e3 * (time.monotonic() - t0),
                          ", ".join(sorted({f"{p.frame} ({p.solver})" for p in done})))
        return done

    # ------------------------------------------------------------------ state
    def on_joint_state(self, msg) -> None:
        """Take one ``joint_states`` message (through the cache, as the subscription does)."""
        self.joint_states.on_message(msg)

    def configuration(self, robot_state) -> np.ndarray:
        """Full coordinates: request values over the latest joint states over home/couplings."""
        try:
            given, unknown = joint_state_positions(robot_state, self._coords)
        except BadMessage as exc:
            raise RequestError(INVALID_ROBOT_STATE, f"robot_state: {exc}") from None
        if unknown:
            raise RequestError(INVALID_ROBOT_STATE,
                               f"robot_state: unknown joints {', '.join(unknown[:5])}")
        values = self.joint_states.latest()
        values.update(given)
        try:
            return self.mechanism.configuration(values, measured=True)   # reported joint states win
        except InvalidConfiguration as exc:
            raise RequestError(INVALID_ROBOT_STATE, f"robot_state: {exc}") from None

    def _frame(self, name: str, code: int, what: str) -> str:
        if self.frame_prefix and name.startswith(self.frame_prefix):
            name = name[len(self.frame_prefix):]
        if not self.mechanism.has_frame(name):
            raise RequestError(code, f"{what} {name!r} is not a frame of model {self.mechanism.name!r}")
        return name

    def _reference(self, name: str) -> str | None:
        if not name:
            return None
        return self._frame(name, FRAME_TRANSFORM_FAILURE, "reference frame")

    # ------------------------------------------------------------------ dispatch
    def _guard(self, service: str, fn):
        def handler(request, response):
            self.calls[service] += 1
            try:
                fn(request, response)
                response.error_code.val = SUCCESS
            except Exception as exc:      # every failure is a code and a message; the node keeps serving
                self._fail(service, response, *code_for(exc))
            return response
        return handler

    def _busy(self, service: str):
        def busy(request, response):
            self.calls[service] += 1
            self.busy += 1
            self._fail(service, response, ErrorCodes.SERVER_BUSY,
                       f"{service} is busy: {self.ik_max_concurrent} requests running and {self.ik_max_queued} "
                       f"queued; retry later")
            return response
        return busy

    def _fail(self, service, response, code, message):
        self.failures += 1
        if code not in (NO_IK_SOLUTION, TIMED_OUT):
            # partial results of a rejected request must not look valid
            for field in ("pose_stamped", "fk_link_names", "data", "joint_names"):
                if hasattr(response, field):
                    setattr(response, field, [])
            if hasattr(response, "rows"):
                response.rows = response.cols = 0
        response.error_code.val = code
        response.message = message
        self.warn.warning(f"{service}:{code}", f"{service}: {message}")

    # ------------------------------------------------------------------ services
    def compute_fk(self, req, rep) -> None:
        q = self.configuration(req.robot_state)
        ref = self._reference(req.header.frame_id)
        names = list(req.fk_link_names) or list(self.mechanism.frame_names)
        _check_length(names, "fk_link_names", FAILURE)
        frames = [self._frame(n, INVALID_LINK_NAME, "fk_link_names entry") for n in names]
        try:
            stamp = normalized_stamp(req.header.stamp) or self.transport.now()
        except BadMessage as exc:
            raise RequestError(FAILURE, f"header.stamp: {exc}") from None
        fk = forward_kinematics(self.mechanism, q)
        PoseStamped = self.transport.message_class("geometry_msgs/msg/PoseStamped")
        out = []
        frame_id = self.frame_prefix + (ref or self.mechanism.ground)
        for f in frames:
            ps = PoseStamped()
            set_stamp(ps.header.stamp, stamp)
            ps.header.frame_id = frame_id
            fill_pose(ps.pose, fk.pose(f, relative_to=ref))
            out.append(ps)
        rep.pose_stamped = out
        rep.fk_link_names = names

    def compute_jacobian(self, req, rep) -> None:
        q = self.configuration(req.robot_state)
        conv = (req.convention or "LOCAL_WORLD_ALIGNED").upper()
        if conv not in CONVENTIONS:
            raise RequestError(FAILURE, f"unknown convention {req.convention!r}; use one of "
                                        f"{', '.join(CONVENTIONS)}")
        link = self._frame(req.link_name, INVALID_LINK_NAME, "link_name") if req.link_name else None
        if link is None:
            raise RequestError(INVALID_LINK_NAME, "link_name is empty")
        ref = self._reference(req.reference_frame)
        J = jacobian(self.mechanism, q, link, relative_to=ref, convention=conv)
        rep.rows, rep.cols = int(J.shape[0]), int(J.shape[1])
        rep.data = [float(v) for v in J.reshape(-1)]
        rep.joint_names = list(self.mechanism.coordinate_names)
        rep.convention = conv
        rep.reference_frame = self.frame_prefix + (ref or self.mechanism.ground)

    def compute_ik(self, req, rep) -> None:
        q0 = self.configuration(req.robot_state)
        constraints = self.constraints_from(req)
        active = list(req.active_joints)
        unknown = [a for a in active if a not in self._coords]
        if unknown:
            raise RequestError(INVALID_GROUP_NAME, f"active_joints: unknown joints {', '.join(unknown[:5])}")
        locked = locked_for(self.mechanism, active)
        timeout = duration_seconds(req.timeout)
        if not math.isfinite(timeout) or timeout < 0:
            raise RequestError(INVALID_GOAL_CONSTRAINTS, "timeout must be a non-negative duration")
        timeout = min(timeout or self.ik_timeout, self.max_ik_timeout)
        # the budget counts from the request's arrival: time spent queued behind other IK requests is spent
        queued = time.monotonic() - request_arrival()
        if queued >= timeout:
            raise RequestError(TIMED_OUT, f"IK timed out after {queued:.3f} s in the queue (timeout {timeout} s)")
        timeout -= queued
        tolerances = {}
        for i, c in enumerate(req.constraints):
            for field in ("position_tolerance", "orientation_tolerance"):
                v = float(getattr(c, field))
                if not math.isfinite(v) or v < 0:
                    raise RequestError(INVALID_GOAL_CONSTRAINTS,
                                       f"constraints[{i}].{field} must be finite and >= 0, got {v}")
        tp = [float(c.position_tolerance) for c in req.constraints if float(c.position_tolerance) > 0]
        to = [float(c.orientation_tolerance) for c in req.constraints if float(c.orientation_tolerance) > 0]
        if tp:
            tolerances["tol_position"] = min(tp)
        if to:
            tolerances["tol_orientation"] = min(to)
        t0 = time.monotonic()
        try:
            if getattr(req, "avoid_collisions", False):     # MoveIt's flag (collision extra needed)
                tolerances["avoid_collisions"] = True
            # cancel: set by the transport when the client leaves (Cyclone; None under rclpy, see docs/ros.md)
            result = solve_ik(self.mechanism, constraints, q0, timeout=timeout, locked=locked,
                              cancel=request_cancelled(), **tolerances)
        except UnknownFrame as exc:
            raise RequestError(INVALID_LINK_NAME, str(exc)) from None
        except InvalidConfiguration as exc:
            raise RequestError(INVALID_GOAL_CONSTRAINTS, str(exc)) from None
        elapsed = time.monotonic() - t0
        q = np.asarray(result.q, dtype=float)
        fill_joint_state(rep.solution, self.mechanism.coordinate_names, q, self.transport.now())
        rep.residuals = [residual_size(r) for r in (getattr(result, "residuals", None) or [])]
        rep.iterations = int(getattr(result, "iterations", 0) or 0)
        if result.success:
            rep.message = ""
            return
        reason = str(getattr(result, "reason", "") or "")
        detail = str(getattr(result, "message", "") or "")
        if reason == "collision":
            raise RequestError(NO_IK_SOLUTION, f"no collision-free IK solution: {detail}".strip())
        if reason == "timeout":
            raise RequestError(TIMED_OUT, f"IK timed out after {elapsed:.3f} s {detail}".strip())
        raise RequestError(NO_IK_SOLUTION, f"no IK solution ({reason}) {detail}".strip())

    # ------------------------------------------------------------------ constraint messages
    def constraints_from(self, req) -> list:
        """The core constraints of an IK request (frame names resolved here, conversion in conversions)."""
        links = list(req.ik_link_names)
        poses = list(req.pose_stamped_vector)
        _check_length(links, "ik_link_names", INVALID_GOAL_CONSTRAINTS)
        _check_length(req.constraints, "constraints", INVALID_GOAL_CONSTRAINTS)
        if len(links) != len(poses):
            raise RequestError(INVALID_GOAL_CONSTRAINTS,
                               f"{len(links)} ik_link_names but {len(poses)} pose_stamped_vector entries")
        out = []
        try:
            for i, (link, ps) in enumerate(zip(links, poses)):
                frame = self._frame(link, INVALID_LINK_NAME, "ik_link_names entry")
                ref = self._reference(ps.header.frame_id)
                out.append(pose_constraint_from(frame, ps.pose, ref, f"pose_stamped_vector[{i}]"))
            for i, c in enumerate(req.constraints):
                what = f"constraints[{i}]"
                frame = self._frame(c.link_name, INVALID_LINK_NAME, f"{what}.link_name")
                out.append(constraint_from(c, frame, self._reference(c.reference_frame), what))
        except (BadMessage, InvalidConfiguration) as exc:
            raise RequestError(INVALID_GOAL_CONSTRAINTS, str(exc)) from None
        if not out:
            raise RequestError(INVALID_GOAL_CONSTRAINTS, "the request has no constraint")
        return out

    @classmethod
    def from_served(cls, transport, served) -> "KinematicsServer":
        """The node as ``serve`` starts it (:mod:`mechanism_model_ros.nodes`)."""
        return cls(transport, served.mechanism, served.model_path, joint_states=served.joint_states(transport))

    def status(self) -> str:
        """This node's part of ``serve``'s status line."""
        c = self.calls
        return f"service calls: " + ", ".join(f"{k.replace('compute_', '')} {v}" for k, v in c.items()) + \
            f" (failed {self.failures}, busy {self.busy})"


def locked_for(mechanism, active) -> list[str]:
    """The coordinates an IK request with ``active_joints`` = ``active`` locks: every independent one not in it,
    in the mechanism's order (none when ``active`` is empty)."""
    keep = set(active)
    return [c for c in mechanism.independent_coordinates if keep and c not in keep]


def _check_length(items, field: str, code: int) -> None:
    if len(items) > MAX_LIST_ENTRIES:
        raise RequestError(code, f"{field} has {len(items)} entries; at most {MAX_LIST_ENTRIES} are served")


def main(argv=None) -> int:
    """Console script ``kinematics_server``: the node alone."""
    return run_nodes(argv, nodes=("kinematics_server",), prog="kinematics_server", default_transport="auto")
