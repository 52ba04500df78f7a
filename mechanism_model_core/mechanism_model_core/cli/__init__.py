"""The ``mechanism-model`` command: look at, check, convert and draw mechanism models.

Subcommands (``mechanism-model <command> --help`` for each)::

    info [MODEL]                     bodies, joints (type, axis, limits), frames, joint-coordinate order
    check FILE...                    validate model files; every problem as file:line: message
    fk MODEL --q name=value ...      poses of frames (matrix, xyz + roll-pitch-yaw, quaternion)
    jacobian MODEL --frame F ...     geometric Jacobian (rows vx vy vz wx wy wz) of a frame
    ik MODEL --frame F --xyz ...     inverse kinematics: joint values for a target pose (no server)
    statics MODEL [--contacts wheels] gravity torques, centre of mass, contact loads, tip-over margin
    convert IN OUT                   between model formats, chosen by the extensions
    render MODEL --q ... -o out.png  a picture from two viewpoints (needs matplotlib)
    collision-matrix MODEL -o F      which body pairs to check, as MoveIt's setup assistant (needs coal)
    demo                             the default rover: its tree and a few poses
    serve                            the ROS 2 nodes (mechanism_model_ros)
    models                           the shipped robot library
    reach map|show|place             reachability maps of a chain (HDF5; local or Dask), base placement

MODEL is a file path or a path inside the robot library (``rocky8/rocky8_rover.xml``); ``info`` and
``demo`` use the default model when none is given. Joint values are ``name=value`` pairs; values may be
expressions (``pi/2``, ``-M_PI_4``) and are radians and metres unless ``--degrees`` is given. Coordinates
not given take their home value; coupled joints follow their coupling.

Errors go to stderr with exit status 1 (2 for bad command-line usage); a model file error names the file
and line.

Each subcommand is one module of this package, listed in :mod:`.registry` (how to add one: docs/cli.md).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..errors import MechanismModelError
from .common import PROG, CommandError
from .registry import COMMANDS
from .common import apply_model_options
from .. import __version__
from ..io import model_extensions

__all__ = ["main", "build_parser", "command_module", "CommandError", "PROG", "describe", "check_file",
           "save_model", "demo_configuration"]


def command_module(name: str):
    """The module of subcommand ``name`` (``mechanism_model_core.cli.<name>``, dashes as underscores)."""
    return importlib.import_module(f"{__name__}.{name.replace('-', '_')}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one subparser per entry of :data:`.registry.COMMANDS`; ``args.run`` is the
    command's ``run``."""
    p = argparse.ArgumentParser(prog=PROG, description="Inspect, check, convert and draw mechanism models "
                                "(CLARAty XML, URDF, KinDSL, D-H tables).",
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Run 'mechanism-model <command> --help' for the options of a command.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", metavar="command")
    sub.required = True
    for name in COMMANDS:
        module = command_module(name)
        sp = module.add_parser(sub)
        sp.set_defaults(run=module.run)
    return p


def main(argv=None) -> int:
    """Entry point of ``mechanism-model``; returns the exit status."""
    import warnings

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in COMMANDS:
        module = command_module(argv[0])
        if hasattr(module, "run_argv"):
            return int(module.run_argv(argv[1:]) or 0)
    parser = build_parser()
    args = parser.parse_args(_model_before_q(parser, argv))

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"{PROG} {args.command}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        return _run(args)


def _subparser(parser: argparse.ArgumentParser, name: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def _model_before_q(parser: argparse.ArgumentParser, argv: list) -> list:
    """``fk --q a=1 MODEL`` means ``fk MODEL --q a=1``: ``--q`` takes every following word, so a model file
    name after its first value is moved in front, where argparse expects the model. Applies to every
    subcommand that has both a ``model`` positional and ``--q``."""
    sp = _subparser(parser, argv[0]) if argv else None
    if sp is None or "--q" not in sp._option_string_actions \
            or not any(a.dest == "model" and not a.option_strings for a in sp._actions):
        return argv
    extensions = model_extensions()
    out, stray, taken = [argv[0]], [], None     # taken: values --q has had so far, None outside --q
    for word in argv[1:]:
        if word.startswith("-"):
            taken = 0 if word == "--q" else None
        elif taken is not None:
            if taken and "=" not in word and os.path.splitext(word)[1].lower() in extensions:
                stray.append(word)
                continue
            taken += 1
        out.append(word)
    return out[:1] + stray + out[1:]


def _run(args) -> int:
    try:
        apply_model_options(args)
        return int(args.run(args) or 0)
    except MechanismModelError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0
    except OSError as exc:
        print(f"{PROG} {args.command}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1


def __getattr__(name):
    """Functions the single-module ``cli.py`` had, from their subcommand modules (kept for callers)."""
    where = {"describe": "info", "check_file": "check", "save_model": "convert",
             "demo_configuration": "demo", "DEMO_SAMPLES": "demo"}
    if name in where:
        return getattr(command_module(where[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
