"""The one way tests reach a real ROS 2 (Humble at /opt/ros/humble, Jazzy at /opt/ros/jazzy).

How: ROS 2 here is built for Debian's ``/usr/bin/python3`` (3.11.2), not for the Python running pytest
(pyenv's, in the test venv), and its environment comes from sourcing ``setup.bash``. So the test process
never imports rclpy; everything that needs ROS runs in a subprocess:

* ``env = ros_env(domain)`` is ``os.environ`` with ``/opt/ros/<distro>/setup.bash`` (and a colcon workspace
  of this repository's three packages, built once by :func:`workspace`) sourced, loopback Cyclone DDS
  (``lo`` only, multicast off), ``RMW_IMPLEMENTATION=rmw_cyclonedds_cpp``, the test's ``ROS_DOMAIN_ID`` and
  this checkout's ``mechanism_model_core`` / ``mechanism_model_ros`` first on ``PYTHONPATH`` (so the code
  under test is the working tree's, not the workspace's copy).
* ``ROS_PYTHON`` (``/usr/bin/python3``) runs our nodes over rclpy and rclpy/tf2_ros client scripts
  (:func:`run_python`); Debian's python3-numpy/-scipy/-lxml/-yaml give it the core's dependencies
  (``.ci/apt-packages``).
* :class:`RosProcess` starts ``ros2 launch``/``ros2 run``/``ros2_control_node``/our ``serve`` in its own
  process group with its output in a file, and stops the whole group (SIGINT, then SIGTERM, then SIGKILL).
* The test side watches topics and calls services in-process over the Cyclone transport
  (:func:`wait_for_messages`), which needs no rclpy.

Skip or fail: :func:`require` skips a test when ROS 2 (or the ROS Python's dependencies) is missing, except
where ROS is required -- ``CI=true`` or ``MM_REQUIRE_ROS=1`` (``.ci/run`` installs ROS 2 from
``../shared/ros2`` first) -- where it fails instead. ``MM_REQUIRE_ROS=0`` turns the requirement off.

Domains: :func:`domain` draws from ``MM_TEST_DOMAINS`` (via ``dds_helpers.unique_domain_id``). Every
process started here is stopped by its owner; :func:`stop_daemon` stops a ``ros2`` CLI daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ros.dds_helpers import LOOPBACK_URI, ROS_PKG, configure_this_process, unique_domain_id, wait_for

TOP = os.path.dirname(ROS_PKG)
CORE_PKG = os.path.join(TOP, "mechanism_model_core")
ROS_PYTHON = "/usr/bin/python3"
DISTROS = {"humble": "/opt/ros/humble", "jazzy": "/opt/ros/jazzy"}
#: what the ROS Python must import besides ROS itself (Debian's python3-numpy/-scipy/-lxml/-yaml)
PY_DEPS = ("numpy", "scipy", "lxml", "yaml")
PACKAGES = ("mechanism_model_msgs", "mechanism_model_core", "mechanism_model_ros", "mechanism_model_controllers")
#: where their definitions are read from when the distribution lacks them (Humble's installed .msg/.srv/
#: .action files: the same definitions, byte for byte for trajectory/nav/visualization_msgs)
INTERFACE_SOURCES = os.environ.get("MM_INTERFACE_SOURCES", "/opt/ros/humble/share")
#: standard interface packages our packages depend on (their package.xml files) that a core-only distribution
#: (shared/ros2's Jazzy) may lack; where one is missing, :func:`workspace` builds it from its definitions
#: (see :func:`standard_interfaces`). On a full ROS 2 install they come from apt and nothing is generated.
#: mechanism_model_msgs needs trajectory_msgs and shape_msgs, the kinematics server visualization_msgs (its
#: markers), the locomotor nav_msgs. Not control_msgs (NOT_BUILT).
#: control_msgs (the manipulator node's action) only talks to ros2_control, which the core-only Jazzy does not
#: have either, and building it would add about a minute to every CI run.
NOT_BUILT = ("control_msgs",)
#: interface packages of other projects that a node can speak (the locomotor's ``osr`` adapter), built in the
#: test workspace from the minimal definitions the ROS package carries when the distribution lacks them
#: (on an Open Source Rover, its own osr_interfaces package is installed)
FOREIGN_INTERFACES = {"osr_interfaces": os.path.join(ROS_PKG, "mechanism_model_ros", "interfaces_external")}


def _definitions_dir(pkg: str) -> str:
    """Where the definitions of interface package ``pkg`` are read from for a workspace build."""
    if pkg in FOREIGN_INTERFACES:
        return os.path.join(FOREIGN_INTERFACES[pkg], pkg)
    return os.path.join(INTERFACE_SOURCES, pkg)


def _declared_interface_packages() -> tuple[str, ...]:
    """Packages named by our package.xml files that have message/service/action definitions in
    :data:`INTERFACE_SOURCES` (so could be built from them), minus :data:`NOT_BUILT`."""
    import xml.etree.ElementTree as ET
    names = []
    for pkg in ("mechanism_model_msgs", "mechanism_model_ros"):
        path = os.path.join(TOP, pkg, "package.xml")
        if not os.path.isfile(path):
            continue
        for el in ET.parse(path).getroot():
            if el.tag in ("depend", "build_depend", "exec_depend") and el.text:
                name = el.text.strip()
                if name not in names and name not in NOT_BUILT and any(
                        os.path.isdir(os.path.join(INTERFACE_SOURCES, name, k)) for k in ("msg", "srv", "action")):
                    names.append(name)
    return tuple(names)

__all__ = ["ROS_PYTHON", "DISTROS", "required", "require", "available", "ros_env", "workspace", "domain",
           "RosProcess", "start", "start_serve", "run", "run_python", "ros2", "stop_daemon",
           "wait_for_messages", "wait_for", "configure_this_process"]


def required() -> bool:
    """True where a missing ROS 2 must fail the test run: in CI (``CI=true``) or with ``MM_REQUIRE_ROS=1``;
    ``MM_REQUIRE_ROS=0`` says no."""
    explicit = os.environ.get("MM_REQUIRE_ROS", "").strip()
    if explicit in ("0", "1"):
        return explicit == "1"
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _missing(reason: str):
    import pytest
    if required():
        pytest.fail(f"ROS 2 is required here (CI or MM_REQUIRE_ROS=1) but {reason}", pytrace=False)
    pytest.skip(reason)


@functools.lru_cache(maxsize=None)
def _sourced(distro: str, ws: str | None) -> dict:
    """The environment after sourcing ``setup.bash`` of ``distro`` (and of workspace ``ws``)."""
    script = f"source {DISTROS[distro]}/setup.bash"
    if ws:
        script += f" && source {ws}/install/setup.bash"
    base = {k: v for k, v in os.environ.items()
            if k not in ("AMENT_PREFIX_PATH", "COLCON_PREFIX_PATH", "CMAKE_PREFIX_PATH", "ROS_DISTRO",
                         "ROS_VERSION", "ROS_PYTHON_VERSION", "PYTHONPATH", "LD_LIBRARY_PATH",
                         "VIRTUAL_ENV", "PYTHONHOME")}
    out = subprocess.run(["bash", "-c", script + " >/dev/null 2>&1 && env -0"], env=base,
                         capture_output=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"sourcing {DISTROS[distro]}/setup.bash failed: {out.stderr.decode()[-500:]}")
    env = {}
    for item in out.stdout.split(b"\0"):
        k, sep, v = item.decode().partition("=")
        if sep and k not in ("_", "SHLVL", "PWD", "OLDPWD"):
            env[k] = v
    return env


@functools.lru_cache(maxsize=None)
def _probe(distro: str) -> str | None:
    """Why ROS 2 ``distro`` cannot be used here, or None."""
    prefix = DISTROS.get(distro)
    if prefix is None:
        return f"unknown ROS distribution {distro!r}"
    if not os.path.exists(os.path.join(prefix, "setup.bash")):
        return f"ROS 2 {distro} is not installed ({prefix}/setup.bash missing; bash shared/ros2/install.sh)"
    if not os.path.exists(ROS_PYTHON):
        return f"{ROS_PYTHON} (the interpreter ROS 2 is built for) is missing"
    try:
        env = _sourced(distro, None)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    code = "import rclpy\nimport " + ", ".join(PY_DEPS)
    p = subprocess.run([ROS_PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return (f"{ROS_PYTHON} with ROS 2 {distro} sourced cannot import rclpy and the core's dependencies "
                f"(apt-get install python3-numpy python3-scipy python3-lxml python3-yaml): "
                f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode}")
    if not shutil.which("colcon", path=env.get("PATH")):
        return "colcon is missing (bash shared/ros2/install.sh --dev installs Debian's colcon)"
    lacking = [p for p in missing_interfaces(distro) if not os.path.isdir(_definitions_dir(p))]
    if lacking:
        return (f"ROS 2 {distro} lacks {', '.join(lacking)} and {INTERFACE_SOURCES} has no definitions to build "
                f"them from (install them, or set MM_INTERFACE_SOURCES to a share/ directory holding them)")
    return None


def available(distro: str = "humble") -> bool:
    return _probe(distro) is None


def require(distro: str = "humble") -> None:
    """Skip (or, where ROS is required, fail) the calling test unless ROS 2 ``distro`` is usable."""
    reason = _probe(distro)
    if reason is not None:
        _missing(reason)


def missing_interfaces(distro: str) -> list[str]:
    """The standard interface packages our packages declare (:func:`_declared_interface_packages`) that ROS 2
    ``distro`` does not provide."""
    share = os.path.join(DISTROS[distro], "share")
    return [p for p in (*_declared_interface_packages(), *FOREIGN_INTERFACES)
            if not os.path.isdir(os.path.join(share, p))]


_TYPE_REF = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)/[A-Za-z][A-Za-z0-9_]*(\[[^\]]*\])?\s+\w", re.M)


def standard_interfaces(distro: str, dest: str) -> list[str]:
    """Write an ament_cmake interface package under ``dest`` for each standard interface package that
    ``distro`` lacks (:func:`missing_interfaces`), from the definitions in :data:`INTERFACE_SOURCES`; returns
    their names. Each package's dependencies are the packages its definitions name (``std_msgs/Header``
    ...), plus ``action_msgs`` for actions. Generated at test time in the workspace, never committed."""
    names = missing_interfaces(distro)
    for pkg in names:
        src = _definitions_dir(pkg)
        files, deps = [], set()
        for kind in ("msg", "srv", "action"):
            d = os.path.join(src, kind)
            if not os.path.isdir(d):
                continue
            os.makedirs(os.path.join(dest, pkg, kind), exist_ok=True)
            for name in sorted(os.listdir(d)):
                if not name.endswith("." + kind):      # srv/ also holds generated *_Request.msg files
                    continue
                shutil.copyfile(os.path.join(d, name), os.path.join(dest, pkg, kind, name))
                files.append(f"{kind}/{name}")
                with open(os.path.join(d, name)) as fh:
                    deps.update(m.group(1) for m in _TYPE_REF.finditer(fh.read()))
                if kind == "action":
                    deps.update(("action_msgs", "builtin_interfaces", "unique_identifier_msgs"))
        if not files:
            raise RuntimeError(f"ROS 2 {distro} lacks {pkg} and {src} has no definitions of it "
                               f"(set MM_INTERFACE_SOURCES to a share/ directory holding {pkg}/msg ...)")
        deps.discard(pkg)
        deps = sorted(deps)
        with open(os.path.join(dest, pkg, "CMakeLists.txt"), "w") as fh:
            fh.write(f"cmake_minimum_required(VERSION 3.8)\nproject({pkg})\nfind_package(ament_cmake REQUIRED)\n"
                     f"find_package(rosidl_default_generators REQUIRED)\n"
                     + "".join(f"find_package({d} REQUIRED)\n" for d in deps)
                     + f"rosidl_generate_interfaces(${{PROJECT_NAME}}\n"
                     + "".join(f'  "{f}"\n' for f in files)
                     + (f"  DEPENDENCIES {' '.join(deps)}\n" if deps else "")
                     + ")\nament_export_dependencies(rosidl_default_runtime)\nament_package()\n")
        with open(os.path.join(dest, pkg, "package.xml"), "w") as fh:
            fh.write('<?xml version="1.0"?>\n<package format="3">\n'
                     f"  <name>{pkg}</name>\n  <version>0.0.0</version>\n"
                     f"  <description>{pkg} built from its definitions for a test workspace</description>\n"
                     '  <maintainer email="none@example.org">generated</maintainer>\n  <license>Apache-2.0</license>\n'
                     "  <buildtool_depend>ament_cmake</buildtool_depend>\n"
                     "  <buildtool_depend>rosidl_default_generators</buildtool_depend>\n"
                     + "".join(f"  <depend>{d}</depend>\n" for d in deps)
                     + "  <exec_depend>rosidl_default_runtime</exec_depend>\n"
                     "  <member_of_group>rosidl_interface_packages</member_of_group>\n"
                     "  <export><build_type>ament_cmake</build_type></export>\n</package>\n")
    return names


def packages(distro: str) -> tuple[str, ...]:
    """This repository's packages built for ``distro``: :data:`PACKAGES`, without the controllers where the
    distribution has no ros2_control (shared/ros2's core-only Jazzy)."""
    has_control = os.path.isdir(os.path.join(DISTROS[distro], "share", "controller_interface"))
    return tuple(p for p in PACKAGES if has_control or p != "mechanism_model_controllers")


def _sources_digest(distro: str) -> str:
    """Hash of what a workspace build of ``distro`` depends on: the standard interface packages it builds
    (:func:`missing_interfaces`; none for a full distribution), this checkout's path, the interface files and package
    manifests (contents), and the files installed into share/ (launch, config, models, rviz: names and contents;
    colcon installs them as copies even with --symlink-install, so an edit needs a rebuild)."""
    h = hashlib.sha256(TOP.encode())
    h.update(",".join(missing_interfaces(distro) + list(packages(distro))).encode())
    content = [os.path.join(TOP, p, f) for p in ("mechanism_model_core", "mechanism_model_ros")
               for f in ("setup.py", "setup.cfg", "package.xml")]
    # built, not symlinked: any change of these rebuilds
    for root in (os.path.join(TOP, "mechanism_model_msgs"), os.path.join(TOP, "mechanism_model_controllers"),
                 *(_definitions_dir(p) for p in FOREIGN_INTERFACES)):
        for dirpath, dirs, names in os.walk(root):
            dirs.sort()
            content += [os.path.join(dirpath, n) for n in sorted(names)]
    for f in content:
        if os.path.isfile(f):
            h.update(os.path.relpath(f, TOP).encode())
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
    for r in ("launch", "config", "models", "rviz"):
        for dirpath, dirs, names in os.walk(os.path.join(TOP, r)):
            dirs.sort()
            for n in sorted(names):
                if "__pycache__" not in dirpath:
                    h.update(os.path.relpath(os.path.join(dirpath, n), TOP).encode())
                    with open(os.path.join(dirpath, n), "rb") as fh:
                        h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def workspace(distro: str = "humble") -> str:
    """A colcon workspace (merged install) of ``mechanism_model_msgs`` (rosidl-generated for real),
    ``mechanism_model_core``, ``mechanism_model_ros`` and ``mechanism_model_controllers`` (C++: the watchdog
    controller, where ros2_control is installed) built against ROS 2 ``distro`` with
    ``--symlink-install``; returns its directory (``<ws>/install/setup.bash``). Built once per checkout and
    interface state (:func:`_sources_digest`), under a lock of its own, in ``$MM_ROS_WS_CACHE`` (default: the
    system temporary directory); about 25 s on an idle machine."""
    require(distro)
    cache = os.environ.get("MM_ROS_WS_CACHE") or os.path.join(tempfile.gettempdir(), f"mm_ros_ws_{os.getuid()}")
    os.makedirs(cache, exist_ok=True)
    ws = os.path.join(cache, f"{distro}-{_sources_digest(distro)}")
    done = os.path.join(ws, ".built")
    digest = os.path.basename(ws)
    with open(os.path.join(cache, f"{digest}.lock"), "w") as lock:   # builds of other states run alongside
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(done):
            os.utime(done)
            return ws
        _prune(cache, distro)
        shutil.rmtree(ws, ignore_errors=True)
        os.makedirs(ws)
        print(f"ros_env: colcon build of {', '.join(packages(distro))} against ROS 2 {distro} in {ws} (~25 s)",
              file=sys.stderr, flush=True)
        env = _sourced(distro, None)
        extra = standard_interfaces(distro, os.path.join(ws, "interfaces"))
        if extra:
            print(f"ros_env: ROS 2 {distro} lacks {', '.join(extra)}: building them from their definitions "
                  f"in {INTERFACE_SOURCES}", file=sys.stderr, flush=True)
        cmd = ["colcon", "--log-base", os.path.join(ws, "log"), "build", "--base-paths", TOP,
               *([os.path.join(ws, "interfaces")] if extra else []),
               "--packages-select", *extra, *packages(distro), "--merge-install", "--symlink-install",
               "--build-base", os.path.join(ws, "build"), "--install-base", os.path.join(ws, "install"),
               "--event-handlers", "console_direct-",
               "--cmake-args", "-DBUILD_TESTING=OFF", f"-DPython3_EXECUTABLE={ROS_PYTHON}",
               f"-DPYTHON_EXECUTABLE={ROS_PYTHON}"]
        p = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            raise RuntimeError(f"colcon build failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        with open(done, "w") as fh:
            fh.write(p.stdout[-2000:])
        return ws


def _prune(cache: str, distro: str, keep_hours: float = 6.0) -> None:
    """Remove this distribution's workspaces of other source states not used for ``keep_hours``."""
    now = time.time()
    for name in os.listdir(cache):
        path = os.path.join(cache, name)
        if name.startswith(distro + "-") and os.path.isdir(path):
            stamp = os.path.join(path, ".built")
            used = os.path.getmtime(stamp) if os.path.exists(stamp) else os.path.getmtime(path)
            if now - used > keep_hours * 3600:
                shutil.rmtree(path, ignore_errors=True)


def domain() -> int:
    """A DDS domain id from this run's ``MM_TEST_DOMAINS`` range."""
    return unique_domain_id()


def ros_env(domain_id: int, distro: str = "humble", with_workspace: bool = True, log_dir: str | None = None,
            **extra: str) -> dict:
    """Environment for a ROS 2 subprocess on loopback Cyclone DDS in ``domain_id`` (see the module doc).
    ``extra`` entries are added (a value of None removes the variable)."""
    require(distro)
    ws = workspace(distro) if with_workspace else None
    env = dict(_sourced(distro, ws))
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["RMW_IMPLEMENTATION"] = "rmw_cyclonedds_cpp"
    env["CYCLONEDDS_URI"] = LOOPBACK_URI
    for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS", "ROS_LOCALHOST_ONLY"):
        env.pop(k, None)
    if distro == "humble":
        # Humble: ROS_LOCALHOST_ONLY=1 together with a CYCLONEDDS_URI selecting lo fails node creation
        env["ROS_LOCALHOST_ONLY"] = "0"
    env["PYTHONPATH"] = os.pathsep.join([CORE_PKG, ROS_PKG] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["ROS_LOG_DIR"] = log_dir or os.path.join(tempfile.gettempdir(), f"mm_ros_logs_{os.getuid()}")
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def default_signal_handling() -> None:
    """In a child between fork and exec: SIGINT and SIGTERM at their default action and unblocked, whatever the
    test process had (an ignored disposition survives exec). ``ros2 launch`` leaves an inherited SIG_IGN in
    place and would then never hear a Ctrl-C: in two full CI runs the launch-shutdown tests saw the launch ignore
    SIGINT although they pass alone."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


class RosProcess:
    """A ROS 2 process (or launch tree) in its own process group, its output in a temporary file.

    Use as a context manager or call :meth:`stop`; :meth:`stop` returns everything it printed.
    """

    def __init__(self, cmd: list[str], env: dict, name: str | None = None, cwd: str | None = None):
        self.cmd = list(cmd)
        self.name = name or os.path.basename(cmd[0])
        self._log = tempfile.NamedTemporaryFile(prefix=f"mm_{self.name}_", suffix=".log", delete=False)
        self.proc = subprocess.Popen(self.cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=default_signal_handling)
        self._output = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        """What the process printed so far (stdout and stderr)."""
        if self._output is not None:
            return self._output
        return _read(self._log.name)

    def wait_for_output(self, text: str, timeout: float = 30.0) -> bool:
        return wait_for(lambda: text in self.output() or not self.running(), timeout, 0.1) and \
            text in self.output()

    def _signal(self, sig) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 10.0) -> str:
        """SIGINT to the group (what Ctrl-C does: launch shuts its children down), then SIGTERM, then
        SIGKILL; returns the output."""
        if self._output is not None:
            return self._output
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                self._signal(sig)
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        # children of a launch may outlive the leader briefly: clear the group
        self._signal(signal.SIGKILL)
        self._log.close()
        self._output = _read(self._log.name)
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)
        return self._output

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def start(cmd: list[str], domain_id: int, distro: str = "humble", name: str | None = None,
          cwd: str | None = None, **extra) -> RosProcess:
    """Start ``cmd`` (``["ros2", "launch", ...]``, ``["ros2", "run", "controller_manager",
    "ros2_control_node", ...]``) in the ROS environment of ``domain_id``."""
    return RosProcess(cmd, ros_env(domain_id, distro, **extra), name=name, cwd=cwd)


def start_serve(domain_id: int, *args: str, distro: str = "humble", **extra) -> RosProcess:
    """``mechanism_model_ros.serve --transport rclpy`` (this checkout's code) under the ROS Python."""
    return start([ROS_PYTHON, "-m", "mechanism_model_ros.serve", "--transport", "rclpy", "--status-period",
                  "0", "--log-level", "ERROR", *args], domain_id, distro, name="serve_rclpy", **extra)


def run(cmd: list[str], domain_id: int, distro: str = "humble", timeout: float = 60.0, input: str | None = None,
        cwd: str | None = None, **extra) -> subprocess.CompletedProcess:
    """Run ``cmd`` to completion in the ROS environment (text output captured; no exception on failure)."""
    env = ros_env(domain_id, distro, **extra)
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, input=input,
                              start_new_session=True, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(cmd, -9, _text(exc.stdout), _text(exc.stderr) + f"\n(timed out "
                                                                                         f"after {timeout} s)")


def _text(b) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def run_python(code: str, domain_id: int, distro: str = "humble", timeout: float = 60.0, args=(),
               **extra) -> subprocess.CompletedProcess:
    """Run Python ``code`` with the ROS Python (rclpy, tf2_ros, the built interfaces importable)."""
    return run([ROS_PYTHON, "-c", code, *args], domain_id, distro, timeout=timeout, **extra)


def ros2(*args: str, domain_id: int, distro: str = "humble", timeout: float = 60.0,
         **extra) -> subprocess.CompletedProcess:
    """``ros2 <args>``; graph verbs start a daemon per domain: call :func:`stop_daemon` when done."""
    return run(["ros2", *args], domain_id, distro, timeout=timeout, **extra)


def stop_daemon(domain_id: int, distro: str = "humble") -> None:
    """Stop the ``ros2`` CLI daemon of ``domain_id`` (started by ``ros2 topic list`` and friends)."""
    if available(distro):
        run(["ros2", "daemon", "stop"], domain_id, distro, timeout=30, with_workspace=False)


def wait_for_messages(domain_id: int, topic: str, ros_type: str, qos=None, count: int = 1,
                      timeout: float = 30.0) -> list:
    """Up to ``count`` messages of ``topic`` received in this process over the Cyclone transport (no rclpy
    needed) within ``timeout``; ``qos`` defaults to reliable, transient-local (latched topics)."""
    from mechanism_model_ros import qos as Q
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    configure_this_process(domain_id)
    ctx = CycloneContext(domain_id)
    node = CycloneNode("mm_test_listener", context=ctx)
    got: list = []
    try:
        node.create_subscription(topic, ros_type, qos or Q.LATCHED, got.append)
        wait_for(lambda: len(got) >= count, timeout, 0.05)
        return list(got)
    finally:
        node.close()
        ctx.close()
