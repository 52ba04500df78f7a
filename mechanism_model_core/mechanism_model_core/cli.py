"""The ``mechanism-model`` command: look at, check, convert and draw mechanism models.

Subcommands (``mechanism-model <command> --help`` for each)::

    info [MODEL]                     bodies, joints (type, axis, limits), frames, joint-coordinate order
    check FILE...                    validate model files; every problem as file:line: message
    fk MODEL --q name=value ...      poses of frames (matrix, xyz + roll-pitch-yaw, quaternion)
    jacobian MODEL --frame F ...     geometric Jacobian (rows vx vy vz wx wy wz) of a frame
    convert IN OUT                   CLARAty XML <-> URDF, and from KinDSL / D-H tables (.kindsl, .dh)
    render MODEL --q ... -o out.png  a picture from two viewpoints (needs matplotlib)
    demo                             the default rover: its tree and a few poses
    models                           the shipped robot library

MODEL is a file path or a path inside the robot library (``rocky8/rocky8_rover.xml``); ``info`` and
``demo`` use the default model when none is given. Joint values are ``name=value`` pairs; values may be
expressions (``pi/2``, ``-M_PI_4``) and are radians and metres unless ``--degrees`` is given. Coordinates
not given take their home value; coupled joints follow their coupling.

Errors go to stderr with exit status 1 (2 for bad command-line usage); a model file error names the file
and line.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

from .errors import MechanismModelError, ModelFileError
from .spatial import matrix_to_quaternion, matrix_to_rpy

PROG = "mechanism-model"


# ---------------------------------------------------------------------------------------------- helpers
class CommandError(MechanismModelError):
    """A command-line request that cannot be carried out (printed without a traceback)."""


def _resolve(model: str | None) -> str:
    from .library import default_model_path, model_path

    return default_model_path() if model is None else model_path(model)


def _load(model: str | None):
    from .io import load_model

    return load_model(_resolve(model))


def _parse_values(mech, pairs, degrees: bool = False) -> dict:
    """``["joint1=0.3", "chassis.z=0.1"]`` -> ``{name: float}`` (safe expressions; degrees for angles)."""
    from .io.expressions import evaluate

    out = {}
    for item in pairs or ():
        for token in item.split(","):
            token = token.strip()
            if not token:
                continue
            name, sep, text = token.partition("=")
            name = name.strip()
            if not sep or not name or not text.strip():
                raise CommandError(f"joint value {token!r} is not of the form name=value")
            idx = mech.coordinate_index(name)  # UnknownJoint names the known ones
            value = evaluate(text.strip())
            if degrees and not mech.coordinate_is_prismatic[idx]:
                value = math.radians(value)
            out[name] = value
    return out


def _configuration(mech, pairs, degrees=False) -> np.ndarray:
    return mech.configuration(_parse_values(mech, pairs, degrees))


def _fmt(v: float, width: int = 10, prec: int = 6) -> str:
    if abs(v) < 0.5 * 10.0 ** (-prec):
        v = 0.0
    return f"{v:{width}.{prec}f}"


def _limit_text(lo: float, hi: float, prismatic: bool) -> str:
    if not (math.isfinite(lo) or math.isfinite(hi)):
        return "unlimited"
    unit = "m" if prismatic else "rad"
    return f"[{lo:.4g}, {hi:.4g}] {unit}"


def _pose_dict(T: np.ndarray) -> dict:
    return {"matrix": np.round(T, 12).tolist(), "xyz": T[:3, 3].tolist(),
            "rpy": matrix_to_rpy(T[:3, :3]).tolist(), "quaternion_xyzw": matrix_to_quaternion(T[:3, :3]).tolist()}


def _print_pose(name: str, ref: str, T: np.ndarray, out) -> None:
    d = _pose_dict(T)
    print(f"{name} in {ref}:", file=out)
    for row in T:
        print("  " + " ".join(_fmt(v) for v in row), file=out)
    print("  xyz  (m)        " + " ".join(_fmt(v) for v in d["xyz"]), file=out)
    print("  rpy  (rad)      " + " ".join(_fmt(v) for v in d["rpy"]) + "   (URDF roll-pitch-yaw)", file=out)
    print("  quat (x y z w)  " + " ".join(_fmt(v) for v in d["quaternion_xyzw"]), file=out)


# ---------------------------------------------------------------------------------------------- info
def describe(mech, out=None, frames: bool = True) -> None:
    """Print the tree (bodies with their joints), the frames and the joint-coordinate order."""
    out = sys.stdout if out is None else out
    print(f"mechanism {mech.name!r}" + (f" from {mech.source}" if mech.source else ""), file=out)
    print(f"  {len(mech.bodies)} bodies (ground {mech.ground!r}), {len(mech.joints)} joints, "
          f"nq = {mech.nq} ({len(mech.independent_coordinates)} independent), {len(mech.frame_names)} frames",
          file=out)
    print("\ntree (body  <- joint: type, axis, limits):", file=out)

    def walk(body: str, depth: int) -> None:
        spec = mech.body(body).spec
        line = "  " * (depth + 1) + body
        j = spec.joint
        if j is not None:
            line += f"  <- {j.name}: {j.type.value}"
            if j.dof == 1:
                line += f", axis ({' '.join(f'{a:g}' for a in np.round(j.axis, 6))})"
                line += ", " + _limit_text(j.lower[0], j.upper[0], j.type.value == "prismatic")
                if j.coupling:
                    line += f", = {j.coupling}"
                if not j.actuated:
                    line += ", passive"
        print(line, file=out)
        for child in mech.children(body):
            walk(child, depth + 1)

    walk(mech.ground, 0)
    if frames:
        named = [(f, mech.frame(f)) for f in mech.frame_names if mech.frame(f).kind != "body"]
        print(f"\nnamed frames ({len(named)}; every body also has a frame named after it):", file=out)
        for f, ref in named:
            p = mech.frame_in_body(f)[:3, 3]
            print(f"  {f:28s} {ref.kind:9s} on {ref.body:24s} at ({', '.join(f'{v:.4g}' for v in p)})",
                  file=out)
    print("\njoint-coordinate order (q):", file=out)
    print(f"  {'#':>3s}  {'coordinate':28s} {'joint type':10s} {'limits':28s} {'home':>8s}", file=out)
    for i, c in enumerate(mech.coordinate_names):
        j = mech.joint(mech.coordinate_joint[i])
        extra = f"   = {mech.couplings[c].source}" if c in mech.couplings else ""
        lim = _limit_text(mech.lower_limits[i], mech.upper_limits[i], bool(mech.coordinate_is_prismatic[i]))
        print(f"  {i:3d}  {c:28s} {j.type.value:10s} {lim:28s} {mech.home[i]:8.4g}{extra}", file=out)


def cmd_info(args) -> int:
    describe(_load(args.model), frames=not args.no_frames)
    return 0


# ---------------------------------------------------------------------------------------------- check
def _dtd_problems(path: str) -> list[str]:
    """Every DTD violation of a CLARAty XML file, as ``file:line: message`` (empty if none or not CLARAty)."""
    from lxml import etree

    from .io.claraty_xml import DTD_PATH
    from .io.safe_xml import parse_file

    root = parse_file(path)
    if root.tag != "Mechanism_Model":
        return []
    dtd = etree.DTD(DTD_PATH)
    if dtd.validate(root):
        return []
    return [f"{path}:{e.line}: {e.message}" for e in dtd.error_log.filter_from_errors()]


def check_file(path: str) -> list[str]:
    """Problems of one model file (empty when it loads): DTD violations first, then the loader's error."""
    return _check(path)[0]


def _check(path: str):
    from .io import load_model

    if not os.path.exists(path):
        return [f"{path}: no such file"], None
    try:
        if path.lower().endswith((".xml", ".mm")):
            problems = _dtd_problems(path)
            if problems:
                return problems, None
        return [], load_model(path)
    except ModelFileError as exc:
        return [str(exc)], None
    except MechanismModelError as exc:
        return [f"{path}: {exc}"], None


def cmd_check(args) -> int:
    bad = 0
    for path in args.files:
        problems, m = _check(path)
        if problems:
            bad += 1
            for p in problems:
                print(p, file=sys.stderr)
        elif not args.quiet:
            print(f"{path}: ok ({m.name}: {len(m.bodies)} bodies, {len(m.joints)} joints, nq = {m.nq})")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------- fk
def cmd_fk(args) -> int:
    from .kinematics import forward_kinematics

    mech = _load(args.model)
    q = _configuration(mech, args.q, args.degrees)
    fk = forward_kinematics(mech, q)
    ref = args.relative_to or mech.ground
    frames = args.frame or [f for f in mech.frame_names if f != mech.ground]
    if args.json:
        data = {"model": mech.name, "relative_to": ref,
                "q": dict(zip(mech.coordinate_names, q.tolist())),
                "poses": {f: _pose_dict(fk.pose(f, args.relative_to)) for f in frames}}
        print(json.dumps(data, indent=1))
        return 0
    if args.frame:
        for f in frames:
            _print_pose(f, ref, fk.pose(f, args.relative_to), sys.stdout)
        return 0
    print(f"poses of every frame in {ref} (xyz in m, URDF roll-pitch-yaw in rad):")
    print(f"  {'frame':30s} {'x':>10s} {'y':>10s} {'z':>10s} {'roll':>10s} {'pitch':>10s} {'yaw':>10s}")
    for f in frames:
        T = fk.pose(f, args.relative_to)
        vals = list(T[:3, 3]) + list(matrix_to_rpy(T[:3, :3]))
        print(f"  {f:30s} " + " ".join(_fmt(v) for v in vals))
    return 0


# ---------------------------------------------------------------------------------------------- jacobian
def cmd_jacobian(args) -> int:
    from .jacobians import jacobian

    mech = _load(args.model)
    q = _configuration(mech, args.q, args.degrees)
    J = jacobian(mech, q, args.frame, args.relative_to, args.convention)
    cols = list(mech.coordinate_names)
    if args.independent:
        J = J @ mech.coupling_jacobian(q)
        cols = list(mech.independent_coordinates)
    if args.json:
        print(json.dumps({"model": mech.name, "frame": args.frame, "relative_to": args.relative_to or mech.ground,
                          "convention": args.convention.upper(), "rows": ["vx", "vy", "vz", "wx", "wy", "wz"],
                          "columns": cols, "jacobian": np.round(J, 12).tolist()}, indent=1))
        return 0
    print(f"Jacobian of {args.frame} relative to {args.relative_to or mech.ground}, "
          f"convention {args.convention.upper()}: 6 x {J.shape[1]}, one line per column "
          f"(m/s and rad/s per unit joint rate)")
    print(f"  {'coordinate':30s} " + " ".join(f"{r:>10s}" for r in ("vx", "vy", "vz", "wx", "wy", "wz")))
    for k, c in enumerate(cols):
        print(f"  {c:30s} " + " ".join(_fmt(v) for v in J[:, k]))
    return 0


# ---------------------------------------------------------------------------------------------- convert
def save_model(mech, path: str) -> None:
    """Write ``mech`` to ``path`` in the format its extension names (.urdf, or .xml for CLARAty XML)."""
    from . import io as mio

    saver = getattr(mio, "save_model", None)
    if saver is not None:
        saver(mech, path)
        return
    ext = os.path.splitext(path)[1].lower()
    if ext == ".urdf":
        try:
            from .io.urdf import to_urdf
        except ImportError:
            raise CommandError("writing URDF is not available in this version") from None
        text = to_urdf(mech)
    elif ext in (".xml", ".mm"):
        from .io import claraty_xml

        writer = getattr(claraty_xml, "to_claraty_xml", None)
        if writer is None:
            raise CommandError("writing CLARAty XML is not available in this version")
        text = writer(mech)
    else:
        raise CommandError(f"cannot write {ext or 'extension-less'} files; use .xml (CLARAty XML) or .urdf")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def cmd_convert(args) -> int:
    mech = _load(args.input)
    save_model(mech, args.output)
    print(f"{args.input} -> {args.output} ({mech.name}: {len(mech.bodies)} bodies, nq = {mech.nq})")
    return 0


# ---------------------------------------------------------------------------------------------- render
def cmd_render(args) -> int:
    try:
        from .render import render_png
    except ImportError as exc:  # pragma: no cover - matplotlib missing
        raise CommandError(f"render needs matplotlib ({exc}); pip install matplotlib") from None
    mech = _load(args.model)
    q = _configuration(mech, args.q, args.degrees)
    try:
        render_png(mech, q, args.output, frames=args.frame, labels=not args.no_labels, dpi=args.dpi)
    except ImportError as exc:
        raise CommandError(f"render needs matplotlib ({exc}); pip install matplotlib") from None
    print(f"wrote {args.output}")
    return 0


# ---------------------------------------------------------------------------------------------- demo
def _demo_frames(mech) -> list[str]:
    keys = ("camera", "tool", "contact", "foot", "tip", "closure")
    named = [f for f in mech.frame_names if mech.frame(f).kind != "body" and any(k in f for k in keys)]
    named = [f for f in named if not f.endswith("_optical") and "navcam" not in f]
    if named:
        return named
    leaves = [b.name for b in mech.bodies if not mech.children(b.name)]
    return leaves[:8]


#: Sample configurations the demo shows for models of the library (by mechanism name).
DEMO_SAMPLES = {
    # turn-in-place steering (wheels tangent to circles about the body centre: atan(0.40 / 0.35)),
    # mast looking down and to the left, arm unfolded
    "rocky8": {"left_front_steer": -0.852, "right_front_steer": 0.852, "left_rear_steer": 0.852,
               "right_rear_steer": -0.852, "mast_pan": 0.5, "mast_tilt": 0.4,
               "arm_yaw": 0.3, "arm_shoulder": -0.4, "arm_elbow": 1.2, "arm_wrist": 0.8, "arm_turret": 0.5},
}


def demo_configuration(mech) -> dict:
    """A sample configuration: the library's own for known models, otherwise each independent, bounded
    coordinate a quarter of the way to a limit (floating and unbounded coordinates stay home)."""
    if mech.name in DEMO_SAMPLES and all(k in mech.coordinate_names for k in DEMO_SAMPLES[mech.name]):
        return dict(DEMO_SAMPLES[mech.name])
    out = {}
    for i, c in enumerate(mech.coordinate_names):
        if c not in mech.independent_coordinates:
            continue
        lo, hi = mech.lower_limits[i], mech.upper_limits[i]
        if math.isfinite(lo) and math.isfinite(hi) and hi > lo:
            sign = 1.0 if (i % 2 == 0) else -1.0
            target = hi if sign > 0 else lo
            out[c] = float(mech.home[i] + 0.25 * (target - mech.home[i]))
    return out


def cmd_demo(args) -> int:
    from .kinematics import forward_kinematics

    mech = _load(args.model)
    describe(mech, frames=False)
    frames = _demo_frames(mech)
    sample = demo_configuration(mech)
    for title, values in (("home configuration", None), ("sample configuration", sample)):
        fk = forward_kinematics(mech, values)
        print(f"\n{title}:")
        if values:
            print("  " + ", ".join(f"{k}={v:.3f}" for k, v in values.items()))
        print(f"  {'frame':30s} {'x':>10s} {'y':>10s} {'z':>10s} {'roll':>10s} {'pitch':>10s} {'yaw':>10s}")
        for f in frames:
            T = fk.pose(f)
            vals = list(T[:3, 3]) + list(matrix_to_rpy(T[:3, :3]))
            print(f"  {f:30s} " + " ".join(_fmt(v) for v in vals))
    if args.render:
        from .render import render_png

        render_png(mech, mech.configuration(sample), args.render)
        print(f"\nwrote {args.render} (sample configuration)")
    print("\nnext: mechanism-model info | fk MODEL --q name=value --frame F | render MODEL -o out.png "
          "| models")
    return 0


# ---------------------------------------------------------------------------------------------- models
def cmd_models(args) -> int:
    from .io import load_model
    from .library import DEFAULT_MODEL, list_models, model_path, model_summary, models_dir

    print(f"robot library in {models_dir()} (default: {DEFAULT_MODEL})")
    for rel in list_models():
        path = model_path(rel)
        shown = path if args.paths else rel
        try:
            m = load_model(path)
            desc = f"{m.name}: {len(m.bodies) - 1} bodies, nq = {m.nq}"
        except MechanismModelError as exc:
            desc = f"does not load: {exc}"
        mark = " (default)" if rel == DEFAULT_MODEL else ""
        print(f"  {shown:36s} {desc}{mark}")
        summary = model_summary(rel)
        if summary:
            print(f"  {'':36s}   {summary}")
    return 0


# ---------------------------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Inspect, check, convert and draw mechanism models "
                                "(CLARAty XML, URDF, KinDSL, D-H tables).",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Run 'mechanism-model <command> --help' for the options of a command.")
    from . import __version__

    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="command")
    sub.required = True

    def model_arg(sp, optional=False):
        if optional:
            sp.add_argument("model", nargs="?", default=None,
                            help="model file or library path (default: the default rover)")
        else:
            sp.add_argument("model", help="model file or library path, e.g. rocky8/rocky8_rover.xml")

    def q_args(sp):
        sp.add_argument("--q", nargs="+", action="extend", metavar="NAME=VALUE", default=[],
                        help="joint values (radians / metres; expressions like pi/2 allowed); others stay home")
        sp.add_argument("--degrees", action="store_true", help="angles in --q are in degrees")

    sp = sub.add_parser("info", help="the tree: bodies, joints, frames, coordinate order",
                        description="Print the mechanism tree (bodies with their joints: type, axis, limits), "
                                    "the named frames and the joint-coordinate order.")
    model_arg(sp, optional=True)
    sp.add_argument("--no-frames", action="store_true", help="leave out the list of named frames")
    sp.set_defaults(func=cmd_info)

    sp = sub.add_parser("check", help="validate model files (every problem as file:line: message)",
                        description="Validate model files against the DTD and load them. Every problem is "
                                    "printed to stderr as file:line: message; exit status 1 if any file fails.")
    sp.add_argument("files", nargs="+", metavar="FILE")
    sp.add_argument("-q", "--quiet", action="store_true", help="print nothing for good files")
    sp.set_defaults(func=cmd_check)

    sp = sub.add_parser("fk", help="forward kinematics: poses of frames",
                        description="Poses of frames for the given joint values: with --frame, each as a 4x4 "
                                    "matrix, xyz, URDF roll-pitch-yaw and quaternion (x y z w); without, a "
                                    "table of every frame.")
    model_arg(sp)
    q_args(sp)
    sp.add_argument("--frame", action="append", metavar="F", help="frame to print (repeatable)")
    sp.add_argument("--relative-to", metavar="R", help="reference frame (default: ground)")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.set_defaults(func=cmd_fk)

    sp = sub.add_parser("jacobian", help="geometric Jacobian of a frame",
                        description="The 6 x nq geometric Jacobian of a frame (rows vx vy vz wx wy wz), "
                                    "printed one joint coordinate per line.")
    model_arg(sp)
    sp.add_argument("--frame", required=True, metavar="F")
    q_args(sp)
    sp.add_argument("--relative-to", metavar="R", help="reference frame (default: ground)")
    sp.add_argument("--convention", default="LOCAL_WORLD_ALIGNED",
                    type=str.upper, choices=["WORLD", "LOCAL", "LOCAL_WORLD_ALIGNED"],
                    help="reference convention, as in Pinocchio (default LOCAL_WORLD_ALIGNED)")
    sp.add_argument("--independent", action="store_true",
                    help="columns for the independent coordinates only (couplings folded in)")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    sp.set_defaults(func=cmd_jacobian)

    sp = sub.add_parser("convert", help="convert between model formats",
                        description="Convert a model: reads CLARAty XML (.xml), URDF (.urdf), KinDSL (.kindsl) "
                                    "and D-H tables (.dh); writes CLARAty XML (.xml) or URDF (.urdf), chosen "
                                    "by the output file's extension.")
    sp.add_argument("input", metavar="IN")
    sp.add_argument("output", metavar="OUT")
    sp.set_defaults(func=cmd_convert)

    sp = sub.add_parser("render", help="draw the mechanism to a PNG (two viewpoints)",
                        description="Draw the mechanism in a configuration: links as lines between body "
                                    "origins, named frames as axis triads (x red, y green, z blue), bounding "
                                    "shapes as wireframes; an oblique view and a side view. Needs matplotlib.")
    model_arg(sp)
    q_args(sp)
    sp.add_argument("-o", "--output", required=True, metavar="OUT.png")
    sp.add_argument("--frame", action="append", metavar="F", help="frames to draw (default: all named frames)")
    sp.add_argument("--no-labels", action="store_true", help="do not write frame names")
    sp.add_argument("--dpi", type=int, default=100)
    sp.set_defaults(func=cmd_render)

    sp = sub.add_parser("demo", help="the default rover: its tree and a few poses",
                        description="Load the default model (a Rocky 8 style rover assembled from separate "
                                    "files), print its tree and the poses of its cameras, tool and wheel "
                                    "contacts at home and at a sample configuration.")
    sp.add_argument("--model", default=None, help="another model instead of the default")
    sp.add_argument("--render", metavar="OUT.png", help="also draw the sample configuration to a PNG")
    sp.set_defaults(func=cmd_demo)

    sub.add_parser("serve", add_help=False,
                   help="run the ROS 2 state publisher and kinematics server (Cyclone DDS or rclpy)",
                   description="Run the ROS 2 nodes on a model; see 'mechanism-model serve --help'.")

    sp = sub.add_parser("models", help="list the shipped robot library",
                        description="List the model files of the robot library with their size and "
                                    "their own one-line description.")
    sp.add_argument("--paths", action="store_true", help="print absolute paths")
    sp.set_defaults(func=cmd_models)
    return p


def main(argv=None) -> int:
    """Entry point of ``mechanism-model``; returns the exit status."""
    import warnings

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["serve"]:
        return _serve(argv[1:])
    parser = build_parser()
    args = parser.parse_args(_model_before_q(argv))

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{PROG} {args.command}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        return _run(args)


_MODEL_EXTENSIONS = (".xml", ".urdf", ".kindsl", ".dh", ".mm")


def _model_before_q(argv: list) -> list:
    """``fk --q a=1 MODEL`` means ``fk MODEL --q a=1``: ``--q`` takes every following word, so a model file
    name after its first value is moved in front, where argparse expects the model."""
    if not argv or argv[0] not in ("fk", "jacobian", "render"):
        return argv
    out, stray, taken = [argv[0]], [], None     # taken: values --q has had so far, None outside --q
    for word in argv[1:]:
        if word.startswith("-"):
            taken = 0 if word == "--q" else None
        elif taken is not None:
            if taken and "=" not in word and os.path.splitext(word)[1].lower() in _MODEL_EXTENSIONS:
                stray.append(word)
                continue
            taken += 1
        out.append(word)
    return out[:1] + stray + out[1:]


def _serve(argv) -> int:
    """``mechanism-model serve``: the ROS layer lives in mechanism_model_ros (the core imports no ROS)."""
    try:
        from mechanism_model_ros.serve import main as serve_main
    except ImportError as exc:
        print(f"{PROG} serve: error: needs the mechanism_model_ros package "
              f"(pip install './mechanism_model_ros[cyclone]'): {exc}", file=sys.stderr)
        return 2
    return int(serve_main(argv) or 0)


def _run(args) -> int:
    try:
        return int(args.func(args) or 0)
    except MechanismModelError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0
    except OSError as exc:
        print(f"{PROG} {args.command}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
