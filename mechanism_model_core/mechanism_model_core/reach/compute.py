"""The work of a reachability map: one chunk of voxels at a time, on any worker.

A :class:`ReachContext` holds everything a worker needs and is shipped to it once (the process pool's
initializer, Dask's ``scatter(broadcast=True)``): the chain (a :class:`~mechanism_model_core.model.Mechanism`
whose ground is the chain's base frame), the tool frame, the sample orientations, the IK settings and the
*seed map*: ``n_seeds`` configurations drawn uniformly within the joint limits (seeded) with their tool
positions and approach axes from one batch forward-kinematics pass. A target's IK starts from the seed whose
tool pose is nearest (position in voxels plus approach angle in radians among the 32 nearest positions), so
most reachable samples converge in a few iterations; :func:`compute_chunk` says how the flood search keeps
unreachable samples from spending whole budgets.

Every sample's solve is deterministic: bounded by an iteration budget (restarts included; the time budget is
only a safety net), its restart generator seeded from ``(seed, voxel, sample)``. The map is therefore the same
whatever the number of workers, the executor or the machine's load (and, searched exhaustively, the
chunking).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from ..constraints import PointAtConstraint, PoseConstraint, PositionConstraint
from ..ik import solve_ik, solve_ik_batch
from ..kinematics import forward_kinematics, ground_jacobian
from ..model import Mechanism
from .grid import VoxelGrid
from .sampling import AXES, align_axis, sample_neighbours

__all__ = ["ReachContext", "compute_chunk", "IKSettings", "limit_margin", "manipulability"]

#: safety time budget (s) of one sample's solve; the verdict is decided by ``max_iterations``
SAFETY_TIMEOUT = 60.0
_NEIGHBOURS = 32
#: neighbours of a sample among the voxel's samples (the flood's graph)
SAMPLE_NEIGHBOURS = 6
#: targets per batch IK call: a chunk's samples in blocks of this size (one call for all the chunk's
#: directions; much larger batches run slower per lane-iteration, their arrays out of the CPU's caches: Panda
#: 5 cm chunk, 1024 against unlimited 1.2-1.3x less CPU, BENCHMARKS.md)
BLOCK = 1024


@dataclass(frozen=True)
class IKSettings:
    """Per-sample IK settings: tolerances (m, rad), iteration budget (restarts included), solver, and
    ``self_collision`` (``avoid_collisions`` of :func:`~mechanism_model_core.ik.solve_ik`; needs coal).

    ``solver="batch"`` (default) solves a chunk's samples together with
    :func:`~mechanism_model_core.ik.solve_ik_batch`; any other name (``"auto"``, ``"dls"``, ...) solves them one by
    one with :func:`~mechanism_model_core.ik.solve_ik` and that solver (also used for ``self_collision``, which
    the batch solver does not check). The batch solver counts iterations over all the seeds it runs for a
    target (its population), so its budget is several times a single solve's for the same search.

    ``search``: ``"flood"`` (default; :func:`compute_chunk`) or ``"exhaustive"`` (every sample gets the full
    budget from its FK seed); ``probe_iterations``: the flood's first, cheap attempt per sample;
    ``flood_iterations``: the budget of a sample seeded from a reached neighbour."""

    tol_position: float = 1e-4
    tol_orientation: float = 1e-3
    max_iterations: int = 1000
    solver: str = "batch"
    self_collision: bool = False
    search: str = "flood"
    probe_iterations: int = 30
    flood_iterations: int = 200


@dataclass
class ReachContext:
    """What every worker holds (see the module docstring). ``rotations`` (S, 3, 3): the sample orientations
    in the base frame (mode ``"pose"``); ``roll_free``: only the tool's approach ``axis`` is asked along the
    sample's direction (a position and a pointing constraint: exact at the solution, whatever the roll)."""

    chain: Mechanism
    tool: str
    grid: VoxelGrid
    mode: str
    rotations: np.ndarray
    roll_free: bool
    axis: str
    ik: IKSettings
    seed: int
    seed_q: np.ndarray
    seed_p: np.ndarray
    seed_a: np.ndarray
    _tree: object = field(default=None, repr=False, compare=False)

    def __getstate__(self):
        d = dict(self.__dict__)
        d["_tree"] = None
        d.pop("_nbrs", None)
        return d

    @property
    def neighbours(self) -> np.ndarray:
        """(S, k) each sample's nearest other samples of a voxel (:func:`~.sampling.sample_neighbours`)."""
        if self.__dict__.get("_nbrs") is None:
            self.__dict__["_nbrs"] = sample_neighbours(self.rotations, AXES[self.axis], self.roll_free,
                                                       SAMPLE_NEIGHBOURS)
        return self.__dict__["_nbrs"]

    @property
    def samples_per_voxel(self) -> int:
        return 1 if self.mode == "position" else len(self.rotations)

    def tree(self):
        if self._tree is None:
            from scipy.spatial import cKDTree

            self._tree = cKDTree(self.seed_p)
        return self._tree


def seed_map(chain: Mechanism, tool: str, axis: str, n: int, seed: int):
    """``(Q, P, A)``: ``n`` configurations uniform within the limits (continuous joints over one turn), the
    tool positions (n, 3) and approach axes (n, 3) in the base frame (one batch FK pass)."""
    lo = np.array(chain.lower_limits, dtype=float)
    hi = np.array(chain.upper_limits, dtype=float)
    lo = np.where(np.isfinite(lo), lo, -math.pi)
    hi = np.where(np.isfinite(hi), hi, math.pi)
    rng = np.random.default_rng([int(seed), 0x5EED])
    Q = rng.uniform(lo, hi, (int(n), chain.nq))
    if chain.couplings:
        Q = np.array([chain.apply_couplings(q) for q in Q])
    T = forward_kinematics(chain, Q).pose(tool)
    A = T[:, :3, :3] @ np.array(AXES[axis], dtype=float)
    return Q, np.ascontiguousarray(T[:, :3, 3]), A


def manipulability(J: np.ndarray) -> np.ndarray:
    """Yoshikawa's measure, the product of the singular values of each Jacobian (B, m, n) (for n < m it is
    ``sqrt(det(J^T J))``)."""
    return np.prod(np.linalg.svd(J, compute_uv=False), axis=-1)


def limit_margin(Q: np.ndarray, lower, upper) -> np.ndarray:
    """Smallest distance to a joint limit as a share of the joint's range (0 at a limit, 0.5 mid-range);
    joints without finite limits count 0.5."""
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    finite = np.isfinite(lo) & np.isfinite(hi) & (hi > lo)
    if not np.any(finite):
        return np.full(len(Q), 0.5)
    span = (hi - lo)[finite]
    d = np.minimum(Q[:, finite] - lo[finite], hi[finite] - Q[:, finite]) / span
    return np.clip(np.min(d, axis=1), 0.0, 0.5)


def _sample_seed(ctx: ReachContext, voxel: int, sample: int) -> int:
    return int((ctx.seed * 1_000_003 + voxel * 7919 + sample) % (2 ** 63))


def _seed_index(ctx: ReachContext, p: np.ndarray, directions: np.ndarray | None) -> np.ndarray:
    """Index of the seed configuration for each target (positions (B, 3), approach directions (B, 3) or None)."""
    k = min(_NEIGHBOURS, len(ctx.seed_p))
    dist, idx = ctx.tree().query(p, k=k)
    dist, idx = dist.reshape(len(p), k), idx.reshape(len(p), k)
    cost = dist / ctx.grid.resolution
    if directions is not None:
        cosang = np.einsum("bkj,bj->bk", ctx.seed_a[idx], directions)
        cost = cost + np.arccos(np.clip(cosang, -1.0, 1.0))
    return idx[np.arange(len(p)), np.argmin(cost, axis=1)]


def _solve_batch(ctx: ReachContext, positions: np.ndarray, rotations: np.ndarray | None, seeds: np.ndarray,
                 rng_seeds, samples: np.ndarray | None = None, probe: bool = False, second_roll: bool = True,
                 budget: int | None = None) -> tuple:
    """IK for B targets of the tool in the base frame (positions (B, 3); rotations (B, 3, 3) or None for
    position targets), each from its seed (B, nq). Returns ``(success (B,), Q (B, nq), iterations (B,))``.

    With the batch solver (:func:`~mechanism_model_core.ik.solve_ik_batch`, in blocks of :data:`BLOCK`
    targets), a roll-free target (only the approach axis along the sample's direction) is a pose target with
    the rotation about the target's own approach axis masked out (``mask_frame="target"``: the lane engine
    turns each lane's rows into its target's axes, so targets of every direction share one call). It is
    solved at the given roll and, where that fails, at the roll half a turn away: the masked orientation
    residual is singular for a roll error of half a turn, so one of the two targets is always within a quarter
    turn of any feasible roll.

    ``probe``: one lane from the seed, no restarts, ``probe_iterations`` (and no second roll: the flood's
    targets take their roll from the seed's own rotation, :func:`~.sampling.align_axis`)."""
    if ctx.ik.solver != "batch" or ctx.ik.self_collision:
        return _solve_loop(ctx, positions, rotations, seeds, rng_seeds, probe)
    s = ctx.ik
    kw = dict(tol_position=s.tol_position, tol_orientation=s.tol_orientation, max_iterations=s.max_iterations,
              rng=ctx.seed)
    if probe:
        kw.update(max_iterations=s.probe_iterations, restarts=False)
    elif budget is not None:
        kw.update(max_iterations=budget)
    if rotations is None:
        return _blocks(ctx, PositionConstraint(ctx.tool, np.zeros(3)), positions, seeds, kw)
    T = np.tile(np.eye(4), (len(positions), 1, 1))
    T[:, :3, :3] = rotations
    T[:, :3, 3] = positions
    if not ctx.roll_free:
        return _blocks(ctx, PoseConstraint(ctx.tool, np.eye(4)), T, seeds, kw)
    i = int(np.argmax(np.abs(AXES[ctx.axis])))
    mask = [1, 1, 1, 1, 1, 1]
    mask[3 + i] = 0                                          # the rotation about the target's approach axis
    c = PoseConstraint(ctx.tool, np.eye(4), mask=mask, mask_frame="target")
    ok, Q, its = _blocks(ctx, c, T, seeds, kw)
    retry = np.nonzero(~ok)[0] if second_roll and not probe else ok[:0]
    if len(retry):
        flip = -np.ones(3)
        flip[i] = 1.0
        Tf = T[retry].copy()
        Tf[:, :3, :3] *= flip                                # R diag(flip): half a turn about that axis
        ok2, Q2, its2 = _blocks(ctx, c, Tf, seeds[retry], kw)
        ok[retry], Q[retry] = ok2, Q2
        its[retry] += its2
    return ok, Q, its


def _blocks(ctx: ReachContext, constraint, targets: np.ndarray, seeds: np.ndarray, kw: dict) -> tuple:
    """:func:`~mechanism_model_core.ik.solve_ik_batch` over ``targets`` in blocks of :data:`BLOCK`: ``(success,
    Q, iterations)``. The blocks depend on the chunk only, so the map does not depend on anything else."""
    B = len(targets)
    ok = np.zeros(B, dtype=bool)
    Q = np.empty((B, ctx.chain.nq))
    its = np.zeros(B, dtype=np.int64)
    for a in range(0, B, BLOCK):
        r = solve_ik_batch(ctx.chain, constraint, targets[a:a + BLOCK], seeds[a:a + BLOCK], **kw)
        ok[a:a + BLOCK], Q[a:a + BLOCK], its[a:a + BLOCK] = r.success, r.q, r.iterations
    return ok, Q, its


def _solve_loop(ctx: ReachContext, positions: np.ndarray, rotations: np.ndarray | None, seeds: np.ndarray,
                rng_seeds, probe: bool = False) -> tuple:
    """:func:`_solve_batch` one :func:`solve_ik` call at a time (roll-free targets as a position and a pointing
    constraint, exact at the solution whatever the roll)."""
    B = len(positions)
    ok = np.zeros(B, dtype=bool)
    Q = np.array(seeds, dtype=float)
    its = np.zeros(B, dtype=np.int64)
    s = ctx.ik
    axis = np.array(AXES[ctx.axis], dtype=float)
    for b in range(B):
        if rotations is None:
            c = [PositionConstraint(ctx.tool, positions[b])]
        elif ctx.roll_free:         # the origin on p and the approach axis on d: exact at the solution, any roll
            d = rotations[b] @ axis
            c = [PositionConstraint(ctx.tool, positions[b]),
                 PointAtConstraint(ctx.tool, positions[b] + d, axis=axis)]
        else:
            T = np.eye(4)
            T[:3, :3] = rotations[b]
            T[:3, 3] = positions[b]
            c = [PoseConstraint(ctx.tool, T)]
        r = solve_ik(ctx.chain, c, Q[b], solver="auto" if s.solver == "batch" else s.solver,
                     timeout=SAFETY_TIMEOUT, tol_position=s.tol_position,
                     tol_orientation=s.tol_orientation,
                     max_iterations=s.probe_iterations if probe else s.max_iterations, rng=int(rng_seeds[b]),
                     avoid_collisions=s.self_collision)
        ok[b], Q[b], its[b] = r.success, r.q, r.iterations
    return ok, Q, its


def _rng_seeds(ctx: ReachContext, vox, smp) -> list:
    return [_sample_seed(ctx, v, s) for v, s in zip(np.asarray(vox).tolist(), np.asarray(smp).tolist())]


def _attempt(ctx: ReachContext, positions, voxels, samples, seeds, probe: bool, **kw) -> tuple:
    """Solve samples ``samples`` (B,) of the voxels ``voxels`` (B,) at ``positions`` (B, 3) from ``seeds``
    (B, nq): roll-free targets take the roll of the seed's own tool rotation (no roll error at the start)."""
    if ctx.roll_free:
        Rs = forward_kinematics(ctx.chain, seeds).pose(ctx.tool)[:, :3, :3].reshape(-1, 3, 3)
        d = ctx.rotations[samples] @ np.array(AXES[ctx.axis], dtype=float)
        R = align_axis(Rs, AXES[ctx.axis], d)
    else:
        R = ctx.rotations[samples]
    return _solve_batch(ctx, positions, R, seeds, _rng_seeds(ctx, voxels, samples), samples, probe, **kw)


def _voxel_neighbours(grid: VoxelGrid, voxels: np.ndarray) -> np.ndarray:
    """(n, 6): for each voxel of a chunk, the position in ``voxels`` of its face neighbours (-1: not in the
    chunk)."""
    ijk = np.stack(np.unravel_index(voxels, grid.shape), axis=1)
    where = {int(v): k for k, v in enumerate(voxels.tolist())}
    out = np.full((len(voxels), 6), -1, dtype=np.int64)
    shape = np.array(grid.shape)
    for j, off in enumerate(((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))):
        nb = ijk + off
        inside = np.all((nb >= 0) & (nb < shape), axis=1)
        flat = np.ravel_multi_index(tuple(np.where(inside[:, None], nb, 0).T), grid.shape)
        out[:, j] = [where.get(int(f), -1) if ok else -1 for f, ok in zip(flat.tolist(), inside.tolist())]
    return out


def _flood(ctx: ReachContext, voxels: np.ndarray, centers: np.ndarray) -> tuple:
    """The flood search of :func:`compute_chunk`: ``(reached (n, S), Q (n, S, nq), iterations)``."""
    n, S, nq = len(voxels), ctx.samples_per_voxel, ctx.chain.nq
    s = ctx.ik
    reached = np.zeros((n, S), dtype=bool)
    tried = np.zeros((n, S), dtype=bool)
    Q = np.full((n, S, nq), np.nan)
    axis = np.array(AXES[ctx.axis], dtype=float)
    dirs = ctx.rotations @ axis
    iterations = 0

    def take(vi, si, ok, Qs, its, full):
        nonlocal iterations
        iterations += int(its.sum())
        if full:
            tried[vi, si] = True
        reached[vi[ok], si[ok]] = True
        Q[vi[ok], si[ok]] = Qs[ok]

    # 1. every sample: a cheap probe from its nearest FK seed
    vi = np.repeat(np.arange(n), S)
    si = np.tile(np.arange(S), n)
    seeds = ctx.seed_q[_seed_index(ctx, centers[vi], dirs[si])]
    take(vi, si, *_attempt(ctx, centers[vi], voxels[vi], si, seeds, probe=True), full=False)
    # 2. a voxel with nothing reached and no neighbour in the chunk with anything reached: its position,
    # orientation free (full budget); where that is reached, the sample nearest the solution's rotation gets
    # the full budget from it
    vnb = _voxel_neighbours(ctx.grid, voxels)
    any_v = np.append(reached.any(axis=1), False)
    none = np.nonzero(~any_v[:n] & ~any_v[vnb].any(axis=1))[0]
    if len(none):
        okp, Qp, its = _solve_batch(ctx, centers[none], None, ctx.seed_q[_seed_index(ctx, centers[none], None)],
                                    _rng_seeds(ctx, voxels[none], np.full(len(none), -1)))
        iterations += int(its.sum())
        none, Qp = none[okp], Qp[okp]
    if len(none):
        Rq = forward_kinematics(ctx.chain, Qp).pose(ctx.tool)[:, :3, :3].reshape(-1, 3, 3)
        if ctx.roll_free:           # the direction nearest the solution's approach axis
            s0 = np.argmax((Rq @ axis) @ dirs.T, axis=1)
        else:                       # the sample (direction and roll) nearest the solution's rotation
            s0 = np.argmax(np.einsum("bij,sij->bs", Rq, ctx.rotations), axis=1)
        take(none, s0, *_attempt(ctx, centers[none], voxels[none], s0, Qp, probe=False, second_roll=True),
             full=True)
    # 3. the flood: every sample next to a reached one -- a neighbouring sample of its voxel, or the same
    # sample of a face-neighbouring voxel of the chunk -- gets flood_iterations from that neighbour's
    # solution, wave after wave until a wave reaches nothing new
    nbrs = ctx.neighbours
    k = nbrs.shape[1]
    pad = np.zeros((1, S), dtype=bool)
    while True:
        nb_ok = reached[:, nbrs]                                  # (n, S, k) in the voxel
        rp = np.concatenate([reached, pad])
        vx_ok = np.stack([rp[vnb[:, j]] for j in range(6)], axis=2)   # (n, S, 6) same sample next door
        cand = np.concatenate([nb_ok, vx_ok], axis=2)
        front = ~reached & ~tried & cand.any(axis=2)
        if not front.any():
            break
        vi, si = np.nonzero(front)
        j = np.argmax(cand[vi, si], axis=1)                      # in the voxel first, nearest first
        inv = j < k
        seeds = np.empty((len(vi), nq))
        seeds[inv] = Q[vi[inv], nbrs[si[inv], j[inv]]]
        seeds[~inv] = Q[vnb[vi[~inv], j[~inv] - k], si[~inv]]
        take(vi, si, *_attempt(ctx, centers[vi], voxels[vi], si, seeds, probe=False, second_roll=False,
                               budget=min(s.flood_iterations, s.max_iterations)), full=True)
    return reached, Q, iterations


def compute_chunk(ctx: ReachContext, voxels) -> dict:
    """Solve every sample of the voxels with flat indices ``voxels``. Returns arrays per voxel (in the given
    order): ``reached`` (n, S) bool, ``manipulability`` and ``margin`` (n,) best over the reached samples
    (0 when none), ``q`` (n, nq) the reached configuration with the largest limit margin (NaN when none) and
    ``best_sample`` its sample index (-1 when none), and
    the totals ``samples`` and ``iterations``, and ``cpu`` the CPU seconds of the worker's process while the
    chunk ran (all its threads: a Dask worker's own too), ``thread_cpu`` those of the thread that ran it,
    ``pid`` and ``process_cpu`` the worker process and its CPU seconds since it started (start-up, imports and
    idle threads included: the driver sums the last report of each process).

    **Search** (pose mode, ``search="flood"``):

    1. every sample a *probe*: ``probe_iterations`` of one lane from its nearest FK seed, no restarts (a
       roll-free target takes the seed's own roll, :func:`~.sampling.align_axis`);
    2. a voxel with nothing reached whose face neighbours in the chunk have nothing reached either: its
       centre as a position-only target (``max_iterations``); where that is reached, the sample nearest the
       solution's rotation gets ``max_iterations`` from it (no configuration reaching the position: none
       reaches any of its samples);
    3. *flood*: each sample not yet reached next to a reached one -- one of its voxel's ``SAMPLE_NEIGHBOURS``
       nearest samples, or the same sample of a face-neighbouring voxel of the chunk -- gets
       ``flood_iterations`` from that neighbour's solution, wave after wave until a wave reaches nothing new.

    Reachable orientations form regions over position and direction; a region is found once one sample of
    it is (steps 1-2) and grown to its border, where the last wave's unreached samples spend their budgets.
    Samples away from every region cost a probe, not a whole budget. Every target's answer depends on its own
    inputs only, so the map depends on the chunk's voxels (the request's ``chunk_size``) but not on the
    executor, the workers or the machine.
    ``search="exhaustive"``: every sample the full budget from its FK seed."""
    cpu0, th0 = time.process_time(), time.thread_time()
    voxels = np.asarray(voxels, dtype=np.int64)
    n, S, nq = len(voxels), ctx.samples_per_voxel, ctx.chain.nq
    centers = ctx.grid.centers(voxels)
    if ctx.mode != "position" and ctx.ik.search == "flood":
        ok2, Q3, iterations = _flood(ctx, voxels, centers)
        ok = ok2.reshape(-1)
        Q = Q3.reshape(n * S, nq)
    else:
        P = np.repeat(centers, S, axis=0)
        vox = np.repeat(voxels, S)
        smp = np.tile(np.arange(S), n)
        if ctx.mode == "position":
            R, D = None, None
        else:
            R = np.tile(ctx.rotations, (n, 1, 1))
            D = R @ np.array(AXES[ctx.axis], dtype=float)
        seeds = ctx.seed_q[_seed_index(ctx, P, D)]
        ok, Q, its = _solve_batch(ctx, P, R, seeds, _rng_seeds(ctx, vox, smp), smp)
        iterations = int(its.sum())
    manip = np.zeros(n * S)
    margin = np.zeros(n * S)
    if np.any(ok):
        J = ground_jacobian(ctx.chain, Q[ok], ctx.tool)
        if ctx.mode == "position":
            J = J[:, :3]
        manip[ok] = manipulability(J)
        margin[ok] = limit_margin(Q[ok], ctx.chain.lower_limits, ctx.chain.upper_limits)
    ok2, m2, g2 = ok.reshape(n, S), manip.reshape(n, S), margin.reshape(n, S)
    best_q = np.full((n, nq), np.nan)
    g_masked = np.where(ok2, g2, -1.0)
    pick = np.argmax(g_masked, axis=1)
    any_ok = ok2.any(axis=1)
    Q3 = Q.reshape(n, S, nq)
    best_q[any_ok] = Q3[np.nonzero(any_ok)[0], pick[any_ok]]
    best_sample = np.where(any_ok, pick, -1).astype(np.int32)
    return {"voxels": voxels, "reached": ok2, "manipulability": m2.max(axis=1), "margin": g2.max(axis=1),
            "q": best_q, "best_sample": best_sample, "samples": int(n * S), "iterations": int(iterations),
            "cpu": time.process_time() - cpu0, "thread_cpu": time.thread_time() - th0, "pid": os.getpid(),
            "process_cpu": time.process_time()}
