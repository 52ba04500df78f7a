"""Motor groups (CLARAty 004 section 13.2): which motor drives which joint, through which controller and
command interface, with which direction, gear ratio and limits.

A :class:`MotorGroup` is what one ros2_control controller commands: an ordered list of :class:`Motor`
objects (the controller's ``joints`` parameter, in that order), one controller kind
(:class:`ControllerKind`: a forward-command controller taking ``std_msgs/Float64MultiArray`` on
``<controller>/commands``, or a joint trajectory controller) and one command interface
(:class:`CommandInterface`). A :class:`MotorGroups` holds every group of a robot; one such definition
drives the commands, their limits, the watchdogs and the exported ``<ros2_control>`` block and
controller_manager YAML (:mod:`mechanism_model_core.io.ros2_control`).

Everything is in joint space and SI units, as the model: positions in rad (revolute) or m (prismatic),
velocities in rad/s or m/s, accelerations in rad/s^2 or m/s^2, efforts in N m or N. ``direction`` and
``gear`` map joint values to the motor side (:meth:`Motor.to_motor`), for drivers below ros2_control and
for the ``<transmission>`` elements of the export; controllers and commands stay in joint space.

**Safety rules** (nodes rely on them; the tests prove them):

* a command containing NaN or infinity is refused whole (:class:`InvalidCommand`), never clamped;
* every other command is clamped into the limits (:meth:`MotorGroup.clamp`, :meth:`MotorGroup.slew`) and
  the result reports each clamped value (:class:`ClampResult`), so a node can warn; the returned values
  never leave the limits;
* a trajectory is checked whole before it is sent (:meth:`MotorGroup.check_trajectory`) and refused with
  the list of violations: trajectories are not clamped, since a clamped trajectory is a different motion.

Example::

    from mechanism_model_core import load_model
    from mechanism_model_core.io.motor_groups import load_motor_groups

    rover = load_model("rocky8/rocky8_rover.xml")          # a library name or a path
    motors = load_motor_groups(rover)                      # the <Motor_Group>s of the model's files
    wheels = motors["wheel_controller"]                    # a velocity forward-command controller
    result = wheels.clamp([3.0, 9.0, 3.0, 3.0, 3.0, 3.0])  # rad/s, in wheels.joint_names order
    result.values      # array, within [-vmax, vmax]
    result.clamped     # [False, True, False, ...]
    result.describe()  # "left_middle_drive velocity 9 clamped to 3 ..."
    wheels.slew(previous, result.values, dt=0.02)  # also within the acceleration limit
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Iterator, Mapping, Sequence

import numpy as np

from ..errors import InvalidConfiguration, MechanismModelError, UnknownJoint


class InvalidCommand(MechanismModelError, ValueError):
    """A command that cannot be sent at all: NaN or infinite values, the wrong number of values, an
    unknown joint. Refused whole (never clamped)."""


class CommandInterface(str, Enum):
    """The ros2_control command interface a group's controller writes (``hardware_interface`` names)."""

    POSITION = "position"
    VELOCITY = "velocity"
    EFFORT = "effort"

    @classmethod
    def parse(cls, text) -> "CommandInterface":
        if isinstance(text, cls):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise ValueError(f"unknown command interface {text!r} (use position, velocity or effort)") \
                from None


class ControllerKind(str, Enum):
    """The kind of ros2_control controller that commands a group.

    ``forward_command``: ``forward_command_controller/ForwardCommandController``; it takes a
    ``std_msgs/msg/Float64MultiArray`` on ``/<controller>/commands`` with one value per joint in the group's
    order and writes it unchanged (steering positions, wheel velocities).
    ``joint_trajectory``: ``joint_trajectory_controller/JointTrajectoryController``; it takes
    ``trajectory_msgs/msg/JointTrajectory`` on ``/<controller>/joint_trajectory`` or the
    ``control_msgs/action/FollowJointTrajectory`` action ``/<controller>/follow_joint_trajectory``
    (arms, masts, legs).
    """

    FORWARD_COMMAND = "forward_command"
    JOINT_TRAJECTORY = "joint_trajectory"

    @property
    def plugin(self) -> str:
        """The controller's pluginlib type for controller_manager."""
        return {"forward_command": "forward_command_controller/ForwardCommandController",
                "joint_trajectory": "joint_trajectory_controller/JointTrajectoryController"}[self.value]

    @classmethod
    def parse(cls, text) -> "ControllerKind":
        if isinstance(text, cls):
            return text
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise ValueError(f"unknown controller kind {text!r} (use forward_command or joint_trajectory)") \
                from None


@dataclass(frozen=True)
class MotorLimits:
    """Limits of one joint as its motor may be commanded (joint space, SI units). ``inf`` is unbounded.

    ``lower``/``upper``: position [rad or m]; ``velocity``: largest speed [rad/s or m/s];
    ``acceleration``: largest acceleration [rad/s^2 or m/s^2]; ``effort``: largest torque or force [N m or N].
    """

    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    acceleration: float = math.inf
    effort: float = math.inf

    def __post_init__(self):
        for name in ("lower", "upper", "velocity", "acceleration", "effort"):
            v = float(getattr(self, name))
            if math.isnan(v):
                raise ValueError(f"motor limit {name} is NaN")
            object.__setattr__(self, name, v)
        if self.lower > self.upper:
            raise ValueError(f"lower position limit {self.lower} is above the upper limit {self.upper}")
        for name in ("velocity", "acceleration", "effort"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} limit must be positive, got {getattr(self, name)}")


@dataclass(frozen=True)
class Motor:
    """One motor: the joint it drives, its limits and its transmission.

    ``direction`` (+1 or -1) and ``gear`` (motor revolutions per joint revolution, > 0) give the motor
    position ``direction * gear * q + offset`` for joint position ``q`` [motor rad]; ``name`` is the
    actuator's name (default ``<joint>_motor``).
    """

    joint: str
    limits: MotorLimits = field(default_factory=MotorLimits)
    direction: int = 1
    gear: float = 1.0
    offset: float = 0.0
    name: str = ""

    def __post_init__(self):
        if self.direction not in (1, -1):
            raise ValueError(f"motor of {self.joint!r}: direction must be 1 or -1, got {self.direction!r}")
        gear = float(self.gear)
        if not math.isfinite(gear) or gear <= 0:
            raise ValueError(f"motor of {self.joint!r}: gear must be a positive number, got {self.gear!r}")
        object.__setattr__(self, "gear", gear)
        offset = float(self.offset)
        if not math.isfinite(offset):
            raise ValueError(f"motor of {self.joint!r}: offset must be finite, got {self.offset!r}")
        object.__setattr__(self, "offset", offset)
        if not self.name:
            object.__setattr__(self, "name", f"{self.joint}_motor")

    @property
    def reduction(self) -> float:
        """Signed ratio motor/joint (``direction * gear``): ros2_control's SimpleTransmission
        ``mechanical_reduction``."""
        return self.direction * self.gear

    def to_motor(self, value, interface: "CommandInterface | str" = CommandInterface.POSITION):
        """Joint-side ``value`` -> motor side: position ``r q + offset``, velocity ``r v``, effort
        ``tau / r`` (``r = direction * gear``)."""
        interface = CommandInterface.parse(interface)
        value = np.asarray(value, dtype=float)
        if interface is CommandInterface.POSITION:
            return self.reduction * value + self.offset
        if interface is CommandInterface.VELOCITY:
            return self.reduction * value
        return value / self.reduction

    def to_joint(self, value, interface: "CommandInterface | str" = CommandInterface.POSITION):
        """Inverse of :meth:`to_motor`."""
        interface = CommandInterface.parse(interface)
        value = np.asarray(value, dtype=float)
        if interface is CommandInterface.POSITION:
            return (value - self.offset) / self.reduction
        if interface is CommandInterface.VELOCITY:
            return value / self.reduction
        return value * self.reduction


@dataclass(frozen=True)
class LimitViolation:
    """One value outside a limit: ``quantity`` is ``position``, ``velocity``, ``acceleration`` or ``effort``;
    ``value`` what was asked, ``limit`` the bound it crossed; ``index`` the trajectory point (or None)."""

    joint: str
    quantity: str
    value: float
    limit: float
    index: int | None = None

    def __str__(self) -> str:
        where = f" at point {self.index}" if self.index is not None else ""
        return f"{self.joint} {self.quantity} {self.value:.6g} beyond limit {self.limit:.6g}{where}"


@dataclass(frozen=True)
class ClampResult:
    """A command after clamping: ``values`` (within every limit, in the group's joint order), ``clamped``
    (one flag per joint) and ``violations`` (what was asked and the limit that applied)."""

    values: np.ndarray
    clamped: np.ndarray
    violations: tuple[LimitViolation, ...] = ()

    @property
    def any_clamped(self) -> bool:
        return bool(np.any(self.clamped))

    def describe(self) -> str:
        """One line naming every clamped value, for a (rate-limited) warning."""
        return "; ".join(f"{v.joint} {v.quantity} {v.value:.6g} clamped to {v.limit:.6g}"
                         for v in self.violations)


def _readonly(a) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a


class MotorGroup:
    """The motors one controller commands, in the controller's joint order (CLARAty 13.2).

    ``name`` is the controller's name (``steering_controller``); ``controller`` its kind; ``interface`` the
    command interface of every joint of the group. Immutable; arrays :attr:`lower`, :attr:`upper`,
    :attr:`velocity`, :attr:`acceleration`, :attr:`effort` hold the limits in joint order.
    """

    def __init__(self, name: str, controller, interface, motors: Iterable[Motor]):
        self.name = str(name)
        self.controller = ControllerKind.parse(controller) if not isinstance(controller, ControllerKind) \
            else controller
        self.interface = CommandInterface.parse(interface) if not isinstance(interface, CommandInterface) \
            else interface
        self.motors: tuple[Motor, ...] = tuple(motors)
        if not self.motors:
            raise ValueError(f"motor group {self.name!r} has no motors")
        self.joint_names: tuple[str, ...] = tuple(m.joint for m in self.motors)
        if len(set(self.joint_names)) != len(self.joint_names):
            dup = sorted({j for j in self.joint_names if self.joint_names.count(j) > 1})
            raise ValueError(f"motor group {self.name!r} lists joint(s) {dup} twice")
        self._index = {j: i for i, j in enumerate(self.joint_names)}
        self.lower = _readonly([m.limits.lower for m in self.motors])
        self.upper = _readonly([m.limits.upper for m in self.motors])
        self.velocity = _readonly([m.limits.velocity for m in self.motors])
        self.acceleration = _readonly([m.limits.acceleration for m in self.motors])
        self.effort = _readonly([m.limits.effort for m in self.motors])

    # ------------------------------------------------------------------ structure
    def __len__(self) -> int:
        return len(self.motors)

    def __iter__(self) -> Iterator[Motor]:
        return iter(self.motors)

    def __contains__(self, joint) -> bool:
        return joint in self._index

    def __repr__(self) -> str:
        return (f"MotorGroup({self.name!r}, {self.controller.value}, {self.interface.value}, "
                f"{list(self.joint_names)})")

    def index(self, joint: str) -> int:
        """Position of ``joint`` in the controller's order."""
        try:
            return self._index[joint]
        except KeyError:
            raise UnknownJoint(joint, list(self.joint_names)) from None

    def motor(self, joint: str) -> Motor:
        return self.motors[self.index(joint)]

    def limits_of(self, interface: "CommandInterface | str | None" = None) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) bounds of a command on ``interface`` (default: the group's)."""
        interface = self.interface if interface is None else CommandInterface.parse(interface)
        if interface is CommandInterface.POSITION:
            return self.lower, self.upper
        if interface is CommandInterface.VELOCITY:
            return -self.velocity, self.velocity
        return -self.effort, self.effort

    # ------------------------------------------------------------------ commands
    def vector(self, values) -> np.ndarray:
        """``values`` as a float array in the group's joint order: a sequence of ``len(self)`` numbers, or a
        ``{joint: value}`` mapping naming every joint of the group (and no other). NaN or infinity anywhere,
        a wrong length or an unknown or missing joint raise :class:`InvalidCommand`."""
        if isinstance(values, Mapping):
            unknown = [k for k in values if k not in self._index]
            if unknown:
                raise InvalidCommand(f"motor group {self.name!r}: unknown joint(s) {unknown} "
                                     f"(joints: {list(self.joint_names)})")
            missing = [j for j in self.joint_names if j not in values]
            if missing:
                raise InvalidCommand(f"motor group {self.name!r}: no value for joint(s) {missing}")
            values = [values[j] for j in self.joint_names]
        try:
            v = np.array(values, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidCommand(f"motor group {self.name!r}: command is not a list of numbers") from None
        if v.shape != (len(self.motors),):
            raise InvalidCommand(f"motor group {self.name!r}: {v.size} values for {len(self.motors)} joints "
                                 f"({list(self.joint_names)})")
        bad = ~np.isfinite(v)
        if bad.any():
            names = [f"{self.joint_names[i]}={v[i]}" for i in np.flatnonzero(bad)]
            raise InvalidCommand(f"motor group {self.name!r}: non-finite command refused ({', '.join(names)})")
        return v

    def clamp(self, values, interface: "CommandInterface | str | None" = None) -> ClampResult:
        """Clamp a command on ``interface`` (default: the group's) into the position, velocity or effort
        limits. Raises :class:`InvalidCommand` for NaN/inf or a wrong shape (nothing is sent then)."""
        interface = self.interface if interface is None else CommandInterface.parse(interface)
        v = self.vector(values)
        lo, hi = self.limits_of(interface)
        out = np.minimum(np.maximum(v, lo), hi)
        clamped = out != v
        quantity = interface.value
        violations = tuple(LimitViolation(self.joint_names[i], quantity, float(v[i]), float(out[i]))
                           for i in np.flatnonzero(clamped))
        return ClampResult(out, clamped, violations)

    def slew(self, previous, target, dt: float,
             interface: "CommandInterface | str | None" = None) -> ClampResult:
        """The command to send ``dt`` seconds after ``previous`` on the way to ``target``: clamped into the
        limits (:meth:`clamp`) and then rate-limited -- a position command moves at most ``velocity * dt``
        from ``previous``, a velocity command changes by at most ``acceleration * dt``. Unbounded rates
        leave the command as clamped. ``previous`` is assumed within limits (a command this group made)."""
        interface = self.interface if interface is None else CommandInterface.parse(interface)
        dt = float(dt)
        if not math.isfinite(dt) or dt < 0:
            raise InvalidCommand(f"motor group {self.name!r}: time step must be finite and >= 0, got {dt}")
        first = self.clamp(target, interface)
        prev = self.vector(previous)
        if interface is CommandInterface.POSITION:
            rate, quantity = self.velocity, "velocity"
        elif interface is CommandInterface.VELOCITY:
            rate, quantity = self.acceleration, "acceleration"
        else:
            return first
        step = np.full(rate.shape, np.inf)
        finite = np.isfinite(rate)
        step[finite] = rate[finite] * dt
        # a target within one step is sent as it is (prev -/+ step may round past a target the step reaches)
        out = np.where(np.abs(first.values - prev) <= step, first.values,
                       np.clip(first.values, prev - step, prev + step))
        lo, hi = self.limits_of(interface)
        out = np.minimum(np.maximum(out, lo), hi)       # previous outside the limits must not leak through
        limited = out != first.values
        violations = list(first.violations)
        for i in np.flatnonzero(limited):
            delta = float(first.values[i] - prev[i])
            asked = delta / dt if abs(delta) < dt * 1e300 else math.copysign(math.inf, delta)
            violations.append(LimitViolation(self.joint_names[i], quantity, float(asked),
                                             float(math.copysign(rate[i], asked))))
        return ClampResult(out, first.clamped | limited, tuple(violations))

    def travel_time(self, start, target) -> float:
        """The shortest time (s) in which every joint can move from ``start`` to ``target`` (positions in
        joint order, rad or m) within its velocity limit: ``max |target - start| / velocity`` (0 for joints
        without a limit, and for no motion). What a one-point joint trajectory's ``time_from_start`` must be at
        least."""
        d = np.abs(self.vector(target) - self.vector(start))
        v = self.velocity
        bounded = np.isfinite(v) & (v > 0)
        return float(np.max(d[bounded] / v[bounded], initial=0.0))

    # ------------------------------------------------------------------ trajectories
    def check_trajectory(self, times, positions, velocities=None, accelerations=None,
                         joint_names: Sequence[str] | None = None, start=None,
                         tolerance: float = 1e-9) -> list[LimitViolation]:
        """Every limit a joint trajectory breaks (empty: it may be sent). Nothing is clamped.

        ``times``: (N,) seconds from the start, strictly increasing and > 0 for the first point unless
        ``start`` is None; ``positions`` (N, n) in ``joint_names`` order (default: the group's; a subset is
        allowed, as joint_trajectory_controller accepts); ``velocities`` / ``accelerations`` (N, n) or None.
        Checked: positions within [lower, upper]; given velocities and accelerations within their limits;
        the velocity implied by consecutive points (and from ``start``, the current positions in the same
        order, to the first point) within the velocity limit. A NaN/inf anywhere, a shape mismatch or
        times that do not increase raise :class:`InvalidCommand`."""
        names = list(self.joint_names if joint_names is None else joint_names)
        idx = []
        for j in names:
            if j not in self._index:
                raise InvalidCommand(f"motor group {self.name!r}: trajectory names unknown joint {j!r} "
                                     f"(joints: {list(self.joint_names)})")
            idx.append(self._index[j])
        if len(set(names)) != len(names):
            raise InvalidCommand(f"motor group {self.name!r}: trajectory names a joint twice")
        t = self._finite(times, "times").reshape(-1)
        n = len(names)
        P = self._finite(positions, "positions")
        if P.ndim != 2 or P.shape != (t.size, n):
            raise InvalidCommand(f"motor group {self.name!r}: positions must be {t.size} x {n}, got "
                                 f"{P.shape}")
        if t.size == 0:
            raise InvalidCommand(f"motor group {self.name!r}: empty trajectory")
        if np.any(np.diff(t) <= 0) or t[0] < 0:
            raise InvalidCommand(f"motor group {self.name!r}: time_from_start must be >= 0 and strictly "
                                 f"increasing")
        idx = np.asarray(idx)
        lo, hi = self.lower[idx], self.upper[idx]
        vmax, amax = self.velocity[idx], self.acceleration[idx]
        out: list[LimitViolation] = []

        def report(mask, values, limit, quantity):
            for k, i in zip(*np.nonzero(mask)):
                out.append(LimitViolation(names[i], quantity, float(values[k, i]), float(limit[i]), int(k)))

        report(P < lo - tolerance, P, lo, "position")
        report(P > hi + tolerance, P, hi, "position")
        for arr, limit, quantity in ((velocities, vmax, "velocity"), (accelerations, amax, "acceleration")):
            if arr is None or len(arr) == 0:
                continue
            A = self._finite(arr, quantity)
            if A.shape != P.shape:
                raise InvalidCommand(f"motor group {self.name!r}: {quantity} must be {P.shape}, got {A.shape}")
            report(np.abs(A) > limit * (1 + 1e-9) + tolerance, A, limit, quantity)
        # the average speed between consecutive points (and from the start) cannot exceed the limit
        Q = P if start is None else np.vstack([self._finite(start, "start").reshape(1, n), P])
        T = t if start is None else np.concatenate([[0.0], t])
        if len(Q) > 1:
            dt = np.diff(T)
            ok = dt > 0
            if start is not None and not ok[0] and np.any(np.abs(Q[1] - Q[0]) > tolerance):
                for i in np.flatnonzero(np.abs(Q[1] - Q[0]) > tolerance):
                    out.append(LimitViolation(names[i], "velocity", math.inf, float(vmax[i]), 0))
            speed = np.zeros_like(Q[1:])
            speed[ok] = np.abs(np.diff(Q, axis=0)[ok]) / dt[ok, None]
            over = speed > vmax * (1 + 1e-9) + tolerance
            offset = 0 if start is None else -1
            for k, i in zip(*np.nonzero(over)):
                out.append(LimitViolation(names[i], "velocity", float(speed[k, i]), float(vmax[i]),
                                          int(k + 1 + offset)))
        return out

    def _finite(self, values, what) -> np.ndarray:
        try:
            a = np.array(values, dtype=float)
        except (TypeError, ValueError):
            raise InvalidCommand(f"motor group {self.name!r}: {what} are not numbers") from None
        if not np.all(np.isfinite(a)):
            raise InvalidCommand(f"motor group {self.name!r}: non-finite {what} refused")
        return a


class MotorGroups(Mapping):
    """Every motor group of a robot, by controller name, in definition order; each joint in at most one
    group. ``hardware`` is the ros2_control hardware plugin (``mock_components/GenericSystem`` unless the
    definition says otherwise) and ``hardware_parameters`` its ``<param>`` values; ``update_rate`` [Hz] the
    controller_manager's."""

    def __init__(self, groups: Iterable[MotorGroup] = (), hardware: str = "mock_components/GenericSystem",
                 hardware_parameters: Mapping[str, str] | None = None, update_rate: int = 100,
                 source: str | None = None):
        self._groups: dict[str, MotorGroup] = {}
        self._by_joint: dict[str, MotorGroup] = {}
        for g in groups:
            if g.name in self._groups:
                raise ValueError(f"two motor groups named {g.name!r}")
            for j in g.joint_names:
                if j in self._by_joint:
                    raise ValueError(f"joint {j!r} is in motor groups {self._by_joint[j].name!r} and "
                                     f"{g.name!r}; a joint has one motor")
                self._by_joint[j] = g
            self._groups[g.name] = g
        self.hardware = str(hardware)
        self.hardware_parameters = dict(hardware_parameters or {})
        self.update_rate = int(update_rate)
        if self.update_rate <= 0:
            raise ValueError(f"update_rate must be a positive number of Hz, got {update_rate}")
        self.source = source

    def __getitem__(self, name: str) -> MotorGroup:
        try:
            return self._groups[name]
        except KeyError:
            raise KeyError(f"no motor group {name!r} (groups: {list(self._groups)})") from None

    def __iter__(self):
        return iter(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def __repr__(self) -> str:
        return f"MotorGroups({list(self._groups.values())})"

    @property
    def groups(self) -> tuple[MotorGroup, ...]:
        return tuple(self._groups.values())

    @property
    def joint_names(self) -> list[str]:
        """Every commanded joint, group by group."""
        return [j for g in self._groups.values() for j in g.joint_names]

    def group_of(self, joint: str) -> MotorGroup:
        """The group whose controller commands ``joint``."""
        try:
            return self._by_joint[joint]
        except KeyError:
            raise UnknownJoint(joint, list(self._by_joint)) from None

    def of_kind(self, controller) -> list[MotorGroup]:
        kind = ControllerKind.parse(controller) if not isinstance(controller, ControllerKind) else controller
        return [g for g in self._groups.values() if g.controller is kind]

    def with_hardware(self, plugin: str, parameters: Mapping[str, str] | None = None) -> "MotorGroups":
        """A copy driving another hardware plugin (e.g. a robot's own ``SystemInterface``)."""
        return MotorGroups(self.groups, plugin, parameters if parameters is not None else {},
                           self.update_rate, self.source)


def group_trajectories(groups: Iterable[MotorGroup], times, joint_names: Sequence[str], positions, velocities,
                       accelerations, start: Mapping[str, float]) -> tuple[dict | None, str]:
    """A trajectory over some joints (``joint_names``: the columns of the (N, k) ``positions``, ``velocities``
    and ``accelerations``, at ``times`` (N,) s from now) as each motor group receives it: over all of the
    group's joints, those not in ``joint_names`` held at their ``start`` position (rad or m) with zero velocity
    and acceleration, and each group's whole trajectory checked against its limits from ``start`` (``{joint:
    position}``, where the joints are now; :meth:`MotorGroup.check_trajectory`). Returns ``({group name:
    (joint names, positions, velocities, accelerations)}, "")``, or ``(None, reason)`` at the first group whose
    trajectory leaves its limits or has a joint without a finite start (nothing is clamped: a controller is
    sent all groups or none)."""
    col = {j: k for k, j in enumerate(joint_names)}
    P, V, A = (np.asarray(x, dtype=float) for x in (positions, velocities, accelerations))
    n_points = len(times)
    out = {}
    for g in groups:
        names = list(g.joint_names)
        s = np.array([float(start.get(n, math.nan)) for n in names])
        if not np.all(np.isfinite(s)):
            return None, f"{g.name}: joints without joint_states"
        Q = np.repeat(s[None], n_points, axis=0)
        Vg, Ag = np.zeros((n_points, len(names))), np.zeros((n_points, len(names)))
        for k, n in enumerate(names):
            c = col.get(n)
            if c is not None:
                Q[:, k], Vg[:, k], Ag[:, k] = P[:, c], V[:, c], A[:, c]
        try:
            violations = g.check_trajectory(times, Q, Vg, Ag, joint_names=names, start=s)
        except InvalidCommand as exc:
            return None, str(exc)
        if violations:
            more = f" (and {len(violations) - 3} more)" if len(violations) > 3 else ""
            return None, f"{g.name}: " + "; ".join(str(v) for v in violations[:3]) + more
        out[g.name] = (names, Q, Vg, Ag)
    return out, ""


def motor_limits_for(joint, *, lower=None, upper=None, velocity=None, acceleration=None,
                     effort=None) -> MotorLimits:
    """The limits of a motor on ``joint`` (a :class:`~mechanism_model_core.joints.Joint`): each value given
    here (None: not given) narrows the joint's own limit from the model; a value wider than the model's
    raises ValueError (a motor group cannot drive a joint past its mechanical limits)."""
    def pick(given, model, what, lower_bound=False):
        if given is None:
            return model
        given = float(given)
        if math.isnan(given):
            raise ValueError(f"{what} is NaN")
        if (given < model) if lower_bound else (given > model):
            raise ValueError(f"{what} {given:g} is wider than the joint's own limit {model:g} in the model")
        return given

    if joint.dof != 1:
        raise InvalidConfiguration(f"joint {joint.name!r} has {joint.dof} coordinates; a motor drives a "
                                   f"single-coordinate joint")
    return MotorLimits(lower=pick(lower, joint.lower[0], "lower position limit", lower_bound=True),
                       upper=pick(upper, joint.upper[0], "upper position limit"),
                       velocity=pick(velocity, joint.velocity, "velocity limit"),
                       acceleration=math.inf if acceleration is None else float(acceleration),
                       effort=pick(effort, joint.effort, "effort limit"))
