"""Closed-form IK of a yaw-pitch-pitch-pitch arm: :class:`YPPPSolver` (the Moonrise digging arm: yaw,
shoulder, elbow, scoop), registered for ``moonrise_arm``'s ``scoop_tip`` and ``scoop_mouth`` by
:mod:`~mechanism_model_core.locomotion.manipulator`.

A 4-DOF YPPP arm reaches a 4-dimensional set of tool poses: a position, and a tool orientation that is the
yaw's heading turned about the pitch axis. For a target on that set the closed form enumerates up to four
branches (the arm plane facing the target or turned by pi, elbow up or down) and returns the one nearest the
initial configuration within limits; for a target off the set the result is the nearest compromise with
``success=False`` (the generic solver is tried too when no branch lies within limits).
Geometry from the mechanism at zero (CLARAty 11.4); a mechanism without this structure is refused with
:class:`~mechanism_model_core.errors.ModelStructureError`.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ...constraints import log_so3
from ...errors import ModelStructureError
from ..problem import IKOptions, IKProblem, IKResult
from ...joints import JointType
from ...kinematics import forward_kinematics
from ...model import Mechanism
from ...spatial import axis_angle_matrix, wrap_angle
from .common import confirm_candidates, takes_pose
from .planar import two_link

__all__ = ["YPPPSolver"]


class YPPPSolver:
    """Closed-form IK of a yaw-pitch-pitch-pitch arm ending at ``frame`` (module docstring)."""

    name = "yppp"

    def __init__(self, mechanism: Mechanism, frame: str):
        m = mechanism
        self._mechanism = weakref.ref(m)
        self.frame = frame
        self.ground = m.ground
        path = m.path_to_ground(m.frame(frame).body)
        moving = [m.body(b).joint for b in reversed(path) if m.body(b).joint is not None and m.body(b).joint.dof > 0]
        if len(moving) != 4 or any(j.dof != 1 or j.type not in (JointType.REVOLUTE, JointType.CONTINUOUS)
                                   for j in moving):
            raise ModelStructureError(f"YPPP: {frame!r} must hang from exactly four revolute joints")
        if m.couplings:
            raise ModelStructureError("YPPP: the chain may not carry coupled joints")
        self.idx = np.array([m.coordinate_index(j.name) for j in moving])
        fk = forward_kinematics(m, np.zeros(m.nq))
        T = [fk.pose(m.child_body_of_joint(j.name)) for j in moving]
        ax = [T[i][:3, :3] @ moving[i].axis for i in range(4)]
        o = [T[i][:3, 3] for i in range(4)]
        Tt = fk.pose(frame)
        w = ax[0] / np.linalg.norm(ax[0])
        n = ax[1] / np.linalg.norm(ax[1])
        if abs(w @ n) > 1e-9 or any(np.linalg.norm(np.cross(n, ax[k])) > 1e-9 for k in (2, 3)):
            raise ModelStructureError("YPPP: the pitch axes must be parallel and perpendicular to the yaw axis")
        f = Tt[:3, 3]
        if any(abs((p - o[0]) @ n) > 1e-9 for p in (o[1], o[2], o[3], f)):
            raise ModelStructureError("YPPP: the joint origins and the tool must lie in the arm plane")
        u = np.cross(n, w)                       # in-plane horizontal at zero; (u, w) plane coordinates
        self.w, self.n, self.u, self.o1 = w, n, u, o[0]
        self.sign = np.array([1.0, *(float(np.sign(ax[k] @ n)) for k in (1, 2, 3))])

        def plane(v):
            d = v - o[0]
            return np.array([d @ u, d @ w])

        self.P2 = plane(o[1])
        self.L2 = plane(o[2]) - plane(o[1])
        self.L3 = plane(o[3]) - plane(o[2])
        self.L4 = plane(f) - plane(o[3])
        self.R_tool0 = Tt[:3, :3].copy()
        self.l2, self.l3 = float(np.linalg.norm(self.L2)), float(np.linalg.norm(self.L3))
        self.lower = m.lower_limits[self.idx]
        self.upper = m.upper_limits[self.idx]

    def accepts(self, problem: IKProblem) -> bool:
        return takes_pose(problem, self.frame, self.ground, self.idx)

    def _rot2(self, a, v):
        c, s = math.cos(a), math.sin(a)
        return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])

    def all_solutions(self, T) -> list[np.ndarray]:
        """Closed-form joint values ``[q1..q4]`` for tool pose ``T`` (limits not applied); for a pose off the
        reachable set (or out of reach) the nearest compromise of each branch."""
        p = T[:3, 3] - self.o1
        h = p - (p @ self.w) * self.w
        yaw0 = math.atan2(h @ np.cross(self.w, self.u), h @ self.u) if np.linalg.norm(h) > 1e-12 else 0.0
        out = []
        for yaw in (yaw0, yaw0 + math.pi):
            Ry = axis_angle_matrix(self.w, yaw)
            # the remaining rotation should be about n: its angle is the pitch sum (a turn of the plane)
            M = Ry.T @ T[:3, :3] @ self.R_tool0.T
            sigma = float(log_so3(M) @ self.n)
            # plane coordinates of the target in the turned plane (turning about n by sigma maps (U, W) by -sigma)
            ur = Ry @ self.u
            t = np.array([p @ ur, p @ self.w])
            wrist = t - self._rot2(-sigma, self.L4)
            D = wrist - self.P2
            b2 = math.atan2(self.L2[1], self.L2[0])
            b3 = math.atan2(self.L3[1], self.L3[0])
            shoulder, elbow, _ = two_link(D[0], D[1], self.l2, self.l3)
            for k in range(2):
                g = float(elbow[k])
                a23 = g - (b3 - b2)                                  # elbow angle in the plane
                a2 = float(shoulder[k]) - b2
                a4 = -sigma - a2 - a23
                # plane angles turn (U, W) counter-clockwise, a joint angle about +n turns it clockwise
                q = np.array([yaw, -a2, -a23, -a4]) * self.sign
                out.append(wrap_angle(q))
        return out

    def solve(self, problem: IKProblem, options: IKOptions) -> IKResult:
        c = problem.tasks[0]
        x0 = problem.x_of(problem.template)
        pos = {int(i): k for k, i in enumerate(problem.free)}
        cols = [pos[int(i)] for i in self.idx]
        ref = x0[cols]
        cands = []
        for q in self.all_solutions(c.target):
            q = ref + wrap_angle(q - ref)
            if np.all(q >= self.lower - 1e-12) and np.all(q <= self.upper + 1e-12):
                cands.append((float(np.max(np.abs(q - ref))), np.clip(q, self.lower, self.upper)))
        cands.sort(key=lambda t: t[0])
        return confirm_candidates(self.name, problem, options, cands, x0, cols, "4-DOF")
