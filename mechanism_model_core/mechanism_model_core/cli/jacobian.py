"""``mechanism-model jacobian MODEL --frame F``: the geometric Jacobian of a frame."""

from __future__ import annotations

import json

import numpy as np

from .common import configuration, fmt, load, model_arg, q_args
from ..jacobians import jacobian


def add_parser(subparsers):
    sp = subparsers.add_parser("jacobian", help="geometric Jacobian of a frame",
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
    return sp


def run(args) -> int:
    mech = load(args.model)
    q = configuration(mech, args.q, args.degrees)
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
        print(f"  {c:30s} " + " ".join(fmt(v) for v in J[:, k]))
    return 0
