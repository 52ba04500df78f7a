"""Reachability maps (issue 22): time on one core, on two local workers and on a Dask LocalCluster; throughput
against a plain loop of ``solve_ik``; a random 1 % of the cells re-checked independently.

Robots: the MER instrument arm (``mer/mer_idd.xml``, chain ``ground:mi``, 5 DOF) and the Panda
(``benchmarks/common.py``, chain ``panda_link0:panda_link8``, 7 DOF); pose mode, ``--directions`` Fibonacci
approach directions per voxel for the tool's z axis, roll free, the map's default IK settings.

Times: wall clock and CPU seconds. The machine is shared (its load average is printed), so the comparisons
use CPU time: one core's is the process's ``time.process_time``; with workers, the sum over chunks of each
chunk's CPU time on its worker (``ReachMap.stats['worker_cpu']``), plus the driver's. Parallel efficiency is
one core's CPU over the workers' total (1.0: no overhead; the two-worker speed-up on an idle machine is at
most ``workers x efficiency``); the Dask overhead is the Dask run's total CPU (workers and driver) over the
pool's.

Search: the map's default flood search; with ``--exhaustive`` the exhaustive search (every sample the whole
budget) too, on one core in the same process, for the ratio between the two.

Checks: the three runs give identical maps (seeded sampling); on a random 1 % of the cells (at least
``--min-cells``), every reached sample's stored best configuration is put through Pinocchio FK (tool on the
voxel centre within the tolerance, approach axis along the sample's direction), every sample is solved again
on its own with ``solve_ik`` (position + pointing constraints, the map's tolerances, a different solver: the
DLS loop) with 4000 iterations (20x the 200 a single DLS solve of the same search gets; the map's 1000 are
lane-iterations shared by up to 6 seeds), and the samples the map missed that this finds are counted; with
``--recheck-unreached N``, also N random unreached samples of the whole map re-tried the same way.

Usage::

    python benchmarks/bench_reach.py --robot mer --resolution 0.25 --directions 50 --min-cells 3 --recheck-unreached 200
    python benchmarks/bench_reach.py --robot panda --resolution 0.4 --directions 20 --min-cells 3 --loop-samples 60 --skip-dask
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
from mechanism_model_core.reach.map import chain_of  # noqa: E402


def robot(name):
    if name == "mer":
        return load_model(model_path("mer/mer_idd.xml")), "ground:mi"
    from common import build_mechanism, panda

    return build_mechanism(panda()), "panda_link0:panda_link8"


def same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k), equal_nan=True)
               for k in ("index", "reached", "manipulability", "margin", "q", "best_sample"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robot", default="mer", choices=("mer", "panda"))
    ap.add_argument("--resolution", type=float, default=0.15)
    ap.add_argument("--directions", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--loop-samples", type=int, default=300)
    ap.add_argument("--min-cells", type=int, default=10)
    ap.add_argument("--skip-dask", action="store_true")
    ap.add_argument("--skip-pool", action="store_true")
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

    t, c = time.perf_counter(), time.process_time()
    one = compute_map(mech, chain, a.resolution, executor="serial", **kw)
    w1, c1 = time.perf_counter() - t, time.process_time() - c
    S = one.attrs["samples"]
    print(f"one core: {S} samples ({int(one.computed.sum())} voxels in {one.stats['chunks']} chunks of "
          f"{one.request['chunk_size']}), {w1:.1f} s wall, {c1:.1f} s CPU, {S / c1:.0f} samples per CPU second; "
          f"{int((one.index > 0).sum())} reachable voxels, {int(one.reached.sum())} samples reached; "
          f"load {os.getloadavg()[0]:.1f}")

    if a.exhaustive:
        c = time.process_time()
        ex = compute_map(mech, chain, a.resolution, executor="serial", search="exhaustive", **kw)
        ce = time.process_time() - c
        print(f"exhaustive search, one core: {ce:.1f} s CPU, {S / ce:.0f} samples per CPU second, "
              f"{int(ex.reached.sum())} samples reached; flood over exhaustive {ce / c1:.1f}x; samples only the "
              f"exhaustive reached {int((ex.reached & ~one.reached).sum())}, only the flood "
              f"{int((one.reached & ~ex.reached).sum())}")
    if a.skip_pool:
        c2 = None
    t, c = time.perf_counter(), time.process_time()
    pool = None if a.skip_pool else compute_map(mech, chain, a.resolution, executor="pool", workers=a.workers, **kw)
    if pool is not None:
        w2, c2 = time.perf_counter() - t, time.process_time() - c + pool.stats["worker_cpu"]
        print(f"pool x{a.workers}: {w2:.1f} s wall, {c2:.1f} s CPU (workers {pool.stats['worker_cpu']:.1f}); "
          f"efficiency {c1 / c2:.3f}; identical to one core: {same(one, pool)}; load {os.getloadavg()[0]:.1f}")
    if not a.skip_dask:
        t, c = time.perf_counter(), time.process_time()
        dk = compute_map(mech, chain, a.resolution, executor="dask", workers=a.workers, **kw)
        w3, c3 = time.perf_counter() - t, time.process_time() - c + dk.stats["worker_cpu"]
        print(f"dask LocalCluster x{a.workers}: {w3:.1f} s wall, {c3:.1f} s CPU (workers "
              f"{dk.stats['worker_cpu']:.1f}); CPU over the pool's {c3 / c2 if c2 else float('nan'):.3f}; "
              f"identical: {same(one, dk)}; "
              f"load {os.getloadavg()[0]:.1f}")

    base, tip, cm = chain_of(mech, chain)
    req = one.request
    rng = np.random.default_rng(1)
    computed = np.argwhere(one.computed)
    dirs = one.rotations[:, :, 2]

    def constraints(v, s):
        p = one.grid.centers([np.ravel_multi_index(tuple(v), one.grid.shape)])[0]
        return p, dirs[s], [PositionConstraint(tip, p), PointAtConstraint(tip, p + dirs[s])]

    # a plain loop of solve_ik (defaults, from home) over random samples of the map
    picks = [(computed[rng.integers(len(computed))], rng.integers(len(dirs))) for _ in range(a.loop_samples)]
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
