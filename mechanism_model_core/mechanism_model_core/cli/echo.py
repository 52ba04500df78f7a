"""``mechanism-model echo``: a client of the ROS 2 nodes over the Cyclone transport. It lives in
``mechanism_model_ros.client_cli`` (the core imports no ROS), which parses its own arguments (``run_argv``)."""

from __future__ import annotations

import sys

from .common import PROG


def add_parser(subparsers):
    return subparsers.add_parser("echo", add_help=False, help="print a topic of the ROS 2 nodes (tf, tf_static, robot_description, joint_states) over Cyclone DDS, no ROS needed",
                                 description="See 'mechanism-model echo --help'.")


def run_argv(argv) -> int:
    """Run ``mechanism_model_ros.client_cli.echo_main(argv)``; exit 2 with a hint when the ROS package is missing."""
    try:
        from mechanism_model_ros.client_cli import echo_main
    except ImportError as exc:
        print(f"{PROG} echo: error: needs the mechanism_model_ros package "
              f"(pip install './mechanism_model_ros[cyclone]'): {exc}", file=sys.stderr)
        return 2
    return int(echo_main(argv) or 0)


def run(args) -> int:  # pragma: no cover - main() hands the words to run_argv before parsing
    return run_argv([])
