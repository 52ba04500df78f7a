"""``mechanism-model serve``: the ROS 2 nodes. The ROS layer lives in ``mechanism_model_ros`` (the core imports
no ROS), which parses its own arguments: this module only hands the words over (``run_argv``)."""

from __future__ import annotations

import sys

from .common import PROG


def add_parser(subparsers):
    return subparsers.add_parser("serve", add_help=False,
                                 help="run the ROS 2 state publisher and kinematics server (Cyclone DDS or rclpy)",
                                 description="Run the ROS 2 nodes on a model; see 'mechanism-model serve --help'.")


def run_argv(argv) -> int:
    """Run ``mechanism_model_ros.serve.main(argv)``; exit 2 with a hint when the ROS package is missing."""
    try:
        from mechanism_model_ros.serve import main as serve_main
    except ImportError as exc:
        print(f"{PROG} serve: error: needs the mechanism_model_ros package "
              f"(pip install './mechanism_model_ros[cyclone]'): {exc}", file=sys.stderr)
        return 2
    return int(serve_main(argv) or 0)


def run(args) -> int:  # pragma: no cover - main() hands serve's words to run_argv before parsing
    return run_argv([])
