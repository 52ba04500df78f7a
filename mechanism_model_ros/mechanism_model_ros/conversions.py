"""Conversions between ROS messages and numpy/core types. No ROS import: messages are duck-typed objects
with ROS field names (rclpy's or the Cyclone transport's generated classes).

Poses are 4x4 homogeneous transforms (metres); quaternions (x, y, z, w) as ROS and scipy; those written have
``w >= 0`` (``mechanism_model_core.spatial.canonical_quaternion``), those read may have either sign.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation

from mechanism_model_core import shapes as S
from mechanism_model_core.errors import InvalidConfiguration
from mechanism_model_core.spatial import matrix_to_quaternion, rotation_z_to
from mechanism_model_core import constraints as C


class BadMessage(ValueError):
    """A message field holds something unusable (NaN, a zero quaternion, mismatched lengths)."""


class TwistRejected(BadMessage):
    """A ``cmd_vel`` no motion may follow: ``key`` is ``"cmd_nan"`` (a NaN or infinite component) or
    ``"cmd_range"`` (faster than the limits), for rate-limited logging."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def planar_twist(msg, max_linear: float, max_angular: float, *, angular_y: bool = False) -> tuple:
    """``(vx, vy, wz, wy)`` of a ``geometry_msgs/Twist`` commanding a planar base (m/s, rad/s, body frame,
    REP-103), checked as every base node checks ``cmd_vel``: all six components finite, the planar speed
    ``hypot(vx, vy)`` at most ``max_linear`` and ``|wz|`` at most ``max_angular`` (and ``|wy|`` too when
    ``angular_y``: a locomotor that turns in place from ``angular.y``); else :class:`TwistRejected`."""
    v = tuple(float(x) for x in (msg.linear.x, msg.linear.y, msg.angular.z, msg.angular.y))
    if not all(math.isfinite(x) for x in v + (float(msg.linear.z), float(msg.angular.x))):
        raise TwistRejected("cmd_nan", "cmd_vel rejected: NaN or infinite components")
    speed, rate = math.hypot(v[0], v[1]), max(abs(v[2]), abs(v[3]) if angular_y else 0.0)
    if speed > max_linear or rate > max_angular:
        raise TwistRejected("cmd_range", f"cmd_vel rejected: |v| {speed:.3g} m/s or |w| {rate:.3g} rad/s beyond "
                                         f"max_linear_speed {max_linear} / max_angular_speed {max_angular}")
    return v


def _finite(values, what: str) -> list[float]:
    out = [float(v) for v in values]
    if not all(math.isfinite(v) for v in out):
        raise BadMessage(f"{what} must be finite")
    return out


def quaternion_to_matrix(q, what: str = "orientation") -> np.ndarray:
    """Rotation matrix of a ``geometry_msgs/Quaternion``; it must be finite and non-zero (it is
    normalised, as tf2 does)."""
    x, y, z, w = _finite((q.x, q.y, q.z, q.w), what)
    n = math.hypot(x, y, z, w)          # no overflow for components up to 1e308 (x*x would be inf at 1e200)
    if n < 1e-9:
        raise BadMessage(f"{what} is a zero quaternion")
    if not math.isfinite(n):            # beyond float range even with hypot: scale first
        m = max(abs(x), abs(y), abs(z), abs(w))
        x, y, z, w = x / m, y / m, z / m, w / m
        n = math.hypot(x, y, z, w)
    try:
        return Rotation.from_quat([x / n, y / n, z / n, w / n]).as_matrix()
    except ValueError as exc:           # scipy's text alone would not say which field
        raise BadMessage(f"{what}: {exc}") from None


def pose_to_matrix(pose, what: str = "pose") -> np.ndarray:
    """4x4 ``T`` of a ``geometry_msgs/Pose``."""
    T = np.eye(4)
    T[:3, :3] = quaternion_to_matrix(pose.orientation, f"{what}.orientation")
    T[:3, 3] = _finite((pose.position.x, pose.position.y, pose.position.z), f"{what}.position")
    return T


def point_to_array(p, what: str = "point") -> np.ndarray:
    return np.array(_finite((p.x, p.y, p.z), what))


def matrix_to_quaternion_xyzw(R: np.ndarray) -> np.ndarray:
    """Quaternion (x, y, z, w) of a 3x3 rotation, in the core's sign convention (``w >= 0``)."""
    return matrix_to_quaternion(R)


def matrices_to_quaternions_xyzw(R: np.ndarray) -> np.ndarray:
    """(N, 3, 3) -> (N, 4) quaternions (x, y, z, w), in the core's sign convention (``w >= 0``)."""
    return matrix_to_quaternion(R)


def fill_pose(pose, T: np.ndarray, quat=None) -> None:
    """Write ``T`` into a ``geometry_msgs/Pose``."""
    q = matrix_to_quaternion_xyzw(T[:3, :3]) if quat is None else quat
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = (float(v) for v in q)


def fill_transform(tr, T: np.ndarray, quat) -> None:
    """Write ``T`` into a ``geometry_msgs/Transform`` (quaternion given, for batched conversion)."""
    tr.translation.x, tr.translation.y, tr.translation.z = (float(v) for v in T[:3, 3])
    tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w = (float(v) for v in quat)


def stamp_is_zero(stamp) -> bool:
    return int(stamp.sec) == 0 and int(stamp.nanosec) == 0


INT32_MAX = 2**31 - 1


def normalized_stamp(stamp) -> tuple[int, int] | None:
    """``(sec, nanosec)`` of a ``builtin_interfaces/Time``, None when it is zero ("now").

    ``nanosec`` of 1e9 or more is carried into ``sec`` (as ``rclcpp::Time`` reads such a message); a time
    before the epoch (negative ``sec``) or beyond the int32 range after the carry is a :class:`BadMessage`
    (``rclcpp::Time`` refuses negative times; tf2 would file it far in the past).
    """
    sec, nsec = int(stamp.sec), int(stamp.nanosec)
    if sec == 0 and nsec == 0:
        return None
    if sec < 0 or nsec < 0:
        raise BadMessage(f"stamp {sec} s {nsec} ns is before the epoch")
    sec, nsec = sec + nsec // 1_000_000_000, nsec % 1_000_000_000
    if sec > INT32_MAX:
        raise BadMessage(f"stamp {int(stamp.sec)} s {int(stamp.nanosec)} ns is beyond the int32 seconds range")
    return sec, nsec


def set_stamp(stamp, sec_nsec) -> None:
    stamp.sec, stamp.nanosec = int(sec_nsec[0]), int(sec_nsec[1])


def duration_seconds(d) -> float:
    return float(d.sec) + float(d.nanosec) * 1e-9


def joint_state_positions(msg, known=None, skip_nonfinite: bool = False):
    """``({name: position}, unknown names)`` of a ``sensor_msgs/JointState``.

    Raises :class:`BadMessage` when ``name`` and ``position`` differ in length or a name repeats, and when a
    position is not finite, unless ``skip_nonfinite``: then such joints are left out and the result is
    ``(values, unknown, non-finite names)`` (joint_state_broadcaster reports NaN for a joint without a
    position interface, e.g. a velocity-controlled wheel). ``known``: the names the model has; others are
    returned as unknown and left out (their positions are not checked).
    """
    names = list(msg.name)
    pos = list(msg.position)
    if len(names) != len(pos):
        raise BadMessage(f"joint state has {len(names)} names but {len(pos)} positions")
    if len(set(names)) != len(names):
        raise BadMessage("joint state names repeat")
    out, unknown, nonfinite = {}, [], []
    for n, v in zip(names, pos):
        if known is not None and n not in known:
            unknown.append(n)
            continue
        v = float(v)
        if not math.isfinite(v):
            if not skip_nonfinite:
                raise BadMessage(f"joint {n!r}: position {v} is not finite")
            nonfinite.append(n)
            continue
        out[n] = v
    return (out, unknown, nonfinite) if skip_nonfinite else (out, unknown)


def fill_joint_state(msg, names, q, stamp=None) -> None:
    msg.name = list(names)
    msg.position = [float(v) for v in q]
    msg.velocity = []
    msg.effort = []
    if stamp is not None:
        set_stamp(msg.header.stamp, stamp)


def configuration_from(mechanism, values: dict[str, float]) -> np.ndarray:
    """Full coordinates from reported ``{name: value}`` (home for those left out, couplings applied; a
    coupled joint reported keeps its value, as robot_state_publisher shows what is reported)."""
    try:
        return mechanism.configuration(values, measured=True)
    except InvalidConfiguration as exc:
        raise BadMessage(str(exc)) from None


_FLOAT_ONLY = frozenset([float])


class ReportedConfiguration:
    """:func:`configuration_from` for a caller that converts the same set of reported joints again and again
    (the state publisher, at the rate of joint_states): the names' coordinate indices are looked up once per
    distinct set of names, not per call. ``values`` must be what the joint-state cache keeps (finite floats of
    the model's coordinates); anything else -- an unknown name, a value that is not finite -- goes through
    :func:`configuration_from`, which names the problem."""

    def __init__(self, mechanism):
        self.mechanism = mechanism
        self._home = np.array(mechanism.home, dtype=float)
        self._index = mechanism.coordinate_indices
        self._coupled = bool(mechanism.couplings)
        self._names: tuple = ()
        self._at = np.zeros(0, dtype=np.intp)
        self._given: frozenset = frozenset()

    def __call__(self, values: dict[str, float]) -> np.ndarray:
        names = tuple(values)
        if names != self._names:
            if not all(n in self._index for n in names):
                return configuration_from(self.mechanism, values)
            self._at = np.array([self._index[n] for n in names], dtype=np.intp)
            self._names, self._given = names, frozenset(names)
        v = list(values.values())
        if not _FLOAT_ONLY.issuperset(map(type, v)):    # what the cache holds; else the checks of the full path
            return configuration_from(self.mechanism, values)
        q = self._home.copy()
        q[self._at] = v
        if self._coupled:
            q = self.mechanism.apply_couplings(q, skip=self._given)
        if not np.isfinite(q.dot(q)):           # finite q has a finite q . q below 1e154: else check fully
            return configuration_from(self.mechanism, values)
        return q


# ---------------------------------------------------------------------------------------------- constraints
#: ``mechanism_model_msgs/msg/KinematicConstraint.kind`` values
CONSTRAINT_KINDS = {0: "POSE", 1: "POSITION", 2: "ORIENTATION", 3: "POINT_AT", 4: "CONTACT"}


def pose_constraint_from(frame: str, pose, relative_to: str | None, what: str):
    """A core ``PoseConstraint`` on ``frame`` for a ``geometry_msgs/Pose`` target given in ``relative_to``."""
    return C.PoseConstraint(frame=frame, target=pose_to_matrix(pose, what), relative_to=relative_to)


def constraint_from(msg, frame: str, relative_to: str | None, what: str):
    """The core constraint of a ``mechanism_model_msgs/msg/KinematicConstraint`` whose frame names the node
    has already resolved (``frame``, ``relative_to``).

    ``weights`` (6: linear then angular; all zero = every axis) become the constraint's mask; POINT_AT and
    CONTACT take ``target_point`` and ``axis`` (a zero axis = +z), CONTACT's surface is the plane through
    ``target_point`` normal to ``axis``, the frame's z axis on it. Raises :class:`BadMessage` for an unknown
    kind, negative or non-finite weights and non-finite or zero-quaternion targets.
    """
    kind = CONSTRAINT_KINDS.get(int(msg.kind))
    if kind is None:
        raise BadMessage(f"{what}: unknown kind {int(msg.kind)}")
    w = np.array([float(v) for v in msg.weights], dtype=float)
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise BadMessage(f"{what}: weights must be finite and >= 0")
    mask = None if not np.any(w) else w
    common = dict(priority=int(msg.priority), name=f"{what}:{kind.lower()}:{frame}")
    if kind == "POSE":
        return C.PoseConstraint(frame=frame, target=pose_to_matrix(msg.target, f"{what}.target"),
                                relative_to=relative_to, mask=None if mask is None else tuple(mask), **common)
    if kind == "POSITION":
        p = point_to_array(msg.target.position, f"{what}.target.position")
        return C.PositionConstraint(frame=frame, target_xyz=tuple(p), relative_to=relative_to,
                                    mask=None if mask is None else tuple(mask[:3]), **common)
    if kind == "ORIENTATION":
        R = pose_to_matrix(msg.target, f"{what}.target")[:3, :3]
        return C.OrientationConstraint(frame=frame, target_rotation=R, relative_to=relative_to,
                                       mask=None if mask is None else tuple(mask[3:]), **common)
    point = point_to_array(msg.target_point, f"{what}.target_point")
    axis = point_to_array(msg.axis, f"{what}.axis")
    n = axis / np.linalg.norm(axis) if np.linalg.norm(axis) > 1e-12 else np.array([0.0, 0.0, 1.0])
    if kind == "POINT_AT":
        return C.PointAtConstraint(frame=frame, target_point=tuple(point), axis=tuple(n),
                                   relative_to=relative_to, **common)
    surface = np.eye(4)
    surface[:3, :3] = rotation_z_to(n)
    surface[:3, 3] = point
    return C.ContactConstraint(frame=frame, surface=surface, normal_axis=2, relative_to=relative_to, **common)


def residual_size(r) -> float:
    """Size of one constraint's final IK residual (the norm of its weighted residual vector)."""
    v = getattr(r, "vector", None)
    if v is not None:
        return float(np.linalg.norm(np.asarray(v, dtype=float)))
    try:
        return float(r)
    except (TypeError, ValueError):
        return float("nan")


def joint_trajectory_arrays(msg):
    """``(joint_names, times, positions, velocities, accelerations)`` of a ``trajectory_msgs/JointTrajectory``:
    times (N,) in seconds from start, the others (N, n) arrays in ``joint_names`` order (velocities and
    accelerations None when no point gives them). Values are not checked for finiteness here (the motor group
    does that with the limits). Raises :class:`BadMessage` for no joints or points, repeated names, a point
    whose positions do not match the joints, or velocities/accelerations given for some points only."""
    names = [str(n) for n in msg.joint_names]
    if not names:
        raise BadMessage("trajectory names no joints")
    if len(set(names)) != len(names):
        raise BadMessage("trajectory joint names repeat")
    points = list(msg.points)
    if not points:
        raise BadMessage("trajectory has no points")
    n = len(names)
    times = np.array([duration_seconds(p.time_from_start) for p in points], dtype=float)
    rows = {"positions": [], "velocities": [], "accelerations": []}
    for k, p in enumerate(points):
        for field in rows:
            v = list(getattr(p, field))
            if field == "positions" and len(v) != n:
                raise BadMessage(f"trajectory point {k} has {len(v)} positions for {n} joints")
            if v and len(v) != n:
                raise BadMessage(f"trajectory point {k} has {len(v)} {field} for {n} joints")
            rows[field].append(v)
    out = [np.array(rows["positions"], dtype=float)]
    for field in ("velocities", "accelerations"):
        given = [bool(r) for r in rows[field]]
        if any(given) and not all(given):
            raise BadMessage(f"trajectory gives {field} for some points only")
        out.append(np.array(rows[field], dtype=float) if all(given) else None)
    return names, times, out[0], out[1], out[2]


def fill_joint_trajectory(msg, point_cls, joint_names, times, positions, velocities=None,
                          accelerations=None) -> None:
    """Fill a ``trajectory_msgs/JointTrajectory`` (``point_cls``: its JointTrajectoryPoint class) from arrays
    as :func:`joint_trajectory_arrays` returns them (or a core ``JointTrajectory``'s fields)."""
    msg.joint_names = [str(n) for n in joint_names]
    points = []
    for k, t in enumerate(np.asarray(times, dtype=float)):
        p = point_cls(positions=[float(v) for v in positions[k]])
        if velocities is not None:
            p.velocities = [float(v) for v in velocities[k]]
        if accelerations is not None:
            p.accelerations = [float(v) for v in accelerations[k]]
        sec = int(math.floor(t))
        p.time_from_start.sec, p.time_from_start.nanosec = sec, int(round((t - sec) * 1e9))
        if p.time_from_start.nanosec >= 1_000_000_000:
            p.time_from_start.sec, p.time_from_start.nanosec = sec + 1, 0
        points.append(p)
    msg.points = points


#: visualization_msgs/Marker types of the primitive shapes
MARKER_CUBE, MARKER_SPHERE, MARKER_CYLINDER = 1, 2, 3


def fill_primitive_marker(marker, g) -> bool:
    """Type and scale (m) of a ``visualization_msgs/Marker`` for the primitive collision shape ``g`` (box,
    sphere; cylinder, cone and capsule drawn as the cylinder that bounds them); False for other kinds."""
    if isinstance(g, S.Box):
        marker.type = MARKER_CUBE
        marker.scale.x, marker.scale.y, marker.scale.z = g.x, g.y, g.z
    elif isinstance(g, S.Sphere):
        marker.type = MARKER_SPHERE
        marker.scale.x = marker.scale.y = marker.scale.z = 2 * g.radius
    elif isinstance(g, (S.Cylinder, S.Cone, S.Capsule)):
        marker.type = MARKER_CYLINDER
        marker.scale.x = marker.scale.y = 2 * g.radius
        marker.scale.z = g.length + (2 * g.radius if isinstance(g, S.Capsule) else 0.0)
    else:
        return False
    return True
