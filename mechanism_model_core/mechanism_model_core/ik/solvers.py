"""The generic IK solvers: prioritized damped least squares (``"dls"``) and scipy's bounded least squares
(``"scipy"``). Both register themselves with :func:`mechanism_model_core.ik.register_solver`.

Damped least squares (MSim's solver; Siciliano & Slotine 1991, Baerlocher & Boulic 2004)
-------------------------------------------------------------------------------------------
Each iteration evaluates every constraint once (one forward pass) and computes a step ``dx`` level by level,
highest priority first::

    P = I (columns of joints held at a limit removed);  dx = 0
    for each level k:   (r_k, J_k) = weighted residual and Jacobian
        e   = -r_k - J_k dx                      what this level still asks for
        J~  = J_k P = U S V^T                    (SVD)
        dx += V diag(s / (s^2 + lambda_k)) U^T e  damped least squares in what the levels above left free
        P  -= V_r V_r^T                          remove the directions this level used (s above 1e-6 s_max)

so a lower level moves only in the null space of the levels above it. ``lambda_k = mu_k |r_k|^2`` (plus a
floor): damping grows with the error and vanishes at the solution, which restores Gauss-Newton's quadratic
convergence; near a singularity, directions whose singular value ``s`` falls below ``SING_EPS`` get extra
damping that grows to ``min(SING_LAMBDA, |e|^2)`` as ``s`` goes to zero, so the step stays bounded there
while a solution at the singularity itself (a target at full stretch) is still reached. ``mu_k`` adapts the step: a trial step is accepted only if it improves the levels
lexicographically (a satisfied level must stay satisfied; otherwise the highest level that changes must
decrease), and ``mu`` shrinks by 3 on success and grows by 10 on rejection (Levenberg-Marquardt).

Joint limits are an active set (Baerlocher's clamping loop): a joint whose step would cross a limit is set
onto it, its column is removed from ``P``, and the step of the others is recomputed with that motion
accounted for; every iterate (hence every returned solution) lies within limits. Locked joints and the
model's coupled joints are not unknowns at all (see :class:`~mechanism_model_core.ik.IKProblem`).
A posture is the last level; after convergence a few more iterations improve it within the null space.

When an attempt stalls (no lexicographic progress over 10 iterations, or repeated rejections), the solver
restarts from a random in-limit configuration while the time budget lasts, keeping the best result.

Fast path: a single pose/position/orientation constraint on one frame relative to the ground, with no
couplings or posture (the common "reach this pose" query), runs a lean loop over just that frame's chain
(preallocated arrays, one forward pass and a 6x6 solve per iteration); it follows the same rules.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..constraints import OrientationConstraint, PoseConstraint, PositionConstraint
from ..kinematics import forward_kinematics, frame_chain
from .chain_pass import chain_passes, unbound_pass
from .damped_step import limited_step
from .problem import (IKOptions, IKProblem, RestartingSolver, diagnose_failure,
                         restart_sample as _restart_sample)
from .registry import register_solver

__all__ = ["DLSSolver", "ScipySolver"]

_EPS_RANK = 1e-6
#: generic path: singular values below SING_EPS (m or rad per unit joint motion) get extra damping up to
#: min(SING_LAMBDA, |e|^2) (Nakamura & Hanafusa 1986, applied per singular direction)
SING_EPS = 1e-2
SING_LAMBDA = 1e-4
#: fast path: an attempt is stalled when its cost has not fallen below STALL_RATIO times its value
#: STALL_WINDOW iterations earlier, and it is given at most max(ATTEMPT_ITERATIONS, 2 n) iterations. Tuned on
#: the benchmark robots (benchmarks/bench_ik.py): a restart from a fresh seed beats a slow attempt. Without
#: restarts the single attempt runs up to max_iterations with a lenient stall test.
STALL_WINDOW = 4
STALL_RATIO = 0.6
ATTEMPT_ITERATIONS = 20
#: the same for the generic prioritized path
GENERIC_WINDOW = 5
GENERIC_RATIO = 0.6
GENERIC_ITERATIONS = 30
#: generic path's restarts (benchmarks/bench_ik_paths.py, CPU budget 50 ms, 300 targets, load 11-12): the first
#: NEAREST_STARTS start from the seed table's configurations nearest the top level's pose/position targets
#: (Panda pose over elbow: 77.3 -> 82.3 % success, median 16.7 -> 13.3 ms; Baxter's two hands: 97.0 -> 98.7 %,
#: p95 39 -> 21 ms); where no task has a table (a coupling on the chain), each restart starts from the best
#: of RESTART_CANDIDATES draws (coupled arm: median 3.0 -> 2.2 ms, p95 20 -> 9 ms; on the Panda it did not help)
NEAREST_STARTS = 8
RESTART_CANDIDATES = 4
#: generic path: when the highest level is met but a lower one is not (conflicting levels), stop restarting
#: after this many restarts that did not improve the best compromise. Measured on a Panda (position at level
#: 0, orientation at level 1, a posture last): with 3, 9% of targets whose full pose is reachable ended as
#: "conflicting", and conflicting compromises were up to 0.3 rad worse than a local optimum (SLSQP from the
#: result); with 10, 2% and 0.009 rad, at a median 9 ms either way
GENERIC_PATIENCE = 10
#: generic path: after this many rejected steps in a row, a rejected step is retried with the levels down to
#: the highest unmet one alone (see DLSSolver._attempt)
FALLBACK_REJECTS = 1


def _better(cn, co, sn, so) -> bool:
    """Lexicographic comparison of level costs (new vs old); satisfied-in-both levels count as equal."""
    for k in range(len(cn)):
        if sn[k] and so[k]:
            continue
        if cn[k] < co[k] * (1.0 - 1e-12):
            return True
        if cn[k] > co[k] * (1.0 + 1e-12) + 1e-300:
            return False
    return False


def _progressed(old, new, sat, ratio=1.0 - 1e-3) -> bool:
    """True when the highest unsatisfied level that changed fell below ``ratio`` times its old cost."""
    for k in range(len(new)):
        if sat[k]:
            continue
        if new[k] < old[k] * ratio:
            return True
        if new[k] > old[k] * (1.0 + 1e-3):
            return False
    return False


class DLSSolver(RestartingSolver):
    """Prioritized damped least squares with adaptive damping and step, joint limits, restarts.

    ``mu0``: initial damping factor; ``attempt_iterations``: iterations before an attempt is declared
    stalled regardless of progress (default ``max(40, 4 n)``); ``posture_iterations``: extra iterations
    spent on the posture after convergence; ``fast``: use the single-chain fast path when it applies.
    Restarts, budgets and the failure reason come from :class:`~.ik_problem.RestartingSolver`; this class
    implements the attempts (the generic prioritized one and the single-chain kernel's).
    """

    name = "dls"
    #: ``(problem, count) -> [(var_x, X (count, nv)), ...]``: for the top level's chain tasks, the seed
    #: table's configurations whose frame pose is nearest each task's target (set by :mod:`.batch`, which
    #: owns the table; None: restarts are random draws only)
    start_table = None

    def __init__(self, mu0: float = 1.0, attempt_iterations: int | None = None, posture_iterations: int = 20,
                 fast: bool = True, restart_candidates: int = RESTART_CANDIDATES,
                 nearest_starts: int = NEAREST_STARTS):
        self.restart_candidates = int(restart_candidates)
        self.nearest_starts = int(nearest_starts)
        self.mu0 = float(mu0)
        self.attempt_iterations = attempt_iterations
        self.posture_iterations = int(posture_iterations)
        self.fast = fast

    # ------------------------------------------------------------------ hooks of the restart loop
    def start(self, P: IKProblem, o: IKOptions):
        kernel = _ChainKernel.build(P) if self.fast else None
        if kernel is not None:
            return kernel, kernel.x0.copy()
        return None, P.x_of(P.template)

    def attempt_cap(self, K, P: IKProblem, o: IKOptions) -> int:
        if not o.restarts:
            return o.max_iterations
        if K is not None:
            return self.attempt_iterations or max(ATTEMPT_ITERATIONS, 2 * K.nv)
        return self.attempt_iterations or max(GENERIC_ITERATIONS, 2 * P.n)

    def attempt(self, K, P: IKProblem, o: IKOptions, x, cap: int):
        if K is not None:
            window, ratio = (STALL_WINDOW, STALL_RATIO) if o.restarts else (10, 1.0 - 1e-3)
            status, xv, its, cost = K.attempt(x, o, cap, self.mu0, window, ratio)
            return status, xv, its, cost
        status, x_end, its = self._attempt(P, o, x, cap)
        return status, x_end, its, self._key(P, o, x_end)

    def full_x(self, K, x):
        return x if K is None else K.full_x(x)

    def restart_point(self, K, P: IKProblem, o: IKOptions, k: int):
        if K is not None:
            return K.random(o.rng, k)
        starts = ()
        if self.nearest_starts > 0 and DLSSolver.start_table is not None:
            starts = getattr(P, "_dls_starts", None)
            if starts is None:          # first restart: the top level's chain tasks' nearest table entries
                t0 = time.perf_counter()
                starts = P._dls_starts = DLSSolver.start_table(P, self.nearest_starts, o)
                if time.perf_counter() - t0 > 0.5e-3:     # the table was built: not billed to the caller
                    o.deadline += time.perf_counter() - t0
            if starts and k <= starts[0][1].shape[0]:
                x = P.random_x(o.rng, k)
                for var_x, X in starts:
                    x[var_x] = X[k - 1]
                return x
        if self.restart_candidates <= 1 or starts:      # past the table: plain draws (measured no better)
            return P.random_x(o.rng, k)
        # several restart draws, the attempt starts from the one whose residuals are smallest (the key:
        # coupled-limit violation, unmet levels, then the levels' costs in priority order)
        best_key, best_x = None, None
        for _ in range(self.restart_candidates):
            x = P.random_x(o.rng, k)
            key = self._key(P, o, x)
            if best_key is None or key < best_key:
                best_key, best_x = key, x
        return best_x

    def give_up(self, K, best_key, idle: int) -> bool:
        # generic path: the top level holds and the lower ones conflict with it
        return K is None and bool(best_key[2]) and best_key[2][0] == 0.0 and idle >= GENERIC_PATIENCE

    # ------------------------------------------------------------------ generic attempt
    def _key(self, P, o, x):
        q, raw, levels, post = P.evaluate(x)
        sat = P.satisfied(raw, o)
        costs = [0.0 if s else 0.5 * float(r @ r) for s, (r, _) in zip(sat, levels)]
        return (P.violation(q), sum(not s for s in sat), tuple(costs))

    def _costs(self, levels, post):
        c = [0.5 * float(r @ r) for r, _ in levels]
        if post is not None:
            c.append(0.5 * float(post[0] @ post[0]))
        return c

    def _attempt(self, P: IKProblem, o: IKOptions, x, cap):
        clo = np.where(P.wrap, -np.inf, P.lower)
        chi = np.where(P.wrap, np.inf, P.upper)
        q, raw, levels, post = P.evaluate(x)
        viol = P.violation(q)
        sat = P.satisfied(raw, o)
        stack = levels + ([post] if post is not None else [])
        costs = self._costs(levels, post)
        sat_ext = sat + [False] * (post is not None)
        mu = [self.mu0] * len(stack)
        # a posture without couplings has J = sqrt(w) * (selection of the unknowns): its damped step in the
        # null space left by the levels above is a scaled projection, no SVD needed
        post_fast = (math.sqrt(P.posture.weight), P.free) if post is not None and not P.has_couplings else None
        rejects, refine = 0, 0
        ref_costs, ref_it = list(costs), 0
        for it in range(max(cap, 1)):
            if all(sat):
                if post is None or refine >= self.posture_iterations:
                    return "converged", x, it
                refine += 1
            if it and time.perf_counter() > o.deadline:
                return "timeout", x, it
            lams = [m * 2.0 * c + 1e-12 for m, c in zip(mu, costs)]
            dx = _clamped_step(stack, lams, x, clo, chi, post_fast)
            xn = P.wrap_into_limits(np.clip(x + dx, clo, chi))
            qn, rawn, levelsn, postn = P.evaluate(xn)
            satn = P.satisfied(rawn, o)
            costsn = self._costs(levelsn, postn)
            satn_ext = satn + [False] * (post is not None)
            violn = P.violation(qn)             # coupled joints with checked limits: never move further out
            ok = violn <= viol and _better(costsn, costs, satn_ext, sat_ext)
            top = next((k for k, s in enumerate(sat) if not s), len(levels))
            if not ok and rejects >= FALLBACK_REJECTS and top < len(levels) - 1:
                # the levels below the highest unmet one moved in its null space, which holds to first order
                # only: a large null-space step can raise that level's error (second order) and, with one
                # damping factor for all levels, keep the level from converging at all. Retry with the
                # levels down to that one alone, so that lower levels never slow the higher ones down
                dx = _clamped_step(stack[:top + 1], lams[:top + 1], x, clo, chi)
                xn = P.wrap_into_limits(np.clip(x + dx, clo, chi))
                qn, rawn, levelsn, postn = P.evaluate(xn)
                satn = P.satisfied(rawn, o)
                costsn = self._costs(levelsn, postn)
                satn_ext = satn + [False] * (post is not None)
                violn = P.violation(qn)
                ok = violn <= viol and _better(costsn, costs, satn_ext, sat_ext)
            if ok:
                x, raw, levels, post, sat, costs, sat_ext = xn, rawn, levelsn, postn, satn, costsn, satn_ext
                viol = violn
                stack = levels + ([post] if post is not None else [])
                mu = [max(m / 3.0, 1e-9) for m in mu]
                rejects = 0
            else:
                mu = [min(m * 10.0, 1e12) for m in mu]
                rejects += 1
                if refine:
                    return "converged", x, it + 1
                if rejects > 10:
                    return "stalled", x, it + 1
            if it - ref_it >= GENERIC_WINDOW:
                if not all(sat) and not _progressed(ref_costs, costs, sat_ext, GENERIC_RATIO):
                    return "stalled", x, it + 1
                ref_costs, ref_it = list(costs), it
        return ("converged" if all(sat) else "stalled"), x, cap

    def _diagnose(self, P: IKProblem, o: IKOptions, x) -> str:
        return diagnose_failure(P, o, x)


def _clamped_step(stack, lams, x, lo, hi, post_fast=None):
    n = x.shape[0]
    fixed = np.zeros(n, dtype=bool)
    dx0 = np.zeros(n)
    dx = dx0
    for _ in range(4):
        dx = _prioritized_step(stack, lams, ~fixed, dx0, post_fast)
        xn = x + dx
        over = (xn > hi) & ~fixed
        under = (xn < lo) & ~fixed
        if not (over.any() or under.any()):
            return dx
        fixed |= over | under
        dx0 = dx0.copy()
        dx0[over] = (hi - x)[over]
        dx0[under] = (lo - x)[under]
    return dx


def _prioritized_step(stack, lams, free, dx0, post_fast=None):
    dx = dx0.copy()
    Pm = np.diag(free.astype(float))
    last = len(stack) - 1
    for k, ((r, J), lam) in enumerate(zip(stack, lams)):
        if r.shape[0] == 0:
            continue
        if k == last and post_fast is not None:
            c, rows = post_fast
            e = (-r - J @ dx)[rows]
            dx += (c / (c * c + lam)) * (Pm @ e)
            break
        Jp = J @ Pm
        e = -r - J @ dx
        U, s, Vt = np.linalg.svd(Jp, full_matrices=False)
        if s.shape[0] == 0 or s[0] <= 1e-12:
            continue
        # adaptive damping near singularities: directions whose singular value falls below SING_EPS get
        # extra damping growing as the value goes to zero (selective damping), capped by what the level still
        # asks (|e|^2), so that it vanishes at a solution and Gauss-Newton still converges onto a singular one
        # (a target at full stretch)
        extra = np.where(s < SING_EPS, min(SING_LAMBDA, float(e @ e)) * (1.0 - (s / SING_EPS) ** 2), 0.0)
        f = s / (s * s + lam + extra)
        f[s <= _EPS_RANK * s[0]] = 0.0
        dx += Vt.T @ (f * (U.T @ e))
        Vr = Vt[s > _EPS_RANK * s[0]]
        Pm = Pm - Vr.T @ Vr
    return dx


# ---------------------------------------------------------------------------------------------- fast kernel
def chain_residual(K, e, J, ep, er, Rrow=None):
    """The residual of one chain task at one configuration, shared by the single-chain kernel
    (:class:`_ChainKernel`) and the lane engine's one-lane pass (:class:`~.batch.LaneEngine`), from the chain
    pass's full-pose error (:meth:`~.chain_pass.ChainPass.pose_residual`): ``e`` (6,) the position error (m)
    and ``log3(R R_t^T)`` (rad) in ground axes, ``J`` (6, nv) the ground Jacobian of the unknowns (both turned
    in place when the rows are turned), ``ep``, ``er`` their norms. Returns the weighted residual (m,) -- the
    kept rows, in ground axes or turned by ``K.Rrow`` --, the weighted Jacobian (m, nv), and the unweighted
    position and orientation error norms (of the kept rows when masked; 0 for a kind without them). ``K`` holds
    the task's constants (rows, weights, masks: see :class:`_ChainKernel`). ``Rrow``: this target's row turn
    instead of ``K.Rrow`` (an engine whose rows turn with each target, :func:`~.batch.target_rows_engine`)."""
    R = K.Rrow if Rrow is None else Rrow
    if R is not None:
        e[:3] = R.dot(e[:3])
        e[3:] = R.dot(e[3:])
        J[:3] = R.dot(J[:3])
        J[3:] = R.dot(J[3:])
    rs = K.row_sel
    r, Jm = (e, J) if rs is None else (e[rs], J[rs])
    if K.masked:
        rp, rr = r[K.pos_rows], r[K.rot_rows]
        ep = math.sqrt(float(rp @ rp))
        er = math.sqrt(float(rr @ rr))
    else:
        if not K.need_pos:
            ep = 0.0
        if not K.need_rot:
            er = 0.0
    if K.unit_weights:
        return r, Jm, ep, er
    return r * K.wrow, Jm * K.wrow[:, None], ep, er


def row_selector(rows):
    """What picks a task's kept rows out of the six: None for all six, a slice for a contiguous run (a view,
    cheaper than the index array's gather), else the index array."""
    rows = np.asarray(rows)
    if len(rows) == 6:
        return None
    if len(rows) and np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows))):
        return slice(int(rows[0]), int(rows[0]) + len(rows))
    return rows


def unit_unmasked(c) -> bool:
    """Whether task ``c`` keeps every row of its kind at unit weight (no mask, a weight of exactly 1): the
    shape whose constants and engines depend on its frame and kind alone."""
    w = c.weight
    return c.mask is None and (type(w) is float or type(w) is int) and w == 1.0


class _NoChain(Exception):
    pass


_NO_CHAIN = "no chain"          # _chain_constants: the task has no chain a _ChainKernel takes
_CHAIN_TASKS = (PoseConstraint, PositionConstraint, OrientationConstraint)


def chain_task(P: IKProblem):
    """``P``'s one task when it is a pose, position or orientation constraint (of those types exactly) with no
    posture beside it and no coupled joint whose limits are checked -- a problem of one frame's chain, the kind
    the DLS kernel (:class:`_ChainKernel`) and the lane engine (:mod:`.batch`) take; else None."""
    if len(P.tasks) != 1 or P.posture is not None or P.limit_checked.size:
        return None
    c = P.tasks[0]
    return c if type(c) in _CHAIN_TASKS else None


def _chain_constants(P: IKProblem, c) -> tuple:
    """What a :class:`_ChainKernel` takes from the task's shape (frame, kind, rows, weights) and the problem's
    structure (unknowns, bounds) alone, kept in ``P.structure.solver_constants``; ``_NO_CHAIN`` for a frame
    on the ground, a coupled joint on the chain, or no free joint on it."""
    m = P.mechanism
    chain = frame_chain(m, c.frame)
    n = chain.n
    coords = chain.coords.tolist()
    if n == 0 or any(k in P.dependent for k in coords):
        return _NO_CHAIN
    if P.all_free:
        var_seg = np.arange(n)
        var_x = np.array(coords, dtype=int)
    else:
        pos = {int(i): k for k, i in enumerate(P.free)}
        var_seg = np.array([i for i in range(n) if coords[i] in pos], dtype=int)
        var_x = np.array([pos[coords[i]] for i in var_seg], dtype=int)
    nv = len(var_seg)
    if nv == 0:
        return _NO_CHAIN
    lo = P.lower[var_x]
    hi = P.upper[var_x]
    # revolute joints whose range spans a full turn: wrap instead of clamping (same pose, no blocking)
    wrap = P.wrap[var_x]
    clo = np.where(wrap, -np.inf, lo)
    chi = np.where(wrap, np.inf, hi)
    # rows kept and row weights
    rows = np.asarray(c.kept_axes + 3 if isinstance(c, OrientationConstraint) else c.kept_axes, dtype=int)
    wrow = c.row_weights()
    pos_rows = rows < 3
    rot_rows = ~pos_rows
    all_rows = len(rows) == 6
    for a in (var_seg, var_x, lo, hi, wrap, clo, chi, rows, wrow, pos_rows, rot_rows):
        a.flags.writeable = False                 # shared by the kernels of every problem of this shape
    return (chain, n, coords, var_seg, var_x, nv, nv == n, lo, hi, wrap, bool(wrap.any()), clo, chi, rows, wrow,
            pos_rows, rot_rows, bool(rot_rows.any()), bool(pos_rows.any()), all_rows,
            not all_rows and not (rows.tolist() in ([0, 1, 2], [3, 4, 5])), bool(np.all(wrow == 1.0)), len(rows),
            row_selector(rows))


class _ChainKernel:
    """Lean LM loop for one Cartesian constraint on one chain (see the module docstring)."""

    @classmethod
    def build(cls, P: IKProblem):
        c = chain_task(P)
        if c is None or c.frame == P.mechanism.ground:
            return None
        try:
            return cls(P, c)
        except _NoChain:
            return None

    def __init__(self, P: IKProblem, c):
        m = P.mechanism
        # the task's constants on this problem's structure (unknowns, bounds), computed once per task shape
        shape = (c.frame, type(c), None if unit_unmasked(c)
                 else (tuple(np.asarray(c.kept_axes).tolist()), c.row_weights().tobytes()))
        consts = P.structure.solver_constants
        k = consts.get(shape)
        if k is None:
            k = consts[shape] = _chain_constants(P, c)
        if k is _NO_CHAIN:
            raise _NoChain                      # a coupled joint on the chain, no joint free: the generic path
        (self.chain, self.n, coords, self.var_seg, self.var_x, self.nv, self.all_vars, self.lo, self.hi,
         self.wrap, self.any_wrap, self.clo, self.chi, self.rows, self.wrow, self.pos_rows, self.rot_rows,
         self.need_rot, self.need_pos, self.all_rows, self.masked, self.unit_weights, self.m, self.row_sel) = k
        # a reference frame whose pose the unknowns cannot move (its chain is locked or fixed): the target
        # is constant in the ground frame, and the residual rows are turned into the reference's axes
        T_wr = None
        if c.relative_to not in (None, m.ground):
            if not P.holds(c.relative_to):
                raise _NoChain
            T_wr = forward_kinematics(m, P.template).pose(c.relative_to)
        self.P = P
        self.T_wr = T_wr                  # the reference frame's constant ground pose (None: the ground)
        self.theta = np.array(P.template[coords], dtype=float)
        # the chain's one-configuration pass (its constants shared: chain_pass.unbound_pass), bound to the held
        # values on the first evaluation
        self._pass = None
        self.x_full0 = P.x_of(P.template)
        self.x0 = self.x_full0[self.var_x].copy()
        # the target
        Tt = c.target if isinstance(c, PoseConstraint) else c.target_pose()
        if T_wr is not None:
            Tt = T_wr @ Tt                                       # the target in the ground frame
        self.Rrow = None                                         # rows in ground axes unless turned
        if c.mask_frame == "target":
            self.Rrow = np.array(Tt[:3, :3].T)
        elif T_wr is not None:
            self.Rrow = np.array(T_wr[:3, :3].T)
        self.pt = np.array(Tt[:3, 3])
        self.RtT = np.array(Tt[:3, :3].T)

    def full_x(self, xv):
        x = self.x_full0.copy()
        x[self.var_x] = xv
        return x

    def random(self, rng, k=0):
        return _restart_sample(rng, self.lo, self.hi, k)

    def evaluate(self, xv, tp=-1.0, to=-1.0):
        """Weighted residual (m,), weighted Jacobian (m, nv) and the unweighted (pos, rot) error norms: the
        chain's pass (:class:`~.chain_pass.ChainPass`) and, but for a full pose with unit weights in ground
        axes (the pass's own residual, whose Jacobian is None when the errors are within ``tp``, ``to``),
        :func:`chain_residual`."""
        cp = self._pass
        if cp is None:
            cp = self._pass = self._bound_pass()
        if self.all_rows and self.unit_weights and self.Rrow is None:
            return cp.pose_residual(xv, self.pt, self.RtT, tp, to)
        return chain_residual(self, *cp.pose_residual(xv, self.pt, self.RtT))

    def _bound_pass(self):
        P = self.P
        return unbound_pass(chain_passes(P.mechanism), P.tasks[0].frame, self.chain, self.var_seg).held(self.theta)

    def attempt(self, xv, o: IKOptions, cap, mu0, window=None, ratio=None):
        window = STALL_WINDOW if window is None else window
        ratio = STALL_RATIO if ratio is None else ratio
        tp, to = o.tol_position, o.tol_orientation
        r, J, ep, er = self.evaluate(xv)
        cost = float(r @ r)
        mu = mu0
        rejects = 0
        ref_cost, ref_it = cost, 0
        for it in range(cap):
            if ep <= tp and er <= to:
                return "converged", xv, it, 0.0
            if it and time.perf_counter() > o.deadline:
                return "timeout", xv, it, cost
            xn = limited_step(self, xv, r, J, mu * cost + 1e-12)
            rn, Jn, epn, ern = self.evaluate(xn, tp, to)       # (converged: no Jacobian, none needed)
            costn = float(rn @ rn)
            if costn < cost:
                xv, r, J, ep, er, cost = xn, rn, Jn, epn, ern, costn
                mu = max(mu / 3.0, 1e-9)
                rejects = 0
            else:
                mu = min(mu * 10.0, 1e12)
                rejects += 1
                if rejects > 8:
                    return "stalled", xv, it + 1, cost
            if it - ref_it >= window:
                if cost > ref_cost * ratio:
                    return "stalled", xv, it + 1, cost
                ref_cost, ref_it = cost, it
        if ep <= tp and er <= to:
            return "converged", xv, cap, 0.0
        return "stalled", xv, cap, cost


# ---------------------------------------------------------------------------------------------- scipy
class ScipySolver(RestartingSolver):
    """:func:`scipy.optimize.least_squares` (trust-region reflective, bounded by the joint limits) on all
    levels at once, level k weighted ``level_ratio ** -k`` (priorities are approximate), with random
    restarts while the time budget lasts (the loop of :class:`~.ik_problem.RestartingSolver`; one
    ``least_squares`` run is one attempt)."""

    name = "scipy"

    def __init__(self, level_ratio: float = 1e3, method: str = "trf"):
        from scipy.optimize import least_squares   # here, not in solve: the first import is not billed

        self._least_squares = least_squares
        self.level_ratio = float(level_ratio)
        self.method = method

    def start(self, P: IKProblem, o: IKOptions):
        x = P.x_of(P.template)
        L = len(P.levels)
        scales = [self.level_ratio ** (-(k)) for k in range(L)]
        cache = {}

        def ev(x):
            key = x.tobytes()
            hit = cache.get(key)
            if hit is None:
                cache.clear()
                _, raw, levels, post = P.evaluate(x)
                rs = [s * r for s, (r, _) in zip(scales, levels)]
                Js = [s * J for s, (_, J) in zip(scales, levels)]
                if post is not None:
                    rs.append(post[0] * self.level_ratio ** (-L))
                    Js.append(post[1] * self.level_ratio ** (-L))
                hit = (np.concatenate(rs), np.concatenate(Js, axis=0), raw)
                cache[key] = hit
            return hit

        state = {"ev": ev, "x0": np.clip(x, P.lower, P.upper), "first": True,
                 "lo": np.where(np.isfinite(P.lower), P.lower, -np.inf),
                 "hi": np.where(np.isfinite(P.upper), P.upper, np.inf)}
        return state, x

    def attempt(self, st, P: IKProblem, o: IKOptions, x, cap: int):
        ev, lo, hi = st["ev"], st["lo"], st["hi"]
        # least_squares has no time limit: the residual function ends the run at the deadline (after at
        # least one evaluation), and the best point it evaluated is kept
        seen = {"best": None, "n": 0}

        def fun(x):
            r = ev(x)[0]
            seen["n"] += 1
            c = float(r @ r)
            if seen["best"] is None or c < seen["best"][0]:
                seen["best"] = (c, np.array(x))
            if time.perf_counter() > o.deadline:
                raise _Deadline
            return r

        status = "stalled"
        try:
            res = self._least_squares(fun, np.clip(x, lo, hi), jac=lambda x: ev(x)[1], bounds=(lo, hi),
                                      method=self.method, xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                      max_nfev=min(200, max(cap, 1)))
            xr, nfev = res.x, int(res.nfev)
        except _Deadline:
            status = "timeout"
            xr, nfev = seen["best"][1], seen["n"]
        xs = np.clip(xr, P.lower, P.upper)
        r, _, raw = ev(xs)
        sat = P.satisfied(raw, o)
        viol = P.violation(P.expand(xs))
        key = (viol, sum(not s for s in sat), 0.5 * float(r @ r))
        first, st["first"] = st["first"], False
        if viol > 0.0 and first and P.violation(P.expand(st["x0"])) == 0.0:
            # least_squares does not see the limits of non-linearly coupled joints: the in-limit start
            # stays a candidate (the DLS solver keeps them by construction)
            r0 = ev(st["x0"])
            key0 = (0.0, sum(not s for s in P.satisfied(r0[2], o)), 0.5 * float(r0[0] @ r0[0]))
            if key0 < key:
                key, xs = key0, st["x0"]
                sat, viol = P.satisfied(r0[2], o), 0.0
        if all(sat) and viol == 0.0:
            status = "converged"
        return status, xs, nfev, key

    def reason(self, st, P: IKProblem, o: IKOptions, x, status: str, iterations: int, restarts: int) -> str:
        if time.perf_counter() >= o.deadline and restarts == 0:
            return "timeout"
        return diagnose_failure(P, o, x)


class _Deadline(Exception):
    """Raised inside scipy's least_squares to end a run at the time budget."""


register_solver("dls", DLSSolver)
register_solver("scipy", ScipySolver)
