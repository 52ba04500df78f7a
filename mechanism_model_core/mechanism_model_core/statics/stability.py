"""Static stability of a mechanism standing on contacts: the support-polygon margin and Papadopoulos and
Rey's force-angle measure, each with the tip-over axis and direction.

Both take plain arrays (contact points and the centre of mass in one frame, usually the world), so a rover,
a walker or anything else calls them with whatever contacts it has; :func:`mechanism_stability` does the
kinematics for a :class:`~mechanism_model_core.model.Mechanism` and its contact frames.

*Support polygon* -- the convex hull of the contact points projected along gravity onto a plane normal to
it. The static stability margin (McGhee and Frank, 1968) is the signed distance (m) from the projection of
the centre of mass to the nearest hull edge: positive inside, negative outside, zero on an edge.

*Force-angle* (E. G. Papadopoulos and D. A. Rey, "A new measure of tipover stability margin for mobile
manipulators", ICRA 1996) -- for each tip-over axis ``a_i`` (a hull edge, joining two real 3D contact points)
the angle ``theta_i`` between the net force on the body ``f_r`` (gravity and every other force except the
support reactions; a net moment ``n_r`` about the centre of mass enters as the equivalent force couple
``f_i* = f_i + l_i^ x n_i / |l_i|``) and the axis normal ``l_i`` from the centre of mass to the axis. The
measure is ``beta = min_i theta_i |f_r|`` (N rad); positive is stable, zero is about to tip, negative is
tipping. It is insensitive to where the contacts are vertically (a rover on a slope), and it sees
top-heaviness through the angle.

Contacts are ordered counter-clockwise about the up direction (minus gravity, or minus the net force) by the
hull computation; every returned index refers to the caller's contact list.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import MechanismModelError
from .gravity import Wrench, parse_gravity
from .mass import center_of_mass, total_mass
from ..kinematics import forward_kinematics

__all__ = ["StabilityMargin", "support_polygon", "support_polygon_margin", "force_angle_margin",
           "mechanism_stability"]


@dataclass(frozen=True, eq=False)
class StabilityMargin:
    """The result of a stability measure.

    ``margin``: the measure (m for the support-polygon margin, N rad for the force-angle measure); positive
    is stable. ``stable``: ``margin > 0``. ``hull``: indices of the contacts on the support polygon,
    counter-clockwise about up. ``edge_margins``: the measure per hull edge ``hull[k] -> hull[k + 1]``.
    ``edge``: the critical edge as a pair of contact indices. ``tipover_axis``: unit vector along the
    critical edge (from ``edge[0]`` to ``edge[1]``; the body would rotate about it, right-handed, when it
    tips). ``tipover_direction``: the unit horizontal (normal to up) direction in which the centre of mass
    moves when it tips. ``angles`` (force-angle only): ``theta_i`` per edge (rad); ``angle`` their minimum.
    """

    margin: float
    stable: bool
    hull: tuple
    edge_margins: np.ndarray
    edge: tuple
    tipover_axis: np.ndarray
    tipover_direction: np.ndarray
    angles: np.ndarray | None = None
    angle: float | None = None


def _vec3(v, what: str) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise MechanismModelError(f"{what} must be 3 finite numbers, got {v!r}")
    return a


def _points(points) -> np.ndarray:
    p = np.asarray(points, dtype=float)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) == 0:
        raise MechanismModelError(f"contact points must have shape (n, 3) with n >= 1, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise MechanismModelError("contact points must be finite")
    return p


def _up(direction, what: str) -> np.ndarray:
    d = _vec3(direction, what)
    n = float(np.linalg.norm(d))
    if n < 1e-12:
        raise MechanismModelError(f"{what} must not be zero")
    return -d / n


def _plane_basis(up: np.ndarray):
    """Two unit vectors that complete ``up`` to a right-handed frame (e1, e2, up)."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(up[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(helper, up)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(up, e1)


def support_polygon(points, up=(0.0, 0.0, 1.0), tol: float = 1e-9) -> tuple:
    """Indices of the contact ``points`` (n, 3) on the convex hull of their projection onto the plane normal
    to ``up``, counter-clockwise about ``up``; collinear points on an edge are left out. Two distinct points
    give both (a line support), coincident ones a single index: points closer than ``tol`` times twice the
    points' largest distance from their centroid (at least 1 m) count once, the first standing for the others."""
    p = _points(points)
    upv = _vec3(up, "up")
    upv = upv / np.linalg.norm(upv)
    e1, e2 = _plane_basis(upv)
    xy = np.stack([p @ e1, p @ e2], axis=1)
    # points closer than tol * scale count once; scale: the points' diameter (twice the largest distance from
    # their centroid, at least 1 m), the same whatever the plane's basis or the points' yaw
    scale = max(1.0, 2.0 * float(np.max(np.hypot(*(xy - xy.mean(axis=0)).T))))
    keep = []
    for i in range(len(p)):
        if all(np.hypot(*(xy[i] - xy[k])) > tol * scale for k in keep):
            keep.append(i)
    order = sorted(keep, key=lambda i: (xy[i, 0], xy[i, 1]))

    def cross(o, a, b):
        return (xy[a, 0] - xy[o, 0]) * (xy[b, 1] - xy[o, 1]) - (xy[a, 1] - xy[o, 1]) * (xy[b, 0] - xy[o, 0])

    eps = 0.0        # exact orientation tests: a tolerance here breaks the sort order of near-equal points
    lower, upper = [], []
    for i in order:                       # Andrew's monotone chain
        while len(lower) >= 2 and cross(lower[-2], lower[-1], i) <= eps:
            lower.pop()
        lower.append(i)
    for i in reversed(order):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], i) <= eps:
            upper.pop()
        upper.append(i)
    hull = lower[:-1] + upper[:-1]
    if not hull:
        hull = [order[0]]
    if len(hull) == 2 and np.linalg.norm(xy[hull[0]] - xy[hull[1]]) <= tol * scale:
        hull = hull[:1]
    return tuple(int(i) for i in hull)


def _single_point(p, com, up, measure):
    """Support on one point: the margin is minus the horizontal distance to it (or 0 when above it)."""
    d = com - p[0]
    horiz = d - (d @ up) * up
    dist = float(np.linalg.norm(horiz))
    direction = horiz / dist if dist > 1e-12 else np.zeros(3)
    axis = np.cross(up, direction) if dist > 1e-12 else np.zeros(3)
    return -dist, direction, axis


def support_polygon_margin(points, com, gravity=(0.0, 0.0, -9.81)) -> StabilityMargin:
    """The static stability margin (m): signed horizontal distance from the centre of mass ``com`` to the
    nearest edge of the support polygon of the contact ``points`` (n, 3), both in one frame; horizontal means
    normal to ``gravity`` (any non-zero vector in that frame; only its direction matters). Positive inside.

    A line support (two contacts, or all collinear) has a margin of minus the distance to the line; a single
    contact, minus the distance to it."""
    p = _points(points)
    c = _vec3(com, "the centre of mass")
    up = _up(gravity, "gravity")
    hull = support_polygon(p, up)
    if len(hull) == 1:
        m, direction, axis = _single_point(p[list(hull)], c, up, "polygon")
        return StabilityMargin(m, m > 0, hull, np.array([m]), (hull[0], hull[0]), axis, direction)
    margins, axes, outward = [], [], []
    for k in range(len(hull)):
        a_pt, b_pt = p[hull[k]], p[hull[(k + 1) % len(hull)]]
        e = b_pt - a_pt
        e_h = e - (e @ up) * up               # the edge seen from above
        e_h /= np.linalg.norm(e_h)
        inward = np.cross(up, e_h)
        margins.append(float(inward @ (c - a_pt)))
        axis = e / np.linalg.norm(e)
        axes.append(axis)
        outward.append(-inward)
    margins = np.array(margins)
    k = int(np.argmin(margins))
    edge = (hull[k], hull[(k + 1) % len(hull)])
    m = float(margins[k])
    return StabilityMargin(m, m > 0, hull, margins, edge, axes[k], outward[k])


def force_angle_margin(points, com, force, moment=None, up=None) -> StabilityMargin:
    """Papadopoulos and Rey's force-angle stability measure (ICRA 1996).

    ``points`` (n, 3): ground contact points; ``com`` (3,): centre of mass; ``force`` (3,): net force on
    the mechanism without the support reactions (N: ``total_mass * gravity`` at rest, plus payload,
    manipulation and inertial forces); ``moment`` (3,): net moment of those forces about the centre of mass
    (N m, default zero); all in one frame. ``up`` orders the support polygon (default ``-force``).

    Returns a :class:`StabilityMargin` whose ``margin`` is ``min_i theta_i * |force|`` (N rad), ``angles``
    the ``theta_i`` (rad, positive when the force line passes inside the tip-over axis ``i``) and
    ``tipover_direction`` the horizontal outward normal of the critical axis.
    """
    p = _points(points)
    c = _vec3(com, "the centre of mass")
    f = _vec3(force, "the net force")
    fn = float(np.linalg.norm(f))
    if fn < 1e-12:
        raise MechanismModelError("the net force must not be zero (no gravity, nothing holds it down)")
    n_r = np.zeros(3) if moment is None else _vec3(moment, "the net moment")
    upv = -f / fn if up is None else _up(-np.asarray(up, dtype=float), "up")
    hull = support_polygon(p, upv)
    if len(hull) == 1:
        m, direction, axis = _single_point(p[list(hull)], c, upv, "force")
        return StabilityMargin(m * fn, m > 0, hull, np.array([m * fn]), (hull[0], hull[0]), axis, direction,
                               np.array([0.0 if m == 0 else -math.pi / 2]), 0.0 if m == 0 else -math.pi / 2)
    angles, axes, outward = [], [], []
    for k in range(len(hull)):
        a_pt, b_pt = p[hull[k]], p[hull[(k + 1) % len(hull)]]
        a = b_pt - a_pt
        a /= np.linalg.norm(a)
        P = np.eye(3) - np.outer(a, a)
        l_vec = P @ (a_pt - c)                 # from the centre of mass to the axis, normal to it
        ln = float(np.linalg.norm(l_vec))
        f_i = P @ f
        n_i = np.outer(a, a) @ n_r
        if ln < 1e-12:                          # centre of mass on the axis: neutral
            angles.append(0.0)
        else:
            l_hat = l_vec / ln
            f_star = f_i + np.cross(l_hat, n_i) / ln
            fs = float(np.linalg.norm(f_star))
            if fs < 1e-12:
                angles.append(0.0)
            else:
                f_hat = f_star / fs
                theta = math.acos(max(-1.0, min(1.0, float(f_hat @ l_hat))))
                sign = 1.0 if float(np.cross(l_hat, f_hat) @ a) >= 0 else -1.0
                angles.append(sign * theta)
        axes.append(a)
        out = np.cross(a, upv)
        nrm = float(np.linalg.norm(out))
        outward.append(out / nrm if nrm > 1e-12 else out)
    angles = np.array(angles)
    k = int(np.argmin(angles))
    edge = (hull[k], hull[(k + 1) % len(hull)])
    margins = angles * fn
    return StabilityMargin(float(margins[k]), bool(margins[k] > 0), hull, margins, edge, axes[k], outward[k],
                           angles, float(angles[k]))


def mechanism_stability(mechanism, q, contacts, gravity=(0.0, 0.0, -9.81), method: str = "force_angle",
                        payloads=None, wrenches=()) -> StabilityMargin:
    """Tip-over stability of ``mechanism`` at ``q`` standing on ``contacts`` (frame names or
    :class:`~.contacts.Contact` objects; their origins are the contact points): ``method`` is
    ``"force_angle"`` (net force: weight with ``payloads`` plus the forces of applied ``wrenches``; net moment
    about the centre of mass) or ``"support_polygon"`` (the static margin in metres)."""
    if method not in ("force_angle", "support_polygon"):
        raise MechanismModelError(f"method must be 'force_angle' or 'support_polygon', got {method!r}")
    g = parse_gravity(gravity)
    qf = mechanism.configuration(q)
    fk = forward_kinematics(mechanism, qf)
    names = [c if isinstance(c, str) else c.frame for c in contacts]
    pts = np.array([fk.position(n) for n in names]) if names else np.zeros((0, 3))
    com = center_of_mass(mechanism, qf, payloads=payloads)
    if method == "support_polygon":
        return support_polygon_margin(pts, com, g)
    M = total_mass(mechanism) + sum(float(p.mass) for p in (payloads or ()))
    force = M * g
    moment = np.zeros(3)
    for w in wrenches:
        if not isinstance(w, Wrench):
            raise MechanismModelError(f"expected a Wrench, got {w!r}")
        R = np.eye(3) if w.expressed_in in (None, mechanism.ground) else fk.rotation(w.expressed_in)
        f, n = R @ w.force, R @ w.torque
        force = force + f
        moment = moment + np.cross(fk.position(w.frame) - com, f) + n
    return force_angle_margin(pts, com, force, moment, up=-g)
