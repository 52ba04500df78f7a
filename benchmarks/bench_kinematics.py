#!/usr/bin/env python3
"""Forward kinematics and Jacobian benchmark: mechanism_model_core next to Pinocchio, roboticstoolbox-python,
ikpy and kinpy, all in this one process, on a UR5, a Franka Panda and a 10-joint serial chain.

    python benchmarks/bench_kinematics.py            # measure, print the table, update BENCHMARKS.md
    python benchmarks/bench_kinematics.py --quick    # fewer repetitions, nothing written
    python benchmarks/bench_kinematics.py --no-write
    python benchmarks/bench_kinematics.py --before 8c5f01b   # add a column: the package at that commit

Every library reads the same robot (one URDF string from ``common.py``; our side is built from the same
numbers with the builder). Before any timing, the libraries are cross-checked against ours to 1e-9 --
tool pose, every link pose, Jacobians and the batch -- and the script stops with an error if any differ.
Times are medians per call over rounds that run every library in turn (load from elsewhere on the machine
then hits all alike). Ratios are ``peer time / our time`` (above 1: we are faster). This is not a test:
nothing here runs in CI, and no test asserts on time.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

warnings.simplefilter("ignore")           # roboticstoolbox and ikpy warn at import and on fixed links

BATCH = 10_000
TOL = 1e-9
BEGIN, END = "<!-- bench_kinematics:begin -->", "<!-- bench_kinematics:end -->"


# ----------------------------------------------------------------------------------------- timing
def interleaved(fns: dict, repeat: int, min_time: float, best: dict | None = None,
                timer=timeit.default_timer) -> dict:
    """Median seconds per call of each function in ``fns``. Each is first calibrated to a run of at least
    ``min_time`` seconds; then ``repeat`` rounds run every function once per round, in rotating order, so
    that load from elsewhere on the machine hits all libraries alike and the ratios stay fair. ``best``, if
    given, receives each function's fastest round (what a quiet machine approaches). ``timer``: wall time
    by default; ``time.process_time`` counts only this process's CPU time (the ``--before`` comparison)."""
    timers = {}
    for who, fn in fns.items():
        t = timeit.Timer(fn, timer=timer)
        number = 1
        while t.timeit(number) < min_time and number < 1 << 22:
            number *= 2
        timers[who] = (t, number)
    samples = {who: [] for who in fns}
    order = list(fns)
    for r in range(repeat):
        for who in order[r % len(order):] + order[:r % len(order)]:
            t, number = timers[who]
            samples[who].append(t.timeit(number) / number)
    if best is not None:
        best.update({who: min(v) for who, v in samples.items()})
    return {who: statistics.median(v) for who, v in samples.items()}


# ----------------------------------------------------------------------------------------- peers
class Peer:
    """One library's robot and its calls, or the reason it is unavailable."""

    def __init__(self, name: str):
        self.name = name
        self.version = "?"
        self.error: str | None = None
        self.calls: dict[str, object] = {}


def load_peers(spec, tmpdir: str, q0: np.ndarray) -> dict[str, Peer]:
    peers = {}
    tip = spec.tip
    nq = spec.nq

    p = Peer("pinocchio")
    try:
        import pinocchio as pin

        p.version = pin.__version__
        model, data = common.build_pinocchio(spec)
        fid = model.getFrameId(tip)
        frame_ids = {l: model.getFrameId(l) for l in spec.links}

        def pin_all(q):
            pin.framesForwardKinematics(model, data, q)
            return data.oMf

        def pin_one(q):
            pin.forwardKinematics(model, data, q)
            return pin.updateFramePlacement(model, data, fid)

        def pin_batch(Q):
            out = np.empty((Q.shape[0], 4, 4))
            for i, q in enumerate(Q):
                pin.forwardKinematics(model, data, q)
                out[i] = pin.updateFramePlacement(model, data, fid).homogeneous
            return out

        def pin_batch_jac(Q):
            out = np.empty((Q.shape[0], 6, model.nv))
            for i, q in enumerate(Q):
                out[i] = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED)
            return out

        p.calls = {
            "all": pin_all,
            "one": pin_one,
            "jac_lwa": lambda q: pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED),
            "jac_world": lambda q: pin.computeFrameJacobian(model, data, q, fid, pin.WORLD),
            "batch": pin_batch,
            "batch_jac": pin_batch_jac,
        }
        p.check_all = lambda q: {l: (pin_all(q), data.oMf[i].homogeneous.copy())[1]
                                 for l, i in frame_ids.items()}
        p.check_one = lambda q: pin_one(q).homogeneous.copy()
    except Exception as exc:                       # record, do not patch the peer
        p.error = f"{type(exc).__name__}: {exc}"
    peers[p.name] = p

    p = Peer("roboticstoolbox")
    try:
        import roboticstoolbox as rtb

        p.version = rtb.__version__
        robot = common.build_rtb(spec, tmpdir)
        rtb_names = [link.name for link in robot.links]

        def rtb_all_check(q):
            T = robot.fkine_all(q)       # the base pose first, then one per link
            return {n: T[i + 1].A for i, n in enumerate(rtb_names)}

        p.calls = {
            "all": lambda q: robot.fkine_all(q),
            "one": lambda q: robot.fkine(q),
            "jac_lwa": lambda q: robot.jacob0(q),
            "batch": lambda Q: robot.fkine(Q),
        }
        p.check_all = rtb_all_check
        p.check_one = lambda q: robot.fkine(q).A
        p.check_jac_lwa = lambda q: robot.jacob0(q)
        p.check_batch = lambda Q: np.array(robot.fkine(Q).A)
    except Exception as exc:
        p.error = f"{type(exc).__name__}: {exc}"
    peers[p.name] = p

    p = Peer("ikpy")
    try:
        import ikpy
        import ikpy.chain  # noqa: F401

        p.version = getattr(ikpy, "__version__", "?")
        chain = common.build_ikpy(spec, tmpdir)
        active = np.flatnonzero(chain.active_links_mask)
        n_links = len(chain.links)
        link_names = [spec.base] + [j.child for j in spec.joints]   # ikpy: one entry per link

        def full(q):
            f = np.zeros(n_links)
            f[active] = q
            return f

        p.calls = {
            "all": lambda q: chain.forward_kinematics(full(q), full_kinematics=True),
            "one": lambda q: chain.forward_kinematics(full(q)),
        }
        p.check_all = lambda q: dict(zip(link_names, chain.forward_kinematics(full(q),
                                                                                full_kinematics=True)))
        p.check_one = lambda q: chain.forward_kinematics(full(q))
    except Exception as exc:
        p.error = f"{type(exc).__name__}: {exc}"
    peers[p.name] = p

    p = Peer("kinpy")
    try:
        import kinpy

        p.version = getattr(kinpy, "__version__", None) or _dist_version("kinpy")
        tree = common.build_kinpy(spec)
        serial = common.build_kinpy_serial(spec)
        order = tree.get_joint_parameter_names()
        moving = [j.name for j in spec.moving]
        perm = [moving.index(n) for n in order]

        p.calls = {
            "all": lambda q: tree.forward_kinematics(q[perm]),
            "one": lambda q: serial.forward_kinematics(q),
            "jac_lwa": lambda q: serial.jacobian(q),
        }
        p.check_all = lambda q: {k: v.matrix() for k, v in tree.forward_kinematics(q[perm]).items()}
        p.check_one = lambda q: serial.forward_kinematics(q).matrix()
        p.check_jac_lwa = lambda q: np.asarray(serial.jacobian(q))
    except Exception as exc:
        p.error = f"{type(exc).__name__}: {exc}"
    peers[p.name] = p
    del nq, q0
    return peers


def _dist_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "?"


# ----------------------------------------------------------------------------------------- ours
def load_before(commit: str, tmpdir: str):
    """The package ``mechanism_model_core`` as it was at ``commit``, imported as ``mmc_before`` (its
    imports are relative, so it runs under another name next to the current one)."""
    import importlib
    import io
    import tarfile

    repo = os.path.dirname(HERE)
    data = subprocess.run(["git", "-C", repo, "archive", commit, "mechanism_model_core/mechanism_model_core"],
                          capture_output=True, check=True).stdout
    dest = os.path.join(tmpdir, "before")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:                      # Python without extraction filters
            tar.extractall(dest)
    os.rename(os.path.join(dest, "mechanism_model_core", "mechanism_model_core"), os.path.join(dest, "mmc_before"))
    sys.path.insert(0, dest)
    try:
        return importlib.import_module("mmc_before")
    finally:
        sys.path.remove(dest)


def ours(spec, core=None):
    if core is None:
        import mechanism_model_core as core
    forward_kinematics, jacobian = core.forward_kinematics, core.jacobian

    mech = common.build_mechanism(spec, core)
    tip = spec.tip
    calls = {
        "all": lambda q: forward_kinematics(mech, q).frame_array(),
        "one": lambda q: forward_kinematics(mech, q).pose(tip),
        "jac_lwa": lambda q: jacobian(mech, q, tip),
        "jac_world": lambda q: jacobian(mech, q, tip, convention="WORLD"),
        "batch": lambda Q: forward_kinematics(mech, Q).pose(tip),
        "batch_jac": lambda Q: jacobian(mech, Q, tip),
    }
    return mech, calls


# ----------------------------------------------------------------------------------------- cross-check
def cross_check(spec, mech, peers: dict[str, Peer], rng) -> list[str]:
    """Compare every available peer with our results; raise SystemExit on any difference above TOL."""
    from mechanism_model_core import forward_kinematics, jacobian

    failures, done = [], []
    Q = spec.random_configurations(25, seed=int(rng.integers(1 << 30)))
    for q in Q:
        fk = forward_kinematics(mech, q)
        ref_one = fk.pose(spec.tip)
        ref_all = {l: fk.pose(l) for l in spec.links}
        ref_lwa = jacobian(mech, q, spec.tip)
        ref_world = jacobian(mech, q, spec.tip, convention="WORLD")
        for p in peers.values():
            if p.error:
                continue
            checks = [("tool pose", getattr(p, "check_one", None), ref_one)]
            if hasattr(p, "check_all"):
                got = p.check_all(q)
                for l in spec.links:
                    if l in got:
                        checks.append((f"pose of {l}", lambda _q, v=got[l]: v, ref_all[l]))
                    else:
                        failures.append(f"{p.name}: link {l} missing from its all-frames result")
            if hasattr(p, "check_jac_lwa"):
                checks.append(("Jacobian LOCAL_WORLD_ALIGNED", p.check_jac_lwa, ref_lwa))
            if "jac_lwa" in p.calls and p.name == "pinocchio":
                checks.append(("Jacobian LOCAL_WORLD_ALIGNED", p.calls["jac_lwa"], ref_lwa))
                checks.append(("Jacobian WORLD", p.calls["jac_world"], ref_world))
            for what, fn, ref in checks:
                if fn is None:
                    continue
                err = float(np.max(np.abs(np.asarray(fn(q), dtype=float) - ref)))
                if not err <= TOL:
                    failures.append(f"{p.name} {spec.name}: {what} differs by {err:.3g}")
                done.append(what)
    Qb = spec.random_configurations(200, seed=int(rng.integers(1 << 30)))
    ref_b = forward_kinematics(mech, Qb).pose(spec.tip)
    single = np.array([forward_kinematics(mech, q).pose(spec.tip) for q in Qb])
    err = float(np.max(np.abs(ref_b - single)))
    if not err <= TOL:
        failures.append(f"ours {spec.name}: batch differs from single calls by {err:.3g}")
    for p in peers.values():
        if p.error:
            continue
        fn = getattr(p, "check_batch", None) or (p.calls.get("batch") if p.name == "pinocchio" else None)
        if fn is not None:
            err = float(np.max(np.abs(np.asarray(fn(Qb)) - ref_b)))
            if not err <= TOL:
                failures.append(f"{p.name} {spec.name}: batch differs by {err:.3g}")
        if p.name == "pinocchio":
            err = float(np.max(np.abs(p.calls["batch_jac"](Qb) - jacobian(mech, Qb, spec.tip))))
            if not err <= TOL:
                failures.append(f"{p.name} {spec.name}: batch Jacobian differs by {err:.3g}")
    if failures:
        failures = list(dict.fromkeys(failures))
        raise SystemExit("CROSS-CHECK FAILED, nothing was timed:\n  " + "\n  ".join(failures))
    return sorted(set(done))


def check_before(spec, now: dict, before: dict) -> None:
    """The old build must give the same numbers as the current one (to TOL) before it is timed."""
    q = spec.random_configurations(10, seed=7)
    for task in ("all", "one", "jac_lwa", "jac_world"):
        for qi in q:
            err = float(np.max(np.abs(np.asarray(now[task](qi)) - np.asarray(before[task](qi)))))
            if not err <= TOL:
                raise SystemExit(f"CROSS-CHECK FAILED: --before build differs on {spec.name} {task} by {err:.3g}")
    Q = spec.random_configurations(50, seed=8)
    for task in ("batch", "batch_jac"):
        err = float(np.max(np.abs(now[task](Q) - before[task](Q))))
        if not err <= TOL:
            raise SystemExit(f"CROSS-CHECK FAILED: --before build differs on {spec.name} {task} by {err:.3g}")


# ----------------------------------------------------------------------------------------- main run
TASKS = [
    ("all", "all frames, one configuration"),
    ("one", "tool pose, one configuration"),
    ("jac_lwa", "Jacobian LOCAL_WORLD_ALIGNED (tool)"),
    ("jac_world", "Jacobian WORLD (tool)"),
    ("batch", f"tool pose, batch of {BATCH:,} configurations"),
    ("batch_jac", f"Jacobian LOCAL_WORLD_ALIGNED (tool), batch of {BATCH:,}"),
]
PEERS = ["pinocchio", "roboticstoolbox", "ikpy", "kinpy"]


def measure(args) -> dict:
    rng = np.random.default_rng(2)
    results = {"robots": {}, "peers": {}, "notes": [], "before": args.before}
    tmpdir = tempfile.mkdtemp(prefix="bench_kin_")
    before = load_before(args.before, tmpdir) if args.before else None
    for name in args.robots:
        spec = common.ROBOTS[name]()
        mech, our_calls = ours(spec)
        before_calls = {}
        if before is not None:
            _, before_calls = ours(spec, before)
            check_before(spec, our_calls, before_calls)
        q0 = spec.random_configurations(1, seed=1)[0]
        peers = load_peers(spec, tmpdir, q0)
        for p in peers.values():
            results["peers"].setdefault(p.name, {"version": p.version, "error": p.error})
        checked = cross_check(spec, mech, peers, rng)
        print(f"[{name}] cross-checked to {TOL:g}: {', '.join(checked)}", flush=True)
        qs = spec.random_configurations(64, seed=3)
        Qb = spec.random_configurations(BATCH, seed=4)
        rows, best_rows = {}, {}
        for task, _ in TASKS:
            if task.startswith("batch"):
                arg_sets = [Qb]
                rep, tmin = max(5, args.repeat // 2), args.min_time * 4
            else:
                arg_sets = list(qs)
                rep, tmin = args.repeat, args.min_time
            fns = {}
            for who, fn in ([("ours", our_calls.get(task)), ("before", before_calls.get(task))]
                            + [(p, peers[p].calls.get(task)) for p in PEERS]):
                if fn is not None:
                    fns[who] = (lambda fn=fn, nxt=itertools.cycle(arg_sets).__next__: fn(nxt()))
            fastest: dict = {}
            row = interleaved(fns, rep, tmin, fastest)
            rows[task] = row
            if "before" in fastest:
                best_rows[task] = fastest
            shown = ", ".join(f"{k} {_fmt_t(v)}" for k, v in row.items())
            print(f"[{name}] {task}: {shown}", flush=True)
        cpu = {}
        if before is not None:
            # before against ours alone: CPU time of this process (what other jobs on a shared machine do
            # not add to), many interleaved rounds, medians and fastest rounds
            for task, _ in TASKS:
                arg_sets = [Qb] if task.startswith("batch") else list(qs)
                tmin = args.min_time * (4 if task.startswith("batch") else 1)
                rounds = max(5, args.before_rounds // 4) if task.startswith("batch") else args.before_rounds
                fns = {who: (lambda fn=fn, nxt=itertools.cycle(arg_sets).__next__: fn(nxt()))
                       for who, fn in (("ours", our_calls[task]), ("before", before_calls[task]))}
                fastest = {}
                med = interleaved(fns, rounds, tmin, fastest, timer=time.process_time)
                cpu[task] = {"median": med, "best": fastest, "rounds": rounds}
                print(f"[{name}] {task} CPU time, {rounds} rounds, before / ours: median "
                      f"{med['before'] / med['ours']:.3f}, best {fastest['before'] / fastest['ours']:.3f}",
                      flush=True)
        results["robots"][name] = {"nq": spec.nq, "frames": len(mech.frame_names), "rows": rows,
                                   "best": best_rows, "before_cpu": cpu}
    results["import"] = import_time()
    return results


def import_time() -> dict:
    """Cold-ish import of mechanism_model_core in fresh interpreters: wall time (median of 5) and
    whether scipy got imported."""
    code = ("import time, sys; t = time.perf_counter(); import mechanism_model_core; "
            "print(time.perf_counter() - t, 'scipy' in sys.modules, 'lxml' in sys.modules)")
    walls, scipy_loaded, lxml_loaded = [], None, None
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        w, s, x = out.stdout.split()
        walls.append(float(w))
        scipy_loaded, lxml_loaded = s == "True", x == "True"
    prof = subprocess.run([sys.executable, "-X", "importtime", "-c", "import mechanism_model_core"],
                          capture_output=True, text=True, check=True).stderr
    cumulative = None
    for line in prof.splitlines():
        m = re.match(r"import time:\s+\d+\s+\|\s+(\d+)\s+\|\s*mechanism_model_core$", line)
        if m:
            cumulative = int(m.group(1)) * 1e-6
    return {"wall": statistics.median(walls), "importtime": cumulative, "scipy": scipy_loaded,
            "lxml": lxml_loaded}


# ----------------------------------------------------------------------------------------- report
def _fmt_t(t: float) -> str:
    if t >= 1e-3:
        return f"{t * 1e3:.2f} ms"
    return f"{t * 1e6:.2f} us"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, numpy {np.__version__}; load average {load}")


def report(res: dict) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [BEGIN, "## Forward kinematics and Jacobians", "",
             f"Measured {now} by `python benchmarks/bench_kinematics.py` on {machine()}.", "",
             "Every library runs in the same process on the same robot (one URDF string, see "
             "`benchmarks/common.py`); before timing, each one's tool pose, link poses, Jacobians and batch "
             f"results are checked against ours to {TOL:g}. Times are medians per call over rounds that run "
             "every library in turn (so that load from elsewhere hits all alike); the figure in brackets is "
             "the peer's time divided by ours (above 1: we are faster).", ""]
    peers = res["peers"]
    versions = ", ".join(f"{n} {peers[n]['version']}" for n in PEERS if n in peers and not peers[n]["error"])
    lines.append(f"Peers: {versions}.")
    broken = [f"{n}: {peers[n]['error']}" for n in PEERS if n in peers and peers[n]["error"]]
    if broken:
        lines.append("Unavailable here (recorded, not patched): " + "; ".join(broken) + ".")
    lines.append("")
    cols = (["before"] if res.get("before") else []) + PEERS
    head = "| robot | task | ours | " + " | ".join(cols) + " |"
    lines += [head, "|" + "---|" * (3 + len(cols))]
    for robot, r in res["robots"].items():
        for task, label in TASKS:
            row = r["rows"].get(task, {})
            if "ours" not in row:
                continue
            cells = [f"{robot} (nq={r['nq']}, {r['frames']} frames)" if task == "all" else robot, label,
                     _fmt_t(row["ours"])]
            for p in cols:
                cells.append(f"{_fmt_t(row[p])} ({row[p] / row['ours']:.2f})" if p in row else "--")
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("What each column calls: ours `forward_kinematics(m, q).frame_array()` (every body and named "
                 "frame), `.pose(tool)`, `jacobian(m, q, tool[, convention='WORLD'])`, and "
                 "`forward_kinematics(m, Q).pose(tool)` and `jacobian(m, Q, tool)` for the batches; Pinocchio "
                 "`framesForwardKinematics` (all frames), `forwardKinematics` + `updateFramePlacement` (one "
                 "frame, and in a Python loop for the batch, copying each pose out), `computeFrameJacobian` (in "
                 "a Python loop for the batch); roboticstoolbox `fkine_all`, "
                 "`fkine`, `jacob0`, and `fkine(Q)` (its C batch call, returning an SE3 array); ikpy "
                 "`forward_kinematics` (with `full_kinematics=True` for all frames); kinpy "
                 "`Chain.forward_kinematics` (all frames), `SerialChain.forward_kinematics` and `.jacobian`. "
                 "`--` means the library has no such call (ikpy: no Jacobian; only Pinocchio has the WORLD "
                 "convention; the pure-Python peers are not run in a 10,000-iteration loop).")
    if res.get("before"):
        lines.append("")
        what = BEFORE_NOTES.get(res["before"][:7], "")
        lines.append(f"`before` is this package as it was at commit `{res['before']}`{what}, imported next to the "
                     "current one in the same process and cross-checked against it; its ratio is its time "
                     "divided by ours (above 1: the current code is faster). Fastest rounds, before / ours: " +
                     "; ".join(f"{robot} {task} {b['before'] / b['ours']:.3f}" for robot, r in res["robots"].items()
                               for task, b in r.get("best", {}).items()) + f" (load average {os.getloadavg()[0]:.1f}).")
        lines += before_cpu_table(res)
    lines.append("")
    lines.append("On this shared 2-core machine absolute times move by 10-20 % with the load of other jobs "
                 "(load average above); ratios from one run are stable to a few percent. Pinocchio (C++) is "
                 "an order of magnitude faster per call than any Python library here; roboticstoolbox's "
                 "`fkine` and `jacob0` for one configuration are C as well.")
    lines.append("")
    imp = res["import"]
    it = f", `-X importtime` cumulative {imp['importtime']:.3f} s" if imp["importtime"] is not None else ""
    lines.append(f"`import mechanism_model_core`: {imp['wall']:.3f} s wall (median of 5 fresh interpreters)"
                 f"{it}; scipy imported: {'yes' if imp['scipy'] else 'no'}, lxml imported: "
                 f"{'yes' if imp['lxml'] else 'no'}.")
    lines.append("")
    lines += targets(res)
    lines.append(END)
    return "\n".join(lines) + "\n"


def before_cpu_table(res: dict) -> list[str]:
    """The ``--before`` comparison in CPU time: per robot and task, before / ours of the medians and of the
    fastest rounds (above 1: the current code is faster)."""
    rows = [(robot, task, c) for robot, r in res["robots"].items() for task, c in r.get("before_cpu", {}).items()]
    if not rows:
        return []
    n1 = max(c["rounds"] for _, t, c in rows if not t.startswith("batch"))
    nb = max(c["rounds"] for _, t, c in rows if t.startswith("batch"))
    out = ["", f"Before and ours alone, CPU time of this process (`time.process_time`), {n1} interleaved rounds "
           f"({nb} for the batches), load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}: ratio "
           "before / ours of the medians and of the fastest rounds (above 1: the current code is faster).", "",
           "| robot | task | ours (median) | before (median) | ratio of medians | ratio of fastest |",
           "|---|---|---|---|---|---|"]
    labels = dict(TASKS)
    worst = math.inf
    for robot, task, c in rows:
        m, b = c["median"], c["best"]
        rm, rb = m["before"] / m["ours"], b["before"] / b["ours"]
        worst = min(worst, rm, rb)
        out.append(f"| {robot} | {labels[task]} | {_fmt_t(m['ours'])} | {_fmt_t(m['before'])} | {rm:.3f} | "
                   f"{rb:.3f} |")
    out += ["", f"Target of issue 13 (every ratio >= 1.00, now at least as fast as before): "
                f"{'met' if worst >= 1.0 else '**not met**'} (lowest {worst:.3f})."]
    return out


def targets(res: dict) -> list[str]:
    """The targets of issue 2, evaluated on this run."""
    out = ["Targets of issue 2 in this run:", ""]
    R = res["robots"]

    def ok(b):
        return "met" if b else "**not met**"

    if "chain10" in R:
        rows = R["chain10"]["rows"]
        a = rows["all"]
        pure = [p for p in ("ikpy", "kinpy") if p in a]
        beat = all(a[p] > a["ours"] for p in pure) and ("roboticstoolbox" not in a
                                                        or a["roboticstoolbox"] > a["ours"])
        out.append(f"- all frames, 10-joint chain: {_fmt_t(a['ours'])} (target <= 10 us: "
                   f"{ok(a['ours'] <= 10e-6)}); faster than {', '.join(pure + ['roboticstoolbox fkine_all'])}: "
                   f"{ok(beat)}")
        j = rows["jac_lwa"]["ours"]
        out.append(f"- Jacobian, 10-joint chain: {_fmt_t(j)} (target <= 15 us: {ok(j <= 15e-6)})")
    if "ur5" in R:
        b = R["ur5"]["rows"]["batch"]
        beat = all(b[p] > b["ours"] for p in ("pinocchio", "roboticstoolbox") if p in b)
        out.append(f"- batch of {BATCH:,} UR5 configurations: {_fmt_t(b['ours'])} (target <= 5 ms: "
                   f"{ok(b['ours'] <= 5e-3)}); faster than Pinocchio in a Python loop and roboticstoolbox's "
                   f"C batch call: {ok(beat)}")
    w = res["import"]["wall"]
    out.append(f"- `import mechanism_model_core`: {w:.3f} s (target < 0.3 s: {ok(w < 0.3)}), scipy "
               f"{'not ' if not res['import']['scipy'] else ''}imported")
    out.append("")
    return out


def write_section(path: str, section: str) -> None:
    """Put ``section`` into BENCHMARKS.md between its markers, leaving every other section alone."""
    header = ("# Benchmarks\n\nTimings of mechanism_model_core next to other robotics libraries, measured in "
              "one process on one machine; scripts in `benchmarks/`. Figures depend on the machine and its "
              "load: compare the ratios of one run rather than absolute times across runs.\n\n")
    text = open(path).read() if os.path.exists(path) else header
    if BEGIN in text and END in text:
        pre, rest = text.split(BEGIN, 1)
        post = rest.split(END, 1)[1]
        text = pre + section.rstrip("\n") + post
    elif "\n## " in text:                    # first section after the file's header
        pre, post = text.split("\n## ", 1)
        text = pre.rstrip("\n") + "\n\n" + section + "\n## " + post
    else:
        text = text.rstrip("\n") + "\n\n" + section
    with open(path, "w") as f:
        f.write(text)


#: what a --before commit was, for the table's note
BEFORE_NOTES = {
    "8c5f01b": " (plain numpy kinematics, before the compiled passes)",
    "ca3f62d": " (before issue 13 moved the evaluation plans out of the model, made the pass exact for any "
               "angle and linear in model size)",
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", default=list(common.ROBOTS), choices=list(common.ROBOTS))
    ap.add_argument("--repeat", type=int, default=15, help="rounds per measurement (median taken)")
    ap.add_argument("--min-time", type=float, default=0.02, help="seconds per timed run")
    ap.add_argument("--quick", action="store_true", help="fewer repeats; implies --no-write")
    ap.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md alone")
    ap.add_argument("--output", default=os.path.join(os.path.dirname(HERE), "BENCHMARKS.md"))
    ap.add_argument("--before", metavar="COMMIT", help="also time the package as it was at this git commit")
    ap.add_argument("--before-rounds", type=int, default=40,
                    help="interleaved rounds of the CPU-time before/ours comparison (a quarter for the batches)")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeat, args.min_time, args.no_write = 3, 0.01, True
    res = measure(args)
    section = report(res)
    print()
    print(section)
    if not args.no_write:
        write_section(args.output, section)
        print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
