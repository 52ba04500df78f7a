"""The state publisher's merging and ordering (mechanism_model_ros.state_merge), alone and in the node over the
in-memory transport with a manual clock: a backlog is published once with the newest stamp, stamps never go
backwards (start-up placeholder included), several sources merge by joint name, a silent source is reported,
publish_frequency paces, late joiners get the whole robot with no joint_states source."""

import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import transform_to_matrix

pytestmark = pytest.mark.ros

MODEL = load_model(default_model_path())
ARM = ("arm_yaw", "arm_shoulder", "arm_elbow")
WHEELS = ("left_front_steer", "right_front_steer")


def _merger():
    from mechanism_model_ros.state_merge import StateMerger
    return StateMerger(clock_tolerance=1.0)


def test_a_backlog_is_one_publication_with_the_newest_stamp_counting_what_it_merged():
    m = _merger()
    for i in range(7):
        m.add(ARM, (100, i * 1000), arrival=0.001 * i)
    pub = m.take()
    assert pub.stamp == (100, 6000) and pub.merged == 7 and not pub.placeholder
    assert m.take() is None                          # nothing new
    assert m.publications == 1 and m.max_merged == 7 and m.inputs == 7


def test_a_stamp_not_newer_than_the_last_publication_is_held_until_a_newer_one():
    m = _merger()
    m.add(ARM, (100, 5), 0.0)
    assert m.take().stamp == (100, 5)
    m.add(WHEELS, (100, 5), 0.1)                     # same stamp (two publishers on one clock tick)
    assert m.take() is None
    m.add(WHEELS, (100, 3), 0.2)                     # older
    assert m.take() is None and m.held == 2
    m.add(ARM, (100, 9), 0.3)
    pub = m.take()
    assert pub.stamp == (100, 9) and pub.merged == 3    # the held inputs go out with it


def test_in_flight_inputs_older_than_the_start_up_placeholder_wait_for_a_newer_one():
    m = _merger()
    home = m.placeholder((1000, 500_000_000))
    assert home.placeholder and home.stamp == (1000, 500_000_000)
    m.add(ARM, (1000, 499_000_000), 0.0)             # sent 1 ms before the home pose went out
    assert m.take() is None
    m.add(ARM, (1000, 501_000_000), 0.001)
    assert m.take().stamp == (1000, 501_000_000)
    assert m.clock_steps == 0


def test_inputs_on_another_clock_step_back_once_from_the_placeholder():
    m = _merger()
    m.placeholder((1_700_000_000, 0))
    m.add(ARM, (77, 0), 0.0)                         # a simulation clock: would be held for ever
    pub = m.take()
    assert pub.stamp == (77, 0) and m.clock_steps == 1
    m.add(ARM, (76, 0), 0.1)                         # but among its own inputs, never backwards
    assert m.take() is None


def test_a_placeholder_is_never_stamped_before_the_last_publication():
    m = _merger()
    m.add(ARM, (2_000_000_000, 7), 0.0)
    m.take()
    assert m.placeholder((1_000, 0)).stamp == (2_000_000_000, 8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_published_stamps_never_decrease_and_every_input_is_covered(events):
    """Random inputs (stamps jittering back and forth), wake-ups and placeholders: the published stamps are
    strictly increasing, and after a final newer input every input has been covered by one publication."""
    m = _merger()
    out = []
    t = 0
    for k, (jitter, wake, idle) in enumerate(events):
        t += 1
        m.add(ARM if k % 2 else WHEELS, (10, max(1, t * 100 - jitter * 37)), 0.001 * k)
        if idle:
            out.append(m.placeholder((10, t * 100)))
        if wake:
            p = m.take()
            if p:
                out.append(p)
    m.add(ARM, (11, 0), 1.0)
    out.append(m.take())
    stamps = [p.stamp for p in out]
    assert all(a < b for a, b in zip(stamps, stamps[1:])), stamps
    assert sum(p.merged for p in out) == m.inputs == len(events) + 1


def test_silence_is_per_joint_over_every_source_that_reports_it_and_scales_with_the_source_s_rate():
    m = _merger()
    for i in range(100):
        m.add(ARM, (1, i), arrival=0.01 * i)         # 100 Hz for 1 s
        if i in (0, 10, 20):
            m.add(WHEELS + ("arm_yaw",), (1, i), arrival=0.01 * i)      # 10 Hz for 0.2 s; arm_yaw from both
    silent = m.silent(1.0, timeout=0.3)
    assert set(silent) == set(WHEELS) and silent["left_front_steer"] == pytest.approx(0.8)
    assert m.silent(0.65, timeout=0.3) == {}         # 0.45 s: below 5 of its 0.1 s intervals
    # a 1 Hz gripper is not silent after 1.5 s when the timeout is 1 s: 5 of its intervals
    g = _merger()
    for i in range(5):
        g.add(("gripper",), (1, i), arrival=float(i))
    assert g.silent(4.0 + 1.5, timeout=1.0) == {}
    assert set(g.silent(4.0 + 5.5, timeout=1.0)) == {"gripper"}
    assert g.joint_stamps() == {"gripper": (1, 4)}


# ---------------------------------------------------------------------------------------------- the node
@pytest.fixture
def bus():
    from mechanism_model_ros.transports.memory import MemoryBus
    return MemoryBus(manual_clock=True)


def _node(bus, params=None):
    from mechanism_model_ros.state_publisher import StatePublisher
    from mechanism_model_ros.transports.memory import MemoryNode
    return StatePublisher(MemoryNode("state_publisher", parameters={"floating_joints": "always", **(params or {})},
                                     bus=bus), MODEL)


def _listener(bus):
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.memory import MemoryNode
    node = MemoryNode("listener", bus=bus)
    tf, static, diag = [], [], []
    node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF, tf.append)
    node.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER, static.append)
    node.create_subscription("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos.DEFAULT, diag.append)
    return node, tf, static, diag


def _js(node, names, values, stamp):
    JS = node.message_class("sensor_msgs/msg/JointState")
    m = JS(name=list(names), position=[float(v) for v in values])
    m.header.stamp.sec, m.header.stamp.nanosec = stamp
    return m


def _compose(tf_msg, static_msgs):
    edges = {t.child_frame_id: (t.header.frame_id, transform_to_matrix(t.transform))
             for m in list(static_msgs) + [tf_msg] for t in m.transforms}
    world = {MODEL.ground: np.eye(4)}

    def pose(f):
        if f not in world:
            parent, T = edges[f]
            world[f] = pose(parent) @ T
        return world[f]
    return pose


def test_the_node_publishes_a_backlog_once_and_the_newest_state(bus):
    sp = _node(bus)
    node, tf, static, _ = _listener(bus)
    now = sp.transport.now()
    base = now[0] + 1
    for i in range(10):                              # one wake-up with ten queued messages
        sp.joint_states.on_message(_js(node, ARM, [0.1 * i, 0.2, -0.1 * i], (base, i)))
    assert not tf
    sp.joint_states.on_drained()
    assert len(tf) == 1 and tf[0].transforms[0].header.stamp.sec == base
    assert tf[0].transforms[0].header.stamp.nanosec == 9
    assert sp.merger.max_merged == 10
    pose = _compose(tf[0], static)
    fk = forward_kinematics(MODEL, dict(zip(ARM, [0.9, 0.2, -0.9])))
    np.testing.assert_allclose(pose("arm_turret"), fk.pose("arm_turret"), atol=1e-9)


def test_two_sources_at_different_rates_yield_transforms_for_both(bus):
    sp = _node(bus)
    node, tf, static, _ = _listener(bus)
    base = sp.transport.now()[0] + 1
    for i in range(30):
        bus.advance(0.01)
        sp.on_joint_state(_js(node, ARM, [0.01 * i, 0.3, 0.2], (base, i * 10_000_000)))
        if i % 10 == 5:
            sp.on_joint_state(_js(node, WHEELS, [0.4 + 0.01 * i, -0.4], (base, i * 10_000_000 + 1)))
    last = tf[-1]
    pose = _compose(last, static)
    fk = forward_kinematics(MODEL, {"arm_yaw": 0.29, "arm_shoulder": 0.3, "arm_elbow": 0.2,
                                    "left_front_steer": 0.65, "right_front_steer": -0.4})
    for f in ("arm_turret", "left_front_steer", "right_front_steer"):
        np.testing.assert_allclose(pose(f), fk.pose(f), atol=1e-9, err_msg=f)
    stamps = sp.joint_stamps()
    assert stamps["arm_yaw"] == (base, 290_000_000)                 # each joint its own stamp
    assert stamps["left_front_steer"] == (base, 250_000_001)
    s = [(m.transforms[0].header.stamp.sec, m.transforms[0].header.stamp.nanosec) for m in tf]
    assert all(a < b for a, b in zip(s, s[1:]))


def _level(status) -> int:
    return status.level[0] if isinstance(status.level, bytes) else int(status.level)


def test_a_silent_source_is_reported_on_diagnostics_and_in_the_log(bus, caplog):
    caplog.set_level(logging.INFO)
    sp = _node(bus, {"joint_silence_timeout": 0.5})
    node, tf, static, diag = _listener(bus)
    base = sp.transport.now()[0] + 1
    k = 0
    for i in range(200):              # arm at 100 Hz all along, wheels for 0.3 s, then again from 1 s on
        bus.advance(0.01)
        k += 1
        sp.on_joint_state(_js(node, ARM, [0.0, 0.1, 0.2], (base, k)))
        if i < 30 or i >= 100:
            k += 1
            sp.on_joint_state(_js(node, WHEELS, [0.1, 0.1], (base, k)))
        if i == 99:
            assert len(diag) == 1, "no /diagnostics after 1 s"
            st = diag[0].status[0]
            assert _level(st) == 1
            assert "left_front_steer" in st.message and "right_front_steer" in st.message
            assert "arm_yaw" not in st.message
            assert {kv.key for kv in st.values} >= {"silent: left_front_steer", "inputs merged"}
            assert set(sp.silent_joints()) == set(WHEELS)
            assert any("no report for left_front_steer, right_front_steer" in r.getMessage()
                       for r in caplog.records)
    assert len(diag) == 2 and _level(diag[1].status[0]) == 0 and not sp.silent_joints()
    assert any("reported again" in r.getMessage() for r in caplog.records)
    assert tf[-1].transforms[0].header.stamp.nanosec == k


def test_publish_frequency_paces_the_merged_state(bus):
    sp = _node(bus, {"publish_frequency": 10.0})
    node, tf, static, _ = _listener(bus)
    n0 = len(tf)                                     # the home pose
    base = sp.transport.now()[0] + 1
    for i in range(100):                             # 1 kHz for 0.1 s... at 10 Hz: one publication
        sp.on_joint_state(_js(node, ARM, [0.001 * i, 0, 0], (base, i)))
    assert len(tf) == n0
    bus.advance(0.1)
    assert len(tf) == n0 + 1 and tf[-1].transforms[0].header.stamp.nanosec == 99
    bus.advance(0.1)
    assert len(tf) == n0 + 1                         # nothing new: nothing published


def test_late_joiner_with_no_joint_states_source_gets_the_whole_robot(bus):
    sp = _node(bus, {"idle_republish_period": 0.5, "floating_joints": "always"})
    node, tf, static, _ = _listener(bus)             # joins after the home pose went out
    assert not tf
    bus.advance(0.5)
    assert len(tf) == 1
    frames = {t.child_frame_id for m in tf[-1:] + static for t in m.transforms}
    assert frames >= set(MODEL.frame_names[1:])          # and the floating joint's intermediate frames
    pose = _compose(tf[-1], static)
    fk = forward_kinematics(MODEL, {})
    for f in MODEL.frame_names[1:]:
        np.testing.assert_allclose(pose(f), fk.pose(f), atol=1e-9, err_msg=f)
    bus.advance(1.0)
    s = [(m.transforms[0].header.stamp.sec, m.transforms[0].header.stamp.nanosec) for m in tf]
    assert len(s) == 3 and all(a < b for a, b in zip(s, s[1:]))     # new stamps: no TF_REPEATED_DATA
    # joint states arrive: no more placeholders while the source lives
    n = sp.merger.placeholders
    base = sp.transport.now()[0] + 1
    for i in range(50):
        bus.advance(0.05)
        sp.on_joint_state(_js(node, ARM, [0.1, 0, 0], (base, i)))
    assert sp.merger.placeholders == n
    # the source goes silent: its last state is re-published for late joiners
    bus.advance(3.0)
    assert sp.merger.placeholders > n
    pose = _compose(tf[-1], static)
    np.testing.assert_allclose(pose("arm_turret"), forward_kinematics(MODEL, {"arm_yaw": 0.1}).pose("arm_turret"),
                               atol=1e-9)


def test_sources_stay_bounded_when_a_publisher_changes_its_joint_set_every_time():
    from mechanism_model_ros.state_merge import MAX_SOURCES
    m = _merger()
    names = [f"j{i}" for i in range(12)]
    rng = np.random.default_rng(3)
    for i in range(2000):
        subset = tuple(n for n in names if rng.random() < 0.5) or ("j0",)
        m.add(subset, (1, i), arrival=0.001 * i)
    m.add(ARM, (2, 0), arrival=3.0)
    assert len(m.sources) <= MAX_SOURCES and ARM in m.sources
    assert m.take().stamp == (2, 0)
