"""``mechanism-model info [MODEL]``: the tree (bodies with their joints), the named frames, the coordinate order."""

from __future__ import annotations

import sys

import numpy as np

from .common import CommandError, limit_text, load, model_arg
from ..io.urdf import loads_urdf


def add_parser(subparsers):
    sp = subparsers.add_parser("info", help="the tree: bodies, joints, frames, coordinate order",
                               description="Print the mechanism tree (bodies with their joints: type, axis, "
                                           "limits), the named frames and the joint-coordinate order.")
    model_arg(sp, optional=True)
    sp.add_argument("--no-frames", action="store_true", help="leave out the list of named frames")
    sp.add_argument("--from-topic", metavar="TOPIC", default=None,
                    help="the live robot description on TOPIC (e.g. /robot_description of a running "
                         "robot_state_publisher) over Cyclone DDS, no ROS installation needed (needs the "
                         "mechanism_model_ros package); ROS_DOMAIN_ID applies")
    sp.add_argument("--timeout", type=float, default=10.0,
                    help="seconds to wait for the description on --from-topic (default 10)")
    return sp


def run(args) -> int:
    if args.from_topic:
        if args.model:
            raise CommandError("give a MODEL or --from-topic, not both")
        describe(_from_topic(args.from_topic, args.timeout), frames=not args.no_frames)
        return 0
    describe(load(args.model), frames=not args.no_frames)
    return 0


def _from_topic(topic: str, timeout: float):
    """The mechanism of the URDF on ``topic`` (through ``mechanism_model_ros``: the core imports no ROS)."""
    import importlib

    try:
        fetch = importlib.import_module("mechanism_model_ros.client_cli").fetch_robot_description
    except ImportError as exc:
        raise CommandError(f"--from-topic needs the mechanism_model_ros package with Cyclone DDS "
                           f"(pip install './mechanism_model_ros[cyclone]'): {exc}") from None
    try:
        text = fetch(topic, timeout)
    except TimeoutError as exc:
        raise CommandError(str(exc)) from None
    return loads_urdf(text, name=f"robot_description topic {topic}")


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
                line += ", " + limit_text(j.lower[0], j.upper[0], j.type.value == "prismatic")
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
        lim = limit_text(mech.lower_limits[i], mech.upper_limits[i], bool(mech.coordinate_is_prismatic[i]))
        print(f"  {i:3d}  {c:28s} {j.type.value:10s} {lim:28s} {mech.home[i]:8.4g}{extra}", file=out)
