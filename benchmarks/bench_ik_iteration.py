"""One iteration of the exact-chain refinement, before and after in one process: the lane engine's one-lane
evaluation (``LaneEngine._eval1``: the chain's pose and Jacobian of one configuration and the pose residual)
and its damped step with joint limits (``LaneEngine._step_one``), the package at an earlier commit (imported
as ``mmc_before``) beside the current one.

    python benchmarks/bench_ik_iteration.py --before 4672b16 --arms baxter,panda,ur5 --urdf xarm6=/tmp/xarm6.urdf

Per arm: the engine of a full pose on the arm's tip (every chain joint free), and one with the chain's first
joint held (a held base's pass). For each of ``--n`` random in-limit configurations and targets (a
configuration a little off, so that a step is Gauss-Newton-sized; every tenth a random one), both versions
are timed back to back, the order alternating, ``--reps`` calls each, in CPU time
(``time.process_time``). Prints the median microseconds per call of each, their ratio, and the largest
differences between the two versions' residuals, Jacobians and steps (the same arithmetic but for rounding).
"""

from __future__ import annotations

import argparse
import importlib
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


def _engine(core, arm, held):
    def mod(name):
        return importlib.import_module(f"{core.__name__}.{name}")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = mod("io.urdf").load_urdf(arm.path)
    c = mod("constraints").PoseConstraint(arm.tip, np.eye(4)).bind(m)
    locked = [arm.names[0]] if held else []
    E = mod("ik.batch").chain_engine(mod("ik.problem").IKProblem(m, [c], m.home, locked, [c]))
    if E is None:
        raise SystemExit(f"{arm.name}: no lane engine")
    return E


def _timed(f, reps):
    t0 = time.process_time()
    for _ in range(reps):
        f()
    return (time.process_time() - t0) / reps * 1e6


def run(arm, cores, n, reps, held, seed=0):
    engines = {who: _engine(core, arm, held) for who, core in cores.items()}
    E = engines["after"]
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(E.lo), np.asarray(E.hi)
    times = {(who, what): [] for who in engines for what in ("eval", "step")}
    diff = {"r": 0.0, "J": 0.0, "step": 0.0}
    for k in range(n):
        x = rng.uniform(lo, hi)
        xt = rng.uniform(lo, hi) if k % 10 == 0 else np.clip(x + rng.normal(0.0, 0.05, x.shape), lo, hi)
        qt = np.array(arm.lo + 0.5 * (arm.hi - arm.lo))
        qt[-len(xt):] = xt
        T = arm.pose(qt)
        pt, RtT = T[:3, 3].copy(), T[:3, :3].T.copy()
        out = {}
        order = list(engines) if k % 2 == 0 else list(engines)[::-1]
        for who in order:
            Ew = engines[who]
            r, J, ep, er = Ew._eval1(x, pt, RtT)
            lam = 1e-3 * float(r @ r) + 1e-12
            times[(who, "eval")].append(_timed(lambda: Ew._eval1(x, pt, RtT), reps))
            times[(who, "step")].append(_timed(lambda: Ew._step_one(x, r, J, lam), reps))
            out[who] = (r, np.asarray(J), Ew._step_one(x, r, J, lam)[0])
        (ra, Ja, sa), (rb, Jb, sb) = out["after"], out["before"]
        diff["r"] = max(diff["r"], float(np.abs(ra - rb).max()))
        diff["J"] = max(diff["J"], float(np.abs(Ja - Jb).max()))
        diff["step"] = max(diff["step"], float(np.abs(sa - sb).max()))
    med = {key: float(np.median(v)) for key, v in times.items()}
    return med, diff, E.nv


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the earlier commit")
    ap.add_argument("--n", type=int, default=200, help="configurations per arm")
    ap.add_argument("--reps", type=int, default=200, help="calls per configuration and version")
    ap.add_argument("--arms", default="baxter,panda,ur5")
    ap.add_argument("--urdf", action="append", default=[], metavar="NAME=PATH[:BASE:TIP]",
                    help="an arm from a URDF file (as bench_ik.py's --urdf), added to --arms")
    a = ap.parse_args(argv)
    names = [s for s in a.arms.split(",") if s] + [bench_ik.add_arm(s) for s in a.urdf]
    import mechanism_model_core as after
    with tempfile.TemporaryDirectory() as tmp:
        before = load_before(a.before, tmp)
        cores = {"before": before, "after": after}
        load0 = os.getloadavg()[0]
        print(f"before = {a.before}, CPU us per call (median over {a.n} configurations of {a.reps} calls each)")
        print("| arm | unknowns | eval before | eval after | ratio | step before | step after | ratio "
              "| eval + step saved | max diff r | J | step |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name in names:
            arm = bench_ik.Arm(name)
            for held in (False, True):
                med, d, nv = run(arm, cores, a.n, a.reps, held)
                eb, ea = med[("before", "eval")], med[("after", "eval")]
                sb, sa = med[("before", "step")], med[("after", "step")]
                label = f"{name} (first joint held)" if held else name
                print(f"| {label} | {nv} | {eb:.2f} | {ea:.2f} | {ea / eb:.2f} | {sb:.2f} | {sa:.2f} | "
                      f"{sa / sb:.2f} | {eb + sb - ea - sa:.2f} | {d['r']:.1e} | {d['J']:.1e} | {d['step']:.1e} |")
        print(f"load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
