"""Closed-form IK of a yaw-pitch-pitch leg (LEMUR's): :class:`YPPLegSolver`, used by
:class:`~mechanism_model_core.locomotion.legged.LeggedLocomotorModel` for every leg of that structure (batch
form ``solve_points``), and behind the solver protocol of :mod:`mechanism_model_core.ik` for foot positions on
the leg's chain (``solve_ik(leg.chain, [PositionConstraint(foot, p)], q0, solver=solver)``)."""

from __future__ import annotations

import math
import weakref
from typing import Sequence

import numpy as np

from ...constraints import PositionConstraint
from ...errors import InvalidConfiguration, ModelStructureError
from ...joints import JointType
from ...kinematics import forward_kinematics
from ...spatial import wrap_angle
from ..batch import LMPopulationSolver
from ..problem import IKOptions, IKProblem, IKResult
from .planar import two_link

__all__ = ["YPPLegSolver"]


class YPPLegSolver:
    """Closed-form IK of a yaw-pitch-pitch leg (LEMUR's): the yaw axis, then two parallel pitch axes
    perpendicular to it, the foot anywhere in the plane they move it in (a constant sideways offset along
    the pitch axes is allowed). Geometry from the chain at zero (CLARAty 11.4); other joints on the chain
    (held) must not move the foot. Up to four branches (foot ahead of / behind the yaw axis x knee up /
    down); the one nearest the reference configuration within limits is returned."""

    name = "ypp"

    def __init__(self, leg, walking: Sequence[int]):
        """``leg``: the leg's :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel`;
        ``walking``: the chain columns of its three walking joints."""
        if len(walking) != 3:
            raise ModelStructureError(f"YPP leg: needs three walking joints, found {len(walking)}")
        c = leg.chain
        fk = forward_kinematics(c, np.zeros(c.nq))
        joints = [c.joint(c.coordinate_joint[k]) for k in walking]
        if any(j.dof != 1 or j.type not in (JointType.REVOLUTE, JointType.CONTINUOUS) for j in joints):
            raise ModelStructureError("YPP leg: the walking joints must be revolute")
        bodies = [c.child_body_of_joint(j.name) for j in joints]
        T = [fk.pose(b) for b in bodies]
        ax = [T[i][:3, :3] @ joints[i].axis for i in range(3)]
        o = [T[i][:3, 3] for i in range(3)]
        f = fk.position(leg.tool)
        w = ax[0] / np.linalg.norm(ax[0])
        a2 = ax[1] / np.linalg.norm(ax[1])
        if abs(w @ a2) > 1e-9 or np.linalg.norm(np.cross(ax[1], ax[2])) > 1e-9:
            raise ModelStructureError("YPP leg: the pitch axes must be parallel and perpendicular to the yaw axis")
        u0 = np.cross(a2, w)
        self.w, self.a2, self.u0, self.o1 = w, a2, u0, o[0]
        self.s2 = 1.0
        self.s3 = float(np.sign(ax[2] @ a2))

        def plane(v):
            d = v - o[0]
            return np.array([d @ u0, d @ w])

        self.P2 = plane(o[1])
        self.L2 = plane(o[2]) - plane(o[1])
        self.L3 = plane(f) - plane(o[2])
        self.d = float((f - o[0]) @ a2)                     # sideways offset of the foot (constant)
        self.l2, self.l3 = float(np.linalg.norm(self.L2)), float(np.linalg.norm(self.L3))
        if self.l2 < 1e-9 or self.l3 < 1e-9:
            raise ModelStructureError("YPP leg: zero-length femur or tibia")
        self.b2 = math.atan2(self.L2[1], self.L2[0])
        self.b3 = math.atan2(self.L3[1], self.L3[0])
        self.lower = leg.lower[list(walking)]
        self.upper = leg.upper[list(walking)]
        self.walking = np.array(walking, dtype=int)          # coordinate indices in the leg's chain
        self.foot = leg.tool
        self._chain = weakref.ref(c)

    def all_solutions(self, p):
        """(4, B, 3) joint values of the four branches for foot points ``p`` (B, 3) in the chain's base
        frame, and (4, B) masks of the branches that reach exactly."""
        p = np.atleast_2d(np.asarray(p, dtype=float))
        v = p - self.o1
        z = v @ self.w
        hx, hy = v @ self.u0, v @ self.a2
        h2 = hx * hx + hy * hy
        r_abs = np.sqrt(np.maximum(h2 - self.d * self.d, 0.0))
        ok_r = h2 >= self.d * self.d - 1e-12
        sols, oks = [], []
        for sgn in (1.0, -1.0):
            r = sgn * r_abs
            yaw = np.arctan2(hy, hx) - np.arctan2(self.d, r)
            t = np.stack([r, z], axis=-1) - self.P2
            shoulder, elbow, reach = two_link(t[:, 0], t[:, 1], self.l2, self.l3)
            for k in range(2):
                g = elbow[k]                                         # angle of the tibia to the femur line
                a3 = g - (self.b3 - self.b2)
                a2 = shoulder[k] - self.b2
                # plane angles turn (U, W) counter-clockwise; a joint angle about a2 turns it clockwise
                q = np.stack([yaw, -a2 / self.s2, -a3 / self.s3], axis=-1)
                sols.append(q)
                oks.append(ok_r & reach[k])
        return np.array(sols), np.array(oks)

    def solve(self, p_or_problem, q_ref_or_options):
        """The solver protocol of :mod:`mechanism_model_core.ik`, ``solve(problem, options) -> IKResult``
        (a foot position on the leg's chain, see :meth:`accepts`; ``solve_ik(leg.chain, [PositionConstraint(
        foot, p)], q0, solver=this)``), or the batch form ``solve(p, q_ref) -> (q, ok)``
        (:meth:`solve_points`), by the type of the first argument."""
        if isinstance(p_or_problem, IKProblem):
            return self._solve_problem(p_or_problem, q_ref_or_options)
        return self.solve_points(p_or_problem, q_ref_or_options)

    def accepts(self, problem: IKProblem) -> bool:
        """One full position of the foot on the leg's chain mechanism, in its base frame, no posture, the
        walking joints free."""
        c = problem.tasks[0] if len(problem.tasks) == 1 else None
        m = problem.mechanism
        return (isinstance(c, PositionConstraint) and m is self._chain() and c.frame == self.foot
                and c.relative_to in (None, m.ground) and len(c.kept_axes) == 3 and problem.posture is None
                and set(self.walking.tolist()) <= set(problem.free.tolist()))

    def _solve_problem(self, problem: IKProblem, options: IKOptions) -> IKResult:
        if not self.accepts(problem):
            raise InvalidConfiguration(f"the YPP leg solver takes one PositionConstraint of {self.foot!r} on the "
                                       f"leg's chain, its walking joints free")
        c = problem.tasks[0]
        x0 = problem.x_of(problem.template)
        pos = {int(i): k for k, i in enumerate(problem.free)}
        cols = [pos[int(i)] for i in self.walking]
        q, ok = self.solve_points(np.asarray(c.target_xyz)[None], x0[cols])
        if ok[0]:
            x = x0.copy()
            x[cols] = q[0]
            r = problem.result(x, True, "converged", options, 1, 0, self.name)   # confirmed by the core's FK
            if r.success and r.residuals[0].satisfied:
                return r
        res = LMPopulationSolver().solve(problem, options)
        res.solver = f"{self.name}+{res.solver}"
        return res

    def solve_points(self, p, q_ref):
        """Walking-joint values (B, 3) nearest ``q_ref`` (whole turns chosen per joint) within limits, and the
        (B,) mask of the points solved."""
        S, ok = self.all_solutions(p)
        q_ref = np.asarray(q_ref, dtype=float)
        S = q_ref + wrap_angle(S - q_ref)
        # the turn nearest the reference may lie beyond a limit while the next one is inside (a knee at -1.48
        # with the reference at 2.0 and limits [-1.5, 2]): shift by a turn into the limits where that helps
        S = np.where(S < self.lower - 1e-12, S + 2 * math.pi, S)
        S = np.where(S > self.upper + 1e-12, S - 2 * math.pi, S)
        inside = np.all((S >= self.lower - 1e-12) & (S <= self.upper + 1e-12), axis=-1) & ok
        dist = np.where(inside, np.max(np.abs(S - q_ref), axis=-1), np.inf)
        best = np.argmin(dist, axis=0)
        B = S.shape[1]
        q = S[best, np.arange(B)]
        return np.clip(q, self.lower, self.upper), np.isfinite(dist[best, np.arange(B)])
