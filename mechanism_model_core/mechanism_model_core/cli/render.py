"""``mechanism-model render MODEL --q ... -o out.png``: a picture from two viewpoints (needs matplotlib)."""

from __future__ import annotations

from .common import CommandError, configuration, load, model_arg, q_args
from ..render import render_png


def add_parser(subparsers):
    sp = subparsers.add_parser("render", help="draw the mechanism to a PNG (two viewpoints)",
                               description="Draw the mechanism in a configuration: links as lines between body "
                                           "origins, named frames as axis triads (x red, y green, z blue), "
                                           "bounding shapes as wireframes; an oblique view and a side view. "
                                           "Needs matplotlib.")
    model_arg(sp)
    q_args(sp)
    sp.add_argument("-o", "--output", required=True, metavar="OUT.png")
    sp.add_argument("--frame", action="append", metavar="F", help="frames to draw (default: all named frames)")
    sp.add_argument("--no-labels", action="store_true", help="do not write frame names")
    sp.add_argument("--dpi", type=int, default=100)
    return sp


def run(args) -> int:
    mech = load(args.model)
    q = configuration(mech, args.q, args.degrees)
    try:
        render_png(mech, q, args.output, frames=args.frame, labels=not args.no_labels, dpi=args.dpi)
    except ImportError as exc:
        raise CommandError(f"render needs matplotlib ({exc}); pip install matplotlib") from None
    print(f"wrote {args.output}")
    return 0
