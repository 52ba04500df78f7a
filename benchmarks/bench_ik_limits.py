"""IK of targets with several joints at their limits (stow poses, arms folded against their stops).

Targets are the tip poses of configurations whose joints are drawn from {lower, upper, middle, quarter points}
of their ranges (probabilities 0.25, 0.25, 0.2, 0.15, 0.15); each target is solved from a random in-limit seed,
from the middle of the ranges, and from a seed with every joint at one of its limits. Every answer is judged
with Pinocchio (within the limits, 1e-5 m and rad), as in ``bench_ik.py`` (whose arms this uses). Prints the
failures per arm and seed mode with their reasons and solvers.

Usage::

    python benchmarks/bench_ik_limits.py --n 1500 --seed 7 --arms xarm7,baxter,tiago,z1,iiwa14,panda,ur5
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_ik as B  # noqa: E402

from mechanism_model_core.constraints import PoseConstraint  # noqa: E402
from mechanism_model_core.ik import solve_ik  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="targets per arm")
    ap.add_argument("--seed", type=int, default=0, help="generator seed of the targets and seeds")
    ap.add_argument("--arms", default="xarm7,baxter,tiago,z1,iiwa14,panda,ur5")
    ap.add_argument("--timeout", type=float, default=0.05, help="budget per solve (s, wall clock)")
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; {a.n} targets per arm and seed mode, timeout {a.timeout} s")
    for name in a.arms.split(","):
        arm = B.Arm(name)
        rng = np.random.default_rng(a.seed)
        n = arm.dof
        bad = collections.defaultdict(list)
        cpu = time.process_time()
        for _ in range(a.n):
            uq = rng.choice([0.0, 1.0, 0.5, 0.25, 0.75], size=n, p=[.25, .25, .2, .15, .15])
            for mode in ("random", "mid", "limit"):
                us = (rng.uniform(0, 1, n) if mode == "random" else np.full(n, .5) if mode == "mid"
                      else rng.choice([0.0, 1.0], size=n))
                q, s = arm.lo + uq * (arm.hi - arm.lo), arm.lo + us * (arm.hi - arm.lo)
                T = arm.pose(q)
                r = solve_ik(arm.m, PoseConstraint(arm.tip, T), arm.full(s), timeout=a.timeout, tol_position=1e-5,
                             tol_orientation=1e-5)
                if not arm.judge(r.q[arm.coords], T):
                    bad[mode].append(f"{r.reason}/{r.solver}")
        cpu = (time.process_time() - cpu) / (3 * a.n) * 1e3
        failures = {m: (len(v), dict(collections.Counter(v))) for m, v in bad.items()}
        print(f"{name}: {sum(len(v) for v in bad.values())} failures of {3 * a.n} {failures or ''} "
              f"(mean CPU {cpu:.3f} ms per solve)", flush=True)


if __name__ == "__main__":
    main()
