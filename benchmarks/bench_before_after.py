"""Before and after one step, in one process: kinematics, IK, collision and statics of the package at an earlier
commit (imported as ``mmc_before`` beside the current one) against the current code, in CPU time.

    python benchmarks/bench_before_after.py --before aba3724             # print the table
    python benchmarks/bench_before_after.py --before aba3724 --processes 5 --write   # median of 5 processes,
                                                                                     # into BENCHMARKS.md

Each task is built once on each side from the same inputs (the same robots, configurations, targets and
seeds) and their answers are compared before timing (kinematics, statics and collision to 1e-9; IK: the poses
the answers reach, to 2e-5 -- a solver changed between the two may return another branch). Then every task
runs ``--rounds`` interleaved rounds (before and after alternating, each round at least 20 ms of calls) timed
with ``time.process_time`` (this process's CPU time: what other jobs on a shared machine do not change); the
table gives the median time per call of each and the ratio before / after of the medians and of the fastest
rounds (above 1: the current code is faster). Issue 23's check: no ratio of medians below 0.97.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import common  # noqa: E402
from bench_kinematics import _fmt_t, interleaved, load_before, machine  # noqa: E402
from common import replace_marked_section  # noqa: E402

import mechanism_model_core as now_core  # noqa: E402
import mechanism_model_core.library  # noqa: E402,F401

#: the library's files (read by both sides: the archived package has no models folder)
ROVER = now_core.library.model_path("rocky8/rocky8_rover.xml")
BEGIN, END = "<!-- bench_before_after:begin -->", "<!-- bench_before_after:end -->"
TOL = 1e-9
#: IK answers: the poses reached agree to the solvers' tolerances (1e-6 m, 1e-5 rad)
TOL_IK = 2e-5
#: the issue's bound on a slowdown
SLOWER = 0.97


def _chain(core, n: int):
    """A serial chain of ``n`` revolute joints alternating about z and y (the banded pass above 32)."""
    b = core.MechanismBuilder(f"chain{n}")
    parent = None
    for i in range(n):
        T = np.eye(4)
        if i:
            T[2, 3] = 0.05
        b.add_body(f"l{i}", parent, core.Joint.revolute(f"j{i}", T, axis=(0, 0, 1) if i % 2 == 0 else (0, 1, 0)))
        parent = f"l{i}"
    return b.build()


def tasks(core) -> dict:
    """Task name -> (kind, zero-argument callable returning an array[, what of it to compare]). Kind: "kin",
    "ik", "col", "stat" (the issue's four groups)."""
    import importlib
    name = core.__name__
    ik = importlib.import_module(f"{name}.ik")
    coll = importlib.import_module(f"{name}.collision")
    statics = importlib.import_module(f"{name}.statics")
    fk, jac = core.forward_kinematics, core.jacobian
    rng = np.random.default_rng(7)
    out = {}

    panda = common.build_mechanism(common.panda(), core)
    tip = common.panda().tip
    q = common.panda().random_configurations(1, seed=3)[0]
    Q = common.panda().random_configurations(10_000, seed=4)
    Q1k = Q[:1000]
    out["panda: tool pose, one configuration"] = ("kin", lambda: fk(panda, q).pose(tip))
    out["panda: all frames, one configuration"] = ("kin", lambda: fk(panda, q).frame_array())
    out["panda: Jacobian LOCAL_WORLD_ALIGNED"] = ("kin", lambda: jac(panda, q, tip))
    out["panda: tool pose, batch of 10,000"] = ("kin", lambda: fk(panda, Q).pose(tip))
    out["panda: Jacobian, batch of 1,000"] = ("kin", lambda: jac(panda, Q1k, tip))
    chain = _chain(core, 200)
    qc = rng.uniform(-1, 1, chain.nq)
    out["chain200 (banded pass): all frames"] = ("kin", lambda: fk(chain, qc).frame_array())

    # statics and collision: the Rocky 8 rover of the library (29 coordinates, a coupled differential)
    rover = core.load_model(ROVER)
    qr = rover.home.copy()
    Qr = rover.random_configuration(11, size=1000)
    out["rocky8: gravity torques, one configuration"] = ("stat", lambda: statics.gravity_torques(rover, qr))
    out["rocky8: gravity torques, batch of 1,000"] = ("stat", lambda: statics.gravity_torques(rover, Qr))
    contacts = statics.wheel_contacts(rover, (0.0, -0.2588190451025208, 0.9659258262890683), 0.8)
    out["rocky8: wheel loads on a 15 degree slope"] = (
        "stat", lambda: statics.contact_loads(rover, qr, contacts).forces)

    # collision
    env = coll.Environment([coll.Obstacle.ground_plane(height=-0.02),
                            coll.Obstacle.box("rock", (0.3, 0.3, 0.3), _translation(1.0, 0.0, 0.2))])
    Qc = rover.random_configuration(5, size=1000)
    out["rocky8: self-collision verdict"] = ("col", lambda: np.array(coll.in_collision(rover, qr)))
    out["rocky8: minimum distance"] = ("col", lambda: np.array(coll.minimum_distance(rover, qr).distance))
    out["rocky8: verdict with an environment"] = (
        "col", lambda: np.array(coll.in_collision(rover, qr, environment=env)))
    out["rocky8: self-collision verdicts, batch of 1,000"] = ("col", lambda: coll.in_collision(rover, Qc))

    # IK: the same targets and seeds, no wall-clock bound (iterations decide)
    targets = [fk(panda, x).pose(tip) for x in common.panda().random_configurations(10, seed=5)]
    seeds = common.panda().random_configurations(10, seed=6)

    def solve_all(solver):
        return np.array([ik.solve_ik(panda, core.PoseConstraint(tip, T), s, solver=solver, timeout=60).q
                         for T, s in zip(targets, seeds)])

    def reached(Q):            # IK answers are compared by the poses they reach (a solver may pick another branch)
        return np.array([fk(panda, x).pose(tip) for x in np.atleast_2d(Q)])
    out["panda: solve_ik (auto), 10 targets"] = ("ik", lambda: solve_all("auto"), reached)
    out["panda: solve_ik (dls), 10 targets"] = ("ik", lambda: solve_all("dls"), reached)
    Tb = np.array([fk(panda, x).pose(tip) for x in common.panda().random_configurations(100, seed=8)])
    out["panda: solve_ik_batch, 100 targets"] = ("ik", lambda: ik.solve_ik_batch(panda, tip, Tb, seeds[0]).q,
                                                 reached)
    return out


def _translation(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def measure(before_commit: str, rounds: int, only: str) -> list:
    """One process's measurement: ``[(kind, task, after s, before s, ratio of medians, ratio of fastest)]``."""
    tmp = tempfile.mkdtemp(prefix="mm_before_")
    before_core = load_before(before_commit, tmp)
    after, before = tasks(now_core), tasks(before_core)
    names = [n for n in after if n in before and (not only or any(s in n for s in only.split(",")))]
    for n in names:                                          # the same answers before timing
        post = after[n][2] if len(after[n]) > 2 else (lambda x: x)
        a, b = (np.asarray(post(np.asarray(side[n][1]())), dtype=float) for side in (after, before))
        err = float(np.nanmax(np.abs(a - b))) if a.size else 0.0
        if a.shape != b.shape or not err <= (TOL_IK if after[n][0] == "ik" else TOL):
            raise SystemExit(f"CROSS-CHECK FAILED: {n}: before and after differ ({a.shape} {b.shape}, {err:.3g})")
    rows = []
    for n in names:
        best: dict = {}
        med = interleaved({"after": after[n][1], "before": before[n][1]}, rounds, 0.02, best,
                          timer=time.process_time)
        rows.append((after[n][0], n, med["after"], med["before"], med["before"] / med["after"],
                     best["before"] / best["after"]))
        print(f"{n}: after {_fmt_t(med['after'])}, before {_fmt_t(med['before'])}, "
              f"ratio {rows[-1][4]:.3f} (fastest {rows[-1][5]:.3f})", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the commit to compare against")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds per task")
    ap.add_argument("--processes", type=int, default=1,
                    help="fresh processes, one after the other (a process's code layout moves its ratios by a "
                         "few per cent either way; the table gives the median over the processes)")
    ap.add_argument("--only", default="", help="comma-separated substrings of task names")
    ap.add_argument("--write", action="store_true", help="update the marked section of BENCHMARKS.md")
    ap.add_argument("--json", help=argparse.SUPPRESS)          # a child process's rows
    args = ap.parse_args(argv)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(measure(args.before, args.rounds, args.only), f)
        return 0
    load0 = os.getloadavg()
    if args.processes <= 1:
        runs = [measure(args.before, args.rounds, args.only)]
    else:
        runs = []
        for k in range(args.processes):
            out = os.path.join(tempfile.mkdtemp(prefix="mm_before_after_"), "rows.json")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--before", args.before, "--rounds",
                            str(args.rounds), "--only", args.only, "--json", out], check=True)
            with open(out) as f:
                runs.append([tuple(r) for r in json.load(f)])
    load1 = os.getloadavg()
    rows = []
    for i, (kind, n, *_) in enumerate(runs[0]):
        per = [run[i] for run in runs]
        rows.append((kind, n, statistics.median(r[2] for r in per), statistics.median(r[3] for r in per),
                     statistics.median(r[4] for r in per), min(r[4] for r in per), max(r[4] for r in per),
                     statistics.median(r[5] for r in per)))
    worst = min(r[4] for r in rows) if rows else math.nan
    when = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    procs = (f"{len(runs)} fresh processes one after the other, each " if len(runs) > 1 else "")
    lines = [f"`benchmarks/bench_before_after.py --before {args.before} --rounds {args.rounds}"
             f"{f' --processes {len(runs)}' if len(runs) > 1 else ''}` (the package at `{args.before}` imported "
             f"as `mmc_before` beside the current one, answers cross-checked to {TOL:g} before timing; IK: the "
             f"poses the answers reach, to {TOL_IK:g}), {when}, {machine().rsplit('; load average', 1)[0]}; load "
             f"average at the start {' / '.join(f'{x:.2f}' for x in load0)}, at the end "
             f"{' / '.join(f'{x:.2f}' for x in load1)}. CPU time of the process (`time.process_time`), "
             f"{procs}{args.rounds} interleaved rounds of at least 20 ms per task; ratio = before / after (above "
             f"1: now faster) of the medians{', its median over the processes and its range' if procs else ''}, "
             f"and of the fastest rounds. Lowest ratio of medians: {worst:.3f} (issue 23's bound: {SLOWER}).", "",
             "| group | task | after (median) | before (median) | ratio of medians | range | ratio of fastest |",
             "|---|---|---|---|---|---|---|"]
    group = {"kin": "kinematics", "ik": "IK", "col": "collision", "stat": "statics"}
    for kind, n, a, b, r, lo, hi, rb in sorted(rows, key=lambda r: ["kin", "ik", "col", "stat"].index(r[0])):
        flag = " **slower**" if r < SLOWER else ""
        lines.append(f"| {group[kind]} | {n} | {_fmt_t(a)} | {_fmt_t(b)} | {r:.3f}{flag} | {lo:.3f}-{hi:.3f} "
                     f"| {rb:.3f} |")
    text = "\n".join(lines)
    print("\n" + text)
    if args.write:
        replace_marked_section(os.path.join(ROOT, "BENCHMARKS.md"), f"{BEGIN}\n{text}\n{END}\n", BEGIN, END)
    return 0 if worst >= SLOWER else 1


if __name__ == "__main__":
    sys.exit(main())
