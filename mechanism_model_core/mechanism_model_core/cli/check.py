"""``mechanism-model check FILE...``: validate model files; every problem as ``file:line: message``."""

from __future__ import annotations

import sys

from .common import _xacro_args, model_options
from ..io.check import check_model
from ..io.claraty_xml import DTD_PATH
from ..io.safe_xml import dtd_errors, parse_file


def add_parser(subparsers):
    sp = subparsers.add_parser("check", help="validate model files (every problem as file:line: message)",
                               description="Validate model files against the DTD and load them. Every "
                                           "problem is printed to stderr as file:line: message; exit status 1 "
                                           "if any file fails.")
    sp.add_argument("files", nargs="+", metavar="FILE")
    sp.add_argument("-q", "--quiet", action="store_true", help="print nothing for good files")
    model_options(sp)
    return sp


def run(args) -> int:
    bad = 0
    for path in args.files:
        problems, m = check(path)
        if problems:
            bad += 1
            for p in problems:
                print(p, file=sys.stderr)
        elif not args.quiet:
            print(f"{path}: ok ({m.name}: {len(m.bodies)} bodies, {len(m.joints)} joints, nq = {m.nq})")
    return 1 if bad else 0


def dtd_problems(path: str) -> list[str]:
    """Every DTD violation of a CLARAty XML file, as ``file:line: message`` (empty if none or not CLARAty)."""
    root = parse_file(path)
    if root.tag != "Mechanism_Model":
        return []
    return [f"{path}:{line}: {message}" for line, message in dtd_errors(root, DTD_PATH)]


def check_file(path: str) -> list[str]:
    """Problems of one model file (empty when it loads), each as ``file:line: message``."""
    return check(path)[0]


def check(path: str):
    """``(problems as text, mechanism or None)`` of one model file (:func:`mechanism_model_core.io.check`)."""
    problems, mech = check_model(path, xacro_args=dict(_xacro_args))
    return [str(p) for p in problems], mech
