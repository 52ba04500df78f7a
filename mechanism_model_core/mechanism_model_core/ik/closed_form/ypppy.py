"""Specialized IK solvers that override the generic one for a given mechanism or chain (CLARAty 2.3, 8.10,
11.3, 12.2), and a helper that verifies one against the generic solver.

Registry: ``register_specialized(mechanism_name, frame, factory)`` makes ``solve_ik(..., solver="auto")`` (the
default) use ``factory(mechanism)`` for a problem on a mechanism of that name whose only task is a pose of
``frame`` -- when the solver's ``accepts(problem)`` agrees. The factory reads its parameters from the
mechanism itself (11.4), so a model file change flows into the closed form; a factory that raises
:class:`ModelStructureError` (the mechanism of that name lacks the structure) leaves the generic solver in
charge. Registered by default: :class:`YPPPYSolver` for the instrument frames of the shipped MER IDD model
(mechanism name ``mer_idd``).

:class:`YPPPYSolver` is the closed form of a yaw-pitch-pitch-pitch-yaw arm (the CLARAty design document's
section 14 example; the MER Instrument Deployment Device has this structure): joint 1 turns about a fixed axis,
joints 2-4 about parallel axes perpendicular to it, joint 5 about an axis in the arm plane; the tool frame is anywhere on the last body (the MER IDD's instruments
sit off the turret axis). Its geometry is taken from the mechanism at the zero configuration and checked; a
mechanism that does not have this structure is refused with :class:`ModelStructureError`.

A 5-DOF arm reaches a 5-dimensional set of poses. For a target pose the closed form enumerates up to four
solutions (azimuth forward/backward x elbow up/down), keeps those within limits and returns the one nearest
the initial configuration; for a pose off that set it returns the nearest reachable compromise (the tool axis
projected into the arm plane) with ``success=False``. If no closed-form solution lies within limits the
generic solver is tried as well and the better result returned.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ...errors import ModelStructureError
from ...kinematics import forward_kinematics
from ...model import Mechanism
from ...spatial import axis_angle_matrix, cross_rows, wrap_angle
from ..problem import IKOptions, IKProblem, IKResult
from ..registry import register_specialized
from .common import confirm_candidates, nearest_in_limits, takes_pose
from .planar import two_link

__all__ = ["YPPPYSolver"]

# ---------------------------------------------------------------------------------------------- YPPPY
def _unit(v):
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-12 else v * 0.0


def _rot2(a, v):
    c, s = math.cos(a), math.sin(a)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def _ang(v):
    return math.atan2(v[1], v[0])


class YPPPYSolver:
    """Closed-form IK of a yaw-pitch-pitch-pitch-yaw arm ending at ``frame``.

    ``joints``: the five coordinate names from the base out (default: the moving joints on ``frame``'s path,
    which must be exactly five). Raises :class:`ModelStructureError` if the geometry is not YPPPY: axis 1
    and the parallel pitch axes 2-4 perpendicular, every joint origin and axis 5 in the arm plane.

    Method: the target pose fixes where joint 5's axis must be (its origin and direction are constant in
    the tool frame). Joint 1 turns the arm plane onto that point; in the plane, the sum of the pitches
    aligns axis 5, the last pitch axis follows, and joints 2-3 are a two-link planar problem (law of
    cosines, elbow up/down); joint 5 is the remaining rotation about its axis.
    """

    name = "ypppy"

    def __init__(self, mechanism: Mechanism, frame: str = "tool", joints=None, tol: float = 1e-9):
        m = mechanism
        self._mechanism = weakref.ref(m)          # weak: the solver cache must not keep mechanisms alive
        self.ground = m.ground
        self.frame = frame
        path = m.path_to_ground(m.frame(frame).body)
        moving = [m.body(b).joint for b in reversed(path) if m.body(b).joint is not None
                  and m.body(b).joint.dof > 0]
        names = [j.name for j in moving]
        if joints is None:
            joints = names
        joints = list(joints)
        if len(joints) != 5 or joints != names:
            raise ModelStructureError(f"YPPPY: {frame!r} must hang from exactly five moving joints "
                                      f"(found {names}), given {joints}")
        if any(j.dof != 1 or j.type.value not in ("revolute", "continuous") for j in moving):
            raise ModelStructureError("YPPPY: all five joints must be revolute")
        if m.couplings:
            raise ModelStructureError("YPPPY: the chain may not carry coupled joints")
        self.joints = joints
        self.idx = np.array([m.coordinate_index(j) for j in joints])
        q0 = np.zeros(m.nq)
        fk = forward_kinematics(m, q0)
        T = [fk.pose(m.child_body_of_joint(j)) for j in joints]
        ax = [T[i][:3, :3] @ moving[i].axis for i in range(5)]
        o = [T[i][:3, 3] for i in range(5)]
        Tt = fk.pose(frame)
        self.base = o[0]
        ez = _unit(ax[0])
        n = _unit(ax[1])
        if abs(ez @ n) > tol or any(np.linalg.norm(np.cross(n, ax[k])) > 1e-9 for k in (2, 3)):
            raise ModelStructureError("YPPPY: axes 2-4 must be parallel and perpendicular to axis 1")
        er = np.cross(n, ez)
        pts = o[1:]
        scale = max(1.0, max(float(np.linalg.norm(p - o[0])) for p in pts))
        if any(abs(n @ (p - o[0])) > 1e-9 * scale for p in pts) or abs(n @ ax[4]) > 1e-9:
            raise ModelStructureError("YPPPY: the joint origins and axis 5 must lie in the arm plane")
        self.ez, self.er, self.n = ez, er, n
        # pitch axes may point either way along n (a model may flip one joint's axis): turns about n are
        # converted to joint angles by these signs
        self.pitch_sign = np.array([1.0, float(np.sign(ax[2] @ n)), float(np.sign(ax[3] @ n))])
        self.s = float(np.sign(ez @ np.cross(n, er)))        # pitch turns (u, v) vectors by s * angle

        def uv(v):
            return np.array([er @ v, ez @ v])

        self.P2 = uv(o[1] - o[0])
        self.L2 = uv(o[2] - o[1])
        self.L3 = uv(o[3] - o[2])
        self.L4 = uv(o[4] - o[3])                            # from the last pitch axis to joint 5's origin
        self.a5 = uv(ax[4])
        self.a5_tool = Tt[:3, :3].T @ ax[4]                   # axis 5 in tool axes
        self.a5_world = _unit(ax[4])
        self.R_tool0 = Tt[:3, :3].copy()
        self.o5_tool = Tt[:3, :3].T @ (o[4] - Tt[:3, 3])      # joint 5's origin in tool coordinates
        self.lower = m.lower_limits[self.idx]
        self.upper = m.upper_limits[self.idx]

    @property
    def mechanism(self) -> Mechanism | None:
        """The mechanism the geometry was read from (None once it has been garbage-collected)."""
        return self._mechanism()

    def accepts(self, problem: IKProblem) -> bool:
        return takes_pose(problem, self.frame, self.ground, self.idx)

    def all_solutions(self, T: np.ndarray) -> list[np.ndarray]:
        """Every closed-form solution ``[q1..q5]`` for the tool pose ``T`` (limits not applied; branches whose
        wrist point is out of reach are dropped; if no branch reaches, the nearest compromise of each)."""
        p = T[:3, :3] @ self.o5_tool + T[:3, 3] - self.base   # where joint 5's origin must be
        d = T[:3, :3] @ self.a5_tool
        ez, er, s = self.ez, self.er, self.s
        h = p - (p @ ez) * ez
        if np.linalg.norm(h) < 1e-12:
            h = d - (d @ ez) * ez
        if np.linalg.norm(h) < 1e-12:
            h = er
        psi0 = math.atan2(ez @ cross_rows(er, h), er @ h)
        out, compromise = [], []
        for psi in (psi0, psi0 + math.pi):
            c, sn = math.cos(psi), math.sin(psi)
            er_psi = c * er + sn * cross_rows(ez, er)
            target = np.array([er_psi @ p, ez @ p])
            dir2 = np.array([er_psi @ d, ez @ d])
            if np.linalg.norm(dir2) < 1e-12:
                continue
            sigma = s * (_ang(dir2) - _ang(self.a5))
            w = target - _rot2(s * sigma, self.L4)            # last pitch axis
            D = w - self.P2
            l2, l3 = float(np.linalg.norm(self.L2)), float(np.linalg.norm(self.L3))
            b2, b3 = _ang(self.L2), _ang(self.L3)
            if l2 > 0 and l3 > 0:
                shoulder, elbow, reach = two_link(D[0], D[1], l2, l3)
            else:
                shoulder, elbow, reach = np.full(2, _ang(D)), np.zeros(2), np.ones(2, dtype=bool)
            for k in range(2):
                phi2 = float(shoulder[k])
                phi3 = phi2 + float(elbow[k])
                t2 = s * (phi2 - b2)
                t23 = s * (phi3 - b3)
                q = np.array([psi, t2, t23 - t2, sigma - t23, 0.0])       # pitches as turns about n
                q[4] = self._q5(q, T)
                q[1:4] *= self.pitch_sign                                  # joint angles
                (out if reach[k] else compromise).append(wrap_angle(q))
                if abs(float(elbow[k])) < 1e-12:
                    break
        return out or compromise

    def _q5(self, q, T):
        """Joint 5 from the product of exponentials at zero: ``R(q) = Rot(a1, q1) Rot(n, q2+q3+q4)
        Rot(a5, q5) R_tool(0)`` (axes at the zero configuration), so ``Rot(a5, q5)`` is known."""
        M = (axis_angle_matrix(self.n, q[1] + q[2] + q[3]).T @ axis_angle_matrix(self.ez, q[0]).T
             @ T[:3, :3] @ self.R_tool0.T)
        w = 0.5 * np.array([M[2, 1] - M[1, 2], M[0, 2] - M[2, 0], M[1, 0] - M[0, 1]])
        return math.atan2(float(w @ self.a5_world), 0.5 * (M[0, 0] + M[1, 1] + M[2, 2] - 1.0))

    def solve(self, problem: IKProblem, options: IKOptions) -> IKResult:
        c = problem.tasks[0]
        x0 = problem.x_of(problem.template)
        pos = {int(i): k for k, i in enumerate(problem.free)}
        cols = [pos[int(i)] for i in self.idx]
        cands = []
        for q in self.all_solutions(c.target):
            q = nearest_in_limits(q, x0[cols], self.lower, self.upper)
            if q is not None:
                cands.append((float(np.linalg.norm(q - x0[cols])), q))
        cands.sort(key=lambda t: t[0])
        return confirm_candidates(self.name, problem, options, cands, x0, cols, "5-DOF")


#: The shipped MER IDD model (models/mer/mer_idd.xml) uses the closed form for its instrument frames by default.
for _frame in ("mi", "apxs", "mb", "rat", "idd_turret"):
    register_specialized("mer_idd", _frame, lambda m, _f=_frame: YPPPYSolver(m, _f))
del _frame
