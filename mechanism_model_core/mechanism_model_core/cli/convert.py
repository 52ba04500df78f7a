"""``mechanism-model convert IN OUT``: read any model format, write the one OUT's extension names."""

from __future__ import annotations

from .common import CommandError, load, model_options
from ..io import save_model as io_save_model


def add_parser(subparsers):
    sp = subparsers.add_parser("convert", help="convert between model formats",
                               description="Convert a model: reads CLARAty XML (.xml), URDF (.urdf), KinDSL "
                                           "(.kindsl), D-H tables (.dh) and xacro (.xacro, with --xacro-arg); writes CLARAty XML (.xml), URDF "
                                           "(.urdf) or KinDSL (.kindsl: no limits, couplings or shapes), chosen "
                                           "by the output file's extension.")
    sp.add_argument("input", metavar="IN")
    sp.add_argument("output", metavar="OUT")
    sp.add_argument("--floating-base", choices=("chain", "floating", "root"), default=None,
                    help="URDF output: a floating base as a chain of single-DOF joints (default; "
                         "robot_state_publisher, MoveIt), one 'floating' joint (MuJoCo) or the body as the root "
                         "link (Gazebo)")
    model_options(sp)
    return sp


def run(args) -> int:
    mech = load(args.input)
    if args.floating_base:
        if not args.output.lower().endswith(".urdf"):
            raise CommandError("--floating-base applies to URDF output (.urdf)")
        io_save_model(mech, args.output, floating_base=args.floating_base)
    else:
        save_model(mech, args.output)
    print(f"{args.input} -> {args.output} ({mech.name}: {len(mech.bodies)} bodies, nq = {mech.nq})")
    return 0


def save_model(mech, path: str) -> None:
    """Write ``mech`` to ``path`` in the format its extension names (:func:`mechanism_model_core.io.save_model`)."""
    io_save_model(mech, path)
