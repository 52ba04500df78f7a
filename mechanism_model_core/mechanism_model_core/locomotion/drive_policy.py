"""Drive policy: what a ``cmd_vel`` means for a steered rover before any wheel is computed.

:mod:`.wheeled` turns a body twist into steering angles and wheel rates exactly (a rigid-body motion of the
body). Rover teams also expect rules on top of that, which differ from rover to rover and are kept here as
plain data (:class:`DrivePolicy`, part of the mobility description and overridable by the locomotor's
parameters) and one plain function (:func:`interpret`):

* **Turn radius** -- arcs are measured from the **turn centre** ``(cx, cy)`` in the body frame, a point
  of the line ``x = cx`` where the instantaneous centre of rotation of an Ackermann arc must lie, half-way
  across the track. For a rover with fixed (unsteered) wheels on one axle the line is that axle (the Open
  Source Rover's and MER's middle wheels), whatever frame the model calls its body; for an all-steered rover
  the middle of its wheel base (see :meth:`~.wheeled.WheeledLocomotorModel.turn_centre`). Arcs tighter than ``min_turn_radius`` (m) are
  clipped to it (``radius_limit="clip"``: the speed of the turn centre kept, the turn rate lowered) or
  refused (``"refuse"``); arcs wider than ``max_turn_radius`` (m), or turning slower than
  ``straight_deadband`` (rad/s), are driven straight (the OSR's 6.4 m: beyond it its steering cannot resolve
  the angle).
* **Interpretation** of ``(linear.x, angular.z)``: ``literal`` (the twist as a rigid-body motion: driving
  backwards with a positive ``angular.z`` turns the rover counter-clockwise, so the wheels steer to the
  right) or ``intuitive`` (a joystick's: ``angular.z`` keeps the steering direction when reversing, i.e. its
  sign is flipped for ``linear.x < 0``; OSR's ``/cmd_vel_intuitive``).
* **Zero speed** (``linear.x = linear.y = 0``, ``angular.z != 0``): ``turn_in_place`` (about the turn
  centre), ``steer_only`` (the wheels steer to the arc of radius ``steer_only_speed / |angular.z|``, clipped
  as above, and do not roll: OSR's intuitive mode) or ``stop`` (nothing moves: OSR's literal mode).
* **In place from angular.y** (``in_place="angular_y"``): a twist with ``linear.x = 0`` and
  ``angular.y != 0`` turns in place about the turn centre at ``wz = -angular.y`` rad/s (OSR's convention:
  its wheels turn the rover clockwise seen from above for a positive ``angular.y``).

Every twist is ``(vx, vy, wz)`` in the body frame for its origin (m/s, rad/s; REP-103), before and after;
the speed an arc keeps when its radius is clipped is the turn centre's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

__all__ = ["DrivePolicy", "PolicyTwist", "interpret", "INTERPRETATIONS", "ZERO_SPEED", "IN_PLACE",
           "RADIUS_LIMITS", "POLICY_KEYS"]

INTERPRETATIONS = ("literal", "intuitive")
ZERO_SPEED = ("turn_in_place", "steer_only", "stop")
IN_PLACE = ("none", "angular_y")
RADIUS_LIMITS = ("clip", "refuse")
#: the keys of a policy in a mobility description (YAML keys, XML attributes of ``<Mobility>``)
POLICY_KEYS = ("min_turn_radius", "max_turn_radius", "radius_limit", "straight_deadband", "interpretation",
               "zero_speed", "in_place", "steer_only_speed")


@dataclass(frozen=True)
class DrivePolicy:
    """The rules of :func:`interpret` (module docstring). Units: m, rad/s, m/s.

    ``min_turn_radius`` (0: any arc), ``max_turn_radius`` (inf: no straight deadband by radius),
    ``radius_limit`` (``clip``/``refuse``), ``straight_deadband`` (rad/s; 0: none), ``interpretation``
    (``literal``/``intuitive``), ``zero_speed`` (``turn_in_place``/``steer_only``/``stop``), ``in_place``
    (``none``/``angular_y``), ``steer_only_speed`` (m/s; 0: steer to the tightest arc allowed)."""

    min_turn_radius: float = 0.0
    max_turn_radius: float = math.inf
    radius_limit: str = "clip"
    straight_deadband: float = 0.0
    interpretation: str = "literal"
    zero_speed: str = "turn_in_place"
    in_place: str = "none"
    steer_only_speed: float = 0.0

    def __post_init__(self):
        for name, value, allowed in (("radius_limit", self.radius_limit, RADIUS_LIMITS),
                                     ("interpretation", self.interpretation, INTERPRETATIONS),
                                     ("zero_speed", self.zero_speed, ZERO_SPEED),
                                     ("in_place", self.in_place, IN_PLACE)):
            if value not in allowed:
                raise ValueError(f"drive policy: {name} is one of {allowed}, got {value!r}")
        for name in ("min_turn_radius", "max_turn_radius", "straight_deadband", "steer_only_speed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or v < 0:
                raise ValueError(f"drive policy: {name} must be a number >= 0, got {v!r}")
        if not math.isfinite(self.min_turn_radius):
            raise ValueError("drive policy: min_turn_radius must be finite")
        if self.max_turn_radius <= self.min_turn_radius:
            raise ValueError(f"drive policy: max_turn_radius {self.max_turn_radius} m must exceed "
                             f"min_turn_radius {self.min_turn_radius} m")

    @classmethod
    def from_mapping(cls, d: Mapping) -> "DrivePolicy":
        """From the policy keys of a mapping (others ignored; numbers as numbers, ``inf`` allowed)."""
        kw = {}
        for k in POLICY_KEYS:
            if k in d and d[k] is not None:
                v = d[k]
                if k in ("radius_limit", "interpretation", "zero_speed", "in_place"):
                    kw[k] = str(v)
                else:
                    try:
                        kw[k] = float(v)
                    except (TypeError, ValueError):
                        raise ValueError(f"drive policy: {k} must be a number, got {v!r}") from None
        return cls(**kw)

    def to_dict(self) -> dict:
        """The keys that differ from the defaults (for writing a description back)."""
        default = DrivePolicy()
        return {k: getattr(self, k) for k in POLICY_KEYS if getattr(self, k) != getattr(default, k)}

    def replace(self, **changes) -> "DrivePolicy":
        """A copy with ``changes`` (validated)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class PolicyTwist:
    """What :func:`interpret` made of a command: ``twist`` (3,) the body twist to drive (body origin),
    ``ok``/``reason`` (refused: ``ok`` False), ``steer_only`` (steer to ``twist``'s arc, do not roll),
    ``in_place`` (a turn in place about the turn centre), ``icr`` (x, y) the instantaneous centre of rotation
    in the body frame (None: straight or still), ``note`` what the policy changed (empty: nothing)."""

    twist: np.ndarray
    ok: bool = True
    reason: str = ""
    steer_only: bool = False
    in_place: bool = False
    icr: tuple | None = None
    note: str = ""


def _origin_twist(vcx, vcy, wz, cx, cy):
    """Body-origin twist of the motion whose turn centre ``(cx, cy)`` moves at ``(vcx, vcy)`` turning at wz."""
    return np.array([vcx + wz * cy, vcy - wz * cx, wz])


def interpret(policy: DrivePolicy, twist, angular_y: float = 0.0, centre=(0.0, 0.0),
              mode_twist=None) -> PolicyTwist:
    """Apply ``policy`` to the commanded body ``twist`` ``(vx, vy, wz)`` (and ``angular.y``, rad/s).

    ``centre`` (m): the turn centre ``(cx, cy)`` in the body frame. ``mode_twist``: a function applying the drive
    mode to a twist (the locomotor's :meth:`~.wheeled.WheeledLocomotorModel.mode_twist`; None: the twist as
    given); it is applied after the interpretation and the zero-speed rule and before the radius rules."""
    vx, vy, wz = (float(v) for v in np.asarray(twist, dtype=float).reshape(3))
    ay = float(angular_y)
    cx, cy = (float(c) for c in centre)
    if not all(math.isfinite(v) for v in (vx, vy, wz, ay, cx, cy)):
        return PolicyTwist(np.zeros(3), False, "the twist has NaN or infinite components")
    mode = mode_twist if mode_twist is not None else (lambda t: np.asarray(t, dtype=float))

    def in_place(rate, note):
        t = mode(_origin_twist(0.0, 0.0, rate, cx, cy))
        return PolicyTwist(t, in_place=True, icr=(cx, cy) if t[2] != 0 else None, note=note)

    if policy.in_place == "angular_y" and ay != 0.0 and vx == 0.0 and vy == 0.0:
        return in_place(-ay, "turn in place from angular.y")
    note = []
    if policy.interpretation == "intuitive" and vx < 0.0 and wz != 0.0:
        wz = -wz
        note.append("intuitive: turn direction kept while reversing")
    if vx == 0.0 and vy == 0.0 and wz != 0.0:
        if policy.zero_speed == "stop":
            return PolicyTwist(np.zeros(3), note="zero speed: stop")
        if policy.zero_speed == "turn_in_place":
            return in_place(wz, "; ".join(note))
        # steer only: the arc a speed proxy gives, clipped, never driven
        speed = policy.steer_only_speed if policy.steer_only_speed > 0 else (
            abs(wz) * max(policy.min_turn_radius, 0.0))
        if speed == 0.0:                       # no radius limit: the tightest arc is a turn in place
            r = in_place(wz, "zero speed: steer only")
            return dataclasses.replace(r, steer_only=True)
        vx = speed
        note.append("zero speed: steer only")
        steer_only = True
    else:
        steer_only = False
    t = mode(np.array([vx, vy, wz]))
    vx, vy, wz = (float(v) for v in t)
    vcx, vcy = vx - wz * cy, vy + wz * cx                # velocity of the turn centre
    s = math.hypot(vcx, vcy)
    if wz != 0.0 and s > 0.0:
        radius = s / abs(wz)
        if abs(wz) < policy.straight_deadband or radius >= policy.max_turn_radius:
            wz = 0.0
            note.append(f"straight: radius {radius:.4g} m beyond {policy.max_turn_radius:.4g} m or turn rate "
                        f"below the deadband {policy.straight_deadband:.4g} rad/s")
        elif radius < policy.min_turn_radius:
            if policy.radius_limit == "refuse":
                return PolicyTwist(np.zeros(3), False,
                                   f"turn radius {radius:.4g} m is tighter than min_turn_radius "
                                   f"{policy.min_turn_radius:.4g} m")
            wz = math.copysign(s / policy.min_turn_radius, wz)
            note.append(f"radius {radius:.4g} m clipped to {policy.min_turn_radius:.4g} m")
    elif wz != 0.0:          # the turn centre still: a turn in place (mode turn_in_place, or asked literally)
        return PolicyTwist(_origin_twist(0.0, 0.0, wz, cx, cy), steer_only=steer_only, in_place=True,
                           icr=(cx, cy), note="; ".join(note))
    out = _origin_twist(vcx, vcy, wz, cx, cy)
    icr = None
    if wz != 0.0:
        icr = (cx - vcy / wz, cy + vcx / wz)
    return PolicyTwist(out, steer_only=steer_only, icr=icr, note="; ".join(note))
