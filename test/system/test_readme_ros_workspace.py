"""The README's "On a ROS 2 robot" workspace lines -- ``git clone``, ``rosdep install``, ``colcon build``,
``source install/setup.bash`` -- as a ROS 2 user runs them (issue 21: every README and docs command is executed
by a test). The lines after them (``ros2 launch``, ``ros2 service call`` ...) run against the test workspace
of test/ros/ros_env.py in test_ros2_workspace.py and test_rover_launch.py.

* ``git clone <repo-url>``: run as written with this checkout's path for ``<repo-url>`` (the test has no network
  and the project no fixed URL): it clones this repository's committed HEAD, not uncommitted edits.
* ``colcon build``: the README's exact line in that clone's workspace, in a shell like a ROS 2 user's
  (``/opt/ros/humble/setup.bash`` sourced, ``python3`` the interpreter ROS is built for, nothing of this test's
  venv on PATH); then ``source install/setup.bash`` puts ``mechanism-model`` on PATH and ``ros2 pkg list``
  lists the four packages, as the README says.
* ``rosdep install``: NOT run. rosdep resolves keys through its database (``rosdep init``/``rosdep update``
  download it from GitHub's ros/rosdistro) and installs with apt, neither of which a test can do here (no
  network but PyPI and Debian's mirror, no root in a developer's run). What is checked offline instead: every
  dependency key of every package.xml the line would read (``--from-paths src`` crawls the whole clone) is one
  of our packages (skipped by ``--ignore-src``), a ROS package installed in /opt/ros/humble or one of
  :data:`ROS_PACKAGES_NOT_INSTALLED_HERE`, or a system key of :data:`ROSDEP_SYSTEM_KEYS` whose Debian package
  apt knows. Those two tables were checked by hand against ros/rosdistro (see their comments): a new key fails
  here until someone does the same for it (this found ``python3-lark``, which is not a rosdep key:
  ``rosdep install`` failed on it; the key is ``python3-lark-parser``).
"""

import os
import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from docs_text import TOP, doc_lines
from ros import ros_env
from ros.dds_helpers import LOOPBACK_URI

HEADING = "## On a ROS 2 robot (Humble, Jazzy)"
OUR_PACKAGES = ("mechanism_model_core", "mechanism_model_msgs", "mechanism_model_ros", "mechanism_model_controllers")
#: rosdep system keys our package.xml files use -> the Debian package ``rosdep install`` installs for each on
#: Debian bookworm and Ubuntu (ros/rosdistro rosdep/python.yaml at 8468e88, 2026-08-22, checked by hand)
ROSDEP_SYSTEM_KEYS = {
    "python3-numpy": "python3-numpy",
    "python3-scipy": "python3-scipy",
    "python3-lxml": "python3-lxml",
    "python3-yaml": "python3-yaml",
    "python3-lark-parser": "python3-lark",
    "python3-pytest": "python3-pytest",
    "python3-hypothesis": "python3-hypothesis",
}
#: ROS packages released for Humble and Jazzy (ros/rosdistro humble/ and jazzy/distribution.yaml at 8468e88)
#: that the ROS 2 of ../shared/ros2 does not install
ROS_PACKAGES_NOT_INSTALLED_HERE = {
    "coal": "ros-humble-coal (the collision extra; release repository ros2-gbp/coal-release)",
    "ament_lint_common": "ros-humble-ament-lint-common (ament_lint; a test_depend of mechanism_model_msgs)",
}
DEPEND_TAGS = ("depend", "build_depend", "build_export_depend", "buildtool_depend", "buildtool_export_depend",
               "exec_depend", "test_depend", "doc_depend")


def workspace_lines() -> list[str]:
    lines = doc_lines("README.md", "", heading=HEADING)
    assert len(lines) >= 4, lines
    return lines


def test_the_workspace_lines_are_the_ones_this_test_runs():
    """The README's first four lines of the block are the ones the tests below stand for, and docs/ros.md's
    ``colcon build`` and ``source`` lines are the same text (so the build below runs them too)."""
    clone, rosdep, build, source = workspace_lines()[:4]
    assert clone == "mkdir -p ~/ros2_ws/src && cd ~/ros2_ws/src && git clone <repo-url> mechanism_model && " \
                    "cd ~/ros2_ws", clone
    assert rosdep == "rosdep install --from-paths src --ignore-src -y", rosdep
    assert shlex.split(build)[:3] == ["colcon", "build", "--packages-select"], build
    assert source == "source install/setup.bash", source
    ros_md = doc_lines(os.path.join("docs", "ros.md"), "colcon build") + \
        doc_lines(os.path.join("docs", "ros.md"), "source install/setup.bash")
    assert ros_md == [build, source], ros_md


def _package_xml_files() -> list[str]:
    """Every package.xml ``rosdep install --from-paths src`` reads in a clone: the tracked ones."""
    p = subprocess.run(["git", "-C", TOP, "ls-files"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        pytest.skip(f"{TOP} is not a git checkout: {p.stderr.strip()}")
    return [f for f in p.stdout.splitlines() if os.path.basename(f) == "package.xml"]


def _apt_candidates(packages) -> dict | None:
    """Debian package -> whether apt has a candidate for it (one ``apt-cache policy`` call); None without apt."""
    if not shutil.which("apt-cache"):
        return None
    p = subprocess.run(["apt-cache", "policy", *packages], capture_output=True, text=True, timeout=120)
    known, name = {}, None
    for line in p.stdout.splitlines():
        if line and not line[0].isspace() and line.endswith(":"):
            name = line[:-1]
        elif name and line.strip().startswith("Candidate:"):
            known[name] = line.split(":", 1)[1].strip() != "(none)"
    return {pkg: known.get(pkg, False) for pkg in packages}


def test_every_rosdep_key_of_the_packages_resolves_offline():
    """The offline check of the ``rosdep install`` line (module docstring): every key of every package.xml is
    ours, a ROS package of Humble, or a known system key whose Debian package exists."""
    files = _package_xml_files()
    assert sorted(os.path.dirname(f) for f in files) == sorted(OUR_PACKAGES), files
    humble_share = os.path.join(ros_env.DISTROS["humble"], "share")
    problems, keys = [], set()
    for f in files:
        root = ET.parse(os.path.join(TOP, f)).getroot()
        assert root.get("format") == "3" and not [e for e in root.iter() if e.get("condition")], f
        for el in root:
            if el.tag not in DEPEND_TAGS:
                continue
            key = el.text.strip()
            keys.add(key)
            if key in OUR_PACKAGES:
                continue
            if key in ROSDEP_SYSTEM_KEYS:
                continue
            if key.startswith(("python3-", "python-")) or "-" in key:
                problems.append(f"{f}: {key}: a system key this test does not know (check it in ros/rosdistro's "
                                f"rosdep/*.yaml and add it to ROSDEP_SYSTEM_KEYS)")
            elif key in ROS_PACKAGES_NOT_INSTALLED_HERE:
                continue
            elif os.path.isdir(humble_share) and not os.path.isdir(os.path.join(humble_share, key)):
                problems.append(f"{f}: {key}: not a ROS package of {ros_env.DISTROS['humble']}")
    debian = sorted({ROSDEP_SYSTEM_KEYS[k] for k in keys if k in ROSDEP_SYSTEM_KEYS})
    known = _apt_candidates(debian)
    problems += [f"apt knows no Debian package {d} (rosdep's package for a key we use)"
                 for d in debian if known is not None and not known[d]]
    assert not problems, "\n".join(problems)
    assert {"python3-lark-parser", "coal", "controller_manager"} <= keys, sorted(keys)


def _user_env(home) -> dict:
    """A ROS 2 user's shell before sourcing: HOME ``home`` (git's global settings still the real HOME's), no ROS,
    colcon or venv variables, and ``python3`` on PATH the interpreter ROS is built for (directories holding
    another ``python3``, such as pyenv's shims or this test's venv, left out); loopback Cyclone DDS in a test
    domain for the ``ros2`` commands."""
    drop = ("AMENT_PREFIX_PATH", "COLCON_PREFIX_PATH", "CMAKE_PREFIX_PATH", "PYTHONPATH", "LD_LIBRARY_PATH",
            "VIRTUAL_ENV", "PYTHONHOME", "ROS_DISTRO", "ROS_VERSION", "ROS_PYTHON_VERSION")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("ROS_", "CYCLONEDDS"))}
    ros_python = os.path.realpath(ros_env.ROS_PYTHON)
    keep = []
    for d in env.get("PATH", "").split(os.pathsep):
        exe = os.path.join(d, "python3")
        if d and (not os.path.exists(exe) or os.path.realpath(exe) == ros_python):
            keep.append(d)
    own = os.path.join(os.path.expanduser("~"), ".gitconfig")
    if os.path.isfile(own) and "GIT_CONFIG_GLOBAL" not in env:
        env["GIT_CONFIG_GLOBAL"] = own       # git's settings (safe.directory ...) stay those of the real HOME
    env.update(HOME=str(home), PATH=os.pathsep.join(keep), ROS_DOMAIN_ID=str(ros_env.domain()),
               RMW_IMPLEMENTATION="rmw_cyclonedds_cpp", CYCLONEDDS_URI=LOOPBACK_URI, ROS_LOCALHOST_ONLY="0",
               RCUTILS_COLORIZED_OUTPUT="0", ROS_LOG_DIR=str(home / "ros_log"))
    return env


@pytest.mark.ros
@pytest.mark.slow
def test_the_readme_clone_colcon_build_and_source_lines(tmp_path):
    """``git clone`` (this checkout for ``<repo-url>``), the README's ``colcon build`` and ``source
    install/setup.bash`` as written, in one bash: the clone is this checkout's HEAD, the four packages build,
    ``mechanism-model`` on PATH is the workspace's and runs (``--help``, ``info`` of the default rover), and
    ``ros2 pkg list`` lists the four packages. About 45 s of CPU (load average 12 on 2 cores: 3 min wall)."""
    ros_env.require("humble")
    head = subprocess.run(["git", "-C", TOP, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=60)
    if head.returncode != 0:
        pytest.skip(f"{TOP} is not a git checkout: {head.stderr.strip()}")
    clone, _, build, source = workspace_lines()[:4]
    assert clone.count("<repo-url>") == 1
    script = "\n".join([
        f"source {ros_env.DISTROS['humble']}/setup.bash",
        "set -eo pipefail",
        clone.replace("<repo-url>", shlex.quote(TOP)),
        "git -C src/mechanism_model rev-parse HEAD",
        build,
        "set +e", source, "set -e",          # ROS's setup scripts are not written for errexit
        "echo CLI=$(command -v mechanism-model)",
        "mechanism-model --help",
        "mechanism-model info rocky8/rocky8_rover.xml",
        "echo PACKAGES:",
        "ros2 pkg list | grep mechanism_model",
    ])
    p = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=_user_env(tmp_path), capture_output=True,
                       text=True, timeout=900, preexec_fn=ros_env.default_signal_handling)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-5000:]
    lines = p.stdout.splitlines()
    assert head.stdout.strip() in lines, (head.stdout, out[-3000:])
    ws = tmp_path / "ros2_ws"
    cli = next(line for line in lines if line.startswith("CLI="))[4:]
    assert cli.startswith(str(ws / "install") + os.sep) and cli.endswith("/bin/mechanism-model"), cli
    assert "usage: mechanism-model" in p.stdout and "arm_turret" in p.stdout, out[-3000:]
    listed = lines[lines.index("PACKAGES:") + 1:]
    assert listed == sorted(OUR_PACKAGES), listed
    assert (ws / "src" / "mechanism_model" / "README.md").is_file()
