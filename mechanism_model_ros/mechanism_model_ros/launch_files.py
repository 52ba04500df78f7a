"""The files a launch generates (the controller manager's YAML, the nodes' parameter files with the
``robot_description``), kept in one temporary directory per launch and removed when the launch is over.

``robot.launch.py`` writes every generated file here rather than handing ``launch_ros`` parameter
dictionaries (which it writes to ``/tmp/launch_params_*`` files that nobody removes). The directory is
removed once the launch is shutting down *and* every process it started has exited: the controller manager,
which ``shutdown_delay`` keeps running for a second after the others are signalled, can read its files until
it is gone. If the launching Python exits first (an exception, a second Ctrl-C), an ``atexit`` hook removes
the directory then. Only a SIGKILL of the launch itself leaves it behind.

A parameter file is keyed ``/**/<node>`` (:func:`node_key`), as the package's parameter files key their node
sections: a later file's section of the same key joins the earlier one and overrides its values, and any
namespace (the launch's ``namespace``, an including launch's ``PushRosNamespace``) matches. A key ``/**``
would lose against those ``/**/<node>`` sections (rcl applies the sections in the order they first appear).

:func:`removal_actions` gives the launch event handlers that feed :meth:`LaunchFiles.started`,
:meth:`LaunchFiles.exited` and :meth:`LaunchFiles.shutting_down` (``launch`` is imported there only: the rest
of this module needs no ROS).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading

import yaml

PREFIX = "mechanism_model_launch_"


class LaunchFiles:
    """A per-launch temporary directory (``path``) for generated files and when it may be removed."""

    def __init__(self, prefix: str = PREFIX, parent: str | None = None):
        self.path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        self._running: set = set()       # processes started and not yet exited (any hashable key: a pid)
        self._shutting_down = False
        self._lock = threading.Lock()
        atexit.register(self.remove)

    def write(self, name: str, text: str) -> str:
        """Write ``text`` to file ``name`` of the directory; returns its path."""
        if os.sep in name or name in ("", ".", ".."):
            raise ValueError(f"not a plain file name: {name!r}")
        path = os.path.join(self.path, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        return path

    def parameters(self, name: str, params: dict, node: str = "/**") -> str:
        """A ROS 2 parameter file ``name`` (``node: ros__parameters: params``, for ``--params-file``); ``node``:
        :func:`node_key` of the node, or ``/**`` for every node of the process."""
        return self.write(name, yaml.safe_dump({node: {"ros__parameters": dict(params)}}, default_flow_style=False,
                                               allow_unicode=True, width=float("inf")))

    def started(self, process) -> None:
        """A process of the launch started (``process``: its pid or any other key)."""
        with self._lock:
            self._running.add(process)

    def exited(self, process) -> bool:
        """A process exited; True if that removed the directory (the launch is shutting down and it was the
        last one running)."""
        with self._lock:
            self._running.discard(process)
            done = self._shutting_down and not self._running
        return self.remove() if done else False

    def shutting_down(self) -> bool:
        """The launch is shutting down; True if that removed the directory (no process was running)."""
        with self._lock:
            self._shutting_down = True
            done = not self._running
        return self.remove() if done else False

    def remove(self) -> bool:
        """Remove the directory and its files now; True if it existed."""
        atexit.unregister(self.remove)
        if not os.path.isdir(self.path):
            return False
        shutil.rmtree(self.path, ignore_errors=True)
        return True


def node_key(name: str) -> str:
    """The parameter file key of node ``name`` in any namespace."""
    return f"/**/{name}"


def removal_actions(files: LaunchFiles) -> list:
    """Launch event handlers that remove ``files``' directory once the launch is shutting down and every process
    it started has exited (``ros2_control_node``, kept up by ``shutdown_delay``, may be the last), and log it."""
    from launch.actions import LogInfo, RegisterEventHandler
    from launch.event_handlers import OnProcessExit, OnProcessStart, OnShutdown

    def said(removed):
        if not removed:
            return None
        return [LogInfo(msg=f"mechanism_model: removed the launch's generated files ({files.path})")]
    return [RegisterEventHandler(OnProcessStart(on_start=lambda event, _context: files.started(event.pid))),
            RegisterEventHandler(OnProcessExit(on_exit=lambda event, _context: said(files.exited(event.pid)))),
            RegisterEventHandler(OnShutdown(on_shutdown=lambda _event, _context: said(files.shutting_down())))]
