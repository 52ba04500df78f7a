"""Near the limits of stability: wheel loads at the rim contacts, settling with lift-off, and slope sweeps.

* :func:`wheel_loads`: the quasi-static contact forces of a settled rover at its **rim contact points** (the
  points where each rim touches the terrain, as settling finds them; a frame is added on each wheel body there
  so that :func:`~mechanism_model_core.statics.contact_loads` takes them as points of the wheel, drive and
  steering joints holding, the suspension and the floating base passive -- except a suspension joint resting
  on its limit, which the limit holds), least traction, for any subset of the wheels.
* :func:`settle_with_lift_off`: settle every wheel on the terrain; while the wheels in contact cannot hold
  the rover with pushing forces only (``contact_loads`` keeps normal forces >= 0 and reports no
  equilibrium), lift the least loaded wheel (the one the terrain would have to pull down) and let the
  suspension and body find the new pose: the potential energy ``-m g . c`` is minimised over the settling
  unknowns (z, roll, pitch, free suspension joints; the body's x, y and yaw given, as in settling) with the
  wheels still in contact on the terrain (rim distance 0), the lifted ones above it (>= 0) and the joint
  limits (scipy's SLSQP). A wheel lifts only if the others still hold the centre of mass over their support
  polygon. The rover **tips** when the centre of mass is outside the support polygon of the wheels in
  contact (along gravity) or no pose exists with the lifted wheel off the ground.
* :func:`slope_sweep`: the same on planes of growing slope in one direction; reports the first slope where a
  wheel lifts and the slope where the rover tips, each refined by bisection.

Units: metres, radians, newtons; gravity in m/s^2 in the ground frame (default ``(0, 0, -9.81)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..builder import edit
from ..kinematics import forward_kinematics
from ..terrain import Plane
from .wheeled_terrain import settle_constants
from ..statics import total_mass, Contact, contact_loads, passive_coordinates, center_of_mass, support_polygon_margin

__all__ = ["WheelLoads", "LiftOffPose", "SlopeSweep", "wheel_loads", "settle_with_lift_off", "slope_sweep"]

GRAVITY = (0.0, 0.0, -9.81)


@dataclass(frozen=True)
class WheelLoads:
    """Contact forces at the rim contacts of the wheels in ``in_contact`` (wheel order, bool (N,)):
    ``normal`` (N,) N, 0 for wheels off the ground; ``forces`` (N, 3) ground frame; ``equilibrium`` (the
    passive joints balanced to 1e-9 of the weight); ``loads``: the
    :class:`~mechanism_model_core.statics.ContactLoads` of the
    wheels in contact."""

    normal: np.ndarray
    forces: np.ndarray
    in_contact: np.ndarray
    equilibrium: bool
    loads: object


@dataclass(frozen=True)
class LiftOffPose:
    """A rover settled with lift-off: ``settled`` (the :class:`~.wheeled.SettledPose`; ``settled.q`` the
    configuration, its ``distances`` > 0 for lifted wheels), ``in_contact`` (N,) bool (rim on the terrain
    within 1e-6 m), ``loads``
    (:class:`WheelLoads`), ``tips`` (no equilibrium: the rover tips over), ``reason``."""

    settled: object
    in_contact: np.ndarray
    loads: WheelLoads | None
    tips: bool
    reason: str = ""

    @property
    def q(self):
        return self.settled.q

    @property
    def lifted(self) -> list:
        """Indices of the wheels off the ground."""
        return [i for i, c in enumerate(self.in_contact) if not c]


@dataclass(frozen=True)
class SlopeSweep:
    """Result of :func:`slope_sweep`: ``slopes`` (K,) rad, per slope ``lifted`` (list of wheel names off the
    ground) and ``tips``; ``first_lift`` and ``tip`` (rad; None when not reached) refined to ``tol``;
    ``first_lift_wheels``: the wheels that lift first."""

    slopes: np.ndarray
    lifted: list
    tips: list
    first_lift: float | None
    first_lift_wheels: list
    tip: float | None


def _rim_mechanism(model, terrain, q, wheels):
    """The mechanism with a frame ``__rim_<i>`` on each listed wheel's body at its rim contact point."""
    m = model.mechanism
    pts, nrm, dist = model.contacts(terrain, q)
    fk = forward_kinematics(m, q)
    b = edit(m)
    names = []
    for i in wheels:
        body = m.child_body_of_joint(model.wheels[i].drive_joint)
        T = np.eye(4)
        T[:3, 3] = (np.linalg.inv(fk.pose(body)) @ np.append(pts[i], 1.0))[:3]     # a point of the wheel
        name = f"__rim_{i}"
        b.add_frame(body, name, T)
        names.append(name)
    return b.build(), names, nrm, dist


def wheel_loads(model, terrain, q, in_contact=None, gravity=GRAVITY, friction: float = 1.0) -> WheelLoads:
    """Least-traction contact forces of the rover at ``q`` on ``terrain`` at the rim contacts of the wheels
    ``in_contact`` (bool (N,); default all). ``friction`` only flags slip, it does not limit the forces."""
    q = np.asarray(q, dtype=float)
    mask = np.ones(model.n, bool) if in_contact is None else np.asarray(in_contact, bool)
    idx = [i for i in range(model.n) if mask[i]]
    m2, names, nrm, _ = _rim_mechanism(model, terrain, q, idx)
    contacts = [Contact(nm, nrm[i], friction) for nm, i in zip(names, idx)]
    # a passive joint resting on its limit is held there by the limit: it carries a torque
    m = model.mechanism
    at_limit = {c for c in m.independent_coordinates
                if (lambda k: q[k] <= m.lower_limits[k] + 1e-6 or q[k] >= m.upper_limits[k] - 1e-6)(
                    m.coordinate_index(c))}
    passive = [c for c in passive_coordinates(m) if c not in at_limit]
    loads = contact_loads(m2, q, contacts, gravity, passive=passive)
    normal = np.zeros(model.n)
    forces = np.zeros((model.n, 3))
    normal[idx] = loads.normal_forces
    forces[idx] = loads.forces
    # contact_loads' own equilibrium flag allows about 1e-3 of the weight; near the tipping point that is a
    # few micro-radians of slope: judge the passive joints' balance to 1e-9 of the weight instead
    weight = total_mass(m) * float(np.linalg.norm(gravity))
    balanced = bool(loads.equilibrium) and float(loads.residual) <= 1e-9 * max(1.0, weight)
    return WheelLoads(normal, forces, mask, balanced, loads)


def _potential(model, q, gravity):
    return -total_mass(model.mechanism) * float(np.asarray(gravity) @ center_of_mass(model.mechanism, q))


def settle_with_lift_off(model, terrain, x: float, y: float, yaw: float, q0=None, *, gravity=GRAVITY,
                         load_tol: float = 1e-6, tol: float = 1e-9) -> LiftOffPose:
    """Settle with lift-off (module docstring). ``load_tol`` (N): loads down to ``-load_tol`` count as
    contact. Returns a :class:`LiftOffPose`; ``tips`` True means no static pose holds. On any terrain
    (planes, height fields, meshes): where settling cannot put a wheel on the ground (over a step or a pit,
    its suspension on a joint limit), that wheel starts lifted."""
    s = model.settle(terrain, x, y, yaw, q0=q0, tol=tol)
    in_contact = np.ones(model.n, bool)          # the wheels the terrain may push (loads computed for them)
    settled = s
    if not s.success:
        # on uneven terrain a wheel may not reach the ground at all (over a step or a pit, its suspension on a
        # joint limit): settling then stops with that rim above the terrain and the others on it. Those
        # wheels are lifted from the start and the pose is relaxed with the others on the terrain
        d = np.asarray(s.distances, dtype=float)
        up = np.isfinite(d) & (d > 1e-6)
        on = np.isfinite(d) & (np.abs(d) <= 1e-6)
        if not up.any() or not np.all(up | on) or on.sum() < 3:
            return LiftOffPose(s, np.ones(model.n, bool), None, False, f"settling failed: {s.reason}")
        in_contact = on
        u, message = _relax(model, terrain, s.q, in_contact, None, gravity)
        if u is None:
            return LiftOffPose(s, np.ones(model.n, bool), None, False,
                               f"settling failed: {s.reason}; no pose with {_names(model, ~in_contact)} "
                               f"lifted ({message})")
        settled = _pose(model, terrain, s, u, "settled with lift-off")
    q = settled.q.copy()
    g = np.asarray(gravity, dtype=float)
    for _ in range(model.n):
        loads = wheel_loads(model, terrain, q, in_contact, gravity)
        pts = settled.points
        if _margin(model, pts[in_contact], q, g) < 0:
            return _result(settled, in_contact, loads, True, "the centre of mass is outside the support "
                                                             "polygon of the wheels in contact")
        worst = int(np.argmin(np.where(in_contact, loads.normal, np.inf)))
        if loads.equilibrium and loads.normal[worst] >= -load_tol:
            return _result(settled, in_contact, loads, False, "")
        # contact_loads keeps normal forces >= 0: out of equilibrium, the least loaded wheel is the one the
        # terrain would have to pull down. It lifts if the others can still hold the rover up (the centre of
        # mass over their support polygon); else the rover stands on every wheel it has, needing more
        # traction than the least-traction forces (a rigid body on more than three points)
        trial = in_contact.copy()
        trial[worst] = False
        if trial.sum() < 3 or _margin(model, pts[trial], q, g) < 0:
            return _result(settled, in_contact, loads, False,
                           "the wheels hold the rover with more traction than the least-traction forces")
        in_contact = trial
        u, message = _relax(model, terrain, q, in_contact, worst, gravity)
        if u is None:
            return _result(settled, in_contact, loads, True,
                           f"no pose with wheel {model.names[worst]} lifted ({message})")
        settled = _pose(model, terrain, s, u, "settled with lift-off")
        q = settled.q
    return _result(settled, in_contact, None, True, "every wheel lifted")


def _names(model, mask):
    return ", ".join(model.names[i] for i in np.flatnonzero(mask))


def _pose(model, terrain, like, q, reason):
    """A :class:`~.wheeled.SettledPose` (the type of ``like``) at ``q`` with its rim contacts on ``terrain``."""
    pts, nrm, dd = model.contacts(terrain, q)
    return type(like)(q, True, reason, pts, nrm, dd, 0)


def _relax(model, terrain, q_start, in_contact, lifting, gravity):
    """The configuration of least potential energy ``-m g . c`` over the settling unknowns (z, roll, pitch,
    free suspension joints; everything else as in ``q_start``) with the wheels ``in_contact`` (bool (N,)) on
    the terrain, no rim below it and the joint limits (scipy's SLSQP), or ``(None, message)``. ``lifting``:
    the wheel just lifted (the start raises it a little: at its lift-off angle the energy is flat to first
    order and SLSQP would stay where it starts); None when the lifted wheels are already clear."""
    from scipy.optimize import minimize

    m = model.mechanism
    _, _, _, idx, _, lo, hi, *_ = settle_constants(model)

    def full(u):
        qq = q_start.copy()
        qq[idx] = u
        return m.apply_couplings(qq) if m.couplings else qq

    def dist(u):
        return model.contacts(terrain, full(u))[2]

    on = np.flatnonzero(in_contact)
    scale = max(1.0, abs(_potential(model, q_start, gravity)))
    u0 = q_start[idx].copy()
    if lifting is not None:
        grad = np.array([(dist(u0 + 1e-6 * e)[lifting] - dist(u0)[lifting]) / 1e-6 for e in np.eye(len(u0))])
        if np.linalg.norm(grad) > 0:
            u0 = u0 + 1e-3 * grad / np.linalg.norm(grad)
    u0 = np.clip(u0, np.where(np.isfinite(lo), lo, -np.inf), np.where(np.isfinite(hi), hi, np.inf))
    res = minimize(lambda u: _potential(model, full(u), gravity) / scale, u0, method="SLSQP",
                   bounds=[(a if np.isfinite(a) else None, b if np.isfinite(b) else None) for a, b in zip(lo, hi)],
                   constraints=[{"type": "ineq", "fun": dist}],   # unilateral: no rim below the terrain
                   options={"maxiter": 200, "ftol": 1e-14})

    def feasible(u):
        d = dist(u)
        return bool(np.all(np.abs(d[on]) <= 1e-6) and np.all(d >= -1e-6))
    # SLSQP may stop on a degenerate start (a rigid body on more contacts than it needs): the start is then
    # kept, it is feasible; else the lower-energy feasible one
    cands = [u for u in (res.x, q_start[idx]) if feasible(u)]
    if not cands:
        return None, str(res.message)
    return full(min(cands, key=lambda u: _potential(model, full(u), gravity))), ""


def _margin(model, points, q, g):
    """Support-polygon margin (m) of the centre of mass over ``points`` along gravity (negative: outside)."""
    if len(points) < 3:
        return -math.inf
    return float(support_polygon_margin(points, center_of_mass(model.mechanism, q), g).margin)


def _result(settled, in_contact, loads, tips, reason):
    """The pose; a wheel counts as lifted when its rim is off the terrain (a wheel touching with no load, as
    the fourth leg of a rigid table, is in contact)."""
    touching = np.abs(np.asarray(settled.distances)) <= 1e-6
    return LiftOffPose(settled, touching, loads, tips, reason)


def slope_sweep(model, slopes, direction: float = 0.0, *, x: float = 0.0, y: float = 0.0, yaw: float = 0.0,
                gravity=GRAVITY, tol: float = 1e-4) -> SlopeSweep:
    """Settle with lift-off on planes ``Plane.from_slope(slope, direction)`` for each of ``slopes`` (rad,
    increasing); the first lift and the tip are refined by bisection to ``tol`` rad between the sampled
    slopes that bracket them."""
    slopes = np.asarray(slopes, dtype=float)

    def at(a):
        return settle_with_lift_off(model, Plane.from_slope(float(a), direction), x, y, yaw, gravity=gravity)

    res = [at(a) for a in slopes]
    lifted = [[model.names[i] for i in r.lifted] for r in res]
    tips = [bool(r.tips) for r in res]

    def refine(pred):
        k = next((i for i, r in enumerate(res) if pred(r)), None)
        if k is None:
            return None, None
        if k == 0:
            return float(slopes[0]), res[0]
        a, b, rb = float(slopes[k - 1]), float(slopes[k]), res[k]
        while b - a > tol:
            mid = 0.5 * (a + b)
            rm = at(mid)
            if pred(rm):
                b, rb = mid, rm
            else:
                a = mid
        return b, rb

    first, rfirst = refine(lambda r: r.tips or bool(r.lifted))
    tip, _ = refine(lambda r: r.tips)
    wheels = [] if rfirst is None else [model.names[i] for i in range(model.n) if not rfirst.in_contact[i]]
    return SlopeSweep(slopes, lifted, tips, first, wheels, tip)
