"""The mobility description of a wheeled mechanism (CLARAty 12, ``Wheeled_Locomotor_Model``): the data types
:class:`MobilitySpec` and :class:`WheelSpec` that :class:`~.wheeled.WheeledLocomotorModel` drives with, their
mapping form (the keys of a mobility YAML file or a model file's ``<Mobility>`` element, ``models/README.md``),
the model's own description (:func:`mobility_for`) and a proposal drawn from the model itself
(:func:`propose_mobility`). Reading and writing files is :mod:`mechanism_model_core.io`'s
(:mod:`~mechanism_model_core.io.mobility_yaml`, :mod:`~mechanism_model_core.io.mobility_xml`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import ModelFileError
from ..joints import JointType
from ..kinematics import forward_kinematics
from .drive_policy import POLICY_KEYS, DrivePolicy
from .wheel_fit import body_mesh_points, fit_wheel

__all__ = ["MODES", "WheelSpec", "MobilitySpec", "MobilityError", "mobility_for", "propose_mobility"]

#: The drive modes of :class:`~.wheeled.WheeledLocomotorModel` (the one tuple: the model-file readers check
#: against it).
MODES = ("auto", "ackermann", "crab", "turn_in_place", "skid")


class MobilityError(ModelFileError):
    """A mobility description that cannot drive the mechanism (unknown joints, no radius, a steering
    range that makes a declared mode impossible, ...): raised when the description is loaded."""


# ---------------------------------------------------------------------------------------- description
@dataclass(frozen=True)
class WheelSpec:
    """One wheel: ``drive_joint`` (revolute/continuous, spins the wheel), ``radius`` (m), ``contact_frame``
    (a frame fixed in the body that carries the wheel, at the contact point when upright on flat ground;
    None: ``radius`` below the wheel centre along the body's -z), ``steering_joint`` (None: not steerable),
    ``max_rate`` (rad/s; None: the drive joint's velocity limit)."""

    name: str
    drive_joint: str
    radius: float
    steering_joint: str | None = None
    contact_frame: str | None = None
    max_rate: float | None = None


@dataclass(frozen=True)
class MobilitySpec:
    """The mobility of a wheeled mechanism (see the module docstring). ``skid``: wheels that cannot steer
    may slide sideways (skid-steer vehicles; Rocky 7's fixed middle and rear wheels); ``modes``: the drive
    modes the rover must support, each checked at load against the steering ranges; ``steering_tolerance``
    (rad) and ``steer_before_drive`` as in the module docstring; ``source``: where it was read from.
    ``min_turn_radius``, ``max_turn_radius``, ``radius_limit``, ``straight_deadband``, ``interpretation``,
    ``zero_speed``, ``in_place``, ``steer_only_speed``: the drive policy (:attr:`policy`,
    :mod:`.drive_policy`); ``turn_centre_x`` (m, body frame; None: from the wheels, see
    :meth:`WheeledLocomotorModel.turn_centre_x`) where arcs are measured from."""

    body_frame: str
    wheels: tuple
    suspension_joints: tuple = ()
    skid: bool = False
    modes: tuple = ()
    steer_before_drive: bool = True
    steering_tolerance: float = 0.05
    max_crab_angle: float = math.pi / 2
    min_turn_radius: float = 0.0
    source: str | None = None
    lines: Mapping | None = None
    max_turn_radius: float = math.inf
    radius_limit: str = "clip"
    straight_deadband: float = 0.0
    interpretation: str = "literal"
    zero_speed: str = "turn_in_place"
    in_place: str = "none"
    steer_only_speed: float = 0.0
    turn_centre_x: float | None = None
    notes: tuple = ()

    # ``lines`` (from a model file's <Mobility>): {"": element line, "wheels": {name: line},
    # "suspension": {joint: line}}, so that errors found later still name the line; ``notes`` (from
    # :func:`propose_mobility`): one sentence per candidate wheel link, why it was taken or left

    @property
    def policy(self) -> DrivePolicy:
        """The :class:`~.drive_policy.DrivePolicy` of this description."""
        return DrivePolicy.from_mapping({k: getattr(self, k) for k in POLICY_KEYS})

    def line_for(self, message: str) -> int | None:
        """The model-file line an error message about this description points at (None: unknown)."""
        if not self.lines:
            return None
        hit = re.match(r"wheel '([^']*)'", message)
        if hit and hit.group(1) in self.lines.get("wheels", {}):
            return self.lines["wheels"][hit.group(1)]
        hit = re.match(r"suspension joint '([^']*)'", message)
        if hit and hit.group(1) in self.lines.get("suspension", {}):
            return self.lines["suspension"][hit.group(1)]
        return self.lines.get("")

    @classmethod
    def from_dict(cls, d: Mapping, source: str | None = None) -> "MobilitySpec":
        """From a mapping as in a mobility YAML file (``models/README.md`` documents the keys)."""
        def bad(msg):
            return MobilityError(msg, source)

        if not isinstance(d, Mapping):
            raise bad("a mobility description is a mapping with 'body_frame' and 'wheels'")
        known = {"body_frame", "wheels", "suspension_joints", "skid", "modes", "steer_before_drive",
                 "steering_tolerance", "max_crab_angle", "turn_centre_x", *POLICY_KEYS}
        extra = set(d) - known
        if extra:
            raise bad(f"unknown key(s) {sorted(extra)}; known: {sorted(known)}")
        if "body_frame" not in d or "wheels" not in d:
            raise bad("'body_frame' and 'wheels' are required")
        wl = d["wheels"]
        if not isinstance(wl, Sequence) or isinstance(wl, str) or not wl:
            raise bad("'wheels' must be a non-empty list")
        wheels = []
        wkeys = {"name", "drive_joint", "radius", "steering_joint", "contact_frame", "max_rate"}
        for k, w in enumerate(wl):
            if not isinstance(w, Mapping):
                raise bad(f"wheel {k}: a mapping expected")
            name = w.get("name", w.get("drive_joint", f"wheel{k}"))
            extra = set(w) - wkeys
            if extra:
                raise bad(f"wheel {name!r}: unknown key(s) {sorted(extra)}")
            if "drive_joint" not in w:
                raise bad(f"wheel {name!r}: no drive_joint")
            if "radius" not in w:
                raise bad(f"wheel {name!r}: no radius (m)")
            try:
                r = float(w["radius"])
                mr = None if w.get("max_rate") is None else float(w["max_rate"])
            except (TypeError, ValueError):
                raise bad(f"wheel {name!r}: radius and max_rate are numbers") from None
            if not (math.isfinite(r) and r > 0):
                raise bad(f"wheel {name!r}: radius must be a positive number of metres, got {w['radius']!r}")
            if mr is not None and not mr > 0:
                raise bad(f"wheel {name!r}: max_rate must be > 0 rad/s")
            wheels.append(WheelSpec(str(name), str(w["drive_joint"]), r, w.get("steering_joint"),
                                    w.get("contact_frame"), mr))
        modes = tuple(d.get("modes", ()))
        for m in modes:
            if m not in MODES:
                raise bad(f"unknown mode {m!r}; modes are {MODES}")
        try:
            policy = DrivePolicy.from_mapping(d)
            tcx = d.get("turn_centre_x")
            tcx = None if tcx is None else float(tcx)
            if tcx is not None and not math.isfinite(tcx):
                raise ValueError(f"turn_centre_x must be a finite number of metres, got {tcx}")
            return cls(str(d["body_frame"]), tuple(wheels), tuple(d.get("suspension_joints", ())),
                       bool(d.get("skid", False)), modes, bool(d.get("steer_before_drive", True)),
                       float(d.get("steering_tolerance", 0.05)), float(d.get("max_crab_angle", math.pi / 2)),
                       source=source, turn_centre_x=tcx, **{k: getattr(policy, k) for k in POLICY_KEYS})
        except (TypeError, ValueError) as exc:
            raise bad(f"bad value: {exc}") from None

    def to_dict(self) -> dict:
        """The mapping :meth:`from_dict` reads (for writing a YAML file)."""
        wheels = []
        for w in self.wheels:
            e = {"name": w.name, "drive_joint": w.drive_joint, "radius": w.radius}
            for k in ("steering_joint", "contact_frame", "max_rate"):
                if getattr(w, k) is not None:
                    e[k] = getattr(w, k)
            wheels.append(e)
        return {"body_frame": self.body_frame, "wheels": wheels, "suspension_joints": list(self.suspension_joints),
                "skid": self.skid, "modes": list(self.modes), "steer_before_drive": self.steer_before_drive,
                "steering_tolerance": self.steering_tolerance, "max_crab_angle": self.max_crab_angle,
                "min_turn_radius": self.min_turn_radius, **self.policy.to_dict(),
                **({} if self.turn_centre_x is None else {"turn_centre_x": self.turn_centre_x})}


def mobility_for(mechanism) -> MobilitySpec:
    """The mobility description of a model: its ``metadata["mobility"]`` -- what
    :func:`~mechanism_model_core.io.load_model` read from a ``<model file stem>_mobility.yaml`` beside the
    model file when there is one (an override; ``metadata["mobility_source"]`` names it), else from the model
    file's ``<Mobility>`` element (every library rover has one) -- else :func:`propose_mobility`."""
    meta = getattr(mechanism, "metadata", None) or {}
    d = meta.get("mobility")
    if d:
        source = meta.get("mobility_source") or getattr(mechanism, "source", None)
        spec = MobilitySpec.from_dict(d, source=source)
        return dataclasses.replace(spec, lines=meta.get("mobility_lines"))
    return propose_mobility(mechanism)


def propose_mobility(mechanism) -> MobilitySpec:
    """Propose a mobility description for a model: every continuous joint whose child body is round is a
    wheel -- its radius from a cylinder collision shape, else from the carrier's nearest frame whose name
    contains 'contact', else fitted to the child's collision meshes (:func:`.wheel_fit.fit_wheel`: a body of
    revolution about the joint axis; needs ``trimesh``) -- its nearest revolute ancestor with a vertical axis
    is its steering joint if that joint carries no other wheel, other revolute joints between the body and
    the wheels are suspension, the body is the child of the floating joint (or the first body), and a frame
    of the wheel's carrier whose name contains 'contact' is its contact frame. :attr:`MobilitySpec.notes`
    says, per continuous joint, which link was taken as a wheel and why, or why not. Review the result and
    save it (:meth:`MobilitySpec.to_dict`)."""
    names = mechanism.body_names
    body = None
    for j in mechanism.joints:
        if j.type is JointType.FLOATING:
            body = mechanism.child_body_of_joint(j.name)
            break
    if body is None:
        body = names[1] if len(names) > 1 else names[0]
    fk = forward_kinematics(mechanism)
    wheels, steer_of, susp, notes = [], {}, [], []
    for j in mechanism.joints:
        if j.type is not JointType.CONTINUOUS:
            continue
        child = mechanism.child_body_of_joint(j.name)
        cyl = [s for s in mechanism.body(child).shapes if s.type == "cylinder" and s.dimensions]
        radius = cyl[0].dimensions[0] if cyl else None
        why = f"cylinder {cyl[0].name!r} of radius {radius:.4g} m" if cyl else ""
        carrier = mechanism.parent_body_of_joint(j.name)
        cands = [f for f in mechanism.body(carrier).frames if "contact" in f]
        # the carrier's contact frame nearest the wheel centre (a bogie carries two wheels)
        contact = min(cands, key=lambda f: float(np.linalg.norm(fk.position(f) - fk.position(child))),
                      default=None)
        if radius is None and contact is not None:
            radius = float(np.linalg.norm(fk.position(child) - fk.position(contact)))
            why = f"contact frame {contact!r} {radius:.4g} m from the wheel centre"
        if radius is None:
            radius, why = _radius_from_meshes(mechanism, child, j)
        if radius is None:
            notes.append(f"{child!r} (continuous joint {j.name!r}) is not a wheel: {why}")
            continue
        notes.append(f"{child!r} is a wheel driven by {j.name!r}: {why}")
        path = mechanism.path_to_ground(carrier)
        steer = None
        for b in path:
            if b == body:
                break
            bj = mechanism.body(b).joint
            if bj is not None and bj.type is JointType.REVOLUTE:
                R = fk.rotation(b, relative_to=body)
                if abs(abs((R @ bj.axis)[2]) - 1.0) < 1e-6:
                    steer = bj.name
                break
        wheels.append(dict(name=child, drive_joint=j.name, radius=float(radius), steering_joint=steer,
                           contact_frame=contact))
        if steer:
            steer_of.setdefault(steer, []).append(child)
        for b in path:
            if b == body:
                break
            bj = mechanism.body(b).joint
            if bj is not None and bj.type is JointType.REVOLUTE and bj.name != steer and bj.name not in susp:
                susp.append(bj.name)
    for s, ws in steer_of.items():
        if len(ws) > 1:      # one steering joint turning several wheels is a suspension joint, not a steering one
            for w in wheels:
                if w["steering_joint"] == s:
                    w["steering_joint"] = None
    if not wheels:
        raise MobilityError(f"no wheel found in {mechanism.name!r} (continuous joints carrying a cylinder, a "
                            f"contact frame or a round mesh)" + ("".join("; " + n for n in notes[:6])),
                            getattr(mechanism, "source", None))
    for w in wheels:
        if w["contact_frame"] is None:
            del w["contact_frame"]
        if w["steering_joint"] is None:
            del w["steering_joint"]
    skid = not any("steering_joint" in w for w in wheels)
    spec = MobilitySpec.from_dict({"body_frame": body, "wheels": wheels, "suspension_joints": susp,
                                   "skid": skid, "modes": ["skid"] if skid else []},
                                  source=getattr(mechanism, "source", None))
    return dataclasses.replace(spec, notes=tuple(notes))


def _radius_from_meshes(mechanism, body: str, joint) -> tuple:
    """``(radius or None, why)``: the wheel fitted to ``body``'s collision meshes about ``joint``'s axis."""
    try:
        points, meshes = body_mesh_points(mechanism, body)
    except ImportError as exc:
        return None, f"its meshes were not read ({exc})"
    except ModelFileError as exc:
        return None, f"its mesh could not be read: {exc}"
    if points is None:
        return None, "no cylinder, no contact frame, no collision mesh"
    fit = fit_wheel(points, joint.axis)
    what = f"mesh {', '.join(meshes)} fitted"
    if fit.is_wheel:
        return fit.radius, f"{what}: {fit.why()}"
    return None, f"{what}: {fit.why()}"
