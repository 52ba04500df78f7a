"""Collision benchmark: self-collision verdicts, minimum distance and a 10,000-configuration batch on the
Rocky 8 rover and a 7-DOF arm, next to Pinocchio's GeometryModel (``computeCollisions`` /
``computeDistances``, coal underneath as ours) in the same process; and IK with ``avoid_collisions``.

    python benchmarks/bench_collision.py            # measure, print the section, update BENCHMARKS.md
    python benchmarks/bench_collision.py --no-write

Pinocchio reads the same URDF text (for Rocky 8 our URDF export, which writes its boxes and cylinders as
collision primitives) and is given exactly the body pairs our collision matrix checks. Before timing, the
verdicts of both are compared pair by pair on 300 random configurations, pairs within 1e-6 m of touching
(by Pinocchio's distance) left out, as in test/core/test_collision_pinocchio.py.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_kinematics import _fmt_t, interleaved, machine  # noqa: E402

from mechanism_model_core import PoseConstraint, forward_kinematics, load_model, solve_ik  # noqa: E402
from mechanism_model_core.collision import collision_model, in_collision, minimum_distance  # noqa: E402
from mechanism_model_core.collision.queries import _pair_hits  # noqa: E402
from mechanism_model_core.io.urdf import load_urdf, to_urdf  # noqa: E402
from mechanism_model_core.library import model_path  # noqa: E402

BATCH = 10_000
#: pairs closer to touching than this (m) are not compared (the tests' rule)
TOUCH = 1e-6
BEGIN, END = "<!-- bench_collision:begin -->", "<!-- bench_collision:end -->"
DATA = os.path.join(ROOT, "test", "data", "robots")


def robots():
    arm = os.path.join(DATA, "arm7", "arm7_primitives.urdf")
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    with open(arm) as fh:
        arm_xml = fh.read()
    return {"rocky8": (rover, to_urdf(rover)), "arm7": (load_urdf(arm), arm_xml)}


def pin_side(mech, xml):
    import pinocchio as pin

    pm = pin.buildModelFromXML(xml)
    gm = pin.buildGeomFromUrdfString(pm, xml, pin.GeometryType.COLLISION)
    by_link = {}
    for k, g in enumerate(gm.geometryObjects):
        by_link.setdefault(pm.frames[g.parentFrame].name, []).append(k)
    pairs = []
    for a, b in collision_model(mech).pairs_checked:
        for i in by_link.get(a, ()):
            for j in by_link.get(b, ()):
                pairs.append((a, b))
                gm.addCollisionPair(pin.CollisionPair(i, j))
    return pm, pm.createData(), gm, gm.createData(), pairs


def pin_q(pm, mech, q):
    import pinocchio as pin

    values = dict(zip(mech.coordinate_names, q))
    qp = pin.neutral(pm)
    for j in range(1, pm.njoints):
        jm, name = pm.joints[j], pm.names[j]
        if jm.nq == 1:
            qp[jm.idx_q] = values[name]
        elif jm.nq == 2:
            qp[jm.idx_q:jm.idx_q + 2] = [math.cos(values[name]), math.sin(values[name])]
    return qp


def measure(args) -> dict:
    import pinocchio as pin

    rng = np.random.default_rng(0)
    rows, checks = [], []
    for name, (mech, xml) in robots().items():
        pm, pd, gm, gd, pairs = pin_side(mech, xml)
        model = collision_model(mech)
        # verdicts cross-checked on random configurations first, pair by pair, as the tests do: pairs
        # within TOUCH of touching (by Pinocchio's own distance) are left out, their verdict is arbitrary
        for req in gd.distanceRequests:
            req.gjk_tolerance = 1e-9
        Q = mech.random_configuration(rng, size=300)
        ours = _pair_hits(model, Q)
        compared = near = 0
        odd = []
        for n, (q, hits) in enumerate(zip(Q, ours)):
            qp = pin_q(pm, mech, q)
            pin.computeCollisions(pm, pd, gm, gd, qp, False)
            pin.computeDistances(pm, pd, gm, gd, qp)
            theirs = {pairs[k] for k, r in enumerate(gd.collisionResults) if r.isCollision()}
            dmin = {}
            for k, r in enumerate(gd.distanceResults):
                dmin[pairs[k]] = min(dmin.get(pairs[k], math.inf), r.min_distance)
            for pair, d in dmin.items():
                if abs(d) < TOUCH:
                    near += 1
                    continue
                compared += 1
                if (pair in hits) != (pair in theirs):
                    odd.append(f"configuration {n} {pair[0]}/{pair[1]}: Pinocchio's distance {d:.1e} m, "
                               f"{'ours' if pair in hits else 'Pinocchio'} says colliding")
        checks.append(f"{name}: {compared - len(odd)}/{compared} pair verdicts on 300 random configurations "
                      f"agree with Pinocchio ({near} pairs within {TOUCH:g} m of touching left out"
                      + (f"; disagreeing: {'; '.join(odd)}" if odd else "") + ")")
        # a collision-free configuration: every allowed pair is checked (the worst case for a verdict)
        free = mech.home if not in_collision(mech, mech.home) else \
            next(q for q in mech.random_configuration(rng, size=200) if not in_collision(mech, q))
        fp = pin_q(pm, mech, free)
        d_ours = minimum_distance(mech, free).distance
        pin.computeDistances(pm, pd, gm, gd, fp)
        d_pin = min(r.min_distance for r in gd.distanceResults)
        checks.append(f"{name}: minimum distance {d_ours:.6f} m, Pinocchio {d_pin:.6f} m")
        QB = mech.random_configuration(rng, size=BATCH)
        QP = [pin_q(pm, mech, q) for q in QB]

        def pin_batch():
            return [pin.computeCollisions(pm, pd, gm, gd, x, True) for x in QP]

        single = interleaved({"ours": lambda: in_collision(mech, free),
                              "pinocchio": lambda: pin.computeCollisions(pm, pd, gm, gd, fp, True)},
                             args.repeat, 0.05)
        dist = interleaved({"ours": lambda: minimum_distance(mech, free),
                            "pinocchio": lambda: pin.computeDistances(pm, pd, gm, gd, fp)},
                           args.repeat, 0.05)
        batch = interleaved({"ours": lambda: in_collision(mech, QB), "pinocchio": pin_batch},
                            max(3, args.repeat // 6), 0.2)
        rows.append((name, len(model.objects), len(model.pairs_checked), len(gm.collisionPairs),
                     single, dist, batch, float(np.mean(in_collision(mech, QB)))))
    # IK with and without avoid_collisions on targets that need no detour
    arm, _ = robots()["arm7"]
    targets = []
    for q in arm.random_configuration(np.random.default_rng(5), size=400):
        if not in_collision(arm, q):
            targets.append((forward_kinematics(arm, q).pose("hand"), q + 0.05))
        if len(targets) == 10:
            break
    for T, q0 in targets:
        a = solve_ik(arm, [PoseConstraint("hand", T)], q0, timeout=1.0)
        b = solve_ik(arm, [PoseConstraint("hand", T)], q0, timeout=1.0, avoid_collisions=True)
        assert a.success and b.success and not in_collision(arm, b.q)
    k = [0]

    def ik(avoid):
        def run():
            T, q0 = targets[k[0] % len(targets)]
            k[0] += 1
            return solve_ik(arm, [PoseConstraint("hand", T)], q0, timeout=1.0, avoid_collisions=avoid)
        return run

    iks = interleaved({"plain": ik(False), "avoid": ik(True)}, args.repeat, 0.1)
    return {"rows": rows, "checks": checks, "ik": iks, "pin": pin.__version__, "machine": machine(),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def report(r: dict) -> str:
    lines = [BEGIN, "## Collision detection (`benchmarks/bench_collision.py`)", "",
             f"Measured {r['when']} on {r['machine']}; Pinocchio {r['pin']} (GeometryModel over coal) in the "
             "same process, given the same shapes (one URDF text) and exactly the body pairs our collision "
             "matrix checks. Medians of interleaved rounds; in brackets Pinocchio's time divided by ours "
             "(above 1: we are faster). Checked first: " + "; ".join(r["checks"]) + ".", "",
             "Self-collision verdict at a collision-free configuration (every allowed pair must be cleared): "
             "ours `in_collision(m, q)` (forward kinematics, box broad phase, coal narrow phase), Pinocchio "
             "`computeCollisions(..., stop_at_first_collision=True)` (placements, then every pair narrowly). "
             "Minimum distance: ours `minimum_distance(m, q)` (pairs pruned by box gaps), Pinocchio "
             "`computeDistances` (every pair). Batch: `in_collision(m, Q)` for 10,000 random configurations "
             "against a Python loop of `computeCollisions` over pre-converted configurations.", "",
             "The one verdict that has differed beyond the 1e-6 m band (Rocky 8, configuration 35, the "
             "`arm_fore` box against the `arm_turret` cylinder) is Pinocchio's: its own `computeDistances` "
             "gives a penetration of 4.4e-5 m (ours 4.4e-5 m) on the same primitives (a cylinder on both "
             "sides, not a capsule; same sizes and poses), and coal's `collide` on Pinocchio's geometry "
             "objects and placements says colliding with a default request and with every setting of "
             "Pinocchio's request that Python exposes; only `computeCollisions` with Pinocchio's own "
             "GeometryData request says separated. Our verdict follows the distance.", "",
             "| robot | shapes | body pairs (shape pairs) | verdict: ours | verdict: Pinocchio | minimum distance: "
             "ours | Pinocchio | batch of 10,000: ours | Pinocchio loop | share in collision |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, n_obj, n_pairs, n_shape_pairs, s, d, b, share in r["rows"]:
        lines.append(f"| {name} | {n_obj} | {n_pairs} ({n_shape_pairs}) | {_fmt_t(s['ours'])} | "
                     f"{_fmt_t(s['pinocchio'])} ({s['pinocchio'] / s['ours']:.2f}) | {_fmt_t(d['ours'])} | "
                     f"{_fmt_t(d['pinocchio'])} ({d['pinocchio'] / d['ours']:.2f}) | {_fmt_t(b['ours'])} | "
                     f"{_fmt_t(b['pinocchio'])} ({b['pinocchio'] / b['ours']:.2f}) | {share:.0%} |")
    ik = r["ik"]
    rover = next(x for x in r["rows"] if x[0] == "rocky8")
    lines += ["", f"IK of the 7-DOF arm (pose of `hand`, 10 collision-free targets, seeds 0.05 rad away): "
              f"{_fmt_t(ik['plain'])} plain, {_fmt_t(ik['avoid'])} with `avoid_collisions=True` "
              f"(ratio {ik['avoid'] / ik['plain']:.2f}).", "",
              "Targets of issue 8 in this run:", "",
              f"- full Rocky 8 self-collision check: {_fmt_t(rover[4]['ours'])} (target <= 100 us: "
              f"{'met' if rover[4]['ours'] <= 100e-6 else 'NOT met'});",
              "- within 3x of Pinocchio's C++ loop: " + ", ".join(
                  f"{x[0]} verdict {x[4]['ours'] / x[4]['pinocchio']:.1f}x, distance "
                  f"{x[5]['ours'] / x[5]['pinocchio']:.1f}x, batch {x[6]['ours'] / x[6]['pinocchio']:.1f}x"
                  for x in r["rows"]) + ";",
              f"- IK with avoid_collisions at most 2x plain IK: {ik['avoid'] / ik['plain']:.2f}x "
              f"({'met' if ik['avoid'] <= 2 * ik['plain'] else 'NOT met'}).", "", END]
    return "\n".join(lines)


def write(text: str) -> None:
    path = os.path.join(ROOT, "BENCHMARKS.md")
    with open(path) as fh:
        doc = fh.read()
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + text + doc[doc.index(END) + len(END):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    with open(path, "w") as fh:
        fh.write(doc)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=21, help="interleaved rounds (default 21)")
    p.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = p.parse_args(argv)
    text = report(measure(args))
    print(text)
    if not args.no_write:
        write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
