"""State validity for the kinematics server: the ``check_state_validity`` service (MoveIt's
``GetStateValidity`` with a JointState, plus the minimum distance) and the bounding shapes on a
``visualization_msgs/MarkerArray`` topic, so RViz shows what the checker sees.

The node holds no geometry: it converts messages and calls :mod:`mechanism_model_core.collision`. Markers
are built from the model's typed shapes (no ``coal`` needed); the service needs ``coal`` and answers
``FAILURE`` with the pip command when it is missing.

Markers (topic ``collision_shapes``, reliable, transient local, depth 1): one marker per checked shape, in
its body's TF frame (``frame_prefix`` + body name, ``frame_locked``), namespace = body name; boxes,
spheres and cylinders as such, capsules and cones as cylinders of their size, meshes as
``MESH_RESOURCE`` with the file's URI. Green and translucent; a request with ``highlight_contacts``
republishes them with the colliding bodies red.

Error codes: INVALID_ROBOT_STATE (-17) for unknown joints or non-finite values, FAILURE (99999) for a
negative or non-finite margin or a missing ``coal``; the node keeps serving.
"""

from __future__ import annotations

import math

import numpy as np

from .conversions import fill_pose, set_stamp
from .error_codes import ErrorCodes, RequestError
from . import qos

MARKER_TOPIC = "collision_shapes"
FREE = (0.1, 0.8, 0.2, 0.4)
HIT = (0.95, 0.1, 0.1, 0.8)
_CUBE, _SPHERE, _CYLINDER, _MESH = 1, 2, 3, 10


class StateValidity:
    """``check_state_validity`` and the shape markers, on the kinematics server's transport."""

    def __init__(self, server):
        self.server = server
        self.transport = server.transport
        self.mechanism = server.mechanism
        self.markers_pub = self.transport.create_publisher(MARKER_TOPIC, "visualization_msgs/msg/MarkerArray",
                                                           qos.LATCHED)
        self.publish_markers(())

    # ------------------------------------------------------------------ markers
    def marker_array(self, highlighted=()):
        """The MarkerArray of every bounding shape that collision checks use; bodies in ``highlighted`` red."""
        MarkerArray = self.transport.message_class("visualization_msgs/msg/MarkerArray")
        Marker = self.transport.message_class("visualization_msgs/msg/Marker")
        from mechanism_model_core.collision import shapes as S

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
                if isinstance(g, S.Box):
                    m.type = _CUBE
                    m.scale.x, m.scale.y, m.scale.z = g.x, g.y, g.z
                elif isinstance(g, S.Sphere):
                    m.type = _SPHERE
                    m.scale.x = m.scale.y = m.scale.z = 2 * g.radius
                elif isinstance(g, (S.Cylinder, S.Cone)):
                    m.type = _CYLINDER
                    m.scale.x = m.scale.y = 2 * g.radius
                    m.scale.z = g.length
                elif isinstance(g, S.Capsule):
                    m.type = _CYLINDER
                    m.scale.x = m.scale.y = 2 * g.radius
                    m.scale.z = g.length + 2 * g.radius
                elif isinstance(g, S.MeshFile):
                    m.type = _MESH
                    m.mesh_resource = g.uri if "://" in g.uri else "file://" + (g.path or g.uri)
                    m.scale.x, m.scale.y, m.scale.z = g.scale
                else:
                    continue
                m.color.r, m.color.g, m.color.b, m.color.a = HIT if spec.name in hot else FREE
                out.append(m)
        return MarkerArray(markers=out)

    def publish_markers(self, highlighted=()) -> None:
        self.markers_pub.publish(self.marker_array(highlighted))

    # ------------------------------------------------------------------ service
    def check(self, req, rep) -> None:
        """The ``check_state_validity`` handler (errors raised as RequestError; the server's guard answers)."""
        q = self.server.configuration(req.robot_state)
        margin = float(req.margin)
        if not math.isfinite(margin) or margin < 0:
            raise RequestError(ErrorCodes.FAILURE, f"margin must be finite and >= 0, got {margin}")
        try:
            from mechanism_model_core.collision import collisions, minimum_distance
            contacts = collisions(self.mechanism, q, margin=margin)
        except ImportError as exc:
            raise RequestError(ErrorCodes.FAILURE, str(exc)) from None
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
            m.contact_body_1, m.contact_body_2 = c.body_a, c.body_b
            m.body_type_1, m.body_type_2 = 0, 1 if c.environment else 0
            m.shape_1, m.shape_2 = c.shape_a, c.shape_b
            out.append(m)
        rep.valid = not out
        rep.contacts = out
        rep.minimum_distance = math.nan
        rep.closest_bodies, rep.closest_points = [], []
        if req.compute_distance:
            d = minimum_distance(self.mechanism, q)
            if d.body_a is not None:
                rep.minimum_distance = float(d.distance)
                rep.closest_bodies = [d.body_a, d.body_b]
                rep.closest_points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))
                                      for p in (d.point_a, d.point_b)]
            else:
                rep.minimum_distance = math.inf
        if req.highlight_contacts:
            self.publish_markers({c.body_a for c in contacts} | {c.body_b for c in contacts
                                                                 if not c.environment})
        rep.message = "" if rep.valid else \
            f"{len(out)} contacts: " + ", ".join(sorted({f'{c.body_a}/{c.body_b}' for c in contacts}))[:500]
