"""The first ``solve_ik`` on a freshly loaded model, with and without ``prepare_ik`` (issue 20: "the first solve on
a model is as fast as the thousandth"), on the TRAC-IK protocol's arms (bench_ik.py's URDFs).

Per round and arm: the URDF loaded twice (two mechanisms that share nothing); on one the first solve of a random
reachable target from a random or mid-range seed (wall and CPU time: it builds the chain's closed form and its
criteria, the lane engine and its tables on the way, outside its 5 ms budget but not outside the caller's
wait); on the other ``prepare_ik(m, [tip])`` first (timed), then the same solve; then 200 more solves on the
prepared one (the "thousandth" solve: their median). The two first answers are compared field by field.
Medians over the rounds; the order of the two sides alternates per round.

    python benchmarks/bench_ik_first_solve.py --arms panda,baxter,iiwa14 --rounds 7
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_ik  # noqa: E402
from bench_ik_fixed_cost import same  # noqa: E402

from mechanism_model_core.constraints import PoseConstraint  # noqa: E402
from mechanism_model_core.ik import prepare_ik, solve_ik  # noqa: E402
from mechanism_model_core.io.urdf import load_urdf  # noqa: E402

KW = dict(timeout=bench_ik.BUDGET, tol_position=bench_ik.TOL, tol_orientation=bench_ik.TOL)


def _load(arm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_urdf(arm.path)


def _timed(f):
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return out, 1e3 * (time.perf_counter() - w), 1e3 * (time.process_time() - c)


def run_arm(name, rounds, seed=2026):
    arm = bench_ik.Arm(name)
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in ("plain_wall", "plain_cpu", "prep_wall", "prep_cpu", "first_wall", "first_cpu")}
    later, identical = [], 0
    for r in range(rounds):
        T = arm.pose(rng.uniform(arm.lo, arm.hi))
        seed_q = arm.full(0.5 * (arm.lo + arm.hi) if r % 2 else rng.uniform(arm.lo, arm.hi))
        res = {}
        for side in (("plain", "prepared") if r % 2 else ("prepared", "plain")):
            m = _load(arm)
            if side == "prepared":
                _, w, c = _timed(lambda: prepare_ik(m, [arm.tip]))
                rows["prep_wall"].append(w)
                rows["prep_cpu"].append(c)
            res[side], w, c = _timed(lambda: solve_ik(m, PoseConstraint(arm.tip, T), seed_q, **KW))
            key = "first" if side == "prepared" else "plain"
            rows[f"{key}_wall"].append(w)
            rows[f"{key}_cpu"].append(c)
            if side == "prepared":
                for q in rng.uniform(arm.lo, arm.hi, size=(200 // rounds + 1, arm.dof)):
                    Tk = arm.pose(q)
                    later.append(_timed(lambda: solve_ik(m, PoseConstraint(arm.tip, Tk), seed_q, **KW))[2])
        identical += same(res["plain"], res["prepared"])
    med = {k: float(np.median(v)) for k, v in rows.items()}
    print(f"| {name} | {med['plain_wall']:.2f} / {med['plain_cpu']:.2f} | {med['prep_wall']:.1f} / "
          f"{med['prep_cpu']:.1f} | {med['first_wall']:.3f} / {med['first_cpu']:.3f} | {np.median(later):.3f} | "
          f"{identical}/{rounds} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arms", default="panda,baxter,iiwa14")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--urdf", action="append", default=[], metavar="NAME=PATH[:BASE:TIP]")
    a = ap.parse_args(argv)
    for spec in a.urdf:
        bench_ik.add_arm(spec)
    print(f"load average {os.getloadavg()[0]:.2f}; {a.rounds} rounds per arm, medians, ms")
    print("| arm | first solve, not prepared: wall / CPU | prepare_ik: wall / CPU | first solve after prepare_ik: "
          "wall / CPU | later solves: CPU median | first answers identical |")
    print("|---|---|---|---|---|---|")
    for name in a.arms.split(","):
        run_arm(name, a.rounds)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
