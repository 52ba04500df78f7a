"""Wheeled locomotion (CLARAty 004 section 12: ``Wheeled_Locomotor_Model``): steering and wheel rates from a
body motion, odometry from wheel measurements, rocker-bogie suspension settled on terrain.

Nothing here is written for one rover: every number comes from forward kinematics of the mechanism at the
state passed in, and from a short **mobility description** (:class:`~.mobility.MobilitySpec`) naming the body frame and,
per wheel, its drive joint, steering joint (if any), radius and contact frame, plus the suspension joints.

Frames, units, signs
--------------------
* Body twists are ``(vx, vy, wz)`` in m/s and rad/s, in the **body frame** (REP-103: x forward, y left,
  z up), for its origin: exactly what ``geometry_msgs/Twist`` on ``cmd_vel`` means.
* Steering angles are the steering joints' coordinates (rad); wheel rates are the drive joints' rates
  (rad/s). A positive drive rate moves the body along the wheel's rolling direction, which is derived
  from the drive axis and the contact point, so mirrored or reversed joint axes need no special case.
* Flat-ground driving uses the wheel contact points and steering axes projected on the body's x-y plane at
  the suspension state given (``q``), steering joints at zero.

Modes
-----
``auto`` (any body twist; an instantaneous centre of rotation anywhere), ``ackermann`` (arc: ``vy``
replaced so that the centre of rotation lies on the turn centre's line ``x = cx``, the fixed wheels' axle or
the middle of the wheel base: double Ackermann when every wheel steers), ``crab`` (``wz`` dropped: every wheel
parallel), ``turn_in_place`` (``vx``, ``vy`` replaced: a rotation about the turn centre), ``skid`` (steering
at zero, sideways slip of the wheels accepted: skid steer); :meth:`WheeledLocomotorModel.turn_centre`.
:func:`arc_twist`, :func:`crab_twist`, :func:`point_turn_twist` and :func:`icr_twist` build twists for
explicit commands.

Drive policy
------------
:meth:`WheeledLocomotorModel.command` takes a ``cmd_vel`` through the description's
:class:`~.drive_policy.DrivePolicy` first (turn-radius limits measured from the turn centre, straight
deadband, ``literal``/``intuitive`` interpretation, zero speed as turn in place, steer only or stop, turn in
place from ``angular.y``); :meth:`WheeledLocomotorModel.drive` is the exact kinematics alone.

Limits
------
A wheel whose steering angle is outside its joint range turns by pi and drives backwards; where neither
fits the command is refused with a reason. Wheel rates beyond their limits scale the whole twist down
(steering, hence curvature, unchanged). With ``steer_before_drive`` wheel rates stay zero until every
steering joint is within ``steering_tolerance`` of its target.

Odometry
--------
:meth:`WheeledLocomotorModel.odometry_twist` is the least-squares body twist from measured wheel rates and
steering angles (each wheel's contact velocity, 2 equations per wheel), with the RMS residual (m/s) as a
slip indicator; :class:`Odometry` integrates twists exactly along arcs (SE(2)), in 3-D when an attitude
(roll, pitch: from settling or an IMU) is given.

Terrain
-------
:meth:`WheeledLocomotorModel.settle` places the body (z, roll, pitch) and the suspension on a terrain for a
given x, y, yaw so that every wheel rim touches it (coupled joints such as a differential stay coupled): a
reduced Newton solver in those unknowns only (:mod:`~mechanism_model_core.locomotion.settling`: closed-form
rim contacts on planes, Newton on the rim angle on height fields, the previous pose's rim angles and its
terrain sensitivity as hints along a path), or ``solver="ik"``: :func:`~mechanism_model_core.ik.solve_ik`
with one :class:`WheelTerrainContact` constraint per wheel.
:meth:`WheeledLocomotorModel.slope_drive` gives the steering angles and wheel rates that move the settled
rover with a commanded body twist without slip (section 12.2): the derivation is in its docstring.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import InvalidConfiguration, UnknownJoint
from ..joints import JointType
from ..kinematics import forward_kinematics
from ..jacobians import jacobian
from ..spatial import skew, wrap_angle
from . import lift_off, wheeled_terrain
from .drive_policy import DrivePolicy, interpret
from .mobility import MODES, MobilityError, MobilitySpec, WheelSpec, mobility_for
from .planar_motion import (Odometry, arc_twist, crab_twist, icr_twist, integrate_planar,  # noqa: F401
                            point_turn_twist)           # (re-exported: their home was this module)
from .wheeled_terrain import SettledPose, WheelTerrainContact  # noqa: F401  (re-exported, as above)

__all__ = ["WheelGeometry", "DriveCommand", "WheeledLocomotorModel", "Odometry", "WheelTerrainContact",
           "SettledPose", "arc_twist", "crab_twist", "point_turn_twist", "icr_twist", "integrate_planar"]


_EPS_SPEED = 1e-9


# ------------------------------------------------------------------------------------------ results
@dataclass(frozen=True)
class WheelGeometry:
    """The wheels seen from the body frame at one suspension state, steering at zero (arrays, wheel order):
    ``contact`` (N, 3) contact points (m), ``pivot`` (N, 3) points of the steering axes, ``steer_sign`` (N,)
    +1/-1 as the steering axis points up/down (0: no steering), ``roll`` (N, 2) unit rolling directions in
    the x-y plane for a positive drive rate, ``radius`` (N,)."""

    contact: np.ndarray
    pivot: np.ndarray
    steer_sign: np.ndarray
    roll: np.ndarray
    radius: np.ndarray


@dataclass(frozen=True)
class DriveCommand:
    """Steering targets (rad, steered wheels; NaN for others) and wheel rates (rad/s), in wheel order.

    ``ok`` False means refused: ``reason`` says why and the rates are zero, steering held (``steering`` is
    the current steering where known). ``twist`` is the body twist actually commanded (after the mode, the
    drive policy and the rate-limit scaling ``scale`` <= 1); ``rolling_backward`` (N,) marks steered wheels
    that point against their contact's motion (steering = the motion's heading + pi, a negative rate): the
    steering range or the nearer angle chose it, e.g. every wheel when backing up straight; ``waiting`` is True
    when rates are held at zero for the steering to arrive; ``slip`` (N,) m/s the sideways slip accepted
    (non-steered wheels in skid steer); ``steer_only``: the drive policy steers the wheels for an arc at zero
    speed (rates zero); ``note``: what the drive policy changed in the command (empty: nothing)."""

    steering: np.ndarray
    rates: np.ndarray
    twist: np.ndarray
    ok: bool = True
    reason: str = ""
    scale: float = 1.0
    rolling_backward: np.ndarray | None = None
    waiting: bool = False
    slip: np.ndarray | None = None
    qdot: np.ndarray | None = None
    steer_only: bool = False
    note: str = ""

    # ``qdot`` (slope driving only): the full coordinate rates of the motion (body, suspension), scaled

    @property
    def reversed(self) -> np.ndarray | None:
        """Deprecated name of :attr:`rolling_backward` (it never meant "turned by pi" from any fixed zero)."""
        return self.rolling_backward

    def steering_by_joint(self, model: "WheeledLocomotorModel") -> dict:
        return {w.steering_joint: float(a) for w, a in zip(model.wheels, self.steering) if w.steering_joint}

    def rates_by_joint(self, model: "WheeledLocomotorModel") -> dict:
        return {w.drive_joint: float(r) for w, r in zip(model.wheels, self.rates)}




def _geometry_rows(g: WheelGeometry) -> dict:
    """Plain-float rows of a geometry (cached on it) for the per-command loop."""
    rows = g.__dict__.get("_rows")
    if rows is None:
        rows = {"p": [tuple(map(float, p[:2])) for p in g.contact],
                "pivot": [tuple(map(float, p[:2])) for p in g.pivot],
                "f": [tuple(map(float, f)) for f in g.roll], "sign": [float(v) for v in g.steer_sign],
                "r": [float(v) for v in g.radius],
                "offset": bool(np.any(np.abs(g.contact[:, :2] - g.pivot[:, :2]) > 1e-9))}
        object.__setattr__(g, "_rows", rows)
    return rows


def _odometry_matrix(pts) -> np.ndarray:
    """Rows ``[1, 0, -y; 0, 1, x]`` per contact point: contact velocity = A (vx, vy, wz)."""
    A = np.zeros((2 * len(pts), 3))
    for i, (x, y) in enumerate(pts):
        A[2 * i, 0] = 1.0
        A[2 * i, 2] = -y
        A[2 * i + 1, 1] = 1.0
        A[2 * i + 1, 2] = x
    return A


# -------------------------------------------------------------------------------------------- model
class WheeledLocomotorModel:
    """``Wheeled_Locomotor_Model`` (CLARAty 12): a mechanism plus its :class:`~.mobility.MobilitySpec` (default:
    :func:`~.mobility.mobility_for`). Validates the description against the mechanism at construction (errors name the
    description's file) and holds only constants; every method takes the state it needs."""

    def __init__(self, mechanism, mobility: MobilitySpec | Mapping | None = None, *, max_rates=None):
        """``mobility``: a :class:`~.mobility.MobilitySpec`, its mapping form, or None for the model's own
        (:func:`~.mobility.mobility_for`); a mobility YAML file is read by
        :func:`mechanism_model_core.io.mobility_yaml.load_mobility`. ``max_rates``: wheel-rate limits (rad/s,
        wheel order or ``{drive joint: limit}``, e.g. a motor group's velocity limits); each wheel takes the
        smallest of it, its ``max_rate`` and its joint's."""
        if mobility is None:
            mobility = mobility_for(mechanism)
        elif isinstance(mobility, Mapping):
            mobility = MobilitySpec.from_dict(mobility)
        self.mechanism = mechanism
        self.spec = mobility
        self.wheels: tuple[WheelSpec, ...] = mobility.wheels
        self._validate()
        m = mechanism
        self.n = len(self.wheels)
        self.names = [w.name for w in self.wheels]
        self._drive_idx = np.array([m.coordinate_index(w.drive_joint) for w in self.wheels])
        self.steered = np.array([w.steering_joint is not None for w in self.wheels])
        self._steer_idx = np.array([m.coordinate_index(w.steering_joint) if w.steering_joint else -1
                                    for w in self.wheels])
        lo = np.full(self.n, -np.inf)
        hi = np.full(self.n, np.inf)
        for i, w in enumerate(self.wheels):
            if w.steering_joint:
                j = m.joint(w.steering_joint)
                lo[i], hi[i] = j.lower[0], j.upper[0]
        self.steering_lower, self.steering_upper = lo, hi
        self.max_rates = np.array([min(w.max_rate if w.max_rate is not None else math.inf,
                                       m.joint(w.drive_joint).velocity) for w in self.wheels], dtype=float)
        if max_rates is not None:
            extra = np.array([max_rates.get(w.drive_joint, math.inf) for w in self.wheels], dtype=float) \
                if isinstance(max_rates, Mapping) else np.broadcast_to(np.asarray(max_rates, float), (self.n,))
            if np.any(~(extra > 0)):
                raise self._err("max_rates must be > 0 rad/s")
            self.max_rates = np.minimum(self.max_rates, extra)
        self._steered_list = [bool(v) for v in self.steered]
        self._lo_list, self._hi_list = [float(v) for v in lo], [float(v) for v in hi]
        self._max_rate_list = [float(v) for v in self.max_rates]
        self.home = m.configuration()
        self.home_geometry = self.geometry(self.home)
        self.centre = self.turn_centre()
        try:
            self.policy = self.spec.policy
        except ValueError as exc:
            raise self._err(str(exc)) from None
        self._check_modes()

    # ---------------------------------------------------------------------------------- validation
    def _err(self, msg):
        return MobilityError(msg, self.spec.source, self.spec.line_for(msg))

    def _validate(self):
        m, s = self.mechanism, self.spec
        if not (s.body_frame == m.ground or m.has_frame(s.body_frame)):
            raise self._err(f"body_frame {s.body_frame!r} is not a frame of {m.name!r}")
        seen = set()
        for w in self.wheels:
            if w.drive_joint in seen:
                raise self._err(f"wheel {w.name!r}: drive joint {w.drive_joint!r} used twice")
            seen.add(w.drive_joint)
            for what, jn in (("drive_joint", w.drive_joint), ("steering_joint", w.steering_joint)):
                if jn is None:
                    continue
                try:
                    j = m.joint(jn)
                except UnknownJoint:
                    raise self._err(f"wheel {w.name!r}: {what} {jn!r} is not a joint of {m.name!r}") from None
                if j.type not in (JointType.REVOLUTE, JointType.CONTINUOUS):
                    raise self._err(f"wheel {w.name!r}: {what} {jn!r} is {j.type.value}, not revolute")
                if j.coupling is not None:
                    raise self._err(f"wheel {w.name!r}: {what} {jn!r} is coupled to other joints")
            if w.contact_frame is not None and not m.has_frame(w.contact_frame):
                raise self._err(f"wheel {w.name!r}: contact_frame {w.contact_frame!r} is not a frame of {m.name!r}")
            if w.steering_joint is not None:
                wheel_body = m.child_body_of_joint(w.drive_joint)
                steer_body = m.child_body_of_joint(w.steering_joint)
                if steer_body not in m.path_to_ground(wheel_body):
                    raise self._err(f"wheel {w.name!r}: steering joint {w.steering_joint!r} does not carry "
                                    f"drive joint {w.drive_joint!r}")
        for jn in s.suspension_joints:
            try:
                m.joint(jn)
            except UnknownJoint:
                raise self._err(f"suspension joint {jn!r} is not a joint of {m.name!r}") from None
        if not s.steering_tolerance > 0:
            raise self._err("steering_tolerance must be > 0 rad")

    def _check_modes(self):
        """Every declared mode must be possible with the steering ranges (else an error at load)."""
        g = self.home_geometry
        probes = {"turn_in_place": [point_turn_twist(0.1)],
                  "crab": [crab_twist(0.1, a) for a in (-self.spec.max_crab_angle, self.spec.max_crab_angle)],
                  "ackermann": ([arc_twist(0.1, r) for r in (self.spec.min_turn_radius, -self.spec.min_turn_radius)]
                                if self.spec.min_turn_radius > 0 else [arc_twist(0.1, math.inf)]),
                  "skid": [arc_twist(0.1, math.inf)], "auto": [arc_twist(0.1, math.inf)]}
        for mode in self.spec.modes:
            for t in probes[mode]:
                cmd = self.drive(t, mode=mode, geometry=g, check_limits=True)
                if not cmd.ok:
                    raise self._err(f"mode {mode!r} is impossible for {self.mechanism.name!r}: {cmd.reason}")

    # ------------------------------------------------------------------------------------ geometry
    def configuration(self, q=None) -> np.ndarray:
        return self.mechanism.configuration(q) if q is not None else self.home.copy()

    def steering_of(self, q) -> np.ndarray:
        """Steering angles (rad) of the wheels in ``q`` (NaN for wheels without steering)."""
        q = np.asarray(q, dtype=float)
        return np.where(self.steered, q[np.maximum(self._steer_idx, 0)], np.nan)

    def geometry(self, q=None) -> WheelGeometry:
        """Wheel geometry in the body frame at ``q`` (suspension as given, steering at zero)."""
        m = self.mechanism
        q = self.configuration(q).copy()
        q[self._steer_idx[self.steered]] = 0.0
        fk = forward_kinematics(m, q)
        B = self.spec.body_frame
        T_b = np.linalg.inv(fk.pose(B)) if B != m.ground else np.eye(4)
        contact = np.empty((self.n, 3))
        pivot = np.empty((self.n, 3))
        sign = np.zeros(self.n)
        roll = np.empty((self.n, 2))
        for i, w in enumerate(self.wheels):
            wb = m.child_body_of_joint(w.drive_joint)
            Tw = T_b @ fk.pose(wb)
            c = Tw[:3, 3]
            a = Tw[:3, :3] @ m.joint(w.drive_joint).axis
            if w.contact_frame is not None:
                p = (T_b @ fk.pose(w.contact_frame))[:3, 3]
            else:
                p = c - np.array([0.0, 0.0, w.radius])
            contact[i] = p
            f = np.cross(a, c - p)
            nf = np.linalg.norm(f[:2])
            if nf < 1e-9:
                raise self._err(f"wheel {w.name!r}: its drive axis does not roll it on the body's x-y plane")
            roll[i] = f[:2] / nf
            if w.steering_joint:
                sb = m.child_body_of_joint(w.steering_joint)
                Ts = T_b @ fk.pose(sb)
                s = Ts[:3, :3] @ m.joint(w.steering_joint).axis
                if abs(s[2]) < 0.9:
                    raise self._err(f"wheel {w.name!r}: steering axis {np.round(s, 3).tolist()} is not "
                                    f"near the body's z axis")
                sign[i] = math.copysign(1.0, s[2])
                pivot[i] = Ts[:3, 3]
            else:
                pivot[i] = p
        return WheelGeometry(contact, pivot, sign, roll, np.array([w.radius for w in self.wheels]))

    # --------------------------------------------------------------------------------------- drive
    def turn_centre(self) -> tuple:
        """The turn centre ``(cx, cy)`` (m, body frame, :mod:`.drive_policy`): arcs are measured from it,
        turns in place go round it, and an Ackermann arc's centre of rotation lies on its line ``x = cx``.
        ``cx``: the description's ``turn_centre_x`` if given; else the common axle of the wheels that cannot
        steer when they share one (the middle axle of a six-wheeler with fixed middle wheels: the only line
        where no wheel slides); else (all wheels steer) the middle of the wheel base, half-way between the
        front-most and rear-most contacts at home; a skid-steer rover with no common axle keeps the body
        origin's 0. ``cy``: half-way across the track (extreme contacts at home). So the choice of the body
        frame's origin does not move it."""
        g = self.home_geometry
        cy = float(0.5 * (np.max(g.contact[:, 1]) + np.min(g.contact[:, 1])))
        if self.spec.turn_centre_x is not None:
            return float(self.spec.turn_centre_x), cy
        fixed = [i for i in range(self.n) if not self.steered[i]]
        if fixed:
            xs = g.contact[fixed, 0]
            if np.ptp(xs) < 1e-6 and np.all(np.abs(g.roll[fixed, 1]) < 1e-6):
                return float(np.mean(xs)), cy
            return 0.0, cy
        return float(0.5 * (np.max(g.contact[:, 0]) + np.min(g.contact[:, 0]))), cy

    def mode_twist(self, twist, mode: str = "auto") -> np.ndarray:
        """The twist a mode keeps of ``(vx, vy, wz)`` (module docstring): ``ackermann`` puts the centre of
        rotation on the turn centre's line, ``turn_in_place`` on the turn centre (:meth:`turn_centre`)."""
        t = np.array(twist, dtype=float).reshape(-1)
        if t.shape != (3,):
            raise InvalidConfiguration("a body twist is (vx, vy, wz)")
        if mode in ("auto", "skid"):
            return t
        cx, cy = self.centre
        if mode == "ackermann":                 # the centre of rotation on the turn centre's line x = cx
            return np.array([t[0], -t[2] * cx, t[2]])
        if mode == "crab":
            return np.array([t[0], t[1], 0.0])
        if mode == "turn_in_place":             # about the turn centre
            return np.array([t[2] * cy, -t[2] * cx, t[2]])
        raise InvalidConfiguration(f"unknown drive mode {mode!r}; modes are {MODES}")

    def drive(self, twist, *, mode: str = "auto", steering=None, geometry: WheelGeometry | None = None,
              check_limits: bool = True, steer_before_drive: bool | None = None) -> DriveCommand:
        """Steering targets and wheel rates for the body ``twist`` ``(vx, vy, wz)`` in ``mode``.

        ``steering``: the current steering angles (wheel order, rad; NaN/ignored for unsteered wheels) --
        used to keep wheels with no speed where they are, to prefer the nearer of two feasible angles, and
        for steering-before-driving. ``geometry``: from :meth:`geometry` (home when None)."""
        g = self.home_geometry if geometry is None else geometry
        t = self.mode_twist(twist, mode)
        vx, vy, wz = float(t[0]), float(t[1]), float(t[2])
        if not (math.isfinite(vx) and math.isfinite(vy) and math.isfinite(wz)):
            return self._refuse(steering, t, "the twist has NaN or infinite components")
        n = self.n
        if steering is None:
            cur = [0.0] * n
        else:
            cur = [float(c) if (st and c == c) else 0.0 for c, st in zip(steering, self._steered_list)]
        skid = mode == "skid"
        sb = self.spec.steer_before_drive if steer_before_drive is None else steer_before_drive
        rows = _geometry_rows(g)
        # plain floats: for a handful of wheels this is several times faster than numpy's per-call overhead
        target = [math.nan] * n
        rates = [0.0] * n
        flip = [False] * n
        slip = [0.0] * n
        speed_max = 0.0
        pts = rows["p"]
        for _ in range(3 if rows["offset"] else 1):
            for i in range(n):
                px, py = pts[i]
                fx, fy = rows["f"][i]
                ux, uy = vx - wz * py, vy + wz * px               # contact velocity (m/s)
                sp = math.hypot(ux, uy)
                speed_max = max(speed_max, sp)
                cross = fx * uy - fy * ux
                along = fx * ux + fy * uy
                r = rows["r"][i]
                if skid or not self._steered_list[i]:
                    target[i] = 0.0 if self._steered_list[i] else math.nan
                    rates[i] = along / r
                    slip[i] = abs(cross)
                    continue
                if sp < _EPS_SPEED:
                    target[i], rates[i] = cur[i], 0.0
                    continue
                delta = rows["sign"][i] * math.atan2(cross, along)
                lo, hi = (self._lo_list[i], self._hi_list[i]) if check_limits else (-math.inf, math.inf)
                best = None
                for k, d in enumerate((delta, delta - math.pi, delta + math.pi, delta - 2 * math.pi,
                                       delta + 2 * math.pi)):
                    if lo - 1e-9 <= d <= hi + 1e-9:
                        cost = abs(d - cur[i])
                        if best is None or cost < best[0] - 1e-12:
                            best = (cost, d, k in (1, 2))
                if best is None:
                    return self._refuse(steering, t,
                                        f"wheel {self.names[i]}: steering {math.degrees(delta):.1f} deg (or "
                                        f"{math.degrees(wrap_angle(delta + math.pi)):.1f} deg reversed) is outside "
                                        f"[{math.degrees(lo):.1f}, {math.degrees(hi):.1f}] deg")
                target[i], flip[i] = best[1], best[2]
                rates[i] = (-sp if flip[i] else sp) / r
            if not rows["offset"]:
                break
            # contact points off their steering axis move with the steering: follow them
            pts = []
            for i in range(n):
                th = rows["sign"][i] * (target[i] if self._steered_list[i] and target[i] == target[i] else 0.0)
                (cx, cy), (ox, oy) = rows["p"][i], rows["pivot"][i]
                dx, dy = cx - ox, cy - oy
                c, s_ = math.cos(th), math.sin(th)
                pts.append((ox + c * dx - s_ * dy, oy + s_ * dx + c * dy))
        if not (skid or self.spec.skid):
            lim = 1e-6 * max(1.0, speed_max)
            for i in range(n):
                if not self._steered_list[i] and slip[i] > lim:
                    return self._refuse(steering, t, f"wheel {self.names[i]} cannot steer and would slide "
                                                     f"sideways at {slip[i]:.3g} m/s (the centre of rotation "
                                                     f"must lie on its axle line; use mode 'skid')")
        scale = 1.0
        ratio = max((abs(rt) / mr for rt, mr in zip(rates, self._max_rate_list)), default=0.0)
        if ratio > 1.0:
            scale = 1.0 / ratio
            rates = [rt * scale for rt in rates]
            slip = [sl * scale for sl in slip]
            t = t * scale
        waiting = False
        if sb and steering is not None:
            tol = self.spec.steering_tolerance
            if any(st and abs(tg - c) > tol for st, tg, c in zip(self._steered_list, target, cur)):
                waiting = True
                rates = [0.0] * n
        return DriveCommand(np.array(target), np.array(rates), t, True, "", scale, np.array(flip), waiting,
                            np.array(slip))

    def command(self, twist, angular_y: float = 0.0, *, mode: str = "auto", policy: DrivePolicy | None = None,
                steering=None, geometry: WheelGeometry | None = None, check_limits: bool = True,
                steer_before_drive: bool | None = None) -> DriveCommand:
        """A ``cmd_vel`` through the drive policy (:mod:`.drive_policy`; ``policy`` overrides the
        description's), then :meth:`drive`. ``twist`` ``(vx, vy, wz)`` (body frame, m/s and rad/s) and
        ``angular_y`` (rad/s) as the Twist's fields. A steer-only command gives the steering of the policy's
        arc with zero rates and a zero twist (``steer_only`` True); a refusal holds the steering."""
        pol = self.policy if policy is None else policy
        if mode not in MODES:
            raise InvalidConfiguration(f"unknown drive mode {mode!r}; modes are {MODES}")
        pt = interpret(pol, twist, angular_y, self.centre, lambda t: self.mode_twist(t, mode))
        if not pt.ok:
            return self._refuse(steering, np.zeros(3), pt.reason)
        if pt.steer_only:
            cmd = self.drive(pt.twist, mode=mode, steering=steering, geometry=geometry, check_limits=check_limits,
                             steer_before_drive=False)
            if not cmd.ok:
                return cmd
            return dataclasses.replace(cmd, rates=np.zeros(self.n), twist=np.zeros(3), scale=1.0, steer_only=True,
                                       slip=np.zeros(self.n), note=pt.note)
        cmd = self.drive(pt.twist, mode=mode, steering=steering, geometry=geometry, check_limits=check_limits,
                         steer_before_drive=steer_before_drive)
        return dataclasses.replace(cmd, note=pt.note) if pt.note else cmd

    def stop(self, steering=None) -> DriveCommand:
        """Zero rates, steering held."""
        cur = np.zeros(self.n) if steering is None else np.asarray(steering, float)
        return DriveCommand(np.where(self.steered, cur, np.nan), np.zeros(self.n), np.zeros(3), True, "stop")

    def _refuse(self, steering, t, reason):
        cur = np.zeros(self.n) if steering is None else np.asarray(steering, float)
        return DriveCommand(np.where(self.steered, cur, np.nan), np.zeros(self.n), np.zeros(3), False, reason)

    # ------------------------------------------------------------------------------------ odometry
    def odometry_twist(self, rates, steering=None, geometry: WheelGeometry | None = None,
                       covariance: bool = False):
        """Least-squares body twist ``(vx, vy, wz)`` from measured wheel ``rates`` (rad/s) and ``steering``
        angles (rad; NaN or ignored for unsteered wheels), and the RMS residual (m/s) over the wheels' contact
        velocities: near zero when the wheels agree (no slip), large when they disagree. With ``covariance``
        also the twist's 3x3 covariance ((m/s)^2, (rad/s)^2) derived from the residual: the least-squares
        estimate's ``s^2 (A^T A)^-1`` with ``s^2 = |e|^2 / (2N - 3)`` (the contact-velocity disagreement taken
        as the measurement noise; zero when the wheels agree exactly)."""
        g = self.home_geometry if geometry is None else geometry
        rows = _geometry_rows(g)
        n = self.n
        w = [float(v) for v in rates]
        if len(w) != n:
            raise InvalidConfiguration(f"odometry_twist: {n} wheel rates expected, got {len(w)}")
        st = [0.0] * n if steering is None else [
            float(v) if (s_ and v == v) else 0.0 for v, s_ in zip(steering, self._steered_list)]
        b = [0.0] * (2 * n)
        pts = rows["p"]
        if rows["offset"]:
            pts = []
        for i in range(n):
            th = rows["sign"][i] * st[i]
            c, s_ = math.cos(th), math.sin(th)
            fx, fy = rows["f"][i]
            sp = w[i] * rows["r"][i]
            b[2 * i] = sp * (c * fx - s_ * fy)
            b[2 * i + 1] = sp * (s_ * fx + c * fy)
            if rows["offset"]:
                (cx, cy), (ox, oy) = rows["p"][i], rows["pivot"][i]
                pts.append((ox + c * (cx - ox) - s_ * (cy - oy), oy + s_ * (cx - ox) + c * (cy - oy)))
        bv = np.array(b)
        if rows["offset"]:
            A = _odometry_matrix(pts)
            pinv = np.linalg.pinv(A)
        else:
            A, pinv = rows.get("A"), rows.get("pinv")
            if A is None:
                A = _odometry_matrix(pts)
                pinv = np.linalg.pinv(A)
                rows["A"], rows["pinv"] = A, pinv
        x = pinv @ bv
        e = A @ x - bv
        rms = float(math.sqrt(float(e @ e) / n))
        if not covariance:
            return x, rms
        dof = max(2 * n - 3, 1)
        return x, rms, (float(e @ e) / dof) * (pinv @ pinv.T)

    # ------------------------------------------------------------------------------------- terrain
    def settle(self, terrain, x: float, y: float, yaw: float, q0=None, *, tol: float = 1e-9,
               max_iterations: int = 30, solver: str = "newton", timeout: float = 0.1,
               rim_angles=None) -> SettledPose:
        """Settle the body (z, roll, pitch) and the suspension on ``terrain`` at the body's x, y, yaw (m, rad,
        ground frame) so that every wheel rim touches it (:func:`.wheeled_terrain.settle`, which documents
        the warm start ``q0``, the solvers and ``tol``)."""
        return wheeled_terrain.settle(self, terrain, x, y, yaw, q0, tol=tol, max_iterations=max_iterations,
                                      solver=solver, timeout=timeout, rim_angles=rim_angles)

    def contacts(self, terrain, q):
        """Per wheel rim contact points, terrain normals (ground frame) and signed distances (m) at ``q``."""
        return wheeled_terrain.contacts(self, terrain, q)

    def tipover_margin(self, terrain, q, method: str = "force_angle", gravity=(0.0, 0.0, -9.81),
                       contact_tol: float = 1e-6):
        """Tip-over stability at ``q`` on ``terrain`` from the wheels in contact
        (:func:`.wheeled_terrain.tipover_margin`: ``method`` "force_angle" (N rad) or "support_polygon" (m))."""
        return wheeled_terrain.tipover_margin(self, terrain, q, method, gravity, contact_tol)

    def wheel_loads(self, terrain, q, in_contact=None, gravity=(0.0, 0.0, -9.81)):
        """Quasi-static wheel loads at the rim contacts (:func:`.lift_off.wheel_loads`)."""
        return lift_off.wheel_loads(self, terrain, q, in_contact, gravity)

    def settle_with_lift_off(self, terrain, x: float, y: float, yaw: float, q0=None, *,
                             gravity=(0.0, 0.0, -9.81)):
        """:meth:`settle`, then lift the wheels the terrain would have to pull down and find the pose the
        suspension takes without them, or report that the rover tips (:func:`.lift_off.settle_with_lift_off`)."""
        return lift_off.settle_with_lift_off(self, terrain, x, y, yaw, q0, gravity=gravity)

    def slope_sweep(self, slopes, direction: float = 0.0, **kw):
        """The first slope where a wheel lifts and the slope where the rover tips (:func:`.lift_off.slope_sweep`)."""
        return lift_off.slope_sweep(self, slopes, direction, **kw)

    def slope_drive(self, terrain, q, twist, steering_tolerance: float | None = None) -> DriveCommand:
        """Steering angles and wheel rates that move the rover settled at ``q`` on ``terrain`` with the body
        ``twist`` ``(vx, vy, wz)`` (body frame, along the terrain) without slip (CLARAty 12.2).

        Derivation (in the spirit of Tarokh and McDermott, "Kinematics modeling and analyses of articulated
        rovers", IEEE T-RO 21(4), 2005, with the contact Jacobians the model already has): let ``u`` be the
        body's remaining rates (vz, wx, wy in the body frame) and the independent suspension rates. Each
        wheel's contact point must move in the terrain's tangent plane: ``n_i . J_i [twist; u] = 0``, one row
        per wheel, solved for ``u`` in the least-squares sense (exact for a rover with as many suspension
        freedoms as needed). The contact point's velocity ``v_i`` (carried by the steering body, wheel spin
        excluded) must then lie along the wheel's rolling direction: the steering angle turns the wheel
        axis ``a`` about the steering axis ``s`` until ``a . v_i = 0`` (two solutions pi apart: the limits
        choose), and the rate is ``(v_i . (a x (c - p)) / |c - p|) / r``."""
        m = self.mechanism
        q = self.configuration(q)
        t = np.asarray(twist, dtype=float)
        base = wheeled_terrain.floating_joint(self)
        sl = m.joint_slice(base)
        fk = forward_kinematics(m, q)
        R = fk.rotation(self.spec.body_frame)
        refs = wheeled_terrain.contact_wheels(self)
        pts, nrm, _ = self.contacts(terrain, q)
        # the floating joint's coordinate rates that give a body spatial velocity (ground axes, body origin)
        J_body = jacobian(m, q, self.spec.body_frame, convention="LOCAL_WORLD_ALIGNED")[:, sl]
        J_body_inv = np.linalg.inv(J_body)
        Jc = m.coupling_jacobian(q)                 # full <- independent
        indep = list(m.independent_coordinates)
        col = {c: k for k, c in enumerate(indep)}
        fl = [col[c] for c in m.coordinate_names[sl]]
        susp = [col[j] for j in self.spec.suspension_joints if j in col]

        def coord_rates(body6, susp_rates):
            """full coordinate rates from the body twist (6, body frame) and independent suspension rates."""
            qd = np.zeros(len(indep))
            qd[fl] = J_body_inv @ np.concatenate([R @ body6[:3], R @ body6[3:]])
            qd[susp] = susp_rates
            return Jc @ qd

        Jp = []
        for i, r in enumerate(refs):
            carrier = m.parent_body_of_joint(self.wheels[i].drive_joint)
            J = jacobian(m, q, carrier, convention="LOCAL_WORLD_ALIGNED")
            o = fk.position(carrier)
            Jpt = J[:3] - skew(pts[i] - o) @ J[3:]            # velocity of the contact point fixed in carrier
            Jp.append(Jpt)
        Jp = np.array(Jp)
        k = 3 + len(susp)
        basis = np.zeros((k, 6 + len(susp)))                   # unknown u -> (body6, susp)
        basis[0, 2] = basis[1, 3] = basis[2, 4] = 1.0
        for j in range(len(susp)):
            basis[3 + j, 6 + j] = 1.0
        known = np.array([t[0], t[1], 0.0, 0.0, 0.0, t[2]])
        A = np.empty((self.n, k))
        for j in range(k):
            qd = coord_rates(basis[j, :6], basis[j, 6:])
            A[:, j] = np.einsum("ni,nij,j->n", nrm, Jp, qd)
        b = -np.einsum("ni,nij,j->n", nrm, Jp, coord_rates(known, np.zeros(len(susp))))
        u, *_ = np.linalg.lstsq(A, b, rcond=None)
        body6 = known + basis[:, :6].T @ u
        qd = coord_rates(body6, u[3:])
        V = np.einsum("nij,j->ni", Jp, qd)                     # contact velocities, ground frame
        cur = self.steering_of(q)
        target = np.where(self.steered, cur, np.nan)
        rates = np.zeros(self.n)
        for i, w in enumerate(self.wheels):
            wb = m.child_body_of_joint(w.drive_joint)
            a = fk.rotation(wb) @ m.joint(w.drive_joint).axis
            c = fk.position(wb)
            if w.steering_joint and np.linalg.norm(V[i]) > _EPS_SPEED:
                sb = m.child_body_of_joint(w.steering_joint)
                s = fk.rotation(sb) @ m.joint(w.steering_joint).axis
                # a(th) = a cos th + (s x a) sin th + s (s.a)(1 - cos th); a(th) . v = 0
                sa = np.cross(s, a)
                par = s * (s @ a)
                A0, B0, C0 = (a - par) @ V[i], sa @ V[i], par @ V[i]
                rho = math.hypot(A0, B0)
                if rho < abs(C0):
                    return self._refuse(cur, t, f"wheel {w.name}: no steering angle rolls it along its motion")
                phi = math.atan2(B0, A0)
                base_th = math.acos(max(-1.0, min(1.0, -C0 / rho))) if rho > 0 else 0.0
                cands = []
                for th in (phi + base_th, phi - base_th):
                    for kk in (-2, -1, 0, 1, 2):
                        d = cur[i] + wrap_angle(th) + kk * math.pi
                        if self.steering_lower[i] - 1e-9 <= d <= self.steering_upper[i] + 1e-9:
                            cands.append((abs(d - cur[i]), d))
                if not cands:
                    return self._refuse(cur, t, f"wheel {w.name}: the steering needed is outside its range")
                d = min(cands)[1]
                th = d - cur[i]
                a = a * math.cos(th) + sa * math.sin(th) + par * (1 - math.cos(th))
                target[i] = d
            f = np.cross(a, c - pts[i])
            f /= np.linalg.norm(f)
            rates[i] = (V[i] @ f) / w.radius
        ratio = np.max(np.abs(rates) / self.max_rates)
        scale = 1.0
        if ratio > 1:
            scale = 1.0 / float(ratio)
            rates *= scale
            t = t * scale
        return DriveCommand(target, rates, t, True, "", scale, None, False, None, qd * scale)
