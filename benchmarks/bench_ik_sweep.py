"""Before and after, in one process: ``solve_ik`` on the 7-joint arms the closed form solves through a free-joint
sweep (Panda, iiwa14, Z1, TALOS arm), the package at an earlier commit (imported as ``mmc_before`` beside the
current one) against the current code.

    python benchmarks/bench_ik_sweep.py --before 48a8e5b --n 1000

The TRAC-IK protocol of ``bench_ik.py`` (random in-limit configurations give the targets; seeds random or the
middle of the ranges; tolerance 1e-5; 5 ms of CPU per solve; every answer judged by Pinocchio, within limits).
Each arm is loaded by both packages from the same URDF; per target the two solves run back to back, the order
alternating, each timed with ``time.process_time`` (this process's CPU time); caches are built by 10 solves
first. Prints per arm and seed mode the median and 95th
percentile CPU ms of each, the ratio of the medians (after / before), the successes judged by Pinocchio and
those within the 5 ms CPU budget, and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_ik  # noqa: E402
from bench_kinematics import load_before  # noqa: E402

ARMS = ("iiwa14", "panda", "z1", "talos_arm")


def _solver(core, arm):
    """``solve(T, seed) -> chain joint values`` of package ``core`` on ``arm``'s URDF (protocol settings)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = core.io.urdf.load_urdf(arm.path)
    PoseConstraint, solve_ik = core.constraints.PoseConstraint, core.ik.solve_ik
    home = np.array(m.home, dtype=float)
    coords = np.array([m.coordinate_index(n) for n in arm.names])

    def solve(T, seed):
        q = home.copy()
        q[coords] = seed
        # the budget in CPU time (bench_ik's --cpu-budget pass): a loaded machine's pre-emption ends no solve
        r = solve_ik(m, PoseConstraint(arm.tip, T), q, timeout=bench_ik.WALL_NET, tol_position=bench_ik.TOL,
                     tol_orientation=bench_ik.TOL, cancel=bench_ik.CpuBudget(bench_ik.BUDGET))
        return r.q[coords]

    return solve


def run(arm, cores, n, seed=0):
    rng = np.random.default_rng(seed)
    Qt = rng.uniform(arm.lo, arm.hi, size=(n, arm.dof))
    Ts = [arm.pose(q) for q in Qt]
    seeds = {"random": rng.uniform(arm.lo, arm.hi, size=(n, arm.dof)),
             "mid": np.tile(0.5 * (arm.lo + arm.hi), (n, 1))}
    solvers = {who: _solver(core, arm) for who, core in cores.items()}
    for solve in solvers.values():                 # build the caches (solvers, tables) outside the timing
        for k in range(min(n, 10)):
            solve(Ts[k], seeds["random"][k])
    rows = []
    for mode, S in seeds.items():
        times = {who: np.zeros(n) for who in solvers}
        ok = {who: np.zeros(n, dtype=bool) for who in solvers}
        order = list(solvers)
        load0 = os.getloadavg()[0]
        for k in range(n):
            for who in (order if k % 2 == 0 else order[::-1]):
                t0 = time.process_time()
                q = solvers[who](Ts[k], S[k])
                times[who][k] = (time.process_time() - t0) * 1e3
                ok[who][k] = arm.judge(q, Ts[k])
        load = (load0 + os.getloadavg()[0]) / 2
        b, a = times["before"], times["after"]
        rows.append((arm.name, mode, np.median(b), np.median(a), np.percentile(b, 95), np.percentile(a, 95),
                     ok["before"].mean(), ok["after"].mean(), np.mean(ok["before"] & (b <= 5.0)),
                     np.mean(ok["after"] & (a <= 5.0)), load))
        r = rows[-1]
        print(f"{r[0]:10s} {r[1]:6s} median {r[2]:.3f} -> {r[3]:.3f} ms ({r[3] / r[2]:.2f}x)  p95 {r[4]:.3f} -> "
              f"{r[5]:.3f}  success {100 * r[6]:.2f} -> {100 * r[7]:.2f} %  within 5 ms CPU {100 * r[8]:.2f} -> "
              f"{100 * r[9]:.2f} %  load {r[10]:.1f}", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the earlier commit")
    ap.add_argument("--n", type=int, default=500, help="targets per arm and seed mode")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--urdf", action="append", default=[], metavar="NAME=PATH[:BASE:TIP]",
                    help="an arm from a URDF file (as bench_ik.py's --urdf), added to --arms")
    args = ap.parse_args(argv)
    extra = [bench_ik.add_arm(spec) for spec in args.urdf]
    import mechanism_model_core as now_core
    import mechanism_model_core.io.urdf  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        before = load_before(args.before, tmp)
        import importlib
        importlib.import_module("mmc_before.io.urdf")
        cores = {"before": before, "after": now_core}
        for name in [a for a in args.arms.split(",") if a] + extra:
            run(bench_ik.Arm(name), cores, args.n)


if __name__ == "__main__":
    main()
