"""The URDF export of floating-base robots loads in a simulator (issue 25): MuJoCo (PyPI ``mujoco``, test-only)
reads ``to_urdf(m, floating_base="floating")`` (a free joint) and ``floating_base="root"`` (the body as the
root link, Gazebo's convention; MuJoCo welds a root link to the world), and the pose of every MuJoCo body
equals our forward kinematics (1e-9) at random configurations. The default chain of massless links is what
MuJoCo refuses ("mass and inertia of moving bodies must be larger than mjMINVAL"), which is kept for
robot_state_publisher and MoveIt."""

from __future__ import annotations

import warnings
import zlib

import numpy as np
import pytest

from mechanism_model_core import MechanismModelError, forward_kinematics, load_model
from mechanism_model_core.io.urdf import URDFWarning, loads_urdf, to_urdf
from mechanism_model_core.joints import JointType
from mechanism_model_core.library import list_models, model_path
from mechanism_model_core.spatial import inverse

from .optional_deps import require

mujoco = require("mujoco", "test")

TOL = 1e-9


def _floating_models():
    out = []
    for rel in list_models():
        m = load_model(model_path(rel))
        if any(s.parent == m.ground and s.joint.type is JointType.FLOATING for s in m.bodies[1:]):
            out.append(rel)
    return out


FLOATING = _floating_models()


def _export(m, style, keep_static=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        text = to_urdf(m, floating_base=style)
    if keep_static:    # MuJoCo's own URDF extension: keep fixed links as bodies, so every link is compared
        text = text.replace("</robot>", '<mujoco><compiler fusestatic="false"/></mujoco>\n</robot>')
    return mujoco.MjModel.from_xml_string(text)


def _mj_poses(mj, data):
    out = {}
    for b in range(1, mj.nbody):
        T = np.eye(4)
        T[:3, :3] = data.xmat[b].reshape(3, 3)
        T[:3, 3] = data.xpos[b]
        out[mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, b)] = T
    return out


def _set_qpos(mj, data, m, q, poses, free_body):
    for jid in range(mj.njnt):
        name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, jid)
        adr = mj.jnt_qposadr[jid]
        if mj.jnt_type[jid] == mujoco.mjtJoint.mjJNT_FREE:
            T = poses[free_body]
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, T[:3, :3].flatten())
            data.qpos[adr:adr + 7] = np.concatenate([T[:3, 3], quat])
        else:
            data.qpos[adr] = q[m.coordinate_index(name)]


def test_there_are_floating_base_models_to_export():
    assert len(FLOATING) >= 4, FLOATING


def test_the_chain_of_massless_links_is_what_mujoco_refuses():
    m = load_model(model_path("rocky8/rocky8_rover.xml"))
    with pytest.raises(ValueError, match="mass and inertia of moving bodies"):
        _export(m, "chain")


@pytest.mark.parametrize("rel", FLOATING)
def test_the_floating_joint_export_loads_in_mujoco_with_the_same_forward_kinematics(rel):
    # as MuJoCo imports it: fixed links fused into their bodies (with fusestatic="false" the ground link
    # would stay a body, and MuJoCo allows free joints only on bodies of the world)
    m = load_model(model_path(rel))
    mj = _export(m, "floating")
    free = next(s.name for s in m.bodies[1:] if s.parent == m.ground and s.joint.type is JointType.FLOATING)
    assert sum(mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE for j in range(mj.njnt)) == 1
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    compared = 0
    for _ in range(5):
        q = m.random_configuration(rng)
        poses = forward_kinematics(m, q).all_poses()
        _set_qpos(mj, data, m, q, poses, free)
        mujoco.mj_kinematics(mj, data)
        for name, T in _mj_poses(mj, data).items():
            np.testing.assert_allclose(T, poses[name], atol=TOL, err_msg=f"{rel}: {name}")
            compared += 1
    assert compared >= 5 * len([b for b in m.bodies[1:] if b.joint.dof > 0])


@pytest.mark.parametrize("rel", FLOATING)
def test_the_body_as_root_link_export_loads_in_mujoco_with_the_same_forward_kinematics(rel):
    m = load_model(model_path(rel))
    mj = _export(m, "root", keep_static=True)
    free = next(s.name for s in m.bodies[1:] if s.parent == m.ground and s.joint.type is JointType.FLOATING)
    assert all(mj.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE for j in range(mj.njnt))
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(zlib.crc32(rel.encode()) + 1)
    for _ in range(5):
        q = m.random_configuration(rng)
        poses = forward_kinematics(m, q).all_poses()
        _set_qpos(mj, data, m, q, poses, free)
        mujoco.mj_kinematics(mj, data)
        base = inverse(poses[free])      # MuJoCo welds the root link at the world origin
        for name, T in _mj_poses(mj, data).items():
            np.testing.assert_allclose(T, base @ poses[name], atol=TOL, err_msg=f"{rel}: {name}")


def test_both_styles_read_back_as_the_same_floating_robot():
    m = load_model(model_path("rocky8/rocky8_rover.xml"))
    free = next(s for s in m.bodies[1:] if s.joint.type is JointType.FLOATING)
    back = loads_urdf(to_urdf(m, floating_base="floating"))
    assert back.coordinate_names == m.coordinate_names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        rooted = loads_urdf(to_urdf(m, floating_base="root"), root_joint="floating", ground_name=m.ground)
    rng = np.random.default_rng(2)
    for _ in range(5):
        q = m.random_configuration(rng)
        ours = forward_kinematics(m, q).all_poses()
        again = forward_kinematics(back, q).all_poses()
        for f in m.frame_names:
            np.testing.assert_allclose(again[f], ours[f], atol=TOL)
        q2 = rooted.configuration({c: v for c, v in zip(m.coordinate_names, q) if c in rooted.coordinate_names
                                   and not c.startswith(free.joint.name + ".")})
        T0 = forward_kinematics(rooted, q2).all_poses()
        ref = inverse(ours[free.name])
        for f in rooted.frame_names:
            if f in ours and f != rooted.ground:
                np.testing.assert_allclose(T0[f], T0[free.name] @ ref @ ours[f], atol=TOL)


def test_root_style_refuses_a_ground_with_other_bodies():
    from mechanism_model_core.builder import build_mechanism

    m = load_model(model_path("rocky8/rocky8_rover.xml"))
    free = next(s for s in m.bodies[1:] if s.joint.type is JointType.FLOATING)
    with pytest.raises(MechanismModelError, match="floating_base"):
        to_urdf(m, floating_base="sideways")
    extra = [b for b in m.bodies if b.parent == free.name][0]
    moved = [b if b is not extra else type(b)(b.name, m.ground, b.joint, b.frames, b.mass, b.shapes, b.graphics,
                                             b.frame_kinds) for b in m.bodies]
    m2 = build_mechanism(m.name, moved, m.ground, m.source, m.metadata)     # a shipped model: must rebuild, never skip
    with pytest.raises(MechanismModelError, match="only one floating body can be the root link"):
        to_urdf(m2, floating_base="root")


def test_the_command_line_writes_the_simulator_export(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "rover.urdf"
    p = subprocess.run([sys.executable, "-m", "mechanism_model_core", "convert", "rocky8/rocky8_rover.xml", str(out),
                        "--floating-base", "floating"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    mj = mujoco.MjModel.from_xml_path(str(out))
    assert sum(mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE for j in range(mj.njnt)) == 1
