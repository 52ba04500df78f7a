"""A wheeled rover on terrain (CLARAty 004 section 12): :func:`settle` places the body (z, roll, pitch) and
the suspension for a given x, y, yaw so that every wheel rim touches the terrain; :func:`contacts` gives the
rim contacts at a configuration and :func:`tipover_margin` the rover's tip-over stability there.

Each function takes the :class:`~.wheeled.WheeledLocomotorModel` first (its methods of the same names call
these). Frames: ground frame for points and normals, m and rad. The solvers are
:mod:`~mechanism_model_core.locomotion.settling`'s reduced Newton (default) or, for comparison,
:func:`~mechanism_model_core.ik.solve_ik` with one :class:`WheelTerrainContact` constraint per wheel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..constraints import Constraint, _Common
from ..data import derived
from ..errors import InvalidConfiguration, UnknownFrame
from ..ik import solve_ik
from ..joints import JointType
from ..kinematics import forward_kinematics
from ..spatial import skew
from ..statics import center_of_mass, force_angle_margin, support_polygon_margin, total_mass
from .settling import WheelSettler

__all__ = ["SettledPose", "WheelTerrainContact", "settle", "contacts", "tipover_margin", "floating_joint",
           "contact_wheels"]


@dataclass(frozen=True)
class SettledPose:
    """A rover settled on terrain: ``q`` full configuration, ``success``/``reason``, per wheel ``points``
    (N, 3) rim contact points and ``normals`` (N, 3) terrain normals (ground frame), ``distances`` (N,) m,
    ``rim_angles`` (N,) rad where each contact lies on its rim (:mod:`.settling` defines the angle; the
    hints of the next pose when this one is passed as ``q0``), ``sensitivity`` (U, 3) the derivatives of the
    settled unknowns (z, roll, pitch, free suspension joints, in that order) with respect to the body's x, y
    and yaw (m/m, rad/m, 1/rad...): how the rover follows the terrain, used to predict the next pose."""

    q: np.ndarray
    success: bool
    reason: str
    points: np.ndarray
    normals: np.ndarray
    distances: np.ndarray
    iterations: int = 0
    rim_angles: np.ndarray | None = None
    sensitivity: np.ndarray | None = None


@dataclass
class _WheelRef:
    body: str
    axis: np.ndarray
    radius: float
    name: str


@dataclass(frozen=True, eq=False)
class WheelTerrainContact(_Common, Constraint):
    """A wheel rim touching a terrain (one residual row: the signed distance of the rim's contact point from
    the terrain's tangent plane, m). ``wheel`` has ``body`` (the spinning wheel's body: its origin is the
    wheel centre), ``axis`` (spin axis in that body) and ``radius``; ``terrain`` is a
    :class:`~mechanism_model_core.terrain.Terrain`. Jacobian: ``n . (J_v - [p - c]x J_w)`` of the rim point."""

    wheel: object = None
    terrain: object = None
    dimension = 1

    def bind(self, mechanism):
        if not mechanism.has_frame(self.wheel.body):
            raise UnknownFrame(self.wheel.body, mechanism.frame_names)
        return self

    def evaluate(self, ev, jac=True):
        T, J = ev.world(self.wheel.body, jac)
        c = T[:3, 3]
        a = T[:3, :3] @ self.wheel.axis
        ct = self.terrain.wheel_contact(c, a, self.wheel.radius)
        r = np.array([float(ct.distance)])
        if J is None:
            return r, None
        n = ct.normal
        row = n @ (J[:3] - skew(ct.point - c) @ J[3:])
        return r, row[None, :]

    def errors(self, r):
        return abs(float(r[0])), math.nan


def settle(model, terrain, x: float, y: float, yaw: float, q0=None, *, tol: float = 1e-9,
           max_iterations: int = 30, solver: str = "newton", timeout: float = 0.1,
           rim_angles=None) -> SettledPose:
    """Settle the body (z, roll, pitch) and the suspension joints on ``terrain`` with the body's x, y and
    yaw given (m, rad, ground frame) so that every wheel rim touches it (couplings such as a rocker
    differential kept).

    ``q0`` warm-starts: the previous :class:`SettledPose` along a path (its configuration and its
    contact angles on the wheel rims, ``rim_angles``, are the hints) or a configuration; steering,
    wheels and every other joint keep ``q0``'s values. ``solver="newton"`` (default) is the reduced
    Newton of :mod:`~mechanism_model_core.locomotion.settling` (unknowns z, roll, pitch and the free
    suspension joints only, analytic rim and terrain derivatives); ``solver="ik"`` hands one
    :class:`WheelTerrainContact` constraint per wheel to :func:`~mechanism_model_core.ik.solve_ik`
    (DLS, with the locks; slower, for comparison). ``tol`` (m) is the largest rim distance accepted;
    ``rim_angles`` (N,) overrides the rim-angle hints (rad, as :attr:`SettledPose.rim_angles`). A wrong
    hint costs iterations, never the answer: at convergence every rim is sampled once more for a lower
    point."""
    m = model.mechanism
    base, sl, free, idx, cols, lo, hi, refs, axes, radii, settler = settle_constants(model)
    previous = None
    if isinstance(q0, SettledPose):
        if rim_angles is None:
            rim_angles = q0.rim_angles
        if q0.success:
            previous = (q0.q, q0.sensitivity)
        q0 = q0.q
    if isinstance(q0, np.ndarray) and q0.shape == (m.nq,):
        q = np.array(q0, dtype=float)
    else:
        q = model.configuration(q0).copy()
    q[sl.start + 0], q[sl.start + 1], q[sl.start + 5] = x, y, yaw
    if q0 is None:
        q[sl.start + 2] = model.home[sl.start + 2] + float(terrain.height(x, y))
    if solver == "ik":
        locked = [c for c in m.independent_coordinates if c not in free]
        cons = [WheelTerrainContact(wheel=r, terrain=terrain, name=r.name) for r in refs]
        res = solve_ik(m, cons, q, solver="dls", timeout=timeout, tol_position=tol, locked=locked,
                       restarts=False)
        pts, nrm, dist = contacts(model, terrain, res.q)
        ok = bool(np.all(np.abs(dist) <= tol))
        return SettledPose(res.q, ok, "converged" if ok else res.reason, pts, nrm, dist, 0)
    if solver != "newton":
        raise InvalidConfiguration(f"settle: solver is 'newton' or 'ik', got {solver!r}")
    r = settler.solve(terrain, q, tol=tol, max_iterations=max_iterations, rim_angles=rim_angles,
                      previous=previous)
    return SettledPose(r.q, r.success, r.reason, r.points, r.normals, r.distances, r.iterations,
                       r.rim_angles, r.sensitivity)


def settle_constants(model):
    """The constants of settling ``model`` (a :class:`~.wheeled.WheeledLocomotorModel`; a value slot of its
    derived data, :mod:`..data`): the floating joint, its slice, the free unknowns with their indices,
    columns and limits, the wheels and the solver."""
    return derived(model, "wheeled.settle_constants", _prepare_settle)


def _prepare_settle(model):
    m = model.mechanism
    base = floating_joint(model)
    sl = m.joint_slice(base)
    free = [f"{base}.z", f"{base}.roll", f"{base}.pitch"] + [
        j for j in model.spec.suspension_joints if m.joint(j).coupling is None]
    idx = np.array([m.coordinate_index(c) for c in free])
    indep = {c: k for k, c in enumerate(m.independent_coordinates)}
    cols = np.array([indep[c] for c in free])
    lo, hi = m.lower_limits[idx], m.upper_limits[idx]
    refs = contact_wheels(model)
    axes = np.array([r.axis for r in refs])
    radii = np.array([r.radius for r in refs])
    settler = WheelSettler(m, [(r.body, r.axis, r.radius) for r in refs], free,
                           given=[f"{base}.x", f"{base}.y", f"{base}.yaw"])
    return base, sl, free, idx, cols, lo, hi, refs, axes, radii, settler


def contact_wheels(model):
    """Per wheel (wheel order): the spinning body, its spin axis in that body, the radius (m) and the name."""
    m = model.mechanism
    return [_WheelRef(m.child_body_of_joint(w.drive_joint), m.joint(w.drive_joint).axis, w.radius, w.name)
            for w in model.wheels]


def floating_joint(model) -> str:
    """The name of the floating joint above the body frame (the one settling moves)."""
    m = model.mechanism
    for b in m.path_to_ground(model.spec.body_frame if not m.has_frame(model.spec.body_frame)
                              else m.frame(model.spec.body_frame).body):
        j = m.body(b).joint
        if j is not None and j.type is JointType.FLOATING:
            return j.name
    raise InvalidConfiguration(f"{m.name!r}: settling needs a floating joint above the body")


def contacts(model, terrain, q):
    """Per wheel rim contact points, terrain normals (ground frame) and signed distances (m) at ``q``."""
    fk = forward_kinematics(model.mechanism, q)
    refs = contact_wheels(model)
    C = np.array([fk.position(r.body) for r in refs])
    A = np.array([fk.rotation(r.body) @ r.axis for r in refs])
    ct = terrain.wheel_contact(C, A, np.array([r.radius for r in refs]))
    return ct.point, ct.normal, ct.distance


def tipover_margin(model, terrain, q, method: str = "force_angle", gravity=(0.0, 0.0, -9.81),
                   contact_tol: float = 1e-6):
    """Tip-over stability of the rover at ``q`` on ``terrain`` (settle first, with
    :func:`.lift_off.settle_with_lift_off` near the limits): the rim contact points of the wheels **in contact**
    (rim distance within ``contact_tol`` m; a lifted wheel supports nothing) as the support, the whole
    mechanism's centre of mass, through the statics module's
    :func:`~mechanism_model_core.statics.force_angle_margin` (Papadopoulos and Rey, N rad; default) or
    :func:`~mechanism_model_core.statics.support_polygon_margin` (``method="support_polygon"``, m).
    Returns its :class:`~mechanism_model_core.statics.StabilityMargin` (tip-over axis and direction;
    its indices count the wheels in contact only)."""
    pts, _, dist = contacts(model, terrain, q)
    pts = pts[np.abs(dist) <= contact_tol]
    com = center_of_mass(model.mechanism, q)
    g = np.asarray(gravity, dtype=float)
    if method == "force_angle":
        return force_angle_margin(pts, com, total_mass(model.mechanism) * g)
    if method == "support_polygon":
        return support_polygon_margin(pts, com, g)
    raise InvalidConfiguration(f"tipover_margin: method is 'force_angle' or 'support_polygon', got {method!r}")
