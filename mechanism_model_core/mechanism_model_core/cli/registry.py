"""The subcommands of ``mechanism-model``, in the order ``--help`` lists them.

Each entry names a module of this package that provides

* ``add_parser(subparsers) -> argparse.ArgumentParser``: adds its subparser (``subparsers.add_parser(name,
  help=..., description=...)``) with its options;
* ``run(args) -> int``: carries the command out and returns the exit status. A
  :class:`~mechanism_model_core.errors.MechanismModelError` it raises is printed as
  ``mechanism-model <command>: error: ...`` with exit status 1, without a traceback;
* optionally ``run_argv(argv) -> int`` instead, for a command that parses its own words (``serve`` hands them
  to the ROS package).

Adding a subcommand is writing that module and adding its name here (see docs/cli.md).
"""

COMMANDS = (
    "info",
    "check",
    "fk",
    "jacobian",
    "ik",
    "statics",
    "convert",
    "render",
    "collision-matrix",
    "demo",
    "serve",
    "call",
    "echo",
    "models",
    "ros2-control",
    "mobility",
    "reach",
)
