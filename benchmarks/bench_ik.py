"""Inverse-kinematics benchmark: mechanism_model_core next to roboticstoolbox (``ik_LM`` in C++, ``ikine_LM``
in Python), ikpy, kinpy and a Pinocchio damped-least-squares loop.

Protocol (issue 4): for each robot of ``common.py`` (UR5, Panda, 10-joint chain), targets are the flange poses
of N random in-limit configurations; every solve starts from the same fixed seed configuration; a solve
succeeds when the forward kinematics of its answer is within 1e-5 m and 1e-4 rad of the target AND every joint
is within its limits. Every answer is checked with the same forward kinematics (mechanism_model_core's, which
is first cross-checked against Pinocchio on the targets). Times are wall-clock per solve, including building
the target object each library needs; each target is solved ``--repeat`` times (3) by the fast solvers and
the fastest counts, which filters pre-emption by other processes on a shared machine (ours and the Pinocchio
loop repeat exactly the same work; ik_LM draws its restarts at random, so its minimum is slightly flattering);
CPU time is reported as well.

Usage::

    python benchmarks/bench_ik.py                 # all robots, 500 targets (100 for the slow Python solvers)
    python benchmarks/bench_ik.py --n 100 --robots panda --only ours,rtb_ik_LM
    python benchmarks/bench_ik.py --write BENCHMARKS.md   # replace the IK table between its markers
"""

from __future__ import annotations

import argparse
import math
import os

# one BLAS thread for every library: the solves are small, and threads only add contention
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
import platform
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import (ROBOTS, build_ikpy, build_kinpy_serial, build_mechanism, build_pinocchio,  # noqa: E402
                    build_rtb)

TOL_POS = 1e-5
TOL_ROT = 1e-4
#: the fixed seed configuration of every solve (a usual "ready" pose; in limits, away from singularities)
SEEDS = {
    "ur5": [0.0, -1.5708, 1.5708, -1.5708, -1.5708, 0.0],
    "panda": [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785],
    "chain10": [0.0] * 10,
}
SLOW = {"rtb_ikine_LM", "ikpy", "kinpy"}
MARK_START = "<!-- bench_ik:start -->"
MARK_END = "<!-- bench_ik:end -->"


def _log3_norm(R):
    c = max(-1.0, min(1.0, 0.5 * (np.trace(R) - 1.0)))
    return math.acos(c)


class Checker:
    def __init__(self, mech, tip):
        from mechanism_model_core import forward_kinematics

        self.fk = forward_kinematics
        self.mech = mech
        self.tip = tip

    def errors(self, q, T):
        F = self.fk(self.mech, np.asarray(q, dtype=float)).pose(self.tip)
        return float(np.linalg.norm(F[:3, 3] - T[:3, 3])), _log3_norm(F[:3, :3] @ T[:3, :3].T)

    def success(self, q, T):
        q = np.asarray(q, dtype=float)
        if q.shape != (self.mech.nq,) or not np.all(np.isfinite(q)):
            return False
        p, o = self.errors(q, T)
        inside = bool(np.all(q >= self.mech.lower_limits) and np.all(q <= self.mech.upper_limits))
        return p < TOL_POS and o < TOL_ROT and inside


# ------------------------------------------------------------------ solvers: (setup) -> solve(T) -> q
def solver_ours(spec, mech, seed, tmp):
    from mechanism_model_core.constraints import PoseConstraint
    from mechanism_model_core.ik import solve_ik

    stats = {"restarts": [], "iterations": []}

    def solve(T):
        r = solve_ik(mech, PoseConstraint(spec.tip, T), seed)
        stats["restarts"].append(r.restarts)
        stats["iterations"].append(r.iterations)
        return r.q

    solve.stats = stats
    return solve


def solver_rtb_ik_LM(spec, mech, seed, tmp):
    robot = build_rtb(spec, tmp)

    def solve(T):
        out = robot.ik_LM(T, q0=seed, ilimit=30, slimit=100, tol=1e-12, joint_limits=True)
        return out.q if hasattr(out, "q") else out[0]     # IKSolution (rtb >= 1.1) or a tuple

    return solve


def solver_rtb_ikine_LM(spec, mech, seed, tmp):
    robot = build_rtb(spec, tmp)

    def solve(T):
        from spatialmath import SE3

        sol = robot.ikine_LM(SE3(T, check=False), q0=seed, ilimit=30, slimit=100, tol=1e-12, joint_limits=True)
        return sol.q

    return solve


def solver_ikpy(spec, mech, seed, tmp):
    chain = build_ikpy(spec, tmp)
    active = [i for i, a in enumerate(chain.active_links_mask) if a]
    init = np.zeros(len(chain.links))
    init[active] = seed

    def solve(T):
        full = chain.inverse_kinematics_frame(T, initial_position=init, orientation_mode="all")
        return np.asarray(full)[active]

    return solve


def solver_kinpy(spec, mech, seed, tmp):
    import kinpy

    chain = build_kinpy_serial(spec)

    def solve(T):
        from scipy.spatial.transform import Rotation

        x, y, z, w = Rotation.from_matrix(T[:3, :3]).as_quat()
        return chain.inverse_kinematics(kinpy.Transform(rot=[w, x, y, z], pos=T[:3, 3]), np.array(seed))

    return solve


def solver_pinocchio_dls(spec, mech, seed, tmp):
    """The damped-least-squares loop of Pinocchio's examples/inverse-kinematics.py (LOCAL Jacobian, Jlog6,
    step 0.1, damping 1e-12, up to 1000 iterations), stopping at |log6| < 1e-6; no joint limits."""
    import pinocchio as pin

    model, data = build_pinocchio(spec)
    fid = model.getFrameId(spec.tip)
    q0 = np.array(seed, dtype=float)

    def solve(T):
        target = pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())
        q = q0.copy()
        for _ in range(1000):
            pin.framesForwardKinematics(model, data, q)
            iMd = data.oMf[fid].actInv(target)
            err = pin.log(iMd).vector
            if np.linalg.norm(err) < 1e-6:
                break
            J = pin.computeFrameJacobian(model, data, q, fid)
            J = -np.dot(pin.Jlog6(iMd.inverse()), J)
            v = -J.T.dot(np.linalg.solve(J.dot(J.T) + 1e-12 * np.eye(6), err))
            q = pin.integrate(model, q, v * 0.1)
        return q

    return solve


SOLVERS = {
    "ours": solver_ours,
    "rtb_ik_LM": solver_rtb_ik_LM,
    "rtb_ikine_LM": solver_rtb_ikine_LM,
    "ikpy": solver_ikpy,
    "kinpy": solver_kinpy,
    "pinocchio_dls": solver_pinocchio_dls,
}
LABELS = {
    "ours": "mechanism_model_core `solve_ik` (dls)",
    "rtb_ik_LM": "roboticstoolbox `ik_LM` (C++)",
    "rtb_ikine_LM": "roboticstoolbox `ikine_LM` (Python)",
    "ikpy": "ikpy `inverse_kinematics_frame`",
    "kinpy": "kinpy `inverse_kinematics`",
    "pinocchio_dls": "Pinocchio DLS loop (example)",
}


def cross_check(spec, mech, qs, Ts, tmp):
    """Our forward kinematics against Pinocchio's on the target configurations (the checker relies on it)."""
    import pinocchio as pin

    model, data = build_pinocchio(spec)
    fid = model.getFrameId(spec.tip)
    worst = 0.0
    for q, T in zip(qs[:50], Ts[:50]):
        pin.framesForwardKinematics(model, data, q)
        worst = max(worst, float(np.abs(data.oMf[fid].homogeneous - T).max()))
    if worst > 1e-9:
        raise SystemExit(f"{spec.name}: forward kinematics disagree with Pinocchio by {worst:g}")
    return worst


def run(robots, only, n, n_slow, seed_targets, repeat=3):
    from mechanism_model_core import forward_kinematics

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rname in robots:
            spec = ROBOTS[rname]()
            mech = build_mechanism(spec)
            qs = spec.random_configurations(n, seed=seed_targets)
            Ts = forward_kinematics(mech, qs).pose(spec.tip)
            cross_check(spec, mech, qs, Ts, tmp)
            check = Checker(mech, spec.tip)
            seed = np.array(SEEDS[rname])
            assert mech.within_limits(seed)
            for sname in only:
                try:
                    solve = SOLVERS[sname](spec, mech, seed, tmp)
                except Exception as exc:  # noqa: BLE001 - a missing optional library
                    print(f"  {rname:8s} {sname:14s} unavailable: {exc}", file=sys.stderr)
                    continue
                m = n_slow if sname in SLOW else n
                solve(Ts[0])                                   # warm up (imports, JIT caches)
                reps = 1 if sname in SLOW else repeat
                times, cpu, ok = [], [], 0
                for T in Ts[:m]:
                    best_t = best_c = math.inf
                    for k in range(reps):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            c0 = time.process_time()
                            t0 = time.perf_counter()
                            q = solve(T)
                            t1 = time.perf_counter()
                            c1 = time.process_time()
                        best_t, best_c = min(best_t, t1 - t0), min(best_c, c1 - c0)
                        if k == 0:
                            ok += check.success(q, T)
                    times.append(best_t)
                    cpu.append(best_c)
                times = np.array(times) * 1e3
                cpu = np.array(cpu) * 1e3
                row = dict(robot=rname, solver=sname, n=m, success=ok / m, median=float(np.median(times)),
                           p95=float(np.percentile(times, 95)), mean=float(times.mean()),
                           cpu_median=float(np.median(cpu)), cpu_p95=float(np.percentile(cpu, 95)))
                if hasattr(solve, "stats"):
                    row["restarts"] = float(np.mean(solve.stats["restarts"]))
                    row["iterations"] = float(np.median(solve.stats["iterations"]))
                rows.append(row)
                extra = (f"  restarts/solve {row['restarts']:.2f}  median iterations {row['iterations']:.0f}"
                         if "restarts" in row else "")
                print(f"  {rname:8s} {sname:14s} n={m:4d}  success {100 * row['success']:6.2f}%  "
                      f"median {row['median']:8.3f} ms  p95 {row['p95']:8.3f} ms  (CPU {row['cpu_median']:.3f} / "
                      f"{row['cpu_p95']:.3f} ms){extra}", flush=True)
    return rows


def markdown(rows) -> str:
    ours = {r["robot"]: r for r in rows if r["solver"] == "ours"}
    out = ["| robot | solver | targets | success (in limits) | median ms | p95 ms | CPU median ms | "
           "CPU p95 ms | median / ours |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        base = ours.get(r["robot"])
        ratio = f"{r['median'] / base['median']:.2f}" if base else "-"
        out.append(f"| {r['robot']} | {LABELS[r['solver']]} | {r['n']} | {100 * r['success']:.1f}% | "
                   f"{r['median']:.3f} | {r['p95']:.3f} | {r['cpu_median']:.3f} | {r['cpu_p95']:.3f} | "
                   f"{ratio} |")
    return "\n".join(out)


def write_section(path, table, meta):
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    block = f"{MARK_START}\n{meta}\n\n{table}\n{MARK_END}"
    if MARK_START in text and MARK_END in text:
        a = text.index(MARK_START)
        b = text.index(MARK_END) + len(MARK_END)
        text = text[:a] + block + text[b:]
    else:
        text = text.rstrip() + "\n\n## Inverse kinematics\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=500, help="targets per robot")
    ap.add_argument("--n-slow", type=int, default=100, help="targets per robot for ikine_LM, ikpy, kinpy")
    ap.add_argument("--robots", default="ur5,panda,chain10")
    ap.add_argument("--only", default=",".join(SOLVERS))
    ap.add_argument("--seed", type=int, default=2026, help="seed of the random target configurations")
    ap.add_argument("--repeat", type=int, default=3,
                    help="solves per target for the fast solvers; the fastest counts (filters pre-emption)")
    ap.add_argument("--write", metavar="BENCHMARKS.md", help="replace the table between the IK markers")
    a = ap.parse_args(argv)
    robots = [r for r in a.robots.split(",") if r]
    only = [s for s in a.only.split(",") if s]
    rows = run(robots, only, a.n, a.n_slow, a.seed, a.repeat)
    table = markdown(rows)
    print(table)
    if a.write:
        meta = (f"Measured {time.strftime('%Y-%m-%d')} with `python benchmarks/bench_ik.py --write "
                f"BENCHMARKS.md` on {platform.machine()} / Python {platform.python_version()} / numpy "
                f"{np.__version__} (shared 2-core machine; other jobs were running). Targets: flange poses of "
                f"{a.n} random in-limit configurations (seed {a.seed}); {a.n_slow} for the slow Python "
                f"solvers. Success (judged on the first solve): position < {TOL_POS:g} m, orientation < "
                f"{TOL_ROT:g} rad, all joints in limits. Time per target: the fastest of {a.repeat} identical "
                f"solves for ours, ik_LM and the Pinocchio loop (one solve for the slow solvers).")
        write_section(a.write, table, meta)


if __name__ == "__main__":
    main()
