"""The legged node over the in-memory transport (real message classes, plain CDR, real threads and time):
cmd_vel in, one gait cycle of the LEMUR hexapod out on the controller's joint_trajectory topic, checked by
forward kinematics (stance feet fixed in the world); the watchdog holds the legs within 0.5 s of cmd_vel or
joint_states silence; NaN and too-fast commands are rejected, infeasible gaits refused; every published
point is within the joints' position limits and the implied speeds within their velocity limits."""

import math
import threading
import time

import numpy as np
import pytest

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import model_path

from ros.watchdog_timing import LIMIT, StallProbe, check_stop

pytestmark = pytest.mark.ros

MODEL = load_model(model_path("lemur/lemur_hexapod.xml"))


@pytest.fixture
def rig():
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode
    from mechanism_model_ros import qos
    bus = MemoryBus()
    served = Served(MODEL, "test")
    node = create("legged", MemoryNode("legged", bus=bus, parameters={
        "gait": "tripod", "period": 2.0, "command_rate": 20.0, "max_linear_speed": 0.5}), served)
    drv = MemoryNode("driver", bus=bus)
    got = []
    lock = threading.Lock()

    def on_traj(msg):
        with lock:
            got.append((time.monotonic(), msg))
    drv.create_subscription("/leg_controller/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                            qos.DEFAULT, on_traj)
    cmd = drv.create_publisher("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    js = drv.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
    Twist = drv.message_class("geometry_msgs/msg/Twist")
    JS = drv.message_class("sensor_msgs/msg/JointState")
    stand = node.model.stand
    names = list(node.joint_names)
    q_js = [float(stand[MODEL.coordinate_index(n)]) for n in names]

    def send_js():
        js.publish(JS(name=names, position=q_js))

    def send_cmd(vx, vy=0.0, wz=0.0):
        t = Twist()
        t.linear.x, t.linear.y, t.angular.z = vx, vy, wz
        cmd.publish(t)

    yield {"node": node, "got": got, "lock": lock, "send_js": send_js, "send_cmd": send_cmd, "names": names}
    node.close()


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
    lo, hi = MODEL.lower_limits[idx], MODEL.upper_limits[idx]
    assert np.all(Q >= lo - 1e-9) and np.all(Q <= hi + 1e-9)
    vmax = np.array([MODEL.joint(MODEL.coordinate_joint[i]).velocity for i in idx])
    assert np.all(np.abs(np.diff(Q, axis=0)) / np.diff(t)[:, None] <= vmax * (1 + 1e-6))
    # the walking joints' trajectory, with the body moving as commanded, keeps stance feet fixed: rebuild
    # whole configurations from the plan of the same command and compare foot positions by FK
    plan = rig["node"].model.plan_gait("tripod", (0.03, 0, 0), period=2.0, cycles=1)
    np.testing.assert_allclose(Q, plan.trajectory.positions, atol=1e-12)
    q = plan.q.copy()
    q[:, idx] = Q
    fk = forward_kinematics(MODEL, q)
    for i, leg in enumerate(rig["node"].model.legs):
        F = fk.position(leg.foot)
        st = plan.stance[:, i]
        moves = np.linalg.norm(np.diff(F, axis=0), axis=1)[st[1:] & st[:-1]]
        assert np.all(moves < 1e-9)


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
    np.testing.assert_allclose(msg.points[0].positions,
                               [MODEL.home[MODEL.coordinate_index(n)] for n in rig["names"]], atol=1e-12)
    # joint_states silent while commanded: hold too
    _pump(rig, 0.5)
    with StallProbe() as probe:
        t_last = node._js_time
        t_hold, _ = _pump_until_hold(rig, t_last, js=False)
    assert t_hold is not None, "no hold after joint_states went silent"
    check_stop(t_hold - t_last, probe.stall(t_last + node.js_timeout, t_hold), "the hold")


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
