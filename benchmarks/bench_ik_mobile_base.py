"""IK of an arm on a moving base: the base at a new pose for every request against the base standing still,
in one process. The locked joints before the arm's first free one (the base's pose, a torso) only move the
target's frame, so the closed form (``eaik``) and the lane engine's seed table are built once for every pose
of the base; this measures what a new base pose still costs per request.

Arms: the default rover (Rocky 8: floating chassis, 5-joint arm; targets in the chassis frame with every
joint but the arm's locked, as the IK service's requests give them) and the 7R test arm
(test/data/robots/srs7) on a torso lift on a floating base (targets in the ground frame), solved by
``solver="auto"`` (the closed form where ``eaik`` is installed) and by ``solver="lm"``; and two arms the
near-decomposable closed form takes (``near-eaik``), each on a floating base joint added above its URDF's root
as a full robot model in a map/odom frame has it: TIAGo (example-robot-data's tiago_no_hand, torso lift and
arm free, the lift solved by the held kind) and Baxter (its left arm; an offset wrist, the near kind),
``solver="auto"`` against ``solver="lm"`` -- what ``auto`` gave them before the near closed form took locked
base steps (2026-11-28). Targets: the tool's
pose at random in-limit arm values; seeds: other random arm values; the base: random positions within 3 m,
any orientation, any torso stroke. Times: CPU time per solve (``time.process_time``), medians over
``--n`` requests per case and ``--rounds`` interleaved rounds; success: the solver's report (1e-5 m / rad).

``--unreachable N``: also N targets beyond the arm's reach (moved 10 m out) per arm (the base moving), the reach bound from the
held base (2026-11-28) against the ground's (the floating joint's free travel: no bound) in the same process,
request by request (the engine of each base pose built with one or the other), 50 ms budget.

Usage::

    python benchmarks/bench_ik_mobile_base.py --n 300 --rounds 2 [--unreachable 100]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import warnings

import numpy as np

from mechanism_model_core import PoseConstraint, forward_kinematics, load_model, solve_ik
from mechanism_model_core.data import memo
from mechanism_model_core.ik import batch
from mechanism_model_core.kinematics import frame_chain
from mechanism_model_core.library import default_model_path

HERE = os.path.dirname(os.path.abspath(__file__))
SRS7 = os.path.join(HERE, "..", "test", "data", "robots", "srs7", "srs7.urdf")
BASE = """<link name="world"/>
  <link name="chassis"/>
  <link name="base"/>
  <joint name="base_pose" type="floating"><parent link="world"/><child link="chassis"/></joint>
  <joint name="torso" type="prismatic">
    <parent link="chassis"/><child link="base"/><origin xyz="0.2 0 0.3" rpy="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="0" upper="0.4" effort="100" velocity="0.1"/>
  </joint>"""


def mobile_srs7():
    """The 7R test arm on a torso lift on a floating base (a model file written to a temporary folder)."""
    text = open(SRS7).read().replace('<link name="base"/>', BASE, 1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mobile_srs7.urdf")
        with open(path, "w") as fh:
            fh.write(text)
        return load_model(path)


def on_floating_base(name):
    """``(mechanism, arm joints, tip, the arm's own mechanism)``: arm ``name`` of bench_ik.py (example-robot-data,
    with Pinocchio) with a floating joint from a new ``world`` link to its URDF's root; None when the URDF is not
    found."""
    sys.path.insert(0, HERE)
    from bench_ik import _resolve          # the arm table of the main IK benchmark
    path, _, tip = _resolve(name)
    if path is None or not os.path.exists(path):
        return None
    text = open(path, encoding="utf-8").read()
    links = re.findall(r'<link\s+name="([^"]+)"', text)
    children = set(re.findall(r'<child\s+link="([^"]+)"', text))
    root = next(lk for lk in links if lk not in children)
    head = re.search(r"<robot[^>]*>", text)
    text = (text[:head.end()] + f'<link name="world"/><joint name="base_pose" type="floating"><parent '
            f'link="world"/><child link="{root}"/></joint>' + text[head.end():])
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, f"mobile_{name}.urdf")
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = load_model(p)
            alone = load_model(path)
    arm = [m.coordinate_names[i] for i in frame_chain(m, tip).coords if not
           m.coordinate_names[i].startswith("base_pose.")]
    return m, arm, tip, alone


def cases():
    rover = load_model(default_model_path())
    srs = mobile_srs7()
    for name in ("tiago", "baxter"):
        hit = on_floating_base(name)
        if hit is None:
            print(f"{name}: no URDF (example-robot-data comes with Pinocchio): skipped")
            continue
        m, arm, tip, alone = hit
        yield f"{name} on a floating base ({len(arm)} joints free)", m, arm, tip, None, ("auto", "lm")
        yield f"{name} alone (its URDF, no floating base; 'moving' moves nothing)", alone, arm, tip, None, ("auto",)
    yield "Rocky 8 arm (chassis frame)", rover, ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist",
                                                 "arm_turret"], "arm_turret", "chassis", ("auto",)
    yield "7R SRS on torso + floating base", srs, [f"j{i}" for i in range(1, 8)], "tool", None, ("auto", "lm")


def run(m, arm, tool, rel, solver, moving, n, seed):
    ia = [m.coordinate_index(j) for j in arm]
    locked = [c for c in m.coordinate_names if c not in arm]
    lo, hi = m.lower_limits.copy(), m.upper_limits.copy()
    lo[~np.isfinite(lo)], hi[~np.isfinite(hi)] = -3.0, 3.0
    rng = np.random.default_rng(seed)
    q0 = lo + np.random.default_rng(3).random(m.nq) * (hi - lo)
    cpu, ok, solvers = [], 0, {}
    for _ in range(n):
        if moving:
            q0 = lo + rng.random(m.nq) * (hi - lo)
        qt = q0.copy()
        qt[ia] = (lo + rng.random(m.nq) * (hi - lo))[ia]
        fk = forward_kinematics(m, qt)
        T = fk.pose(tool) if rel is None else np.linalg.inv(fk.pose(rel)) @ fk.pose(tool)
        start = q0.copy()
        start[ia] = (lo + rng.random(m.nq) * (hi - lo))[ia]
        c = time.process_time()
        r = solve_ik(m, PoseConstraint(tool, T, relative_to=rel), start, locked=locked, timeout=0.05,
                     tol_position=1e-5, tol_orientation=1e-5, solver=solver)
        cpu.append(time.process_time() - c)
        ok += r.success
        solvers[r.solver] = solvers.get(r.solver, 0) + 1
    return cpu, ok, solvers


def unreachable(m, arm, tool, solver, n, seed):
    """CPU times and reasons of ``n`` requests whose targets lie beyond the arm's reach (the tool's pose moved 10 m
    away from the model's root frame: these arms' bases are within 1.5 m of it, their reach under 2 m), the base at a new pose
    each, alternately with the held base's reach bound (``new``) and with the ground's (``old``)."""
    ia = [m.coordinate_index(j) for j in arm]
    locked = [c for c in m.coordinate_names if c not in arm]
    lo, hi = m.lower_limits.copy(), m.upper_limits.copy()
    lo[~np.isfinite(lo)], hi[~np.isfinite(hi)] = -3.0, 3.0
    rng = np.random.default_rng(seed)
    own = batch.LaneEngine._held_base_bound
    out = {"old": ([], {}), "new": ([], {})}
    for k in range(2 * n):
        side = ("new", "old")[k % 2]
        batch.LaneEngine._held_base_bound = own if side == "new" else (lambda E, _m: (E.consts.origin,
                                                                                     E.consts.reach))
        q0 = lo + rng.random(m.nq) * (hi - lo)
        fk = forward_kinematics(m, q0)
        T = fk.pose(tool).copy()
        d = T[:3, 3] - fk.pose(m.frame_names[0])[:3, 3]
        T[:3, 3] += 10.0 * d / np.linalg.norm(d) if np.linalg.norm(d) > 1e-3 else [10.0, 0.0, 0.0]
        start = q0.copy()
        start[ia] = (lo + rng.random(m.nq) * (hi - lo))[ia]
        c = time.process_time()
        r = solve_ik(m, PoseConstraint(tool, T), start, locked=locked, timeout=0.05, solver=solver)
        out[side][0].append(time.process_time() - c)
        out[side][1][r.reason] = out[side][1].get(r.reason, 0) + 1
    batch.LaneEngine._held_base_bound = own
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--unreachable", type=int, default=0)
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    for name, m, arm, tool, rel, solver_names in cases():
        runs = {}
        for rnd in range(a.rounds):             # the solvers and the base's motion interleaved, round by round
            for solver in solver_names:
                for moving in (False, True):
                    cpu, ok, used = run(m, arm, tool, rel, solver, moving, a.n, 40 + rnd)
                    c, k, u = runs.setdefault(solver, {}).setdefault(moving, ([], [0], {}))
                    c.extend(cpu)
                    k[0] += ok
                    for s, v in used.items():
                        u[s] = u.get(s, 0) + v
        for solver, res in runs.items():
            report(a, name, m, solver, res)
            if a.unreachable and rel is None:
                u = unreachable(m, arm, tool, solver, a.unreachable, 7)
                print(f"  {a.unreachable} targets beyond reach, solver={solver}: CPU median with the ground's "
                      f"bound {np.median(u['old'][0]) * 1e3:.2f} ms {u['old'][1]}, with the held base's "
                      f"{np.median(u['new'][0]) * 1e3:.2f} ms {u['new'][1]}")
    print(f"load average at end: {os.getloadavg()}")


def report(a, name, m, solver, res):
    """One line of figures for solver ``solver`` on one arm (``res``: by base motion, CPU times, successes,
    solvers used)."""
    total = a.n * a.rounds
    fixed, mov = (np.median(res[f][0]) * 1e3 for f in (False, True))
    print(f"{name}, solver={solver}: CPU median fixed base {fixed:.3f} ms, new base pose each request "
          f"{mov:.3f} ms ({mov / fixed:.2f}x); p95 moving {np.percentile(res[True][0], 95) * 1e3:.3f} ms; "
          f"success {res[False][1][0]}/{total} and {res[True][1][0]}/{total}; closed forms kept "
          f"{len(memo(m, 'ik.eaik_solvers', 64))} eaik / {len(memo(m, 'ik.near_decomposable', 64))} near, "
          f"base-frame seed tables {len(memo(m, 'ik.base_seed_tables', 8))}; solvers (moving) {res[True][2]}")


if __name__ == "__main__":
    main()
