"""``mechanism-model call`` and ``mechanism-model echo`` (no ROS needed) against ``serve`` over real Cyclone DDS:
the reply's pose equals the core's forward kinematics, an error code exits 1 with its name, a misspelt field
is a usage error naming the message's fields, and echo prints the latched topics."""

import subprocess
import sys

import numpy as np
import pytest
import yaml

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import dds_env, start_serve, stop, unique_domain_id

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
