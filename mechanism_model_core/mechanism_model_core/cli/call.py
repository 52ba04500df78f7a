"""``mechanism-model call``: a client of the ROS 2 nodes over the Cyclone transport. It lives in
``mechanism_model_ros.client_cli`` (the core imports no ROS), which parses its own arguments (``run_argv``)."""

from __future__ import annotations

import sys

from .common import PROG


def add_parser(subparsers):
    return subparsers.add_parser("call", add_help=False, help="call a service of the ROS 2 nodes (compute_fk, compute_ik ...) over Cyclone DDS, no ROS needed",
                                 description="See 'mechanism-model call --help'.")


def run_argv(argv) -> int:
    """Run ``mechanism_model_ros.client_cli.call_main(argv)``; exit 2 with a hint when the ROS package is missing."""
    try:
        from mechanism_model_ros.client_cli import call_main
    except ImportError as exc:
        print(f"{PROG} call: error: needs the mechanism_model_ros package "
              f"(pip install './mechanism_model_ros[cyclone]'): {exc}", file=sys.stderr)
        return 2
    return int(call_main(argv) or 0)


def run(args) -> int:  # pragma: no cover - main() hands the words to run_argv before parsing
    return run_argv([])
