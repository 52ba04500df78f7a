"""The generic IK paths (issue 20): prioritized, multi-constraint, coupled-joint and closed-chain problems, which
``solve_ik(solver="auto")`` gives to the prioritized DLS solver (the population LM takes one task on one
chain only). Measures whether screening several restart draws -- ``DLSSolver(restart_candidates=K)``: K
random in-limit draws, the attempt starts from the one with the smallest residuals -- raises the success
within a CPU budget or lowers the CPU time per solve. All variants run in one process, interleaved per
target (so load from elsewhere hits them alike).

Problems (targets are made by forward kinematics of random in-limit configurations, so every one is
reachable; each solve starts from another random in-limit configuration):

* ``prioritized``: Panda (test/data), the flange pose at priority 0 and the elbow (panda_link4) position at
  priority 1, both from the same configuration;
* ``multi``: Baxter (example-robot-data), both hands' poses at one priority (14 unknowns, two chains);
* ``coupled``: a 4-joint arm whose third joint follows sin(3 j2) and fourth 2 j1 (limits on both), a tip
  position (test_ik_solver_behaviour's arm);
* ``closed``: models/four_bar, the loop closure and the coupler's far end (closure_a) at a point of the
  closed linkage's path.

Success: the solver's report, re-checked by forward kinematics here (every level within tolerance, every
joint within its limits). Times: CPU time of the thread per solve; the budget is counted in CPU time
(``cancel`` set once the thread has used it), with a wall-clock safety net.

Usage::

    python benchmarks/bench_ik_paths.py --n 300 --candidates 1,4,t8,default --budget 0.05
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics, load_model  # noqa: E402
from mechanism_model_core.constraints import LoopClosure, PoseConstraint, PositionConstraint  # noqa: E402
from mechanism_model_core.ik import solve_ik  # noqa: E402
from mechanism_model_core.ik.solvers import DLSSolver  # noqa: E402
from mechanism_model_core.library import model_path  # noqa: E402
from mechanism_model_core.spatial import translation  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_ik import _erd_root  # noqa: E402  (the example-robot-data wheel's robots folder)

TOL_P, TOL_O = 1e-6, 1e-5


class CpuBudget:
    """``cancel`` for solve_ik: set once the calling thread has used ``budget`` s of CPU."""

    def __init__(self, budget):
        self.end = time.thread_time() + budget

    def is_set(self):
        return time.thread_time() > self.end


def coupled_arm():
    b = MechanismBuilder("coupled")
    b.add_body("l1", None, Joint.revolute("j1", lower=-2, upper=2))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(1, 0, 0), axis=(0, 1, 0), lower=-2.5, upper=2.5))
    b.add_body("l3", "l2", Joint.revolute("j3", translation(1, 0, 0), axis=(0, 1, 0), lower=-0.5, upper=0.5,
                                          coupling="sin(3*j2)"))
    b.add_body("l4", "l3", Joint.revolute("j4", translation(0.5, 0, 0), axis=(0, 1, 0), lower=-1, upper=1,
                                          coupling="2*j1"))
    b.add_frame("l4", "tip", translation(0.5, 0, 0))
    return b.build()


def _random_q(m, rng):
    return m.random_configuration(rng)


def problems(rng, n):
    """name -> (mechanism, [constraints per target], [seed per target])."""
    out = {}
    panda = load_model(os.path.join(HERE, "..", "test", "data", "robots", "panda", "panda.urdf"))
    cs, seeds = [], []
    for _ in range(n):
        fk = forward_kinematics(panda, _random_q(panda, rng))
        cs.append([PoseConstraint("panda_link8", fk.pose("panda_link8"), priority=0),
                   PositionConstraint("panda_link4", fk.pose("panda_link4")[:3, 3], priority=1)])
        seeds.append(_random_q(panda, rng))
    out["prioritized"] = (panda, cs, seeds)

    root = _erd_root()
    if root is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bax = load_model(os.path.join(root, "baxter_description", "urdf", "baxter.urdf"))
        cs, seeds = [], []
        for _ in range(n):
            fk = forward_kinematics(bax, _random_q(bax, rng))
            cs.append([PoseConstraint("left_hand_link", fk.pose("left_hand_link")),
                       PoseConstraint("right_hand_link", fk.pose("right_hand_link"))])
            seeds.append(_random_q(bax, rng))
        out["multi"] = (bax, cs, seeds)

    arm = coupled_arm()
    cs, seeds = [], []
    for _ in range(n):
        fk = forward_kinematics(arm, _random_q(arm, rng))
        cs.append([PositionConstraint("tip", fk.pose("tip")[:3, 3])])
        seeds.append(_random_q(arm, rng))
    out["coupled"] = (arm, cs, seeds)

    fb = load_model(model_path("four_bar/four_bar.xml"))
    closure = LoopClosure("closure_b", "closure_a", mask=(1, 1, 1, 0, 0, 0))
    cs, seeds = [], []
    while len(cs) < n:
        q = _random_q(fb, rng)
        r = solve_ik(fb, closure, q, locked=["crank"], timeout=0.5)     # a closed configuration
        if not r.success:
            continue
        p = forward_kinematics(fb, r.q).pose("closure_a")[:3, 3]
        cs.append([closure, PositionConstraint("closure_a", p, mask=(1, 1, 0))])
        seeds.append(_random_q(fb, rng))
    out["closed"] = (fb, cs, seeds)
    return out


def verified(m, cs, r):
    """FK re-check of a result: limits and every constraint's residual within tolerance."""
    q = r.q
    if not (np.all(q >= m.lower_limits - 1e-9) and np.all(q <= m.upper_limits + 1e-9)):
        return False
    fk = forward_kinematics(m, q)
    for c in cs:
        if isinstance(c, PoseConstraint):
            F = fk.pose(c.frame)
            dR = F[:3, :3] @ c.target[:3, :3].T
            ang = math.acos(max(-1.0, min(1.0, (np.trace(dR) - 1) / 2)))
            if np.linalg.norm(F[:3, 3] - c.target[:3, 3]) > TOL_P * 1.01 or ang > TOL_O * 1.01 + 1e-7:
                return False
        elif isinstance(c, PositionConstraint):
            d = (fk.pose(c.frame)[:3, 3] - np.asarray(c.target_xyz)) * np.asarray(c.mask, dtype=float)
            if np.linalg.norm(d) > TOL_P * 1.01:
                return False
        elif isinstance(c, LoopClosure):
            d = fk.pose(c.frame_a)[:3, 3] - fk.pose(c.frame_b)[:3, 3]
            if np.linalg.norm(d) > TOL_P * 1.01:
                return False
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--candidates", default="1,default",
                    help="variants: K = DLSSolver(restart_candidates=K, nearest_starts=0) (1: plain random "
                         "restarts, the solver before 2026-11-27), tN = DLSSolver(nearest_starts=N, "
                         "restart_candidates=1), default = DLSSolver()")
    ap.add_argument("--budget", type=float, default=0.005, help="CPU budget per solve, s")
    ap.add_argument("--only", default="")
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args(argv)
    # variants: K (restart_candidates) or tN (the seed table's N nearest entries as the first restarts)
    Ks = [k for k in a.candidates.split(",") if k]
    rng = np.random.default_rng(a.seed)
    probs = problems(rng, a.n)
    load0 = os.getloadavg()[0]
    print(f"load {load0:.1f}; CPU budget {1e3 * a.budget:g} ms; {a.n} targets; candidates {Ks}")
    for name, (m, cs, seeds) in probs.items():
        if a.only and name not in a.only.split(","):
            continue
        solvers = {K: (DLSSolver() if K == "default" else
                       DLSSolver(nearest_starts=int(K[1:]), restart_candidates=1) if K.startswith("t")
                       else DLSSolver(restart_candidates=int(K), nearest_starts=0)) for K in Ks}
        for s in solvers.values():     # build every cache outside the measurement
            solve_ik(m, cs[0], seeds[0], solver=s, timeout=0.05, tol_position=TOL_P, tol_orientation=TOL_O)
        ok = {K: [] for K in Ks}
        t = {K: [] for K in Ks}
        rs = {K: [] for K in Ks}
        for k in range(a.n):
            for K in Ks:
                t0 = time.thread_time()
                r = solve_ik(m, cs[k], seeds[k], solver=solvers[K], timeout=2.0, tol_position=TOL_P,
                             tol_orientation=TOL_O, cancel=CpuBudget(a.budget), rng=k)
                dt = time.thread_time() - t0
                t[K].append(dt * 1e3)
                ok[K].append(r.success and verified(m, cs[k], r) and dt <= a.budget)
                rs[K].append(r.restarts)
        for K in Ks:
            print(f"{name:12s} {K:>4s} success {100 * np.mean(ok[K]):6.2f} %  median {np.median(t[K]):.3f} ms  "
                  f"p95 {np.percentile(t[K], 95):.3f} ms  mean restarts {np.mean(rs[K]):.2f}", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
