"""Statics server: the ``compute_statics`` service (``mechanism_model_msgs/srv/ComputeStatics``) on the loaded
mechanism -- joint torques against gravity, payloads and applied wrenches, contact forces with slip and
lift-off flags, and the tip-over margin (:mod:`mechanism_model_core.statics`).

Joint values come from the request over the latest ``joint_states`` (the process's shared cache) over home
and couplings, as in the kinematics server. Every failure is an error code and a message in the reply:

===========================  =================================================================
code                         when
===========================  =================================================================
INVALID_ROBOT_STATE (-17)    joint names unknown, names/positions of different lengths, NaN/inf
INVALID_LINK_NAME (-18)      a wrench, payload or contact link (or a wheel body) the model lacks
FRAME_TRANSFORM_FAILURE      a wrench's ``header.frame_id`` is not a frame of the model
(-21)
INVALID_GOAL_CONSTRAINTS     gravity not 0 or 3 finite values; lists of different lengths; NaN in a
(-16)                        wrench, normal or mass; a zero normal; negative friction or mass; an
                             unknown contact method or stability measure; more than MAX_ENTRIES;
                             finite inputs whose result overflows (a mass or gravity of 1e308): the
                             message names the largest input
FAILURE (99999)              anything else (the message says what)
===========================  =================================================================

This module converts messages and calls the core; it holds no mechanics.
"""

from __future__ import annotations

import math

import numpy as np

from mechanism_model_core.errors import InvalidConfiguration, UnknownBody
from mechanism_model_core.statics import (Contact, Payload, Wrench, contact_loads, mechanism_stability,
                                          static_torques, wheel_contacts)

from . import markers
from .conversions import BadMessage, joint_state_positions
from .error_codes import ErrorCodes, RequestError, code_for
from .joint_state_cache import JointStateCache
from .qos import DEFAULT
from .transports.base import RateLimitedLogger, Transport
from .serve import run_nodes

#: longest wrench / payload / contact list a request may carry
MAX_ENTRIES = 1000
METHODS = ("least_traction", "friction")
MEASURES = ("force_angle", "support_polygon")


def _bad(message: str) -> RequestError:
    return RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, message)


def _finite(values, what: str) -> np.ndarray:
    a = np.array([float(v) for v in values], dtype=float)
    if not np.all(np.isfinite(a)):
        raise _bad(f"{what} must be finite, got {list(values)}")
    return a


def _vec(v, what: str) -> np.ndarray:
    return _finite((v.x, v.y, v.z), what)


def gravity_from(req) -> tuple:
    g = list(req.gravity)
    if not g:
        return (0.0, 0.0, -9.81)
    if len(g) != 3:
        raise _bad(f"gravity takes 0 or 3 values, got {len(g)}")
    return tuple(_finite(g, "gravity"))


def _same_length(**lists) -> None:
    lengths = {k: len(v) for k, v in lists.items()}
    for k, n in lengths.items():
        if n > MAX_ENTRIES:
            raise _bad(f"{k} has {n} entries; at most {MAX_ENTRIES} are served")
    if len(set(lengths.values())) > 1:
        raise _bad("lists of different lengths: " + ", ".join(f"{k} {n}" for k, n in lengths.items()))


def largest_input(req) -> str:
    """``"name = value"`` of the request's number of largest magnitude (gravity, masses, wrenches,
    friction, joint positions)."""
    entries = [("gravity", g) for g in req.gravity]
    entries += [(f"payload_masses[{i}]", m) for i, m in enumerate(req.payload_masses)]
    for i, w in enumerate(req.wrenches):
        f, t = w.wrench.force, w.wrench.torque
        entries += [(f"wrenches[{i}].force", v) for v in (f.x, f.y, f.z)]
        entries += [(f"wrenches[{i}].torque", v) for v in (t.x, t.y, t.z)]
    entries += [(f"friction_coefficients[{i}]", v) for i, v in enumerate(req.friction_coefficients)]
    entries += [(f"robot_state.position[{i}] ({n})", v)
                for i, (n, v) in enumerate(zip(req.robot_state.name, req.robot_state.position))]
    if not entries:
        return "none (default gravity)"
    name, value = max(entries, key=lambda e: abs(e[1]) if math.isfinite(e[1]) else -1.0)
    return f"{name} = {value:g}"


class StaticsServer:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, joint_states: JointStateCache | None = None):
        self.transport = transport
        self.mechanism = mechanism
        self.frame_prefix = str(transport.get_parameter("frame_prefix", ""))
        self.warn = RateLimitedLogger(transport.get_logger())
        self._coords = set(mechanism.coordinate_names)
        self.joint_states = joint_states if joint_states is not None else JointStateCache(transport, mechanism)
        self.calls = 0
        self.failures = 0
        self.Vector3 = transport.message_class("geometry_msgs/msg/Vector3")
        self.service = transport.create_service("compute_statics", "mechanism_model_msgs/srv/ComputeStatics",
                                                self.handle)
        # RViz: centre of mass, support polygon, contact loads and margin at the latest joint states
        # (markers.standing_statics_markers), every markers_period s while someone subscribes
        self.marker_frame = markers.marker_frame(mechanism)
        self.warn_margin = float(transport.get_parameter("stability_warning_margin", 0.05))
        self.load_scale = float(transport.get_parameter("load_arrow_scale", 0.001))
        self.markers_pub = transport.create_publisher("~/markers", "visualization_msgs/msg/MarkerArray", DEFAULT)
        period = float(transport.get_parameter("markers_period", 0.5))
        self.markers_timer = transport.create_timer(period, self._markers_tick) if period > 0 else None

    def publish_markers(self) -> bool:
        """The statics markers on ``~/markers`` when someone subscribes; True when published."""
        if self.markers_pub.subscription_count == 0:
            return False
        q = self.mechanism.configuration(self.joint_states.latest(), measured=True)
        specs = markers.standing_statics_markers(self.mechanism, q, self.marker_frame, load_scale=self.load_scale,
                                                 warn_margin=self.warn_margin)
        for s in specs:
            s.frame = self.frame_prefix + s.frame
        self.markers_pub.publish(markers.marker_array(self.transport, specs, self.transport.now()))
        return True

    def _markers_tick(self) -> None:
        try:
            self.publish_markers()
        except Exception as exc:      # markers never take the node down
            self.warn.warning("markers", f"statics markers failed: {type(exc).__name__}: {exc}")

    @classmethod
    def from_served(cls, transport, served) -> "StaticsServer":
        """The node as ``serve`` starts it (:mod:`mechanism_model_ros.nodes`)."""
        return cls(transport, served.mechanism, joint_states=served.joint_states(transport))

    def status(self) -> str:
        return f"statics calls: {self.calls} (failed {self.failures})"

    # ------------------------------------------------------------------ conversions
    def _name(self, name: str) -> str:
        return name[len(self.frame_prefix):] if self.frame_prefix and name.startswith(self.frame_prefix) else name

    def _link(self, name: str, what: str) -> str:
        n = self._name(name)
        if not self.mechanism.has_frame(n):
            raise RequestError(ErrorCodes.INVALID_LINK_NAME,
                               f"{what} {name!r} is not a frame of model {self.mechanism.name!r}")
        return n

    def configuration(self, robot_state) -> np.ndarray:
        try:
            given, unknown = joint_state_positions(robot_state, self._coords)
        except BadMessage as exc:
            raise RequestError(ErrorCodes.INVALID_ROBOT_STATE, f"robot_state: {exc}") from None
        if unknown:
            raise RequestError(ErrorCodes.INVALID_ROBOT_STATE, f"robot_state: unknown joints {', '.join(unknown[:5])}")
        values = self.joint_states.latest()
        values.update(given)
        try:
            return self.mechanism.configuration(values, measured=True)   # reported joint states win
        except InvalidConfiguration as exc:
            raise RequestError(ErrorCodes.INVALID_ROBOT_STATE, f"robot_state: {exc}") from None

    def wrenches_from(self, req) -> list:
        _same_length(wrench_links=req.wrench_links, wrenches=req.wrenches)
        out = []
        for i, (link, w) in enumerate(zip(req.wrench_links, req.wrenches)):
            frame = self._link(link, f"wrench_links[{i}]")
            axes = self._name(w.header.frame_id) or None
            if axes is not None and not self.mechanism.has_frame(axes):
                raise RequestError(ErrorCodes.FRAME_TRANSFORM_FAILURE,
                                   f"wrenches[{i}].header.frame_id {w.header.frame_id!r} is not a frame of the model")
            out.append(Wrench(frame, _vec(w.wrench.force, f"wrenches[{i}].force"),
                              _vec(w.wrench.torque, f"wrenches[{i}].torque"), expressed_in=axes))
        return out

    def payloads_from(self, req) -> list:
        _same_length(payload_links=req.payload_links, payload_masses=req.payload_masses)
        out = []
        for i, (link, m) in enumerate(zip(req.payload_links, req.payload_masses)):
            frame = self._link(link, f"payload_links[{i}]")
            if not math.isfinite(m) or m < 0:
                raise _bad(f"payload_masses[{i}] must be finite and >= 0, got {m}")
            out.append(Payload(frame, float(m)))
        return out

    def contacts_from(self, req) -> list:
        links = list(req.contact_links)
        if len(links) > MAX_ENTRIES:
            raise _bad(f"contact_links has {len(links)} entries; at most {MAX_ENTRIES} are served")
        n = len(links)
        normals = list(req.contact_normals)
        mus = list(req.friction_coefficients)
        wheels = list(req.contact_wheels)
        for field, values in (("contact_normals", normals), ("friction_coefficients", mus),
                              ("contact_wheels", wheels)):
            if values and len(values) != n:
                raise _bad(f"{field} has {len(values)} entries for {n} contact_links (give one each, or none)")
        auto = {c.frame: c.wheel for c in wheel_contacts(self.mechanism)} if not wheels else {}
        out = []
        for i, link in enumerate(links):
            frame = self._link(link, f"contact_links[{i}]")
            normal = _vec(normals[i], f"contact_normals[{i}]") if normals else np.array([0.0, 0.0, 1.0])
            if np.linalg.norm(normal) < 1e-12:
                raise _bad(f"contact_normals[{i}] is zero")
            mu = float(mus[i]) if mus else 0.6
            if not math.isfinite(mu) or mu < 0:
                raise _bad(f"friction_coefficients[{i}] must be finite and >= 0, got {mu}")
            wheel = (self._name(wheels[i]) or None) if wheels else auto.get(frame)
            if wheel is not None and wheel not in self.mechanism.body_names:
                raise RequestError(ErrorCodes.INVALID_LINK_NAME, f"contact_wheels[{i}] {wheels[i]!r} is not a "
                                                                 f"body of model {self.mechanism.name!r}")
            out.append(Contact(frame, tuple(normal), mu, wheel))
        return out

    # ------------------------------------------------------------------ the service
    def handle(self, req, rep):
        self.calls += 1
        try:
            self.compute_statics(req, rep)
            rep.error_code.val = ErrorCodes.SUCCESS
            rep.message = ""
        except Exception as exc:          # every failure is a code and a message; the node keeps serving
            if isinstance(exc, UnknownBody):
                code, message = ErrorCodes.INVALID_LINK_NAME, str(exc)
            else:
                code, message = code_for(exc)
            self.failures += 1
            for field in ("joint_names", "effort", "contact_forces", "normal_forces", "slip", "lift",
                          "tipover_edge"):
                setattr(rep, field, [])
            rep.equilibrium = False
            rep.error_code.val = code
            rep.message = message
            self.warn.warning(f"compute_statics:{code}", f"compute_statics: {message}")
        return rep

    def compute_statics(self, req, rep) -> None:
        q = self.configuration(req.robot_state)
        g = gravity_from(req)
        wrenches = self.wrenches_from(req)
        payloads = self.payloads_from(req)
        contacts = self.contacts_from(req)
        method = req.contact_method or "least_traction"
        if method not in METHODS:
            raise _bad(f"contact_method must be one of {', '.join(METHODS)}, got {req.contact_method!r}")
        measure = req.stability_measure or "force_angle"
        if measure not in MEASURES:
            raise _bad(f"stability_measure must be one of {', '.join(MEASURES)}, got {req.stability_measure!r}")
        m = self.mechanism
        rep.joint_names = list(m.independent_coordinates)
        if not contacts:
            rep.effort = [float(v) for v in static_torques(m, q, g, wrenches, payloads)]
            rep.equilibrium = True
            rep.residual = 0.0
            rep.stability_measure = ""
            rep.stability_margin = 0.0
            self.check_finite(req, rep)
            return
        loads = contact_loads(m, q, contacts, g, wrenches, payloads, method=method)
        rep.effort = [float(v) for v in loads.torques]
        rep.contact_forces = [self.Vector3(x=float(f[0]), y=float(f[1]), z=float(f[2])) for f in loads.forces]
        rep.normal_forces = [float(v) for v in loads.normal_forces]
        rep.slip = [bool(v) for v in loads.slip]
        rep.lift = [bool(v) for v in loads.lift]
        rep.equilibrium = bool(loads.equilibrium)
        rep.residual = float(loads.residual)
        stab = mechanism_stability(m, q, contacts, g, measure, payloads, wrenches)
        rep.stability_margin = float(stab.margin)
        rep.stability_measure = measure
        rep.tipover_edge = [self.frame_prefix + contacts[i].frame for i in stab.edge]
        d = stab.tipover_direction
        rep.tipover_direction = self.Vector3(x=float(d[0]), y=float(d[1]), z=float(d[2]))
        self.check_finite(req, rep)

    def check_finite(self, req, rep) -> None:
        """Refuse a reply with a non-finite number: finite inputs can still overflow (a payload of 1e308 kg
        under gravity). The error names the input of largest magnitude, the one that overflowed."""
        numbers = list(rep.effort) + list(rep.normal_forces) + [rep.residual, rep.stability_margin]
        for v in rep.contact_forces:
            numbers += [v.x, v.y, v.z]
        d = rep.tipover_direction
        numbers += [d.x, d.y, d.z]
        if all(math.isfinite(v) for v in numbers):
            return
        field = "effort" if not all(math.isfinite(v) for v in rep.effort) else "the contact loads"
        raise _bad(f"{field} not finite (overflow): the largest input is {largest_input(req)}; "
                   "give physically meaningful magnitudes")


def main(argv=None) -> int:
    """Console script ``statics_server``: the node alone."""
    return run_nodes(argv, nodes=("statics_server",), prog="statics_server", default_transport="auto")
