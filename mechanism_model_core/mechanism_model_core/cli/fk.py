"""``mechanism-model fk MODEL --q name=value ...``: poses of frames."""

from __future__ import annotations

import json
import sys

from .common import configuration, load, model_arg, pose_dict, pose_table_header, pose_table_row, print_pose, \
    q_args
from ..kinematics import forward_kinematics


def add_parser(subparsers):
    sp = subparsers.add_parser("fk", help="forward kinematics: poses of frames",
                               description="Poses of frames for the given joint values: with --frame, each as "
                                           "a 4x4 matrix, xyz, URDF roll-pitch-yaw and quaternion (x y z w); "
                                           "without, a table of every frame.")
    model_arg(sp)
    q_args(sp)
    sp.add_argument("--frame", action="append", metavar="F", help="frame to print (repeatable)")
    sp.add_argument("--relative-to", metavar="R", help="reference frame (default: ground)")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    return sp


def run(args) -> int:
    mech = load(args.model)
    q = configuration(mech, args.q, args.degrees)
    fk = forward_kinematics(mech, q)
    ref = args.relative_to or mech.ground
    frames = args.frame or [f for f in mech.frame_names if f != mech.ground]
    if args.json:
        data = {"model": mech.name, "relative_to": ref,
                "q": dict(zip(mech.coordinate_names, q.tolist())),
                "poses": {f: pose_dict(fk.pose(f, args.relative_to)) for f in frames}}
        print(json.dumps(data, indent=1))
        return 0
    if args.frame:
        for f in frames:
            print_pose(f, ref, fk.pose(f, args.relative_to), sys.stdout)
        return 0
    print(f"poses of every frame in {ref} (xyz in m, URDF roll-pitch-yaw in rad):")
    pose_table_header()
    for f in frames:
        pose_table_row(f, fk.pose(f, args.relative_to))
    return 0
