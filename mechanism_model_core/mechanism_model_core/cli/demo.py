"""``mechanism-model demo``: the default rover's tree and the poses of a few frames at two configurations."""

from __future__ import annotations

import math

from .common import load, pose_table_header, pose_table_row
from .info import describe
from ..kinematics import forward_kinematics
from ..render import render_png


def add_parser(subparsers):
    sp = subparsers.add_parser("demo", help="the default rover: its tree and a few poses",
                               description="Load the default model (a Rocky 8 style rover assembled from "
                                           "separate files), print its tree and the poses of its cameras, tool "
                                           "and wheel contacts at home and at a sample configuration.")
    sp.add_argument("--model", default=None, help="another model instead of the default")
    sp.add_argument("--render", metavar="OUT.png", help="also draw the sample configuration to a PNG")
    return sp


def run(args) -> int:
    mech = load(args.model)
    describe(mech, frames=False)
    frames = demo_frames(mech)
    sample = demo_configuration(mech)
    for title, values in (("home configuration", None), ("sample configuration", sample)):
        fk = forward_kinematics(mech, values)
        print(f"\n{title}:")
        if values:
            print("  " + ", ".join(f"{k}={v:.3f}" for k, v in values.items()))
        pose_table_header()
        for f in frames:
            pose_table_row(f, fk.pose(f))
    if args.render:
        render_png(mech, mech.configuration(sample), args.render)
        print(f"\nwrote {args.render} (sample configuration)")
    print("\nnext: mechanism-model info | fk MODEL --q name=value --frame F | render MODEL -o out.png "
          "| models")
    return 0


def demo_frames(mech) -> list[str]:
    """Cameras, tools, contacts, feet, tips and closures; else up to eight leaf bodies."""
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
