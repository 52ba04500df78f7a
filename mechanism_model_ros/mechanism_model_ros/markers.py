"""RViz markers for what the model computes: plain geometry from the core's results (SI units, one frame per
marker set), turned into ``visualization_msgs/MarkerArray`` messages by :func:`marker_array`. The nodes only
call these and publish; they hold no geometry.

* :func:`wheel_command_markers` (locomotor, ``locomotor/markers``): each wheel's commanded contact velocity as
  an arrow from its contact point (length = speed x 1 s, so 0.1 m/s is a 0.1 m arrow), and the instantaneous
  centre of rotation of the commanded body twist (a sphere, with a line to each wheel contact), in the body
  frame; green while driving, yellow while the wheels wait for their steering, red when stopped or refused.
* :func:`statics_markers` (statics server, ``statics_server/markers``): the centre of mass (sphere) and its
  vertical projection, the support polygon of the contacts (closed line), each contact's load as an arrow
  along the force of the terrain on the mechanism (``load_scale`` m per N), and the stability margin as text
  (m, support-polygon measure); green when the margin is at least ``warn_margin``, orange below it, red when
  the mechanism would tip (margin <= 0).
* :func:`path_markers` (kinematics server, ``kinematics_server/planned_path``): the tool positions of a planned
  Cartesian path (line strip and points), green when the whole path was achieved, orange when partial.
* :func:`contact_markers` (kinematics server, ``kinematics_server/contacts``): contact points (spheres) and
  normals (arrows, ``normal_length`` m) of a state-validity check, red.
* :func:`reach_map_markers`: the voxels of a reachability map (:mod:`mechanism_model_core.reach`) as one cube
  list in the chain's base frame, each cube the voxel's size, coloured by its reachability index from red
  (few approach directions reached) through yellow to green (all of them); unreachable voxels are left out.

Marker types and actions are ``visualization_msgs/Marker``'s constants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from mechanism_model_core import forward_kinematics
from mechanism_model_core.joints import JointType
from mechanism_model_core.statics import Contact, wheel_contacts, center_of_mass, contact_loads, mechanism_stability

ARROW, CUBE, SPHERE, CYLINDER, LINE_STRIP, LINE_LIST, CUBE_LIST, SPHERE_LIST, TEXT = 0, 1, 2, 3, 4, 5, 6, 7, 9
ADD, DELETEALL = 0, 3

GREEN = (0.1, 0.8, 0.2, 1.0)
YELLOW = (0.95, 0.85, 0.1, 1.0)
ORANGE = (1.0, 0.5, 0.0, 1.0)
RED = (0.9, 0.1, 0.1, 1.0)
WHITE = (0.95, 0.95, 0.95, 1.0)
BLUE = (0.2, 0.5, 1.0, 1.0)


@dataclass
class MarkerSpec:
    """One marker: ``points`` (n, 3) in m in ``frame`` (arrows: start and end; line strips and lists, sphere
    lists: the vertices), ``position`` (spheres, text), ``scale`` (m: diameters, line widths, arrow shaft and
    head diameters), ``color`` RGBA, ``text``."""
    ns: str
    id: int
    type: int
    frame: str
    color: tuple
    scale: tuple = (0.02, 0.02, 0.02)
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    position: tuple = (0.0, 0.0, 0.0)
    text: str = ""
    colors: np.ndarray | None = None      # (n, 4) RGBA per point (cube and sphere lists), else None


def _rot2(theta: float) -> np.ndarray:
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def wheel_velocities(geometry, steering, rates) -> np.ndarray:
    """(N, 2) commanded contact velocities (m/s, body x-y) of the wheels: ``rates`` (rad/s) times the radius
    along each wheel's rolling direction turned by its steering angle (rad; NaN or a wheel without steering:
    not turned); ``geometry`` is the locomotor's :class:`~mechanism_model_core.locomotion.wheeled.WheelGeometry`."""
    out = np.zeros((len(geometry.radius), 2))
    for i in range(len(geometry.radius)):
        theta = float(steering[i]) if steering is not None and np.isfinite(steering[i]) else 0.0
        out[i] = _rot2(geometry.steer_sign[i] * theta if geometry.steer_sign[i] else 0.0) @ geometry.roll[i] * \
            float(rates[i]) * float(geometry.radius[i])
    return out


def rotation_centre(twist) -> np.ndarray | None:
    """The instantaneous centre of rotation (m, body x-y) of the planar twist ``(vx, vy, wz)`` (m/s, rad/s):
    the point of zero velocity ``(-vy / wz, vx / wz)``; None for a pure translation (|wz| < 1e-9) or rest."""
    vx, vy, wz = (float(v) for v in twist)
    if abs(wz) < 1e-9:
        return None
    return np.array([-vy / wz, vx / wz])


def wheel_command_markers(geometry, steering, rates, twist, frame: str, state: str = "driving") -> list:
    """Markers of one locomotor command (see the module documentation). ``state``: ``driving``, ``waiting``
    (steering first) or ``stopped``."""
    color = {"driving": GREEN, "waiting": YELLOW}.get(state, RED)
    v = wheel_velocities(geometry, steering, rates)
    out = []
    for i, p in enumerate(np.asarray(geometry.contact, dtype=float)):
        tip = p + np.array([v[i, 0], v[i, 1], 0.0])        # speed x 1 s
        out.append(MarkerSpec("wheel_velocity", i, ARROW, frame, color, (0.015, 0.03, 0.03), np.stack([p, tip])))
    icr = rotation_centre(twist) if state != "stopped" else None
    if icr is not None:
        z = float(np.mean(np.asarray(geometry.contact)[:, 2]))
        c = np.array([icr[0], icr[1], z])
        out.append(MarkerSpec("rotation_centre", 0, SPHERE, frame, color, (0.08, 0.08, 0.08), position=tuple(c)))
        spokes = np.concatenate([[c, p] for p in np.asarray(geometry.contact, dtype=float)])
        out.append(MarkerSpec("rotation_centre", 1, LINE_LIST, frame, color[:3] + (0.4,), (0.005, 0, 0), spokes))
    return out


def statics_markers(contact_points, com, forces, margin: float | None, frame: str, hull=(),
                    load_scale: float = 0.001, warn_margin: float = 0.05, up=(0.0, 0.0, 1.0)) -> list:
    """Markers of a statics evaluation, everything already in ``frame``: ``contact_points`` (n, 3) m,
    ``com`` (3,) m, ``forces`` (n, 3) N (terrain on mechanism; None: no loads), ``margin`` m (None: unknown),
    ``hull`` the support polygon's contact indices in order (from ``statics.support_polygon``)."""
    pts = np.asarray(contact_points, dtype=float).reshape(-1, 3)
    com = np.asarray(com, dtype=float).reshape(3)
    up = np.asarray(up, dtype=float) / np.linalg.norm(up)
    if margin is None:
        color = WHITE
    else:
        color = GREEN if margin >= warn_margin else (ORANGE if margin > 0 else RED)
    out = [MarkerSpec("center_of_mass", 0, SPHERE, frame, color, (0.06, 0.06, 0.06), position=tuple(com))]
    if len(pts):
        # the centre of mass projected along up onto the mean contact height
        h = float(np.mean(pts @ up))
        foot = com - (com @ up - h) * up
        out.append(MarkerSpec("center_of_mass", 1, LINE_STRIP, frame, color, (0.005, 0, 0), np.stack([com, foot])))
        out.append(MarkerSpec("center_of_mass", 2, SPHERE, frame, color, (0.03, 0.03, 0.03), position=tuple(foot)))
    if len(hull) >= 2:
        ring = pts[list(hull) + [hull[0]]]
        out.append(MarkerSpec("support_polygon", 0, LINE_STRIP, frame, color, (0.01, 0, 0), ring))
    if forces is not None:
        for i, (p, f) in enumerate(zip(pts, np.asarray(forces, dtype=float).reshape(-1, 3))):
            out.append(MarkerSpec("contact_loads", i, ARROW, frame, BLUE, (0.015, 0.03, 0.03),
                                  np.stack([p, p + load_scale * f])))
    if margin is not None:
        out.append(MarkerSpec("stability_margin", 0, TEXT, frame, color, (0, 0, 0.06),
                              position=tuple(com + 0.15 * up), text=f"margin={margin:.3f}m"))
    return out


def path_markers(points, frame: str, complete: bool) -> list:
    """The tool positions (n, 3) m of a planned path in ``frame``: a line strip and the waypoints."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    color = GREEN if complete else ORANGE
    if not len(pts):
        return []
    return [MarkerSpec("planned_path", 0, LINE_STRIP, frame, color, (0.006, 0, 0), pts),
            MarkerSpec("planned_path", 1, SPHERE_LIST, frame, color, (0.012, 0.012, 0.012), pts)]


def contact_markers(points, normals, frame: str, normal_length: float = 0.1) -> list:
    """Contact ``points`` (n, 3) m and unit ``normals`` (n, 3) in ``frame``."""
    pts = np.asarray(points, dtype=float).reshape(-1, 3)
    out = []
    if len(pts):
        out.append(MarkerSpec("contacts", 0, SPHERE_LIST, frame, RED, (0.03, 0.03, 0.03), pts))
    for i, (p, n) in enumerate(zip(pts, np.asarray(normals, dtype=float).reshape(-1, 3))):
        out.append(MarkerSpec("contact_normals", i, ARROW, frame, RED, (0.008, 0.016, 0.02),
                              np.stack([p, p + normal_length * n])))
    return out


def marker_frame(mechanism) -> str:
    """The frame model-wide markers are drawn in: the body on the first floating joint (a rover's chassis,
    on TF below odom or a localization frame), else the root."""
    for spec in mechanism.bodies[1:]:
        if spec.joint is not None and spec.joint.type is JointType.FLOATING:
            return spec.name
    return mechanism.bodies[0].name


def support_contacts(mechanism) -> list:
    """The contacts a mechanism stands on, by the library's naming: wheels (``<wheel>_contact`` frames, see
    ``statics.wheel_contacts``), else feet (frames ending in ``foot``); [] when it has neither."""
    try:
        contacts = wheel_contacts(mechanism)
    except Exception:
        contacts = []
    if contacts:
        return list(contacts)
    return [Contact(f) for f in mechanism.frame_names if f.lower().endswith("foot")]


def standing_statics_markers(mechanism, q, frame: str | None = None, gravity=(0.0, 0.0, -9.81), **kw) -> list:
    """:func:`statics_markers` of ``mechanism`` at ``q`` standing on :func:`support_contacts` on flat ground
    (normals up): the core's centre of mass, least-traction contact loads and support-polygon margin, moved
    into ``frame`` (default :func:`marker_frame`)."""
    frame = frame or marker_frame(mechanism)
    fk = forward_kinematics(mechanism, q)
    to_frame = np.linalg.inv(fk.pose(frame))
    R, t = to_frame[:3, :3], to_frame[:3, 3]
    com = R @ center_of_mass(mechanism, q) + t
    contacts = support_contacts(mechanism)
    if not contacts:
        return statics_markers(np.zeros((0, 3)), com, None, None, frame, **kw)
    pts = np.array([fk.position(c.frame) for c in contacts])
    try:
        forces = contact_loads(mechanism, q, contacts, gravity=gravity).forces @ R.T
    except Exception:          # an indeterminate or unsupported stance: no loads drawn
        forces = None
    stab = mechanism_stability(mechanism, q, contacts, gravity=gravity, method="support_polygon")
    up = -np.asarray(gravity, dtype=float)
    return statics_markers(pts @ R.T + t, com, forces, float(stab.margin), frame, hull=stab.hull,
                           up=R @ (up / np.linalg.norm(up)), **kw)


def planned_path_markers(arm, positions, complete: bool) -> list:
    """:func:`path_markers` of a :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel` path:
    the tool position at each of ``positions`` (chain coordinates) by forward kinematics, in the chain's base."""
    pts = np.array([arm.fk(q)[:3, 3] for q in positions]).reshape(-1, 3)
    return path_markers(pts, arm.base, complete)


def checked_contact_markers(mechanism, q, contacts, frame: str | None = None) -> list:
    """:func:`contact_markers` of ``mechanism_model_core.collision`` contacts (points and normals in the root
    frame) at ``q``, moved into ``frame`` (default :func:`marker_frame`)."""
    frame = frame or marker_frame(mechanism)
    T = np.linalg.inv(forward_kinematics(mechanism, q).pose(frame)) if frame != mechanism.bodies[0].name \
        else np.eye(4)
    pts = np.array([T[:3, :3] @ np.asarray(c.point, dtype=float) + T[:3, 3] for c in contacts]).reshape(-1, 3)
    normals = np.array([T[:3, :3] @ np.asarray(c.normal, dtype=float) for c in contacts]).reshape(-1, 3)
    return contact_markers(pts, normals, frame)


def index_color(index) -> np.ndarray:
    """RGBA (n, 4) for reachability indices in (0, 1]: red (0) through yellow (0.5) to green (1), opaque."""
    t = np.clip(np.asarray(index, dtype=float).reshape(-1), 0.0, 1.0)
    r = np.where(t < 0.5, 0.9, 0.9 * (1.0 - t) * 2.0 + 0.1 * (2.0 * t - 1.0))
    g = np.where(t < 0.5, 0.1 + 1.5 * t, 0.85 - 0.05 * (2.0 * t - 1.0))
    return np.stack([r, g, np.full_like(t, 0.1), np.ones_like(t)], axis=1)


def reach_map_markers(rmap, frame: str | None = None, min_index: float = 0.0, ns: str = "reach") -> list:
    """One cube list of the voxels of ``rmap`` (a :class:`~mechanism_model_core.reach.ReachMap`) whose index
    exceeds ``min_index``, at the voxel centres (m) in ``frame`` (default: the map's base frame), cubes the
    voxel size, colours by index (:func:`index_color`)."""
    keep = rmap.index.reshape(-1) > float(min_index)
    flat = np.nonzero(keep)[0]
    r = float(rmap.grid.resolution)
    return [MarkerSpec(ns, 0, CUBE_LIST, frame or rmap.base, (1.0, 1.0, 1.0, 1.0), (r, r, r),
                       points=rmap.grid.centers(flat), colors=index_color(rmap.index.reshape(-1)[flat]))]


def marker_array(transport, specs, stamp) -> object:
    """A ``visualization_msgs/MarkerArray``: a DELETEALL first (markers of the previous array that are not
    repeated disappear), then one marker per spec, stamped ``stamp`` ``(sec, nanosec)``."""
    MarkerArray = transport.message_class("visualization_msgs/msg/MarkerArray")
    Marker = transport.message_class("visualization_msgs/msg/Marker")
    Point = transport.message_class("geometry_msgs/msg/Point")
    clear = Marker()
    clear.action = DELETEALL
    out = [clear]
    for s in specs:
        m = Marker()
        m.header.stamp.sec, m.header.stamp.nanosec = int(stamp[0]), int(stamp[1])
        m.header.frame_id = s.frame
        m.ns, m.id, m.type, m.action = s.ns, int(s.id), int(s.type), ADD
        m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in s.position)
        m.pose.orientation.w = 1.0
        m.scale.x, m.scale.y, m.scale.z = (float(v) for v in s.scale)
        m.color.r, m.color.g, m.color.b, m.color.a = (float(v) for v in s.color)
        pts = []
        for p in np.asarray(s.points, dtype=float).reshape(-1, 3):
            pt = Point()
            pt.x, pt.y, pt.z = (float(v) for v in p)
            pts.append(pt)
        m.points = pts
        if s.colors is not None:
            ColorRGBA = transport.message_class("std_msgs/msg/ColorRGBA")
            cols = []
            for c in np.asarray(s.colors, dtype=float).reshape(-1, 4):
                col = ColorRGBA()
                col.r, col.g, col.b, col.a = (float(v) for v in c)
                cols.append(col)
            m.colors = cols
        m.text = s.text
        m.frame_locked = True
        out.append(m)
    return MarkerArray(markers=out)


__all__ = ["MarkerSpec", "checked_contact_markers", "index_color", "reach_map_markers",
           "contact_markers", "planned_path_markers", "marker_array", "marker_frame", "path_markers", "rotation_centre",
           "standing_statics_markers", "statics_markers", "support_contacts", "wheel_command_markers",
           "wheel_velocities"]
