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
answer does not depend on the other targets of its batch). The target is done at the first lane within
tolerance (lowest lane first when several meet it in one iteration).

A target farther from the chain's first moving axis origin than the chain can reach (the sum of the distances
between consecutive joint origins, prismatic strokes included) gets one attempt from its seed and no
restarts (the answer is the compromise stretched toward it) and is reported ``"unreachable"``. Everything per chain (the chain, its limits, the reach bound, the restart table) is cached per
mechanism on first use, outside the caller's time budget.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass, field

import numpy as np

from ..constraints import OrientationConstraint, PoseConstraint, PositionConstraint
from ..errors import InvalidConfiguration
from ..spatial import log_so3
from .problem import IKOptions, IKProblem, IKResult, diagnose_failure, restart_sample
from .registry import register_solver
from .solvers import DLSSolver, _ChainKernel

__all__ = ["BatchIKResult", "LMPopulationSolver", "LaneEngine", "chain_engine"]

#: an attempt is stalled when its cost is not below STALL_RATIO of its value STALL_WINDOW iterations earlier
STALL_WINDOW = 4
STALL_RATIO = 0.6
#: and it gets at most max(ATTEMPT_ITERATIONS, 2 n) iterations
ATTEMPT_ITERATIONS = 20
#: lanes per target once the caller's seed stalled (default of solve_ik and solve_ik_batch)
POPULATION = 6
#: restart configurations drawn per block (the table grows by blocks as targets need more)
_TABLE_BLOCK = 64


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
        K = kernel
        self.K = K
        ch = K.chain
        self.chain = ch
        self.n = ch.n
        self.nv = K.nv
        self.var_seg = K.var_seg
        self.all_vars = K.all_vars
        self.theta = np.array(K.theta)
        self.lo, self.hi, self.clo, self.chi = K.lo, K.hi, K.clo, K.chi
        self.wrap, self.any_wrap = K.wrap, K.any_wrap
        self.rows = K.rows
        self.m = K.m
        self.all_rows = K.all_rows
        self.need_pos, self.need_rot = K.need_pos, K.need_rot
        self.masked = K.masked
        self.wrow = K.wrow
        self.unit_weights = K.unit_weights
        self.Rrow = K.Rrow
        self.pos_rows, self.rot_rows = K.pos_rows, K.rot_rows
        self.cap = max(ATTEMPT_ITERATIONS, 2 * self.nv)
        m = K.P.mechanism
        key = (K.P.tasks[0].frame, self.lo.tobytes(), self.hi.tobytes(), self.var_seg.tobytes())
        per_m = _CONSTS.get(m)
        if per_m is None:
            per_m = _CONSTS[m] = {}
        consts = per_m.get(key)
        if consts is None:
            consts = per_m[key] = _ChainConstants(m, ch, self.lo, self.hi)
        self.consts = consts
        self.origin, self.reach = consts.origin, consts.reach
        # position bound only when every position row is kept
        self.bound_applies = bool(np.all(np.isin([0, 1, 2], self.rows))) and math.isfinite(self.reach)

    # ------------------------------------------------------------------ restart table
    def restarts(self, seed, count: int) -> np.ndarray:
        """The first ``count`` restart configurations (rows) of the sequence of ``seed``."""
        return self.consts.table(seed, count)

    # ------------------------------------------------------------------ evaluation of all lanes
    def evaluate(self, X, pt, RtT):
        """Weighted residuals (L, m), Jacobians (L, m, nv), position and orientation error norms (L,) of lanes
        ``X`` (L, nv) against their targets ``pt`` (L, 3) and ``RtT`` (L, 3, 3) (transposed target rotations)."""
        L = X.shape[0]
        n = self.n
        if self.all_vars:
            TH = X
        else:
            TH = np.broadcast_to(self.theta, (L, n)).copy()
            TH[:, self.var_seg] = X
        ch = self.chain
        w = np.empty((L, n, 1, 3))
        np.sin(TH, out=w[:, :, 0, 0])
        w[:, :, 0, 1] = 1.0 - np.cos(TH)
        w[:, :, 0, 2] = TH
        M = (ch.Pm[None, :, None, :] + np.matmul(w, ch.coef)).reshape(L, n, 4, 4)
        C = np.empty_like(M)
        C[:, 0] = M[:, 0]
        for i in range(1, n):
            np.matmul(C[:, i - 1], M[:, i], out=C[:, i])
        Tf = C[:, n - 1] @ ch.F
        p = Tf[:, :3, 3]
        z = C[:, :, :3, 2]                                 # (L, n, 3) step axes in the ground
        d = p[:, None, :] - C[:, :, :3, 3]
        J = np.empty((L, 6, n))
        J[:, 0] = z[:, :, 1] * d[:, :, 2] - z[:, :, 2] * d[:, :, 1]
        J[:, 1] = z[:, :, 2] * d[:, :, 0] - z[:, :, 0] * d[:, :, 2]
        J[:, 2] = z[:, :, 0] * d[:, :, 1] - z[:, :, 1] * d[:, :, 0]
        J[:, 3:] = z.transpose(0, 2, 1)
        if ch.any_prismatic:
            pri = ch.prismatic
            J[:, :3, pri] = z[:, pri].transpose(0, 2, 1)
            J[:, 3:, pri] = 0.0
        e = np.empty((L, 6))
        e[:, :3] = p - pt
        if self.need_rot:
            e[:, 3:] = log_so3(Tf[:, :3, :3] @ RtT)
        else:
            e[:, 3:] = 0.0
        R = self.Rrow
        if R is not None:
            e[:, :3] = e[:, :3] @ R.T
            e[:, 3:] = e[:, 3:] @ R.T
            J[:, :3] = R @ J[:, :3]
            J[:, 3:] = R @ J[:, 3:]
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
            er = np.sqrt(np.einsum("li,li->l", e[:, 3:], e[:, 3:])) if self.need_rot else np.zeros(L)
        if not self.unit_weights:
            r = r * self.wrow
            Jm = Jm * self.wrow[:, None]
        return r, Jm, ep, er

    # ------------------------------------------------------------------ one damped step per lane
    def _dls(self, J, e, lam):
        L, m, nv = J.shape
        if m <= nv:
            A = J @ J.transpose(0, 2, 1)
            A += lam[:, None, None] * np.eye(m)
            y = _solve(A, e)
            return np.einsum("lmn,lm->ln", J, y)
        A = J.transpose(0, 2, 1) @ J
        A += lam[:, None, None] * np.eye(nv)
        g = np.einsum("lmn,lm->ln", J, e)
        return _solve(A, g)

    def step(self, X, r, J, lam):
        """Damped least-squares step of every lane with joint limits (clamp, then recompute once with the
        clamped joints held); returns the new in-limit lane configurations."""
        dx = self._dls(J, -r, lam)
        Xn = X + dx
        clo, chi = self.clo, self.chi
        out = (Xn < clo) | (Xn > chi)
        rows = np.flatnonzero(out.any(axis=1))
        if rows.size:
            Xc = np.minimum(np.maximum(Xn[rows], clo), chi)
            o = out[rows]
            Jr = J[rows]
            held = np.where(o, Xc - X[rows], 0.0)
            e = -r[rows] - np.einsum("lmn,ln->lm", Jr, held)
            Jf = Jr * (~o)[:, None, :]
            dxf = self._dls(Jf, e, lam[rows])
            Xf = np.minimum(np.maximum(X[rows] + dxf, clo), chi)
            Xn[rows] = np.where(o, Xc, Xf)
        if self.any_wrap:
            lo, hi = self.lo, self.hi
            wr = self.wrap & ((Xn < lo) | (Xn > hi))
            if wr.any():
                Xn = np.where(wr, lo + np.mod(Xn - lo, 2 * math.pi), Xn)
        return Xn

    # ------------------------------------------------------------------ the loop
    def run(self, x0s, pts, RtTs, tol_position, tol_orientation, *, deadline=math.inf, max_iterations=10000,
            restarts=True, population=POPULATION, seed=0, mu0=1.0):
        """Solve targets ``pts`` (B, 3) / ``RtTs`` (B, 3, 3) from seeds ``x0s`` (B, nv). Returns per target
        ``(x (B, nv), success (B,), status (B,) str, iterations (B,), restarts (B,), ep (B,), er (B,))``."""
        B = pts.shape[0]
        nv = self.nv
        tp, to = tol_position, tol_orientation
        best_x = np.array(x0s, dtype=float)
        best_c = np.full(B, np.inf)
        best_ep = np.full(B, np.nan)
        best_er = np.full(B, np.nan)
        done = np.zeros(B, dtype=bool)
        status = np.full(B, "stalled", dtype=object)
        its = np.zeros(B, dtype=np.int64)
        loops = np.zeros(B, dtype=np.int64)         # engine iterations each target was active in
        nrest = np.zeros(B, dtype=np.int64)
        widened = np.zeros(B, dtype=bool)
        width = max(1, int(population)) if restarts else 1
        # reach bound: out of reach before any iteration
        # (one attempt from the seed, no restarts: the compromise stretched toward the target)
        far = np.zeros(B, dtype=bool)
        if self.bound_applies:
            dist = np.linalg.norm(pts - self.origin, axis=1)
            far = dist > self.reach + tp
        # lanes: target, configuration, evaluation state
        tid = np.flatnonzero(~done)
        X = best_x[tid].copy()
        L = len(tid)
        mu = np.full(L, mu0)
        cost = np.full(L, np.inf)
        r = np.zeros((L, self.m))
        J = np.zeros((L, self.m, nv))
        fresh = np.ones(L, dtype=bool)
        ait = np.zeros(L, dtype=np.int64)          # iterations in the lane's current attempt
        rej = np.zeros(L, dtype=np.int64)
        ref_c = np.full(L, np.inf)
        ref_it = np.zeros(L, dtype=np.int64)
        if restarts:
            self.restarts(seed, 1)
        cap = self.cap if restarts else max_iterations
        window, ratio = (STALL_WINDOW, STALL_RATIO) if restarts else (10, 1.0 - 1e-3)
        first = True
        while L:
            if not first and time.perf_counter() > deadline:
                status[tid[~done[tid]]] = "timeout"
                break
            first = False
            # trial points: a step from every evaluated lane, the start point of every fresh lane
            Xn = X.copy()
            ev = ~fresh
            if ev.any():
                idx = np.flatnonzero(ev)
                lam = mu[idx] * cost[idx] + 1e-12
                Xn[idx] = self.step(X[idx], r[idx], J[idx], lam)
            rn, Jn, epn, ern = self.evaluate(Xn, pts[tid], RtTs[tid])
            costn = np.einsum("li,li->l", rn, rn)
            its_add = np.bincount(tid, minlength=B)
            its += its_add
            loops += its_add > 0
            ok = costn < cost
            # accept / reject per lane
            X = np.where(ok[:, None], Xn, X)
            r = np.where(ok[:, None], rn, r)
            J = np.where(ok[:, None, None], Jn, J)
            cost = np.where(ok, costn, cost)
            mu = np.where(ok, np.maximum(mu / 3.0, 1e-9), np.minimum(mu * 10.0, 1e12))
            mu = np.where(fresh, mu0, mu)
            rej = np.where(ok, 0, rej + 1)
            fresh[:] = False
            ait += 1
            # best per target
            better = costn < best_c[tid]
            if better.any():
                # several lanes of one target: the smallest cost wins (np.minimum.at on the cost, then the
                # first lane with it)
                bi = np.flatnonzero(better)
                order = bi[np.lexsort((bi, costn[bi]))]
                t_seen = set()
                for k in order:
                    t = tid[k]
                    if t in t_seen:
                        continue
                    t_seen.add(t)
                    best_c[t] = costn[k]
                    best_x[t] = Xn[k]
                    best_ep[t] = epn[k]
                    best_er[t] = ern[k]
            conv = (epn <= tp) & (ern <= to)
            if conv.any():
                for k in np.flatnonzero(conv):        # lowest lane first
                    t = tid[k]
                    if not done[t]:
                        done[t] = True
                        status[t] = "converged"
                        best_x[t] = Xn[k]
                        best_ep[t], best_er[t] = epn[k], ern[k]
            over = its[tid] >= max_iterations
            if over.any():
                for t in np.unique(tid[over & ~done[tid]]):
                    done[t] = True
                    status[t] = "max_iterations"
            # stall detection
            chk = (ait - ref_it) >= window
            ref_c_prev = ref_c
            stalled = chk & ~(cost <= ref_c * ratio)
            ref_c = np.where(chk, cost, ref_c)
            ref_it = np.where(chk, ait, ref_it)
            stalled |= (rej > 8) | (ait >= cap)
            if far.any():
                # beyond reach: the one attempt runs while it still improves (1e-3 per window)
                fl = far[tid]
                slow = chk & ~(cost <= ref_c_prev * (1.0 - 1e-3))
                stalled = np.where(fl, slow | (rej > 8) | (ait >= 2 * cap), stalled)
            fl = stalled & far[tid]
            if fl.any():
                for t in np.unique(tid[fl]):
                    if not done[t]:
                        done[t] = True
                        status[t] = "out_of_reach"
            keep = ~done[tid]
            if not restarts:
                for t in np.unique(tid[stalled & keep]):
                    done[t] = True
                    status[t] = "stalled"
                keep = ~done[tid]
            if not keep.all():
                tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it, stalled = (
                    a[keep] for a in (tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it, stalled))
            if restarts and stalled.any():
                # a stalled lane restarts; a target whose first lane stalls widens to `width` lanes
                new_t = []
                for k in np.flatnonzero(stalled):
                    t = tid[k]
                    nrest[t] += 1
                    X[k] = self._table_row(seed, nrest[t])
                    fresh[k], ait[k], rej[k], ref_it[k] = True, 0, 0, 0
                    cost[k], ref_c[k], mu[k] = np.inf, np.inf, mu0
                    if not widened[t]:
                        widened[t] = True
                        new_t.extend([t] * (width - 1))
                if new_t:
                    nt = np.array(new_t, dtype=np.int64)
                    Xs = np.empty((len(nt), nv))
                    for j, t in enumerate(nt):
                        nrest[t] += 1
                        Xs[j] = self._table_row(seed, nrest[t])
                    k0 = len(tid)
                    tid = np.concatenate([tid, nt])
                    X = np.concatenate([X, Xs])
                    r = np.concatenate([r, np.zeros((len(nt), self.m))])
                    J = np.concatenate([J, np.zeros((len(nt), self.m, nv))])
                    cost = np.concatenate([cost, np.full(len(nt), np.inf)])
                    mu = np.concatenate([mu, np.full(len(nt), mu0)])
                    fresh = np.concatenate([fresh, np.ones(len(nt), dtype=bool)])
                    z = np.zeros(len(nt), dtype=np.int64)
                    ait, rej, ref_it = (np.concatenate([a, z]) for a in (ait, rej, ref_it))
                    ref_c = np.concatenate([ref_c, np.full(len(nt), np.inf)])
                    # keep lanes ordered by target (lowest lane = earliest seed), for determinism
                    order = np.argsort(tid, kind="stable")
                    if not np.array_equal(order, np.arange(len(tid))):
                        tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it = (
                            a[order] for a in (tid, X, r, J, cost, mu, fresh, ait, rej, ref_c, ref_it))
                    del k0
            L = len(tid)
        status[far & (status != "converged")] = "out_of_reach"
        success = status == "converged"
        self.last_loops = loops                      # statistics for benchmarks (not thread-safe)
        return best_x, success, status, its, nrest, best_ep, best_er

    def _table_row(self, seed, k):
        return self.restarts(seed, k)[k - 1]


def _solve(A, b):
    """Batched SPD solve ``A x = b`` ((L, k, k), (L, k)); singular systems fall back to least squares."""
    try:
        return np.linalg.solve(A, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.empty_like(b)
        for k in range(A.shape[0]):
            out[k] = np.linalg.lstsq(A[k], b[k], rcond=None)[0]
        return out


# ---------------------------------------------------------------------------------------------- cache
#: mechanism -> {(frame, limits, unknowns): _ChainConstants}; weak, so cached mechanisms can be collected
_CONSTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _ChainConstants:
    """What does not change between solves on one chain with given limits: the reach bound and the restart
    tables (one per seed; built once, outside any caller's budget, and read-only after)."""

    def __init__(self, m, ch, lo, hi):
        n = ch.n
        P = ch.Pm.reshape(n, 4, 4)
        reach = float(sum(np.linalg.norm(P[i, :3, 3]) for i in range(1, n)))
        reach += float(np.linalg.norm(ch.F[:3, 3]))
        if ch.any_prismatic:
            lo_s, hi_s = m.lower_limits[ch.coords], m.upper_limits[ch.coords]
            stroke = np.maximum(np.abs(lo_s), np.abs(hi_s))
            reach += float(np.sum(stroke[ch.prismatic]))        # inf for an unbounded slider: no bound
        self.origin = _ro(P[0, :3, 3])
        self.reach = reach
        self.lo = np.where(np.isfinite(lo), lo, -math.pi)
        self.hi = np.where(np.isfinite(hi), hi, math.pi)
        self._tables: dict = {}
        self._lock = threading.Lock()

    def table(self, seed, count: int) -> np.ndarray:
        """Restart configurations 1..count of the sequence of ``seed`` (:func:`~.problem.restart_sample`'s
        distribution: the central half of every range, every third draw over the whole range)."""
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
    (several constraints, a posture, a coupled joint on the chain, a target-dependent row frame)."""
    if len(P.tasks) != 1 or P.posture is not None or P.limit_checked.size:
        return None
    c = P.tasks[0]
    if type(c) not in (PoseConstraint, PositionConstraint, OrientationConstraint):
        return None
    if getattr(c, "mask_frame", None) == "target" and len(c.kept_axes) not in (0, 3) and \
            isinstance(c, PoseConstraint):
        pass
    K = _ChainKernel.build(P)
    if K is None:
        return None
    if c.mask_frame == "target" and not K.all_rows:
        return None            # rows turned into each target's axes: not one engine for all targets
    return LaneEngine(K)


class LMPopulationSolver:
    """``solve_ik(..., solver="lm")``: the lane engine on one target with a population of seeds (module
    docstring); problems it does not suit go to ``"dls"``. ``population``: lanes once the caller's seed
    stalled; ``mu0``: initial damping factor."""

    name = "lm"

    def __init__(self, population: int = POPULATION, mu0: float = 1.0):
        if isinstance(population, bool) or not isinstance(population, (int, np.integer)) or population < 1:
            raise InvalidConfiguration(f"population must be an integer >= 1, got {population!r}")
        self.population = int(population)
        self.mu0 = float(mu0)

    def solve(self, P: IKProblem, o: IKOptions) -> IKResult:
        E = chain_engine(P)
        if E is None or P.n == 0:
            return DLSSolver(mu0=self.mu0).solve(P, o)
        K = E.K
        seed = _seed_of(o.rng)
        if o.restarts:
            E.restarts(seed, 1)
        if time.perf_counter() - o.start > 0.5e-3:       # building the caches is not billed to the caller
            o.deadline += time.perf_counter() - o.start
        x, ok, st, its, nr, ep, er = E.run(K.x0[None, :], K.pt[None, :], K.RtT[None], o.tol_position,
                                           o.tol_orientation, deadline=o.deadline,
                                           max_iterations=o.max_iterations, restarts=o.restarts,
                                           population=self.population, seed=seed, mu0=self.mu0)
        return _result_of(P, K, o, x[0], st[0], int(its[0]), int(nr[0]), self.name)


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


def _result_of(P: IKProblem, K, o: IKOptions, xv, status: str, iterations: int, restarts: int, name: str):
    x = K.full_x(xv)
    if status == "converged":
        return P.result(x, True, "converged", o, iterations, restarts, name)
    if status == "out_of_reach":
        return P.result(x, False, "unreachable", o, 0, 0, name,
                        "the target lies beyond the chain's reach (sum of its link lengths)")
    if status in ("timeout", "max_iterations") and restarts == 0:
        reason = status                  # the budget ended the first attempt while it was still running
    else:
        reason = diagnose_failure(P, o, x)
    return P.result(x, False, reason, o, iterations, restarts, name)


register_solver("lm", LMPopulationSolver)
