"""State validity for the kinematics server: the ``check_state_validity`` service (MoveIt's
``GetStateValidity`` with a JointState, plus the minimum distance) and the bounding shapes on a
``visualization_msgs/MarkerArray`` topic, so RViz shows what the checker sees.

The node holds no geometry: it converts messages and calls :mod:`mechanism_model_core.collision`. Markers
are built from the model's typed shapes (no ``coal`` needed); the service needs ``coal`` and answers
``COLLISION_CHECKING_UNAVAILABLE`` with the pip command when it is missing.

The world: the node's environment comes from its ``environment_file`` parameter (a YAML file of terrain --
plane, height field or mesh -- and obstacle boxes, spheres, cylinders, capsules, cones and meshes in the
ground frame; format in :mod:`mechanism_model_core.io.environment_file`); a request adds
``world_objects`` (``mechanism_model_msgs/CollisionObject``, MoveIt's CollisionObject: shape_msgs
primitives, meshes and planes with poses, in the ground frame or attached to a frame of the model), which
replace node obstacles of the same id or, with operation REMOVE, leave them out; ``ignore_environment``
checks the robot against itself only. Contacts with the world name the object id as ``contact_body_2``
(``body_type_2`` WORLD_OBJECT) and the obstacle shape as ``shape_2``.

Markers (topic ``collision_shapes``, reliable, transient local, depth 1): one marker per checked shape, in
its body's TF frame (``frame_prefix`` + body name, ``frame_locked``), namespace = body name; boxes,
spheres and cylinders as such, capsules and cones as cylinders of their size, meshes as
``MESH_RESOURCE`` with the file's URI. Green and translucent; a request with ``highlight_contacts``
republishes them with the colliding bodies red. The node's obstacles follow in namespace ``environment``
(ground frame, grey; meshes and height fields as triangle lists, half-spaces left out).

Error codes: INVALID_ROBOT_STATE (-17) for unknown joints or non-finite values; INVALID_OBJECT_NAME (-19)
for a world object without an id, two objects with one id, or REMOVE of an id the node does not have;
FRAME_TRANSFORM_FAILURE (-21) for a world object in an unknown frame; FAILURE (99999) for a negative or
non-finite margin, an unknown operation or primitive type, missing, non-finite or non-positive
dimensions, mismatched shape and pose lists, NaN or zero-quaternion poses, broken meshes (bad indices,
more than MAX_MESH_TRIANGLES in one mesh or in all), zero plane normals, an object without shapes, more than
MAX_WORLD_OBJECTS objects or more than MAX_SHAPES shapes in all objects together (counted before any is
built; over Cyclone before the request is even decoded: REQUEST_LIMITS); COLLISION_CHECKING_UNAVAILABLE (-22) when ``coal`` is missing. The node keeps
serving.
"""

from __future__ import annotations

import math

import numpy as np

from mechanism_model_core import shapes as S

from . import markers
from .conversions import BadMessage, fill_pose, fill_primitive_marker, pose_to_matrix, set_stamp
from .error_codes import ErrorCodes, RequestError
from . import qos
from .transports.base import SequenceLimit
from mechanism_model_core import forward_kinematics
from mechanism_model_core.collision import Environment, collisions, minimum_distance, Obstacle
from mechanism_model_core.io import load_environment
from mechanism_model_core.collision.coal_backend import heightfield_surface

MARKER_TOPIC = "collision_shapes"
#: Most world objects one request may carry, most shapes (primitives + meshes + planes) of all its objects
#: together, and most triangles of one mesh in it and of all its meshes together.
MAX_WORLD_OBJECTS = 1000
MAX_SHAPES = 1000
MAX_MESH_TRIANGLES = 200_000
#: the same limits as the transport checks them (the Cyclone transport: in the serialized request, before it
#: is decoded, so that a request of 100,000 boxes costs microseconds rather than seconds of decoding);
#: :meth:`StateValidity.request_environment` checks them again in the decoded request (rclpy, in memory)
OBJECTS_LIMIT = SequenceLimit((("world_objects",),), MAX_WORLD_OBJECTS,
                              "{where}: {count} objects, more than the limit of {most}")
SHAPES_LIMIT = SequenceLimit((("world_objects", "primitives"), ("world_objects", "meshes"), ("world_objects", "planes")),
                             MAX_SHAPES, "{where}: more than {most} shapes (primitives, meshes and planes) in the "
                                         "request's objects, the limit of one request")
TRIANGLES_LIMIT = SequenceLimit((("world_objects", "meshes", "triangles"),), MAX_MESH_TRIANGLES,
                                "{where}: more than {most} mesh triangles in the request's objects, the limit of "
                                "one request")
REQUEST_LIMITS = (OBJECTS_LIMIT, SHAPES_LIMIT, TRIANGLES_LIMIT)
#: CollisionObject operations and shape_msgs/SolidPrimitive types
ADD, REMOVE = 0, 1
BOX, SPHERE, CYLINDER, CONE = 1, 2, 3, 4
ENV_COLOUR = (0.6, 0.6, 0.6, 0.5)
_TRIANGLE_LIST = 11
FREE = (0.1, 0.8, 0.2, 0.4)
HIT = (0.95, 0.1, 0.1, 0.8)
_MESH = 10


def _byte(value) -> int:
    """A ``byte`` field as an int: rclpy gives ``bytes`` of length 1 (``b'\\x00'``), the Cyclone classes an
    int."""
    if isinstance(value, (bytes, bytearray)):
        return value[0] if len(value) else 0
    return int(value)


class StateValidity:
    """``check_state_validity`` and the shape markers, on the kinematics server's transport."""

    def __init__(self, server):
        self.server = server
        self.transport = server.transport
        self.mechanism = server.mechanism
        path = str(self.transport.get_parameter("environment_file", "") or "")
        self.environment = load_environment(path) if path else Environment()
        self.markers_pub = self.transport.create_publisher(MARKER_TOPIC, "visualization_msgs/msg/MarkerArray",
                                                           qos.LATCHED)
        self.publish_markers(())
        # RViz: the contacts of the last check (markers.checked_contact_markers), only while subscribed
        self.contacts_pub = self.transport.create_publisher("~/contacts", "visualization_msgs/msg/MarkerArray",
                                                            qos.DEFAULT)

    # ------------------------------------------------------------------ markers
    def marker_array(self, highlighted=()):
        """The MarkerArray of every bounding shape that collision checks use; bodies in ``highlighted`` red."""
        MarkerArray = self.transport.message_class("visualization_msgs/msg/MarkerArray")
        Marker = self.transport.message_class("visualization_msgs/msg/Marker")

        prefix = self.server.frame_prefix
        stamp = self.transport.now()
        out = []
        hot = set(highlighted)
        for spec in self.mechanism.bodies:
            for k, s in enumerate(spec.shapes):
                g = s.geometry
                if g is None or s.ignore_collisions:
                    continue
                m = Marker()
                m.header.frame_id = prefix + spec.name
                set_stamp(m.header.stamp, stamp)
                m.ns = spec.name
                m.id = k
                m.action = 0
                m.frame_locked = True
                fill_pose(m.pose, np.array(s.transform))     # a writable copy: old scipy refuses read-only
                if isinstance(g, S.MeshFile):
                    m.type = _MESH
                    m.mesh_resource = g.uri if "://" in g.uri else "file://" + (g.path or g.uri)
                    m.scale.x, m.scale.y, m.scale.z = g.scale
                elif not fill_primitive_marker(m, g):
                    continue
                m.color.r, m.color.g, m.color.b, m.color.a = HIT if spec.name in hot else FREE
                out.append(m)
        out += self._environment_markers(Marker, stamp, hot)
        return MarkerArray(markers=out)

    def _environment_markers(self, Marker, stamp, hot):
        """Markers of the node's obstacles (ground frame, namespace ``environment``)."""
        Point = self.transport.message_class("geometry_msgs/msg/Point")
        out = []
        for k, ob in enumerate(self.environment.obstacles):
            g = ob.geometry
            m = Marker()
            m.header.frame_id = self.server.frame_prefix + self.mechanism.ground
            set_stamp(m.header.stamp, stamp)
            m.ns, m.id, m.action, m.text = "environment", k, 0, ob.name
            fill_pose(m.pose, np.array(ob.pose))
            m.scale.x = m.scale.y = m.scale.z = 1.0
            if isinstance(g, (S.TriangleMesh, S.HeightField)):
                V, F = (g.vertices, g.faces) if isinstance(g, S.TriangleMesh) else heightfield_surface(g)
                if len(F) > MAX_MESH_TRIANGLES:
                    continue
                m.type = _TRIANGLE_LIST
                m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in V[np.asarray(F).ravel()]]
            elif not fill_primitive_marker(m, g):      # a half-space: unbounded, not drawn
                continue
            m.color.r, m.color.g, m.color.b, m.color.a = HIT if ob.name in hot else ENV_COLOUR
            out.append(m)
        return out

    def publish_markers(self, highlighted=()) -> None:
        self.markers_pub.publish(self.marker_array(highlighted))

    # ------------------------------------------------------------------ service
    def check(self, req, rep) -> None:
        """The ``check_state_validity`` handler (errors raised as RequestError; the server's guard answers)."""
        q = self.server.configuration(req.robot_state)
        margin = float(req.margin)
        if not math.isfinite(margin) or margin < 0:
            raise RequestError(ErrorCodes.FAILURE, f"margin must be finite and >= 0, got {margin}")
        env, ids = self.request_environment(req, q)
        try:
            contacts = collisions(self.mechanism, q, margin=margin, environment=env)
        except ImportError as exc:
            raise RequestError(ErrorCodes.COLLISION_CHECKING_UNAVAILABLE, str(exc)) from None
        Contact = self.transport.message_class("mechanism_model_msgs/msg/ContactInformation")
        Point = self.transport.message_class("geometry_msgs/msg/Point")
        stamp = self.transport.now()
        frame = self.server.frame_prefix + self.mechanism.ground
        out = []
        for c in contacts:
            m = Contact()
            m.header.frame_id = frame
            set_stamp(m.header.stamp, stamp)
            m.position.x, m.position.y, m.position.z = (float(v) for v in c.point)
            m.normal.x, m.normal.y, m.normal.z = (float(v) for v in c.normal)
            m.depth = float(c.depth)
            m.contact_body_1, m.contact_body_2 = c.body_a, ids.get(c.body_b, c.body_b) if c.environment \
                else c.body_b
            m.body_type_1, m.body_type_2 = 0, 1 if c.environment else 0
            m.shape_1, m.shape_2 = c.shape_a, c.shape_b
            out.append(m)
        rep.valid = not out
        rep.contacts = out
        rep.minimum_distance = math.nan
        rep.closest_bodies, rep.closest_points = [], []
        if req.compute_distance:
            d = minimum_distance(self.mechanism, q, environment=env)
            if d.body_a is not None:
                rep.minimum_distance = float(d.distance)
                rep.closest_bodies = [d.body_a, ids.get(d.body_b, d.body_b) if d.environment else d.body_b]
                rep.closest_points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))
                                      for p in (d.point_a, d.point_b)]
            else:
                rep.minimum_distance = math.inf
        if req.highlight_contacts:
            self.publish_markers({c.body_a for c in contacts} | {c.body_b for c in contacts})
        if self.contacts_pub.subscription_count:
            specs = markers.checked_contact_markers(self.mechanism, q, contacts)
            for s in specs:
                s.frame = self.server.frame_prefix + s.frame
            self.contacts_pub.publish(markers.marker_array(self.transport, specs, stamp))
        rep.message = "" if rep.valid else \
            f"{len(out)} contacts: " + ", ".join(sorted({f'{c.body_a}/{c.body_b}' for c in contacts}))[:500]

    # ------------------------------------------------------------------ the world of a request
    def request_environment(self, req, q):
        """``(Environment or None, {obstacle name: object id})`` for ``req``: the node's obstacles with the
        request's world objects applied (raises RequestError for a bad object)."""
        if req.ignore_environment:
            return None, {}
        objects = list(req.world_objects)
        if not objects:
            return self.environment, {}
        if len(objects) > MAX_WORLD_OBJECTS:
            raise RequestError(ErrorCodes.FAILURE, OBJECTS_LIMIT.message.format(
                where="world_objects", count=len(objects), most=MAX_WORLD_OBJECTS))
        shapes = triangles = 0
        for k, obj in enumerate(objects):
            shapes += len(obj.primitives) + len(obj.meshes) + len(obj.planes)
            triangles += sum(len(m.triangles) for m in obj.meshes)
            for lim, count in ((SHAPES_LIMIT, shapes), (TRIANGLES_LIMIT, triangles)):
                if count > lim.most:
                    raise RequestError(ErrorCodes.FAILURE, lim.message.format(
                        where=f"world_objects[{k}] ({str(obj.id)[:64]!r})", count=count, most=lim.most))

        kept = {o.name: o for o in self.environment.obstacles}
        added, ids, seen = [], {}, set()
        fk = []
        for k, obj in enumerate(objects):
            oid = str(obj.id)
            what = f"world_objects[{k}] ({oid!r})"
            if not oid:
                raise RequestError(ErrorCodes.INVALID_OBJECT_NAME, f"world_objects[{k}]: the id is empty")
            if oid in seen:
                raise RequestError(ErrorCodes.INVALID_OBJECT_NAME, f"{what}: two world objects with this id")
            seen.add(oid)
            op = _byte(obj.operation)
            if op == REMOVE:
                if oid not in kept:
                    raise RequestError(ErrorCodes.INVALID_OBJECT_NAME,
                                       f"{what}: REMOVE names no obstacle of the node (it has: "
                                       f"{', '.join(sorted(kept)) or 'none'})")
                del kept[oid]
                continue
            if op != ADD:
                raise RequestError(ErrorCodes.FAILURE, f"{what}: unknown operation {op} (ADD 0, "
                                                       f"REMOVE 1)")
            kept.pop(oid, None)
            try:
                T_ground_object = self._frame_pose(obj.header.frame_id, q, fk, what) @ \
                    pose_to_matrix(obj.pose, f"{what}.pose")
                for name, ob in self._obstacles(obj, oid, what, T_ground_object):
                    added.append(ob)
                    ids[name] = oid
            except (BadMessage, ValueError, TypeError) as exc:
                raise RequestError(ErrorCodes.FAILURE, str(exc)) from None
        return Environment(list(kept.values()) + added), ids

    def _frame_pose(self, frame_id, q, fk, what) -> np.ndarray:
        """``T_ground_frame`` at ``q`` (identity for the ground or an empty frame)."""
        frame = str(frame_id)
        prefix = self.server.frame_prefix
        if prefix and frame.startswith(prefix):
            frame = frame[len(prefix):]
        if frame in ("", self.mechanism.ground):
            return np.eye(4)
        if frame not in self.mechanism.frame_names:
            raise RequestError(ErrorCodes.FRAME_TRANSFORM_FAILURE,
                               f"{what}: header.frame_id {frame_id!r} is not a frame of the model")
        if not fk:
            fk.append(forward_kinematics(self.mechanism, q))
        return fk[0].pose(frame)

    def _obstacles(self, obj, oid, what, T):
        """``(obstacle name, Obstacle)`` of every shape of one CollisionObject (names ``id`` for a single
        shape, ``id/primitive/k``, ``id/mesh/k``, ``id/plane/k`` otherwise)."""
        groups = (("primitive", list(obj.primitives), list(obj.primitive_poses)),
                  ("mesh", list(obj.meshes), list(obj.mesh_poses)),
                  ("plane", list(obj.planes), list(obj.plane_poses)))
        n = sum(len(g[1]) for g in groups)
        if n == 0:
            raise ValueError(f"{what}: no primitives, meshes or planes")
        out = []
        for kind, shapes, poses in groups:
            if len(poses) != len(shapes):
                raise ValueError(f"{what}: {len(shapes)} {kind}s but {len(poses)} {kind}_poses")
            for k, (shape, pose) in enumerate(zip(shapes, poses)):
                w = f"{what}.{kind}s[{k}]"
                if kind == "primitive":
                    geo = self._primitive(shape, w)
                elif kind == "mesh":
                    tris = list(shape.triangles)
                    if len(tris) > MAX_MESH_TRIANGLES:
                        raise ValueError(f"{w}: {len(tris)} triangles, more than the limit of "
                                         f"{MAX_MESH_TRIANGLES}")
                    V = np.array([[p.x, p.y, p.z] for p in shape.vertices], dtype=float).reshape(-1, 3)
                    F = np.array([list(t.vertex_indices) for t in tris], dtype=np.int64).reshape(-1, 3)
                    try:
                        geo = S.TriangleMesh(V, F)
                    except ValueError as exc:
                        raise ValueError(f"{w}: {exc}") from None
                else:
                    a, b, c, d = (float(v) for v in shape.coef)
                    if not all(math.isfinite(v) for v in (a, b, c, d)) or math.hypot(a, b, c) < 1e-12:
                        raise ValueError(f"{w}: coef must be finite with a non-zero normal (a, b, c)")
                    nn = math.hypot(a, b, c)
                    geo = S.HalfSpace((a, b, c), -d / nn)
                name = oid if n == 1 else f"{oid}/{kind}/{k}"
                out.append((name, Obstacle(name, geo, T @ pose_to_matrix(pose, f"{w} pose"))))
        return out

    @staticmethod
    def _primitive(p, w):

        d = [float(v) for v in p.dimensions]
        need = {BOX: 3, SPHERE: 1, CYLINDER: 2, CONE: 2}.get(int(p.type))
        if need is None:
            raise ValueError(f"{w}: unsupported primitive type {p.type} (BOX 1, SPHERE 2, CYLINDER 3, CONE 4)")
        if len(d) < need:
            raise ValueError(f"{w}: type {p.type} needs {need} dimensions, got {len(d)}")
        if not all(math.isfinite(v) and v > 0 for v in d[:need]):
            raise ValueError(f"{w}: dimensions must be finite and positive, got {d}")
        if p.type == BOX:
            return S.Box(*d[:3])
        if p.type == SPHERE:
            return S.Sphere(d[0])
        if p.type == CYLINDER:              # shape_msgs: [height, radius]
            return S.Cylinder(d[1], d[0])
        return S.Cone(d[1], d[0])
