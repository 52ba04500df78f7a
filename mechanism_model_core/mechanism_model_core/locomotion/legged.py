"""Legged_Locomotor_Model: legs, body-pose IK with planted feet, static stability and statically stable gaits
(CLARAty 11-12: "flat-ground open-loop walking and slope differential walking").

>>> walker = LeggedLocomotorModel(load_model(model_path("lemur/lemur_hexapod.xml")))
>>> plan = walker.plan_gait("tripod", (0.05, 0.0, 0.0), cycles=2)        # vx, vy (m/s), wz (rad/s)
>>> plan.trajectory          # JointTrajectory of every leg joint, for joint_trajectory_controller(s)
>>> plan.margins             # static stability margin (m) at every sample, all > min_margin

**Legs** are found from the model and a short description (:class:`LegSpec`, :meth:`LeggedLocomotorModel.
from_description`): the body is the child of the floating joint; the feet are the frames whose names end
in ``foot`` (or those the description lists); a leg is the chain from the body frame to its foot, its
*walking joints* those of its moving joints that move the foot point (a joint whose axis passes through the
foot, such as ATHLETE's ankle steering, does not, and is held). Legs are named after their foot frame's
prefix (``leg1_foot`` -> ``leg1``) and classified left/right and front-to-rear from their foot's neutral
position in the body frame (x forward, y left).

**Leg IK** puts a foot at a point given in the body frame: the closed form registered for the leg
(:func:`register_leg_solver`; :class:`YPPLegSolver`, the yaw-pitch-pitch closed form of LEMUR-like legs,
is used for every leg of that structure unless another is registered), else damped Newton steps on the
leg chain from the previous configuration, then the generic solver. :meth:`body_ik` moves the body (shift
and tilt) with the feet planted.

**Stability**: :meth:`static_margin` is the support-polygon margin (m, McGhee-Frank) of the centre of mass
over the stance feet, from :mod:`mechanism_model_core.statics`.

**Gaits** (:meth:`plan_gait`): periodic gaits for a constant body twist ``(vx, vy, wz)`` (body frame):
``tripod`` (duty factor 1/2), ``ripple`` (2/3) and ``wave`` (5/6) for six legs, ``crawl`` (3/4) for four.
A leg's phase ``psi = (t / period + offset) mod 1``: stance while ``psi < duty``, swing after. Each
foothold is the foot's neutral point carried by the body pose at mid-stance (so a stance foot sweeps
symmetrically about its neutral point); stance feet stay where they touched down; swing feet move on a
minimum-jerk profile between footholds, lifted by ``swing_height`` (a ``64 u^3 (1-u)^3`` bump: zero
velocity and acceleration at lift-off and touch-down). On a :mod:`~mechanism_model_core.terrain` (a height
field, a plane), footholds are placed on the ground under them (``terrain.height``), the swing clearance is
added above the higher of the two footholds' line, and the body height follows the mean ground height
under the neutral feet (the body stays level, or tilts with the fitted ground plane: ``body_tilt``).
Every sample is checked: leg IK within limits, joint speeds within their limits, and a static margin of at
least ``min_margin``; a gait that fails one is refused with :class:`GaitInfeasible` naming the leg, the
time and the quantity.

Units: metres, radians, seconds; poses ``T_world_body`` in the mechanism's ground frame.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Mapping, Sequence

import numpy as np

from ..errors import InvalidConfiguration, ModelStructureError, UnknownFrame
from ..joints import JointType
from ..kinematics import forward_kinematics
from ..model import Mechanism
from ..spatial import matrix_to_rpy
from ..ik.closed_form.ypp_leg import YPPLegSolver
from ..ik.leg_points import GenericLegSolver
from .manipulator import ManipulatorModel
from .gaits import GAITS, GaitInfeasible, GaitPlan, LegSpec, _gait_offsets, _min_jerk
from .trajectory import JointTrajectory
from ..statics import center_of_mass, support_polygon_margin, support_polygon

__all__ = ["GAITS", "GaitInfeasible", "GaitPlan", "LegSpec", "LeggedLocomotorModel", "YPPLegSolver",
           "register_leg_solver"]


# ---------------------------------------------------------------------------------------------- solvers
_LEG_SOLVERS: dict[tuple[str, str], Callable] = {}


def register_leg_solver(mechanism_name: str, foot: str, factory: Callable[[ManipulatorModel, Sequence[int]], object]):
    """Use ``factory(leg_chain, walking_columns)`` as the closed-form IK of the leg ending at ``foot`` on
    mechanisms named ``mechanism_name`` (``"*"``: any). The solver offers ``solve(p, q_ref) -> (q, ok)`` for
    a batch of foot points ``p`` (B, 3) in the body frame, returning walking-joint values (B, k) nearest
    ``q_ref`` (k,) and a (B,) success mask; a factory raising :class:`ModelStructureError` is skipped."""
    _LEG_SOLVERS[(mechanism_name, foot)] = factory


# ---------------------------------------------------------------------------------------------- legs





class LeggedLocomotorModel:
    """A walking mechanism (CLARAty Legged_Locomotor_Model). See the module docstring.

    ``feet``: foot frame names (default: every frame whose name ends in ``foot``); ``body``: the body frame
    (default: the child of the floating joint); ``stand``: the standing configuration (default home) that
    defines the neutral foot points; ``names``: leg names per foot (default the foot name's prefix).
    """

    def __init__(self, mechanism: Mechanism, feet: Sequence[str] | None = None, body: str | None = None,
                 stand=None, names: Mapping[str, str] | None = None):
        m = mechanism
        self.mechanism = m
        floating = [j for j in m.joints if j.type is JointType.FLOATING]
        if body is None:
            if not floating:
                raise ModelStructureError(f"{m.name!r} has no floating joint: name the body frame")
            body = m.child_body_of_joint(floating[0].name)
        if not m.has_frame(body):
            raise UnknownFrame(body, m.frame_names)
        self.body = body
        bj = m.body(m.frame(body).body).joint
        if bj is None or bj.type is not JointType.FLOATING or m.body(m.frame(body).body).parent.name != m.ground:
            raise ModelStructureError(f"the body {body!r} must hang from the ground on a floating joint")
        self._float_joint = bj
        self._float_idx = np.arange(m.joint_slice(bj.name).start, m.joint_slice(bj.name).stop)
        self._T_frame = m.frame_in_body(body)
        if feet is None:
            feet = [f for f in m.frame_names if f.endswith("foot")]
        if not feet:
            raise ModelStructureError(f"no foot frames found in {m.name!r} (frames named '*foot'); list them")
        self.stand = m.configuration(stand)
        fk = forward_kinematics(m, self.stand)
        T_wb = fk.pose(body)
        self.legs: list[LegSpec] = []
        self._chains: list[ManipulatorModel] = []
        self._walk_cols: list[np.ndarray] = []
        self._solvers: list = []
        for foot in feet:
            if not m.has_frame(foot):
                raise UnknownFrame(foot, m.frame_names)
            chain = ManipulatorModel(m, tool=foot, base=body, name=foot)
            moving = self._walking(chain)
            held = tuple(n for k, n in enumerate(chain.joint_names) if k not in moving)
            p = (np.linalg.inv(T_wb) @ np.append(fk.position(foot), 1.0))[:3]
            name = (names or {}).get(foot) or re.sub(r"_?foot$", "", foot) or foot
            self.legs.append(LegSpec(name, foot, tuple(chain.joint_names[k] for k in moving), held,
                                     1.0 if p[1] > 0 else -1.0, p))
            self._chains.append(chain)
            self._walk_cols.append(np.array(moving, dtype=int))
            self._solvers.append(self._closed_form(chain, moving))
        names_ = [l.name for l in self.legs]
        if len(set(names_)) != len(names_):
            raise ModelStructureError(f"leg names are not unique: {names_}")
        self.joint_names = tuple(n for l in self.legs for n in l.joints)
        self._joint_idx = np.array([m.coordinate_index(n) for n in self.joint_names], dtype=int)
        v = np.array([m.joint(m.coordinate_joint[i]).velocity for i in self._joint_idx], dtype=float)
        self.velocity_limits = v

    # ------------------------------------------------------------------ construction helpers
    @staticmethod
    def _walking(chain: ManipulatorModel) -> list[int]:
        """Columns of the chain's joints that move the foot point (a joint whose axis passes through the foot
        point does not)."""
        c = chain.chain
        fk = forward_kinematics(c, np.zeros(c.nq))
        f = fk.position(chain.tool)
        out = []
        for k, n in enumerate(chain.joint_names):
            j = c.joint(c.coordinate_joint[k])
            if j.dof != 1:
                raise ModelStructureError(f"leg joint {j.name!r}: only single-DOF joints in legs")
            T = fk.pose(c.child_body_of_joint(j.name))
            a = T[:3, :3] @ j.axis
            if j.type is JointType.PRISMATIC or np.linalg.norm(np.cross(a, f - T[:3, 3])) > 1e-9:
                out.append(k)
        return out

    def _closed_form(self, chain: ManipulatorModel, moving):
        for key in ((self.mechanism.name, chain.tool), ("*", chain.tool), (self.mechanism.name, "*"), ("*", "*")):
            factory = _LEG_SOLVERS.get(key)
            if factory is not None:
                try:
                    return factory(chain, moving)
                except ModelStructureError:
                    continue
        return None

    @classmethod
    def from_description(cls, mechanism: Mechanism, description: Mapping) -> "LeggedLocomotorModel":
        """From a short description: ``{"body": frame, "feet": [frames] or {leg: frame}, "stand": {joint:
        value}}`` (every key optional)."""
        known = {"body", "feet", "stand"}
        extra = set(description) - known
        if extra:
            raise InvalidConfiguration(f"unknown key(s) {sorted(extra)} in a legged description; known: {sorted(known)}")
        feet = description.get("feet")
        names = None
        if isinstance(feet, Mapping):
            names = {v: k for k, v in feet.items()}
            feet = list(feet.values())
        return cls(mechanism, feet=feet, body=description.get("body"), stand=description.get("stand"),
                   names=names)

    def description(self) -> dict:
        """What :meth:`from_description` reads back (CLARAty 11.5; the file:
        :mod:`mechanism_model_core.io.legged_xml`)."""
        stand = {n: float(self.stand[self.mechanism.coordinate_index(n)]) for n in self.joint_names}
        return {"body": self.body, "feet": {l.name: l.foot for l in self.legs}, "stand": stand}

    def leg(self, name: str) -> LegSpec:
        for l in self.legs:
            if l.name == name or l.foot == name:
                return l
        raise KeyError(f"no leg {name!r}; legs: {[l.name for l in self.legs]}")

    def solver_of(self, leg: str):
        """The closed-form solver used for a leg (None: generic)."""
        return self._solvers[self.legs.index(self.leg(leg))]

    # ------------------------------------------------------------------ body pose <-> coordinates
    def body_pose(self, q) -> np.ndarray:
        """``T_world_body`` at configuration ``q``."""
        return forward_kinematics(self.mechanism, self.mechanism.configuration(q)).pose(self.body)

    def _floating_coordinates(self, T_world_body) -> np.ndarray:
        """(B, 6) floating-joint coordinates (x, y, z, roll, pitch, yaw) for body poses (B, 4, 4)."""
        T = np.linalg.inv(self._float_joint.placement) @ T_world_body @ np.linalg.inv(self._T_frame)
        return np.array([[*Tk[:3, 3], *matrix_to_rpy(Tk[:3, :3])] for Tk in T])

    def set_body_pose(self, q, T_world_body) -> np.ndarray:
        """``q`` with the floating coordinates that put the body frame at ``T_world_body``."""
        q = self.mechanism.configuration(q).copy()
        T_joint_body = np.linalg.inv(self._float_joint.placement) @ T_world_body @ np.linalg.inv(self._T_frame)
        rpy = matrix_to_rpy(T_joint_body[:3, :3])
        q[self._float_idx] = [*T_joint_body[:3, 3], *rpy]
        return q

    # ------------------------------------------------------------------ leg IK
    def leg_ik(self, leg: str, p_body, q_ref=None, generic: bool = False):
        """Walking-joint values putting ``leg``'s foot at ``p_body`` ((3,) or (B, 3), metres, body frame),
        nearest ``q_ref`` (that leg's walking-joint values; default standing). Returns ``(q, ok)``: (k,) or
        (B, k) values and a bool (or (B,) mask). ``generic=True`` skips the closed form."""
        i = self.legs.index(self.leg(leg))
        p = np.asarray(p_body, dtype=float)
        single = p.ndim == 1
        P = np.atleast_2d(p)
        if P.shape[-1] != 3 or not np.all(np.isfinite(P)):
            raise InvalidConfiguration(f"foot points need 3 finite coordinates each, got shape {p.shape}")
        chain, cols = self._chains[i], self._walk_cols[i]
        qc_stand = chain.chain_q(self.stand)
        ref = qc_stand[cols] if q_ref is None else np.asarray(q_ref, dtype=float)
        solver = None if generic else self._solvers[i]
        if solver is None:
            solver = GenericLegSolver(chain, cols, qc_stand)
        points = getattr(solver, "solve_points", None) or solver.solve  # registered solvers: solve(p, q)
        q, ok = points(P, ref)
        return (q[0], bool(ok[0])) if single else (q, ok)

    def feet_positions(self, q) -> np.ndarray:
        """(L, 3) foot points in the world at configuration(s) ``q`` ((B, L, 3) for a batch)."""
        fk = forward_kinematics(self.mechanism, self.mechanism.configuration(q))
        return np.stack([fk.position(l.foot) for l in self.legs], axis=-2)

    def body_ik(self, T_world_body, feet_world, q_ref=None):
        """Configuration with the body at ``T_world_body`` and every foot at ``feet_world`` ((L, 3), world;
        e.g. :meth:`feet_positions` of the current state: shift and tilt the body with the feet planted).
        Returns ``(q, ok)``; ``ok`` False when a foot is out of its leg's reach or limits."""
        q = self.set_body_pose(self.stand if q_ref is None else q_ref, T_world_body)
        Tinv = np.linalg.inv(T_world_body)
        F = np.asarray(feet_world, dtype=float)
        if F.shape != (len(self.legs), 3) or not np.all(np.isfinite(F)):
            raise InvalidConfiguration(f"feet_world must be ({len(self.legs)}, 3) finite points")
        ok_all = True
        for i, l in enumerate(self.legs):
            p = Tinv[:3, :3] @ F[i] + Tinv[:3, 3]
            idx = [self.mechanism.coordinate_index(n) for n in l.joints]
            qi, ok = self.leg_ik(l.name, p, q[idx])
            q[idx] = qi
            ok_all &= ok
        return q, bool(ok_all)

    # ------------------------------------------------------------------ stability
    def center_of_mass(self, q) -> np.ndarray:
        return center_of_mass(self.mechanism, self.mechanism.configuration(q))

    def static_margin(self, q, stance: Sequence[bool] | None = None, gravity=(0.0, 0.0, -9.81)) -> float:
        """Support-polygon margin (m) of the centre of mass over the feet in stance (default all)."""
        F = self.feet_positions(q)
        st = np.ones(len(self.legs), dtype=bool) if stance is None else np.asarray(stance, dtype=bool)
        return support_polygon_margin(F[st], self.center_of_mass(q), gravity).margin

    def _margins(self, feet, stance, q, up=(0.0, 0.0, 1.0)):
        """Support-polygon margins (m) of samples ((N, L, 3) feet, (N, L) stance, (N, nq) configurations).
        Stance feet do not move, so the samples are grouped by their stance set and footholds: the support
        polygon of each group comes from :func:`~mechanism_model_core.statics.support_polygon` once, and the
        margin of every centre of mass is its signed distance to the nearest polygon edge (the definition of
        :func:`~mechanism_model_core.statics.support_polygon_margin`, which handles degenerate supports)."""
        com = center_of_mass(self.mechanism, q)
        upv = np.asarray(up, dtype=float)
        groups: dict = {}
        for b in range(len(q)):
            key = (stance[b].tobytes(), np.round(feet[b, stance[b]], 12).tobytes())
            groups.setdefault(key, []).append(b)
        margins = np.empty(len(q))
        for idx in groups.values():
            P = feet[idx[0], stance[idx[0]]]
            hull = support_polygon(P, upv) if len(P) else ()
            if len(hull) < 3:
                for b in idx:
                    margins[b] = -np.inf if not len(P) else support_polygon_margin(P, com[b], -upv).margin
                continue
            A = P[list(hull)]
            E = np.roll(A, -1, axis=0) - A
            E -= np.outer(E @ upv, upv)
            E /= np.linalg.norm(E, axis=1, keepdims=True)
            inward = np.cross(upv, E)                                   # (H, 3)
            d = np.einsum("hk,bk->bh", inward, com[idx]) - np.einsum("hk,hk->h", inward, A)[None]
            margins[idx] = d.min(axis=1)
        return margins

    # ------------------------------------------------------------------ back to the standing pose
    def plan_stand(self, walking_q, *, swing_height: float = 0.03, leg_time: float = 0.6,
                   samples_per_leg: int = 16, min_margin: float = 0.0, tolerance: float = 2e-3,
                   acceleration_limits=None, target=None) -> JointTrajectory:
        """Joint trajectory from the legs' pose ``walking_q`` (values of :attr:`joint_names`, e.g. measured
        where a gait was stopped) back to the standing pose -- or to ``target`` (walking-joint values, e.g.
        a gait cycle's first sample) --, one leg at a time, as a gait's swing: the leg lifts by
        ``swing_height`` (m) and sets its foot down on its target point on a minimum-jerk profile
        in ``leg_time`` s (longer where a joint would exceed its speed limit, or ``acceleration_limits``
        (per walking joint, rad/s^2) when given: every time scaled alike) while the other legs stand
        still (the body does not move). Legs whose foot is within ``tolerance`` (m) of its neutral point
        are not moved; a foot above the ground (stopped mid-swing) is not counted as support. Each leg
        moves only when the feet on the ground keep a static margin above ``min_margin`` (m) without it
        (body at the standing pose); the order follows that rule (legs in the air first). Returns an empty
        trajectory (no points) when every foot is home already. Raises :class:`GaitInfeasible` (``margin``
        when no leg can be lifted safely, ``reach`` for a foot the IK cannot place)."""
        m = self.mechanism
        wq = np.asarray(walking_q, dtype=float).reshape(-1)
        if wq.shape != (len(self.joint_names),) or not np.all(np.isfinite(wq)):
            raise InvalidConfiguration(f"walking_q needs {len(self.joint_names)} finite values "
                                       f"({list(self.joint_names)})")
        for what, v in (("leg_time", leg_time), ("samples_per_leg", samples_per_leg),
                        ("swing_height", swing_height + 1.0), ("tolerance", tolerance)):
            if not (math.isfinite(v) and v > 0):
                raise InvalidConfiguration(f"{what} must be a positive number, got {v!r}")
        q = self.stand.copy()
        q[self._joint_idx] = wq
        q_target = self.stand.copy()
        if target is not None:
            tq = np.asarray(target, dtype=float).reshape(-1)
            if tq.shape != wq.shape or not np.all(np.isfinite(tq)):
                raise InvalidConfiguration(f"target needs {len(self.joint_names)} finite values")
            q_target[self._joint_idx] = tq
        T_wb = self.body_pose(self.stand)
        R, o = T_wb[:3, :3], T_wb[:3, 3]
        feet = self.feet_positions(q)                                    # world, body at the standing pose
        home = self.feet_positions(q_target)
        ground = float(np.mean(self.feet_positions(self.stand)[:, 2]))
        L = len(self.legs)
        on_ground = np.abs(feet[:, 2] - ground) <= tolerance
        todo = [i for i in range(L) if np.linalg.norm(feet[i] - home[i]) > tolerance]
        n = int(samples_per_leg)
        u = np.linspace(0.0, 1.0, n + 1)[1:]
        s = _min_jerk(u)
        bump = 64.0 * u ** 3 * (1 - u) ** 3
        blocks = []
        while todo:
            for i in sorted(todo, key=lambda k: (on_ground[k], k)):       # feet in the air first
                support = on_ground.copy()
                support[i] = False
                margin = self._margins(feet[None], support[None], q[None])[0]
                if margin > min_margin:
                    break
            else:
                raise GaitInfeasible(
                    f"no leg can be lifted to return to the standing pose: the other feet on the ground keep "
                    f"no static margin above {min_margin:g} m (legs to move: "
                    f"{[self.legs[k].name for k in todo]})", "margin")
            leg = self.legs[i]
            P = (1 - s)[:, None] * feet[i] + s[:, None] * home[i]
            lift = max(feet[i, 2], home[i, 2]) - ((1 - s) * feet[i, 2] + s * home[i, 2])
            P[:, 2] += (lift + swing_height) * bump
            P_body = (P - o) @ R                                          # world -> body (R^T p)
            idx = np.array([m.coordinate_index(nm) for nm in leg.joints])
            qi, ok = self.leg_ik(leg.name, P_body, q[idx])
            if not np.all(ok):
                raise GaitInfeasible(f"leg {leg.name}: its way back to the standing pose leaves the leg's reach "
                                     f"or joint limits", "reach")
            qi[-1] = q_target[idx]                                        # exactly the target values
            block = np.repeat(q[self._joint_idx][None], n, axis=0)
            cols = [self.joint_names.index(nm) for nm in leg.joints]
            block[:, cols] = qi
            blocks.append(block)
            q[idx] = qi[-1]
            feet[i] = home[i]
            on_ground[i] = abs(home[i, 2] - ground) <= tolerance
            todo.remove(i)
        if not blocks:
            z = np.zeros((0, len(self.joint_names)))
            return JointTrajectory(self.joint_names, np.zeros(0), z, z.copy(), z.copy(), {"stand": True})
        J = np.vstack([wq[None], *blocks])
        t = np.concatenate([[0.0], *(k + u for k in range(len(blocks)))]) * leg_time

        rest = np.arange(len(blocks) + 1) * n             # a leg set down, the next not lifted yet

        def derivatives(t):
            vel = np.zeros_like(J)
            vel[1:-1] = (J[2:] - J[:-2]) / (t[2:] - t[:-2])[:, None]
            vel[rest] = 0.0                               # (a minimum-jerk move ends at rest)
            acc = np.zeros_like(J)
            acc[1:-1] = (vel[2:] - vel[:-2]) / (t[2:] - t[:-2])[:, None]
            acc[rest] = 0.0
            return vel, acc
        # every time stretched alike until the speeds (and accelerations) are within their limits:
        # speeds scale with 1/c, accelerations with 1/c^2
        vel, acc = derivatives(t)
        c = max(1.0, float(np.max(np.abs(np.diff(J, axis=0)) / np.diff(t)[:, None] / self.velocity_limits)))
        if acceleration_limits is not None:
            amax = np.broadcast_to(np.asarray(acceleration_limits, dtype=float), (len(self.joint_names),))
            c = max(c, math.sqrt(float(np.max(np.abs(acc) / amax))))
        if c > 1.0:
            t = t * (c * 1.01)
            vel, acc = derivatives(t)
        return JointTrajectory(self.joint_names, t, J, vel, acc, {"stand": True})

    # ------------------------------------------------------------------ gaits
    def start_from(self, walking_q, cycle: JointTrajectory, *, swing_height: float = 0.03, min_margin: float = 0.0,
                   tolerance: float = 2e-3, acceleration_limits=None, at_start: float = 1e-3,
                   min_delay: float = 0.02) -> tuple[JointTrajectory, bool]:
        """``cycle`` (a gait cycle of :meth:`plan_gait`) made to start from where the legs are, ``walking_q``
        (values of :attr:`joint_names`: the pose a controller is commanding, or the measured one), as a node
        sends it: ``(trajectory, returned)``.

        When the legs are more than ``at_start`` (rad or m, any joint) from the cycle's first pose (standing,
        a gait stopped mid-cycle, a new twist with another stride), the trajectory first steps onto that
        pose one leg at a time with the others planted (:meth:`plan_stand` with ``swing_height``,
        ``min_margin``, ``tolerance``, ``acceleration_limits``), then follows the cycle; ``returned`` says
        whether it does. Its times count from the moment it is sent: the first point (the one after
        ``walking_q``) comes after the time to reach it from ``walking_q`` at the joints' velocity limits,
        1.5 times over and at least ``min_delay`` s (a cycle that follows the last one starts where that one
        ended: one controller period). Raises :class:`GaitInfeasible` when the return is (the legs stay
        where they are)."""
        wq = np.asarray(walking_q, dtype=float).reshape(-1)
        if wq.shape != (len(self.joint_names),) or not np.all(np.isfinite(wq)):
            raise InvalidConfiguration(f"walking_q needs {len(self.joint_names)} finite values "
                                       f"({list(self.joint_names)})")
        P, V, A, t = cycle.positions, cycle.velocities, cycle.accelerations, cycle.times
        returned = False
        if float(np.max(np.abs(P[0] - wq))) > at_start:
            back = self.plan_stand(wq, swing_height=swing_height, min_margin=min_margin,
                                   acceleration_limits=acceleration_limits, target=P[0], tolerance=tolerance)
            if len(back) > 1:
                returned = True
                P = np.vstack([back.positions[1:], P[1:]])
                V = np.vstack([back.velocities[1:], V[1:]])
                A = np.vstack([back.accelerations[1:], A[1:]])
                t = np.concatenate([back.times[1:], back.duration + t[1:]])
        delay = max(min_delay, 1.5 * float(np.max(np.abs(P[0] - wq) / self.velocity_limits)))
        info = dict(cycle.info, start_delay=delay, returned=returned)
        return JointTrajectory(self.joint_names, t + delay, P, V, A, info), returned

    def plan_gait(self, gait: str, twist, *, period: float = 2.0, cycles: float = 1.0, swing_height: float = 0.03,
                  samples_per_cycle: int = 48, q0=None, terrain=None, body_tilt: str = "level",
                  min_margin: float = 0.0, duty: float | None = None, check_speed: bool = True) -> GaitPlan:
        """Plan ``cycles`` cycles of ``gait`` for the body twist ``twist = (vx, vy, wz)`` (m/s, m/s, rad/s in
        the body frame) starting from ``q0`` (default the standing configuration; its body x, y, yaw are the
        start). ``period`` (s) of one cycle; ``swing_height`` (m) lift of a swing foot; ``terrain``: a
        :class:`~mechanism_model_core.terrain.Terrain` (None: the plane z = the standing feet's height);
        ``min_margin`` (m): the static margin every sample must keep (> it); ``duty``: override the gait's
        duty factor. Raises :class:`GaitInfeasible` with the reason when a sample fails (module docstring),
        :class:`InvalidConfiguration` for malformed input."""
        tw = np.asarray(twist, dtype=float).reshape(-1)
        if tw.shape != (3,) or not np.all(np.isfinite(tw)):
            raise InvalidConfiguration(f"twist needs 3 finite numbers (vx, vy, wz), got {twist!r}")
        for what, v in (("period", period), ("cycles", cycles), ("swing_height", swing_height + 1.0),
                        ("samples_per_cycle", samples_per_cycle)):
            if not (math.isfinite(v) and v > 0):
                raise InvalidConfiguration(f"{what} must be a positive number, got {v!r}")
        if body_tilt not in ("level", "terrain"):
            raise InvalidConfiguration("body_tilt is 'level' or 'terrain'")
        beta, offsets = _gait_offsets(gait, self.legs)
        if duty is not None:
            if not (0.5 <= duty < 1.0):
                raise InvalidConfiguration(f"duty must be in [0.5, 1), got {duty!r}")
            beta = float(duty)
        m = self.mechanism
        q_start = self.stand if q0 is None else m.configuration(q0)
        T0 = self.body_pose(q_start)
        yaw0 = math.atan2(T0[1, 0], T0[0, 0])
        L = len(self.legs)
        N = int(round(samples_per_cycle * cycles))
        times = np.linspace(0.0, period * cycles, N + 1)
        ground0 = float(np.mean(self.feet_positions(self.stand)[:, 2]))
        neutral = np.array([l.neutral for l in self.legs])
        height0 = T0[2, 3] - ground0 if terrain is not None else None

        def planar(t):
            """Body x, y, yaw at times t (constant body twist)."""
            t = np.asarray(t, dtype=float)
            vx, vy, wz = tw
            yaw = yaw0 + wz * t
            if abs(wz) < 1e-12:
                dx, dy = vx * t, vy * t
            else:
                s, c = np.sin(wz * t), np.cos(wz * t)
                dx = (vx * s - vy * (1 - c)) / wz
                dy = (vx * (1 - c) + vy * s) / wz
            cy, sy = math.cos(yaw0), math.sin(yaw0)
            return T0[0, 3] + cy * dx - sy * dy, T0[1, 3] + sy * dx + cy * dy, yaw

        def body_poses(t):
            x, y, yaw = planar(t)
            x, y, yaw = np.atleast_1d(x), np.atleast_1d(y), np.atleast_1d(yaw)
            B = len(x)
            T = np.tile(T0, (B, 1, 1))
            c, s = np.cos(yaw - yaw0), np.sin(yaw - yaw0)
            Rz = np.zeros((B, 3, 3))
            Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1], Rz[:, 2, 2] = c, -s, s, c, 1.0
            T[:, :3, :3] = Rz @ T0[:3, :3]
            T[:, 0, 3], T[:, 1, 3] = x, y
            if terrain is not None:
                # neutral feet under this pose: ground height (and plane) under them
                P = np.einsum("bij,lj->bli", T[:, :3, :3], neutral) + T[:, None, :3, 3]
                H = terrain.height(P[..., 0], P[..., 1])
                if not np.all(np.isfinite(H)):
                    raise GaitInfeasible("the body walks off the terrain (no height under a neutral foot)", "reach")
                T[:, 2, 3] = H.mean(axis=1) + height0
                if body_tilt == "terrain":
                    for b in range(B):
                        A = np.c_[P[b, :, 0], P[b, :, 1], np.ones(L)]
                        gx, gy, _ = np.linalg.lstsq(A, H[b], rcond=None)[0]
                        n = np.array([-gx, -gy, 1.0]) / math.sqrt(gx * gx + gy * gy + 1)
                        R = T[b, :3, :3]
                        fwd = R[:, 0] - (R[:, 0] @ n) * n
                        fwd /= np.linalg.norm(fwd)
                        T[b, :3, :3] = np.column_stack([fwd, np.cross(n, fwd), n])
            return T

        def ground(x, y):
            if terrain is None:
                return np.full(np.shape(x), ground0)
            h = terrain.height(x, y)
            if not np.all(np.isfinite(h)):
                raise GaitInfeasible("a foothold falls outside the terrain", "reach")
            return h

        def foothold(leg_i, t_td):
            """World foothold of a stance starting at t_td: the neutral point under the mid-stance body."""
            Tm = body_poses(np.atleast_1d(t_td + 0.5 * beta * period))
            p = np.einsum("bij,j->bi", Tm[:, :3, :3], neutral[leg_i]) + Tm[:, :3, 3]
            p[:, 2] = ground(p[:, 0], p[:, 1])
            return p

        Tb = body_poses(times)
        feet = np.zeros((N + 1, L, 3))
        stance = np.zeros((N + 1, L), dtype=bool)
        for i, l in enumerate(self.legs):
            phi = offsets[l.name]
            psi = (times / period + phi) % 1.0
            psi = np.where(np.isclose(psi, 1.0, atol=1e-12), 0.0, psi)
            k_cycle = np.floor(times / period + phi + 1e-12)
            t_td = (k_cycle - phi) * period                      # touchdown of the current (or last) stance
            in_stance = psi < beta - 1e-12
            in_stance |= np.isclose(psi, beta, atol=1e-12)       # at lift-off the foot still bears
            stance[:, i] = in_stance
            p_cur = foothold(i, t_td)                            # foothold of this cycle's stance
            p_next = foothold(i, t_td + period)                  # the next one (the end of this swing)
            u = np.clip((psi - beta) / (1.0 - beta), 0.0, 1.0)
            s = _min_jerk(u)[:, None]
            sw = (1 - s) * p_cur + s * p_next
            lift = np.maximum(p_cur[:, 2], p_next[:, 2]) - ((1 - s[:, 0]) * p_cur[:, 2] + s[:, 0] * p_next[:, 2])
            sw[:, 2] += (lift + swing_height) * 64.0 * u ** 3 * (1 - u) ** 3
            feet[:, i] = np.where(in_stance[:, None], p_cur, sw)
        # joint values: every leg's IK in the body frame at every sample
        q = np.repeat(q_start[None], N + 1, axis=0)
        q[:, self._float_idx] = self._floating_coordinates(Tb)
        Tinv = np.linalg.inv(Tb)
        for i, l in enumerate(self.legs):
            P = np.einsum("bij,bj->bi", Tinv[:, :3, :3], feet[:, i]) + Tinv[:, :3, 3]
            idx = np.array([m.coordinate_index(n) for n in l.joints])
            qi, ok = self.leg_ik(l.name, P, q_start[idx])
            if not np.all(ok):
                b = int(np.argmin(ok))
                raise GaitInfeasible(
                    f"leg {l.name}: the foot point {np.round(P[b], 4).tolist()} (body frame) at t = {times[b]:.3f} s "
                    f"is out of the leg's reach or joint limits; lower the speed, shorten the period or the "
                    f"swing height", "reach")
            q[:, idx] = qi
        if m.couplings:
            q = np.array([m.apply_couplings(x) for x in q])
        # joint speeds of the walking joints (central differences of the samples)
        J = q[:, self._joint_idx]
        dt = np.diff(times)
        vel = np.zeros_like(J)
        if len(times) > 2:
            vel[1:-1] = (J[2:] - J[:-2]) / (times[2:] - times[:-2])[:, None]
        vel[0] = (J[1] - J[0]) / dt[0]
        vel[-1] = (J[-1] - J[-2]) / dt[-1]
        acc = np.zeros_like(J)
        if len(times) > 2:
            acc[1:-1] = (vel[2:] - vel[:-2]) / (times[2:] - times[:-2])[:, None]
        if check_speed:
            ratio = np.abs(vel) / self.velocity_limits
            if np.any(ratio > 1.0):
                b, k = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
                raise GaitInfeasible(
                    f"joint {self.joint_names[k]!r} would need {abs(vel[b, k]):.3g} rad/s at t = {times[b]:.3f} s "
                    f"(limit {self.velocity_limits[k]:.3g}); lengthen the period or lower the speed", "speed")
        # static stability at every sample
        margins = self._margins(feet, stance, q)
        if np.any(margins <= min_margin):
            b = int(np.argmin(margins))
            on = [l.name for i, l in enumerate(self.legs) if stance[b, i]]
            raise GaitInfeasible(
                f"the {gait} gait loses static stability: margin {margins[b]:.4g} m (needed > {min_margin:g}) at "
                f"t = {times[b]:.3f} s with {on} in stance; use a gait with a higher duty factor (wave), a "
                f"longer stance or a smaller step", "margin")
        traj = JointTrajectory(self.joint_names, times, J, vel, acc, {"gait": gait})
        return GaitPlan(gait, tw, float(period), beta, dict(offsets), tuple(l.name for l in self.legs), times, q, Tb,
                        feet, stance, margins, traj)


def _ypp_factory(chain: ManipulatorModel, walking):
    return YPPLegSolver(chain, walking)


#: the yaw-pitch-pitch closed form serves every leg with that structure (LEMUR, the ATHLETE-like limbs); a
#: leg of another structure makes it raise ModelStructureError, which leaves the generic solver in charge
register_leg_solver("*", "*", _ypp_factory)
