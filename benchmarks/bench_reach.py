"""Reachability maps (issue 22): time on one core, on two local workers and on a Dask LocalCluster; throughput
against a plain loop of ``solve_ik``; a random 1 % of the cells re-checked independently.

Robots: the MER instrument arm (``mer/mer_idd.xml``, chain ``ground:mi``, 5 DOF) and the Panda
(``benchmarks/common.py``, chain ``panda_link0:panda_link8``, 7 DOF); pose mode, ``--directions`` Fibonacci
approach directions per voxel for the tool's z axis, roll free, the map's default IK settings.

Times: wall clock and CPU seconds. The machine is shared (its load average is printed), so the comparisons
use CPU time: one core's is the process's ``time.process_time``; an executor's is the whole of it: this
process (the driver, and a LocalCluster's scheduler), the worker processes' CPU since they started (start-up,
imports, idle threads; ``ReachMap.stats['worker_process_cpu']``) and a LocalCluster's nannies
(``stats['nanny_cpu']``). ``--pool-workers 1,2`` runs the pool with one and with two workers: equal CPU per
sample is what a two-worker speed-up of ~2x on an idle machine needs; the wall-clock speed-up over one core
is printed too (meaningful on a quiet machine only). The Dask overhead is the LocalCluster's total CPU (and
wall time) over the pool's with the same workers; ``--dask-default-malloc`` adds a LocalCluster run whose workers
have ``distributed``'s default ``MALLOC_TRIM_THRESHOLD_=65536`` (the map's LocalCluster unsets it: with it,
glibc maps every array above 128 KiB afresh), for the ratio with and without it in one run. Every run prints
its chunks' CPU (``in chunks``: the worker process while a chunk ran; ``in the chunks' threads``: the thread
that ran it).

A whole large map on the workers only: ``--skip-serial`` (the first executor's map is the reference),
``--map-file`` (its size is printed), ``--fk-all`` (Pinocchio FK of every reachable voxel's stored
configuration) and ``--recheck-cells N`` (the independent solves in N random cells only).

Search: the map's default flood search; with ``--exhaustive`` the exhaustive search (every sample the whole
budget) too, on one core in the same process, for the ratio between the two.

Checks: the three runs give identical maps (seeded sampling); on a random 1 % of the cells (at least
``--min-cells``), every reached sample's stored best configuration is put through Pinocchio FK (tool on the
voxel centre within the tolerance, approach axis along the sample's direction), every sample is solved again
on its own with ``solve_ik`` (position + pointing constraints, the map's tolerances, a different solver: the
DLS loop) with 4000 iterations (20x the 200 a single DLS solve of the same search gets; the map's 1000 are
lane-iterations shared by up to 6 seeds), and the samples the map missed that this finds are counted; with
``--recheck-unreached N``, also N random unreached samples of the whole map re-tried the same way.

Usage (the fourth line: serial, pool x1, pool x2 and Dask x2 on the MER at 0.1 m, about 4 minutes on an
idle 2-core machine; the fifth: the whole Panda map at 5 cm on two workers, its file and its checks)::

    python benchmarks/bench_reach.py --robot mer --resolution 0.25 --directions 50 --min-cells 3 --recheck-unreached 200
    python benchmarks/bench_reach.py --robot panda --resolution 0.4 --directions 20 --min-cells 3 --loop-samples 60 --skip-dask
    python benchmarks/bench_reach.py --robot panda --resolution 0.05 --directions 50 --bound -1.35 -0.1 -1.35 1.35 0.1 1.35 --skip-pool --skip-dask --loop-samples 200 --recheck-cells 3 --recheck-unreached 200
    python benchmarks/bench_reach.py --robot mer --resolution 0.1 --directions 50 --pool-workers 1,2 --loop-samples 0 --recheck-cells 0
    python benchmarks/bench_reach.py --robot panda --resolution 0.05 --directions 50 --skip-serial --pool-workers 2 --skip-dask --loop-samples 0 --fk-all --map-file panda05.h5 --recheck-cells 8 --recheck-unreached 300
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mechanism_model_core import load_model  # noqa: E402
from mechanism_model_core.constraints import PointAtConstraint, PositionConstraint  # noqa: E402
from mechanism_model_core.ik import solve_ik  # noqa: E402
from mechanism_model_core.io.urdf import to_urdf  # noqa: E402
from mechanism_model_core.library import model_path  # noqa: E402
from mechanism_model_core.reach import compute_map  # noqa: E402
from mechanism_model_core.reach.execute import LOCAL_CLUSTER_CONFIG  # noqa: E402
from mechanism_model_core.reach.map import chain_of  # noqa: E402


def robot(name):
    if name == "mer":
        return load_model(model_path("mer/mer_idd.xml")), "ground:mi"
    from common import build_mechanism, panda

    return build_mechanism(panda()), "panda_link0:panda_link8"


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True)
               for k in ("index", "reached", "manipulability", "margin", "q", "best_sample"))


def report(what, m, wall, cpu_total, cpu_driver):
    S = m.attrs["samples"]
    print(f"{what}: {S} samples ({int(m.computed.sum())} voxels in {m.stats['chunks']} chunks of "
          f"{m.request['chunk_size']}), {wall:.1f} s wall, {cpu_total:.1f} s CPU (driver {cpu_driver:.1f}), "
          f"{S / cpu_total:.0f} samples per CPU second; {int((m.index > 0).sum())} reachable voxels, "
          f"{int(m.reached.sum())} samples reached; load {os.getloadavg()[0]:.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="mer", choices=("mer", "panda"))
    ap.add_argument("--resolution", type=float, default=0.15)
    ap.add_argument("--directions", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2, help="Dask LocalCluster workers (default 2)")
    ap.add_argument("--pool-workers", type=lambda v: [int(x) for x in v.split(",")], default=[2],
                    help="process pool runs, comma-separated worker counts (default 2; e.g. 1,2)")
    ap.add_argument("--loop-samples", type=int, default=300)
    ap.add_argument("--min-cells", type=int, default=10)
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-pool", action="store_true")
    ap.add_argument("--skip-serial", action="store_true",
                    help="no run on one core in this process: the first executor's map is the reference")
    ap.add_argument("--dask-default-malloc", action="store_true",
                    help="also a Dask LocalCluster run with distributed's default MALLOC_TRIM_THRESHOLD_=65536 "
                         "in the workers' environment (the library unsets it), last")
    ap.add_argument("--fk-all", action="store_true",
                    help="Pinocchio FK of every reachable voxel's stored configuration (not only the re-checked cells')")
    ap.add_argument("--map-file", help="the first executor run writes its map file here (its size is printed)")
    ap.add_argument("--exhaustive", action="store_true", help="also the exhaustive search on one core")
    ap.add_argument("--chunk-size", type=int, default=None, help="voxels per chunk (default: the map's automatic size)")
    ap.add_argument("--bound", nargs=6, type=float, metavar=("XLO", "YLO", "ZLO", "XHI", "YHI", "ZHI"),
                    help="a box of the map only (m, base frame): a sub-volume of a large map")
    ap.add_argument("--flood-iterations", type=int, default=200)
    ap.add_argument("--recheck-unreached", type=int, default=0)
    ap.add_argument("--recheck-cells", type=int, default=None,
                    help="cells re-checked sample by sample (default: 1 %% of the map's, at least --min-cells)")
    ap.add_argument("--recheck-iterations", type=int, default=4000,
                    help="budget of the independent DLS solves (20x a single solve's 200)")
    a = ap.parse_args()
    mech, chain = robot(a.robot)
    kw = dict(directions=a.directions, chunk_size=a.chunk_size, flood_iterations=a.flood_iterations,
              bound=None if a.bound is None else (tuple(a.bound[:3]), tuple(a.bound[3:])))
    print(f"# {a.robot} {chain}, {a.resolution} m, {a.directions} directions; load average at start "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    one = c1 = w1 = None
    if not a.skip_serial:
        t, c = time.perf_counter(), time.process_time()
        one = compute_map(mech, chain, a.resolution, executor="serial", **kw)
        w1, c1 = time.perf_counter() - t, time.process_time() - c
        report("one core", one, w1, c1, c1)

    if a.exhaustive and one is not None:
        S = one.attrs["samples"]
        c = time.process_time()
        ex = compute_map(mech, chain, a.resolution, executor="serial", search="exhaustive", **kw)
        ce = time.process_time() - c
        print(f"exhaustive search, one core: {ce:.1f} s CPU, {S / ce:.0f} samples per CPU second, "
              f"{int(ex.reached.sum())} samples reached; flood over exhaustive {ce / c1:.1f}x; samples only the "
              f"exhaustive reached {int((ex.reached & ~one.reached).sum())}, only the flood "
              f"{int((one.reached & ~ex.reached).sum())}")
    # every executor's whole CPU: this process (driver, and a LocalCluster's scheduler) + the worker processes
    # since they started (start-up, imports, idle threads) + a LocalCluster's nannies
    runs = [] if a.skip_pool else [("pool", w) for w in a.pool_workers]
    if not a.skip_dask:
        runs.append(("dask", a.workers))
    if a.dask_default_malloc:
        runs.append(("dask-malloc", a.workers))
    out = {}
    environ = dict(os.environ)
    for ex, nw in runs:
        conf = dict(LOCAL_CLUSTER_CONFIG)
        if ex == "dask-malloc":     # distributed's default for its nannies' workers (it leaks into this process)
            LOCAL_CLUSTER_CONFIG["distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"] = 65536
        path = a.map_file if a.map_file and not out else None
        t, c = time.perf_counter(), time.process_time()
        try:
            r = compute_map(mech, chain, a.resolution, executor=ex.split("-")[0], workers=nw, path=path, **kw)
        finally:
            LOCAL_CLUSTER_CONFIG.clear()
            LOCAL_CLUSTER_CONFIG.update(conf)
            os.environ.clear()
            os.environ.update(environ)
        w, cd = time.perf_counter() - t, time.process_time() - c
        st = r.stats
        total = cd + st["worker_process_cpu"] + st.get("nanny_cpu", 0.0)
        out[ex, nw] = (w, total)
        if one is None:
            one, c1, w1 = r, total, w
            report(f"{ex} x{nw} (the reference map)", r, w, total, cd)
        S = one.attrs["samples"]
        print(f"{ex} x{nw}: {w:.1f} s wall; CPU {total:.1f} s = driver {cd:.1f} + worker processes "
              f"{st['worker_process_cpu']:.1f} (of which in chunks {st['worker_cpu']:.1f}, in the chunks' threads "
              f"{st['worker_thread_cpu']:.1f}) + nannies {st.get('nanny_cpu', 0.0):.1f}; {1e6 * total / S:.0f} us "
              f"CPU per sample (reference {1e6 * c1 / S:.0f}); wall speed-up over the reference {w1 / w:.2f}x; "
              f"identical to the reference: {same(one, r)}; workers' slow malloc settings: "
              f"{st.get('worker_malloc_env', '-')}; load {os.getloadavg()[0]:.1f}")
        if path:
            print(f"map file {path}: {os.path.getsize(path) / 1e6:.2f} MB")
    if ("pool", 1) in out and ("pool", 2) in out:
        print(f"CPU per sample, pool x2 over pool x1: {out['pool', 2][1] / out['pool', 1][1]:.3f} (1.0: the two "
              f"workers do the work of one at the same cost; the idle 2-core speed-up is then ~2x); wall "
              f"pool x1 over x2: {out['pool', 1][0] / out['pool', 2][0]:.2f}x")
    if ("pool", a.workers) in out and ("dask", a.workers) in out:
        (wp, cp), (wd, cd) = out["pool", a.workers], out["dask", a.workers]
        print(f"Dask LocalCluster over the pool, x{a.workers}: CPU {cd / cp:.3f}, wall {wd / wp:.3f}")
    if ("pool", a.workers) in out and ("dask-malloc", a.workers) in out:
        (wp, cp), (wd, cd) = out["pool", a.workers], out["dask-malloc", a.workers]
        print(f"Dask LocalCluster with distributed's MALLOC_TRIM_THRESHOLD_ over the pool, x{a.workers}: "
              f"CPU {cd / cp:.3f}, wall {wd / wp:.3f}")

    base, tip, cm = chain_of(mech, chain)
    S = one.attrs["samples"]
    req = one.request
    rng = np.random.default_rng(1)
    computed = np.argwhere(one.computed)
    dirs = one.rotations[:, :, 2]

    def constraints(v, s):
        p = one.grid.centers([np.ravel_multi_index(tuple(v), one.grid.shape)])[0]
        return p, dirs[s], [PositionConstraint(tip, p), PointAtConstraint(tip, p + dirs[s])]

    # a plain loop of solve_ik (defaults, from home) over random samples of the map
    picks = [(computed[rng.integers(len(computed))], rng.integers(len(dirs))) for _ in range(a.loop_samples)]
    if picks:
        c = time.process_time()
        hits = sum(solve_ik(cm, constraints(v, s)[2], None).success for v, s in picks)
        cl = time.process_time() - c
        print(f"plain solve_ik loop: {a.loop_samples} samples in {cl:.2f} s CPU, {a.loop_samples / cl:.0f} per CPU "
              f"second ({hits} reached; the map reached {sum(bool(one.reached[tuple(v)][s]) for v, s in picks)}); "
              f"map throughput over the loop's: {(S / c1) / (a.loop_samples / cl):.1f}x")

    # 1 % of the cells re-checked: Pinocchio FK of the stored configurations, independent solves at 20x budget
    import pinocchio as pin

    pm = pin.buildModelFromXML(to_urdf(cm))
    pd = pm.createData()
    fid = pm.getFrameId(tip)
    if a.fk_all:        # every voxel's stored configuration through Pinocchio FK
        c = time.process_time()
        idx = [cm.coordinate_index(pm.names[j]) for j in range(1, pm.njoints)]
        vs = np.argwhere(one.best_sample >= 0)
        bad = 0
        for v in vs:
            v = tuple(v)
            p, d, _ = constraints(v, one.best_sample[v])
            pin.framesForwardKinematics(pm, pd, one.q[v].astype(float)[idx])
            T = pd.oMf[fid]
            bad += bool(np.linalg.norm(T.translation - p) > 10 * req["tol_position"] or
                        np.arccos(np.clip(T.rotation[:, 2] @ d, -1, 1)) > 10 * req["tol_orientation"])
        print(f"Pinocchio FK of every reachable voxel's stored configuration ({time.process_time() - c:.0f} s CPU): "
              f"off target (10x the tolerances; stored as float32) in {bad}/{len(vs)}")
    n_cells = a.recheck_cells if a.recheck_cells is not None else max(a.min_cells, int(round(0.01 * len(computed))))
    cells = computed[rng.choice(len(computed), size=min(n_cells, len(computed)), replace=False)]
    fk_bad = fk_n = missed = unreached = disagree = reached_n = 0
    c = time.process_time()
    for v in cells:
        v = tuple(v)
        b = one.best_sample[v]
        if b >= 0:
            p, d, _ = constraints(v, b)
            q = one.q[v].astype(float)
            qp = np.array([q[cm.coordinate_index(pm.names[j])] for j in range(1, pm.njoints)])
            pin.framesForwardKinematics(pm, pd, qp)
            T = pd.oMf[fid]
            fk_n += 1
            if np.linalg.norm(T.translation - p) > 10 * req["tol_position"] or \
                    np.arccos(np.clip(T.rotation[:, 2] @ d, -1, 1)) > 10 * req["tol_orientation"]:
                fk_bad += 1
        for s in range(len(dirs)):
            p, d, cons = constraints(v, s)
            r = solve_ik(cm, cons, None, solver="dls", timeout=600, tol_position=req["tol_position"],
                         tol_orientation=req["tol_orientation"], max_iterations=a.recheck_iterations, rng=7)
            if one.reached[v][s]:
                reached_n += 1
                disagree += not r.success
            else:
                unreached += 1
                missed += r.success
    msg = (f"re-check of {len(cells)} cells ({time.process_time() - c:.0f} s CPU): Pinocchio FK of the stored "
          f"configurations off target in {fk_bad}/{fk_n}; reached samples the independent solve did not reach "
          f"{disagree}/{reached_n}; unreached samples the 20x-budget solve reached {missed}/{unreached} "
          f"({100 * missed / max(1, unreached):.2f} %)")
    print(msg)
    if a.recheck_unreached:
        un = np.argwhere(one.computed[..., None] & ~one.reached)
        pick = un[rng.choice(len(un), size=min(a.recheck_unreached, len(un)), replace=False)]
        c = time.process_time()
        hits = 0
        for u in pick:
            _, _, cons = constraints(u[:3], u[3])
            hits += solve_ik(cm, cons, None, solver="dls", timeout=600, tol_position=req["tol_position"],
                             tol_orientation=req["tol_orientation"], max_iterations=a.recheck_iterations,
                             rng=7).success
        print(f"{len(pick)} random unreached samples of the map re-tried at 20x budget "
              f"({time.process_time() - c:.0f} s CPU): {hits} reached ({100 * hits / max(1, len(pick)):.2f} %); "
              f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
