"""Cost against model size (issue 10.11): building a mechanism, one forward kinematics pass, one Jacobian and
the memory they take, for chains and wide trees of 10 to 3,000 links, with the fitted exponent of each.

    python benchmarks/bench_scale.py              # measure, print, rewrite its section of BENCHMARKS.md
    python benchmarks/bench_scale.py --no-write   # print only

Models: a *chain* of n revolute links (axes cycling x, y, z; a named frame on the tip), and a *tree* of n
links in which every link hangs on a random earlier one (a wide, shallow tree: depth about ln n). Build =
``MechanismBuilder.build()`` plus the first forward kinematics (which compiles the evaluation plan); FK =
``forward_kinematics(m, q).pose(tip)``; Jacobian = ``jacobian(m, q, tip)`` (tip: the chain's last link, the
tree's deepest link); all frames = ``forward_kinematics(m, q).frame_array()``. Memory = peak of Python
allocations (tracemalloc) while building, compiling and evaluating, in MB. Times are CPU seconds
(``time.process_time``) per call, the best of several rounds (on a shared machine the best round is the
one least disturbed by other processes). Exponent k of ``cost ~ n^k``: least-squares slope on log-log axes
over 300..3,000 links; the target (issue 10.11) is a cost linear in the model: k <= 1.15.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import sys
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = (10, 30, 100, 300, 1000, 3000)


def build_chain(n: int):
    from mechanism_model_core import Joint, MechanismBuilder
    from mechanism_model_core.spatial import make_transform, rot_x

    b = MechanismBuilder(f"chain{n}")
    parent = None
    for i in range(n):
        axis = np.eye(3)[i % 3]
        b.add_body(f"l{i}", parent, Joint.revolute(f"j{i}", make_transform(rot_x(0.1)[:3, :3], (0.0, 0.0, 0.05)),
                                                   axis=axis, lower=-3.0, upper=3.0))
        parent = f"l{i}"
    b.add_frame(parent, "tip", make_transform(None, (0.0, 0.0, 0.1)))
    return b, "tip"


def build_tree(n: int):
    from mechanism_model_core import Joint, MechanismBuilder
    from mechanism_model_core.spatial import make_transform

    rng = np.random.default_rng(n)
    b = MechanismBuilder(f"tree{n}")
    depth = {}
    for i in range(n):
        parent = None if i == 0 else f"l{int(rng.integers(i))}"
        depth[f"l{i}"] = 0 if parent is None else depth[parent] + 1
        b.add_body(f"l{i}", parent, Joint.revolute(f"j{i}", make_transform(None, rng.uniform(-0.1, 0.1, 3)),
                                                   axis=rng.normal(size=3), lower=-3.0, upper=3.0))
    return b, max(depth, key=depth.get)


def timed(fn, min_time=0.02, repeat=7) -> float:
    """Best-of-``repeat`` CPU seconds per call (each round at least ``min_time``)."""
    fn()
    n = 1
    while True:
        t = time.process_time()
        for _ in range(n):
            fn()
        dt = time.process_time() - t
        if dt > min_time or n > 1e6:
            break
        n *= 4
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        for _ in range(n):
            fn()
        runs.append((time.process_time() - t) / n)
    return min(runs)


def measure(kind: str, n: int) -> dict:
    from mechanism_model_core import forward_kinematics, jacobian

    make = build_chain if kind == "chain" else build_tree
    gc.collect()
    tracemalloc.start()
    t0 = time.process_time()
    b, tip = make(n)
    t1 = time.process_time()
    m = b.build()
    q = m.random_configuration(np.random.default_rng(0))
    forward_kinematics(m, q).pose(tip)
    t2 = time.process_time()
    jacobian(m, q, tip)
    forward_kinematics(m, q).frame_array()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    builds = []
    for _ in range(5 if n <= 1000 else 3):
        t = time.process_time()
        m2 = b.build()
        forward_kinematics(m2, q).pose(tip)
        builds.append(time.process_time() - t)
        del m2
    return {"n": n, "build": min(builds), "fk": timed(lambda: forward_kinematics(m, q).pose(tip)),
            "jac": timed(lambda: jacobian(m, q, tip)),
            "all": timed(lambda: forward_kinematics(m, q).frame_array()), "mem": peak / 1e6,
            "describe": t1 - t0}


def slope(rows, key, lo=300) -> float:
    pts = [(math.log(r["n"]), math.log(r[key])) for r in rows if r["n"] >= lo and r[key] > 0]
    if len(pts) < 2:
        return float("nan")
    x, y = np.array(pts).T
    return float(np.polyfit(x, y, 1)[0])


def fmt_t(s: float) -> str:
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def table(results) -> list[str]:
    lines = ["| model | links | build + compile | FK (tip pose) | Jacobian (tip) | all frames | memory peak |",
             "|---|---|---|---|---|---|---|"]
    for kind, rows in results.items():
        for r in rows:
            lines.append(f"| {kind} | {r['n']:,} | {fmt_t(r['build'])} | {fmt_t(r['fk'])} | {fmt_t(r['jac'])} | "
                         f"{fmt_t(r['all'])} | {r['mem']:.1f} MB |")
        lines.append(f"| {kind} | exponent (300..3,000) | {slope(rows, 'build'):.2f} | {slope(rows, 'fk'):.2f} | "
                     f"{slope(rows, 'jac'):.2f} | {slope(rows, 'all'):.2f} | {slope(rows, 'mem'):.2f} |")
    return lines


#: issue 10.11: cost linear in the number of bodies; a fitted exponent up to this counts as linear
LINEAR = 1.15
METRICS = (("build", "build + compile"), ("fk", "FK"), ("jac", "Jacobian"), ("all", "all frames"),
           ("mem", "memory"))


def targets(results) -> list[str]:
    out = [f"Targets (issue 10.11, exponent 300..3,000 links <= {LINEAR}):", ""]
    for kind, rows in results.items():
        for key, label in METRICS:
            k = slope(rows, key)
            out.append(f"- {kind} {label}: exponent {k:.2f}: {'met' if k <= LINEAR else 'NOT met'}")
    return out


def write_section(path: str, lines: list[str]) -> None:
    begin, end = "<!-- bench_scale:begin -->", "<!-- bench_scale:end -->"
    text = open(path, encoding="utf-8").read()
    block = begin + "\n" + "\n".join(lines) + "\n" + end
    if begin in text:
        a, b = text.index(begin), text.index(end) + len(end)
        text = text[:a] + block + text[b:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--write", metavar="BENCHMARKS.md", default=os.path.join(os.path.dirname(HERE), "BENCHMARKS.md"),
                    help="the file whose bench_scale section is rewritten (default: the repository's)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    if args.no_write:
        args.write = None
    import numpy
    import scipy.sparse  # noqa: F401  (imported by the first large model; not billed to it)

    import mechanism_model_core  # noqa: F401

    results = {}
    for kind in ("chain", "tree"):
        results[kind] = []
        for n in args.sizes:
            r = measure(kind, n)
            results[kind].append(r)
            print(f"{kind:5s} n={n:5d} build {fmt_t(r['build']):>9s}  fk {fmt_t(r['fk']):>9s}  "
                  f"jac {fmt_t(r['jac']):>9s}  all {fmt_t(r['all']):>9s}  mem {r['mem']:7.1f} MB", flush=True)
    lines = table(results) + [""] + targets(results)
    print("\n".join(lines))
    if args.write:
        load = os.getloadavg()
        head = ["## Cost against model size (`benchmarks/bench_scale.py`)", "",
                f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
                f"{os.cpu_count()} cores (shared; load average {load[0]:.2f}), Python {platform.python_version()}, "
                f"numpy {numpy.__version__}. " + __doc__.split("\n\n")[2].replace("\n", " "), ""]
        write_section(args.write, head + lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
