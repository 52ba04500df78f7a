"""``mechanism-model mobility MODEL``: the mobility description of a wheeled model (its ``<Mobility>``
element, a YAML override beside it, or a proposal), checked by building the locomotor model, printed as a
``<Mobility>`` element to paste into the model file or as YAML (models/README.md, "Mobility")."""

from __future__ import annotations

import sys

from .common import CommandError, load, model_arg
from ..io.mobility_xml import mobility_element
from ..locomotion.mobility import mobility_for, propose_mobility
from ..locomotion.wheeled import WheeledLocomotorModel
from ..extras import install_hint


def add_parser(subparsers):
    sp = subparsers.add_parser(
        "mobility", help="print (or propose) a wheeled model's mobility description",
        description="Print the mobility description the wheeled locomotor uses for MODEL (a YAML beside the "
                    "model file, else its <Mobility> element), or with --propose one drafted from the model "
                    "(continuous joints carrying a cylinder, a contact frame or a round collision mesh are "
                    "wheels, vertical revolute joints above them steer, other revolute joints up to the body "
                    "are suspension; which links were taken as wheels and why goes to stderr). The "
                    "description is checked by building the locomotor model (joints, frames, modes against "
                    "the steering ranges).")
    model_arg(sp)
    sp.add_argument("--propose", action="store_true", help="draft a description from the model itself")
    sp.add_argument("--format", choices=("xml", "yaml"), default="xml",
                    help="a <Mobility> element for the model file (default) or a mobility YAML file")
    sp.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of printing")
    return sp


def run(args) -> int:
    mech = load(args.model)
    spec = propose_mobility(mech) if args.propose else mobility_for(mech)
    for note in spec.notes:
        print(f"# {note}", file=sys.stderr)
    W = WheeledLocomotorModel(mech, spec)          # every check the locomotor makes, before anything drives
    d = W.spec.to_dict()
    if args.format == "yaml":
        try:
            import yaml
        except ImportError:
            raise CommandError(f"--format yaml needs PyYAML: {install_hint('yaml')}") from None
        text = f"# mobility of {mech.name} (models/README.md, \"Mobility\"); SI units, radians\n" + \
            yaml.safe_dump({"mobility": d}, sort_keys=False)
    else:
        from lxml import etree

        holder = etree.Element("Mechanism_Model")
        el = mobility_element(etree, holder, d)
        etree.indent(el, space="  ")
        text = etree.tostring(el, pretty_print=True, encoding="unicode")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text, end="")
    return 0
