"""Reach server: the ``compute_base_placement`` service (``mechanism_model_msgs/srv/ComputeBasePlacement``) and
the RViz markers of a reachability map (:mod:`mechanism_model_core.reach`).

Parameters:

* ``reach_map`` (path, default empty): a map file (``mechanism-model reach map ... -o map.h5``) of a chain of
  the served model, read once at start (refused, and the node not started, when the model changed). With
  it, placements are looked up in the map first and ranked by its index, and its voxels are drawn.
* ``reach_chain`` (``"base:tip"``, default empty): the arm chain of requests that name none (else the
  map's chain).
* ``max_candidates`` (default 20000): the largest placement search a request may ask for (positions x
  headings); a larger one is refused with its size.
* ``markers_period`` (s, default 2.0; 0: never): how often the map's voxels are published on ``~/markers``
  (``visualization_msgs/MarkerArray``, one cube list in the chain's base frame coloured by reachability
  index) while someone subscribes; ``markers_min_index`` (default 0) leaves out voxels at or below it.
* ``frame_prefix``: prefixed to every frame name written, stripped from those read.

Every failure is an error code and a message in the reply, and the node keeps serving:

===========================  =================================================================
code                         when
===========================  =================================================================
NO_IK_SOLUTION (-31)         no placement reaches the target (the message says how many candidates
                             were tried and why each group was rejected)
INVALID_GOAL_CONSTRAINTS     a NaN or infinite number, a zero direction, an unknown axis, a
(-16)                        vertical or degenerate terrain plane, a bad mesh, a step, radius, yaws
                             or max_results out of range, a search beyond ``max_candidates`` (the
                             message gives its size), no chain given and none configured
INVALID_LINK_NAME (-18)      a chain frame the model lacks
FRAME_TRANSFORM_FAILURE      ``target.header.frame_id`` is neither empty nor the model's root frame
(-21)
FAILURE (99999)              anything else (the message says what)
===========================  =================================================================

This module converts messages and calls the core; it holds no kinematics.
"""

from __future__ import annotations

import math

import numpy as np

from mechanism_model_core.errors import InvalidConfiguration, UnknownFrame
from mechanism_model_core.reach import ReachMap, chain_of
from mechanism_model_core.reach.placement import place_base
from mechanism_model_core.terrain import Plane, TriangleMesh

from . import markers
from .conversions import fill_joint_state, fill_pose
from .error_codes import ErrorCodes, RequestError, code_for
from .qos import DEFAULT
from .transports.base import RateLimitedLogger, Transport
from .serve import run_nodes

SRV_TYPE = "mechanism_model_msgs/srv/ComputeBasePlacement"
#: most triangles a request's terrain mesh may have
MAX_MESH_TRIANGLES = 200_000
AXES = ("x", "y", "z", "-x", "-y", "-z")
#: placement fields of the reply, cleared on failure
LIST_FIELDS = ("body_poses", "x", "y", "yaw", "score", "reachability_index", "manipulability", "stability_margin",
               "position_error", "orientation_error", "robot_states", "arm_joint_names", "arm_positions")


def _bad(message: str) -> RequestError:
    return RequestError(ErrorCodes.INVALID_GOAL_CONSTRAINTS, message)


def _finite(values, what: str) -> np.ndarray:
    a = np.array([float(v) for v in values], dtype=float)
    if not np.all(np.isfinite(a)):
        raise _bad(f"{what} must be finite, got {[float(v) for v in values]}")
    return a


def terrain_from(req):
    """The request's terrain: its mesh when that has triangles, else its plane (all-zero: flat ground z = 0)."""
    mesh = req.terrain_mesh
    if len(mesh.triangles):
        if len(mesh.triangles) > MAX_MESH_TRIANGLES:
            raise _bad(f"terrain_mesh has {len(mesh.triangles)} triangles; at most {MAX_MESH_TRIANGLES} are served")
        V = _finite([c for p in mesh.vertices for c in (p.x, p.y, p.z)], "terrain_mesh.vertices").reshape(-1, 3)
        F = np.array([list(t.vertex_indices) for t in mesh.triangles], dtype=np.int64).reshape(-1, 3)
        try:
            return TriangleMesh(V, F, outside="nan")
        except InvalidConfiguration as exc:
            raise _bad(f"terrain_mesh: {exc}") from None
    a, b, c, d = _finite(req.terrain_plane.coef, "terrain_plane.coef")
    if a == b == c == d == 0.0:
        return Plane()
    n = np.array([a, b, c])
    nn = float(n @ n)
    if not c > 1e-9 * math.sqrt(nn):
        raise _bad(f"terrain_plane: a*x + b*y + c*z + d = 0 needs c > 0 (a terrain seen from above), got "
                   f"coef {[a, b, c, d]}")
    return Plane(-d * n / nn, n)


class ReachServer:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, reach_map: ReachMap | None = None):
        self.transport = transport
        self.mechanism = mechanism
        self.frame_prefix = str(transport.get_parameter("frame_prefix", ""))
        self.warn = RateLimitedLogger(transport.get_logger())
        self.root = mechanism.bodies[0].name
        path = str(transport.get_parameter("reach_map", ""))
        if reach_map is None and path:
            reach_map = ReachMap.load(path, mechanism)       # refused when the model changed: the node stops
        self.reach_map = reach_map
        self.chain = str(transport.get_parameter("reach_chain", "")) or \
            (f"{reach_map.base}:{reach_map.tool}" if reach_map is not None else "")
        if self.chain:
            chain_of(mechanism, self.chain)                    # a bad parameter stops the node at start
        self.max_candidates = int(transport.get_parameter("max_candidates", 20000))
        self.calls = 0
        self.failures = 0
        self.service = transport.create_service("compute_base_placement", SRV_TYPE, self.handle)
        self.min_index = float(transport.get_parameter("markers_min_index", 0.0))
        self.markers_pub = transport.create_publisher("~/markers", "visualization_msgs/msg/MarkerArray", DEFAULT)
        period = float(transport.get_parameter("markers_period", 2.0))
        self.markers_timer = transport.create_timer(period, self._markers_tick) \
            if period > 0 and reach_map is not None else None

    @classmethod
    def from_served(cls, transport, served) -> "ReachServer":
        """The node as ``serve`` starts it (:mod:`mechanism_model_ros.nodes`)."""
        return cls(transport, served.mechanism)

    def status(self) -> str:
        return f"placement calls: {self.calls} (failed {self.failures})"

    # ------------------------------------------------------------------ markers
    def publish_markers(self) -> bool:
        """The map's voxels on ``~/markers`` when someone subscribes (and there is a map); True when published."""
        if self.reach_map is None or self.markers_pub.subscription_count == 0:
            return False
        specs = markers.reach_map_markers(self.reach_map, self.frame_prefix + self.reach_map.base, self.min_index)
        self.markers_pub.publish(markers.marker_array(self.transport, specs, self.transport.now()))
        return True

    def _markers_tick(self) -> None:
        try:
            self.publish_markers()
        except Exception as exc:      # markers never take the node down
            self.warn.warning("markers", f"reach markers failed: {type(exc).__name__}: {exc}")

    # ------------------------------------------------------------------ the service
    def handle(self, req, rep):
        self.calls += 1
        try:
            self.compute_base_placement(req, rep)
        except Exception as exc:          # every failure is a code and a message; the node keeps serving
            code, message = code_for(exc)
            if isinstance(exc, InvalidConfiguration) and not isinstance(exc, UnknownFrame):
                code = ErrorCodes.INVALID_GOAL_CONSTRAINTS
            self.failures += 1
            for name in LIST_FIELDS:
                setattr(rep, name, [])
            rep.error_code.val = code
            rep.message = message
            self.warn.warning(f"compute_base_placement:{code}", f"compute_base_placement: {message}")
        return rep

    def _name(self, name: str) -> str:
        return name[len(self.frame_prefix):] if self.frame_prefix and name.startswith(self.frame_prefix) else name

    def compute_base_placement(self, req, rep) -> None:
        chain = req.chain or self.chain
        if not chain:
            raise _bad("no chain: give chain 'base:tip' (the node has no reach_chain parameter and no map)")
        base, tip, _ = chain_of(self.mechanism, chain)
        rmap = self.reach_map if self.reach_map is not None and \
            (self.reach_map.base, self.reach_map.tool) == (base, tip) else None
        ref = self._name(req.target.header.frame_id)
        if ref not in ("", self.root):
            raise RequestError(ErrorCodes.FRAME_TRANSFORM_FAILURE,
                               f"target.header.frame_id {req.target.header.frame_id!r}: placements are searched "
                               f"in the root frame {self.frame_prefix + self.root!r} (give the target there)")
        terrain = terrain_from(req)
        p = req.target.point
        x, y = _finite((p.x, p.y), "target.point")
        z = float(np.asarray(terrain.height(x, y)).reshape(-1)[0]) if req.target_on_terrain else \
            float(_finite((p.z,), "target.point.z")[0])
        if not math.isfinite(z):
            raise _bad(f"the terrain has no height at the target ({x:g}, {y:g})")
        target = np.array([x, y, z])
        d = _finite((req.direction.x, req.direction.y, req.direction.z), "direction")
        if not np.any(d):
            d = -np.asarray(terrain.normal(x, y), dtype=float).reshape(-1)[:3]
        axis = req.axis or None
        if axis is not None and axis not in AXES:
            raise _bad(f"axis must be one of {', '.join(AXES)} (or empty), got {req.axis!r}")
        step = float(req.step) or 0.1
        radius = float(req.radius) or None
        res = place_base(self.mechanism, (base, tip), target, d, terrain, reach_map=rmap, axis=axis, step=step,
                         yaws=int(req.yaws) or 12, radius=radius, max_results=int(req.max_results) or 5,
                         max_candidates=self.max_candidates, min_stability=float(req.min_stability))
        rep.candidates, rep.settled, rep.in_map, rep.verified = res.tried, res.settled, res.in_map, res.verified
        if not res.success:
            raise RequestError(ErrorCodes.NO_IK_SOLUTION, res.message)
        self.fill(rep, res.placements)
        rep.error_code.val = ErrorCodes.SUCCESS
        rep.message = ""

    def fill(self, rep, placements) -> None:
        PoseStamped = self.transport.message_class("geometry_msgs/msg/PoseStamped")
        JointState = self.transport.message_class("sensor_msgs/msg/JointState")
        stamp = self.transport.now()
        names = list(self.mechanism.coordinate_names)
        rep.body_poses, rep.robot_states = [], []
        for pl in placements:
            ps = PoseStamped()
            ps.header.frame_id = self.frame_prefix + self.root
            ps.header.stamp.sec, ps.header.stamp.nanosec = stamp
            fill_pose(ps.pose, pl.body_pose)
            rep.body_poses.append(ps)
            js = JointState()
            fill_joint_state(js, names, pl.q, stamp)
            rep.robot_states.append(js)
        for name, attr in (("x", "x"), ("y", "y"), ("yaw", "yaw"), ("score", "score"),
                           ("reachability_index", "index"), ("manipulability", "manipulability"),
                           ("stability_margin", "stability"), ("position_error", "position_error"),
                           ("orientation_error", "orientation_error")):
            setattr(rep, name, [float(getattr(pl, attr)) for pl in placements])
        rep.arm_joint_names = list(placements[0].arm_joints)
        rep.arm_positions = [float(v) for v in placements[0].arm_q]


def main(argv=None) -> int:
    """Console script ``reach_server``: the node alone."""
    return run_nodes(argv, nodes=("reach_server",), prog="reach_server", default_transport="auto")
