"""How complete ``ik_solutions`` is: for random reachable targets, its branches against an independent exhaustive
count -- Pinocchio's model of the same URDF, Newton (damped least-squares) steps on the exact chain from many
random starts (every joint uniform in [-pi, pi), no limits in the steps), the answers that reach the target
within 1e-9 (m and rad, Pinocchio's forward kinematics) clustered by joint distance with whole turns folded
(two answers are one branch when every joint differs by less than 1e-5 rad modulo a turn), and a branch
counted when a whole-turn version of it lies in the limits. A 7R chain's joint that ``ik_solutions`` holds
(its swept joint) is locked in Pinocchio's model (``buildReducedModel``) at the value ``ik_solutions`` holds.

    python benchmarks/bench_ik_solutions.py --arms baxter --urdf xarm6=/tmp/ik2_urdf/xarm6.urdf --n 200

Targets: the tip poses of random in-limit configurations; the reference ``q_ref`` another random in-limit
configuration (a 7R chain's swept joint at the target's value, so that the held chain reaches it). Prints per
arm the targets, the branches the exhaustive search found in limits and those ``ik_solutions`` listed
(totals), the targets where ``ik_solutions`` missed one (and how many it missed in all), branches it listed
that the search did not find, and whether each listed branch reaches the target by Pinocchio within 1e-9,
within the limits.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_ik  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test"))
from core.pin_branches import FK_TOL, SAME, newton_branches, wrap as _wrap  # noqa: E402



class Exhaustive:
    """Newton steps from random starts on Pinocchio's model of ``arm`` with every joint but the chain's free
    ones locked (``held``: chain joint indices also locked, at the reference's values)."""

    def __init__(self, arm, held_values):
        import pinocchio as pin
        self.pin, self.arm = pin, arm
        pm = arm.pm
        self.held_values = held_values            # {chain index: value}
        keep = {pm.getJointId(n) for k, n in enumerate(arm.names) if k not in held_values}
        self.free = [k for k in range(arm.dof) if k not in held_values]
        lock = [j for j in range(1, pm.njoints) if j not in keep]
        self.lock = lock
        self._reduced = {}

    def model(self, qc):
        """The reduced model with the held joints at ``qc``'s values (cached by those values)."""
        key = tuple(float(qc[k]) for k in sorted(self.held_values))
        hit = self._reduced.get(key)
        if hit is None:
            pin, arm = self.pin, self.arm
            q = pin.neutral(arm.pm)
            for (i, nq), v in zip(arm.pin_idx, qc):
                q[i] = v
            rm = pin.buildReducedModel(arm.pm, self.lock, q)
            assert rm.nq == rm.nv == len(self.free)
            hit = self._reduced[key] = (rm, rm.createData(), rm.getFrameId(arm.tip))
        return hit

    def solve(self, qc_held, T, starts, rng, iters=60):
        """Distinct answers (k, dof) reaching ``T`` (the chain's joints; held ones at ``qc_held``'s values),
        each in [-pi, pi)."""
        rm, rd, fid = self.model(qc_held)
        found = newton_branches(rm, rd, fid, T, starts, rng, iters)
        full = np.tile(np.asarray(qc_held, dtype=float), (len(found), 1))
        if found:
            full[:, self.free] = np.array(found)
        return full


def in_limits(Q, lo, hi):
    """The rows of ``Q`` (k, dof) that some whole-turn version of puts within ``lo``, ``hi``."""
    out = []
    for q in Q:
        ok = True
        for v, a, b in zip(q, lo, hi):
            if not any(a - 1e-12 <= v + 2 * math.pi * k <= b + 1e-12 for k in range(-2, 3)):
                ok = False
                break
        if ok:
            out.append(q)
    return out


def held_joints(arm):
    """{chain index: None} of the joint ``ik_solutions`` holds (a 7R chain's swept joint, a lift)."""
    from mechanism_model_core.ik.closed_form.eaik_solver import eaik_solver_for
    from mechanism_model_core.ik.closed_form.near_decomposable import near_decomposable_solver_for
    s = eaik_solver_for(arm.m, arm.tip)
    held = []
    if s is not None:
        if s.swept is not None:
            held.append(list(arm.coords).index(s.coords[s.swept]))
        return s, held
    n = near_decomposable_solver_for(arm.m, arm.tip)
    first = 1 if n.lift else 0
    if n.lift:
        held.append(list(arm.coords).index(n.coords[0]))
    if n.swept is not None:
        held.append(list(arm.coords).index(n.coords[first + n.swept]))
    return n, held


def run(arm, n, starts, seed=0, verbose=False):
    from mechanism_model_core.ik import ik_solutions
    solver, held = held_joints(arm)
    ex = Exhaustive(arm, {k: None for k in held})
    rng = np.random.default_rng(seed)               # the targets and references
    srng = np.random.default_rng(seed + 1)          # the search's starts: the same targets whatever --starts
    lo, hi = arm.m.lower_limits[arm.coords], arm.m.upper_limits[arm.coords]
    tot_ex = tot_ls = miss_targets = missed = extra = bad = 0
    t_ls = 0.0
    for t in range(n):
        qt = rng.uniform(arm.lo, arm.hi)
        qr = rng.uniform(arm.lo, arm.hi)
        qr[held] = qt[held]
        T = arm.pose(qt)
        E = in_limits(ex.solve(qr, T, starts, srng), lo, hi)
        t0 = time.process_time()
        L = ik_solutions(arm.m, arm.tip, T, arm.full(qr))[:, arm.coords]
        t_ls += time.process_time() - t0
        for q in L:
            F = arm.pose(q)
            if (np.linalg.norm(F[:3, 3] - T[:3, 3]) > FK_TOL or np.linalg.norm(arm.pin.log3(F[:3, :3] @ T[:3, :3].T))
                    > FK_TOL or np.any(q < lo - 1e-12) or np.any(q > hi + 1e-12)):
                bad += 1
        m = sum(not any(np.max(np.abs(_wrap(e - q))) < SAME for q in L) for e in E)
        x = sum(not any(np.max(np.abs(_wrap(e - q))) < SAME for e in E) for q in L)
        tot_ex += len(E)
        tot_ls += len(L)
        missed += m
        extra += x
        miss_targets += m > 0
        if verbose and (m or x):
            print(f"  target {t}: search {len(E)}, listed {len(L)}, missed {m}, extra {x}", flush=True)
    print(f"{arm.name:10s} targets {n}  branches in limits: search {tot_ex}, ik_solutions {tot_ls}  missed {missed} "
          f"(on {miss_targets} targets)  listed but not found by the search {extra}  listed off by Pinocchio "
          f"or out of limits {bad}  ik_solutions {1e3 * t_ls / n:.2f} ms CPU per target "
          f"(search: {starts} starts; load {os.getloadavg()[0]:.1f})", flush=True)
    return tot_ex, tot_ls, missed, miss_targets, extra, bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="targets per arm")
    ap.add_argument("--starts", type=int, default=200, help="random starts of the exhaustive search per target")
    ap.add_argument("--arms", default="baxter")
    ap.add_argument("--urdf", action="append", default=[], metavar="NAME=PATH[:BASE:TIP]",
                    help="an arm from a URDF file (as bench_ik.py's --urdf), added to --arms")
    ap.add_argument("--verbose", action="store_true", help="print each target where the counts differ")
    args = ap.parse_args(argv)
    extra = [bench_ik.add_arm(spec) for spec in args.urdf]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in [a for a in args.arms.split(",") if a] + extra:
            run(bench_ik.Arm(name), args.n, args.starts, verbose=args.verbose)


if __name__ == "__main__":
    main()
