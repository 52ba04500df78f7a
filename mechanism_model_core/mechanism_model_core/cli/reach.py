"""``mechanism-model reach map|show|place``: reachability maps and base placement (:mod:`..reach`).

    mechanism-model reach map MODEL --chain BASE:TIP --resolution 0.05 -o map.h5 [--directions 50]
        [--rolls 0] [--axis z] [--mode pose|position|fk] [--workers N] [--executor pool|serial|dask]
        [--scheduler tcp://host:8786] [--png slices.png] [--restart]
    mechanism-model reach show MAP [--model MODEL] [--png slices.png]
    mechanism-model reach place MODEL --chain BASE:TIP --target X Y Z [--direction DX DY DZ]
        [--terrain flat|slope:DEG[:DIR_DEG]|FILE.stl] [--map map.h5] [--json]     (--target X Y: on the terrain)

``map`` streams finished chunks beside the output (``map.h5.partial/``): the same command after a kill
resumes. Exit status 0 on success, 1 for an error (a bad request is refused before any work), 1 for
``place`` when no placement reaches the target.
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np

from ..reach import ReachMap, compute_map
from ..reach.placement import place_base
from ..reach.plot import save_slices
from ..terrain import Plane, TriangleMesh
from .common import CommandError, load, model_arg


def add_parser(subparsers):
    sp = subparsers.add_parser("reach", help="reachability maps of a chain and base placement for a target",
                               description="Reachability (capability) maps of a chain in its base frame, "
                                           "computed locally or on Dask, stored as HDF5; where a rover should "
                                           "stop so its arm reaches a target.")
    sub = sp.add_subparsers(dest="reach_command", metavar="{map,show,place}")
    sub.required = True
    m = sub.add_parser("map", help="compute a reachability map and write it to an HDF5 file")
    model_arg(m)
    m.add_argument("--chain", required=True, metavar="BASE:TIP", help="base frame and tool frame of the chain")
    m.add_argument("--resolution", type=float, default=0.05, help="voxel size in m (default 0.05)")
    m.add_argument("-o", "--output", required=True, metavar="MAP.h5")
    m.add_argument("--mode", default="pose", choices=("pose", "position", "fk"),
                   help="pose: approach directions per voxel (default); position: orientation-free; fk: FK "
                        "samples only (estimate)")
    m.add_argument("--directions", type=int, default=50, help="approach directions per voxel (default 50)")
    m.add_argument("--rolls", type=int, default=0, help="roll angles about the approach axis (0: roll free)")
    m.add_argument("--axis", default="z", help="the tool's approach axis: x, y, z, -x, -y, -z (default z)")
    m.add_argument("--bound", nargs=6, type=float, metavar=("XLO", "YLO", "ZLO", "XHI", "YHI", "ZHI"),
                   help="box to map, m in the base frame (default: the chain's reach)")
    m.add_argument("--executor", default=None, choices=("serial", "pool", "dask"),
                   help="pool (default; dask when --scheduler is given)")
    m.add_argument("--workers", type=int, default=None, help="local workers (default: the cores available)")
    m.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT", help="a Dask scheduler to use")
    m.add_argument("--chunk-size", type=int, default=None,
                   help="voxels per task (default: a sixteenth of the map, 64 to 1000)")
    m.add_argument("--max-iterations", type=int, default=1000, help="IK iteration budget per sample")
    m.add_argument("--search", default="flood", choices=("flood", "exhaustive"),
                   help="flood: probe every sample, grow from the reached ones (default); exhaustive: every "
                        "sample the whole budget")
    m.add_argument("--seed", type=int, default=0, help="seed of the sampling (default 0)")
    m.add_argument("--self-collision", action="store_true", help="reject self-colliding solutions (needs coal)")
    m.add_argument("--restart", action="store_true", help="discard an unfinished run's journal")
    m.add_argument("--png", metavar="SLICES.png", help="also draw three slices of the index (matplotlib)")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    s = sub.add_parser("show", help="summarize a map file (and draw slices)")
    s.add_argument("map", metavar="MAP.h5")
    s.add_argument("--model", help="refuse the map unless it was computed for this model")
    s.add_argument("--png", metavar="SLICES.png")
    s.add_argument("--json", action="store_true")
    p = sub.add_parser("place", help="rover poses from which the arm reaches a target on a terrain")
    model_arg(p)
    p.add_argument("--chain", required=True, metavar="BASE:TIP")
    p.add_argument("--target", required=True, nargs="+", type=float, metavar="X Y [Z]",
                   help="target point, m in the ground frame (without Z: on the terrain)")
    p.add_argument("--direction", nargs=3, type=float, metavar=("DX", "DY", "DZ"),
                   help="approach direction (default: into the terrain along its normal at the target)")
    p.add_argument("--terrain", default="flat",
                   help="flat (default), slope:DEG[:DIR_DEG] (rising towards DIR), or a mesh file")
    p.add_argument("--map", metavar="MAP.h5", help="a reachability map of the chain (ranks and prunes)")
    p.add_argument("--step", type=float, default=0.1, help="candidate spacing in m (default 0.1)")
    p.add_argument("--yaws", type=int, default=12, help="candidate headings (default 12)")
    p.add_argument("--radius", type=float, default=None, help="search radius in m (default: the arm's reach)")
    p.add_argument("--results", type=int, default=5, help="placements to return (default 5)")
    p.add_argument("--min-stability", type=float, default=0.0, help="least support-polygon margin, m")
    p.add_argument("--json", action="store_true")
    return sp


def run(args) -> int:
    return {"map": _run_map, "show": _run_show, "place": _run_place}[args.reach_command](args)


def _progress(quiet: bool):
    if quiet:
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:     # pragma: no cover - the 'reach' extra
        tqdm = None
    state = {"bar": None, "last": 0.0}

    def report(done, total):
        if tqdm is not None:
            if state["bar"] is None:
                state["bar"] = tqdm(total=total, initial=done, unit="sample", file=sys.stderr, smoothing=0.1)
            else:
                state["bar"].update(done - state["bar"].n)
        elif time.monotonic() - state["last"] > 2 or done == total:
            state["last"] = time.monotonic()
            print(f"{done}/{total} samples", file=sys.stderr)

    def close():
        if state["bar"] is not None:
            state["bar"].close()
    return report, close


def _run_map(args) -> int:
    mech = load(args.model)
    executor = args.executor or ("dask" if args.scheduler else "pool")
    bound = None if args.bound is None else (args.bound[:3], args.bound[3:])
    report, close = _progress(args.quiet)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        rmap = compute_map(mech, args.chain, args.resolution, directions=args.directions, rolls=args.rolls,
                           axis=args.axis, mode=args.mode, bound=bound, path=args.output, executor=executor,
                           workers=args.workers, scheduler=args.scheduler, chunk_size=args.chunk_size,
                           seed=args.seed, max_iterations=args.max_iterations, self_collision=args.self_collision,
                           search=args.search,
                           restart=args.restart, progress=report)
    finally:
        close()
    wall = time.perf_counter() - t0
    print(f"wrote {args.output}: {_summary(rmap)}; {wall:.1f} s wall, {time.process_time() - c0:.1f} s CPU here")
    if args.png:
        _png(rmap, args.png)
    return 0


def _summary(rmap) -> str:
    g = rmap.grid
    reach = int((rmap.index > 0).sum())
    return (f"{g.shape[0]}x{g.shape[1]}x{g.shape[2]} voxels at {g.resolution:g} m, "
            f"{int(rmap.computed.sum())} in reach, "
            f"{reach} reachable, {rmap.reached.shape[-1]} samples per voxel, {rmap.attrs['samples']} IK samples")


def _png(rmap, path) -> None:
    try:
        save_slices(rmap, path)
    except ImportError as exc:
        raise CommandError(f"--png needs matplotlib ({exc})") from None
    print(f"wrote {path}")


def _run_show(args) -> int:
    mech = load(args.model) if args.model else None
    rmap = ReachMap.load(args.map, mech)
    if args.json:
        req = rmap.request
        print(json.dumps({"model_name": rmap.attrs["model_name"], "model_hash": rmap.attrs["model_hash"],
                          "software_version": rmap.attrs["software_version"], "request": req,
                          "shape": list(rmap.grid.shape), "reachable_voxels": int((rmap.index > 0).sum()),
                          "samples": int(rmap.attrs["samples"]), "iterations": int(rmap.attrs["iterations"])},
                         indent=1))
    else:
        print(f"{args.map}: {rmap.attrs['model_name']} {rmap.base}:{rmap.tool} ({rmap.request['mode']} mode, axis "
              f"{rmap.axis}, rolls {rmap.rolls}); {_summary(rmap)}; model hash {rmap.attrs['model_hash'][:16]}")
    if args.png:
        _png(rmap, args.png)
    return 0


def terrain_from(spec: str):
    """``flat``, ``slope:DEG[:DIR_DEG]`` or a mesh file -> a terrain."""
    if spec == "flat":
        return Plane()
    if spec.startswith("slope:"):
        try:
            parts = [float(v) for v in spec.split(":")[1:]]
        except ValueError:
            raise CommandError(f"--terrain {spec!r}: slope:DEG[:DIR_DEG] takes numbers") from None
        if not 1 <= len(parts) <= 2 or not all(math.isfinite(v) for v in parts):
            raise CommandError(f"--terrain {spec!r}: slope:DEG[:DIR_DEG] takes one or two finite numbers")
        return Plane.from_slope(math.radians(parts[0]), math.radians(parts[1] if len(parts) > 1 else 0.0))
    return TriangleMesh.from_file(spec)


def _run_place(args) -> int:
    mech = load(args.model)
    terrain = terrain_from(args.terrain)
    target = np.array(args.target, dtype=float)
    if len(target) not in (2, 3) or not np.all(np.isfinite(target)):
        raise CommandError("--target takes 2 or 3 finite numbers (X Y [Z], m)")
    if len(target) == 2:
        target = np.append(target, float(np.asarray(terrain.height(target[0], target[1])).reshape(-1)[0]))
    if args.direction is None:
        n = np.asarray(terrain.normal(target[0], target[1]), dtype=float).reshape(-1)[:3]
        direction = -n
    else:
        direction = np.array(args.direction, dtype=float)
    rmap = ReachMap.load(args.map, mech, chain=args.chain) if args.map else None
    res = place_base(mech, args.chain, target, direction, terrain, reach_map=rmap, step=args.step, yaws=args.yaws,
                     radius=args.radius, max_results=args.results, min_stability=args.min_stability)
    if args.json:
        print(json.dumps({"success": res.success, "message": res.message, "tried": res.tried,
                          "settled": res.settled, "verified": res.verified, "rejected": res.rejected,
                          "placements": [{"x": p.x, "y": p.y, "yaw": p.yaw, "score": p.score,
                                          "index": None if math.isnan(p.index) else p.index,
                                          "manipulability": p.manipulability, "stability_m": p.stability,
                                          "position_error_m": p.position_error,
                                          "orientation_error_rad": p.orientation_error,
                                          "arm_q": dict(zip(p.arm_joints, p.arm_q.tolist()))}
                                         for p in res.placements]}, indent=1))
    elif res.success:
        print(f"{len(res.placements)} placements ({res.tried} candidates, {res.settled} settled):")
        for p in res.placements:
            print(f"  x {p.x:8.3f} m  y {p.y:8.3f} m  yaw {math.degrees(p.yaw):7.1f} deg  score {p.score:.3f}  "
                  f"stability {p.stability:.3f} m  manipulability {p.manipulability:.3g}")
            print("    arm " + ", ".join(f"{n}={v:.4f}" for n, v in zip(p.arm_joints, p.arm_q)))
    else:
        print(res.message)
    return 0 if res.success else 1
