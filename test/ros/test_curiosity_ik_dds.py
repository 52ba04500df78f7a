"""The Curiosity arm reached by ``compute_ik`` over DDS (issue 26: the arm by IK instead of the Space ROS
demo's presets): ``serve --transport cyclone`` with models/curiosity/curiosity_rover.xml and the shipped
config/curiosity.yaml, a client on real Cyclone DDS (loopback, a test-unique domain). The rclpy transport's
``compute_ik`` is covered generically by test/system/test_nodes_over_dds.py.

Targets and verdict come from Pinocchio on our URDF export (an independent implementation): each target is
Pinocchio's pose of ``arm_tools`` in ``base_link`` at random arm joints within the motor limits (the rover
itself at a random pose, its suspension and steering bent); the reply's solution, put into Pinocchio with the
request's other joints, must put ``arm_tools`` on the target within 1e-5 (m, and rad of rotation), move only
the arm's joints and respect the arm's motor limits."""

from pathlib import Path

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.io.urdf import to_urdf
from mechanism_model_core.library import model_path

from core.robots import SAFETY
from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id

pin = pytest.importorskip("pinocchio")

pytestmark = pytest.mark.ros

MODEL = "curiosity/curiosity_rover.xml"
CONFIG = Path(__file__).resolve().parents[2] / "config" / "curiosity.yaml"
MECH = load_model(model_path(MODEL))
ARM = load_motor_groups(MECH)["arm_joint_trajectory_controller"]
TOOL, BASE = "arm_tools", "base_link"
TOL = 1e-5


def _pin_q(pmodel, values):
    """Pinocchio's q from ``{our coordinate: value}`` (joints matched by name; continuous joints as cos, sin)."""
    q = pin.neutral(pmodel)
    for jid in range(1, pmodel.njoints):
        jm, name = pmodel.joints[jid], pmodel.names[jid]
        v = values.get(name, 0.0)
        if jm.nq == 1:
            q[jm.idx_q] = v
        elif jm.nq == 2:
            q[jm.idx_q:jm.idx_q + 2] = np.cos(v), np.sin(v)
        else:  # pragma: no cover
            raise AssertionError(f"unexpected Pinocchio joint {jm.shortname()} for {name!r}")
    return q


def _pin_pose(pmodel, pdata, values):
    """Pinocchio's pose of TOOL in BASE (4x4) at ``values``."""
    pin.framesForwardKinematics(pmodel, pdata, _pin_q(pmodel, values))
    base = pdata.oMf[pmodel.getFrameId(BASE)]
    tool = pdata.oMf[pmodel.getFrameId(TOOL)]
    return (base.inverse() * tool).homogeneous


def test_compute_ik_puts_the_curiosity_arm_tool_on_pinocchios_targets():
    from mechanism_model_ros.conversions import fill_pose
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    pmodel = pin.buildModelFromXML(to_urdf(MECH))
    pdata = pmodel.createData()
    names = list(MECH.independent_coordinates)
    assert set(ARM.joint_names) <= {pmodel.names[j] for j in range(1, pmodel.njoints)}
    lo = np.array(ARM.lower, dtype=float)                        # the arm's motor limits (rad)
    hi = np.array(ARM.upper, dtype=float)
    domain = unique_domain_id()
    configure_this_process(domain)
    # the IK budget a safety net (the server caps a request's timeout at max_ik_timeout, 10 s by default)
    proc = start_serve(domain, "--params-file", str(CONFIG), "--nodes", "kinematics_server", "-p",
                       f"max_ik_timeout:={SAFETY}")
    ctx = CycloneContext(domain)
    node = CycloneNode("curiosity_ik_client", context=ctx)
    try:
        ik = node.create_client("/compute_ik", "mechanism_model_msgs/srv/ComputeIK")
        assert ik.wait_for_service(60), stop(proc)
        JS = node.message_class("sensor_msgs/msg/JointState")
        PS = node.message_class("geometry_msgs/msg/PoseStamped")
        rng = np.random.default_rng(26)
        for trial in range(6):
            # the rover anywhere, bent: every independent coordinate but the arm's random within its limits
            state = {n: float(rng.uniform(max(MECH.lower_limits[i], -0.3), min(MECH.upper_limits[i], 0.3)))
                     for n, i in ((n, MECH.coordinate_index(n)) for n in names)}
            state.update({f"{BASE}.x": rng.uniform(-5, 5), f"{BASE}.y": rng.uniform(-5, 5),
                          f"{BASE}.yaw": rng.uniform(-3, 3)})
            state.update(dict.fromkeys(ARM.joint_names, 0.0))
            goal = dict(zip(ARM.joint_names, rng.uniform(np.maximum(lo, -3.0), np.minimum(hi, 3.0))))
            target = _pin_pose(pmodel, pdata, {**state, **goal})      # the oracle's pose, not ours
            req = ik.request()
            req.robot_state = JS(name=list(state), position=[float(v) for v in state.values()])
            req.ik_link_names = [TOOL]
            ps = PS()
            ps.header.frame_id = BASE
            fill_pose(ps.pose, target)
            req.pose_stamped_vector = [ps]
            req.active_joints = list(ARM.joint_names)
            req.timeout.sec = int(SAFETY)
            rep = ik.call(req, 2 * SAFETY)
            assert rep.error_code.val == 1, (trial, rep.error_code.val, rep.message)
            solution = dict(zip(rep.solution.name, rep.solution.position))
            # only the arm moved; the arm within its motor limits
            for n, v in state.items():
                if n not in ARM.joint_names:
                    assert solution[n] == pytest.approx(v, abs=1e-12), n
            q_arm = np.array([solution[j] for j in ARM.joint_names])
            assert np.all(q_arm >= lo - 1e-12) and np.all(q_arm <= hi + 1e-12), (q_arm, lo, hi)
            reached = _pin_pose(pmodel, pdata, solution)
            assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < TOL, (trial, reached, target)
            R = reached[:3, :3].T @ target[:3, :3]
            angle = np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))
            assert angle < TOL, (trial, angle)
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err[-3000:]
