"""The Curiosity-class rover (models/curiosity/curiosity_rover.xml): its mast aimed by pointing (the deploy
joint held, the pan-tilt in closed form) and its arm reached by IK instead of the Space ROS demo's preset
poses; its rocker-bogie settles on slopes. Checked by forward kinematics of the whole model."""

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.manipulator import ManipulatorModel
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
from mechanism_model_core.terrain import Plane

MECH = load_model(model_path("curiosity/curiosity_rover.xml"))


def _full(values):
    q = MECH.configuration().copy()
    for k, v in values.items():
        q[MECH.coordinate_index(k)] = v
    return q


@pytest.mark.parametrize("deploy", [0.0, 0.8])
def test_the_mast_camera_aims_at_random_targets_with_the_deploy_joint_held(deploy):
    mast = ManipulatorModel(MECH, tool="camera_optical", base="base_link")
    assert mast.joint_names == ("mast_p_joint", "mast_02_joint", "mast_cameras_joint")
    rng = np.random.default_rng(7)
    aimed = 0
    for _ in range(100):
        p = np.array([rng.uniform(-8, 8), rng.uniform(-8, 8), rng.uniform(-1.0, 2.0)])
        r = mast.point_at(p, q0=[deploy, 0.0, 0.0], tolerance=1e-9)
        if not r.success:                          # beyond the tilt's +-1.57 rad: reported with its residual
            assert r.error > 1e-9
            continue
        aimed += 1
        assert r.q[0] == deploy                    # the deploy joint is not a pointing joint
        fk = forward_kinematics(MECH, _full(dict(zip(mast.joint_names, r.q))))
        T = fk.pose("camera_optical")
        z = T[:3, 2]                               # REP-103 optical: z is the line of sight
        Tb = fk.pose("base_link")
        d = (Tb[:3, :3] @ p + Tb[:3, 3]) - T[:3, 3]
        assert math.atan2(np.linalg.norm(np.cross(z, d)), z @ d) < 1e-9
    assert aimed >= 90


def test_the_arm_reaches_random_poses_by_ik():
    arm = ManipulatorModel(MECH, tool="arm_tools", base="base_link")
    assert arm.joint_names == ("arm_01_joint", "arm_02_joint", "arm_03_joint", "arm_04_joint", "arm_tools_joint")
    rng = np.random.default_rng(3)
    lo, hi = np.maximum(arm.lower, -3.0), np.minimum(arm.upper, 3.0)
    for _ in range(20):
        goal = arm.fk(rng.uniform(lo, hi))
        # 5 joints: the tool's position and its z axis (the turret's), the rotation about it free; bounded by
        # iterations (the wall-clock timeout only a safety net on a loaded machine)
        r = arm.ik(goal, q0=np.zeros(5), mask=(1, 1, 1, 1, 1, 0), max_iterations=2000, timeout=60.0,
                   tol_position=1e-9, tol_orientation=1e-9)
        assert r.success, r.reason
        fk = forward_kinematics(MECH, _full(dict(zip(arm.joint_names, r.q))))
        T = np.linalg.inv(fk.pose("base_link")) @ fk.pose("arm_tools")
        assert np.linalg.norm(T[:3, 3] - goal[:3, 3]) < 1e-6
        assert np.linalg.norm(T[:3, 2] - goal[:3, 2]) < 1e-6
        assert np.all(r.q >= arm.lower - 1e-12) and np.all(r.q <= arm.upper + 1e-12)


def test_the_rocker_bogie_settles_on_a_slope_with_its_differential():
    W = WheeledLocomotorModel(MECH)
    flat = W.settle(Plane(), 0.0, 0.0, 0.0)
    assert flat.success and np.allclose(flat.distances, 0.0, atol=1e-9)
    assert flat.q[MECH.coordinate_index("base_link.z")] == pytest.approx(0.0, abs=1e-9)   # ride height
    s = W.settle(Plane.from_slope(0.2, 0.6), 0.5, -0.3, 0.4)
    assert s.success and np.all(np.abs(s.distances) < 1e-9)
    i = MECH.coordinate_index
    assert s.q[i("suspension_arm_F_R_joint")] == pytest.approx(-s.q[i("suspension_arm_F_L_joint")])
    assert s.q[i("suspension_arm_B_L_joint")] == pytest.approx(s.q[i("suspension_arm_F_L_joint")])
