"""Step-by-step IK along a Cartesian path (:class:`PathTracker`): damped Newton from the previous step's
configuration (the branch is kept), a resolved-rate prediction of a block of steps and a batched Newton
refinement of the block; the generic solver when Newton stalls. Used by
:meth:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel.cartesian_path` and by the generic leg IK
of :class:`~mechanism_model_core.locomotion.legged.LeggedLocomotorModel`."""

from __future__ import annotations

import numpy as np
from scipy.linalg.lapack import dposv

from ..kinematics import forward_kinematics
from ..spatial import log_so3

__all__ = ["BLOCK_ITERATIONS", "PathTracker", "RATE_PASSES"]

#: batched Newton iterations per block of path steps
BLOCK_ITERATIONS = 4
#: for redundant chains, passes of the resolved-rate integration that predicts a block (midpoint Jacobians
#: of the previous pass): two make the path as smooth as IK seeded step by step
RATE_PASSES = 2


def _spd_solve(A, b) -> np.ndarray:
    """``A^-1 b`` for a small symmetric positive definite ``A`` (damped J J^T): LAPACK's Cholesky solver
    without numpy's per-call checks (a Cartesian path solves one per step), numpy's LU where it fails."""
    _, x, info = dposv(A, b)
    return x if info == 0 else np.linalg.solve(A, b)



class PathTracker:
    """Per-step IK of a Cartesian path: damped Newton steps on the chain Jacobian from the previous step's
    configuration (so the branch is kept), joint limits by clamping; the generic solver (no restarts, same
    start) when Newton does not converge."""

    def __init__(self, arm, tool, mask, tol_p, tol_o, max_iterations):
        """``arm``: a :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel` (its chain, limits
        and ``ik``); ``mask``: 6 row weights or None (full pose); tolerances in m and rad."""
        self.arm, self.tool, self.tol_p, self.tol_o = arm, tool, tol_p, tol_o
        self.mask = mask
        self.rows = np.arange(6) if mask is None else np.nonzero(mask > 0)[0]
        self.w = np.ones(6) if mask is None else np.sqrt(mask)
        self.max_it = max_iterations
        self._eye = 1e-10 * np.eye(len(self.rows))
        self._pos = [k for k in self.rows if k < 3]
        self._rot = [k for k in self.rows if k >= 3]
        #: Newton may not wander further than this from the previous step (rad or m) and call it the same branch
        self.far = 0.5

    def _err(self, T, Tt):
        e = np.empty(6)
        e[:3] = Tt[:3, 3] - T[:3, 3]
        e[3:] = log_so3(Tt[:3, :3] @ T[:3, :3].T)
        if self.mask is not None:       # in the target's axes
            Rt = Tt[:3, :3].T
            e[:3], e[3:] = Rt @ e[:3], Rt @ e[3:]
        return e

    def _ok(self, e):
        if self.mask is None:
            a, b = e[:3], e[3:]
        else:
            a, b = e[self._pos], e[self._rot]
        return float(a @ a) <= self.tol_p ** 2 and float(b @ b) <= self.tol_o ** 2

    def resolved_rate(self, q, T_from, Tt):
        """Guesses for the consecutive targets ``Tt`` ((m, 4, 4)) from configuration ``q``, whose tool is at
        ``T_from``: the least-norm joint motion of each step's tool displacement (translation; rotation
        vector in base axes), ``dq_k = J^+ dx_k`` with the damped pseudo-inverse of the Jacobian at the
        previous step, summed along the block (integration of the resolved rate: first with the Jacobian at
        ``q`` for every step, then ``RATE_PASSES`` times with the Jacobians at the midpoints of the previous
        pass's guesses). No
        self-motion is extrapolated, and the joint velocity carries on smoothly from block to block."""
        chain, tool = self.arm.chain, self.tool
        J0 = forward_kinematics(chain, q).ground_jacobian(tool)
        prev = np.concatenate([T_from[None], Tt[:-1]])
        dx = np.empty((len(Tt), 6))
        dx[:, :3] = Tt[:, :3, 3] - prev[:, :3, 3]
        dx[:, 3:] = log_so3(np.matmul(Tt[:, :3, :3], prev[:, :3, :3].transpose(0, 2, 1)))
        G = q + np.cumsum((J0.T @ np.linalg.solve(J0 @ J0.T + self._eye, dx.T)).T, axis=0)
        for _ in range(RATE_PASSES if len(Tt) > 1 else 0):
            mid = 0.5 * (np.concatenate([q[None], G[:-1]]) + G)
            J = forward_kinematics(chain, mid).ground_jacobian(tool)
            JT = J.transpose(0, 2, 1)
            inc = np.matmul(JT, np.linalg.solve(np.matmul(J, JT) + self._eye, dx[:, :, None]))[:, :, 0]
            G = q + np.cumsum(inc, axis=0)
        return G

    def block(self, Tt, q_prev, G):
        """``(Q, iterations)``: configurations reaching the targets ``Tt`` ((m, 4, 4), consecutive steps of one
        segment) from the guesses ``G`` ((m, n)), by damped Newton steps on all of them at once (one batched
        forward kinematics and Jacobian per iteration, at most ``BLOCK_ITERATIONS``), joint limits by
        clamping. ``Q`` is the longest prefix of steps that forward kinematics confirms within tolerance
        (position error <= tol_p; rotation: the angle's sine <= tol_o with the angle below 90 degrees) and
        that keeps the branch (no joint further than ``far`` from the previous step's configuration,
        ``q_prev`` for the first); the caller takes the step after it one at a time. Full poses only (no
        mask): the rotation error is the rotation vector's small-angle form, ``sin(angle) * axis``, whose
        derivative at the solution is the Jacobian's angular rows (Newton keeps its quadratic rate)."""
        arm, tool = self.arm, self.tool
        lo, hi = arm.lower, arm.upper
        Q = np.minimum(np.maximum(G, lo), hi)
        m = len(Q)
        Rt = Tt[:, :3, :3]
        pt = Tt[:, :3, 3]
        tp2, to2 = self.tol_p ** 2, self.tol_o ** 2
        E = np.empty((m, 6))
        its = 0
        while True:
            fk = forward_kinematics(arm.chain, Q)
            T = fk.pose(tool)
            np.subtract(pt, T[:, :3, 3], out=E[:, :3])
            W = np.matmul(Rt, T[:, :3, :3].transpose(0, 2, 1))          # R_target R^T = exp(error), base axes
            E[:, 3] = 0.5 * (W[:, 2, 1] - W[:, 1, 2])
            E[:, 4] = 0.5 * (W[:, 0, 2] - W[:, 2, 0])
            E[:, 5] = 0.5 * (W[:, 1, 0] - W[:, 0, 1])
            E2 = E * E
            ok = (E2[:, :3].sum(axis=1) <= tp2) & (E2[:, 3:].sum(axis=1) <= to2) & \
                (W[:, 0, 0] + W[:, 1, 1] + W[:, 2, 2] > 1.0)
            if ok.all() or its == BLOCK_ITERATIONS:
                break
            its += 1
            J = fk.ground_jacobian(tool)
            JT = J.transpose(0, 2, 1)
            dq = np.matmul(JT, np.linalg.solve(np.matmul(J, JT) + self._eye, E[:, :, None]))[:, :, 0]
            Q = np.where(ok[:, None], Q, np.minimum(np.maximum(Q + dq, lo), hi))
        ok &= ~(np.abs(np.diff(np.vstack([q_prev, Q]), axis=0)) > self.far).any(axis=1)
        a = m if ok.all() else int(np.argmin(ok))
        return Q[:a], its

    def step(self, Tt, q_prev, q_guess=None, fallback: bool = True):
        """Chain configuration reaching ``Tt`` near ``q_prev`` (Newton from ``q_guess``, e.g. the previous
        step extrapolated, when given), or ``(None, reason)``."""
        arm, chain = self.arm, self.arm.chain
        q = q_prev.copy() if q_guess is None else np.clip(q_guess, arm.lower, arm.upper)
        eye = self._eye
        for _ in range(self.max_it):
            fk = forward_kinematics(chain, q)
            T = fk.pose(self.tool)
            e = self._err(T, Tt)
            if self._ok(e):
                if not (np.abs(q - q_prev) > self.far).any():
                    return q, "ok"
                break                         # converged on another branch: let the generic solver decide
            J = fk.jacobian(self.tool)
            if self.mask is not None:
                Rt = Tt[:3, :3].T
                J = np.vstack([Rt @ J[:3], Rt @ J[3:]])
            if self.mask is None:
                Jr, er = J, e
            else:
                Jr = (J * self.w[:, None])[self.rows]
                er = (e * self.w)[self.rows]
            dq = Jr.T @ _spd_solve(Jr @ Jr.T + eye, er)
            qn = np.minimum(np.maximum(q + dq, arm.lower), arm.upper)
            if not (np.abs(qn - q) >= 1e-14).any():
                break
            q = qn
        if not fallback:
            return None, "unreachable"
        # Newton stalled: the generic solver from the same start (keeps the branch when one exists)
        # (bounded by iterations, not time, so that the outcome does not depend on the machine's load)
        r = arm.ik(Tt, q_prev, tool=self.tool, mask=None if self.mask is None else self.mask, restarts=False,
                   timeout=2.0, max_iterations=300, tol_position=self.tol_p, tol_orientation=self.tol_o)
        if r.success:
            return r.q, "ok"
        return None, ("limits" if r.reason == "limits" else "unreachable")
