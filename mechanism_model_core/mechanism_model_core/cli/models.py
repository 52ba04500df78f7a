"""``mechanism-model models``: the shipped robot library, one line per file with its size and description."""

from __future__ import annotations

from ..errors import MechanismModelError
from ..io import load_model
from ..library import DEFAULT_MODEL, list_models, model_path, model_summary, models_dir


def add_parser(subparsers):
    sp = subparsers.add_parser("models", help="list the shipped robot library",
                               description="List the model files of the robot library with their size and "
                                           "their own one-line description.")
    sp.add_argument("--paths", action="store_true", help="print absolute paths")
    return sp


def run(args) -> int:
    print(f"robot library in {models_dir()} (default: {DEFAULT_MODEL})")
    for rel in list_models():
        path = model_path(rel)
        shown = path if args.paths else rel
        try:
            m = load_model(path)
            desc = f"{m.name}: {len(m.bodies)} bodies (with the ground), nq = {m.nq}"
        except MechanismModelError as exc:
            desc = f"does not load: {exc}"
        mark = " (default)" if rel == DEFAULT_MODEL else ""
        print(f"  {shown:36s} {desc}{mark}")
        summary = model_summary(rel)
        if summary:
            print(f"  {'':36s}   {summary}")
    return 0
