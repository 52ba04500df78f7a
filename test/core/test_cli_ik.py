"""``mechanism-model ik`` (issue 14.8): round trips against forward kinematics -- a pose computed by FK at known
joint values is given to ``ik``, and FK of the answer must reproduce it (UR5 from its URDF, the Rocky 8 arm);
seeds, locks, relative_to, position-only targets; and clear errors with exit statuses."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.cli import main
from mechanism_model_core.library import model_path
from mechanism_model_core.spatial import matrix_to_quaternion, matrix_to_rpy
from .robots import SAFETY

UR5 = os.path.join(os.path.dirname(__file__), "..", "data", "robots", "ur5", "ur5.urdf")
ARM = "rocky8/rocky8_arm.xml"


def ik(capsys, *args):
    """``mechanism-model ik ARGS --json``; the time budget is the tests' safety net, not the CLI's default 1 s,
    so that a loaded machine cannot turn a round trip into a timeout."""
    code = main(["ik", *args, "--json", "--timeout", str(SAFETY)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def words(v):
    return [repr(float(x)) for x in v]


@pytest.mark.parametrize("orientation", ["rpy", "quat"])
def test_ur5_round_trip_through_forward_kinematics(capsys, orientation):
    m = load_model(UR5)
    rng = np.random.default_rng(7)
    frame = m.bodies[-1].name
    for _ in range(3):
        q_true = rng.uniform(-2.0, 2.0, m.nq)
        T = forward_kinematics(m, q_true).pose(frame)
        rot = (["--rpy", *words(matrix_to_rpy(T[:3, :3]))] if orientation == "rpy"
               else ["--quat", *words(matrix_to_quaternion(T[:3, :3]))])
        code, data, err = ik(capsys, UR5, "--frame", frame, "--xyz", *words(T[:3, 3]), *rot,
                             "--tol-position", "1e-9", "--tol-orientation", "1e-9")
        assert code == 0 and data["success"], err
        q = np.array([data["q"][c] for c in m.coordinate_names])
        T_got = forward_kinematics(m, q).pose(frame)
        np.testing.assert_allclose(T_got, T, atol=1e-6)
        np.testing.assert_allclose(data["pose"]["matrix"], T, atol=1e-6)


def test_relative_to_seed_and_lock(capsys):
    m = load_model(model_path(ARM))
    q_true = m.configuration({"arm_yaw": 0.3, "arm_shoulder": -0.4, "arm_elbow": 1.0, "arm_wrist": 0.5,
                              "arm_turret": 0.2})
    fk = forward_kinematics(m, q_true)
    T = fk.pose("arm_tool", "arm_upper")          # the target in another frame of the model
    code, data, err = ik(capsys, ARM, "--frame", "arm_tool", "--relative-to", "arm_upper",
                         "--xyz", *words(T[:3, 3]), "--rpy", *words(matrix_to_rpy(T[:3, :3])),
                         "--q", "arm_yaw=-1.0", "arm_turret=0.1", "--lock", "arm_yaw",
                         "--tol-position", "1e-9", "--tol-orientation", "1e-9")
    assert code == 0 and data["success"], err
    assert data["relative_to"] == "arm_upper" and data["locked"] == ["arm_yaw"]
    assert data["q"]["arm_yaw"] == -1.0          # held at its seed value
    q = np.array([data["q"][c] for c in m.coordinate_names])
    np.testing.assert_allclose(forward_kinematics(m, q).pose("arm_tool", "arm_upper"), T, atol=1e-6)


def test_position_only_target_in_degrees_seed(capsys):
    m = load_model(model_path(ARM))
    p = forward_kinematics(m, m.configuration({"arm_shoulder": -0.3, "arm_elbow": 0.8})).position("arm_tool")
    code, data, err = ik(capsys, ARM, "--frame", "arm_tool", "--xyz", *words(p), "--q", "arm_elbow=40",
                         "--degrees")
    assert code == 0 and data["success"] and data["orientation_error_rad"] is None, err
    q = np.array([data["q"][c] for c in m.coordinate_names])
    np.testing.assert_allclose(forward_kinematics(m, q).position("arm_tool"), p, atol=1e-6)


def test_text_output_and_unreachable_target(capsys):
    code = main(["ik", ARM, "--frame", "arm_tool", "--xyz", "0.5", "0.1", "-0.1", "--timeout", "0.2"])
    out, _ = capsys.readouterr()
    assert "joint values (rad / m):" in out and "arm_tool in ground" in out
    code = main(["ik", ARM, "--frame", "arm_tool", "--xyz", "5", "0", "0", "--timeout", "0.1"])
    out, _ = capsys.readouterr()
    assert code == 1 and "NOT reached" in out and "position error" in out


@pytest.mark.parametrize("args,message", [
    (["--frame", "arm_tol", "--xyz", "0", "0", "0"], "unknown frame 'arm_tol' (did you mean 'arm_tool'"),
    (["--frame", "arm_tool", "--relative-to", "nowhere", "--xyz", "0", "0", "0"], "unknown frame 'nowhere'"),
    (["--frame", "arm_tool", "--xyz", "0", "0", "0", "--lock", "arm_elbw"], "did you mean 'arm_elbow'"),
    (["--frame", "arm_tool", "--xyz", "0", "0", "0", "--quat", "0", "0", "0", "0"], "zero length"),
    (["--frame", "arm_tool", "--xyz", "nan", "0", "0"], "finite"),
    (["--frame", "arm_tool", "--xyz", "0", "0", "0", "--q", "arm_elbw=1"], "did you mean 'arm_elbow'"),
])
def test_bad_requests_are_clear_errors(capsys, args, message):
    code = main(["ik", ARM, *args])
    _, err = capsys.readouterr()
    assert code == 1 and err.startswith("mechanism-model ik: error: ") and message in err, err


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["ik", ARM, "--frame", "arm_tool", "--xyz", "0", "0", "0", "--rpy", "0", "0", "0",
              "--quat", "0", "0", "0", "1"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["ik", ARM, "--frame", "arm_tool"])
    assert info.value.code == 2
    capsys.readouterr()
