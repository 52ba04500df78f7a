"""``mechanism-model call`` and ``mechanism-model echo`` (no ROS needed) against ``serve`` over real Cyclone DDS:
the reply's pose equals the core's forward kinematics, an error code exits 1 with its name, a misspelt field
is a usage error naming the message's fields, and echo prints the latched topics."""

import os
import re
import shlex
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path, model_path

from ros.dds_helpers import dds_env, start_serve, stop, unique_domain_id
from ros.ros_env import wait_for_messages

pytestmark = pytest.mark.ros


@pytest.fixture(scope="module")
def domain():
    d = unique_domain_id()
    proc = start_serve(d)
    yield d
    out, err = stop(proc)
    assert "Traceback" not in err, err


def _cli(domain, *args, timeout=60):
    return subprocess.run([sys.executable, "-m", "mechanism_model_core", *args], env=dds_env(domain),
                          capture_output=True, text=True, timeout=timeout)


def test_call_compute_fk_prints_the_reply_as_yaml(domain):
    p = _cli(domain, "call", "compute_fk", "{fk_link_names: [arm_turret], header: {frame_id: chassis}, "
                                           "robot_state: {name: [arm_yaw, arm_elbow], position: [0.3, -0.5]}}",
             "--timeout", "30")
    assert p.returncode == 0, p.stderr
    reply = yaml.safe_load(p.stdout)
    assert reply["error_code"]["val"] == 1 and reply["fk_link_names"] == ["arm_turret"]
    pose = reply["pose_stamped"][0]["pose"]
    from scipy.spatial.transform import Rotation
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat([pose["orientation"][k] for k in "xyzw"]).as_matrix()
    T[:3, 3] = [pose["position"][k] for k in "xyz"]
    model = load_model(default_model_path())
    expected = forward_kinematics(model, {"arm_yaw": 0.3, "arm_elbow": -0.5}).pose("arm_turret", relative_to="chassis")
    np.testing.assert_allclose(T, expected, atol=1e-9)


def test_call_with_an_error_code_exits_1_naming_it(domain):
    p = _cli(domain, "call", "compute_fk", "{fk_link_names: [nowhere]}", "--timeout", "30")
    assert p.returncode == 1
    assert "INVALID_LINK_NAME" in p.stderr and "nowhere" in p.stderr


def test_call_with_a_misspelt_field_is_a_usage_error(domain):
    p = _cli(domain, "call", "compute_fk", "{fk_link_name: [arm_turret]}")
    assert p.returncode == 2
    assert "has no field 'fk_link_name'" in p.stderr and "fk_link_names" in p.stderr and "Traceback" not in p.stderr


def test_echo_prints_tf_static_and_robot_description(domain):
    p = _cli(domain, "echo", "tf_static", "--timeout", "30")
    assert p.returncode == 0, p.stderr
    msg = yaml.safe_load(p.stdout.split("\n---")[0])
    assert "mast_camera" in {t["child_frame_id"] for t in msg["transforms"]}
    p = _cli(domain, "echo", "robot_description", "--timeout", "30")
    assert p.returncode == 0 and "<robot" in yaml.safe_load(p.stdout.split("\n---")[0])["data"]


TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _doc_lines(doc: str, heading: str, prefix: str) -> list[str]:
    """The ``prefix ...`` lines of the shell blocks of ``doc`` between ``heading`` and the next ``## `` heading
    (a trailing ``# comment`` dropped)."""
    with open(os.path.join(TOP, doc), encoding="utf-8") as fh:
        section = fh.read().split(heading, 1)[1].split("\n## ", 1)[0]
    return [line.split(" # ")[0].strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)
            for line in block.splitlines() if line.startswith(prefix)]


def _venv_command(line: str) -> list[str]:
    """A docs line as its argv, its ``mechanism-model`` the one this interpreter's environment installed."""
    argv = shlex.split(line)
    script = os.path.join(os.path.dirname(sys.executable), argv[0])
    assert os.path.exists(script), script
    return [script, *argv[1:]]


def _served_model(argv: list[str]):
    """The model ``serve`` with these arguments serves: ``--model``, else the parameter file's, else the default."""
    if "--model" in argv:
        return load_model(model_path(argv[argv.index("--model") + 1]))
    if "--params-file" in argv:
        with open(os.path.join(TOP, argv[argv.index("--params-file") + 1]), encoding="utf-8") as fh:
            return load_model(model_path(yaml.safe_load(fh)["/**"]["ros__parameters"]["model"]))
    return load_model(default_model_path())


DOCS_SERVE = _doc_lines(os.path.join("docs", "ros.md"), "## Running", "mechanism-model serve")


@pytest.mark.slow
@pytest.mark.parametrize("line", DOCS_SERVE)
def test_the_docs_serve_commands_serve_their_models(line):
    """docs/ros.md's ``mechanism-model serve ...`` lines as written (from the checkout's top, without ROS: the
    Cyclone transport): every frame on ``/tf_static`` is a frame of the model the line names; no traceback."""
    assert len(DOCS_SERVE) == 3, DOCS_SERVE
    argv = _venv_command(line)
    model = _served_model(argv)
    d = unique_domain_id()
    proc = subprocess.Popen(argv, cwd=TOP, env=dds_env(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        static = wait_for_messages(d, "/tf_static", "tf2_msgs/msg/TFMessage", timeout=60)
        frames = {f for m in static for t in m.transforms for f in (t.header.frame_id, t.child_frame_id)}
        assert frames and frames <= set(model.frame_names), (frames - set(model.frame_names), model.name)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = stop(proc)
    assert "Traceback" not in err, err[-3000:]


@pytest.mark.slow
def test_the_readme_without_ros_block_serves_calls_and_echoes():
    """The README's "Without ROS" block after its install lines, as written: ``mechanism-model serve`` (in the
    background), then the ``call compute_fk`` and ``echo tf_static`` lines from another process: the reply
    is SUCCESS with the core's pose of arm_turret in chassis, the echo prints the mast camera's transform."""
    lines = _doc_lines("README.md", "## Without ROS", "mechanism-model ")
    assert [shlex.split(line)[1] for line in lines] == ["serve", "call", "echo"], lines
    d = unique_domain_id()
    serve = subprocess.Popen(_venv_command(lines[0]), cwd=TOP, env=dds_env(d), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for_messages(d, "/tf_static", "tf2_msgs/msg/TFMessage", timeout=60)
        call = subprocess.run(_venv_command(lines[1]), env=dds_env(d), capture_output=True, text=True, timeout=120)
        assert call.returncode == 0, call.stderr[-2000:]
        reply = yaml.safe_load(call.stdout)
        assert reply["error_code"]["val"] == 1, reply
        pose = reply["pose_stamped"][0]["pose"]["position"]
        want = forward_kinematics(load_model(default_model_path()), {}).pose("arm_turret", relative_to="chassis")
        np.testing.assert_allclose([pose[k] for k in "xyz"], want[:3, 3], atol=1e-9)
        echo = subprocess.run(_venv_command(lines[2]), env=dds_env(d), capture_output=True, text=True, timeout=120)
        assert echo.returncode == 0, echo.stderr[-2000:]
        msg = yaml.safe_load(echo.stdout.split("\n---")[0])
        assert "mast_camera" in {t["child_frame_id"] for t in msg["transforms"]}, msg
    finally:
        serve.send_signal(signal.SIGINT)
        out, err = stop(serve)
    assert "Traceback" not in err, err[-3000:]
