"""Pinocchio as an independent oracle for URDF import, forward kinematics, Jacobians and URDF export.

For every robot, Pinocchio builds its own model from the same URDF text (``pin.buildModelFromXML``, fixed
base, mimic joints as independent joints; one test builds Pinocchio's mimic joints); we load the URDF with
our reader. At random configurations (hypothesis) the pose of every link must agree, and the Jacobian columns of every single-DOF joint in the
three reference conventions (LOCAL, WORLD, LOCAL_WORLD_ALIGNED, via ``pin.computeFrameJacobian``).

Pinocchio's configuration layout differs from ours: continuous joints and planar joints carry (cos, sin)
pairs, free-flyers a quaternion; :func:`pin_configuration` builds q joint by joint from ``idx_q``/``nq``.
Multi-DOF joints use different velocity coordinates (Pinocchio: the body twist; ours: the rates of our
minimal coordinates), so their Jacobian columns are not compared here (the core tests check them against
finite differences); every single-DOF column, downstream of them or not, is.

The exporter is checked the same way: library models written with :func:`to_urdf` are read by Pinocchio
and every frame of our model (bodies and named frames, which become links) must have the same pose.
"""

from __future__ import annotations

import os
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_core import forward_kinematics, jacobian, load_model
from mechanism_model_core.io.urdf import load_urdf, to_urdf
from mechanism_model_core.library import list_models, model_path
from mechanism_model_core.spatial import euler_to_matrix, matrix_to_quaternion

pin = pytest.importorskip("pinocchio")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")

#: (name, URDF file, what it exercises)
ROBOTS = [
    ("ur5", "ur5/ur5.urdf"),                              # arm
    ("panda", "panda/panda.urdf"),                        # arm + gripper with a mimic joint
    ("hyq", "hyq/hyq.urdf"),                              # legged tree
    ("osr_rover", "osr_rover/osr_rover.urdf"),            # rocker-bogie rover (JPL Open Source Rover)
    ("pr2", "pr2/pr2.urdf"),                              # mobile manipulator: 82 links, mimic, continuous
    ("odd", "odd/odd.urdf"),                              # non-z axes, prismatic, mimic, floating, planar
    ("anymal_b", "anymal_b_kindsl/anymal_b_urdf2kindsl.urdf"),
    ("ur5_urdf2kindsl", "ur5_kindsl/ur5_urdf2kindsl.urdf"),
]

FK_TOL = 1e-9
JAC_TOL = 1e-9


def _load_ours(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # odd.urdf has a non-unit axis on purpose
        return load_urdf(path)


def pin_configuration(pmodel, mech, q_full) -> np.ndarray:
    """Pinocchio's q for our full configuration ``q_full`` (joints matched by name)."""
    values = dict(zip(mech.coordinate_names, np.asarray(q_full, dtype=float)))
    qp = pin.neutral(pmodel)
    for jid in range(1, pmodel.njoints):
        name = pmodel.names[jid]
        jm = pmodel.joints[jid]
        i, kind = jm.idx_q, jm.shortname()
        if jm.nq == 0:              # a mimic joint (mimic=True) follows its parent, no coordinate
            continue
        if "FreeFlyer" in kind:
            R = euler_to_matrix("xyz", [values[f"{name}.roll"], values[f"{name}.pitch"], values[f"{name}.yaw"]])
            qp[i:i + 3] = [values[f"{name}.x"], values[f"{name}.y"], values[f"{name}.z"]]
            qp[i + 3:i + 7] = matrix_to_quaternion(R)
        elif "Planar" in kind:
            th = values[f"{name}.theta"]
            qp[i:i + 4] = [values[f"{name}.x"], values[f"{name}.y"], np.cos(th), np.sin(th)]
        elif jm.nq == 2:            # continuous: (cos, sin)
            qp[i:i + 2] = [np.cos(values[name]), np.sin(values[name])]
        elif jm.nq == 1:
            qp[i] = values[name]
        else:  # pragma: no cover
            raise AssertionError(f"unexpected Pinocchio joint {kind} for {name!r}")
    return qp


def single_dof_columns(pmodel, mech):
    """``[(our column, Pinocchio velocity index)]`` for every single-DOF joint."""
    out = []
    for jid in range(1, pmodel.njoints):
        jm = pmodel.joints[jid]
        name = pmodel.names[jid]
        if jm.nv == 1:
            out.append((mech.coordinate_index(name), jm.idx_v))
    return out


@pytest.fixture(scope="module", params=ROBOTS, ids=[r[0] for r in ROBOTS])
def robot(request):
    name, rel = request.param
    path = os.path.join(DATA, rel)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    pmodel = pin.buildModelFromXML(text)
    return name, _load_ours(path), pmodel


def _random_q(mech, u):
    """Our independent coordinates from numbers u in [0, 1]: inside the limits (unbounded: [-pi, pi])."""
    lo = np.where(np.isfinite(mech.lower_limits), mech.lower_limits, -np.pi)
    hi = np.where(np.isfinite(mech.upper_limits), mech.upper_limits, np.pi)
    idx = [mech.coordinate_index(c) for c in mech.independent_coordinates]
    return mech.configuration(lo[idx] + np.asarray(u) * (hi[idx] - lo[idx]))


def _uniform(n):
    return st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)


def test_every_link_is_a_frame_in_both(robot):
    name, mech, pmodel = robot
    pin_links = {f.name for f in pmodel.frames if f.type == pin.FrameType.BODY}
    assert pin_links == set(mech.frame_names)
    assert {pmodel.names[j] for j in range(1, pmodel.njoints)} <= set(mech.joint_names)


@settings(max_examples=25)
@given(data=st.data())
def test_forward_kinematics_of_every_link_matches_pinocchio(robot, data):
    name, mech, pmodel = robot
    q = _random_q(mech, data.draw(_uniform(len(mech.independent_coordinates))))
    pdata = pmodel.createData()
    pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, mech, q))
    poses = forward_kinematics(mech, q).all_poses()
    worst = 0.0
    for f in mech.frame_names:
        fid = pmodel.getFrameId(f, pin.FrameType.BODY)
        worst = max(worst, np.abs(pdata.oMf[fid].homogeneous - poses[f]).max())
    assert worst < FK_TOL, f"{name}: max |T_ours - T_pinocchio| = {worst:.3e}"


@settings(max_examples=15)
@given(data=st.data())
def test_jacobians_match_pinocchio_in_three_conventions(robot, data):
    name, mech, pmodel = robot
    q = _random_q(mech, data.draw(_uniform(len(mech.independent_coordinates))))
    qp = pin_configuration(pmodel, mech, q)
    pdata = pmodel.createData()
    pin.computeJointJacobians(pmodel, pdata, qp)
    pin.updateFramePlacements(pmodel, pdata)
    cols = single_dof_columns(pmodel, mech)
    ours_idx = [c for c, _ in cols]
    pin_idx = [v for _, v in cols]
    frames = [f for f in mech.frame_names if f != mech.ground]
    frames = frames if len(frames) <= 12 else frames[:: max(1, len(frames) // 12)]
    for conv, ref in (("LOCAL", pin.ReferenceFrame.LOCAL), ("WORLD", pin.ReferenceFrame.WORLD),
                      ("LOCAL_WORLD_ALIGNED", pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)):
        for f in frames:
            fid = pmodel.getFrameId(f, pin.FrameType.BODY)
            Jp = pin.getFrameJacobian(pmodel, pdata, fid, ref)
            J = jacobian(mech, q, f, convention=conv)
            err = np.abs(J[:, ours_idx] - Jp[:, pin_idx]).max() if cols else 0.0
            assert err < JAC_TOL, f"{name} {f} {conv}: max difference {err:.3e}"


def test_compute_frame_jacobian_agrees_for_the_tool_of_an_arm():
    """The one-call API (pin.computeFrameJacobian) on the UR5 tool0, all three conventions."""
    path = os.path.join(DATA, "ur5", "ur5.urdf")
    mech = _load_ours(path)
    pmodel = pin.buildModelFromXML(open(path, encoding="utf-8").read())
    pdata = pmodel.createData()
    rng = np.random.default_rng(7)
    fid = pmodel.getFrameId("tool0", pin.FrameType.BODY)
    for _ in range(20):
        q = mech.random_configuration(rng)
        qp = pin_configuration(pmodel, mech, q)
        for conv in ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED"):
            Jp = pin.computeFrameJacobian(pmodel, pdata, qp, fid, getattr(pin.ReferenceFrame, conv))
            np.testing.assert_allclose(jacobian(mech, q, "tool0", convention=conv), Jp, atol=JAC_TOL)


# --------------------------------------------------------------------------- exporter vs Pinocchio
def _library_models():
    out = []
    for rel in list_models():
        if rel.endswith(".xml"):
            out.append(rel)
    return out


@pytest.mark.parametrize("rel", _library_models())
def test_exported_urdf_of_library_models_matches_pinocchio(rel):
    mech = load_model(model_path(rel))
    pmodel = pin.buildModelFromXML(to_urdf(mech))
    pdata = pmodel.createData()
    rng = np.random.default_rng(zlib.crc32(rel.encode()))
    worst = 0.0
    for _ in range(10):
        q = mech.random_configuration(rng)
        pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, mech, q))
        poses = forward_kinematics(mech, q).all_poses()
        for f in mech.frame_names:
            fid = pmodel.getFrameId(f, pin.FrameType.BODY)
            assert fid < len(pmodel.frames), f"{rel}: frame {f!r} missing from the exported URDF"
            worst = max(worst, np.abs(pdata.oMf[fid].homogeneous - poses[f]).max())
    assert worst < FK_TOL, f"{rel}: exported URDF differs from our FK by {worst:.3e}"


def test_exported_multi_dof_joints_match_pinocchio():
    """Ball, planar and floating joints with offsets and couplings, written as single-DOF chains."""
    from mechanism_model_core import Joint, MechanismBuilder
    from mechanism_model_core.spatial import make_transform

    rng = np.random.default_rng(3)

    def placement():
        return make_transform(euler_to_matrix("XYZ", rng.uniform(-3, 3, 3)), rng.uniform(-1, 1, 3))

    b = MechanismBuilder("multi")
    b.add_body("rover", None, Joint.floating("chassis", placement()))
    b.add_body("sled", "rover", Joint.planar("sled_joint", placement()))
    b.add_body("head", "sled", Joint.ball("neck", placement()))
    b.add_body("arm", "head", Joint.revolute("shoulder", placement(), axis=(0.3, -0.2, 0.9), lower=-2,
                                             upper=2, offset=0.4))
    b.add_body("finger", "arm", Joint.prismatic("finger", placement(), axis=(1, 1, 0), lower=-0.1,
                                                upper=0.1, offset=-0.05, coupling="0.02*shoulder - 0.01"))
    b.add_frame("finger", "tip", placement())
    b.add_frame("rover", "mast_mount", placement(), kind="mount")
    mech = b.build()
    text = to_urdf(mech)
    pmodel = pin.buildModelFromXML(text)
    assert {pmodel.names[j] for j in range(1, pmodel.njoints)} == set(mech.coordinate_names)
    pdata = pmodel.createData()
    for _ in range(20):
        q = mech.random_configuration(rng)
        # the exported chain joints are named exactly like our coordinates
        qp = pin.neutral(pmodel)
        for jid in range(1, pmodel.njoints):
            jm = pmodel.joints[jid]
            v = q[mech.coordinate_index(pmodel.names[jid])]
            if jm.nq == 2:
                qp[jm.idx_q:jm.idx_q + 2] = [np.cos(v), np.sin(v)]
            else:
                qp[jm.idx_q] = v
        pin.framesForwardKinematics(pmodel, pdata, qp)
        poses = forward_kinematics(mech, q).all_poses()
        for f in mech.frame_names:
            fid = pmodel.getFrameId(f, pin.FrameType.BODY)
            np.testing.assert_allclose(pdata.oMf[fid].homogeneous, poses[f], atol=FK_TOL)


# ------------------------------------------------------------------ mimic joints: child = multiplier * parent + offset
MIMIC_ROBOTS = [("panda", "panda/panda.urdf"), ("pr2", "pr2/pr2.urdf"), ("odd", "odd/odd.urdf")]


@pytest.fixture(scope="module", params=MIMIC_ROBOTS, ids=[r[0] for r in MIMIC_ROBOTS])
def mimic_robot(request):
    """Pinocchio built *with* its mimic joints (``mimic=True``): a mimic joint has no coordinate of its own
    and follows its parent joint by URDF's rule, independently of our coupling expressions."""
    name, rel = request.param
    path = os.path.join(DATA, rel)
    with open(path, encoding="utf-8") as fh:
        pmodel = pin.buildModelFromXML(fh.read(), mimic=True)
    mech = _load_ours(path)
    assert mech.couplings, f"{name} should have mimic joints"
    return name, mech, pmodel


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_mimic_couplings_match_pinocchios_mimic_joints(mimic_robot, data):
    name, mech, pmodel = mimic_robot
    u = data.draw(_uniform(len(mech.independent_coordinates)))
    q = _random_q(mech, u)          # independent values; the dependent ones from our couplings
    qp = pin_configuration(pmodel, mech, q)
    pdata = pmodel.createData()
    pin.computeJointJacobians(pmodel, pdata, qp)
    pin.framesForwardKinematics(pmodel, pdata, qp)
    fk = forward_kinematics(mech, q)
    D = mech.coupling_jacobian(q)      # dq_full / dq_independent
    indep = {c: k for k, c in enumerate(mech.independent_coordinates)}
    for fid, frame in enumerate(pmodel.frames):
        if frame.type != pin.FrameType.BODY:
            continue
        np.testing.assert_allclose(fk.pose(frame.name), pdata.oMf[fid].homogeneous, atol=FK_TOL,
                                   err_msg=f"{name}: {frame.name}")
        if fid % 4:
            continue
        Jp = pin.getFrameJacobian(pmodel, pdata, fid, pin.LOCAL_WORLD_ALIGNED)
        J = jacobian(mech, q, frame.name, convention="LOCAL_WORLD_ALIGNED") @ D
        for jid in range(1, pmodel.njoints):
            jm = pmodel.joints[jid]
            if jm.nq and jm.nv == 1:     # single-DOF, not a mimic joint
                np.testing.assert_allclose(J[:, indep[pmodel.names[jid]]], Jp[:, jm.idx_v], atol=JAC_TOL,
                                           err_msg=f"{name}: {frame.name} / {pmodel.names[jid]}")
