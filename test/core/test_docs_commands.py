"""The command lines of README.md, docs/collision.md, docs/urdf.md and docs/reach.md that need no ROS, run as
written (read from the docs' text, so that a doc edit that breaks one fails here): each in a fresh folder, its
``mechanism-model`` the console script this environment installed (issue 21: every README and docs command is
executed by a test)."""

import os
import shlex
import subprocess
import sys
from xml.etree import ElementTree

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core import shapes as S
from mechanism_model_core.io import load_environment, read_srdf
from mechanism_model_core.library import model_path
from mechanism_model_core.reach import ReachMap

from core.optional_deps import require
from docs_text import TOP, doc_lines, venv_argv


def _run(line: str, cwd, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    p = subprocess.run(venv_argv(line), cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, (line, p.stderr[-3000:])
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    return p


def test_the_readme_install_lines_are_what_setup_env_installs(tmp_path):
    """The README's "Without ROS" venv and ``pip install`` lines install what ``scripts/setup_env.sh`` (run by
    scripts/demo.sh and scripts/test.sh, which CI runs) installs: the script is run with a stand-in interpreter
    in its venv that records each pip call instead of installing (a real install takes minutes)."""
    venv_lines = doc_lines("README.md", "python3 -m venv", heading="## Without ROS")
    pip_lines = doc_lines("README.md", "pip install", heading="## Without ROS")
    assert venv_lines == ["python3 -m venv .venv && . .venv/bin/activate"], venv_lines
    assert len(pip_lines) == 1, pip_lines
    with open(os.path.join(TOP, "scripts", "setup_env.sh"), encoding="utf-8") as fh:
        assert 'VENV=${VENV:-.venv}' in fh.read()          # the same .venv the README creates
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "pip_calls"
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {shlex.quote(str(log))}\n')
    python.chmod(0o755)
    p = subprocess.run(["bash", os.path.join(TOP, "scripts", "setup_env.sh")], env={**os.environ, "VENV": str(venv)},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    calls = [c.split() for c in log.read_text().splitlines()]
    installs = [[a for a in c[3:] if not a.startswith("-")] for c in calls if c[:3] == ["-m", "pip", "install"]]
    assert installs[-1] == shlex.split(pip_lines[0])[2:], (installs, pip_lines)


@pytest.mark.slow
def test_the_readme_install_lines_install_a_working_suite(tmp_path):
    """The README's "Without ROS" venv and ``pip install`` lines run as written by bash (about 16 s from pip's
    cache), in a folder where ``./mechanism_model_core`` and ``./mechanism_model_ros`` are this checkout's
    (links, so the checkout's own .venv is untouched): the venv's ``mechanism-model`` runs and the extras the
    line names (coal for collision, cyclonedds) are importable in it."""
    lines = doc_lines("README.md", "python3 -m venv", heading="## Without ROS") + \
        doc_lines("README.md", "pip install", heading="## Without ROS")
    assert len(lines) == 2, lines
    for pkg in ("mechanism_model_core", "mechanism_model_ros"):
        (tmp_path / pkg).symlink_to(os.path.join(TOP, pkg))
    p = subprocess.run(["bash", "-ec", "\n".join(lines)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    bin_dir = tmp_path / ".venv" / "bin"
    info = subprocess.run([str(bin_dir / "mechanism-model"), "info", "rocky8/rocky8_rover.xml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert info.returncode == 0 and "rocky8" in info.stdout, info.stderr[-3000:]
    q = subprocess.run([str(bin_dir / "python"), "-c", "import coal, cyclonedds, mechanism_model_ros"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert q.returncode == 0, q.stderr[-3000:]


def test_the_collision_matrix_line(tmp_path):
    """docs/collision.md's ``collision-matrix`` line as written: the SRDF it writes names only the model's
    bodies, with MoveIt's reasons, disables the arm base's mount on the chassis (adjacent), leaves pairs to
    check, and is read back by ``read_srdf``."""
    require("coal", "collision")
    lines = doc_lines(os.path.join("docs", "collision.md"), "mechanism-model collision-matrix")
    assert len(lines) == 1, lines
    _run(lines[0], tmp_path)
    argv = shlex.split(lines[0])
    out = tmp_path / argv[argv.index("-o") + 1]
    model = load_model(model_path(argv[2]))
    pairs = {frozenset((e.get("link1"), e.get("link2"))): e.get("reason")
             for e in ElementTree.parse(out).getroot().iter("disable_collisions")}   # our own output
    assert set().union(*pairs) <= set(model.body_names)
    assert set(pairs.values()) <= {"Adjacent", "Rigid", "Default", "Always", "Never"}
    assert pairs[frozenset(("arm_base", "chassis"))] == "Adjacent"
    n = len(model.body_names)
    assert 0 < len(pairs) < n * (n - 1) // 2
    read_srdf(out, model)


def _reach_lines():
    lines = doc_lines(os.path.join("docs", "reach.md"), "mechanism-model reach ")
    assert [shlex.split(x)[2] for x in lines] == ["map", "map", "show", "place"], lines
    return lines


def test_the_reach_map_show_and_place_lines(tmp_path):
    """docs/reach.md's first ``reach map`` line, ``reach show`` and ``reach place`` as written, in order: the
    map file and the PNG exist, ``show`` summarizes the map, ``place`` lists placements at the target."""
    require("h5py", "reach")
    map_line, _, show_line, place_line = _reach_lines()
    _run(map_line, tmp_path)
    argv = shlex.split(map_line)
    out, png = argv[argv.index("-o") + 1], argv[argv.index("--png") + 1]
    assert (tmp_path / png).stat().st_size > 0
    rmap = ReachMap.load(tmp_path / out, load_model(model_path(argv[3])))
    assert rmap.index.max() > 0
    shown = _run(show_line, tmp_path).stdout
    assert "mer_idd ground:mi" in shown and "reachable" in shown, shown
    placed = _run(place_line, tmp_path).stdout
    assert "stability" in placed and "arm_yaw=" in placed, placed


@pytest.mark.slow
def test_the_reach_map_line_on_a_dask_scheduler(tmp_path):
    """docs/reach.md's ``reach map ... --scheduler tcp://HOST:8786`` line, with ``HOST:8786`` a local Dask
    scheduler on loopback and its 0.05 m resolution (tens of minutes on this machine) replaced by 0.3 m with
    10 directions (seconds): every other word as written; the map equals the process pool's."""
    require("distributed", "dask")
    from distributed import LocalCluster
    _, line, _, _ = _reach_lines()
    assert "--resolution 0.05" in line and "tcp://HOST:8786" in line, line
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        scheduler = cluster.scheduler_address
        assert scheduler.startswith("tcp://127.0.0.1:")
        small = line.replace("--resolution 0.05", "--resolution 0.3 --directions 10")
        (tmp_path / "dask").mkdir()
        _run(small.replace("tcp://HOST:8786", scheduler), tmp_path / "dask")
    argv = shlex.split(small)
    model = load_model(model_path(argv[3]))
    (tmp_path / "pool").mkdir()
    _run(small.replace(" --scheduler tcp://HOST:8786", ""), tmp_path / "pool")
    a = ReachMap.load(tmp_path / "dask" / argv[argv.index("-o") + 1], model)
    b = ReachMap.load(tmp_path / "pool" / argv[argv.index("-o") + 1], model)
    assert (a.index == b.index).all() and a.index.max() > 0


@pytest.mark.slow
def test_the_dask_worker_line_starts_a_worker_without_a_fixed_malloc_threshold(tmp_path):
    """docs/reach.md's ``dask worker`` line as written, ``HOST:8786`` a local Dask scheduler on loopback: the
    worker process its nanny starts has none of the malloc settings the map warns of (distributed's default
    for nannies sets MALLOC_TRIM_THRESHOLD_), and a map on it equals the serial one."""
    distributed = require("distributed", "dask")
    import dask

    from mechanism_model_core.reach import compute_map
    from mechanism_model_core.reach.execute import _malloc_env

    assert dask.config.get("distributed.nanny.pre-spawn-environ").get("MALLOC_TRIM_THRESHOLD_") is not None
    (line,) = doc_lines(os.path.join("docs", "reach.md"), "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON=")
    argv = shlex.split(line)
    name, value = argv[0].split("=", 1)
    assert argv[1:4] == ["dask", "worker", "tcp://HOST:8786"], argv
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env[name] = value
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        cmd = venv_argv(" ".join(argv[1:]).replace("tcp://HOST:8786", cluster.scheduler_address))
        worker = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with distributed.Client(cluster.scheduler_address) as client:
                client.wait_for_workers(1, timeout=120)
                assert list(client.run(_malloc_env).values()) == [{}]
            model = load_model(model_path("mer/mer_idd.xml"))
            kw = dict(resolution=0.35, directions=6)
            a = compute_map(model, "ground:mi", executor="dask", scheduler=cluster.scheduler_address, **kw)
            assert a.stats["worker_malloc_env"] == {}
        finally:
            worker.terminate()
            worker.wait(60)
    b = compute_map(model, "ground:mi", executor="serial", **kw)
    assert np.array_equal(a.reached, b.reached) and a.index.max() > 0


def test_the_xacro_lines(tmp_path):
    """docs/urdf.md's two xacro command lines as written (bash expands ``$HOME``, here the test's folder): the
    ``info`` line expands ``ur.urdf.xacro`` with its two arguments and finds ``ur_description`` at the
    ``--package-path`` it names; the ``convert`` line writes the prefixed URDF. The xacro files are small
    stand-ins written here (the UR repository is not vendored)."""
    require("xacro", "xacro")
    info_line, convert_line = (doc_lines(os.path.join("docs", "urdf.md"), p, heading="## xacro directly")
                               for p in ("mechanism-model info", "mechanism-model convert"))
    assert len(info_line) == 1 and len(convert_line) == 1, (info_line, convert_line)
    pkg = tmp_path / "src" / "Universal_Robots_ROS2_Description"
    (pkg / "urdf").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package format='3'><name>ur_description</name></package>\n")
    (pkg / "urdf" / "ur_macro.xacro").write_text(
        '<robot xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
        '  <xacro:macro name="ur_robot" params="prefix">\n'
        '    <link name="${prefix}base_link"/><link name="${prefix}shoulder_link"/>\n'
        '    <joint name="${prefix}shoulder_pan_joint" type="revolute"><parent link="${prefix}base_link"/>\n'
        '      <child link="${prefix}shoulder_link"/><origin xyz="0 0 0.1625"/><axis xyz="0 0 1"/>\n'
        '      <limit lower="-6.28" upper="6.28" effort="150" velocity="3.14"/></joint>\n'
        '  </xacro:macro>\n</robot>\n')
    work = tmp_path / "work"
    work.mkdir()
    (work / "ur.urdf.xacro").write_text(
        '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="$(arg name)">\n'
        '  <xacro:arg name="ur_type" default="ur5x"/><xacro:arg name="name" default="ur"/>\n'
        '  <xacro:include filename="$(find ur_description)/urdf/ur_macro.xacro"/>\n'
        '  <xacro:ur_robot prefix="$(arg ur_type)_"/>\n</robot>\n')
    (work / "robot.urdf.xacro").write_text(
        '<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="robot">\n'
        '  <xacro:arg name="prefix" default=""/>\n'
        '  <link name="$(arg prefix)base"/><link name="$(arg prefix)tool"/>\n'
        '  <joint name="$(arg prefix)j" type="prismatic"><parent link="$(arg prefix)base"/>\n'
        '    <child link="$(arg prefix)tool"/><axis xyz="1 0 0"/>\n'
        '    <limit lower="0" upper="0.5" effort="10" velocity="1"/></joint>\n</robot>\n')
    env = {**os.environ, "HOME": str(tmp_path),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    for key in ("MM_PACKAGE_PATH", "ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"):
        env.pop(key, None)                                   # only the line's --package-path can find it
    info = subprocess.run(["bash", "-c", info_line[0]], cwd=work, env=env, capture_output=True, text=True,
                          timeout=120)
    assert info.returncode == 0, info.stderr[-3000:]
    assert "ur5e" in info.stdout and "ur5e_shoulder_pan_joint" in info.stdout, info.stdout
    conv = subprocess.run(["bash", "-c", convert_line[0]], cwd=work, env=env, capture_output=True, text=True,
                          timeout=120)
    assert conv.returncode == 0, conv.stderr[-3000:]
    out = shlex.split(convert_line[0])[3]
    robot = load_model(str(work / out))
    assert {j.name for j in robot.joints} >= {"r1_j"}


def test_the_collision_docs_world_file_loads_as_written(tmp_path):
    """docs/collision.md's example environment file (the YAML that ``environment_file`` names), with the height
    field and mesh it refers to written beside it: a height field spanning the grid from its origin, the box
    rock at its pose, the boulder as a convex hull."""
    require("trimesh", "mesh")
    with open(os.path.join(TOP, "docs", "collision.md"), encoding="utf-8") as fh:
        section = fh.read().split("\n## ROS", 1)[1]
    (world,) = [b.split("```", 1)[0] for b in section.split("```yaml\n")[1:]]
    np.savetxt(tmp_path / "dem.csv", np.zeros((41, 41)), delimiter=",")
    (tmp_path / "boulder.obj").write_text("".join(f"v {x} {y} {z}\n" for x in (0, 1) for y in (0, 1) for z in (0, 1))
                                          + "f 1 2 4\nf 1 4 3\nf 5 7 8\nf 5 8 6\nf 1 5 6\nf 1 6 2\n"
                                          "f 3 4 8\nf 3 8 7\nf 1 3 7\nf 1 7 5\nf 2 6 8\nf 2 8 4\n")
    (tmp_path / "world.yaml").write_text(world)
    env = load_environment(tmp_path / "world.yaml")
    ob = {o.name: o for o in env.obstacles}
    assert list(ob) == ["terrain", "rock_1", "boulder"], list(ob)
    hf = ob["terrain"].geometry
    assert isinstance(hf, S.HeightField) and hf.x[0] == -10 and hf.x[-1] == 10 and hf.bottom == pytest.approx(-1)
    assert (ob["rock_1"].geometry.x, ob["rock_1"].geometry.y, ob["rock_1"].geometry.z) == (0.4, 0.3, 0.2)
    np.testing.assert_allclose(ob["rock_1"].pose[:3, 3], [1.2, 0.0, 0.1])
    assert isinstance(ob["boulder"].geometry, S.ConvexHull)
    np.testing.assert_allclose(ob["boulder"].pose[:3, 3], [3, 1, 0])
