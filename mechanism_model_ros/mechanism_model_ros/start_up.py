"""Ctrl-C while a node program starts: the process ends quietly, as it does once the nodes run.

A node program spends its first seconds importing (numpy, scipy, the core, Cyclone DDS or rclpy: 2-4 s on a
loaded machine) before :func:`.serve.run_nodes` installs the handlers that close the nodes on SIGINT/SIGTERM.
Python's default SIGINT handler raises ``KeyboardInterrupt`` wherever the import is, and the program ends with a
traceback. :func:`quiet_interrupt` is the first thing each program does: from then until ``run_nodes`` takes
over, SIGINT ends the process at once, with no output and the status :data:`INTERRUPTED` (what ``run_nodes``
returns after a SIGINT once the nodes run). Nothing has started yet that must be stopped: no node, no DDS
participant, no motor command.

The console scripts (``setup.py``) name the functions below, not the node modules' ``main``: a console
script imports the module of its function before calling it, so each of these imports its node module itself
(by name, after :func:`quiet_interrupt`). This module imports nothing but the standard library's
``importlib``, ``os`` and ``signal``. ``python -m mechanism_model_ros.serve`` calls :func:`quiet_interrupt` at
the top of ``serve``.

Before the program's first line, the interpreter's own start-up (``site`` and the ``.pth`` files of an
editable install, some tens of milliseconds) still meets SIGINT with Python's default handler: no program
can change that.
"""

from __future__ import annotations

import importlib
import os
import signal

#: exit status of a node program stopped by SIGINT, while starting as once running (``run_nodes`` returns 0:
#: ``ros2 launch`` then reports the process "finished cleanly")
INTERRUPTED = 0


def quiet_interrupt() -> None:
    """From now until the program installs handlers of its own: SIGINT ends the process at once, with
    :data:`INTERRUPTED` and no traceback (``os._exit``: nothing to flush or close while modules import)."""
    signal.signal(signal.SIGINT, _exit_now)


def _exit_now(signum, frame) -> None:
    os._exit(INTERRUPTED)


def _program(module: str, function: str = "main"):
    """The entry point of a console script running ``mechanism_model_ros.<module>.<function>``."""
    def entry():
        quiet_interrupt()
        return getattr(importlib.import_module(f"mechanism_model_ros.{module}"), function)()
    entry.__name__ = entry.__qualname__ = module
    entry.__doc__ = (f"Console script: :func:`mechanism_model_ros.{module}.{function}`, Ctrl-C quiet from the "
                     f"start")
    return entry


serve = _program("serve")
state_publisher = _program("state_publisher")
kinematics_server = _program("kinematics_server")
manipulator = _program("manipulator")
statics_server = _program("statics_server")
reach_server = _program("reach_server")
locomotor = _program("locomotor")
legged = _program("legged")
