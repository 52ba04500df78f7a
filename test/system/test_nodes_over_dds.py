"""The nodes over real DDS (loopback, multicast off, unique domain): ``mechanism_model_ros.serve`` runs in its
own process on the default rover model, over the Cyclone transport and over rclpy on ROS 2 Humble and Jazzy
(one set of tests, parametrized by the ``served`` fixture); this side uses Cyclone DDS with message classes
built from rosbags' definitions, so over rclpy every test is also an interop test. Transforms and service answers are checked against the core's kinematics, IK
solutions by forward kinematics."""

import threading
import time

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, jacobian, load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import (configure_this_process, start_serve, stop, transform_to_matrix, unique_domain_id,
                             wait_for)

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())
ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]


from system.serving import TRANSPORTS, Server  # noqa: E402


def _serve(transport, env=None):
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    server = Server(transport, domain, env=env)
    ctx = CycloneContext(domain)
    node = CycloneNode("tester", context=ctx)
    fk = node.create_client("compute_fk", "mechanism_model_msgs/srv/ComputeFK")
    try:
        assert fk.wait_for_service(60), "the server did not come up:\n" + server.stop()
    except BaseException:
        node.close()
        ctx.close()
        raise
    return {"node": node, "ctx": ctx, "proc": server, "domain": domain, "fk": fk, "transport": transport}


def _unserve(served):
    served["node"].close()
    served["ctx"].close()
    text = served["proc"].stop()
    assert "Traceback" not in text, text


@pytest.fixture(scope="module", params=TRANSPORTS)
def served(request):
    s = _serve(request.param)
    yield s
    _unserve(s)


@pytest.fixture(scope="module")
def served_cyclone():
    s = _serve("cyclone", env={"ROS_DISTRO": "jazzy"})      # ros_discovery_info in Jazzy's layout
    yield s
    _unserve(s)


def _pose_to_matrix(p):
    from scipy.spatial.transform import Rotation
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat([p.orientation.x, p.orientation.y, p.orientation.z,
                                    p.orientation.w]).as_matrix()
    T[:3, 3] = p.position.x, p.position.y, p.position.z
    return T


def _compose(edges, root):
    world = {root: np.eye(4)}

    def pose(f):
        if f not in world:
            p, T = edges[f]
            world[f] = pose(p) @ T
        return world[f]
    return {f: pose(f) for f in edges}


def _prime(pub, JS, seen_stamp, stamp_sec=1, timeout=15.0):
    """Publish a harmless joint state until its /tf update comes back: DDS discovery is asymmetric, the
    server's reader may match our writer a little after our writer matched it, and the first samples would
    be lost. ``seen_stamp(sec)`` tells whether a /tf message with that stamp arrived."""
    m = JS()
    m.header.stamp.sec = stamp_sec
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pub.publish(m)
        if wait_for(lambda: seen_stamp(stamp_sec), 0.2):
            return True
    return False


def _stamps(tf):
    return lambda sec: any(m.transforms and m.transforms[0].header.stamp.sec == sec for m in tf)


def _tf_and_joint_states(node, prime_stamp):
    """A /tf subscription (the list it fills), a joint_states publisher the server hears (primed with an
    empty message stamped ``prime_stamp``) and the JointState class."""
    from mechanism_model_ros import qos
    tf = []
    tf_reader = node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf.append)
    pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    JS = node.message_class("sensor_msgs/msg/JointState")
    assert wait_for(lambda: pub.subscription_count >= 1 and tf_reader.handle.get_matched_publications(), 15)
    assert _prime(pub, JS, _stamps(tf), prime_stamp)
    return tf, pub, JS


def _subscribe_static(node):
    from mechanism_model_ros import qos
    static, desc = [], []
    node.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER, static.append)
    node.create_subscription("robot_description", "std_msgs/msg/String", qos.LATCHED, desc.append)
    return static, desc


def _same_tf(a, b) -> bool:
    return [(t.header.frame_id, t.child_frame_id, t.header.stamp.sec, t.header.stamp.nanosec) for t in a.transforms] \
        == [(t.header.frame_id, t.child_frame_id, t.header.stamp.sec, t.header.stamp.nanosec) for t in b.transforms]


def test_late_subscriber_gets_tf_static_and_robot_description(served):
    from mechanism_model_core.io.urdf import loads_urdf
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    time.sleep(1.0)          # join well after the server published both
    ctx = CycloneContext(served["domain"])
    late = CycloneNode("late", context=ctx)
    try:
        static, desc = _subscribe_static(late)
        assert wait_for(lambda: static and desc, 15)
        time.sleep(0.5)            # a second write (a double publish) would come within this
        # Count WRITES, not samples: one writer (publication handle) and one write (its source timestamp). The
        # state publisher writes /tf_static once; a second write or a second writer fails here, while a DDS
        # redelivery of that one write to this late joiner (Cyclone's historical data for a transient-local
        # reader; not reproduced in 10 isolated runs per distro) is told apart in the message.
        writes = [(m.sample_info.publication_handle, m.sample_info.source_timestamp) for m in static]
        assert len(set(writes)) == 1, ("all fixed transforms come in one message, written once by one writer; "
                                       f"got {len(static)} sample(s) from (writer, write time) {writes}")
        assert all(_same_tf(m, static[0]) for m in static), "a repeated sample differs from the first"
        children = {t.child_frame_id for t in static[0].transforms}
        expected = {b.name for b in MODEL.bodies[1:] if b.joint.dof == 0} | {
            f for b in MODEL.bodies for f in b.frames}
        assert children == expected
        urdf_model = loads_urdf(desc[0].data)
        rng = np.random.default_rng(3)
        q = MODEL.random_configuration(rng)
        fk_a = forward_kinematics(MODEL, q)
        fk_b = forward_kinematics(urdf_model, dict(zip(MODEL.coordinate_names, q)))
        for f in MODEL.body_names[1:]:
            np.testing.assert_allclose(fk_b.pose(f), fk_a.pose(f), atol=1e-9, err_msg=f)
    finally:
        late.close()
        ctx.close()


def test_transforms_equal_forward_kinematics(served):
    """Two publishers each report some joints (arm; mobility); every other joint follows its coupling or
    stays home; the transforms on /tf and /tf_static compose to the core's forward kinematics."""
    from mechanism_model_ros import qos
    node = served["node"]
    static, _ = _subscribe_static(node)
    tf = []
    tf_reader = node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf.append)
    JS = node.message_class("sensor_msgs/msg/JointState")
    arm_pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    mob_pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    assert wait_for(lambda: arm_pub.subscription_count >= 1 and static and tf_reader.handle.get_matched_publications(),
                    15)
    assert _prime(arm_pub, JS, _stamps(tf)) and _prime(mob_pub, JS, _stamps(tf), 2)
    rng = np.random.default_rng(7)
    for trial in range(3):
        arm = dict(zip(ARM, rng.uniform(-1, 1, len(ARM))))
        mob = {"left_rocker": rng.uniform(-0.3, 0.3), "left_front_steer": rng.uniform(-1, 1),
               "chassis.x": rng.uniform(-2, 2), "chassis.yaw": rng.uniform(-3, 3),
               "chassis.pitch": rng.uniform(-0.3, 0.3)}
        m1 = JS(name=list(mob), position=list(mob.values()))
        m1.header.stamp.sec = 1000 + 2 * trial
        mob_pub.publish(m1)
        m2 = JS(name=list(arm), position=list(arm.values()))
        m2.header.stamp.sec = 1001 + 2 * trial
        arm_pub.publish(m2)
        stamp = 1001 + 2 * trial
        assert wait_for(lambda: any(m.transforms and m.transforms[0].header.stamp.sec == stamp for m in tf), 10)
        msg = [m for m in tf if m.transforms[0].header.stamp.sec == stamp][-1]
        assert all(t.header.stamp.sec == stamp for t in msg.transforms)
        edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform)) for t in msg.transforms}
        edges.update({t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform))
                      for t in static[-1].transforms})
        poses = _compose(edges, MODEL.ground)
        fk = forward_kinematics(MODEL, {**mob, **arm})     # couplings filled by the core
        for f in MODEL.frame_names[1:]:
            np.testing.assert_allclose(poses[f], fk.pose(f), atol=1e-9, err_msg=f)


def _joint_state(node, q):
    JS = node.message_class("sensor_msgs/msg/JointState")
    return JS(name=list(MODEL.coordinate_names), position=[float(v) for v in q])


def _client_worker(domain, seed, results, errors):
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    node = CycloneNode(f"client{seed}", context=ctx)
    try:
        fk = node.create_client("compute_fk", "mechanism_model_msgs/srv/ComputeFK")
        jac = node.create_client("compute_jacobian", "mechanism_model_msgs/srv/ComputeJacobian")
        ik = node.create_client("compute_ik", "mechanism_model_msgs/srv/ComputeIK")
        for c in (fk, jac, ik):
            assert c.wait_for_service(20)
        rng = np.random.default_rng(seed)
        for _ in range(4):
            q = MODEL.random_configuration(rng)
            # FK of every arm frame, relative to the chassis
            r = fk.request()
            r.header.frame_id = "chassis"
            r.fk_link_names = ["arm_turret", "mast_camera", "left_front_wheel"]
            r.robot_state = _joint_state(node, q)
            rep = fk.call(r, 20)
            assert rep.error_code.val == 1, rep.message
            ref = forward_kinematics(MODEL, q)
            for name, ps in zip(rep.fk_link_names, rep.pose_stamped):
                assert ps.header.frame_id == "chassis"
                np.testing.assert_allclose(_pose_to_matrix(ps.pose), ref.pose(name, relative_to="chassis"),
                                           atol=1e-9)
            # Jacobian
            r = jac.request()
            r.link_name, r.reference_frame, r.convention = "arm_turret", "chassis", "LOCAL"
            r.robot_state = _joint_state(node, q)
            rep = jac.call(r, 20)
            assert rep.error_code.val == 1, rep.message
            J = np.array(rep.data).reshape(rep.rows, rep.cols)
            assert list(rep.joint_names) == list(MODEL.coordinate_names)
            np.testing.assert_allclose(J, jacobian(MODEL, q, "arm_turret", relative_to="chassis",
                                                   convention="LOCAL"), atol=1e-9)
            # IK: reach the arm pose of another random configuration, from the current one
            q_goal = MODEL.random_configuration(rng)
            target = forward_kinematics(MODEL, q_goal).pose("arm_turret", relative_to="chassis")
            r = ik.request()
            r.robot_state = _joint_state(node, q)
            r.ik_link_names = ["arm_turret"]
            PS = node.message_class("geometry_msgs/msg/PoseStamped")
            ps = PS()
            ps.header.frame_id = "chassis"
            from mechanism_model_ros.conversions import fill_pose
            fill_pose(ps.pose, target)
            r.pose_stamped_vector = [ps]
            r.active_joints = ARM
            # the budget a safety net: the server's cap (max_ik_timeout, 10 s), not the 2 s a loaded machine can
            # miss (the test counts successes); the call's wait covers one request queued ahead of this one
            r.timeout.sec = 10
            rep = ik.call(r, 60)
            if rep.error_code.val == 1:
                qs = dict(zip(rep.solution.name, rep.solution.position))
                got = forward_kinematics(MODEL, qs).pose("arm_turret", relative_to="chassis")
                np.testing.assert_allclose(got, target, atol=1e-5)
                # joints outside active_joints did not move
                for n in MODEL.independent_coordinates:
                    if n not in ARM:
                        assert qs[n] == pytest.approx(q[MODEL.coordinate_index(n)], abs=1e-12)
            else:
                assert rep.error_code.val in (-31, -6), rep.message
            results.append(rep.error_code.val)
    except BaseException as exc:   # report into the main thread
        errors.append(exc)
    finally:
        node.close()
        ctx.close()


def test_services_with_four_concurrent_clients(served):
    results, errors = [], []
    threads = [threading.Thread(target=_client_worker, args=(served["domain"], s, results, errors))
               for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    assert len(results) == 16
    assert results.count(1) >= 12, results      # a random 5-DOF arm target is reachable most of the time


def _call(client, fill, timeout=20):
    r = client.request()
    fill(r)
    return client.call(r, timeout)


def test_every_bad_request_gets_its_error_code_and_the_node_keeps_serving(served):
    node = served["node"]
    fk = served["fk"]
    jac = node.create_client("compute_jacobian", "mechanism_model_msgs/srv/ComputeJacobian")
    ik = node.create_client("compute_ik", "mechanism_model_msgs/srv/ComputeIK")
    assert jac.wait_for_service(20) and ik.wait_for_service(20)
    KC = node.message_class("mechanism_model_msgs/msg/KinematicConstraint")
    PS = node.message_class("geometry_msgs/msg/PoseStamped")

    def state(names, pos):
        def f(r):
            r.robot_state.name, r.robot_state.position = names, pos
        return f

    cases = [
        (fk, lambda r: setattr(r, "fk_link_names", ["no_such_link"]), -18),
        (fk, lambda r: setattr(r.header, "frame_id", "no_such_frame"), -21),
        (fk, state(["arm_yaw"], [float("nan")]), -17),
        (fk, state(["arm_yaw"], [float("inf")]), -17),
        (fk, state(["arm_yaw", "arm_elbow"], [0.1]), -17),
        (fk, state(["no_such_joint"], [0.1]), -17),
        (fk, state(["arm_yaw", "arm_yaw"], [0.1, 0.2]), -17),
        (jac, lambda r: None, -18),                                     # empty request: no link
        (jac, lambda r: setattr(r, "link_name", "nowhere"), -18),
        (jac, lambda r: (setattr(r, "link_name", "arm_turret"), setattr(r, "reference_frame", "x")), -21),
        (jac, lambda r: (setattr(r, "link_name", "arm_turret"), setattr(r, "convention", "SIDEWAYS")),
         99999),
        (ik, lambda r: None, -16),                                      # empty request: no constraint
        (ik, lambda r: setattr(r, "ik_link_names", ["arm_turret"]), -16),   # no pose for it
        (ik, lambda r: (setattr(r, "ik_link_names", ["nowhere"]), setattr(r, "pose_stamped_vector", [PS()])),
         -18),
        (ik, lambda r: setattr(r, "constraints", [KC(link_name="arm_turret", kind=9)]), -16),
        (ik, lambda r: setattr(r, "constraints", [KC(link_name="ghost")]), -18),
        (ik, lambda r: setattr(r, "constraints", [KC(link_name="arm_turret", reference_frame="ghost")]), -21),
        (ik, lambda r: setattr(r, "constraints", [KC(link_name="arm_turret", weights=[float("nan")] * 6)]),
         -16),
        (ik, lambda r: setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION,
                                                      target=PS().pose.__class__(
                                                          position=PS().pose.position.__class__(
                                                              x=float("nan"))))]), -16),
        (ik, lambda r: (setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.ORIENTATION)]),
                        setattr(r.constraints[0].target.orientation, "w", 0.0)), -16),   # zero quaternion
        (ik, lambda r: (setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION)]),
                        setattr(r, "active_joints", ["arm_yaw", "bogus"])), -15),
        (ik, lambda r: (setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION)]),
                        state(["arm_yaw"], [float("nan")])(r)), -17),
        (ik, lambda r: (setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION)]),
                        setattr(r.timeout, "sec", -1)), -16),                      # negative timeout
        # an infinite tolerance would make any target "reached": 100 m away, arm only
        (ik, lambda r: (setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION,
                                                      position_tolerance=float("inf"))]),
                        setattr(r.constraints[0].target.position, "x", 100.0),
                        setattr(r, "active_joints", ARM)), -16),
        (ik, lambda r: setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION,
                                                     orientation_tolerance=-0.1)]), -16),
        # huge lists are refused before any work
        (fk, lambda r: setattr(r, "fk_link_names", ["arm_turret"] * 10_001), 99999),
        (ik, lambda r: (setattr(r, "ik_link_names", ["arm_turret"] * 10_001),
                        setattr(r, "pose_stamped_vector", [PS()] * 10_001)), -16),
        (fk, state([f"j{i}" for i in range(100_000)], [0.0] * 100_000), -17),
        # unreachable for the arm alone: 100 m away (the floating chassis is held)
        (ik, lambda r: (setattr(r, "constraints", [KC(link_name="arm_turret", kind=KC.POSITION)]),
                        setattr(r.constraints[0].target.position, "x", 100.0),
                        setattr(r, "active_joints", ARM),
                        setattr(r.timeout, "nanosec", 200_000_000)), (-31, -6)),
    ]
    for i, (client, fill, code) in enumerate(cases):
        rep = _call(client, fill)
        codes = code if isinstance(code, tuple) else (code,)
        assert rep.error_code.val in codes, (i, rep.error_code.val, rep.message)
        assert rep.message, i
    # still serving, and correct
    rep = _call(fk, lambda r: setattr(r, "fk_link_names", ["arm_turret"]))
    assert rep.error_code.val == 1
    assert served["proc"].poll() is None


def test_bad_joint_states_do_not_stop_the_state_publisher(served):
    tf, pub, JS = _tf_and_joint_states(served["node"], 1)
    for bad in (JS(name=["arm_yaw"], position=[float("nan")]), JS(name=["arm_yaw", "arm_elbow"], position=[1.0]),
                JS(name=["arm_yaw", "arm_yaw"], position=[1.0, 2.0])):
        bad.header.stamp.sec = 5000
        pub.publish(bad)
    good = JS(name=["arm_yaw", "unknown_joint"], position=[0.25, 1.0])   # unknown names are ignored
    good.header.stamp.sec = 5001
    pub.publish(good)
    assert wait_for(lambda: any(m.transforms[0].header.stamp.sec == 5001 for m in tf if m.transforms), 10)
    assert not any(m.transforms[0].header.stamp.sec == 5000 for m in tf if m.transforms)
    assert served["proc"].poll() is None


def test_nan_positions_as_joint_state_broadcaster_sends_them_keep_the_other_joints(served):
    """joint_state_broadcaster fills the position of a joint without a position interface (a velocity-
    controlled wheel) with NaN: those joints keep their last value, the message's other joints apply."""
    tf, pub, JS = _tf_and_joint_states(served["node"], 7000)
    drives = [c for c in MODEL.coordinate_names if c.endswith("_drive")]
    before = JS(name=drives + ["chassis.x"], position=[0.5] * len(drives) + [0.0])
    before.header.stamp.sec = 7001
    pub.publish(before)
    arm = dict(zip(ARM, [0.2, -0.4, 0.6, -0.3, 0.1]))
    jsb = JS(name=ARM + drives, position=list(arm.values()) + [float("nan")] * len(drives),
             velocity=[0.0] * len(ARM) + [1.0] * len(drives))
    jsb.header.stamp.sec = 7002
    pub.publish(jsb)
    assert wait_for(lambda: _stamps(tf)(7002), 10)
    msg = [m for m in tf if m.transforms and m.transforms[0].header.stamp.sec == 7002][-1]
    edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform)) for t in msg.transforms}
    expected = forward_kinematics(MODEL, {**arm, **{d: 0.5 for d in drives}})
    parent_of = {b.name: b.parent for b in MODEL.bodies[1:]}
    moved_by = {c: b.name for b in MODEL.bodies[1:] for c in b.joint.coordinate_names}
    for c in drives + ["arm_turret"]:
        body = moved_by[c]
        np.testing.assert_allclose(edges[body][1], np.linalg.inv(expected.pose(parent_of[body]))
                                   @ expected.pose(body), atol=1e-9, err_msg=c)
    assert served["proc"].poll() is None


def test_a_repeated_stamp_is_not_published_again_and_its_values_follow(served):
    """tf2 ignores a transform whose stamp it already has (TF_REPEATED_DATA): a joint_states message stamped
    like the previous one yields no /tf message; its values go out with the next stamp. (Messages the node
    finds queued together are merged and published once, with the newest stamp: 8001 may not be published
    at all, or carry the second message's value.)"""
    tf, pub, JS = _tf_and_joint_states(served["node"], 8000)
    first = JS(name=["arm_yaw"], position=[0.1])
    first.header.stamp.sec = 8001
    again = JS(name=["arm_yaw"], position=[0.2])
    again.header.stamp.sec = 8001
    later = JS(name=["mast_pan"], position=[0.3])
    later.header.stamp.sec = 8002
    for m in (first, again, later):
        pub.publish(m)
    assert wait_for(lambda: _stamps(tf)(8002), 10)
    time.sleep(0.2)
    assert sum(1 for m in tf if m.transforms and m.transforms[0].header.stamp.sec == 8001) <= 1
    by_stamp = {m.transforms[0].header.stamp.sec: m for m in tf if m.transforms}
    moved_by = {c: b.name for b in MODEL.bodies[1:] for c in b.joint.coordinate_names}
    parent_of = {b.name: b.parent for b in MODEL.bodies[1:]}

    def edge(stamp, coordinate):
        body = moved_by[coordinate]
        return next(transform_to_matrix(t.transform) for t in by_stamp[stamp].transforms if t.child_frame_id == body)

    first_values = {"arm_yaw": 0.1}
    if 8001 in by_stamp and not np.allclose(edge(8001, "arm_yaw"), np.linalg.inv(forward_kinematics(
            MODEL, first_values).pose(parent_of[moved_by["arm_yaw"]])) @ forward_kinematics(
            MODEL, first_values).pose(moved_by["arm_yaw"]), atol=1e-9):
        first_values = {"arm_yaw": 0.2}         # both 8001 messages merged in one wake-up: the later value
    for stamp, values in ((8001, first_values), (8002, {"arm_yaw": 0.2, "mast_pan": 0.3})):
        if stamp not in by_stamp:
            continue
        fk = forward_kinematics(MODEL, values)
        for c in values:
            body = moved_by[c]
            np.testing.assert_allclose(edge(stamp, c), np.linalg.inv(fk.pose(parent_of[body])) @ fk.pose(body),
                                       atol=1e-9, err_msg=f"{stamp} {c}")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_four_bar_passive_joints_close_the_loop(transport):
    """Only the crank is reported; the state publisher solves coupler and rocker so that, in the
    transforms it publishes, closure_a and closure_b coincide (the loop is closed), and the rocker angle
    matches the four-bar's closed-form solution."""
    import math
    import os
    from ros.dds_helpers import ROS_PKG
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    domain = unique_domain_id()
    configure_this_process(domain)
    cfg = os.path.join(os.path.dirname(ROS_PKG), "config", "four_bar.yaml")
    # the closure's time budget (20 ms in the file: a real-time choice) becomes a safety net far above the
    # solve's time and an iteration budget bounds it instead: on a busy machine a time budget would end the
    # solve early and the previous passive angles would be published, whatever the machine's load decides
    proc = Server(transport, domain, "--params-file", cfg, "-p", "loop_closure_timeout:=60.0",
                  "-p", "loop_closure_max_iterations:=500")
    ctx = CycloneContext(domain)
    node = CycloneNode("fourbar_tester", context=ctx)
    try:
        static, _ = _subscribe_static(node)
        tf = []
        tf_reader = node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf.append)
        pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
        assert wait_for(lambda: pub.subscription_count >= 1 and static and tf_reader.handle.get_matched_publications(),
                        60), "the server did not come up"
        JS = node.message_class("sensor_msgs/msg/JointState")
        m = JS(name=["crank"], position=[math.pi / 2])
        m.header.stamp.sec = 1
        assert _prime(pub, lambda: m, _stamps(tf))
        for k, crank in enumerate(np.linspace(math.pi / 2, math.pi / 2 + 0.6, 4)):
            m = JS(name=["crank"], position=[float(crank)])
            m.header.stamp.sec = 7000 + k
            pub.publish(m)
            assert wait_for(lambda: any(x.transforms[0].header.stamp.sec == 7000 + k for x in tf if x.transforms), 10)
            msg = [x for x in tf if x.transforms and x.transforms[0].header.stamp.sec == 7000 + k][-1]
            edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform)) for t in msg.transforms}
            edges.update({t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform))
                          for t in static[-1].transforms})
            poses = _compose(edges, "ground")
            np.testing.assert_allclose(poses["closure_a"][:3, 3], poses["closure_b"][:3, 3], atol=1e-5)
            # closed form: B = 0.1 (cos c, sin c); C on the circle |C - D| = 0.4 with |C - B| = 0.5
            B = 0.1 * np.array([math.cos(crank), math.sin(crank)])
            D = np.array([0.4, 0.0])
            d = np.linalg.norm(D - B)
            a = (0.5 ** 2 - 0.4 ** 2 + d ** 2) / (2 * d)
            h = math.sqrt(0.5 ** 2 - a ** 2)
            P = B + a * (D - B) / d
            perp = np.array([-(D - B)[1], (D - B)[0]]) / d
            candidates = [P + h * perp, P - h * perp]
            C = min(candidates, key=lambda c: np.linalg.norm(c - np.array([0.4, 0.4])))   # upper branch
            np.testing.assert_allclose(poses["closure_b"][:2, 3], C, atol=1e-5)
    finally:
        node.close()
        ctx.close()
        text = proc.stop()
    assert "Traceback" not in text, text


def test_ros_discovery_info_lists_the_nodes_and_their_endpoints(served_cyclone):
    """What `ros2 node list` reads: the server's participant announces both nodes, and the writer GIDs of
    the state publisher include the GUID of the DDS writer of rt/tf (found through DDS discovery)."""
    from cyclonedds.builtin import BuiltinDataReader, BuiltinTopicDcpsPublication
    from cyclonedds.topic import Topic
    from rosbags.typesys import Stores, get_typestore
    from mechanism_model_ros.qos import QoS
    from mechanism_model_ros.transports.cyclone import _reader, dds_qos
    from mechanism_model_ros.transports.typegen import message_class
    ctx = served_cyclone["ctx"]
    Info = message_class("rmw_dds_common/msg/ParticipantEntitiesInfo", get_typestore(Stores.ROS2_JAZZY))
    reader = _reader(ctx.participant, Topic(ctx.participant, "ros_discovery_info", Info),
                     dds_qos(QoS(depth=1, transient_local=True)))
    infos = {}

    def poll():
        for s in reader.take(N=50):
            if getattr(s, "sample_info", None) is not None:
                infos[bytes(s.gid.data)] = s
        return any({n.node_name for n in i.node_entities_info_seq} >= {"state_publisher", "kinematics_server"}
                   for i in infos.values())
    assert wait_for(poll, 15)
    info = next(i for i in infos.values()
                if "state_publisher" in {n.node_name for n in i.node_entities_info_seq})
    sp = next(n for n in info.node_entities_info_seq if n.node_name == "state_publisher")
    assert sp.node_namespace == "/"
    writer_gids = {bytes(g.data) for g in sp.writer_gid_seq}
    pubs = BuiltinDataReader(ctx.participant, BuiltinTopicDcpsPublication)
    tf_writers = set()

    def find():
        for ep in pubs.take(N=200):
            if getattr(ep, "topic_name", None) == "rt/tf":
                tf_writers.add(ep.key.bytes)
        return bool(tf_writers & writer_gids)
    assert wait_for(find, 15), (tf_writers, writer_gids)
    assert all(len(g) == 16 for g in writer_gids)


def test_compute_statics_over_dds(served):
    """The default serve also offers compute_statics: wheel loads of the rover and the torques of the arm
    equal the core's, and a bad request gets its code."""
    from mechanism_model_core.statics import contact_loads, wheel_contacts

    node = served["node"]
    st = node.create_client("compute_statics", "mechanism_model_msgs/srv/ComputeStatics")
    assert st.wait_for_service(20)
    contacts = wheel_contacts(MODEL)

    # every independent coordinate given: other tests of this module leave their joint_states behind
    values = dict(zip(MODEL.independent_coordinates, [0.0] * len(MODEL.independent_coordinates)))
    values.update({"arm_shoulder": 0.5, "chassis.z": 0.0})

    def fill(r):
        r.robot_state.name, r.robot_state.position = list(values), list(values.values())
        r.contact_links = [c.frame for c in contacts]

    rep = _call(st, fill)
    assert rep.error_code.val == 1, rep.message
    loads = contact_loads(MODEL, MODEL.configuration(values), contacts)
    np.testing.assert_allclose(rep.normal_forces, loads.normal_forces, atol=1e-9)
    np.testing.assert_allclose(rep.effort, loads.torques, atol=1e-9)
    assert rep.equilibrium and rep.stability_margin > 0
    bad = _call(st, lambda r: setattr(r, "contact_links", ["nowhere"]))
    assert bad.error_code.val == -18 and "nowhere" in bad.message
    # every error code of the service crosses DDS with its message, and the node keeps serving
    from mechanism_model_ros.error_codes import ErrorCodes

    def frictionless(r):
        fill(r)
        r.friction_coefficients = [-0.1] * len(contacts)

    def unknown_joint(r):
        r.robot_state.name, r.robot_state.position = ["no_such_joint"], [0.0]

    def bad_axes(r):
        WS = node.message_class("geometry_msgs/msg/WrenchStamped")
        w = WS()
        w.header.frame_id = "no_such_frame"
        r.wrench_links, r.wrenches = ["arm_tool"], [w]

    for fill_bad, code in ((lambda r: setattr(r, "gravity", [0.0, float("nan"), -9.81]),
                            ErrorCodes.INVALID_GOAL_CONSTRAINTS),
                           (frictionless, ErrorCodes.INVALID_GOAL_CONSTRAINTS),
                           (unknown_joint, ErrorCodes.INVALID_ROBOT_STATE),
                           (bad_axes, ErrorCodes.FRAME_TRANSFORM_FAILURE)):
        bad = _call(st, fill_bad)
        assert bad.error_code.val == code and bad.message and list(bad.effort) == [], bad.message
    again = _call(st, fill)
    assert again.error_code.val == 1
    np.testing.assert_allclose(again.normal_forces, loads.normal_forces, atol=1e-9)
