"""Reachability (capability) maps of a chain, in the frame of its base (Zacharias et al. 2007; reuleaux).

>>> rmap = compute_map(mechanism, "idd_base:mi", resolution=0.05, directions=50, path="mer.h5")
>>> rmap.index.shape                 # (nx, ny, nz) share of the approach directions reached per voxel
>>> rmap.reachable([0.5, 0.2, -0.3], direction=[0, 0, -1])      # looked up, no IK
>>> rmap = ReachMap.load("mer.h5", mechanism, chain="idd_base:mi")   # refused if the model changed

**The chain** ``"base:tip"``: the bodies from the frame ``base`` to the tool frame ``tip`` (other joints of the
mechanism are not part of it; see :class:`~mechanism_model_core.locomotion.manipulator.ManipulatorModel`).
Positions are in metres in the base frame.

**Modes.** ``"pose"`` (default): at every voxel centre, ``directions`` approach directions (a uniform sphere
sampling, or the given unit vectors) for the tool's ``axis``, with ``rolls`` roll angles about it (0: roll
free), each one IK sample; the voxel's *reachability index* is the share of samples reached.
``"position"``: orientation-free, one position-only IK sample per voxel (index 0 or 1). ``"fk"``: no IK at
all, the voxels (and, per voxel, the directions nearest the tool's approach axis) that the seed map's random
configurations fall into: a fast estimate that under-reports (a sample is only found if a random
configuration lands in it), for a first look.

**Per sample** reachable means an IK solution within the joint limits to ``tol_position`` m and
``tol_orientation`` rad (and, with ``self_collision``, free of self-collision). ``search="flood"`` (default;
:func:`.compute.compute_chunk`): every sample is first *probed* (``probe_iterations`` of one lane from the
nearest seed of the FK-sampled seed map), then every sample next to a reached one (a neighbouring approach
direction of its voxel, or the same sample of a neighbouring voxel of the chunk) is solved from that
neighbour's solution with ``flood_iterations``, until nothing new is reached; a chunk where nothing was
probed successfully starts from a position-only solve (``max_iterations``). Samples away from every
reachable region cost a probe, not a whole budget. ``search="exhaustive"``: every sample ``max_iterations``
(restarts included) from its nearest FK seed. The flood's map depends on ``chunk_size`` (chunks are bricks of
neighbouring voxels that seed each other), which the request records. Per voxel the map keeps the best manipulability (Yoshikawa), the best joint-limit margin
(share of the range) and that configuration. Voxels whose centre lies beyond the chain's reach
(:func:`.grid.chain_reach`) are unreachable by the bound and never solved.

**Execution** (:mod:`.execute`): ``executor="pool"`` (default, local cores), ``"serial"`` or ``"dask"``
(``scheduler="tcp://host:8786"`` or a LocalCluster); chunks of ``chunk_size`` voxels (default
:func:`auto_chunk_size`: 64 to 1000 by the map's size, the tail in smaller chunks). With ``path``, finished
chunks are journalled beside the file and the map file is written atomically at the end; the same call
after a kill resumes (:mod:`.storage`). The result never depends on the executor or the workers (nor, with
``search="exhaustive"``, on the chunking).

**Caps** (:mod:`.grid`): a request beyond ``max_samples`` IK samples, ``max_voxels`` voxels or
``max_file_bytes`` is refused with its estimated size before anything runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass

import numpy as np

from .. import __version__
from ..errors import InvalidConfiguration, UnknownFrame
from ..io.claraty_xml import to_claraty_xml
from ..locomotion.manipulator import _chain_mechanism
from ..model import Mechanism
from .compute import IKSettings, ReachContext, seed_map
from .execute import check_executor, run_chunks
from .grid import MAX_FILE_BYTES, MAX_SAMPLES, MAX_VOXELS, VoxelGrid, chain_reach, check_caps, grid_for
from .sampling import AXES, sample_rotations, sphere_directions
from .storage import FORMAT, FORMAT_VERSION, Journal, MapFileError, check_identity, read_map_file, write_map_file

__all__ = ["ReachMap", "compute_map", "parse_chain", "chain_of", "model_hash", "MODES"]

MODES = ("pose", "position", "fk")
SEARCHES = ("flood", "exhaustive")


def parse_chain(chain) -> tuple:
    """``"base:tip"`` (or a pair) -> ``(base, tip)``; :class:`InvalidConfiguration` otherwise."""
    if isinstance(chain, str):
        parts = chain.split(":")
        if len(parts) != 2 or not all(p.strip() for p in parts):
            raise InvalidConfiguration(f"a chain is 'base:tip' (two frame names), got {chain!r}")
        return parts[0].strip(), parts[1].strip()
    if isinstance(chain, (tuple, list)) and len(chain) == 2 and all(isinstance(p, str) and p for p in chain):
        return tuple(chain)
    raise InvalidConfiguration(f"a chain is 'base:tip' or (base, tip), got {chain!r}")


def chain_of(mechanism: Mechanism, chain) -> tuple:
    """``(base, tip, chain mechanism)``: unknown frames raise :class:`UnknownFrame` (with suggestions)."""
    base, tip = parse_chain(chain)
    for f in (base, tip):
        if not mechanism.has_frame(f):
            raise UnknownFrame(f, mechanism.frame_names)
    return base, tip, _chain_mechanism(mechanism, base, [tip])


def model_hash(chain_mechanism: Mechanism, tool: str) -> str:
    """SHA-256 of the chain's CLARAty XML (kinematics, limits, masses, shapes) and the tool frame's name."""
    with warnings.catch_warnings():     # motor groups of the whole model that the chain cuts: not its identity
        warnings.simplefilter("ignore")
        text = to_claraty_xml(chain_mechanism)
    h = hashlib.sha256(text.encode())
    h.update(b"\0" + tool.encode())
    return h.hexdigest()


def _int(value, name, lo, hi) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise InvalidConfiguration(f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def _tol(value, name, hi) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InvalidConfiguration(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(v) and 0 < v <= hi):
        raise InvalidConfiguration(f"{name} must be in (0, {hi}], got {value!r}")
    return v


@dataclass
class ReachMap:
    """A computed map (see the module docstring): ``grid``, per-voxel arrays ``index``, ``manipulability``,
    ``margin``, ``q``, ``best_sample``, ``computed``, per-sample ``reached`` (nx, ny, nz, S), the sample
    ``directions`` (D, 3) and ``rotations`` (S, 3, 3), ``attrs`` (the file's metadata: model hash, chain,
    request) and ``stats`` (None for a map read from a file): this run's ``chunks``, ``worker_cpu`` (CPU seconds
    of the worker processes while chunks ran on them), ``worker_process_cpu`` (the worker processes' whole CPU
    since they started, at their last chunk: start-up and idle threads too; 0 for work in this process) and,
    on a Dask LocalCluster of processes, ``nanny_cpu`` (its nannies' in processes other than this one's)."""

    grid: VoxelGrid
    index: np.ndarray
    reached: np.ndarray
    manipulability: np.ndarray
    margin: np.ndarray
    q: np.ndarray
    best_sample: np.ndarray
    computed: np.ndarray
    directions: np.ndarray
    rotations: np.ndarray
    attrs: dict
    stats: dict = None

    @property
    def request(self) -> dict:
        return json.loads(self.attrs["request"])

    @property
    def base(self) -> str:
        return self.request["base"]

    @property
    def tool(self) -> str:
        return self.request["tool"]

    @property
    def axis(self) -> str:
        return self.request["axis"]

    @property
    def rolls(self) -> int:
        return int(self.request["rolls"])

    @property
    def joint_names(self) -> list:
        return list(self.request["joint_names"])

    def arrays(self) -> dict:
        return {k: getattr(self, k) for k in ("index", "reached", "manipulability", "margin", "q", "best_sample",
                                              "computed", "directions", "rotations")}

    def save(self, path) -> None:
        """Write the map file atomically (:mod:`.storage`)."""
        write_map_file(path, self.attrs, self.arrays())

    @classmethod
    def load(cls, path, mechanism: Mechanism | None = None, chain=None) -> "ReachMap":
        """Read a map file. With ``mechanism`` the file must have been computed for the same chain of it (the
        chain is the file's own unless ``chain`` is given); else :class:`~.storage.MapFileError`."""
        attrs, arrays = read_map_file(path)
        req = json.loads(attrs["request"])
        if mechanism is not None:
            base, tip, cm = chain_of(mechanism, chain or (req["base"], req["tool"]))
            if (base, tip) != (req["base"], req["tool"]):
                raise MapFileError(f"{os.fspath(path)}: the map is of the chain {req['base']}:{req['tool']}, "
                                   f"not {base}:{tip}")
            check_identity(attrs, model_hash(cm, tip), os.fspath(path))
        grid = VoxelGrid(tuple(req["origin"]), float(req["resolution"]), tuple(req["shape"]))
        return cls(grid=grid, attrs=attrs, **arrays)

    # ------------------------------------------------------------------ look-ups (no IK)
    def voxel_of(self, point) -> tuple | None:
        """(i, j, k) of the voxel holding ``point`` (m, base frame), None outside the grid."""
        ijk = self.grid.index_of(np.asarray(point, dtype=float).reshape(1, 3))[0]
        return None if ijk[0] < 0 else tuple(int(v) for v in ijk)

    def index_at(self, points) -> np.ndarray:
        """Reachability index at ``points`` (N, 3) (0 outside the grid)."""
        ijk = self.grid.index_of(points)
        inside = ijk[:, 0] >= 0
        out = np.zeros(len(ijk))
        out[inside] = self.index[tuple(ijk[inside].T)]
        return out

    def sample_of(self, direction) -> int:
        """The sample (roll 0) whose approach direction is nearest ``direction`` (base frame)."""
        d = np.asarray(direction, dtype=float).reshape(3)
        d = d / np.linalg.norm(d)
        a = self.rotations @ np.array(AXES[self.axis], dtype=float)
        return int(np.argmax(a @ d))

    def reachable(self, point, direction=None) -> bool:
        """Looked up: the voxel of ``point`` has a reached sample (with ``direction``: the sample nearest it)."""
        v = self.voxel_of(point)
        if v is None:
            return False
        if direction is None or self.request["mode"] == "position":
            return bool(self.reached[v].any())
        return bool(self.reached[v][self.sample_of(direction)])


def _in_reach(grid: VoxelGrid, radius: float) -> np.ndarray:
    """Flat mask of the voxels whose centre is within ``radius`` of the base origin (one x slab at a time)."""
    nx, ny, nz = grid.shape
    o, r = np.asarray(grid.origin, dtype=float), grid.resolution
    y = o[1] + r * np.arange(ny)
    z = o[2] + r * np.arange(nz)
    yz2 = (y[:, None] ** 2 + z[None, :] ** 2).reshape(-1)
    x = o[0] + r * np.arange(nx)
    return (x[:, None] ** 2 + yz2[None, :] <= radius * radius).reshape(-1)


#: the automatic chunk size: about ``len(active) / AUTO_CHUNKS`` voxels, within these bounds
AUTO_CHUNK_MIN, AUTO_CHUNK_MAX, AUTO_CHUNKS = 64, 1000, 16


def auto_chunk_size(n_active: int) -> int:
    """The default voxels per chunk for a map of ``n_active`` voxels to solve: about a sixteenth of the map,
    at least 64 and at most 1000. A chunk's fixed cost (per flood wave, batch IK calls) is amortized over its
    voxels, so large maps get large chunks (Panda at 0.15 m, 20 directions: 1000 voxels per chunk 1.8x the
    samples per CPU second of 64 when each approach direction was a call of its own, BENCHMARKS.md); small maps still get enough chunks
    to share among workers. It depends on the map only, never on the workers, so the map does not either."""
    return int(min(AUTO_CHUNK_MAX, max(AUTO_CHUNK_MIN, math.ceil(n_active / AUTO_CHUNKS))))


def chunk_bounds(n: int, size: int) -> list:
    """``[(start, stop), ...]`` slices of ``n`` ordered voxels: chunks of ``size``, except that the last
    ``size`` to ``2 size`` voxels go in near-equal chunks of at most ``max(size / 4, 64)`` voxels, so that no
    worker is left alone on a whole chunk at the end of a run. Depends on ``n`` and ``size`` only."""
    size = max(1, int(size))
    small = max(min(size, AUTO_CHUNK_MIN), size // 4)
    if small == size:
        return [(a, min(n, a + size)) for a in range(0, n, size)]
    tail_from = size * max(0, -(-(n - 2 * size) // size))     # the last (size, 2 size] voxels, or all of them
    parts = -(-(n - tail_from) // small)                        # the tail in that many near-equal chunks
    cuts = [tail_from + (n - tail_from) * k // parts for k in range(parts + 1)] if parts else [tail_from]
    return [(a, a + size) for a in range(0, tail_from, size)] + list(zip(cuts[:-1], cuts[1:]))


def _brick_order(grid: VoxelGrid, active: np.ndarray, chunk_size: int) -> np.ndarray:
    """``active`` ordered brick by brick (bricks of about ``chunk_size`` voxels, C order inside), so that a
    chunk is a compact block whose voxels seed each other (:func:`.compute.compute_chunk`)."""
    b = max(1, int(round(chunk_size ** (1.0 / 3.0))))
    i, j, k = np.unravel_index(active, grid.shape)
    return active[np.lexsort((k, j, i, k // b, j // b, i // b))]


def _fk_mode(ctx: ReachContext) -> np.ndarray:
    """The ``"fk"`` mode's estimate: the seed map's samples binned into voxels and nearest directions."""
    g = ctx.grid
    ijk = g.index_of(ctx.seed_p)
    inside = ijk[:, 0] >= 0
    flat = np.ravel_multi_index(tuple(ijk[inside].T), g.shape)
    dirs = ctx.rotations @ np.array(AXES[ctx.axis], dtype=float)
    s = np.argmax(ctx.seed_a[inside] @ dirs.T, axis=1)
    reached = np.zeros((g.n_voxels, len(dirs)), dtype=bool)
    reached[flat, s] = True
    return reached


def compute_map(mechanism: Mechanism, chain, resolution: float = 0.05, *, directions=50, rolls: int = 0,
                axis: str = "z", mode: str = "pose", bound=None, path=None, executor: str = "pool",
                workers: int | None = None, scheduler: str | None = None, processes: bool = True,
                chunk_size: int | None = None, seed: int = 0, n_seeds: int = 20000, tol_position: float = 1e-4,
                tol_orientation: float = 1e-3, max_iterations: int = 1000, solver: str = "batch",
                self_collision: bool = False, search: str = "flood", probe_iterations: int = 30,
                flood_iterations: int = 200,
                restart: bool = False, progress=None,
                max_samples: int = MAX_SAMPLES, max_voxels: int = MAX_VOXELS,
                max_file_bytes: int = MAX_FILE_BYTES) -> ReachMap:
    """Compute the reachability map of ``chain`` (``"base:tip"``) of ``mechanism`` (module docstring).

    ``directions``: a count (Fibonacci sphere) or an array (D, 3) of directions (base frame). ``bound``:
    ((lo), (hi)) corners in m (default: the cube around the chain's reach). ``path``: the map file (HDF5),
    journalled while running and resumed after a kill; ``restart`` discards a journal. ``progress``:
    ``progress(samples_done, samples_total)`` after every chunk. Every argument is checked, and the size
    against the caps, before any work is scheduled."""
    if mode not in MODES:
        raise InvalidConfiguration(f"mode must be one of {MODES}, got {mode!r}")
    base, tip, cm = chain_of(mechanism, chain)
    if axis not in AXES:
        raise InvalidConfiguration(f"axis must be one of {sorted(AXES)}, got {axis!r}")
    if isinstance(directions, (int, np.integer)) and not isinstance(directions, bool):
        D = sphere_directions(_int(directions, "directions", 1, 100000))
    else:
        try:
            D = np.asarray(directions, dtype=float).reshape(-1, 3)
        except (TypeError, ValueError):
            raise InvalidConfiguration(f"directions must be a count or an array of 3-vectors, got "
                                       f"{directions!r}") from None
        n = np.linalg.norm(D, axis=1)
        if len(D) == 0 or not np.all(np.isfinite(D)) or np.any(n < 1e-9):
            raise InvalidConfiguration("directions must be finite non-zero 3-vectors")
        D = D / n[:, None]
    rolls = _int(rolls, "rolls", 0, 360)
    if chunk_size is not None:
        chunk_size = _int(chunk_size, "chunk_size", 1, 1_000_000)
    seed = _int(seed, "seed", 0, 2 ** 32 - 1)
    n_seeds = _int(n_seeds, "n_seeds", 1, 10_000_000)
    ik = IKSettings(_tol(tol_position, "tol_position", 1.0), _tol(tol_orientation, "tol_orientation", math.pi),
                    _int(max_iterations, "max_iterations", 1, 1_000_000), str(solver), bool(self_collision),
                    search, _int(probe_iterations, "probe_iterations", 1, 1_000_000),
                    _int(flood_iterations, "flood_iterations", 1, 1_000_000))
    if search not in SEARCHES:
        raise InvalidConfiguration(f"search must be one of {SEARCHES}, got {search!r}")
    workers = check_executor(executor, workers, scheduler)
    reach = chain_reach(cm, tip) if bound is None else None
    grid = grid_for(reach if reach is not None else 1.0, resolution, bound)
    if grid.n_voxels > max_voxels:
        check_caps(grid, 0, 1, cm.nq, max_samples, max_voxels, max_file_bytes)
    R = sample_rotations(D, axis, rolls)
    S = 1 if mode == "position" else len(R)
    if reach is None:
        reach = chain_reach(cm, tip)
    ball = 4.0 / 3.0 * math.pi * (reach / grid.resolution + 1.0) ** 3       # voxels in reach, at most
    check_caps(grid, 0 if mode == "fk" else min(grid.n_voxels, int(ball)), S, cm.nq, max_samples, max_voxels,
               max_file_bytes)
    active_mask = _in_reach(grid, reach + 2 * ik.tol_position)
    n_active = int(np.count_nonzero(active_mask))
    if chunk_size is None:
        chunk_size = auto_chunk_size(n_active)
    active = _brick_order(grid, np.nonzero(active_mask)[0], chunk_size)
    check_caps(grid, 0 if mode == "fk" else len(active), S, cm.nq, max_samples, max_voxels, max_file_bytes)
    if path is not None:
        d = os.path.dirname(os.path.abspath(os.fspath(path)))
        if not os.path.isdir(d):
            raise InvalidConfiguration(f"{os.fspath(path)}: directory {d} does not exist")
    mhash = model_hash(cm, tip)
    request = {"base": base, "tool": tip, "mode": mode, "resolution": grid.resolution, "origin": list(grid.origin),
               "shape": list(grid.shape), "axis": axis, "rolls": rolls, "n_directions": len(D),
               "directions_hash": hashlib.sha256(np.ascontiguousarray(D).tobytes()).hexdigest(),
               "seed": seed, "n_seeds": n_seeds, "chunk_size": chunk_size, "tol_position": ik.tol_position,
               "tol_orientation": ik.tol_orientation, "max_iterations": ik.max_iterations, "solver": ik.solver,
               "self_collision": ik.self_collision, "search": ik.search,
               "probe_iterations": ik.probe_iterations, "flood_iterations": ik.flood_iterations,
               "joint_names": list(cm.coordinate_names), "reach": reach}
    Qs, Ps, As = seed_map(cm, tip, axis, n_seeds, seed)
    ctx = ReachContext(cm, tip, grid, mode, R, rolls == 0, axis, ik, seed, Qs, Ps, As)
    nq = cm.nq
    reached = np.zeros((grid.n_voxels, S), dtype=bool)
    manip = np.zeros(grid.n_voxels, dtype=np.float32)
    margin = np.zeros(grid.n_voxels, dtype=np.float32)
    qbest = np.full((grid.n_voxels, nq), np.nan, dtype=np.float32)
    best = np.full(grid.n_voxels, -1, dtype=np.int32)
    samples = iterations = 0
    if mode == "fk":
        reached = _fk_mode(ctx)
    else:
        chunks = list(enumerate(chunk_bounds(len(active), chunk_size)))
        chunks = [(i, active[a:b]) for i, (a, b) in chunks]
        total = len(active) * S
        journal = None
        done_ids: set = set()
        stats = {"worker_cpu": 0.0, "worker_thread_cpu": 0.0, "chunks": 0, "process_cpu": {}}
        if path is not None:
            journal = Journal(path, {"model_hash": mhash, "request": request})
            done_ids = journal.open(restart=restart)

        def take(res):
            nonlocal samples, iterations
            v = res["voxels"]
            reached[v] = res["reached"]
            manip[v] = res["manipulability"]
            margin[v] = res["margin"]
            qbest[v] = res["q"]
            best[v] = res["best_sample"]
            samples += res["samples"]
            iterations += res["iterations"]
            stats["worker_cpu"] += float(res.get("cpu", 0.0))
            stats["worker_thread_cpu"] += float(res.get("thread_cpu", 0.0))
            stats["chunks"] += 1

        for cid in sorted(done_ids):
            take(journal.read(cid))
        if progress is not None:
            progress(samples, total)
        todo = [c for c in chunks if c[0] not in done_ids]
        me = os.getpid()
        for cid, res in run_chunks(ctx, todo, executor, workers, scheduler, processes, stats):
            pid = int(res.get("pid", me))
            if pid != me:               # a worker process: its CPU since it started, at its last chunk
                stats["process_cpu"][pid] = max(stats["process_cpu"].get(pid, 0.0), float(res["process_cpu"]))
            if journal is not None:
                journal.write(cid, res)
            take(res)
            if progress is not None:
                progress(samples, total)
    shape = grid.shape
    if mode == "fk":
        stats = {"worker_cpu": 0.0, "worker_thread_cpu": 0.0, "chunks": 0, "process_cpu": {}}
    stats["worker_process_cpu"] = float(sum(stats.pop("process_cpu").values()))
    attrs = {"format": FORMAT, "format_version": FORMAT_VERSION, "software_version": __version__,
             "model_name": mechanism.name, "model_hash": mhash, "request": json.dumps(request),
             "samples": samples, "iterations": iterations}
    rmap = ReachMap(grid=grid, index=reached.mean(axis=1).astype(np.float32).reshape(shape),
                    reached=reached.reshape(shape + (S,)), manipulability=manip.reshape(shape),
                    margin=margin.reshape(shape), q=qbest.reshape(shape + (nq,)), best_sample=best.reshape(shape),
                    computed=active_mask.reshape(shape), directions=D, rotations=R, attrs=attrs)
    rmap.stats = stats            # this run's work: worker CPU seconds and chunks (not stored in the file)
    if path is not None:
        rmap.save(path)
        if mode != "fk":
            journal.remove()
    return rmap


