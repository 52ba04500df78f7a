"""check_state_validity, compute_ik with avoid_collisions and the bounding-shape markers: over the
in-memory transport (real message definitions, CDR on the bus) against the core's collision queries, and
once over real Cyclone DDS in a separate ``serve`` process."""

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.collision import collisions, minimum_distance
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for

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
