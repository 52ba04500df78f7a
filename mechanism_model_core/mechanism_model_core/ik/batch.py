"""Vectorized Levenberg-Marquardt on one chain: a population of seeds per target, many targets at once.

The engine behind :func:`solve_ik_batch` (B targets of one constraint kind) and behind single pose solves
(``solve_ik`` with ``solver="auto"`` or ``"lm"``: one target, a population of seeds). It advances *lanes*:
a lane is one seed of one target, and every iteration evaluates the pose and Jacobian of all lanes at once
(one batched forward pass over the frame's chain) and takes one damped least-squares step per lane
(``dx = J^T (J J^T + lam I)^-1 e`` with ``lam = mu |e|^2``, ``mu`` per lane: /3 on an accepted step, x10 on a
rejected one), joint limits as a clamp-and-recompute active set (full-turn joints wrapped instead).

Per target: the first lane starts from the caller's seed; when it stalls (cost not below 0.6 of its value 4
iterations earlier, or ``max(20, 2n)`` iterations, or 8 rejections in a row) the target widens to
``population`` lanes, each stalled lane restarting from the next configuration of a fixed restart sequence
(:func:`~.problem.restart_sample` from the ``rng`` seed: the same sequence for every target, so a target's
answer does not depend on the other targets of its batch). A target given several lanes from the start
(``start_width > 1``: single solves of arms) starts them, besides the caller's seed, from the entries of a
fixed table of configurations (:data:`SEED_TABLE`, built once per engine) whose frame pose is nearest the
target (:meth:`LaneEngine.nearest_starts`): a few iterations closer to it than random restarts. The target is
done at the first lane within tolerance (lowest lane first when several meet it in one iteration). A single
target (``solve_ik``) lets its lane of lowest cost go on alone once it converges fast (:data:`FOCUS_AFTER`; the
one-lane pass costs about half a population loop), the population resuming where it was if it does not.

A target farther from the chain's first moving axis origin than the chain can reach (the sum of the distances
between consecutive joint origins, prismatic strokes included) gets one attempt from its seed and no
restarts (the answer is the compromise stretched toward it) and is reported ``"unreachable"``; a single such
target runs that attempt in a scalar loop (:meth:`LaneEngine._run_far_one`: the lane loop's iterations, a few
tenths of a millisecond of CPU).

Everything per chain (the chain, its limits, the reach bound, the restart and seed tables, the engine) is
cached per mechanism on first use, outside the caller's time budget.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from ..constraints import OrientationConstraint, PoseConstraint, PositionConstraint
from ..data import memo
from ..errors import InvalidConfiguration
from ..kinematics import frame_chain
from ..spatial import log_so3, wrap_angle
from .problem import IKOptions, IKProblem, IKResult, beyond_reach, diagnose_failure, reach_bound
from .registry import register_solver
from .chain_pass import chain_passes, unbound_pass
from .damped_step import limited_step
from .solvers import DLSSolver, _ChainKernel, chain_residual, chain_task, unit_unmasked

__all__ = ["BatchIKResult", "LMPopulationSolver", "LaneEngine", "chain_engine"]

#: an attempt is stalled when its cost is not below STALL_RATIO of its value STALL_WINDOW iterations earlier
STALL_WINDOW = 4
STALL_RATIO = 0.6
#: and it gets at most max(ATTEMPT_ITERATIONS, 2 n) iterations
ATTEMPT_ITERATIONS = 20
#: lanes per target once the caller's seed stalled (default of solve_ik and solve_ik_batch)
POPULATION = 6
#: single solves on chains with at least this many unknowns start with the whole population
WIDE_FROM = 6
#: a single target's population (:meth:`LaneEngine._run_single`): from loop FOCUS_AFTER on, once its lane of
#: lowest cost is below FOCUS_COST (m^2, rad^2: about 0.1 m or rad), that lane goes on alone (the one-lane
#: pass, about half a population loop's cost) for at most FOCUS_STEPS steps while each step divides its cost
#: by at least 1 / FOCUS_RATIO, as Gauss-Newton's near a solution does; otherwise the population resumes where
#: it was (the next focus once a lane is FOCUS_RATIO below the one that fell short). xArm7, Baxter, TIAGo, 300
#: targets, random seeds, engine CPU median in one process (load 8): 0.43 / 0.42 / 0.42 -> 0.32 / 0.30 / 0.28 ms
FOCUS_AFTER = 2
FOCUS_STEPS = 5
FOCUS_RATIO = 0.25
FOCUS_COST = 1e-2
#: initial damping factor (lambda = mu |e|^2)
MU0 = 0.1
#: beyond reach, the damping factor multiplies min(|e|^2, FAR_DAMPING) (m^2, rad^2)
FAR_DAMPING = 1.0
#: and its one attempt gets at most this many iterations. (8, 1.0) rather than (12, 1e-2): targets 2.5x the
#: reach bound away from the seed at home, 200 per arm, CPU median 1.05-1.09 -> 0.66-0.79 ms (xArm7, Baxter,
#: UR5, TIAGo, Panda) while the compromise's median position error changes by -2.4 % (Baxter) to +3.9 % (Panda)
FAR_ITERATIONS = 8
#: restart configurations drawn per block (the table grows by blocks as targets need more)
_TABLE_BLOCK = 64
#: configurations in an engine's seed table: the lanes a target starts with besides the caller's seed are
#: the table's entries whose frame pose is nearest the target's. xArm7, Baxter, TIAGo, random seeds, 300-500
#: targets each (load 14): engine iterations to the first converged lane 7 -> 5 (median), CPU median
#: 1.30 -> 1.06 / 1.47 -> 1.11 / 1.11 -> 0.99 ms, Baxter 99th percentile 4.5 -> 2.8 ms; 1024 entries gave
#: less, 16384 a costlier look-up
SEED_TABLE = 4096
#: its fixed generator seed (the table, and so every answer, is the same in every process)
SEED_TABLE_RNG = 20
#: m^2 per unit of (3 - trace(R_t^T R)) (about the squared angle) in the nearness of a pose to the target
ORIENTATION_WEIGHT = 0.3
_BUILD_LOCK = threading.Lock()
#: (z_j d_k for j, k in 0..2) @ _LEVI_CIVITA = z x d
_LEVI_CIVITA = np.zeros((3, 3, 3))
_LEVI_CIVITA[1, 2, 0] = _LEVI_CIVITA[2, 0, 1] = _LEVI_CIVITA[0, 1, 2] = 1.0
_LEVI_CIVITA[2, 1, 0] = _LEVI_CIVITA[0, 2, 1] = _LEVI_CIVITA[1, 0, 2] = -1.0
_LEVI_CIVITA = _LEVI_CIVITA.reshape(9, 3)
_LEVI_CIVITA.flags.writeable = False
#: R (row-major 9) @ _SKEW_TRACE = (R21 - R12, R02 - R20, R10 - R01, trace R)
_SKEW_TRACE = np.zeros((9, 4))
_SKEW_TRACE[7, 0] = _SKEW_TRACE[2, 1] = _SKEW_TRACE[3, 2] = 1.0
_SKEW_TRACE[5, 0] = _SKEW_TRACE[6, 1] = _SKEW_TRACE[1, 2] = -1.0
_SKEW_TRACE[[0, 4, 8], 3] = 1.0
_SKEW_TRACE.flags.writeable = False


@dataclass
class BatchIKResult:
    """Per-target outcome of :func:`solve_ik_batch` (index ``k`` is target ``k``).

    ``q`` (B, nq): full joint coordinates, within limits; ``success`` (B,) bool; ``reason`` (B,) str, as
    :class:`~.problem.IKResult`'s (``"converged"``, ``"unreachable"``, ``"timeout"``, ``"max_iterations"``);
    ``position_error`` (m) and ``orientation_error`` (rad) (B,) at ``q`` (NaN where the constraint has no such
    rows); ``iterations`` (B,) lane-iterations spent on the target; ``restarts`` (B,) seeds after the first;
    ``time`` (s) for the whole batch. ``result(k)`` / iteration gives one :class:`IKResult` per target."""

    q: np.ndarray
    success: np.ndarray
    reason: np.ndarray
    position_error: np.ndarray
    orientation_error: np.ndarray
    iterations: np.ndarray
    restarts: np.ndarray
    time: float
    solver: str = "lm"
    coordinate_names: tuple = ()
    _make: object = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.success)

    def result(self, k: int) -> IKResult:
        """Target ``k`` as an :class:`IKResult` (residuals evaluated at its ``q``)."""
        return self._make(k)

    def __iter__(self):
        return (self.result(k) for k in range(len(self)))


class LaneEngine:
    """Constant data of one chain task (frame, rows, unknowns, limits) and the vectorized LM loop.

    Built from an :class:`IKProblem` whose only task is a pose, position or orientation constraint on one
    frame (no posture, no coupled joint on the chain); ``None`` from :func:`chain_engine` otherwise."""

    def __init__(self, kernel):
        K = kernel            # read here only: the engine keeps no reference to the problem
        ch = K.chain
        self.chain = ch
        self.n = ch.n
        self.nv = K.nv
        self.var_seg = K.var_seg
        self.var_x = K.var_x
        self.all_vars = K.all_vars
        self.theta = np.array(K.theta)
        self.lo, self.hi, self.clo, self.chi = K.lo, K.hi, K.clo, K.chi
        self.wrap, self.any_wrap = K.wrap, K.any_wrap
        self.rows = K.rows
        self.row_sel = K.row_sel
        self.m = K.m
        self.all_rows = K.all_rows
        self.need_pos, self.need_rot = K.need_pos, K.need_rot
        self.masked = K.masked
        self.wrow = K.wrow
        self.unit_weights = K.unit_weights
        self.Rrow = K.Rrow
        self.target_rows = False        # rows turned into each lane's target axes (target_rows_engine)
        self.T_wr = K.T_wr        # the reference frame's ground pose (None: the ground); part of the shape key
        self.pos_rows, self.rot_rows = K.pos_rows, K.rot_rows
        self.cap = max(ATTEMPT_ITERATIONS, 2 * self.nv)
        # the chain's step transforms M(t) = K0 + sin t A - cos t Bc (+ t Cc for a slider), per step (n, 1, 16)
        # one product W @ coefs per pass, W (n, L, k) = [1, sin t, cos t (, t)] per step and lane
        coef = ch.coef
        rows = [ch.Pm + coef[:, 1], coef[:, 0], -coef[:, 1]] + ([coef[:, 2]] if ch.any_prismatic else [])
        self._coefs = np.ascontiguousarray(np.stack(rows, axis=1))
        m = K.P.mechanism
        key = (K.P.tasks[0].frame, self.lo.tobytes(), self.hi.tobytes(), self.var_seg.tobytes())
        lo, hi = self.lo, self.hi
        consts = memo(m, "ik.chain_constants", _CONSTS_MAX).get(
            key, lambda: _ChainConstants(m, ch, lo, hi))
        self.consts = consts
        self._seeds = None              # seed_table(), built on first use
        # held steps before the first unknown one (a mobile base's pose, a locked torso): the seed table is in
        # the frame where they end, shared by the engines of every pose of the base (_base_seed_table)
        self._k0 = 0 if self.all_vars or not len(self.var_seg) else int(self.var_seg[0])
        if self._k0:
            self._base_tables = memo(m, "ik.base_seed_tables", _BASE_TABLES_MAX)
            held = np.ones(self.n, dtype=bool)
            held[self.var_seg] = False
            self._base_key = key + (self.theta[held & (np.arange(self.n) >= self._k0)].tobytes(),)
        self._base_rt = None            # (R, t) of the base's ground pose once the table is in its frame
        self.origin, self.reach = consts.origin, consts.reach
        #: the held base's ground pose (4x4, where its steps end; None without): the held steps' product, the
        #: same whatever the unknowns' values
        self._base_pose = None
        if self._k0:                    # a held base (a floating joint's free travel): the bound from where it ends
            self._base_pose = np.array(self._frames(np.zeros((1, self.nv)))[0][self._k0 - 1, 0])
            self.origin, self.reach = self._held_base_bound(m)
        #: a full pose with unit weights: the one-lane pass's own residual (when the rows are not turned)
        self.plain_pose = bool(self.all_rows and self.unit_weights)
        self._pass = None               # the one-lane pass (_eval1), built on first use
        #: its constants, shared by the engines of every held value (a rover's chassis poses) and DLS kernels
        self._passes = chain_passes(m)
        self._frame = K.P.tasks[0].frame
        # position bound only when every position row is kept
        self.bound_applies = bool(np.all(np.isin([0, 1, 2], self.rows))) and math.isfinite(self.reach)

    def _held_base_bound(self, m):
        """``(origin (3,), reach)`` of an engine whose first ``_k0`` steps are held (a mobile base's pose):
        :func:`~.problem.reach_bound` from step ``_k0`` at these held values, the origin in the ground (m) -- the
        chain's reach from the base, where the ground's bound counts the base's free travel (inf for a floating
        joint)."""
        origin, reach = reach_bound(m, self.chain, self._k0, self.theta, self._base_pose)
        return _ro(origin), reach

    # ------------------------------------------------------------------ restart table
    def restarts(self, seed, count: int) -> np.ndarray:
        """The first ``count`` restart configurations (rows) of the sequence of ``seed``."""
        return self.consts.table(seed, count)

    # ------------------------------------------------------------------ evaluation of all lanes
    def _frames(self, X, start: int = 0):
        """Ground poses of every chain step (n, L, 4, 4) -- step-major, so that each product of the chain's
        pass is on contiguous lanes -- and of the frame (L, 4, 4), for lanes ``X`` (L, nv); from step
        ``start`` on (``n - start`` steps): poses in the frame where step ``start - 1`` ends."""
        L, n = X.shape[0], self.n
        if self.all_vars:
            TH = X.T
        else:
            TH = np.empty((n, L))
            TH[:] = self.theta[:, None]
            TH[self.var_seg] = X.T
        coefs = self._coefs
        if start:
            TH, coefs, n = TH[start:], coefs[start:], n - start
        W = np.empty((n, L, coefs.shape[1]))
        W[:, :, 0] = 1.0
        np.sin(TH, out=W[:, :, 1])
        np.cos(TH, out=W[:, :, 2])
        if self.chain.any_prismatic:
            W[:, :, 3] = TH
        M = np.matmul(W, coefs).reshape(n, L, 4, 4)
        C = np.empty((n, L, 4, 4))
        C[0] = M[0]
        for i in range(1, n):
            np.matmul(C[i - 1], M[i], out=C[i])
        return C, C[n - 1] @ self.chain.F

    # ------------------------------------------------------------------ starting lanes near the target
    def seed_table(self):
        """``(X (K, nv), A (K, k), n2 (K,))`` of :data:`SEED_TABLE` in-limit configurations of the unknowns and
        the frame's pose there (position, rotation rows as a row of ``A``; ``n2`` the squared position
        norms), for :meth:`nearest_starts`; None when the task has no such score (a partial mask). Built once
        per engine, on first use (callers build it before their budget starts)."""
        t = self._seeds
        if t is not None:
            return t or None
        with _BUILD_LOCK:
            if self._seeds is not None:
                return self._seeds or None
            rows = set(np.asarray(self.rows).tolist())
            kind = ("pose" if rows == {0, 1, 2, 3, 4, 5} else "position" if rows == {0, 1, 2}
                    else "orientation" if rows == {3, 4, 5} else None)
            if kind is None:
                self._seeds = ()
                return None
            if self._k0:
                self._seeds = self._base_seed_table(kind)
                return self._seeds
            self._seeds = self._build_seed_table(kind)
            return self._seeds

    def _base_seed_table(self, kind):
        """:meth:`seed_table`'s table of an engine with held steps before its first unknown one: the frame's
        poses in the frame where those end (the base), built once for every pose of the base (a memo of the
        mechanism's derived data); this engine's base pose turns the targets of :meth:`nearest_starts` into
        that frame (rotations and distances unchanged: the same starts, in the same order)."""
        k0 = self._k0
        t = self._base_tables.get(self._base_key + (kind,), lambda: self._build_seed_table(kind, k0))
        B = self._base_pose
        self._base_rt = (np.ascontiguousarray(B[:3, :3]), np.array(B[:3, 3]))
        return t

    def _build_seed_table(self, kind, start: int = 0):
        """The seed table (:meth:`seed_table`) of ``kind``, its poses in the frame where step ``start - 1``
        ends (the ground for 0)."""
        lo, hi = self.consts.lo, self.consts.hi
        X = lo + np.random.default_rng(SEED_TABLE_RNG).random((SEED_TABLE, self.nv)) * (hi - lo)
        parts = []
        for i in range(0, SEED_TABLE, 512):
            _, Tf = self._frames(X[i:i + 512], start)
            cols = []
            if kind != "orientation":
                cols.append(Tf[:, :3, 3])
            if kind != "position":
                cols.append(Tf[:, :3, :3].reshape(-1, 9))
            parts.append(np.hstack(cols))
        A = np.ascontiguousarray(np.vstack(parts))
        n2 = np.sum(A[:, :3] ** 2, axis=1) if kind != "orientation" else np.zeros(SEED_TABLE)
        for a in (X, A, n2):
            a.flags.writeable = False
        return X, A, n2, kind

    def nearest_starts(self, pts, RtTs, count: int):
        """(B, count, nv): for each target (ground positions ``pts`` (B, 3), transposed rotations ``RtTs``
        (B, 3, 3)) the ``count`` configurations of :meth:`seed_table` whose frame pose is nearest, nearest
        first, by ``|p - p_t|^2 + ORIENTATION_WEIGHT (3 - trace(R_t^T R))`` (m^2; the trace term is about the
        squared angle between the rotations); None when the task has no table."""
        t = self.seed_table()
        if t is None or count < 1:
            return None
        X, A, n2, kind = t
        if self._base_rt is not None:                       # the targets in the table's (the base's) frame
            R, p = self._base_rt
            pts = (pts - p) @ R                             # R^T (p_t - p) per row
            RtTs = RtTs @ R                                 # (R^T R_t)^T
        B = pts.shape[0]
        if B == 1 and kind == "pose":                       # one target (solve_ik): no stacking, no gathers
            v = np.empty(12)
            np.multiply(pts[0], -2.0, out=v[:3])
            np.multiply(RtTs[0].T.ravel(), -ORIENTATION_WEIGHT, out=v[3:])
            S = A @ v
            S += n2
            if count > 8:
                idx = np.argpartition(S, count - 1)[:count]
                return X[idx[np.argsort(S[idx], kind="stable")]][None]
            idx = []                                        # a few: repeated argmin (a third of argpartition's)
            for _ in range(count):
                k = int(S.argmin())
                idx.append(k)
                S[k] = np.inf
            return X[idx][None]
        cols = []
        if kind != "orientation":
            cols.append(-2.0 * pts)
        if kind != "position":
            cols.append(-ORIENTATION_WEIGHT * RtTs.transpose(0, 2, 1).reshape(B, 9))
        V = np.hstack(cols).T                               # (k, B)
        if B == 1:                                          # one target (solve_ik): no chunks, no gathers
            S = A @ V[:, 0]
            S += n2
            idx = np.argpartition(S, count - 1)[:count]
            return X[idx[np.argsort(S[idx], kind="stable")]][None]
        out = np.empty((B, count, self.nv))
        for i in range(0, B, 256):
            S = A @ V[:, i:i + 256]
            S += n2[:, None]
            idx = np.argpartition(S, count - 1, axis=0)[:count]
            order = np.argsort(np.take_along_axis(S, idx, axis=0), axis=0, kind="stable")
            out[i:i + 256] = X[np.take_along_axis(idx, order, axis=0).T]
        return out

    def evaluate(self, X, pt, RtT):
        """Weighted residuals (L, m), Jacobians (L, m, nv), position and orientation error norms (L,) of lanes
        ``X`` (L, nv) against their targets ``pt`` (L, 3) and ``RtT`` (L, 3, 3) (transposed target rotations)."""
        L = X.shape[0]
        if L == 1:
            return self._evaluate_one(X[0], pt[0], RtT[0])
        n = self.n
        ch = self.chain
        C, Tf = self._frames(X)
        p = Tf[:, :3, 3]
        z = C[:, :, :3, 2]                                 # (n, L, 3) step axes in the ground
        d = p - C[:, :, :3, 3]
        J = np.empty((L, 6, n))
        Jt = J.transpose(1, 2, 0)                          # (6, n, L) view
        # linear rows z x d: the products z_j d_k of every step and lane contracted with the Levi-Civita
        # symbol (two calls where the components take nine)
        O = np.matmul(z[..., :, None], d[..., None, :]).reshape(n, L, 9)
        Jt[:3] = (O @ _LEVI_CIVITA).transpose(2, 0, 1)
        Jt[3:] = z.transpose(2, 0, 1)
        if ch.any_prismatic:
            pri = ch.prismatic
            Jt[:3, pri] = z[pri].transpose(2, 0, 1)
            Jt[3:, pri] = 0.0
        e = np.empty((L, 6))
        np.subtract(p, pt, out=e[:, :3])
        th = None
        if self.need_rot:
            Rm = Tf[:, :3, :3] @ RtT
            # one product gives v = 2 sin(angle) axis (the antisymmetric part) and the trace
            W = Rm.reshape(L, 9) @ _SKEW_TRACE
            c = W[:, 3] - 1.0
            c *= 0.5                             # cos of the angle
            if c.min() > -0.99:
                # away from pi: the angle as atan2 of |v| / 2 and its cosine (exact at small angles, where
                # arccos is not), log = angle v / |v|
                v = W[:, :3]
                nv = np.sqrt(np.einsum("li,li->l", v, v))
                th = np.arctan2(0.5 * nv, c)
                np.multiply(v, (th / np.maximum(nv, 1e-300))[:, None], out=e[:, 3:])  # v = 0: stays 0
            else:
                e[:, 3:] = log_so3(Rm)
        else:
            e[:, 3:] = 0.0
        R = self.Rrow
        if R is not None:
            e[:, :3] = e[:, :3] @ R.T
            e[:, 3:] = e[:, 3:] @ R.T
            J[:, :3] = R @ J[:, :3]
            J[:, 3:] = R @ J[:, 3:]
        elif self.target_rows:              # each lane's rows in its target's axes: R_t^T e, R_t^T J
            e[:, :3] = (RtT @ e[:, :3, None])[:, :, 0]
            e[:, 3:] = (RtT @ e[:, 3:, None])[:, :, 0]
            J[:, :3] = RtT @ J[:, :3]
            J[:, 3:] = RtT @ J[:, 3:]
            R = RtT
        if self.all_rows:
            r, Jm = e, J
        else:
            r, Jm = e[:, self.rows], J[:, self.rows]
        if not self.all_vars:
            Jm = Jm[:, :, self.var_seg]
        if self.masked:
            ep = np.linalg.norm(r[:, self.pos_rows], axis=1)
            er = np.linalg.norm(r[:, self.rot_rows], axis=1)
        else:
            ep = np.sqrt(np.einsum("li,li->l", e[:, :3], e[:, :3])) if self.need_pos else np.zeros(L)
            if th is not None and R is None:
                er = th                                          # |log| is the angle
            else:
                er = np.sqrt(np.einsum("li,li->l", e[:, 3:], e[:, 3:])) if self.need_rot else np.zeros(L)
        if not self.unit_weights:
            r = r * self.wrow
            Jm = Jm * self.wrow[:, None]
        return r, Jm, ep, er

    # ------------------------------------------------------------------ one damped step per lane
    def _dls(self, J, e, lam):
        """``argmin |J dx - e|^2 + lam |dx|^2`` per lane, through the smaller normal equations."""
        L, m, nv = J.shape
        Jt = J.transpose(0, 2, 1)
        if m <= nv:
            A = J @ Jt
            A.reshape(L, m * m)[:, ::m + 1] += lam[:, None]          # + lam I, on the diagonal's view
            y = _solve(A, e)
            return (Jt @ y[:, :, None])[:, :, 0]
        A = Jt @ J
        A.reshape(L, nv * nv)[:, ::nv + 1] += lam[:, None]
        g = (Jt @ e[:, :, None])[:, :, 0]
        return _solve(A, g)

    def _evaluate_one(self, x, pt, RtT):
        """:meth:`evaluate` of one lane (:meth:`_eval1`, as one-lane arrays)."""
        r, Jm, ep, er = self._eval1(x, pt, RtT)
        return r[None], Jm[None], np.array([ep]), np.array([er])

    def _eval1(self, x, pt, RtT, tp=-1.0, to=-1.0):
        """Weighted residual (m,), Jacobian (m, nv) and the position and orientation error norms of one
        configuration of the unknowns ``x``: the chain's pass for one configuration
        (:class:`~.chain_pass.ChainPass`, built on first use; a held base's steps are its constants) and, but
        for a full pose in ground axes with unit weights (the pass's own residual), :func:`~.solvers.chain_residual`.
        The Jacobian may be None when the errors are within ``tp`` (m) and ``to`` (rad): callers that stop at
        those tolerances pass them (the last evaluation of a converging refinement needs no Jacobian)."""
        cp = self._pass
        if cp is None:
            cp = self._pass = unbound_pass(self._passes, self._frame, self.chain, self.var_seg).held(self.theta,
                                                                                                 fold=True)
        if self.plain_pose and self.Rrow is None and not self.target_rows:
            return cp.pose_residual(x, pt, RtT, tp, to)
        return chain_residual(self, *cp.pose_residual(x, pt, RtT), RtT if self.target_rows else None)

    def _step_one(self, x, r, J, lam):
        """:meth:`step` of one lane (scalar Cholesky solves: :func:`~.damped_step.limited_step`)."""
        return limited_step(self, x, r, J, lam)[None]

    def step(self, X, r, J, lam):
        """Damped least-squares step of every lane with joint limits (clamp, then recompute once with the
        clamped joints held); returns the new in-limit lane configurations."""
        if X.shape[0] == 1:
            return self._step_one(X[0], r[0], J[0], float(lam[0]))
        Xn = X - self._dls(J, r, lam)
        clo, chi = self.clo, self.chi
        Xc = np.minimum(np.maximum(Xn, clo), chi)
        out = Xc != Xn
        if np.count_nonzero(out):
            # every lane at once (no gather/scatter of the lanes that crossed: fewer array passes); a lane
            # with no joint out gets the same step again (held = 0, Jf = J), so the result is unchanged
            held = Xc - X
            held *= out
            e = (J @ held[:, :, None])[:, :, 0]
            e += r
            dxf = self._dls(J * ~out[:, None, :], e, lam)
            np.subtract(X, dxf, out=dxf)
            np.minimum(np.maximum(dxf, clo, out=dxf), chi, out=dxf)
            Xn = np.where(out, Xc, dxf)
        if self.any_wrap:
            lo, hi = self.lo, self.hi
            wr = self.wrap & ((Xn < lo) | (Xn > hi))
            if np.count_nonzero(wr):
                Xn = np.where(wr, wrap_angle(Xn, lo), Xn)
        return Xn

    def _run_single(self, x0, pt, RtT, tp, to, deadline, max_iterations, width, seed, mu0, cancel, out=None,
                    focus=True):
        """:meth:`run` for one reachable target whose lanes all start at once (``start_width ==
        population``, restarts on): the same iterations, restarts and answer, with the population's arrays
        kept in place and the per-lane counters kept as the loop at which they were last reset (no
        per-target bookkeeping, and the stall test only on the loops where some lane can stall)."""
        nv = self.nv
        L = width
        X = np.empty((L, nv))
        X[0] = x0
        near = self.nearest_starts(pt[None], RtT[None], L - 1)
        X[1:] = self.restarts(seed, L - 1)[:L - 1] if near is None else near[0]
        nrest = L - 1
        best_x, best_c = np.array(x0, dtype=float), math.inf
        mu = np.full(L, float(mu0))
        cost = np.full(L, np.inf)
        r = J = None
        fresh = None                  # lanes not evaluated yet (None: none; all of them before loop 1)
        rej = np.zeros(L, dtype=np.int64)
        # a lane's attempt iterations are loops - start, its iterations since its last stall test loops - ref
        start = np.zeros(L, dtype=np.int64)
        ref = np.zeros(L, dtype=np.int64)
        ref_c = np.full(L, np.inf)
        its = 0
        loops = 0
        cap = self.cap
        gate = STALL_WINDOW           # the first loop at which a lane can stall
        status = "stalled"
        third = 1.0 / 3.0
        focus_below = FOCUS_COST if focus else -math.inf
        while True:
            if loops and (time.perf_counter() > deadline or (cancel is not None and cancel.is_set())):
                k = int(np.argmin(cost))
                if cost[k] < best_c:
                    best_c, best_x = cost[k], X[k].copy()
                status = "timeout"
                break
            if fresh is None and loops:                 # a step from every lane
                lam = mu * cost
                lam += 1e-12
                Xn = self.step(X, r, J, lam)
            elif not loops or np.count_nonzero(fresh) == L:          # every lane at its start point
                Xn = X
            else:
                Xn = X.copy()
                ev = ~fresh
                Xn[ev] = self.step(X[ev], r[ev], J[ev], mu[ev] * cost[ev] + 1e-12)
            rn, Jn, epn, ern = self.evaluate(Xn, pt, RtT)     # (one target: broadcast over the lanes)
            costn = np.einsum("li,li->l", rn, rn)
            its += L
            loops += 1
            conv = (epn <= tp) & (ern <= to)
            if np.count_nonzero(conv):                   # the lowest converged lane (count_nonzero: a
                # fifth of .any()'s cost on arrays of a few lanes)
                k = int(np.argmax(conv))
                best_x = Xn[k].copy()
                if out is not None:
                    out.append(rn[k].copy())
                status = "converged"
                break
            ok = costn < cost
            if r is None:                                # loop 1: every lane was fresh
                X, r, J, cost = Xn, rn, Jn, costn
            elif np.count_nonzero(ok) == ok.size:
                X, r, J, cost = Xn, rn, Jn, costn
                mu *= third
                np.maximum(mu, 1e-9, out=mu)
                rej[:] = 0
            else:
                okc = ok[:, None]
                np.copyto(X, Xn, where=okc)
                np.copyto(r, rn, where=okc)
                np.copyto(J, Jn, where=ok[:, None, None])
                np.copyto(cost, costn, where=ok)
                mu = np.where(ok, np.maximum(mu * third, 1e-9), np.minimum(mu * 10.0, 1e12))
                rej = np.where(ok, 0, rej + 1)
            if fresh is not None:
                mu[fresh] = mu0
                fresh = None
            if its >= max_iterations:
                k = int(np.argmin(cost))
                if cost[k] < best_c:
                    best_c, best_x = cost[k], X[k].copy()
                status = "max_iterations"
                break
            k = int(np.argmin(cost))
            if loops >= FOCUS_AFTER and cost[k] < focus_below:
                # the lane of lowest cost alone, in the one-lane pass, while its cost falls as a converging
                # Gauss-Newton's does; the population resumes where it was if it does not
                x, rk, Jk, ck, muk = X[k], r[k], J[k], float(cost[k]), float(mu[k])
                for _ in range(FOCUS_STEPS):
                    if time.perf_counter() > deadline or (cancel is not None and cancel.is_set()):
                        break
                    xn = self._step_one(x, rk, Jk, muk * ck + 1e-12)[0]
                    r1, J1, ep1, er1 = self._eval1(xn, pt, RtT, tp, to)
                    its += 1
                    if ep1 <= tp and er1 <= to:
                        best_x = xn
                        if out is not None:
                            out.append(np.array(r1))
                        status = "converged"
                        break
                    cn = float(r1 @ r1)
                    fast = cn < ck * FOCUS_RATIO
                    if cn < ck:
                        x, rk, Jk, ck, muk = xn, r1, J1, cn, max(muk * third, 1e-9)
                    if not fast:
                        break
                if status == "converged":
                    break
                X[k], r[k], J[k], cost[k], mu[k] = x, rk, Jk, ck, muk
                focus_below = ck * FOCUS_RATIO           # again once a lane is well below this one
            if loops < gate:
                continue
            ait = loops - start
            chk = (loops - ref) >= STALL_WINDOW
            stalled = (chk & (cost > ref_c * STALL_RATIO)) | (rej > 8) | (ait >= cap)
            if np.count_nonzero(chk):
                ref_c = np.where(chk, cost, ref_c)
                ref[chk] = loops
            if np.count_nonzero(stalled):
                ks = np.flatnonzero(stalled)
                tab = self.restarts(seed, nrest + len(ks))
                for k in ks.tolist():
                    if cost[k] < best_c:
                        best_c, best_x = cost[k], X[k].copy()
                    X[k] = tab[nrest]
                    nrest += 1
                fresh = stalled
                start[ks] = loops
                ref[ks] = loops
                rej[ks] = 0
                cost[ks] = np.inf
                ref_c[ks] = np.inf
                mu[ks] = mu0
            # the next loop at which some lane can stall: its stall window full, 9 rejections, the cap
            gate = loops + int(min(STALL_WINDOW - (loops - ref).max(), 9 - rej.max(),
                                   cap - (loops - start).max()))
        self.last_loops = np.array([loops])
        return (best_x[None], np.array([status == "converged"]), np.array([status], dtype=object),
                np.array([its]), np.array([nrest]))

    def _run_far_one(self, x0, pt, RtT, tp, to, deadline, max_iterations, window, mu0, cancel):
        """:meth:`run` for one target beyond the reach bound: its one attempt from the seed, the same
        iterations as in the lane loop with the bookkeeping in scalars (the answer is reported within a
        few tenths of a millisecond of CPU)."""
        def one(x):
            r, J, ep, er = self._eval1(x, pt, RtT)
            return r, J, ep, er, float(r @ r)

        x = np.array(x0, dtype=float)
        r, J, ep, er, cost = one(x)
        its, ait, rej, mu = 1, 1, 0, float(mu0)
        ref_c, ref_it = math.inf, 0
        status = "converged" if (ep <= tp and er <= to) else None
        while status is None:
            if its >= max_iterations:
                status = "max_iterations"
                break
            chk = ait - ref_it >= window
            if (chk and cost > ref_c * (1.0 - 1e-3)) or rej > 4 or ait >= FAR_ITERATIONS:
                break
            if chk:
                ref_c, ref_it = cost, ait
            if time.perf_counter() > deadline or (cancel is not None and cancel.is_set()):
                status = "timeout"
                break
            xn = self._step_one(x, r, J, mu * min(cost, FAR_DAMPING) + 1e-12)[0]
            rn, Jn, epn, ern, cn = one(xn)
            its += 1
            if cn < cost:
                x, r, J, cost = xn, rn, Jn, cn
                mu, rej = max(mu * (1.0 / 3.0), 1e-9), 0
            else:
                mu, rej = min(mu * 10.0, 1e12), rej + 1
            ait += 1
            if epn <= tp and ern <= to:
                x, status = xn, "converged"
        if status != "converged":
            status = "out_of_reach"
        self.last_loops = np.array([its])
        return (x[None], np.array([status == "converged"]), np.array([status], dtype=object), np.array([its]),
                np.array([0]))

    # ------------------------------------------------------------------ the loop
    def run(self, x0s, pts, RtTs, tol_position, tol_orientation, *, deadline=math.inf, max_iterations=10000,
            restarts=True, population=POPULATION, seed=0, mu0=MU0, start_width=1, cancel=None, residual=None,
            focus=True):
        """Solve targets ``pts`` (B, 3) / ``RtTs`` (B, 3, 3) from seeds ``x0s`` (B, nv). Returns per target
        ``(x (B, nv), success (B,), status (B,) str, iterations (B,), restarts (B,))``: ``x`` the first lane
        within tolerance, else the lowest-cost point seen; ``status`` ``"converged"``, ``"out_of_reach"``,
        ``"timeout"``, ``"max_iterations"`` or ``"stalled"``; ``iterations`` the lane-iterations spent.
        ``cancel`` (``is_set()``): once set, the run ends as at the deadline. ``residual``: a list that a single
        target converged in the population loop appends its lane's weighted residual (m,) to. ``focus``: a
        single target whose lanes all start at once may go on with its best lane alone (:data:`FOCUS_AFTER`);
        False: the batch loop's steps exactly."""
        # floating-point flags quiet for the whole run (a singular damped system is caught by _solve's
        # finiteness test and solved again by least squares) rather than set and reset on every solve
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            return self._run(x0s, pts, RtTs, tol_position, tol_orientation, deadline, max_iterations, restarts,
                             population, seed, mu0, start_width, cancel, residual, focus)

    def _run(self, x0s, pts, RtTs, tol_position, tol_orientation, deadline, max_iterations, restarts, population,
             seed, mu0, start_width, cancel, residual=None, focus=True):
        far1 = False                        # a single target beyond the reach bound
        if pts.shape[0] == 1 and self.bound_applies:
            d = pts[0] - self.origin
            far1 = math.sqrt(float(d @ d)) > self.reach + tol_position
        if (pts.shape[0] == 1 and restarts and int(population) > 1 and min(max(1, int(start_width)),
                                                                             int(population)) == int(population)
                and not far1):
            return self._run_single(x0s[0], pts[0], RtTs[0], tol_position, tol_orientation, deadline,
                                    int(max_iterations), int(population), seed, mu0, cancel, residual, focus)
        if far1:
            return self._run_far_one(x0s[0], pts[0], RtTs[0], tol_position, tol_orientation, deadline,
                                     int(max_iterations), STALL_WINDOW if restarts else 10, mu0, cancel)
        B = pts.shape[0]
        nv, m = self.nv, self.m
        tp, to = tol_position, tol_orientation
        best_x = np.array(x0s, dtype=float)
        best_c = np.full(B, np.inf)
        done = np.zeros(B, dtype=bool)
        status = np.full(B, "stalled", dtype=object)
        its = np.zeros(B, dtype=np.int64)
        loops = np.zeros(B, dtype=np.int64)         # engine iterations each target was active in
        nrest = np.zeros(B, dtype=np.int64)
        widened = np.zeros(B, dtype=bool)
        width = max(1, int(population)) if restarts else 1
        # beyond the reach bound: one attempt from the seed, no restarts (the compromise stretched toward it)
        far = np.zeros(B, dtype=bool)
        if self.bound_applies:
            far = np.linalg.norm(pts - self.origin, axis=1) > self.reach + tp
        any_far = bool(far.any())
        if restarts:
            self.restarts(seed, 1)
        cap = self.cap if restarts else max_iterations
        window, ratio = (STALL_WINDOW, STALL_RATIO) if restarts else (10, 1.0 - 1e-3)
        # lanes: the seed of every target, and with start_width > 1 the first restart configurations too
        # (a target beyond reach keeps its one lane)
        w0 = min(max(1, int(start_width)), width) if restarts else 1
        nl = np.where(far, 1, w0).astype(np.int64)  # lanes per target (0 once done)
        tid = np.repeat(np.arange(B), nl)
        X = np.repeat(best_x, nl, axis=0)
        if w0 > 1:
            if not far.all():                       # (a target beyond reach keeps its one lane)
                first_lane = np.concatenate([[0], np.cumsum(nl)[:-1]])
                rank = np.arange(len(tid)) - first_lane[tid]           # 0: the seed, k: restart k
                extra = rank > 0
                near = self.nearest_starts(pts, RtTs, w0 - 1)
                X[extra] = (self.restarts(seed, w0 - 1)[rank[extra] - 1] if near is None
                            else near[tid[extra], rank[extra] - 1])
            nrest[:] = nl - 1
            widened[:] = (nl >= width) | far
        L = len(tid)
        mu = np.full(L, mu0)
        cost = np.full(L, np.inf)
        r = np.zeros((L, m))
        J = np.zeros((L, m, nv))
        fresh = np.ones(L, dtype=bool)
        nfresh = L
        ait = np.zeros(L, dtype=np.int64)
        rej = np.zeros(L, dtype=np.int64)
        ref_c = np.full(L, np.inf)
        ref_it = np.zeros(L, dtype=np.int64)
        Pl, Rl = (pts, RtTs) if L == B else (pts[tid], RtTs[tid])
        first = True
        lanes_changed = False

        def keep_best(k):
            t = tid[k]
            if cost[k] < best_c[t]:
                best_c[t] = cost[k]
                best_x[t] = X[k]

        while L:
            if not first and (time.perf_counter() > deadline or (cancel is not None and cancel.is_set())):
                for k in range(L):
                    keep_best(k)
                status[tid] = "timeout"
                break
            first = False
            if lanes_changed:
                Pl, Rl = pts[tid], RtTs[tid]
                lanes_changed = False
            # trial points: a step from every evaluated lane, the start point of every fresh lane
            # damping mu |e|^2 vanishes at a solution; beyond reach |e| never does, so there it is capped
            # at FAR_DAMPING (else the steps toward the stretched compromise shrink to nothing)
            lam = mu * (cost if not any_far else np.where(far[tid], np.minimum(cost, FAR_DAMPING), cost)) + 1e-12
            if nfresh == 0:
                Xn = self.step(X, r, J, lam)
            elif nfresh == L:
                Xn = X
            else:
                Xn = X.copy()
                ev = ~fresh
                Xn[ev] = self.step(X[ev], r[ev], J[ev], lam[ev])
            rn, Jn, epn, ern = self.evaluate(Xn, Pl, Rl)
            costn = np.einsum("li,li->l", rn, rn)
            its += nl
            loops += nl > 0
            ok = costn < cost
            if ok.all():
                X, r, J, cost = Xn, rn, Jn, costn
                mu = np.maximum(mu * (1.0 / 3.0), 1e-9)
                rej[:] = 0
            else:
                X = np.where(ok[:, None], Xn, X)
                r = np.where(ok[:, None], rn, r)
                J = np.where(ok[:, None, None], Jn, J)
                cost = np.where(ok, costn, cost)
                mu = np.where(ok, np.maximum(mu * (1.0 / 3.0), 1e-9), np.minimum(mu * 10.0, 1e12))
                rej = np.where(ok, 0, rej + 1)
            if nfresh:
                mu[fresh] = mu0
                fresh[:] = False
                nfresh = 0
            ait += 1
            finished = False
            conv = (epn <= tp) & (ern <= to)
            if conv.any():
                for k in np.flatnonzero(conv):        # lowest lane first
                    t = tid[k]
                    if not done[t]:
                        done[t], status[t], best_x[t] = True, "converged", Xn[k]
                        nl[t] = 0
                        finished = True
            if its.max() >= max_iterations:
                for t in np.flatnonzero((its >= max_iterations) & ~done):
                    for k in np.flatnonzero(tid == t):
                        keep_best(k)
                    done[t], status[t], nl[t] = True, "max_iterations", 0
                    finished = True
            # stall detection
            chk = (ait - ref_it) >= window
            stalled = (chk & (cost > ref_c * ratio)) | (rej > 8) | (ait >= cap)
            if any_far:
                # beyond reach: the one attempt runs while it still improves (1e-3 per window)
                fl = far[tid]
                slow = chk & (cost > ref_c * (1.0 - 1e-3))
                stalled = np.where(fl, slow | (rej > 4) | (ait >= FAR_ITERATIONS), stalled)
                for k in np.flatnonzero(stalled & fl):
                    t = tid[k]
                    if not done[t]:
                        keep_best(k)
                        done[t], status[t], nl[t] = True, "out_of_reach", 0
                        finished = True
            if chk.any():
                ref_c = np.where(chk, cost, ref_c)
                ref_it = np.where(chk, ait, ref_it)
            if not restarts and stalled.any():
                for k in np.flatnonzero(stalled):
                    t = tid[k]
                    if not done[t]:
                        keep_best(k)
                        done[t], status[t], nl[t] = True, "stalled", 0
                        finished = True
            if finished:
                keep = ~done[tid]
                tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it, stalled = (
                    a[keep] for a in (tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it, stalled))
                lanes_changed = True
            if restarts and stalled.any():
                # a stalled lane restarts; a target whose first lane stalls widens to `width` lanes
                new_t = []
                for k in np.flatnonzero(stalled):
                    t = tid[k]
                    keep_best(k)
                    nrest[t] += 1
                    X[k] = self._table_row(seed, nrest[t])
                    fresh[k], ait[k], rej[k], ref_it[k] = True, 0, 0, 0
                    cost[k], ref_c[k], mu[k] = np.inf, np.inf, mu0
                    if not widened[t]:
                        widened[t] = True
                        new_t.extend([t] * int(width - nl[t]))
                if new_t:
                    nt = np.array(new_t, dtype=np.int64)
                    Xs = np.empty((len(nt), nv))
                    for j, t in enumerate(nt):
                        nrest[t] += 1
                        nl[t] += 1
                        Xs[j] = self._table_row(seed, nrest[t])
                    z = np.zeros(len(nt), dtype=np.int64)
                    tid = np.concatenate([tid, nt])
                    X = np.concatenate([X, Xs])
                    r = np.concatenate([r, np.zeros((len(nt), m))])
                    J = np.concatenate([J, np.zeros((len(nt), m, nv))])
                    cost = np.concatenate([cost, np.full(len(nt), np.inf)])
                    mu = np.concatenate([mu, np.full(len(nt), mu0)])
                    fresh = np.concatenate([fresh, np.ones(len(nt), dtype=bool)])
                    ait, rej, ref_it = (np.concatenate([a, z]) for a in (ait, rej, ref_it))
                    ref_c = np.concatenate([ref_c, np.full(len(nt), np.inf)])
                    # lanes ordered by target, the earliest seed first (answers independent of the batch)
                    order = np.argsort(tid, kind="stable")
                    tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it = (
                        a[order] for a in (tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it))
                lanes_changed = True
                nfresh = int(fresh.sum())
            L = len(tid)
        status[far & (status != "converged")] = "out_of_reach"
        self.last_loops = loops                      # statistics for benchmarks (not thread-safe)
        return best_x, status == "converged", status, its, nrest

    def _table_row(self, seed, k):
        return self.restarts(seed, k)[k - 1]


def _solve(A, b):
    """Batched SPD solve ``A x = b`` ((L, k, k), (L, k)); singular systems fall back to least squares."""
    if _solve1 is not None:         # numpy's own kernel without np.linalg.solve's checks (half its cost;
        x = _solve1(A, b, signature="dd->d")     # LaneEngine.run keeps the floating-point flags quiet)
        if np.count_nonzero(np.isfinite(x)) == x.size:
            return x
    try:
        return np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(b)
        for k in range(A.shape[0]):
            out[k] = np.linalg.lstsq(A[k], b[k], rcond=None)[0]
        return out


try:                                # the gufunc behind np.linalg.solve for a vector right-hand side
    from numpy.linalg._umath_linalg import solve1 as _solve1
except ImportError:                 # pragma: no cover - numpy without it: np.linalg.solve
    _solve1 = None


# ---------------------------------------------------------------------------------------------- cache
#: chain constants kept per mechanism (a memo of its derived data, :mod:`..data`, by frame, limits and
#: unknowns)
_CONSTS_MAX = 64
#: seed tables (about 0.6 MB each) kept per mechanism in the base frames of engines with held leading steps
_BASE_TABLES_MAX = 8


class _ChainConstants:
    """What does not change between solves on one chain with given limits: the reach bound and the restart
    tables (one per seed; built once, outside any caller's budget, and read-only after)."""

    def __init__(self, m, ch, lo, hi):
        origin, self.reach = reach_bound(m, ch)
        self.origin = _ro(origin)
        self.lo = np.where(np.isfinite(lo), lo, -math.pi)
        self.hi = np.where(np.isfinite(hi), hi, math.pi)
        self._tables: dict = {}
        self._lock = threading.Lock()

    def table(self, seed, count: int) -> np.ndarray:
        """Restart configurations 1..count of the sequence of ``seed`` (:func:`~.problem.restart_sample`'s
        distribution: the central half of every range, every third draw over the whole range), the full-range
        draws with each joint at its lower or upper limit with probability 1/4 each: a target with several
        joints at their limits (a stow pose) has its basin at a corner of the joint box, which central and
        uniform draws hardly ever reach (a Baxter-like arm, four joints at limits: no answer in 692 restarts).
        Boundary targets (joints at limits, mid or quarter points), 1500 per arm and seed mode, 50 ms:
        Baxter 57 -> 3 failures of 4500, TIAGo 7 -> 0, xArm7 23 -> 1 (with the sweeps' range ends)."""
        t = self._tables.get(seed)
        if t is not None and t[0].shape[0] >= count:
            return t[0]
        with self._lock:
            t = self._tables.get(seed)
            if t is None:
                t = (np.empty((0, len(self.lo))), np.random.default_rng(seed))
            tab, rng = t
            while tab.shape[0] < count:
                k = tab.shape[0] + 1 + np.arange(_TABLE_BLOCK)
                u = rng.random((_TABLE_BLOCK, len(self.lo)))
                full = (k % 3 == 2)[:, None]
                mid, half = 0.5 * (self.lo + self.hi), 0.25 * (self.hi - self.lo)
                block = np.where(full, self.lo + u * (self.hi - self.lo), mid - half + u * 2 * half)
                corner = np.flatnonzero(k % 3 == 2)          # the full-range draws: joints at limits too
                side = rng.random((len(corner), len(self.lo)))
                block[corner] = np.where(side < 0.25, self.lo, np.where(side > 0.75, self.hi, block[corner]))
                tab = np.concatenate([tab, block])
            tab.flags.writeable = False
            if len(self._tables) > 16:          # callers drawing fresh seeds: keep the cache small
                self._tables.clear()
            self._tables[seed] = (tab, rng)
            return tab


def _ro(a):
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


def chain_engine(P: IKProblem):
    """The :class:`LaneEngine` for this problem's chain task, or None when the problem does not suit it
    (several constraints, a posture, a coupled joint on the chain, a target-dependent row frame). Engines
    are shared by the problems of one shape (frame, rows, weights; every joint free, targets in the ground
    frame) on a mechanism, so that only the first solve builds one; the problem's own seed and target are
    in :func:`lane_data`."""
    E = getattr(P, "_lane_engine", _UNSET)
    if E is not _UNSET:
        return E
    # a plain pose of unit weights on a chain without held joints: the engine depends on the problem's structure
    # and frame alone, and is kept in the structure (no shape key to build and hash per solve)
    c = P.plain_pose
    kept = c is not None and unit_unmasked(c)
    E = P.structure.solver_constants.get(("lane_engine", c.frame)) if kept else None
    key = _shape_key(P) if E is None else None
    shared = memo(P.mechanism, "ik.lane_engines", _SHARED_MAX) if key is not None else None
    E = shared.peek(key) if shared is not None else E
    if E is not None:
        c = P.tasks[0]
        Tt = c.target if isinstance(c, PoseConstraint) else c.target_pose()
        if E.T_wr is not None:
            Tt = E.T_wr @ Tt                  # the target in the ground frame
        xf = P.x_of(P.template)
        P._lane_data = (xf, xf[E.var_x], np.array(Tt[:3, 3]), np.array(Tt[:3, :3].T), E.T_wr)
    else:
        E, K = _chain_engine(P)
        if E is not None:
            P._lane_data = (K.x_full0, K.x0, K.pt, K.RtT, K.T_wr)
            if shared is not None:
                shared.put(key, E)           # many chassis poses: the memo clears itself when full
    if kept and E is not None and key is not None and not _held_on_chain(P, c.frame):
        P.structure.solver_constants[("lane_engine", c.frame)] = E
    P._lane_engine = E
    return E


def _held_on_chain(P: IKProblem, frame: str) -> bool:
    """Whether a joint of ``frame``'s chain is held (locked) in ``P``: the engine then depends on its value."""
    if P.all_free and not P.has_couplings:
        return False
    part = P.structure.solver_constants.get(("lane_key", frame))      # _shape_key's, built before
    return part is None or bool(part[1].size)


def lane_data(P: IKProblem):
    """``(x_full0, x0, pt, RtT, T_wr)`` of a problem :func:`chain_engine` took: its unknowns at the seed, the
    chain's share of them, the target position and transposed rotation in the ground frame, and the
    constant ground pose of the target's reference frame (None: the ground)."""
    return P._lane_data


_UNSET = object()
#: (kept axes, row weights' bytes) of a constraint without a mask and of weight 1, by its number of axes
_UNIT_ROWS = {n: (tuple(range(n)), np.ones(n).tobytes()) for n in (3, 6)}
#: engines kept per mechanism (a memo of its derived data, :mod:`..data`, by problem shape and chassis pose of
#: locked rovers: about 0.1 ms to build; their seed table, the costly part, is shared by every chassis pose)
_SHARED_MAX = 64


def _shape_key(P: IKProblem):
    """What an engine depends on besides the mechanism (None for problems that get an engine of their own):
    the task's kind, frame, rows and weights; with locked joints, the locked values on the chain; with a
    target in another frame than the ground, that frame and the locked values that place it (a chassis-frame
    request of the IK service: the rover's pose is locked, so the target is constant in the ground frame and
    every request at that rover pose shares one engine)."""
    m = P.mechanism
    c = chain_task(P)
    if c is None or c.mask_frame != "reference":
        return None
    if unit_unmasked(c):
        key = (type(c).__name__, c.frame) + _UNIT_ROWS[len(c.kept_axes)]   # the general form's values
    else:
        key = (type(c).__name__, c.frame, tuple(np.asarray(c.kept_axes).tolist()), c.row_weights().tobytes())
    if c.relative_to not in (None, m.ground):
        if not P.holds(c.relative_to):
            return None                      # the unknowns move the reference frame: no constant ground pose
        ref = frame_chain(m, c.relative_to).coords
        key += (c.relative_to, ref.tobytes(), P.template[ref].tobytes())
    if P.all_free and not P.has_couplings:
        return key
    # locked joints: the engine holds the values of the locked joints on the chain (a rover's chassis pose);
    # the seed's values of the chain's free joints are not part of it (a mechanism with coupled joints off
    # the chain, Baxter's grippers, got an engine per seed)
    consts = P.structure.solver_constants          # the structure's part, kept per frame (a dict read)
    part = consts.get(("lane_key", c.frame))
    if part is None:
        coords = frame_chain(m, c.frame).coords
        held = coords[~P.free_mask[coords]]
        part = consts[("lane_key", c.frame)] = (P.free.tobytes(), held, held.tobytes())
    return key + (part[0], part[2], P.template[part[1]].tobytes())


def target_rows_engine(P: IKProblem):
    """For :func:`~.solve.solve_ik_batch`: the :class:`LaneEngine` of a problem :func:`chain_engine` refuses
    only because its rows turn with each target (``mask_frame="target"`` with a partial mask or row weights:
    a pose with the roll about the tool's own axis free), whose every lane's rows are then turned into its
    own target's axes (``R_t^T e``, ``R_t^T J``); None for any other problem. One engine and one call for
    targets of any orientation (a reachability map's approach directions), where a reference frame per
    direction took a call per direction. Single solves keep :func:`chain_engine`'s choice."""
    E = chain_engine(P)
    if E is not None:
        return E
    c = P.tasks[0] if len(P.tasks) == 1 else None
    if c is None or type(c) not in (PoseConstraint, OrientationConstraint) or c.mask_frame != "target":
        return None
    E, K = _chain_engine(P, target_rows=True)
    if E is not None:
        P._lane_engine = E
        P._lane_data = (K.x_full0, K.x0, K.pt, K.RtT, K.T_wr)
    return E


def _chain_engine(P: IKProblem, target_rows: bool = False):
    """``(engine, kernel)`` built for ``P``, or ``(None, None)``; ``target_rows``: rows in each target's axes
    (:func:`target_rows_engine`)."""
    K = _ChainKernel.build(P)         # None unless chain_task(P)
    if K is None:
        return None, None
    c = P.tasks[0]
    if target_rows:
        E = LaneEngine(K)
        E.Rrow, E.target_rows = None, True
        return E, K
    if c.mask_frame == "target" and not K.all_rows:
        return None, None      # rows turned into each target's axes: not one engine for all targets
    E = LaneEngine(K)
    if c.mask_frame == "target":
        if not K.unit_weights:
            return None, None  # weights along each target's axes: not one engine for all targets
        if K.T_wr is None:
            E.Rrow = None      # all rows, unit weights: turning the rows changes nothing
        else:
            E.Rrow = np.array(K.T_wr[:3, :3].T)
    return E, K


class LMPopulationSolver:
    """``solve_ik(..., solver="lm")``: the lane engine on one target with a population of seeds (module
    docstring); problems it does not suit go to ``"dls"``. ``population``: lanes per target;
    ``start_width``: lanes from the start (default: ``population`` for full poses on chains of ``WIDE_FROM``
    (6) or more unknowns -- the caller's seed and the seed table's configurations nearest the target advance
    together from the first iteration, which halves the iterations of an arm's solve -- and 1 for shorter
    chains, whose seed alone usually converges (a pan-tilt mast), and for a position or orientation alone,
    whose answer is then the one the seed leads to); ``mu0``: initial damping factor; ``focus``: a lane
    converging fast goes on alone (:data:`FOCUS_AFTER`; False: the steps of :func:`solve_ik_batch`'s loop)."""

    name = "lm"

    def __init__(self, population: int = POPULATION, mu0: float = MU0, start_width: int | None = None,
                 focus: bool = True):
        for name, v in (("population", population), ("start_width", start_width)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise InvalidConfiguration(f"{name} must be an integer >= 1, got {v!r}")
        self.population = int(population)
        self.start_width = None if start_width is None else int(start_width)
        self.mu0 = float(mu0)
        self.focus = bool(focus)

    def solve(self, P: IKProblem, o: IKOptions) -> IKResult:
        E = chain_engine(P)
        if E is None or P.n == 0:
            return DLSSolver(mu0=self.mu0).solve(P, o)
        xf, x0, pt, RtT, _ = lane_data(P)
        seed = _seed_of(o.rng)
        # table starts for full poses only: a position or orientation alone leaves the chain free in other
        # directions, and an answer from a table entry would not depend on the caller's seed (a UR5's tool
        # position reached from three seeds gave one configuration), where the field returns the solution
        # the seed leads to
        width = self.start_width or (self.population if E.nv >= WIDE_FROM and len(E.rows) == 6 else 1)
        if o.restarts:
            E.restarts(seed, 1)
            if min(width, self.population) > 1:
                E.seed_table()
        if time.perf_counter() - o.start > 0.5e-3:       # building the caches is not billed to the caller
            o.deadline += time.perf_counter() - o.start
        # a plain pose with unit weights: the converged lane's residual is the constraint's (no second pass)
        res = [] if P.plain_pose is not None and E.unit_weights and E.Rrow is None else None
        x, ok, st, its, nr = E.run(x0[None, :], pt[None, :], RtT[None], o.tol_position, o.tol_orientation,
                                   deadline=o.deadline, max_iterations=o.max_iterations, restarts=o.restarts,
                                   population=self.population, seed=seed, mu0=self.mu0, start_width=width,
                                   cancel=getattr(o, "cancel", None), residual=res, focus=self.focus)
        full = xf.copy()
        full[E.var_x] = x[0]
        return _result_of(P, o, full, st[0], int(its[0]), int(nr[0]), self.name, res[0] if res else None)


def _seed_of(rng):
    """The restart sequence's seed: the caller's integer seed (0 by default); a numpy Generator draws one."""
    g = getattr(rng, "_seed", rng)
    if g is None:
        return 0
    if isinstance(g, (int, np.integer)):
        return int(g)
    if isinstance(g, np.random.Generator):
        return int(g.integers(0, 2 ** 63 - 1))
    if isinstance(g, (np.random.BitGenerator, np.random.SeedSequence)):
        return int(np.random.default_rng(g).integers(0, 2 ** 63 - 1))
    return 0


def _result_of(P: IKProblem, o: IKOptions, x, status: str, iterations: int, restarts: int, name: str,
               residual=None):
    if status == "converged":
        return P.result(x, True, "converged", o, iterations, restarts, name, residual=residual)
    if status == "out_of_reach":
        return P.result(x, False, "unreachable", o, iterations, 0, name,
                        "the target lies beyond the chain's reach (sum of its link lengths)")
    if status in ("timeout", "max_iterations") and restarts == 0:
        reason = status                  # the budget ended the first attempt while it was still running
    else:
        reason = diagnose_failure(P, o, x)
        if reason == "unreachable" and status in ("timeout", "max_iterations") and not beyond_reach(P, o):
            reason = status              # the budget ended the search: not found is not proven out of reach
    return P.result(x, False, reason, o, iterations, restarts, name)


register_solver("lm", LMPopulationSolver)


#: most tasks of a problem's top level that get seed-table starts (each may build a table: about 6 ms)
START_TASKS = 4


def top_level_nearest_starts(P: IKProblem, count: int, options: IKOptions | None = None):
    """For :class:`DLSSolver`'s restarts on the generic path: each pose, position or orientation task of the
    problem's top priority level whose chain has a lane engine (every chain joint free, no coupling on it)
    gives ``(var_x, X)``: the indices of its chain's unknowns in the problem's unknowns and the ``count``
    configurations of the engine's seed table whose frame pose is nearest the task's target (nearest
    first). Tasks whose engine would see other unknowns than the problem's are left out, and so are
    repeats of a task (same frame, reference and target) and every task past the first :data:`START_TASKS`
    distinct ones: a request of thousands of constraints must not build thousands of tables. The search
    stops early once ``options.deadline`` has passed (a timeout, or a cancelled request)."""
    if not P.levels:
        return []
    names = [P.mechanism.coordinate_names[i] for i in P.locked]
    out = []
    seen = set()
    for c in P.levels[0]:
        if type(c) not in (PoseConstraint, PositionConstraint, OrientationConstraint):
            continue
        if len(seen) >= START_TASKS or (options is not None and time.perf_counter() > options.deadline):
            break
        key = _task_identity(c)
        if key in seen:
            continue
        seen.add(key)
        sub = IKProblem(P.mechanism, [c], P.template, names, [c])
        if not np.array_equal(sub.free, P.free):
            continue
        E = chain_engine(sub)
        if E is None:
            continue
        _, _, pt, RtT, _ = lane_data(sub)
        S = E.nearest_starts(pt[None], RtT[None], count)
        if S is not None:
            out.append((np.asarray(E.var_x), S[0]))
    return out


def _task_identity(c) -> tuple:
    """What makes two chain tasks the same task for :func:`top_level_nearest_starts`."""
    target = c.target if isinstance(c, PoseConstraint) else c.target_pose()
    return (type(c).__name__, c.frame, c.relative_to, c.mask_frame, tuple(np.asarray(c.kept_axes).tolist()),
            np.asarray(target, dtype=float).tobytes())


DLSSolver.start_table = staticmethod(top_level_nearest_starts)

