"""Node logic over the in-memory transport (no DDS): the node registry, the shared joint-state cache, the
error codes read from ErrorCodes.msg and the exception mapping, stamps, and the message conversions. The
messages are the real definitions' classes and cross the bus as plain CDR."""

import math

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.errors import InvalidConfiguration, MechanismModelError, UnknownFrame
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import transform_to_matrix

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())


@pytest.fixture
def bus():
    from mechanism_model_ros.transports.memory import MemoryBus
    bus = MemoryBus()
    yield bus
    bus.close()           # the nodes' timers and the bus's scheduler thread


def _served(bus, names=("state_publisher", "kinematics_server"), params=None):
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryNode
    served = Served(MODEL, "test")
    nodes = {n: create(n, MemoryNode(n, parameters=params, bus=bus), served) for n in names}
    return served, nodes


def _client(bus, name, srv):
    from mechanism_model_ros.transports.memory import MemoryNode
    return MemoryNode("client", bus=bus).create_client(name, srv)


def test_error_codes_are_the_interface_definition_s():
    """Every constant of ErrorCodes.msg as rosbags parses the same file, and MoveIt's values."""
    from mechanism_model_ros.error_codes import ErrorCodes
    from mechanism_model_ros.transports.typegen import message_class
    generated = message_class("mechanism_model_msgs/msg/ErrorCodes")
    names = [k for k, _ in ErrorCodes.items()]
    assert len(names) >= 10
    for k in names:
        assert getattr(generated, k) == getattr(ErrorCodes, k), k
    assert (ErrorCodes.SUCCESS, ErrorCodes.NO_IK_SOLUTION, ErrorCodes.INVALID_LINK_NAME) == (1, -31, -18)
    assert ErrorCodes.name(-17) == "INVALID_ROBOT_STATE" and ErrorCodes.name(12345) == "UNKNOWN(12345)"


def test_exceptions_map_to_codes_in_one_place():
    from mechanism_model_ros.conversions import BadMessage
    from mechanism_model_ros.error_codes import ErrorCodes, RequestError, code_for
    assert code_for(RequestError(-15, "x")) == (-15, "x")
    assert code_for(UnknownFrame("nowhere"))[0] == ErrorCodes.INVALID_LINK_NAME
    assert code_for(InvalidConfiguration("bad"))[0] == ErrorCodes.INVALID_ROBOT_STATE
    assert code_for(BadMessage("nan"))[0] == ErrorCodes.INVALID_GOAL_CONSTRAINTS
    assert code_for(TimeoutError())[0] == ErrorCodes.TIMED_OUT
    code, msg = code_for(MechanismModelError("odd"))
    assert code == ErrorCodes.FAILURE and "MechanismModelError" in msg
    code, msg = code_for(ImportError("collision checking needs coal: pip install 'mechanism_model_core[collision]'"))
    assert code == ErrorCodes.FAILURE and msg.startswith("not available in this installation: collision checking")
    code, msg = code_for(ZeroDivisionError("boom"))
    assert code == ErrorCodes.FAILURE and msg.startswith("internal error ZeroDivisionError")


def test_registry_lists_the_nodes_and_refuses_an_unknown_one(bus):
    from mechanism_model_ros import nodes
    assert {"state_publisher", "kinematics_server"} <= set(nodes.available())
    with pytest.raises(KeyError, match="known nodes: .*kinematics_server"):
        nodes.create("no_such_node", None, None)


def test_serve_refuses_an_unknown_node_name(capsys):
    from mechanism_model_ros.serve import main
    with pytest.raises(SystemExit) as e:
        main(["--nodes", "state_publisher,ghost", "--transport", "cyclone"])
    assert e.value.code == 2
    assert "unknown node(s) ghost" in capsys.readouterr().err


def test_one_joint_state_subscription_feeds_every_node(bus):
    served, nodes = _served(bus)
    assert len(bus.subscriptions["/joint_states"]) == 1
    from mechanism_model_ros.transports.memory import MemoryNode
    pub_node = MemoryNode("driver", bus=bus)
    pub = pub_node.create_publisher("joint_states", "sensor_msgs/msg/JointState", __import__(
        "mechanism_model_ros.qos", fromlist=["DEFAULT"]).DEFAULT)
    JS = pub_node.message_class("sensor_msgs/msg/JointState")
    pub.publish(JS(name=["arm_yaw", "arm_elbow"], position=[0.4, -0.3]))
    assert served.joint_state_cache.latest() == {"arm_yaw": 0.4, "arm_elbow": -0.3}
    # the kinematics server answers from the same cache: FK of arm_turret with no robot_state
    fk = _client(bus, "compute_fk", "mechanism_model_msgs/srv/ComputeFK")
    r = fk.request()
    r.fk_link_names = ["arm_turret"]
    rep = fk.call(r)
    assert rep.error_code.val == 1
    p = rep.pose_stamped[0].pose
    np.testing.assert_allclose([p.position.x, p.position.y, p.position.z],
                               forward_kinematics(MODEL, {"arm_yaw": 0.4, "arm_elbow": -0.3})
                               .pose("arm_turret")[:3, 3], atol=1e-12)
    from mechanism_model_ros.serve import status_line
    line = status_line(nodes, served.joint_state_cache)
    assert line.startswith("joint_states in: 1 (rejected 0)") and "fk 1" in line and "transforms out" in line


def _tf_listener(bus):
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.memory import MemoryNode
    node = MemoryNode("tf_listener", bus=bus)
    tf, static = [], []
    node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf.append)
    node.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER, static.append)
    return node, tf, static


def test_tf_composes_to_forward_kinematics_and_late_joiners_get_tf_static(bus):
    served, nodes = _served(bus, ("state_publisher",), {"floating_joints": "always"})
    node, tf, static = _tf_listener(bus)            # joins after the static transforms went out
    assert len(static) == 1
    JS = node.message_class("sensor_msgs/msg/JointState")
    rng = np.random.default_rng(5)
    q = MODEL.random_configuration(rng)
    indep = {n: float(q[MODEL.coordinate_index(n)]) for n in MODEL.independent_coordinates}
    m = JS(name=list(indep), position=list(indep.values()))
    m.header.stamp.sec = 77
    nodes["state_publisher"].on_joint_state(m)
    msg = tf[-1]
    assert all(t.header.stamp.sec == 77 for t in msg.transforms)
    edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform))
             for t in msg.transforms + static[0].transforms}
    world = {MODEL.ground: np.eye(4)}

    def pose(f):
        if f not in world:
            parent, T = edges[f]
            world[f] = pose(parent) @ T
        return world[f]
    fk = forward_kinematics(MODEL, indep)
    for f in MODEL.frame_names[1:]:
        np.testing.assert_allclose(pose(f), fk.pose(f), atol=1e-9, err_msg=f)


@pytest.mark.parametrize("sec, nsec, expect", [
    (5, 1_500_000_000, (6, 500_000_000)),       # nanoseconds beyond a second are carried
    (-1, 0, None),                              # before the epoch: dropped
    (0, -5 % 2**32, (4, 294_967_291)),          # uint32 wraps: 4294967291 ns = 4 s + 294967291 ns
    (2**31 - 1, 2_000_000_000, None),           # beyond int32 after the carry: dropped
])
def test_joint_state_stamps_are_normalised_or_refused(bus, sec, nsec, expect):
    served, nodes = _served(bus, ("state_publisher",))
    node, tf, _ = _tf_listener(bus)
    JS = node.message_class("sensor_msgs/msg/JointState")
    m = JS(name=["arm_yaw"], position=[0.1])
    m.header.stamp.sec, m.header.stamp.nanosec = sec, nsec
    before = len(tf)
    nodes["state_publisher"].on_joint_state(m)
    cache = served.joint_state_cache
    if expect is None:
        assert len(tf) == before and cache.bad_stamps == 1 and cache.messages_rejected == 1
    else:
        stamp = tf[-1].transforms[0].header.stamp
        assert (stamp.sec, stamp.nanosec) == expect
        assert all(0 <= t.header.stamp.nanosec < 10**9 for t in tf[-1].transforms)


def test_fk_request_stamp_is_normalised_and_bad_one_refused(bus):
    _served(bus, ("kinematics_server",))
    fk = _client(bus, "compute_fk", "mechanism_model_msgs/srv/ComputeFK")
    r = fk.request()
    r.fk_link_names = ["arm_turret"]
    r.header.stamp.sec, r.header.stamp.nanosec = 3, 2_000_000_001
    rep = fk.call(r)
    assert rep.error_code.val == 1
    assert (rep.pose_stamped[0].header.stamp.sec, rep.pose_stamped[0].header.stamp.nanosec) == (5, 1)
    r.header.stamp.sec = -3
    rep = fk.call(r)
    assert rep.error_code.val == 99999 and "before the epoch" in rep.message and not rep.pose_stamped


def test_contact_constraint_plane_follows_the_axis():
    """CONTACT: the surface frame's z is the normalised axis, through target_point (checked by hand)."""
    from mechanism_model_ros.conversions import BadMessage, constraint_from
    from mechanism_model_ros.transports.typegen import message_class
    KC = message_class("mechanism_model_msgs/msg/KinematicConstraint")
    c = KC(link_name="arm_turret", kind=KC.CONTACT)
    c.axis.x, c.axis.y, c.axis.z = 0.0, 3.0, 4.0
    c.target_point.x, c.target_point.y, c.target_point.z = 1.0, 2.0, 3.0
    con = constraint_from(c, "arm_turret", None, "constraints[0]")
    S = np.asarray(con.surface)
    np.testing.assert_allclose(S[:3, 2], [0.0, 0.6, 0.8], atol=1e-12)
    np.testing.assert_allclose(S[:3, :3].T @ S[:3, :3], np.eye(3), atol=1e-12)
    np.testing.assert_allclose(S[:3, 3], [1.0, 2.0, 3.0])
    c.weights = [1.0, math.nan, 0, 0, 0, 0]
    with pytest.raises(BadMessage, match="weights"):
        constraint_from(c, "arm_turret", None, "constraints[0]")


def test_ik_budget_counts_from_the_request_s_arrival(bus):
    """A request that waited in the queue longer than its timeout is TIMED_OUT without solving."""
    import time as _time
    from mechanism_model_ros.transports import base
    _served(bus, ("kinematics_server",))
    server = bus.services["/compute_ik"]
    from mechanism_model_ros.transports.typegen import service_wire_class
    req = service_wire_class("mechanism_model_msgs/srv/ComputeIK_Request")()
    KC = __import__("mechanism_model_ros.transports.typegen", fromlist=["message_class"]).message_class(
        "mechanism_model_msgs/msg/KinematicConstraint")
    req.constraints = [KC(link_name="arm_turret", kind=KC.POSITION)]
    req.timeout.sec = 2
    base._set_arrival(_time.monotonic() - 3.0)          # arrived 3 s ago, budget 2 s
    try:
        rep = server.handler(req, server.rep_cls())
    finally:
        base._set_arrival(None)
    assert rep.error_code.val == -6 and "in the queue" in rep.message and rep.iterations == 0


def test_ik_avoiding_collisions_without_the_collision_extra_says_what_to_install(bus, monkeypatch):
    """An rclpy server started from a ROS Python without coal: avoid_collisions gets FAILURE naming the extra, not
    an "internal error", and the next request is served."""
    import sys
    from mechanism_model_core.collision import coal_backend
    from mechanism_model_ros.transports.typegen import message_class
    monkeypatch.setattr(coal_backend, "_coal", None)
    monkeypatch.setitem(sys.modules, "coal", None)      # `import coal` raises ImportError: as if not installed
    _served(bus, ("kinematics_server",))
    client = _client(bus, "compute_ik", "mechanism_model_msgs/srv/ComputeIK")
    req = client.request()
    KC = message_class("mechanism_model_msgs/msg/KinematicConstraint")
    req.constraints = [KC(link_name="arm_turret", kind=KC.POSITION)]
    req.constraints[0].target.position.x, req.constraints[0].target.position.z = 0.5, 0.2
    req.avoid_collisions = True
    rep = client.call(req)
    assert rep.error_code.val == 99999, rep.message
    assert rep.message.startswith("not available in this installation") and "mechanism_model_core[collision]" in \
        rep.message
    req.avoid_collisions = False
    assert client.call(req).error_code.val == 1


def test_ik_beyond_its_gate_is_answered_busy(bus):
    served, nodes = _served(bus, ("kinematics_server",), {"ik_max_concurrent": 1, "ik_max_queued": 0})
    svc = bus.services["/compute_ik"]
    assert svc.gate.try_enter()                          # one request in flight
    try:
        client = _client(bus, "compute_ik", "mechanism_model_msgs/srv/ComputeIK")
        rep = client.call(client.request())
    finally:
        svc.gate.leave()
    assert rep.error_code.val == -50 and "busy" in rep.message
    assert nodes["kinematics_server"].busy == 1


def test_joint_state_cache_repeated_names_take_the_same_checks():
    """The cache checks a message that repeats the last clean message's names by its positions alone: the result
    must be what the full checks give, message after message (NaN and infinite positions, lengths that do not
    match, repeated and unknown names, sums that overflow), as a reference built from the pure parser says."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mechanism_model_ros.conversions import BadMessage, joint_state_positions
    from mechanism_model_ros.joint_state_cache import JointStateCache
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode

    known = list(MODEL.coordinate_names)
    name_lists = [known[:6], known[:6], known[3:9], known[:2] + ["not_a_joint"], [known[0], known[0]]]
    special = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308])
    step = st.tuples(st.integers(0, len(name_lists) - 1), st.lists(st.floats(-3, 3), min_size=6, max_size=6),
                     st.one_of(st.none(), st.tuples(st.integers(0, 5), special)), st.booleans())

    @settings(max_examples=60, deadline=None)
    @given(steps=st.lists(step, min_size=1, max_size=12))
    def run(steps):
        node = MemoryNode("cache", bus=MemoryBus())
        cache = JointStateCache(node, MODEL)
        JS = node.message_class("sensor_msgs/msg/JointState")
        latest, rejected = {}, 0
        for k, (which, numbers, odd, short) in enumerate(steps):
            names = list(name_lists[which])
            pos = numbers[:len(names)]
            if odd is not None and odd[0] < len(pos):
                pos[odd[0]] = odd[1]
            if short:
                pos = pos[:-1]
            msg = JS(name=names, position=pos)
            msg.header.stamp.sec = 100 + k
            try:
                values, _, _ = joint_state_positions(msg, set(known), skip_nonfinite=True)
                if values:
                    latest.update(values)
                else:
                    rejected += 1
            except BadMessage:
                rejected += 1
            cache.on_message(msg)
            assert cache.latest() == latest, (k, names, pos)
            assert cache.messages_rejected == rejected
    run()


def _first_ik_request_builds(bus, monkeypatch, params):
    """``(node, reply, builds)`` of a fresh kinematics server's first IK request (builds counted by
    test/core/ik_builds.py): the Rocky 8 arm group's tool at the pose of random in-limit arm joints, in the
    ground frame, the arm's joints active (the rest locked)."""
    from core import ik_builds
    from core.robots import SAFETY
    from mechanism_model_core.io.motor_groups import load_motor_groups
    from mechanism_model_ros.conversions import fill_pose
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryNode
    from mechanism_model_ros.transports.typegen import message_class
    m = load_model(default_model_path())              # never solved on: its caches are all to be built
    params = {"max_ik_timeout": SAFETY, **(params or {})}            # the IK budget a safety net
    node = create("kinematics_server", MemoryNode("kinematics_server", parameters=params, bus=bus), Served(m, "test"))
    arm = load_motor_groups(m)["arm_controller"]
    q = np.array(m.home, dtype=float)
    rng = np.random.default_rng(7)
    for name, lo, hi in zip(arm.joint_names, arm.lower, arm.upper):
        q[m.coordinate_index(name)] = lo + rng.random() * (hi - lo)
    client = _client(bus, "compute_ik", "mechanism_model_msgs/srv/ComputeIK")
    req = client.request()
    req.ik_link_names = ["arm_tool"]
    stamped = message_class("geometry_msgs/msg/PoseStamped")()
    fill_pose(stamped.pose, forward_kinematics(m, q).pose("arm_tool"))
    req.pose_stamped_vector = [stamped]
    req.active_joints = list(arm.joint_names)
    req.timeout.sec = int(SAFETY)
    built = ik_builds.install(monkeypatch)
    return node, client.call(req, 2 * SAFETY), built


def test_the_kinematics_server_prepares_ik_at_start_so_the_first_request_builds_nothing(bus, monkeypatch):
    """Issue 20: "the first solve on a model is as fast as the thousandth". The server built IK's caches for its
    motor groups' tip frames (prepare_ik) before offering the service: its first IK request builds nothing and
    is answered; without ``ik_prepare`` the same request builds the closed form, the structure, the engine."""
    node, rep, built = _first_ik_request_builds(bus, monkeypatch, None)
    assert rep.error_code.val == 1, rep.message
    assert {p.frame for p in node.prepared} >= {"arm_tool", "arm_turret", "mast_camera"}
    assert not built, dict(built)
    from mechanism_model_ros.transports.memory import MemoryBus
    node, rep, built = _first_ik_request_builds(MemoryBus(), monkeypatch, {"ik_prepare": False})
    assert rep.error_code.val == 1, rep.message
    assert node.prepared == [] and built["EAIKSolver"] == 1 and built["ProblemStructure"] >= 1, dict(built)


def test_ik_prepare_frames_names_the_frames_and_an_unknown_one_is_a_bad_parameter(bus):
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryNode
    m = load_model(default_model_path())
    node = create("kinematics_server", MemoryNode("k", parameters={"ik_prepare_frames": ["mast_head"]}, bus=bus),
                  Served(m, "test"))
    assert [(p.frame, p.locked) for p in node.prepared] == [("mast_head", ())]
    from mechanism_model_ros.transports.memory import MemoryBus
    node = create("kinematics_server", MemoryNode("k3", parameters={"ik_prepare_kinds": ["pose"]}, bus=MemoryBus()),
                  Served(load_model(default_model_path()), "test"))
    assert node.prepared
    with pytest.raises(ValueError, match="ik_prepare_kinds"):
        create("kinematics_server", MemoryNode("k4", parameters={"ik_prepare_kinds": ["pose", "speed"]}, bus=bus),
               Served(m, "test"))
    with pytest.raises(ValueError, match="ik_prepare_frames.*no_such_frame"):
        create("kinematics_server", MemoryNode("k2", parameters={"ik_prepare_frames": ["no_such_frame"]},
                                               bus=bus), Served(m, "test"))


def test_a_failing_ik_preparation_is_logged_and_the_server_serves(bus, monkeypatch):
    """prepare_ik is a head start: should it fail on some group's frames (an error of any kind), the server logs it
    and offers its services as without it."""
    from mechanism_model_ros import kinematics_server
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryNode

    def broken(*a, **k):
        raise RuntimeError("no luck")
    monkeypatch.setattr(kinematics_server, "prepare_ik", broken)
    node = create("kinematics_server", MemoryNode("k", bus=bus), Served(load_model(default_model_path()), "test"))
    assert node.prepared == [] and "/compute_ik" in bus.services
