"""The legged node over the in-memory transport (real message classes, plain CDR, real threads and time):
cmd_vel in, one gait cycle of the LEMUR hexapod out on its motor group's (``legs_controller``)
joint_trajectory topic, checked by forward kinematics (stance feet fixed in the world); the watchdog holds
the legs where the controller is commanding them within 0.5 s of cmd_vel or joint_states silence; NaN and
too-fast commands are rejected, infeasible gaits refused; every published point is within the motor
group's position limits and the implied speeds within its velocity limits; a motor group narrower than the
gait needs stops it before anything is sent; hold commands are clamped into the motor limits and reported.
The same node against real ros2_control: test_legged_ros2_control.py."""

import math
import threading
import time

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.io.motor_groups import load_motor_groups

from ros.watchdog_timing import LIMIT, StallProbe, check_stop

pytestmark = pytest.mark.ros

MODEL = load_model(model_path("lemur/lemur_hexapod.xml"))
MOTORS = load_motor_groups(MODEL)


def _rig(extra=None):
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    from mechanism_model_ros import qos
    bus = MemoryBus()
    served = Served(MODEL, "test")
    node = create("legged", MemoryNode("legged", bus=bus, parameters={
        "mode": "topic", "gait": "tripod", "period": 2.0, "command_rate": 20.0, "max_linear_speed": 0.5, **(extra or {})}), served)
    drv = MemoryNode("driver", bus=bus)
    got = []
    lock = threading.Lock()

    def on_traj(msg):
        with lock:
            got.append((time.monotonic(), msg))
    drv.create_subscription("/legs_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                            qos.DEFAULT, on_traj)
    cmd = drv.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    js = drv.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    Twist = drv.message_class("geometry_msgs/msg/Twist")
    JS = drv.message_class("sensor_msgs/msg/JointState")
    stand = node.model.stand
    names = list(node.joint_names)
    q_js = [float(stand[MODEL.coordinate_index(n)]) for n in names]

    def send_js(q=None):
        js.publish(JS(name=names, position=q_js if q is None else [float(v) for v in q]))

    def send_cmd(vx, vy=0.0, wz=0.0):
        t = Twist()
        t.linear.x, t.linear.y, t.angular.z = vx, vy, wz
        cmd.publish(t)

    return {"node": node, "got": got, "lock": lock, "send_js": send_js, "send_cmd": send_cmd, "names": names}


@pytest.fixture
def rig():
    r = _rig()
    yield r
    r["node"].close()


def _points(msg):
    t = np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in msg.points])
    Q = np.array([p.positions for p in msg.points])
    return t, Q


def _pump(rig, seconds, vx=0.03, cmd=True, js=True):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if js:
            rig["send_js"]()
        if cmd:
            rig["send_cmd"](vx)
        time.sleep(0.02)


def test_cmd_vel_walks_within_limits(rig):
    end = time.monotonic() + 10.0                # planning a cycle takes longer on a busy machine
    walks = []
    while not walks and time.monotonic() < end:
        _pump(rig, 0.1)
        with rig["lock"]:
            walks = [m for _, m in rig["got"] if len(m.points) > 1]
    assert walks, "no gait trajectory published"
    msg = walks[0]
    assert list(msg.joint_names) == rig["names"]
    t, Q = _points(msg)
    assert np.all(np.diff(t) > 0) and t[0] > 0
    idx = [MODEL.coordinate_index(n) for n in rig["names"]]
    group = MOTORS["legs_controller"]
    assert list(group.joint_names) == rig["names"]
    assert np.all(Q >= group.lower - 1e-9) and np.all(Q <= group.upper + 1e-9)
    assert np.all(np.abs(np.diff(Q, axis=0)) / np.diff(t)[:, None] <= group.velocity * (1 + 1e-6))
    V = np.array([p.velocities for p in msg.points])
    A = np.array([p.accelerations for p in msg.points])
    assert np.all(np.abs(V) <= group.velocity) and np.all(np.abs(A) <= group.acceleration)
    # the walking joints' trajectory, with the body moving as commanded, keeps stance feet fixed: rebuild
    # whole configurations from the plan of the same command and compare foot positions by FK
    # (from the standing pose the legs first step onto the cycle's first pose, one at a time: the trajectory
    # ends with the cycle)
    plan = rig["node"].model.plan_gait("tripod", (0.03, 0, 0), period=2.0, cycles=1)
    n = len(plan.trajectory)
    assert len(Q) > n and rig["node"].counts["returns"] >= 1
    np.testing.assert_allclose(Q[-n:], plan.trajectory.positions, atol=1e-12)
    q = plan.q.copy()
    q[:, idx] = Q[-n:]
    fk = forward_kinematics(MODEL, q)
    for i, leg in enumerate(rig["node"].model.legs):
        F = fk.position(leg.foot)
        st = plan.stance[:, i]
        moves = np.linalg.norm(np.diff(F, axis=0), axis=1)[st[1:] & st[:-1]]
        assert np.all(moves < 1e-9)


def _on_polyline(q, t, Q, step=1e-3):
    """Largest joint distance from q to the linear interpolation of the points (t, Q)."""
    tt = np.arange(0.0, t[-1] + step, step)
    dense = np.column_stack([np.interp(tt, np.concatenate([[0.0], t]), np.concatenate([[Q[0, k]], Q[:, k]]))
                             for k in range(Q.shape[1])])
    return float(np.min(np.max(np.abs(dense - q), axis=1)))


def _hold_after(rig, t0):
    with rig["lock"]:
        return next(((t, m) for t, m in rig["got"] if t > t0 and len(m.points) == 1), (None, None))


def _pump_until_hold(rig, t0, **kw):
    end = time.monotonic() + 5.0                 # a safety net: the verdict is check_stop's
    while time.monotonic() < end and _hold_after(rig, t0)[0] is None:
        _pump(rig, 0.02, **kw)
    return _hold_after(rig, t0)


def test_watchdog_holds_within_half_a_second(rig):
    """The hold comes on the heartbeat's first tick after the timeout. The node publishes nothing on its
    other ticks, so a time this process was not scheduled (StallProbe) after the timeout is what the OS
    added, not the node's decision (watchdog_timing)."""
    node = rig["node"]
    assert node.cmd_timeout + 1.0 / node.rate < LIMIT and node.js_timeout + 1.0 / node.rate < LIMIT
    _pump(rig, 0.5)
    with StallProbe() as probe:
        t_last = node._cmd_time                  # the node's own stamp of the last cmd_vel (same process)
        t_hold, msg = _pump_until_hold(rig, t_last, cmd=False)   # joint states keep coming, cmd_vel silent
    assert t_hold is not None, "no hold after cmd_vel went silent"
    check_stop(t_hold - t_last, probe.stall(t_last + node.cmd_timeout, t_hold), "the hold")
    with rig["lock"]:
        cycles = [m for t, m in rig["got"] if t < t_hold and len(m.points) > 1]
    # the legs hold where the controller was taking them: a pose on the published cycle (every one of
    # which keeps the static margin), not a jump back to the measured or standing pose
    t, Q = _points(cycles[-1])
    hold = np.array(msg.points[0].positions)
    assert _on_polyline(hold, t, Q) < 2e-3
    assert np.max(np.abs(hold - Q[0])) > 1e-3           # it had moved on from the cycle's start
    # joint_states silent while commanded: hold too
    _pump(rig, 0.5)
    with StallProbe() as probe:
        t_last = node._js_time
        t_hold, _ = _pump_until_hold(rig, t_last, js=False)
    assert t_hold is not None, "no hold after joint_states went silent"
    check_stop(t_hold - t_last, probe.stall(t_last + node.js_timeout, t_hold), "the hold")


def test_the_hold_does_not_wait_for_a_cycle_being_built(rig):
    """Building a cycle's messages (hundreds of points: milliseconds, more under load) happens outside the
    node's lock: with the planner stuck building one, cmd_vel silence still gets its hold in time, and the
    cycle built meanwhile is dropped, not sent after the hold."""
    node = rig["node"]
    building, release = threading.Event(), threading.Event()
    real = node._trajectory_msg

    def slow(names, times, *rest):
        if len(times) > 1:
            building.set()
            release.wait(10.0)
        return real(names, times, *rest)

    node._trajectory_msg = slow
    try:
        end = time.monotonic() + 10.0
        while not building.is_set() and time.monotonic() < end:
            _pump(rig, 0.05)
        assert building.is_set(), "the planner never built a cycle"
        with StallProbe() as probe:
            t_last = node._cmd_time
            t_hold, _ = _pump_until_hold(rig, t_last, cmd=False)
        assert t_hold is not None, "no hold while a cycle was being built"
        assert not release.is_set()
        check_stop(t_hold - t_last, probe.stall(t_last + node.cmd_timeout, t_hold), "the hold")
    finally:
        release.set()
    _pump(rig, 0.3, cmd=False)                    # the planner returns from the stuck build
    with rig["lock"]:
        late = [m for t, m in rig["got"] if t > t_hold and len(m.points) > 1]
    assert not late, "a cycle built before the hold was sent after it"


def test_bad_and_infeasible_commands(rig):
    node = rig["node"]
    rig["send_js"]()
    rig["send_cmd"](float("nan"))
    rig["send_cmd"](5.0)                      # beyond max_linear_speed
    assert node.counts["rejected"] == 2
    _pump(rig, 0.5, vx=0.4)                   # accepted, but the steps are out of the legs' reach
    assert node.counts["refused"] >= 1 and "reach" in node.last_refusal
    with rig["lock"]:
        assert all(len(m.points) == 1 for _, m in rig["got"])      # only holds were sent


def test_hold_commands_are_clamped_into_the_motor_limits(rig):
    """Joint states outside the motor group's limits (a joint pushed past them): the hold command is clamped
    into the limits, reported, and timed within the velocity limit."""
    node = rig["node"]
    group = MOTORS["legs_controller"]
    q = np.array([float(MODEL.home[MODEL.coordinate_index(n)]) for n in rig["names"]])
    q[2] = group.upper[2] + 0.3                  # leg1_knee past its upper limit
    q[4] = group.lower[4] - 0.2
    _pump(rig, 0.3, cmd=False)
    rig["send_js"](q)
    with node._lock:
        node._holding = False                    # a fresh hold now (as after any cycle)
        node._hold("test", time.monotonic())
    with rig["lock"]:
        msg = rig["got"][-1][1]
    p = np.array(msg.points[0].positions)
    assert np.all(p >= group.lower) and np.all(p <= group.upper)
    assert p[2] == group.upper[2] and p[4] == group.lower[4]
    t = msg.points[0].time_from_start.sec + msg.points[0].time_from_start.nanosec * 1e-9
    assert t >= 0.3 / group.velocity[2] - 1e-9
    assert node.counts["clamped"] >= 1


def test_a_motor_group_narrower_than_the_gait_stops_it_before_sending(tmp_path):
    """A motor-group file giving the knees a smaller range than the gait needs: the node plans, checks the
    trajectory against the group, sends nothing but holds and says which limit."""
    import yaml
    group = MOTORS["legs_controller"]
    stand = {n: float(MODEL.home[MODEL.coordinate_index(n)]) for n in group.joint_names}
    motors = []
    for n in group.joint_names:
        if n.endswith("knee"):
            motors.append({"joint": n, "min": stand[n] - 0.02, "max": stand[n] + 0.02})
        else:
            motors.append({"joint": n})
    f = tmp_path / "narrow.yaml"
    f.write_text(yaml.safe_dump({"motor_groups": {"legs_controller": {"controller": "joint_trajectory",
                                                                       "amax": 10, "motors": motors}}}))
    r = _rig({"motor_groups": str(f)})
    try:
        _pump(r, 0.6)
        node = r["node"]
        assert node.counts["unsafe"] >= 1 and "knee position" in node.last_refusal, node.last_refusal
        with r["lock"]:
            assert r["got"] and all(len(m.points) == 1 for _, m in r["got"])
    finally:
        r["node"].close()


def test_motor_groups_for_legs(tmp_path):
    """Which groups command the legs: the model's; a fallback from the joints' limits; bad definitions."""
    from mechanism_model_ros.legged import leg_motor_groups
    from mechanism_model_core.locomotion.legged import LeggedLocomotorModel
    walking = list(LeggedLocomotorModel(MODEL).joint_names)
    gs = leg_motor_groups(MODEL, walking)
    assert [g.name for g in gs] == ["legs_controller"] and gs[0] is not None
    athlete = load_model(model_path("athlete/athlete.xml"))
    w = list(LeggedLocomotorModel(athlete).joint_names)
    gs = leg_motor_groups(athlete, w, controller="limbs")
    assert [g.name for g in gs] == ["limbs"] and list(gs[0].joint_names) == w
    idx = [athlete.coordinate_index(n) for n in w]
    np.testing.assert_array_equal(gs[0].lower, athlete.lower_limits[idx])
    f = tmp_path / "fwd.yaml"
    f.write_text("motor_groups:\n  legs_fwd:\n    controller: forward_command\n    motors:\n"
                 + "".join(f"      - {{joint: {n}}}\n" for n in walking))
    with pytest.raises(ValueError, match="joint_trajectory"):
        leg_motor_groups(MODEL, walking, str(f))


def test_a_gait_that_cannot_keep_the_margin_is_refused_with_its_reason():
    """min_margin above what a tripod can keep: the core refuses (reason 'margin', the time and the legs in
    stance), the node sends only holds, keeps its heartbeat, and plans again (and refuses again) when the
    twist changes."""
    r = _rig({"min_margin": 0.2})
    try:
        _pump(r, 0.6)
        node = r["node"]
        assert node.counts["refused"] >= 1
        assert node.last_refusal.startswith("margin:") and "in stance" in node.last_refusal, node.last_refusal
        with r["lock"]:
            assert r["got"] and all(len(m.points) == 1 for _, m in r["got"])
        assert not node.heartbeat.is_canceled                    # the watchdog timer runs on
        n = len(r["got"])
        _pump(r, 0.3, vx=0.02)                  # another twist: planned again, refused again, still holding
        assert node.counts["refused"] >= 2 and len(r["got"]) >= n
    finally:
        r["node"].close()


def test_a_gait_stopped_mid_cycle_steps_back_one_leg_at_a_time(rig):
    """Joint states of a tripod stopped mid-swing: the first trajectory takes the legs onto the cycle's first
    pose one foot at a time (by forward kinematics, body at the standing pose: at most one foot moves
    between points until every foot is there), then walks the cycle; all within the motor limits."""
    node = rig["node"]
    plan = node.model.plan_gait("tripod", (0.03, 0.0, 0.0), period=2.0)
    stopped = plan.trajectory.positions[30]
    end = time.monotonic() + 0.6
    while time.monotonic() < end:
        rig["send_js"](stopped)
        rig["send_cmd"](0.03)
        time.sleep(0.02)
    with rig["lock"]:
        walks = [m for _, m in rig["got"] if len(m.points) > 1]
    assert walks and node.counts["returns"] >= 1
    t, Q = _points(walks[0])
    idx = [MODEL.coordinate_index(n) for n in rig["names"]]
    first = plan.trajectory.positions[0]
    at_first = np.flatnonzero(np.max(np.abs(Q - first), axis=1) < 1e-9)     # the cycle's first pose
    assert at_first.size, np.min(np.max(np.abs(Q - first), axis=1))
    k_home = int(at_first[0])
    assert k_home > 0 and len(Q) - k_home == len(plan.trajectory), (k_home, len(Q), len(plan.trajectory))
    full = np.repeat(node.model.stand[None], k_home + 1, axis=0)
    full[:, idx] = np.vstack([stopped, Q[:k_home]])
    F = np.array([node.model.feet_positions(q) for q in full])
    moving = np.linalg.norm(np.diff(F, axis=0), axis=2) > 1e-9
    assert np.all(moving.sum(axis=1) <= 1)
    np.testing.assert_allclose(Q[k_home + 1:], plan.trajectory.positions[1:len(Q) - k_home], atol=1e-12)
    group = MOTORS["legs_controller"]
    assert np.all(Q >= group.lower) and np.all(Q <= group.upper)


def test_action_mode_sends_cycles_and_holds_as_goals():
    """mode: action (the default): the same cycles and holds arrive as FollowJointTrajectory goals at a
    stand-in for legs_controller's action server (whole goals, joint order of the motor group); a server
    that rejects every goal is counted and logged, and the node keeps holding on silence."""
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    from mechanism_model_ros import qos

    def run(accept):
        bus = MemoryBus()
        ctrl = MemoryNode("controller", bus=bus)
        goals, lock = [], threading.Lock()

        def on_goal(goal):
            with lock:
                goals.append((time.monotonic(), goal.trajectory))
            return accept

        def execute(handle):
            handle.succeed()
        ctrl.create_action_server("/legs_controller/follow_joint_trajectory",
                                  "control_msgs/action/FollowJointTrajectory", execute, goal_callback=on_goal)
        node = create("legged", MemoryNode("legged", bus=bus, parameters={
            "gait": "tripod", "period": 2.0, "command_rate": 20.0, "max_linear_speed": 0.5}), Served(MODEL, "test"))
        assert node.mode == "action" and not node.pubs
        drv = MemoryNode("driver", bus=bus)
        cmd = drv.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
        js = drv.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
        names = list(node.joint_names)
        q = [float(node.model.stand[MODEL.coordinate_index(n)]) for n in names]
        twist = drv.message_class("geometry_msgs/msg/Twist")()
        twist.linear.x = 0.03
        JS = drv.message_class("sensor_msgs/msg/JointState")

        def walked():
            with lock:
                return any(len(tr.points) > 1 for _, tr in goals)
        end = time.monotonic() + 10.0                    # a safety net: planning is slower on a busy machine
        while not walked() and time.monotonic() < end:
            js.publish(JS(name=names, position=q))
            cmd.publish(twist)
            time.sleep(0.02)
        t_silent = time.monotonic()
        for _ in range(40):                               # cmd_vel silent, joint states go on
            js.publish(JS(name=names, position=q))
            time.sleep(0.02)
        node.close()
        with lock:
            return node, list(goals), t_silent

    node, goals, t_silent = run(True)
    cycles = [tr for _, tr in goals if len(tr.points) > 1]
    assert cycles and node.counts["goal_rejected"] == 0 and node.counts["goals"] >= 2
    group = MOTORS["legs_controller"]
    assert all(list(tr.joint_names) == list(group.joint_names) for _, tr in goals)
    Q = np.array([p.positions for p in cycles[0].points])
    plan = node.model.plan_gait("tripod", (0.03, 0, 0), period=2.0, cycles=1)
    np.testing.assert_allclose(Q[-len(plan.trajectory):], plan.trajectory.positions, atol=1e-12)
    assert any(t > t_silent and len(tr.points) == 1 for t, tr in goals), "no hold goal after cmd_vel silence"

    node, goals, _ = run(False)
    assert goals and node.counts["goal_rejected"] == len(goals) == node.counts["goals"]
    assert node.counts["holds"] >= 1


def test_action_mode_times_the_next_cycle_from_the_goals_acceptance():
    """A controller that accepts each goal 0.4 s after it was sent (a loaded machine: a slow round trip to
    joint_trajectory_controller, which starts a goal without a stamp when it accepts it): each next cycle
    reaches it no earlier than one command period before the running cycle, started at its acceptance,
    ends. A timeline kept from the queueing ran 0.4 s ahead of the legs, and each next cycle replaced the
    running one 0.4 s before its end, cutting across the gait's last poses (CI: the legs 0.11 rad off the
    gait on a loaded machine)."""
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    from mechanism_model_ros import qos

    delay, rate = 0.4, 20.0
    bus = MemoryBus()
    ctrl = MemoryNode("controller", bus=bus)
    goals, lock = [], threading.Lock()        # (arrival, acceptance, duration, points) of each goal

    def on_goal(goal):
        arrived = time.monotonic()
        time.sleep(delay)
        pts = goal.trajectory.points
        d = pts[-1].time_from_start
        with lock:
            goals.append((arrived, time.monotonic(), d.sec + d.nanosec * 1e-9, len(pts)))
        return True

    ctrl.create_action_server("/legs_controller/follow_joint_trajectory",
                              "control_msgs/action/FollowJointTrajectory", lambda h: h.succeed(),
                              goal_callback=on_goal)
    node = create("legged", MemoryNode("legged", bus=bus, parameters={
        "gait": "tripod", "period": 2.0, "command_rate": rate, "max_linear_speed": 0.5,
        # the cycles' timing is tested here, not the watchdog: a stall of this process on a loaded machine
        # must not end a cycle with a hold
        "cmd_vel_timeout": 3.0, "joint_states_timeout": 3.0}), Served(MODEL, "test"))
    drv = MemoryNode("driver", bus=bus)
    cmd = drv.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    js = drv.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    names = list(node.joint_names)
    q = [float(node.model.stand[MODEL.coordinate_index(n)]) for n in names]
    twist = drv.message_class("geometry_msgs/msg/Twist")()
    twist.linear.x = 0.03
    JS = drv.message_class("sensor_msgs/msg/JointState")
    try:
        end = time.monotonic() + 60.0                    # a safety net: planning is slower on a busy machine
        while time.monotonic() < end:
            with lock:
                if sum(n > 1 for *_, n in goals) >= 3:
                    break
            js.publish(JS(name=names, position=q))
            cmd.publish(twist)
            time.sleep(0.02)
    finally:
        node.close()
    with lock:
        got = list(goals)
    # consecutive cycles (a hold between two, on this process not being scheduled for cmd_vel_timeout on a
    # loaded machine, rightly ends the running cycle at once)
    early = [(a1 - (acc0 + d0)) for (_, acc0, d0, n0), (a1, _, _, n1) in zip(got, got[1:]) if n0 > 1 and n1 > 1]
    assert early, got
    # sent at most one command period (plus 10 ms) before the running cycle's end
    assert min(early) > -(1.0 / rate + 0.01), early
