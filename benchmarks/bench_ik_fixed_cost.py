"""``solve_ik`` before and after a change, in one process, on the TRAC-IK protocol's targets (bench_ik.py's arms,
targets and seeds): the package at an earlier commit (or a prepared copy of it) imported as ``mmc_before``
beside the current one, each target solved by both in alternating order, CPU time per solve
(``time.process_time``), and every answer compared field by field (joint values, success, reason, solver,
iterations, restarts, levels, each residual's errors and vector): "identical" counts the targets where all of
them are equal bit for bit. A difference with the 5 ms budget can be a deadline met on one side only (a loaded
machine); ``--timeout 60`` takes time out of the comparison.

    python benchmarks/bench_ik_fixed_cost.py --before 2bf47b3 --arms ur5,iiwa14,panda --n 300 --rounds 2
    python benchmarks/bench_ik_fixed_cost.py --before-dir /tmp/old/mechanism_model_core --n 300
    python benchmarks/bench_ik_fixed_cost.py --before main --arms baxter,xarm6 --urdf xarm6=/tmp/xarm6.urdf

``--before-dir``: a directory holding a copy of the package (``mechanism_model_core/mechanism_model_core``
of another checkout, with changes undone by hand, say). Medians over all timed solves of a seed mode, and the
median over targets of each target's fastest round (the pre-emption of a shared machine left out).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_ik  # noqa: E402
from bench_kinematics import load_before  # noqa: E402

from mechanism_model_core.constraints import PoseConstraint  # noqa: E402
from mechanism_model_core.ik import solve_ik  # noqa: E402


def load_dir(path: str, tmpdir: str):
    """The package copy at ``path`` imported as ``mmc_before``."""
    shutil.copytree(path, os.path.join(tmpdir, "mmc_before"), symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, tmpdir)
    try:
        return importlib.import_module("mmc_before")
    finally:
        sys.path.remove(tmpdir)


def same(a, b) -> bool:
    """Every field of two IKResults equal (NaN equal to NaN), the time aside."""
    if not (np.array_equal(a.q, b.q) and (a.success, a.reason, a.iterations, a.restarts, a.solver, a.levels,
                                          a.levels_met, a.message, tuple(a.coordinate_names))
            == (b.success, b.reason, b.iterations, b.restarts, b.solver, b.levels, b.levels_met, b.message,
                tuple(b.coordinate_names)) and len(a.residuals) == len(b.residuals)):
        return False
    return all((x.name, x.kind, x.priority, x.satisfied) == (y.name, y.kind, y.priority, y.satisfied)
               and np.array_equal([x.position, x.orientation], [y.position, y.orientation], equal_nan=True)
               and np.array_equal(x.vector, y.vector) for x, y in zip(a.residuals, b.residuals))


def run_arm(name, n, rounds, timeout, seed=2026):
    arm = bench_ik.Arm(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m_before = importlib.import_module("mmc_before.io.urdf").load_urdf(arm.path)
    PC_before = importlib.import_module("mmc_before.constraints").PoseConstraint
    solve_before = importlib.import_module("mmc_before.ik").solve_ik
    rng = np.random.default_rng(seed)
    Ts = [arm.pose(q) for q in rng.uniform(arm.lo, arm.hi, size=(n, arm.dof))]
    seeds = {"random": rng.uniform(arm.lo, arm.hi, size=(n, arm.dof)),
             "mid": np.tile(0.5 * (arm.lo + arm.hi), (n, 1))}
    kw = dict(timeout=timeout, tol_position=bench_ik.TOL, tol_orientation=bench_ik.TOL)

    def full(m, qc):
        q = np.array(m.home, dtype=float)
        q[arm.coords] = qc
        return q

    sides = {"before": lambda T, s: solve_before(m_before, PC_before(arm.tip, T), full(m_before, s), **kw),
             "after": lambda T, s: solve_ik(arm.m, PoseConstraint(arm.tip, T), full(arm.m, s), **kw)}
    for k in range(min(20, n)):                              # caches built outside the timing
        for f in sides.values():
            f(Ts[k], seeds["random"][k])
    rows = []
    for mode in ("random", "mid"):
        times = {s: [] for s in sides}
        best = {s: np.full(n, np.inf) for s in sides}
        identical, ok, solvers = 0, {s: 0 for s in sides}, {}
        for r in range(rounds):
            for k in range(n):
                order = ("before", "after") if (k + r) % 2 else ("after", "before")
                res = {}
                for s in order:
                    t0 = time.process_time()
                    res[s] = sides[s](Ts[k], seeds[mode][k])
                    dt = time.process_time() - t0
                    times[s].append(dt)
                    best[s][k] = min(best[s][k], dt)
                if r == 0:
                    identical += same(res["before"], res["after"])
                    for s in sides:
                        ok[s] += arm.judge(res[s].q[arm.coords], Ts[k])
                    solvers[res["after"].solver] = solvers.get(res["after"].solver, 0) + 1
        row = dict(arm=name, mode=mode, before=1e3 * np.median(times["before"]), after=1e3 * np.median(times["after"]),
                   best_before=1e3 * np.median(best["before"]), best_after=1e3 * np.median(best["after"]),
                   identical=identical, n=n, ok_before=ok["before"], ok_after=ok["after"], solver=max(solvers, key=solvers.get))
        rows.append(row)
        print(f"| {name} | {mode} | {row['solver']} | {row['before']:.4f} | {row['after']:.4f} | "
              f"{1e3 * (row['before'] - row['after']):.1f} | {row['after'] / row['before']:.3f} | "
              f"{1e3 * (row['best_before'] - row['best_after']):.1f} | {identical}/{n} | "
              f"{row['ok_before']} / {row['ok_after']} |", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--before", metavar="COMMIT", help="the package at this commit")
    g.add_argument("--before-dir", metavar="DIR", help="a copy of the package (the mechanism_model_core folder)")
    ap.add_argument("--arms", default="ur5,iiwa14,panda,xarm7")
    ap.add_argument("--n", type=int, default=300, help="targets per arm and seed mode")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=bench_ik.BUDGET)
    ap.add_argument("--urdf", action="append", default=[], metavar="NAME=PATH[:BASE:TIP]",
                    help="an arm from a URDF of your own (as bench_ik.py's); add NAME to --arms")
    a = ap.parse_args(argv)
    for spec in a.urdf:
        bench_ik.add_arm(spec)
    with tempfile.TemporaryDirectory() as tmp:
        if a.before:
            load_before(a.before, tmp)
        else:
            load_dir(a.before_dir, tmp)
        print(f"load average {os.getloadavg()[0]:.2f}; {a.n} targets per arm and seed mode, {a.rounds} rounds, "
              f"timeout {a.timeout} s")
        print("| arm | seeds | solver (after) | before, median CPU ms | after | saved us | after / before | "
              "saved us, fastest rounds | identical | Pinocchio-judged successes before / after |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name in a.arms.split(","):
            run_arm(name, a.n, a.rounds, a.timeout)
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
