"""Timers, actions and the nodes' watchdogs over the in-memory transport with a manual clock: timers fire
inside ``bus.advance``, so a watchdog's timing is checked exactly and at once (no sleeps; nothing depends on
the machine's load). Actions are rcl_action's protocol over the bus's services and topics (the same code as
on Cyclone), with the real FollowJointTrajectory definitions. The DDS versions of these scenarios are in
test_transport_timers.py, test_action_client.py, test_locomotor_dds.py and test_manipulator_node.py."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path

from ros.dds_helpers import wait_for

pytestmark = pytest.mark.ros

ACTION = "control_msgs/action/FollowJointTrajectory"


@pytest.fixture
def bus():
    from mechanism_model_ros.transports.memory import MemoryBus
    return MemoryBus(manual_clock=True)


def _node(bus, name, **params):
    from mechanism_model_ros.transports.memory import MemoryNode
    return MemoryNode(name, parameters=params, bus=bus)


# ---------------------------------------------------------------------------------------------- timers
def test_timers_fire_at_their_periods_on_the_manual_clock(bus):
    n = _node(bus, "t")
    calls = {"a": [], "b": []}
    ta = n.create_timer(0.1, lambda: calls["a"].append(bus.monotonic()))
    n.create_timer(0.25, lambda: calls["b"].append(bus.monotonic()))
    bus.advance(0.05)
    assert calls == {"a": [], "b": []}                     # the first call comes one period after creation
    bus.advance(0.95)
    np.testing.assert_allclose(calls["a"], np.arange(1, 11) * 0.1, atol=1e-12)
    np.testing.assert_allclose(calls["b"], [0.25, 0.5, 0.75, 1.0], atol=1e-12)
    ta.cancel()
    bus.advance(1.0)
    assert len(calls["a"]) == 10 and len(calls["b"]) == 8 and ta.is_canceled


def test_a_raising_timer_goes_on_and_closing_the_node_stops_its_timers(bus, caplog):
    from mechanism_model_ros.transports.base import TransportError
    n = _node(bus, "t")
    calls = []

    def boom():
        calls.append(1)
        raise RuntimeError("boom")
    n.create_timer(0.1, boom)
    bus.advance(0.35)
    assert len(calls) == 3 and "boom" in caplog.text
    n.close()
    bus.advance(1.0)
    assert len(calls) == 3
    for bad in (0.0, -1.0, float("nan"), float("inf"), "x"):
        with pytest.raises(TransportError):
            n.create_timer(bad, lambda: None)


def test_real_clock_timers_run_on_their_own():
    from mechanism_model_ros.transports.memory import MemoryBus
    n = _node(MemoryBus(), "t")
    calls = []
    t = n.create_timer(0.01, lambda: calls.append(1))
    assert wait_for(lambda: len(calls) >= 3, 20)
    t.cancel()
    n.close()


def test_closing_a_real_clock_bus_cancels_its_timers_and_ends_its_thread():
    """``MemoryBus.close()``: every timer of every node on the bus cancelled, the scheduler thread joined (it
    no longer runs in the test process: before, it stayed for the process's life); a timer made afterwards
    starts a scheduler again, and closing again ends it too."""
    from mechanism_model_ros.transports.memory import MemoryBus
    bus = MemoryBus()
    a, b = _node(bus, "a"), _node(bus, "b")
    calls = []
    timers = [a.create_timer(0.01, lambda: calls.append("a")), b.create_timer(3600.0, lambda: calls.append("b"))]
    assert wait_for(lambda: len(calls) >= 2, 20)
    scheduler = bus._scheduler
    assert scheduler is not None and scheduler.is_alive()
    assert bus.close(timeout=5.0)
    assert not scheduler.is_alive() and all(t.is_canceled for t in timers)
    assert "b" not in calls                                     # the hour-long timer never fired
    again = a.create_timer(0.01, lambda: calls.append("again"))
    assert wait_for(lambda: "again" in calls, 20)
    second = bus._scheduler
    assert second is not None and second is not scheduler
    assert bus.close() and not second.is_alive() and again.is_canceled
    assert bus.close()                                          # closing a closed bus is fine


def test_closing_the_last_node_ends_the_scheduler_and_a_node_closes_the_bus_it_made():
    """A node's ``close()`` cancels its timers and wakes the scheduler, which ends once no timer is left;
    a node given no bus makes one and closes it with itself."""
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    bus = MemoryBus()
    a = _node(bus, "a")
    calls = []
    a.create_timer(0.01, lambda: calls.append(1))
    assert wait_for(lambda: calls, 20)
    scheduler = bus._scheduler
    a.close()
    scheduler.join(5.0)
    assert not scheduler.is_alive()
    own = MemoryNode("own")
    own.create_timer(0.01, lambda: calls.append(2))
    assert wait_for(lambda: 2 in calls, 20)
    scheduler = own.bus._scheduler
    own.close()
    assert not scheduler.is_alive()                             # joined by close()


# ---------------------------------------------------------------------------------------------- actions
def _trajectory_goal(client, names, positions, seconds):
    goal = client.goal()
    goal.trajectory.joint_names = list(names)
    from mechanism_model_ros.transports.typegen import message_class
    pt = message_class("trajectory_msgs/msg/JointTrajectoryPoint")()
    pt.positions = [float(v) for v in positions]
    pt.time_from_start.sec = int(seconds)
    goal.trajectory.points = [pt]
    return goal


class ControllerStandIn:
    """A FollowJointTrajectory server standing in for a joint_trajectory_controller (hardware): it accepts
    goals naming its joints, publishes feedback, and ends a goal when ``finish`` is set or a cancel arrives."""

    def __init__(self, transport, joints, name="arm_controller"):
        self.joints = list(joints)
        self.finish = threading.Event()
        self.goals = []
        self.server = transport.create_action_server(f"/{name}/follow_joint_trajectory", ACTION, self.execute,
                                                     goal_callback=self.accept)

    def accept(self, goal) -> bool:
        return sorted(goal.trajectory.joint_names) == sorted(self.joints)

    def execute(self, handle):
        self.goals.append(handle.request)
        fb = self.server.feedback_cls().feedback
        fb.joint_names = list(self.joints)
        handle.publish_feedback(fb)
        while not self.finish.wait(0.005):
            if handle.is_cancel_requested:
                handle.canceled()
                return
        result = self.server.result_cls()
        result.error_code = 0
        handle.succeed(result)


def test_action_goal_feedback_result_reject_and_cancel(bus):
    server_node, client_node = _node(bus, "controller"), _node(bus, "user")
    ctrl = ControllerStandIn(server_node, ["j1", "j2"])
    client = client_node.create_action_client("/arm_controller/follow_joint_trajectory", ACTION)
    assert client.wait_for_server(1.0)
    feedback = []
    handle = client.send_goal(_trajectory_goal(client, ["j1", "j2"], [0.1, 0.2], 1), feedback.append)
    assert handle.accepted and len(handle.goal_id) == 16
    assert wait_for(lambda: feedback, 20) and list(feedback[0].joint_names) == ["j1", "j2"]
    ctrl.finish.set()
    r = handle.get_result(20)
    assert r.succeeded and r.result.error_code == 0 and handle.status == 4
    assert list(ctrl.goals[0].trajectory.points[0].positions) == [0.1, 0.2]    # the goal crossed the bus
    # a goal for other joints is rejected
    rejected = client.send_goal(_trajectory_goal(client, ["j9"], [0.0], 1))
    assert not rejected.accepted and rejected.get_result(1).status == 0
    # a running goal is cancelled
    ctrl.finish.clear()
    running = client.send_goal(_trajectory_goal(client, ["j1", "j2"], [0.0, 0.0], 5))
    assert running.cancel(5) == 0
    assert running.get_result(20).status == 5
    assert running.cancel(5) == 3                          # ERROR_GOAL_TERMINATED


# ---------------------------------------------------------------------------------------------- locomotor
ROVER = load_model(model_path("rocky8/rocky8_rover.xml"))


def test_locomotor_watchdog_stops_the_wheels_on_silence_exactly(bus):
    """cmd_vel_timeout 0.25 s, heartbeat 50 Hz: the wheels turn while commands come, and the first heartbeat
    after 0.25 s of silence commands zero (well within the 0.5 s rule); stale joint states stop them too."""
    from mechanism_model_ros import qos
    from mechanism_model_ros.nodes import Served, create
    node = create("locomotor", _node(bus, "locomotor", cmd_vel_timeout=0.25, joint_states_timeout=0.25),
                  Served(ROVER, "test"))
    user = _node(bus, "user")
    wheels = []
    user.create_subscription("/wheel_controller/commands", "std_msgs/msg/Float64MultiArray", qos.DEFAULT,
                             lambda m: wheels.append((bus.monotonic(), list(m.data))))
    cmd = user.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    js = user.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    Twist, JS = user.message_class("geometry_msgs/msg/Twist"), user.message_class("sensor_msgs/msg/JointState")
    names = list(ROVER.coordinate_names)

    def state():
        m = JS()
        m.name, m.position = names, [0.0] * len(names)
        js.publish(m)

    t = Twist()
    t.linear.x = 0.2
    for _ in range(25):                                   # 0.5 s of commands and states at 50 Hz
        state()
        silent_from = bus.monotonic()                     # the last command's time
        cmd.publish(t)
        bus.advance(0.02)
    assert any(abs(v) > 0 for v in wheels[-1][1])          # driving
    for _ in range(30):                                   # states go on, cmd_vel falls silent
        state()
        bus.advance(0.02)
    stops = [tm for tm, data in wheels if tm > silent_from and all(v == 0.0 for v in data)]
    assert stops and 0.25 < stops[0] - silent_from <= 0.25 + 0.02 + 1e-9
    assert all(any(v != 0.0 for v in d) for tm, d in wheels if silent_from < tm < silent_from + 0.25 - 1e-9)
    assert node.counts["watchdog_stops"] == 1
    # commands again, then the joint states fall silent: stopped by the state watchdog
    for _ in range(10):
        stale_from = bus.monotonic()                      # the last state's time
        state()
        cmd.publish(t)
        bus.advance(0.02)
    assert any(abs(v) > 0 for v in wheels[-1][1])
    for _ in range(30):
        cmd.publish(t)
        bus.advance(0.02)
    stops = [tm for tm, data in wheels if tm > stale_from and all(v == 0.0 for v in data)]
    assert stops and 0.25 < stops[0] - stale_from <= 0.25 + 0.02 + 1e-9
    node.close()


# ---------------------------------------------------------------------------------------------- manipulator
def test_manipulator_sends_goals_and_its_watchdog_cancels_on_stale_states(bus):
    """The manipulator's action client against a controller stand-in: a checked trajectory becomes a goal
    that succeeds; with the joint states silent for state_timeout the watchdog (a transport timer) cancels
    the running goal."""
    from mechanism_model_ros import qos
    from mechanism_model_ros.manipulator import WATCHDOG_PERIOD, Manipulator
    from mechanism_model_ros.transports.typegen import message_class
    from mechanism_model_ros.conversions import fill_joint_trajectory
    from ros.watchdog_timing import LIMIT

    mech = load_model(model_path("mer/mer_idd.xml"))
    node = Manipulator(_node(bus, "manipulator", state_timeout=0.35, server_timeout=2.0), mech)
    group = next(iter(node.groups.values()))
    names = list(group.joint_names)
    ctrl = ControllerStandIn(_node(bus, "controller"), names, name=group.name)
    hw = _node(bus, "hardware")
    js = hw.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    JS = hw.message_class("sensor_msgs/msg/JointState")
    q0 = mech.configuration(None)
    state = JS()
    state.name = list(mech.coordinate_names)
    state.position = [float(v) for v in q0]
    js.publish(state)

    target = [float(q0[mech.coordinate_index(n)]) + 0.05 for n in names]
    msg = message_class("trajectory_msgs/msg/JointTrajectory")()
    fill_joint_trajectory(msg, message_class("trajectory_msgs/msg/JointTrajectoryPoint"), names, [10.0],
                          [target])
    ctrl.finish.set()
    reply = node.execute(msg)                              # waits for the result (the stand-in ends at once)
    assert reply["error_code"] == 1 and reply["status"] == 4, reply
    assert node.succeeded == 1 and list(ctrl.goals[0].trajectory.joint_names) == names

    ctrl.finish.clear()
    js.publish(state)
    reply = node.execute(msg, wait=False)
    assert reply["error_code"] == 1 and node._active
    bus.advance(0.3)
    assert node.stale_cancels == 0                         # 0.3 s of silence: within state_timeout
    bus.advance(0.2)
    assert node.stale_cancels == 1 and 0.35 <= node.stale_age <= 0.35 + WATCHDOG_PERIOD + 1e-9
    assert node.stale_age < LIMIT                          # the project's rule, on the manual clock
    assert wait_for(lambda: node.failed == 1 and not node._active, 20)     # the cancel ran on its thread


@pytest.mark.parametrize("timeout", [0.45, 0.5, 2.0, 0.0, -0.1, float("nan"), "soon"])
def test_manipulator_refuses_a_state_timeout_that_breaks_the_stop_rule(bus, timeout):
    """state_timeout + the watchdog's tick must stay under 0.5 s: anything else is refused at start-up."""
    from mechanism_model_ros.manipulator import Manipulator
    mech = load_model(model_path("mer/mer_idd.xml"))
    with pytest.raises(ValueError, match="state_timeout"):
        Manipulator(_node(bus, "manipulator", state_timeout=timeout), mech)


def test_manipulator_watchdog_timing_is_within_the_rule():
    from mechanism_model_ros.manipulator import DEFAULT_STATE_TIMEOUT, WATCHDOG_PERIOD, check_state_timeout
    from ros.watchdog_timing import LIMIT
    assert DEFAULT_STATE_TIMEOUT + WATCHDOG_PERIOD < LIMIT
    assert check_state_timeout(DEFAULT_STATE_TIMEOUT) == DEFAULT_STATE_TIMEOUT
