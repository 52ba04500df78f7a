"""``mechanism-model collision-matrix MODEL``: generate the collision matrix as MoveIt's setup assistant does.

Starting from the default rule (bodies joined rigidly or by one moving joint are not checked), it samples
random configurations within the joint limits and disables the pairs that collide at the home
configuration (``Default``), in nearly every sample (``Always``) or in none (``Never``). The result goes to
an SRDF file (``.srdf``: ``disable_collisions`` elements, MoveIt's format) or into a copy of the model as
CLARAty XML (``.xml``: the ``Collision_Matrix`` element), or to stdout as SRDF.
"""

from __future__ import annotations

import sys

from ..io import save_model
from .common import CommandError, load, model_arg
from ..collision import CollisionModel, generate_collision_matrix, with_collision_matrix


def add_parser(subparsers):
    sp = subparsers.add_parser(
        "collision-matrix", help="generate the collision matrix (as MoveIt's setup assistant) and write it",
        description=__doc__.split("\n\n", 1)[1], formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    model_arg(sp)
    sp.add_argument("-o", "--output", help="write to this file: .srdf (disable_collisions) or .xml (the model "
                                           "with a Collision_Matrix element); default: SRDF on stdout")
    sp.add_argument("--samples", type=int, default=2000, help="random configurations (default 2000)")
    sp.add_argument("--always", type=float, default=0.95,
                    help="fraction of samples in collision above which a pair counts as always colliding "
                         "(default 0.95)")
    sp.add_argument("--seed", type=int, default=0, help="random seed (default 0: repeatable)")
    return sp


def run(args) -> int:
    if args.samples < 1:
        raise CommandError("--samples must be at least 1")
    if not 0 < args.always <= 1:
        raise CommandError("--always must be in (0, 1]")
    mech = load(args.model)
    matrix, report = generate_collision_matrix(mech, samples=args.samples, rng=args.seed,
                                               always_fraction=args.always)
    out = args.output
    if out is None or out.lower().endswith(".srdf"):
        text = matrix.to_srdf(mech.name)
        if out is None:
            sys.stdout.write(text)
        else:
            with open(out, "w", encoding="utf-8") as fh:
                fh.write(text)
    elif out.lower().endswith(".xml"):
        save_model(with_collision_matrix(mech, matrix), out, "xml")
    else:
        raise CommandError(f"{out}: the output must end in .srdf or .xml")
    kinds = ", ".join(f"{report[k]} {k.lower()}" for k in ("Rigid", "Adjacent", "Default", "Always", "Never")
                      if report.get(k))
    checked = len(CollisionModel(mech, matrix=matrix).pairs_checked)
    print(f"{mech.name}: {len(matrix.disabled)} pairs disabled ({kinds or 'none'}) over {args.samples} "
          f"samples; {checked} pairs of bodies with shapes checked" + (f"; written to {out}" if out else ""), file=sys.stderr)
    return 0
