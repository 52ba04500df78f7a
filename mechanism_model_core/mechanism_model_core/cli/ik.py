"""``mechanism-model ik MODEL --frame F --xyz X Y Z [--rpy R P Y | --quat X Y Z W]``: inverse kinematics
without a server (:func:`mechanism_model_core.ik.solve_ik`).

The target is the pose of ``--frame`` in ``--relative-to`` (default: the ground): a position in metres and,
optionally, an orientation as URDF roll-pitch-yaw (rad, or degrees with ``--degrees``) or a quaternion
(x y z w); without an orientation only the position is asked for. ``--q`` gives the seed (others at home),
``--lock`` holds joints at their seed value. Exit status 0 when the target is reached to tolerance, 1 when
not (the closest configuration found is still printed) or for a bad request, 2 for bad usage.
"""

from __future__ import annotations

import json
import math

import numpy as np

from .common import CommandError, configuration, fmt, load, model_arg, pose_dict, print_pose, q_args
from ..constraints import PoseConstraint, PositionConstraint
from ..ik import solve_ik
from ..kinematics import forward_kinematics
from ..spatial import make_transform, quaternion_to_matrix, rpy_to_matrix


def add_parser(subparsers):
    sp = subparsers.add_parser("ik", help="inverse kinematics: joint values that put a frame at a pose",
                               description="Joint values that put --frame at the target pose (position, and "
                                           "orientation if given) in --relative-to, starting from the seed "
                                           "--q (others at home); no server needed. Exit status 1 when the "
                                           "target is not reached to tolerance.")
    model_arg(sp)
    sp.add_argument("--frame", required=True, metavar="F", help="the frame to place (e.g. a tool frame)")
    sp.add_argument("--xyz", required=True, nargs=3, type=float, metavar=("X", "Y", "Z"),
                    help="target position (m)")
    rot = sp.add_mutually_exclusive_group()
    rot.add_argument("--rpy", nargs=3, type=float, metavar=("ROLL", "PITCH", "YAW"),
                     help="target orientation, URDF roll-pitch-yaw (rad; degrees with --degrees)")
    rot.add_argument("--quat", nargs=4, type=float, metavar=("X", "Y", "Z", "W"),
                     help="target orientation as a quaternion (x y z w; normalised)")
    sp.add_argument("--relative-to", metavar="R", help="frame the target is given in (default: ground)")
    q_args(sp)
    sp.add_argument("--lock", action="append", default=[], metavar="JOINT",
                    help="hold this joint at its seed value (repeatable)")
    sp.add_argument("--timeout", type=float, default=1.0, help="time budget in s (default 1)")
    sp.add_argument("--tol-position", type=float, default=1e-6, help="position tolerance in m (default 1e-6)")
    sp.add_argument("--tol-orientation", type=float, default=1e-5,
                    help="orientation tolerance in rad (default 1e-5)")
    sp.add_argument("--solver", default="auto", help="auto (default), dls, scipy or a registered solver")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    return sp


def target_pose(args) -> np.ndarray | None:
    """The 4x4 target, or None when only the position is asked for (then the caller uses the xyz)."""
    xyz = np.array(args.xyz, dtype=float)
    values = list(xyz) + list(args.rpy or ()) + list(args.quat or ())
    if not all(math.isfinite(v) for v in values):
        raise CommandError("the target pose must be finite numbers")
    if args.rpy is not None:
        rpy = np.radians(args.rpy) if args.degrees else np.array(args.rpy, dtype=float)
        return make_transform(rpy_to_matrix(rpy), xyz)
    if args.quat is not None:
        if np.linalg.norm(args.quat) < 1e-12:
            raise CommandError(f"--quat {' '.join(f'{v:g}' for v in args.quat)} has zero length: not a rotation")
        R = quaternion_to_matrix(args.quat)
        return make_transform(R, xyz)
    return None


def run(args) -> int:
    mech = load(args.model)
    for name in [args.frame] + ([args.relative_to] if args.relative_to else []):
        mech.frame(name)                                    # UnknownFrame with "did you mean"
    seed = configuration(mech, args.q, args.degrees)
    for joint in args.lock:
        mech.coordinate_index(joint)                        # UnknownJoint with "did you mean"
    T = target_pose(args)
    if T is None:
        constraint = PositionConstraint(args.frame, np.array(args.xyz, dtype=float), relative_to=args.relative_to)
    else:
        constraint = PoseConstraint(args.frame, T, relative_to=args.relative_to)
    result = solve_ik(mech, constraint, seed, solver=args.solver, timeout=args.timeout,
                      tol_position=args.tol_position, tol_orientation=args.tol_orientation, locked=args.lock)
    reached = forward_kinematics(mech, result.q).pose(args.frame, args.relative_to)
    res = result.residuals[0]
    ref = args.relative_to or mech.ground
    if args.json:
        print(json.dumps({
            "model": mech.name, "frame": args.frame, "relative_to": ref, "success": bool(result.success),
            "reason": result.reason, "message": result.message, "solver": result.solver,
            "iterations": result.iterations, "time_s": result.time,
            "position_error_m": _num(res.position), "orientation_error_rad": _num(res.orientation),
            "q": dict(zip(mech.coordinate_names, result.q.tolist())),
            "independent": list(mech.independent_coordinates), "locked": list(args.lock),
            "pose": pose_dict(reached)}, indent=1))
        return 0 if result.success else 1
    what = "reached" if result.success else f"NOT reached ({result.reason})"
    errors = f"position error {res.position:.3g} m"
    if not math.isnan(res.orientation):
        errors += f", orientation error {res.orientation:.3g} rad"
    print(f"ik: {args.frame} in {ref} {what} via {result.solver} ({result.iterations} iterations, "
          f"{result.restarts} restarts, {result.time * 1e3:.1f} ms): {errors}")
    if result.message and not result.success:
        print(f"  {result.message}")
    print("joint values (rad / m):")
    for i, name in enumerate(mech.coordinate_names):
        note = " (locked)" if name in args.lock else ("" if name in mech.independent_coordinates else
                                                      f" (= {mech.couplings[name].source})")
        print(f"  {name:30s} {fmt(result.q[i])}{note}")
    print_pose(args.frame, ref, reached)
    return 0 if result.success else 1


def _num(v: float):
    return None if math.isnan(v) else float(v)
