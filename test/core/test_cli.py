"""The mechanism-model command: called in-process through main([...]) for its output, and as a real process
(python -m mechanism_model_core) for exit codes and stderr. Expected poses are computed by hand from the
model dimensions (see models/README.md), not from the package."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from mechanism_model_core.cli import main
from mechanism_model_core.library import list_models

ROVER = "rocky8/rocky8_rover.xml"
ARM = "rocky8/rocky8_arm.xml"


def run(*args, cwd=None):
    """Run the command in a child process; returns (exit code, stdout, stderr)."""
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    p = subprocess.run([sys.executable, "-m", "mechanism_model_core", *args], capture_output=True, text=True,
                       cwd=cwd, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def call(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------------------- info, models
def test_info_of_the_default_model(capsys):
    code, out, err = call(capsys, "info")
    assert code == 0 and not err
    assert "mechanism 'rocky8'" in out
    assert "left_rocker: revolute, axis (0 1 0), [-0.5, 0.5] rad, passive" in out
    assert "right_rocker: revolute, axis (0 1 0), [-0.5, 0.5] rad, = -left_rocker, passive" in out
    assert "chassis  <- chassis: floating" in out
    assert "mast_camera" in out and "mount" in out
    # the coordinate order is printed in q order
    table = out.split("joint-coordinate order (q):")[1]
    lines = [ln.split() for ln in table.splitlines() if ln.strip()[:1].isdigit()]
    names = [ln[1] for ln in lines]
    assert names[:7] == ["chassis.x", "chassis.y", "chassis.z", "chassis.roll", "chassis.pitch",
                         "chassis.yaw", "left_rocker"]
    assert names[-5:] == ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]


def test_info_takes_a_path(capsys, tmp_path):
    from mechanism_model_core.library import model_path

    code, out, _ = call(capsys, "info", model_path(ARM), "--no-frames")
    assert code == 0 and "arm_turret" in out and "named frames" not in out


def test_models_lists_the_library(capsys):
    code, out, _ = call(capsys, "models")
    assert code == 0
    for name in list_models():
        assert name in out
    assert "rocky8/rocky8_rover.xml" in out and "(default)" in out


# ------------------------------------------------------------------------------------------- fk
def test_fk_json_mast_camera(capsys):
    code, out, _ = call(capsys, "fk", ROVER, "--q", "mast_pan=pi/2", "--frame", "mast_camera", "--json")
    assert code == 0
    data = json.loads(out)
    pose = data["poses"]["mast_camera"]
    # mast base (0.25, 0, 0.50), pan axis 0.90 up, tilt 0.10 up, camera (0.05, 0, 0.05) turned 90 deg
    np.testing.assert_allclose(pose["xyz"], [0.25, 0.05, 1.55], atol=1e-9)
    np.testing.assert_allclose(pose["quaternion_xyzw"], [0, 0, math.sqrt(0.5), math.sqrt(0.5)], atol=1e-9)
    np.testing.assert_allclose(pose["rpy"], [0, 0, math.pi / 2], atol=1e-9)
    np.testing.assert_allclose(np.array(pose["matrix"])[:3, 0], [0, 1, 0], atol=1e-9)
    assert data["q"]["mast_pan"] == pytest.approx(math.pi / 2)


def test_fk_degrees_relative_to_and_text_output(capsys):
    code, out, _ = call(capsys, "fk", ROVER, "--degrees", "--q", "mast_pan=90", "--frame", "mast_camera")
    assert code == 0
    assert "mast_camera in ground:" in out
    assert "0.250000   0.050000   1.550000" in out
    code, out, _ = call(capsys, "fk", ROVER, "--frame", "arm_tool", "--relative-to", "arm_mount", "--json")
    np.testing.assert_allclose(json.loads(out)["poses"]["arm_tool"]["xyz"], [0.78, 0, -0.10], atol=1e-9)


def test_fk_coupled_values_and_table(capsys):
    code, out, _ = call(capsys, "fk", ROVER, "--q", "left_rocker=0.2", "--json", "--frame", "left_front_contact",
                        "--frame", "right_front_contact")
    data = json.loads(out)
    assert data["q"]["right_rocker"] == pytest.approx(-0.2)
    c, s = math.cos(0.2), math.sin(0.2)
    np.testing.assert_allclose(data["poses"]["left_front_contact"]["xyz"],
                               [0.4 * c - 0.3 * s, 0.35, 0.30 - 0.4 * s - 0.3 * c], atol=1e-9)
    np.testing.assert_allclose(data["poses"]["right_front_contact"]["xyz"],
                               [0.4 * c + 0.3 * s, -0.35, 0.30 + 0.4 * s - 0.3 * c], atol=1e-9)
    code, out, _ = call(capsys, "fk", "four_bar/four_bar.xml")
    assert code == 0
    row = next(ln for ln in out.splitlines() if ln.split()[:1] == ["closure_a"])
    np.testing.assert_allclose([float(x) for x in row.split()[1:4]], [0.4, 0.4, 0.0], atol=1e-6)


def test_fk_comma_separated_values(capsys):
    code, out, _ = call(capsys, "fk", ARM, "--q", "arm_shoulder=M_PI_2,arm_yaw=0", "--frame", "arm_tool",
                        "--json")
    np.testing.assert_allclose(json.loads(out)["poses"]["arm_tool"]["xyz"], [-0.05, 0, -0.73], atol=1e-9)


# ------------------------------------------------------------------------------------------- jacobian
def test_jacobian_of_the_arm_tool_at_zero(capsys):
    code, out, _ = call(capsys, "jacobian", ARM, "--frame", "arm_tool", "--json")
    assert code == 0
    data = json.loads(out)
    J = np.array(data["jacobian"])
    assert data["columns"] == ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
    # tool at p = (0.78, 0, -0.10); column i = [z_i x (p - o_i); z_i]
    np.testing.assert_allclose(J[:, 0], [0, 0.78, 0, 0, 0, 1], atol=1e-9)            # yaw about z at 0
    np.testing.assert_allclose(J[:, 1], [-0.10, 0, -0.73, 0, 1, 0], atol=1e-9)       # y at (0.05, 0, 0)
    np.testing.assert_allclose(J[:, 2], [-0.10, 0, -0.38, 0, 1, 0], atol=1e-9)       # y at (0.40, 0, 0)
    np.testing.assert_allclose(J[:, 3], [-0.10, 0, -0.08, 0, 1, 0], atol=1e-9)       # y at (0.70, 0, 0)
    np.testing.assert_allclose(J[:, 4], [0, 0, 0, 0, 0, 1], atol=1e-9)               # turret on the tool axis


def test_jacobian_local_and_text(capsys):
    code, out, _ = call(capsys, "jacobian", ARM, "--frame", "arm_tool", "--convention", "local", "--json")
    J = np.array(json.loads(out)["jacobian"])
    # tool frame is turned by pi about y: its x = -x0, z = -z0; yaw column v = (0, 0.78, 0) stays on y
    np.testing.assert_allclose(J[:, 0], [0, 0.78, 0, 0, 0, -1], atol=1e-9)
    code, out, _ = call(capsys, "jacobian", ARM, "--frame", "arm_tool")
    assert code == 0 and "convention LOCAL_WORLD_ALIGNED" in out and "arm_turret" in out


def test_jacobian_independent_columns(capsys):
    code, out, _ = call(capsys, "jacobian", ROVER, "--frame", "right_front_contact", "--independent", "--json")
    data = json.loads(out)
    assert "right_rocker" not in data["columns"] and "left_rocker" in data["columns"]
    J = np.array(data["jacobian"])
    k = data["columns"].index("left_rocker")
    # right rocker turns by -d(left): contact (0.40, -0.35, 0) about the pivot (0, -0.30, 0.30), axis -y
    np.testing.assert_allclose(J[:3, k], -np.cross([0, 1, 0], [0.40, -0.05, -0.30]), atol=1e-9)


# ------------------------------------------------------------------------------------------- check
def test_check_good_files(capsys):
    from mechanism_model_core.library import model_path

    files = [model_path(m) for m in list_models()]
    code, out, err = call(capsys, "check", *files)
    assert code == 0 and not err
    assert out.count(": ok (") == len(files)


BAD_DTD = """<?xml version="1.0"?>
<Mechanism_Model name="bad">
  <ME_Body name="a">
    <ME_Joint name="j1" type="screw"/>
  </ME_Body>
  <ME_Body name="b" colour="red">
    <Frame name="f" type="reference"><Transform><Position x="1"/></Transform></Frame>
  </ME_Body>
</Mechanism_Model>
"""

BAD_PARENT = """<?xml version="1.0"?>
<Mechanism_Model name="bad">
  <ME_Body name="a"/>
  <ME_Body name="b" parent="nowhere"/>
</Mechanism_Model>
"""


def test_check_reports_every_dtd_problem_with_file_and_line(capsys, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text(BAD_DTD)
    code, out, err = call(capsys, "check", str(bad))
    assert code == 1
    lines = err.strip().splitlines()
    assert any(ln.startswith(f"{bad}:4:") and "screw" in ln for ln in lines)
    assert any(ln.startswith(f"{bad}:6:") and "colour" in ln for ln in lines)


def test_check_semantic_error_and_mixed_files(capsys, tmp_path):
    from mechanism_model_core.library import model_path

    bad = tmp_path / "parent.xml"
    bad.write_text(BAD_PARENT)
    missing = tmp_path / "missing.xml"
    code, out, err = call(capsys, "check", model_path(ARM), str(bad), str(missing))
    assert code == 1
    assert f"{bad}:4: " in err and "nowhere" in err
    assert f"{missing}: no such file" in err
    assert ": ok (" in out


def test_check_not_well_formed(capsys, tmp_path):
    bad = tmp_path / "broken.xml"
    bad.write_text('<Mechanism_Model name="x">\n  <ME_Body name="a">\n</Mechanism_Model>\n')
    code, _, err = call(capsys, "check", str(bad))
    assert code == 1 and err.startswith(f"{bad}:3")


# ------------------------------------------------------------------------------------------- convert
def test_convert_round_trip(capsys, tmp_path):
    pytest.importorskip("mechanism_model_core.io.urdf")
    from mechanism_model_core import forward_kinematics, load_model
    from mechanism_model_core.library import model_path

    urdf = tmp_path / "rover.urdf"
    xml = tmp_path / "rover.xml"
    assert call(capsys, "convert", ROVER, str(urdf))[0] == 0
    code, out, _ = call(capsys, "convert", str(urdf), str(xml))
    assert code == 0 and "nq = 29" in out
    a, b = load_model(model_path(ROVER)), load_model(str(xml))
    q = {"left_rocker": 0.1, "mast_pan": 0.4, "arm_elbow": 0.7, "chassis.yaw": 0.3}
    for f in ("mast_camera", "arm_tool", "right_rear_contact"):
        np.testing.assert_allclose(forward_kinematics(b, q).pose(f), forward_kinematics(a, q).pose(f),
                                   atol=1e-9)


def test_convert_from_a_dh_table(capsys, tmp_path):
    table = tmp_path / "planar.dh"
    table.write_text("convention craig\n"
                     "link1 j1 revolute 0 0 0 0\n"
                     "link2 j2 revolute 0.5 0 0 0\n")
    out_xml = tmp_path / "planar.xml"
    code, _, err = call(capsys, "convert", str(table), str(out_xml))
    assert code == 0, err
    code, out, _ = call(capsys, "fk", str(out_xml), "--q", "j1=pi/2", "--frame", "link2", "--json")
    np.testing.assert_allclose(json.loads(out)["poses"]["link2"]["xyz"], [0, 0.5, 0], atol=1e-9)


def test_convert_to_unknown_format(capsys, tmp_path):
    code, _, err = call(capsys, "convert", ARM, str(tmp_path / "arm.step"))
    assert code == 1 and "error" in err


# ------------------------------------------------------------------------------------------- demo
def test_demo_prints_tree_and_poses(capsys):
    code, out, _ = call(capsys, "demo")
    assert code == 0
    assert "home configuration" in out and "sample configuration" in out
    home = out.split("home configuration")[1].split("sample configuration")[0]
    row = {ln.split()[0]: [float(x) for x in ln.split()[1:4]] for ln in home.splitlines()
           if ln.strip() and ln.split()[0] in ("mast_camera", "arm_tool", "left_front_contact")}
    np.testing.assert_allclose(row["mast_camera"], [0.30, 0, 1.55], atol=1e-6)
    np.testing.assert_allclose(row["arm_tool"], [1.20, 0, 0.25], atol=1e-6)
    np.testing.assert_allclose(row["left_front_contact"], [0.40, 0.35, 0], atol=1e-6)


def test_demo_with_another_model(capsys):
    code, out, _ = call(capsys, "demo", "--model", "lemur/lemur_hexapod.xml")
    assert code == 0 and "leg6_foot" in out


# ------------------------------------------------------------------------------------------- processes
def test_module_entry_point_help_and_usage_errors():
    code, out, _ = run("--help")
    assert code == 0 and "info" in out and "render" in out
    for sub in ("info", "check", "fk", "jacobian", "convert", "render", "demo", "models"):
        code, out, err = run(sub, "--help")
        assert code == 0, (sub, err)
        assert "usage:" in out
    code, _, err = run()
    assert code == 2 and "usage:" in err
    code, _, err = run("fk")                       # missing MODEL
    assert code == 2 and "usage:" in err


def test_errors_go_to_stderr_without_traceback():
    code, out, err = run("fk", ROVER, "--frame", "no_such_frame")
    assert code == 1 and not out
    assert "unknown frame 'no_such_frame'" in err and "Traceback" not in err
    code, _, err = run("fk", ROVER, "--q", "mast_pan")
    assert code == 1 and "name=value" in err and "Traceback" not in err
    code, _, err = run("fk", ROVER, "--q", "warp=1")
    assert code == 1 and "warp" in err and "Traceback" not in err
    code, _, err = run("info", "no/such/model.xml")
    assert code == 1 and "no/such/model.xml" in err and "Traceback" not in err
    code, _, err = run("fk", ROVER, "--q", "mast_pan=__import__('os')")
    assert code == 1 and "Traceback" not in err


def test_check_exit_code_in_a_process(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text(BAD_PARENT)
    code, out, err = run("check", str(bad))
    assert code == 1 and f"{bad}:4:" in err
    code, out, err = run("check", "-q", os.path.join(os.path.dirname(__file__), "..", "..", "models", ROVER))
    assert code == 0 and not out and not err


def test_console_script_is_installed():
    import shutil

    exe = shutil.which("mechanism-model") or os.path.join(os.path.dirname(sys.executable), "mechanism-model")
    if not os.path.exists(exe):
        pytest.skip("console script not installed in this environment")
    p = subprocess.run([exe, "models"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "rocky8_rover.xml" in p.stdout


def test_warnings_are_one_line_messages(tmp_path):
    pytest.importorskip("mechanism_model_core.io.urdf")
    robot = tmp_path / "tilted.urdf"
    robot.write_text('<robot name="r"><link name="a"/><link name="b"/>'
                     '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
                     '<axis xyz="0 0 0.9999"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
                     '</robot>')
    code, out, err = run("info", str(robot))
    assert code == 0 and "j: revolute" in out
    assert "mechanism-model info: warning:" in err and "normalised" in err
    assert "Traceback" not in err and "return _Reader" not in err


def test_convert_from_kindsl(capsys, tmp_path):
    pytest.importorskip("lark")
    pytest.importorskip("mechanism_model_core.io.kindsl")
    src = os.path.join(os.path.dirname(__file__), "..", "data", "robots", "fancy_kindsl", "fancy.kindsl")
    from mechanism_model_core import forward_kinematics, load_model

    a = load_model(src)
    for ext in ("urdf", "xml"):
        out = tmp_path / f"fancy.{ext}"
        code, _, err = call(capsys, "convert", src, str(out))
        assert code == 0, err
        b = load_model(str(out))
        q = a.random_configuration(rng=3)
        values = {c: q[a.coordinate_index(c)] for c in a.independent_coordinates}
        fa, fb = forward_kinematics(a, values), forward_kinematics(b, values)
        for f in a.frame_names:
            np.testing.assert_allclose(fb.pose(f), fa.pose(f), atol=1e-9, err_msg=f)


def test_model_may_follow_the_joint_values(capsys):
    # --q takes several words; the model given after them is still the model
    code, out, err = call(capsys, "fk", "--q", "arm_shoulder=M_PI_2", "arm_yaw=0", ARM, "--frame", "arm_tool",
                          "--json")
    assert code == 0, err
    code2, out2, _ = call(capsys, "fk", ARM, "--q", "arm_shoulder=M_PI_2", "arm_yaw=0", "--frame", "arm_tool",
                          "--json")
    assert json.loads(out) == json.loads(out2)
    assert json.loads(out)["q"]["arm_shoulder"] == pytest.approx(math.pi / 2)
    code, _, err = call(capsys, "jacobian", "--frame", "arm_tool", "--q", "arm_yaw=0.1", ARM)
    assert code == 0, err
    code, _, err = call(capsys, "fk", ARM, "--q", "arm_yaw=0", "arm_shoulder")   # malformed: still reported
    assert code == 1 and "name=value" in err


# ------------------------------------------------------------------------------------------- the registry
def test_every_registered_subcommand_is_one_module_with_add_parser_and_run():
    import mechanism_model_core.cli as cli
    from mechanism_model_core.cli.registry import COMMANDS

    assert len(set(COMMANDS)) == len(COMMANDS)
    for name in COMMANDS:
        module = cli.command_module(name)
        assert callable(module.add_parser) and callable(module.run), name
    helptext = cli.build_parser().format_help()
    for name in COMMANDS:
        assert name in helptext


def test_a_new_subcommand_is_a_module_plus_a_registry_line(monkeypatch, capsys):
    """What docs/cli.md tells a contributor to write works as written: a module with add_parser/run and its
    name in COMMANDS; errors it raises print without a traceback; the model may follow --q values."""
    import types

    import mechanism_model_core.cli as cli
    from mechanism_model_core.cli.common import CommandError, configuration, load, model_arg, q_args

    mod = types.ModuleType("mechanism_model_core.cli.stats")

    def add_parser(subparsers):
        sp = subparsers.add_parser("stats", help="counts")
        model_arg(sp)
        q_args(sp)
        sp.add_argument("--fail", action="store_true")
        return sp

    def run(args):
        if args.fail:
            raise CommandError("asked to fail")
        mech = load(args.model)
        q = configuration(mech, args.q)
        print(f"{len(mech.bodies)} bodies, q[arm_elbow] = {q[mech.coordinate_index('arm_elbow')]:.2f}")
        return 0

    mod.add_parser, mod.run = add_parser, run
    monkeypatch.setitem(sys.modules, "mechanism_model_core.cli.stats", mod)
    monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + ("stats",))
    code, out, err = call(capsys, "stats", "--q", "arm_elbow=0.5", ARM)
    assert code == 0 and "q[arm_elbow] = 0.50" in out, err
    code, out, err = call(capsys, "stats", ARM, "--fail")
    assert code == 1 and err.strip() == "mechanism-model stats: error: asked to fail"


# ------------------------------------------------------------------------------------------- check: every problem
SEVERAL_PROBLEMS = """<Mechanism_Model name="m">
  <ME_Body name="a">
    <ME_Joint name="ja" home="nonsense"/>
  </ME_Body>
  <ME_Body name="b" parent="a">
    <ME_Joint name="jb"><Joint_Limits vmax="-1"/></ME_Joint>
  </ME_Body>
  <ME_Body name="c" parent="nobody"/>
  <ME_Body name="d" parent="b">
    <Mass_Properties mass="-2"/>
  </ME_Body>
  <ME_Body name="e" parent="d">
    <ME_Joint name="je"><Joint_Constraint expr="2*jx"/></ME_Joint>
  </ME_Body>
</Mechanism_Model>
"""


def test_check_lists_every_semantic_problem_with_its_line(capsys, tmp_path):
    path = tmp_path / "several.xml"
    path.write_text(SEVERAL_PROBLEMS)
    code, out, err = call(capsys, "check", str(path))
    assert code == 1
    lines = err.strip().splitlines()
    expected = [(3, "unknown name 'nonsense'"), (6, "vmax"), (8, "parent 'nobody'"), (10, "negative mass"),
                (13, "jx")]
    assert len(lines) == len(expected), err
    for line, (n, what) in zip(lines, expected):
        assert line.startswith(f"{path}:{n}: ") and what in line, line


def test_check_lists_every_bad_row_of_a_dh_table(capsys, tmp_path):
    path = tmp_path / "rows.dh"
    path.write_text("convention craig\nl1 j1 revolute 0 0 0 0\nl2 j2 revolute x 0 0 0\nl3 j3 revolute 0 0\n"
                    "l4 j4 ball 0 0 0 0\nl5 j5 revolute 0 0 0 0\n")
    code, out, err = call(capsys, "check", str(path))
    assert code == 1
    assert [ln.split(": ")[0] for ln in err.strip().splitlines()] == [f"{path}:{n}" for n in (3, 4, 5)]


def test_check_lists_every_bad_joint_and_inertial_of_a_urdf(capsys, tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text("""<robot name="r">
  <link name="a"/>
  <link name="b"><inertial><mass value="-1"/></inertial></link>
  <link name="c"/>
  <joint name="j1" type="revolute"><parent link="a"/><child link="b"/>
    <limit lower="-1" upper="1" effort="-5" velocity="1"/></joint>
  <joint name="j2" type="spinning"><parent link="b"/><child link="c"/></joint>
</robot>
""")
    code, out, err = call(capsys, "check", str(path))
    assert code == 1
    assert [ln.split(": ")[0] for ln in err.strip().splitlines()] == [f"{path}:{n}" for n in (6, 7, 3)], err
