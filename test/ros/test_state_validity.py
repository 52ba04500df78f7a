"""check_state_validity, compute_ik with avoid_collisions and the bounding-shape markers: over the
in-memory transport (real message definitions, CDR on the bus) against the core's collision queries, and
once over real Cyclone DDS in a separate ``serve`` process."""

import math
import os
import subprocess

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.collision import collisions, minimum_distance
from mechanism_model_core.library import default_model_path

from docs_text import doc_lines, venv_argv
from ros.dds_helpers import configure_this_process, dds_env, start_serve, stop, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())
ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
#: the turret folded back onto the forearm
FOLDED = dict(zip(ARM, [0.55, -0.92, -1.84, -1.93, 1.25]))


@pytest.fixture
def server():
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    node = create("kinematics_server", MemoryNode("kinematics_server", bus=bus), Served(MODEL, "test"))
    client = MemoryNode("client", bus=bus)
    return node, client


def _state(client, values):
    JS = client.message_class("sensor_msgs/msg/JointState")
    return JS(name=list(values), position=[float(v) for v in values.values()])


def test_valid_and_invalid_states_match_the_core(server):
    node, client = server
    srv = client.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
    req = srv.request()
    req.compute_distance = True
    rep = srv.call(req, 5)
    assert rep.error_code.val == 1 and rep.valid and not rep.contacts
    d = minimum_distance(MODEL, None)
    assert rep.minimum_distance == pytest.approx(d.distance, abs=1e-12)
    assert list(rep.closest_bodies) == [d.body_a, d.body_b]
    np.testing.assert_allclose([rep.closest_points[0].x, rep.closest_points[0].y, rep.closest_points[0].z],
                               d.point_a, atol=1e-12)

    req = srv.request()
    req.robot_state = _state(client, FOLDED)
    rep = srv.call(req, 5)
    expected = collisions(MODEL, FOLDED)
    assert rep.error_code.val == 1 and not rep.valid and expected
    assert [(c.contact_body_1, c.contact_body_2, c.shape_1, c.shape_2) for c in rep.contacts] == \
        [(c.body_a, c.body_b, c.shape_a, c.shape_b) for c in expected]
    for m, c in zip(rep.contacts, expected):
        assert m.header.frame_id == MODEL.ground and m.depth == pytest.approx(c.depth, abs=1e-12)
        np.testing.assert_allclose([m.position.x, m.position.y, m.position.z], c.point, atol=1e-12)
    assert math.isnan(rep.minimum_distance)     # not asked for
    # a margin turns near misses into contacts
    req = srv.request()
    req.margin = 0.05
    assert not srv.call(req, 5).valid


def test_bad_requests_get_error_codes_and_the_node_keeps_serving(server):
    node, client = server
    srv = client.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
    req = srv.request()
    req.robot_state = _state(client, {"no_such_joint": 0.0})
    assert srv.call(req, 5).error_code.val == -17
    req = srv.request()
    req.robot_state = _state(client, {"arm_yaw": float("nan")})
    assert srv.call(req, 5).error_code.val == -17
    req = srv.request()
    req.margin = -1.0
    rep = srv.call(req, 5)
    assert rep.error_code.val == 99999 and "margin" in rep.message
    assert srv.call(srv.request(), 5).error_code.val == 1


def test_markers_show_every_checked_shape_and_colour_the_colliding_bodies(server):
    from mechanism_model_ros import qos
    node, client = server
    got = []
    client.create_subscription("collision_shapes", "visualization_msgs/msg/MarkerArray", qos.LATCHED, got.append)
    assert got, "transient local: a late subscriber gets the markers"
    markers = got[-1].markers
    shapes = [(b.name, s) for b in MODEL.bodies for s in b.shapes if not s.ignore_collisions]
    assert len(markers) == len(shapes)
    fk = forward_kinematics(MODEL, None)
    for m, (body, s) in zip(markers, shapes):
        assert m.header.frame_id == body and m.ns == body and m.frame_locked
        assert m.color.g > m.color.r
        if s.type == "box":
            assert (m.type, m.scale.x, m.scale.y, m.scale.z) == (1, *s.dimensions)
        elif s.type == "cylinder":
            assert (m.type, m.scale.x, m.scale.z) == (3, 2 * s.dimensions[0], s.dimensions[1])
        np.testing.assert_allclose([m.pose.position.x, m.pose.position.y, m.pose.position.z],
                                   s.transform[:3, 3], atol=1e-12)
    srv = client.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
    req = srv.request()
    req.robot_state = _state(client, FOLDED)
    req.highlight_contacts = True
    srv.call(req, 5)
    red = {m.ns for m in got[-1].markers if m.color.r > m.color.g}
    assert red == {"arm_fore", "arm_turret"}
    del fk


def test_compute_ik_with_avoid_collisions(server):
    node, client = server
    ik = client.create_client("compute_ik", "mechanism_model_msgs/srv/ComputeIK")
    T = forward_kinematics(MODEL, FOLDED).pose("arm_tool", "chassis")
    from mechanism_model_ros.conversions import fill_pose
    PS = client.message_class("geometry_msgs/msg/PoseStamped")
    req = ik.request()
    ps = PS()
    ps.header.frame_id = "chassis"
    fill_pose(ps.pose, T)
    req.ik_link_names, req.pose_stamped_vector = ["arm_tool"], [ps]
    req.robot_state = _state(client, FOLDED)
    req.active_joints = ARM
    req.timeout.sec = 1
    plain = ik.call(req, 10)
    assert plain.error_code.val == 1          # the seed itself reaches the pose, in collision
    req.avoid_collisions = True
    safe = ik.call(req, 10)
    assert safe.error_code.val in (1, -31)
    q = dict(zip(safe.solution.name, safe.solution.position))
    if safe.error_code.val == 1:
        assert not collisions(MODEL, q)
        np.testing.assert_allclose(forward_kinematics(MODEL, q).pose("arm_tool", "chassis"), T, atol=1e-5)
    else:
        assert "collision" in safe.message


def test_state_validity_over_dds():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    proc = start_serve(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("validity_tester", context=ctx)
    try:
        srv = node.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
        assert srv.wait_for_service(30), "the server did not come up"
        got = []
        node.create_subscription("collision_shapes", "visualization_msgs/msg/MarkerArray", qos.LATCHED,
                                 got.append)
        req = srv.request()
        req.robot_state = _state(node, FOLDED)
        req.compute_distance = True
        rep = srv.call(req, 20)
        assert rep.error_code.val == 1 and not rep.valid
        assert {(c.contact_body_1, c.contact_body_2) for c in rep.contacts} == {("arm_fore", "arm_turret")}
        assert rep.minimum_distance < 0
        assert wait_for(lambda: got, 15) and len(got[-1].markers) > 20
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err


# ---------------------------------------------------------------------------------------------- the world
#: a terrain plane 3 cm above the wheels' lowest points (every wheel sinks in) and a rock around the arm's tool
ENV_YAML = """
terrain:
  plane: {point: [0, 0, 0.03], normal: [0, 0, 1]}
obstacles:
  - {name: rock, box: [0.2, 0.2, 0.2], position: [1.2, 0.0, 0.25]}
"""
WHEELS = {b.name for b in MODEL.bodies if b.name.endswith("_wheel")}


@pytest.fixture
def env_server(tmp_path):
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    path = tmp_path / "world.yaml"
    path.write_text(ENV_YAML)
    bus = MemoryBus()
    node = create("kinematics_server", MemoryNode("kinematics_server", parameters={"environment_file": str(path)},
                                                  bus=bus), Served(MODEL, "test"))
    client = MemoryNode("client", bus=bus)
    srv = client.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
    return node, client, srv, str(path)


def _pose(client, xyz=(0.0, 0.0, 0.0), quat=(0.0, 0.0, 0.0, 1.0)):
    Pose = client.message_class("geometry_msgs/msg/Pose")
    p = Pose()
    p.position.x, p.position.y, p.position.z = (float(v) for v in xyz)
    p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w = (float(v) for v in quat)
    return p


def _object(client, oid, operation=0, frame="", pose=None, primitives=(), meshes=(), planes=()):
    """A CollisionObject; ``primitives``: (type, dims, xyz) ; ``meshes``: (vertices, triangles, xyz);
    ``planes``: (coef, xyz)."""
    CO = client.message_class("mechanism_model_msgs/msg/CollisionObject")
    SP = client.message_class("shape_msgs/msg/SolidPrimitive")
    Mesh = client.message_class("shape_msgs/msg/Mesh")
    Tri = client.message_class("shape_msgs/msg/MeshTriangle")
    Plane = client.message_class("shape_msgs/msg/Plane")
    Point = client.message_class("geometry_msgs/msg/Point")
    o = CO()
    o.id, o.operation = oid, operation
    o.header.frame_id = frame
    o.pose = pose if pose is not None else _pose(client)
    o.primitives = [SP(type=t, dimensions=[float(v) for v in d]) for t, d, _ in primitives]
    o.primitive_poses = [_pose(client, xyz) for _, _, xyz in primitives]
    o.meshes = [Mesh(vertices=[Point(x=float(a), y=float(b), z=float(c)) for a, b, c in V],
                     triangles=[Tri(vertex_indices=[int(i) for i in t]) for t in F]) for V, F, _ in meshes]
    o.mesh_poses = [_pose(client, xyz) for _, _, xyz in meshes]
    o.planes = [Plane(coef=[float(v) for v in c]) for c, _ in planes]
    o.plane_poses = [_pose(client, xyz) for _, xyz in planes]
    return o


def _pairs(rep):
    return {(c.contact_body_1, c.contact_body_2, c.body_type_2) for c in rep.contacts}


def test_the_node_environment_and_the_world_objects_of_a_request(env_server):
    from mechanism_model_core.collision import Environment, Obstacle
    from mechanism_model_core.io import load_environment
    from mechanism_model_core import shapes as S
    node, client, srv, path = env_server
    env = load_environment(path)
    # the node's own world: every wheel in the terrain (3 cm, closed form), the arm in the rock
    rep = srv.call(srv.request(), 5)
    assert rep.error_code.val == 1 and not rep.valid
    expected = collisions(MODEL, None, environment=env)
    assert _pairs(rep) == {(c.body_a, c.body_b, int(c.environment)) for c in expected}
    assert {a for a, b, t in _pairs(rep) if b == "terrain" and t == 1} == WHEELS
    assert any(b == "rock" and t == 1 for a, b, t in _pairs(rep))
    assert max(c.depth for c in rep.contacts if c.contact_body_2 == "terrain") == pytest.approx(0.03, abs=1e-9)
    # REMOVE leaves a node obstacle out; both out (or ignore_environment): the home pose is valid
    req = srv.request()
    req.world_objects = [_object(client, "rock", operation=1)]
    assert {b for a, b, t in _pairs(srv.call(req, 5))} == {"terrain"}
    req.world_objects = [_object(client, "rock", operation=1), _object(client, "terrain", operation=1)]
    rep = srv.call(req, 5)
    assert rep.error_code.val == 1 and rep.valid
    req = srv.request()
    req.ignore_environment = True
    assert srv.call(req, 5).valid
    # an object with a node obstacle's id replaces it (the rock moved away)
    req = srv.request()
    req.world_objects = [_object(client, "rock", primitives=[(1, (0.2, 0.2, 0.2), (5.0, 5.0, 0.5))])]
    assert {b for a, b, t in _pairs(srv.call(req, 5))} == {"terrain"}
    # a boulder attached to the chassis frame (0.4 m up): the same verdict as the core's in the ground frame
    req = srv.request()
    req.compute_distance = True
    req.world_objects = [_object(client, "rock", operation=1), _object(client, "terrain", operation=1),
                         _object(client, "boulder", frame="chassis", pose=_pose(client, (1.2, 0.0, -0.15)),
                                 primitives=[(2, (0.12,), (0, 0, 0))])]
    rep = srv.call(req, 5)
    core = Environment([Obstacle("boulder", S.Sphere(0.12), np.array(
        [[1, 0, 0, 1.2], [0, 1, 0, 0.0], [0, 0, 1, 0.25], [0, 0, 0, 1.0]]))])
    expected = collisions(MODEL, None, environment=core)
    assert expected and _pairs(rep) == {(c.body_a, c.body_b, int(c.environment)) for c in expected}
    d = minimum_distance(MODEL, None, environment=core)
    assert rep.minimum_distance == pytest.approx(d.distance, abs=1e-9) and rep.minimum_distance < 0
    assert list(rep.closest_bodies) == [d.body_a, "boulder"]
    # one object of several shapes: a mesh (a tetrahedron around the tool), a far box and a ground plane
    tet = ([(1.0, -0.2, 0.1), (1.4, -0.2, 0.1), (1.2, 0.25, 0.1), (1.2, 0.0, 0.45)],
           [(0, 1, 2), (0, 1, 3), (1, 2, 3), (0, 2, 3)], (0, 0, 0))
    req = srv.request()
    req.ignore_environment = False
    req.world_objects = [_object(client, "rock", operation=1), _object(client, "terrain", operation=1),
                         _object(client, "pile", primitives=[(1, (0.1, 0.1, 0.1), (9, 9, 9))], meshes=[tet],
                                 planes=[((0, 0, 1, -0.02), (0, 0, 0))])]
    rep = srv.call(req, 5)
    assert rep.error_code.val == 1 and not rep.valid
    assert {c.contact_body_2 for c in rep.contacts} == {"pile"}
    shapes = {c.shape_2 for c in rep.contacts}
    assert "pile/plane/0" in shapes and "pile/mesh/0" in shapes and "pile/primitive/0" not in shapes
    assert {c.contact_body_1 for c in rep.contacts if c.shape_2 == "pile/plane/0"} == WHEELS


def test_bad_world_objects_get_error_codes_and_the_node_keeps_serving(env_server):
    node, client, srv, path = env_server
    box = [(1, (0.1, 0.1, 0.1), (0, 0, 2))]
    nan_pose = _pose(client, (float("nan"), 0, 0))
    zero_quat = _pose(client, (0, 0, 0), (0, 0, 0, 0))
    bad_mismatch = _object(client, "m", primitives=box)
    bad_mismatch.primitive_poses = []
    cases = [
        ([_object(client, "", primitives=box)], -19, "id"),
        ([_object(client, "a", primitives=box), _object(client, "a", primitives=box)], -19, "two"),
        ([_object(client, "no_such_obstacle", operation=1)], -19, "REMOVE"),
        ([_object(client, "a", frame="no_such_frame", primitives=box)], -21, "no_such_frame"),
        ([_object(client, "a", operation=7, primitives=box)], 99999, "operation"),
        ([_object(client, "a")], 99999, "no primitives"),
        ([_object(client, "a", primitives=[(9, (1, 1, 1), (0, 0, 0))])], 99999, "type"),
        ([_object(client, "a", primitives=[(3, (0.5,), (0, 0, 0))])], 99999, "dimensions"),
        ([_object(client, "a", primitives=[(1, (0.1, -1, 0.1), (0, 0, 0))])], 99999, "positive"),
        ([_object(client, "a", primitives=[(2, (float("inf"),), (0, 0, 0))])], 99999, "finite"),
        ([_object(client, "a", pose=nan_pose, primitives=box)], 99999, "finite"),
        ([_object(client, "a", pose=zero_quat, primitives=box)], 99999, "zero quaternion"),
        ([bad_mismatch], 99999, "primitive_poses"),
        ([_object(client, "a", meshes=[([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [(0, 1, 5)], (0, 0, 0))])], 99999,
         "index"),
        ([_object(client, "a", planes=[((0, 0, 0, 1), (0, 0, 0))])], 99999, "normal"),
    ]
    for objects, code, words in cases:
        req = srv.request()
        req.world_objects = objects
        rep = srv.call(req, 5)
        assert rep.error_code.val == code and words in rep.message, (code, words, rep.message)
        assert srv.call(srv.request(), 5).error_code.val == 1       # still serving
    req = srv.request()
    req.world_objects = [_object(client, f"o{k}", primitives=box) for k in range(1001)]
    rep = srv.call(req, 30)
    assert rep.error_code.val == 99999 and "limit" in rep.message


def test_the_node_obstacles_are_drawn(env_server):
    from mechanism_model_ros import qos
    node, client, srv, path = env_server
    got = []
    client.create_subscription("collision_shapes", "visualization_msgs/msg/MarkerArray", qos.LATCHED, got.append)
    env = [m for m in got[-1].markers if m.ns == "environment"]
    assert [m.text for m in env] == ["rock"]         # the terrain plane is unbounded: not drawn
    assert (env[0].type, env[0].scale.x, env[0].pose.position.x, env[0].header.frame_id) == (1, 0.2, 1.2, "ground")
    req = srv.request()
    req.highlight_contacts = True
    srv.call(req, 5)
    env = [m for m in got[-1].markers if m.ns == "environment"]
    assert env[0].color.r > env[0].color.g


def test_a_bad_environment_file_stops_the_node_with_file_and_line(tmp_path):
    from mechanism_model_core.errors import ModelFileError
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryNode
    path = tmp_path / "world.yaml"
    path.write_text("obstacles:\n  - {name: r, box: [1, 1, -1]}\n")
    with pytest.raises(ModelFileError) as e:
        create("kinematics_server", MemoryNode("kinematics_server", parameters={"environment_file": str(path)}),
               Served(MODEL, "test"))
    assert e.value.file == str(path) and e.value.line == 2


def test_the_world_over_dds(tmp_path):
    """``serve`` with an environment file over real Cyclone DDS: the node's world and a request's object."""
    path = tmp_path / "world.yaml"
    path.write_text(ENV_YAML)
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    # docs/collision.md's environment_file line as written, its placeholder path this test's world file
    (line,) = doc_lines(os.path.join("docs", "collision.md"), "mechanism-model-serve -p environment_file:=")
    assert "/path/world.yaml" in line, line
    proc = subprocess.Popen(venv_argv(line.replace("/path/world.yaml", str(path))),
                            env=dds_env(domain), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ctx = CycloneContext(domain)
    node = CycloneNode("world_tester", context=ctx)
    try:
        srv = node.create_client("check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity")
        assert srv.wait_for_service(30), "the server did not come up"
        rep = srv.call(srv.request(), 20)
        assert rep.error_code.val == 1 and not rep.valid
        assert {a for a, b, t in _pairs(rep) if b == "terrain"} == WHEELS and "rock" in {b for a, b, t in _pairs(rep)}
        req = srv.request()
        req.world_objects = [_object(node, "rock", operation=1), _object(node, "terrain", operation=1),
                             _object(node, "boulder", frame="chassis", pose=_pose(node, (1.2, 0.0, -0.15)),
                                     primitives=[(2, (0.12,), (0, 0, 0))])]
        rep = srv.call(req, 20)
        assert rep.error_code.val == 1 and {b for a, b, t in _pairs(rep)} == {"boulder"}
        req.world_objects = [_object(node, "x", frame="nowhere", primitives=[(2, (0.1,), (0, 0, 0))])]
        assert srv.call(req, 20).error_code.val == -21
        assert srv.call(srv.request(), 20).error_code.val == 1
    finally:
        node.close()
        ctx.close()
        out, err = stop(proc)
    assert "Traceback" not in err, err
