"""ROS parameter files as rclpy reads them, the serve command line, and conversions' input checks."""

import os
import subprocess
import sys

import numpy as np
import pytest

from mechanism_model_ros.conversions import BadMessage, joint_state_positions, pose_to_matrix
from mechanism_model_ros.params import load_parameter_file, parse_override
from mechanism_model_ros.transports.typegen import message_class

from ros.dds_helpers import ROS_PKG, dds_env, unique_domain_id

pytestmark = pytest.mark.ros
TOP = os.path.dirname(ROS_PKG)


def test_parameter_file_sections(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("/**:\n  ros__parameters:\n    model: a.xml\n    ik: {timeout: 0.5}\n"
                 "kin:\n  ros__parameters:\n    model: b.xml\n"
                 "/robot/kin:\n  ros__parameters:\n    frame_prefix: r/\n")
    assert load_parameter_file(str(p), "other") == {"model": "a.xml", "ik.timeout": 0.5}
    assert load_parameter_file(str(p), "kin") == {"model": "b.xml", "ik.timeout": 0.5}
    assert load_parameter_file(str(p), "kin", "/robot")["frame_prefix"] == "r/"
    assert parse_override("ik_timeout:=0.25") == ("ik_timeout", 0.25)
    assert parse_override("loop_closures:=[a:b]") == ("loop_closures", ["a:b"])
    with pytest.raises(ValueError):
        parse_override("no_value")


def test_parameter_file_sections_follow_rclpy_wildcards_and_file_order(tmp_path):
    """rclpy's rule: a key (with "/" prepended) matches the node's fully qualified name, "/*" one namespace
    level, "/**" any; every matching section applies in file order; nested maps are namespaces."""
    p = tmp_path / "p.yaml"
    p.write_text("sp:\n  ros__parameters: {a: bare}\n"
                 "/**:\n  ros__parameters: {a: all, b: all}\n"
                 "/**/sp:\n  ros__parameters: {b: any_ns}\n"
                 "/*/sp:\n  ros__parameters: {c: one_level}\n"
                 "rover:\n  sp:\n    ros__parameters: {d: nested}\n")
    # root namespace: "sp" matches, but "/**" comes later in the file and overrides it
    assert load_parameter_file(str(p), "sp") == {"a": "all", "b": "any_ns"}
    assert load_parameter_file(str(p), "sp", "/rover") == {"a": "all", "b": "any_ns", "c": "one_level",
                                                          "d": "nested"}
    # a bare node name is the node in the root namespace only; "/*/sp" is exactly one level deep
    assert load_parameter_file(str(p), "sp", "/a/b") == {"a": "all", "b": "any_ns"}
    assert load_parameter_file(str(p), "other", "/rover") == {"a": "all", "b": "all"}


@pytest.mark.parametrize("name", ["rocky8", "mer_idd", "four_bar", "lemur", "osr", "curiosity"])
def test_shipped_parameter_files_reach_namespaced_nodes(name):
    """The node sections are written "/**/<node>", so `bringup.launch.py namespace:=rover1` keeps them."""
    path = os.path.join(TOP, "config", name + ".yaml")
    for ns in ("/", "/rover1"):
        assert load_parameter_file(path, "kinematics_server", ns)["max_ik_timeout"] > 0
        assert "joint_states_reliable" in load_parameter_file(path, "state_publisher", ns)
    if name == "four_bar":
        assert load_parameter_file(path, "state_publisher", "/rover1")["loop_closures"]


@pytest.mark.parametrize("name", ["rocky8", "mer_idd", "four_bar", "lemur", "osr", "curiosity"])
def test_shipped_parameter_files_name_library_models(name):
    from mechanism_model_core.library import model_path
    params = load_parameter_file(os.path.join(TOP, "config", name + ".yaml"), "kinematics_server")
    assert os.path.exists(model_path(params["model"]))
    assert params["ik_timeout"] > 0


def test_joint_state_checks():
    JS = message_class("sensor_msgs/msg/JointState")
    assert joint_state_positions(JS(name=["a", "x"], position=[1.0, 2.0]), {"a"}) == ({"a": 1.0}, ["x"])
    for bad in (JS(name=["a"], position=[]), JS(name=["a"], position=[float("nan")]),
                JS(name=["a", "a"], position=[1.0, 1.0])):
        with pytest.raises(BadMessage):
            joint_state_positions(bad)
    nan = float("nan")
    assert joint_state_positions(JS(name=["a", "w", "x"], position=[1.0, nan, nan]), {"a", "w"},
                                 skip_nonfinite=True) == ({"a": 1.0}, ["x"], ["w"])
    with pytest.raises(BadMessage):      # lengths are still checked
        joint_state_positions(JS(name=["a", "w"], position=[1.0]), {"a", "w"}, skip_nonfinite=True)


def test_pose_checks():
    P = message_class("geometry_msgs/msg/Pose")
    np.testing.assert_allclose(pose_to_matrix(P()), np.eye(4))     # default quaternion: identity
    p = P()
    p.orientation.w = 0.0
    with pytest.raises(BadMessage):
        pose_to_matrix(p)
    p = P()
    p.position.y = float("inf")
    with pytest.raises(BadMessage):
        pose_to_matrix(p)


def test_serve_prints_status_and_exits(tmp_path):
    env = dds_env(unique_domain_id())
    r = subprocess.run([sys.executable, "-m", "mechanism_model_ros.serve", "--model",
                        "claraty_samples/sample1.xml", "--status-period", "0.5", "--duration", "1.5"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "joint_states in: 0" in r.stdout and "service calls: fk 0" in r.stdout
    assert "transforms out:" in r.stdout


def test_serve_reports_a_bad_model_file_with_its_line(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<Mechanism_Model name='x'>\n  <ME_Body name='a'>\n</Mechanism_Model>\n")
    r = subprocess.run([sys.executable, "-m", "mechanism_model_ros.serve", "--model", str(bad),
                        "--duration", "1"], env=dds_env(unique_domain_id()), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "bad.xml:" in r.stderr and "Traceback" not in r.stderr


def test_serve_reports_bad_parameters():
    r = subprocess.run([sys.executable, "-m", "mechanism_model_ros.serve", "--model", "four_bar/four_bar.xml",
                        "-p", "loop_closures:=[closure_a:nowhere]", "--duration", "1"],
                       env=dds_env(unique_domain_id()), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "nowhere" in r.stderr and "Traceback" not in r.stderr


def test_serve_reports_a_parameter_of_the_wrong_type():
    r = subprocess.run([sys.executable, "-m", "mechanism_model_ros.serve", "-p", "model:=[a, b]", "--duration", "1"],
                       env=dds_env(unique_domain_id()), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "'model'" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("content, expect", [
    (None, "does not exist"),
    ("a: [1, 2\n", "line 2 column 1: not valid YAML"),
    ("- 1\n- 2\n", "a ROS parameter file is a mapping of node names"),
    (b"\xff\xfe: 1\n", "is not UTF-8 text"),
])
def test_serve_with_a_missing_or_malformed_params_file_says_so_without_a_traceback(tmp_path, capsys, content,
                                                                                    expect):
    from mechanism_model_ros.serve import main
    path = tmp_path / "params.yaml"
    if isinstance(content, str):
        path.write_text(content)
    elif content is not None:
        path.write_bytes(content)
    assert main(["--params-file", str(path), "--transport", "cyclone", "--duration", "0.1"]) == 2
    err = capsys.readouterr().err
    assert expect in err and str(path) in err and "Traceback" not in err


def test_serve_with_a_bad_override_says_so(capsys):
    from mechanism_model_ros.serve import main
    assert main(["-p", "ik_timeout:=[1,", "--transport", "cyclone", "--duration", "0.1"]) == 2
    assert "not valid YAML" in capsys.readouterr().err


def test_serve_freezes_its_start_up_heap_once_the_nodes_run(monkeypatch):
    """What start-up made (modules, the model, the nodes) is out of the cyclic collector's reach while the nodes
    serve, so a full collection scans only what was made since (a 20-30 ms pause over the whole heap before)."""
    import gc

    from mechanism_model_ros import serve
    from ros.dds_helpers import LOOPBACK_URI
    monkeypatch.setenv("ROS_DOMAIN_ID", str(unique_domain_id()))
    monkeypatch.setenv("CYCLONEDDS_URI", LOOPBACK_URI)
    for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY", "ROS_STATIC_PEERS"):
        monkeypatch.delenv(k, raising=False)
    seen = []

    # state publishers of earlier tests in this process (held here, so that no new one can reuse their ids)
    earlier = [o for o in gc.get_objects() if type(o).__name__ == "StatePublisher"]
    before = {id(o) for o in earlier}

    def freeze():
        publishers = [o for o in gc.get_objects() if type(o).__name__ == "StatePublisher" and id(o) not in before]
        real()
        seen.append((len(publishers), gc.get_freeze_count(), len(gc.get_objects())))
    real = serve.freeze_start_up_heap
    monkeypatch.setattr(serve, "freeze_start_up_heap", freeze)
    try:
        assert serve.main(["--transport", "cyclone", "--nodes", "state_publisher", "--duration", "0.2",
                           "--status-period", "0"]) == 0
    finally:
        gc.unfreeze()           # this test process goes on collecting as before
    assert len(seen) == 1, seen
    nodes, frozen, left = seen[0]
    assert nodes == 1                   # frozen once the node was made, not before
    assert frozen > 10 * max(left, 1), seen
