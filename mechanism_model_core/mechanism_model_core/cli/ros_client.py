"""The subcommands that are clients of the ROS 2 nodes over the Cyclone transport (``call``, ``echo``). They
live in ``mechanism_model_ros.client_cli`` (the core imports no ROS), which parses their words itself, so a
module here only registers the name: ``add_parser, run_argv, run = ros_client_command(name, entry, help)``."""

from __future__ import annotations

import importlib
import sys

from .common import PROG


def ros_client_command(name: str, entry: str, help_text: str):
    """``(add_parser, run_argv, run)`` of subcommand ``name`` handing its words to
    ``mechanism_model_ros.client_cli.<entry>``; exit status 2 with a hint when the ROS package is missing."""

    def add_parser(subparsers):
        return subparsers.add_parser(name, add_help=False, help=help_text,
                                     description=f"See '{PROG} {name} --help'.")

    def run_argv(argv) -> int:
        try:
            main = getattr(importlib.import_module("mechanism_model_ros.client_cli"), entry)
        except ImportError as exc:
            print(f"{PROG} {name}: error: needs the mechanism_model_ros package "
                  f"(pip install './mechanism_model_ros[cyclone]'): {exc}", file=sys.stderr)
            return 2
        return int(main(argv) or 0)

    def run(args) -> int:  # pragma: no cover - main() hands the words to run_argv before parsing
        return run_argv([])

    return add_parser, run_argv, run
