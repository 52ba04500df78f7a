"""IK of the rover's arm with the target in the chassis frame, as the IK service's requests give it
(``compute_ik`` with ``header.frame_id = chassis``, the rover's pose and every joint but the arm's locked),
against the same targets in the ground frame. The chassis's ground pose is then constant, so the closed form
(``eaik``, where installed) and the shared lane engines take both alike.

Targets: the arm tool's pose at random in-limit arm configurations, the rover at one random pose; seeds: other
random arm configurations. Times: CPU time per solve (``time.process_time``), median after a warm-up of 100
solves; success: the solver's report (1e-5 m / 1e-5 rad).

Usage::

    python benchmarks/bench_ik_reference_frames.py --n 600
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from mechanism_model_core import PoseConstraint, forward_kinematics, load_model, solve_ik
from mechanism_model_core.library import default_model_path

ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
TOOL = "arm_turret"


def run(n: int, seed: int = 4) -> dict:
    m = load_model(default_model_path())
    ia = [m.coordinate_index(j) for j in ARM]
    locked = [c for c in m.coordinate_names if c not in ARM]
    q0 = m.random_configuration(np.random.default_rng(3))
    out = {}
    for ref in ("chassis", None):
        rng = np.random.default_rng(seed)
        times, ok, solvers = [], 0, {}
        for _ in range(n):
            qt = q0.copy()
            qt[ia] = m.random_configuration(rng)[ia]
            fk = forward_kinematics(m, qt)
            T = fk.pose(TOOL) if ref is None else np.linalg.inv(fk.pose(ref)) @ fk.pose(TOOL)
            start = q0.copy()
            start[ia] = m.random_configuration(rng)[ia]
            t = time.process_time()
            r = solve_ik(m, PoseConstraint(TOOL, T, relative_to=ref), start, locked=locked, timeout=0.05,
                         tol_position=1e-5, tol_orientation=1e-5)
            times.append(time.process_time() - t)
            ok += bool(r.success)
            solvers[r.solver] = solvers.get(r.solver, 0) + 1
        out[ref or "ground"] = (float(np.median(times[100:])) * 1e3, ok / n, solvers)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=600, help="targets per frame (default 600)")
    a = ap.parse_args(argv)
    load = os.getloadavg()[0]
    for frame, (med, ok, solvers) in run(a.n).items():
        print(f"{frame:8s} median {med:.3f} ms CPU, success {100 * ok:.1f} %, solvers {solvers}")
    print(f"load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
