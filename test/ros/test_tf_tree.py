"""The TF tree the state publisher sends composes to the core's forward kinematics (checked frame by frame
for random configurations), and matches the URDF export link for link. The moving edges as /tf carries them
(translation + quaternion, :meth:`MovingEdges.xyzquat`, computed from half-angles) compose, with the static
edges, to Pinocchio's forward kinematics of the URDF export: an independent oracle for what goes on the wire."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.io.urdf import to_urdf
from mechanism_model_core.library import model_path

from mechanism_model_ros.tf_tree import build_tf_tree

try:        # Pinocchio is a test-only oracle (requirements-test.txt); the module skips itself without it
    from core.test_pinocchio_oracle import pin_configuration
except (ImportError, pytest.skip.Exception):
    pin_configuration = None

pytestmark = pytest.mark.ros

MODELS = ["claraty_samples/sample1.xml", "four_bar/four_bar.xml", "rocky8/rocky8_rover.xml"]
_cache = {}


def _model(name):
    if name not in _cache:
        m = load_model(model_path(name))
        _cache[name] = (m, *build_tf_tree(m))
    return _cache[name]


def _compose(static, moving, q):
    edges = {e.child: (e.parent, e.T) for e in static}
    for p, c, T in zip(moving.parents, moving.children, moving.transforms(q)):
        assert c not in edges, f"frame {c} has two parents"
        edges[c] = (p, T)
    world = {}

    def pose(f):
        if f not in world:
            if f not in edges:
                world[f] = np.eye(4)      # the root
            else:
                p, T = edges[f]
                world[f] = pose(p) @ T
        return world[f]
    return {f: pose(f) for f in edges}, edges


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_edges_compose_to_forward_kinematics(name, seed):
    m, static, moving = _model(name)
    q = m.random_configuration(np.random.default_rng(seed))
    poses, edges = _compose(static, moving, q)
    fk = forward_kinematics(m, q)
    for f in m.frame_names:
        if f == m.ground:
            continue
        np.testing.assert_allclose(poses[f], fk.pose(f), atol=1e-9, err_msg=f)
    roots = {p for p, _ in edges.values()} - set(edges)
    assert roots == {m.ground}


@pytest.mark.parametrize("name", MODELS)
def test_frames_match_urdf_links(name):
    m, static, moving = _model(name)
    links = set(re.findall(r'<link name="([^"]+)"', to_urdf(m)))
    frames = {e.child for e in static} | set(moving.children) | {m.ground}
    assert frames == links


def test_static_and_moving_split():
    m, static, moving = _model("rocky8/rocky8_rover.xml")
    # the floating chassis joint is a chain of six single-axis steps
    assert moving.children[:6] == ["chassis.x_link", "chassis.y_link", "chassis.z_link", "chassis.yaw_link",
                                   "chassis.pitch_link", "chassis"]
    moving_joints = [j for j in m.joints if j.dof > 0]
    assert len(moving) == sum(j.dof for j in moving_joints)
    assert len(static) == sum(1 for j in m.joints if j.dof == 0) + sum(len(b.frames) for b in m.bodies)


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_xyzquat_edges_compose_to_pinocchio_forward_kinematics(name, seed):
    if pin_configuration is None:
        pytest.skip("pinocchio is not installed")
    pin = pytest.importorskip("pinocchio")
    m, static, moving = _model(name)
    if name not in _pin_models:
        _pin_models[name] = pin.buildModelFromXML(to_urdf(m))
    pmodel = _pin_models[name]
    q = m.random_configuration(np.random.default_rng(seed))
    edges = {e.child: (e.parent, e.T) for e in static}
    P = moving.xyzquat(q)
    assert P.shape == (len(moving), 7)
    for p, c, (x, y, z, qx, qy, qz, qw) in zip(moving.parents, moving.children, P):
        assert qw >= 0
        T = np.eye(4)
        T[:3, :3] = pin.Quaternion(qw, qx, qy, qz).toRotationMatrix()      # Eigen's (w, x, y, z) order
        T[:3, 3] = x, y, z
        edges[c] = (p, T)
    world = {m.ground: np.eye(4)}

    def pose(f):
        if f not in world:
            p, T = edges[f]
            world[f] = pose(p) @ T
        return world[f]
    data = pmodel.createData()
    pin.framesForwardKinematics(pmodel, data, pin_configuration(pmodel, m, q))
    links = [f.name for f in pmodel.frames if f.type == pin.FrameType.BODY]
    assert set(m.frame_names) <= set(links)
    for f in links:
        np.testing.assert_allclose(pose(f), data.oMf[pmodel.getFrameId(f, pin.FrameType.BODY)].homogeneous,
                                   rtol=0, atol=1e-9, err_msg=f)


_pin_models = {}
