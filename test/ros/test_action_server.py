"""The Cyclone transport's action server (rcl_action's protocol), over real Cyclone DDS on loopback: goals
accepted or rejected, feedback, succeed/abort/cancel, an execute that raises or leaves its goal open, and a
get_result that waits for the goal's end. Interoperation: rclpy's ActionClient (real ROS 2 Humble) drives the
Cyclone server."""

import json
import time

import pytest

from mechanism_model_ros.transports.base import STATUS_ABORTED, STATUS_CANCELED, STATUS_SUCCEEDED

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

ACTION = "control_msgs/action/FollowJointTrajectory"
#: feedbacks (one each 20 ms) a ``slow`` goal sends before it succeeds, unless cancelled: 60 s, a bound far
#: beyond any client's wait for its first feedback
SLOW_FEEDBACKS = 3000


class Server:
    """A FollowJointTrajectory server whose behaviour the first joint name selects: ``ok`` succeeds after
    three feedbacks, ``slow`` runs until cancelled, ``fail`` aborts, ``raise`` raises, ``open`` returns
    without ending its goal; a goal without joints is rejected."""

    def __init__(self, node):
        from mechanism_model_ros.transports.typegen import message_class
        self.Result = message_class("control_msgs/action/FollowJointTrajectory_Result")
        self.Feedback = message_class("control_msgs/action/FollowJointTrajectory_Feedback")
        self.executed = []
        node.create_action_server("/arm/follow_joint_trajectory", ACTION, self.execute,
                                  goal_callback=lambda goal: bool(goal.trajectory.joint_names))

    def execute(self, handle):
        kind = handle.request.trajectory.joint_names[0]
        self.executed.append(kind)
        for k in range(SLOW_FEEDBACKS if kind == "slow" else 3):
            if handle.is_cancel_requested:
                handle.canceled(self.Result(error_code=0, error_string="stopped"))
                return
            handle.publish_feedback(self.Feedback(joint_names=[kind, str(k)]))
            time.sleep(0.02)
        if kind == "fail":
            handle.abort(self.Result(error_code=-5, error_string="goal tolerance"))
        elif kind == "raise":
            raise RuntimeError("bug in execute")
        elif kind != "open":
            handle.succeed(self.Result(error_code=0, error_string="done"))


@pytest.fixture(scope="module")
def nodes():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    ctx = CycloneContext(domain)
    server_node = CycloneNode("action_server", context=ctx)
    client_node = CycloneNode("action_client", context=ctx)
    server = Server(server_node)
    client = client_node.create_action_client("/arm/follow_joint_trajectory", ACTION)
    assert client.wait_for_server(20)
    yield domain, server, client, ctx
    client_node.close()
    server_node.close()
    ctx.close()


def _goal(client, kind):
    g = client.goal()
    g.trajectory.joint_names = [kind] if kind else []
    return g


@pytest.mark.parametrize("kind, status, code", [("ok", STATUS_SUCCEEDED, 0), ("fail", STATUS_ABORTED, -5),
                                                ("raise", STATUS_ABORTED, 0), ("open", STATUS_ABORTED, 0)])
def test_goals_end_as_execute_says(nodes, kind, status, code):
    _, server, client, _ = nodes
    feedback = []
    h = client.send_goal(_goal(client, kind), feedback.append)
    assert h.accepted
    r = h.get_result(20)
    assert (r.status, r.result.error_code) == (status, code)
    assert [list(f.joint_names) for f in feedback] == [[kind, "0"], [kind, "1"], [kind, "2"]]
    assert wait_for(lambda: h.status == status, 5)        # the status topic says so too


def test_a_goal_without_joints_is_rejected(nodes):
    _, server, client, _ = nodes
    before = list(server.executed)
    h = client.send_goal(_goal(client, ""))
    assert not h.accepted and server.executed == before


def test_cancel(nodes):
    _, server, client, _ = nodes
    h = client.send_goal(_goal(client, "slow"))
    assert h.accepted
    time.sleep(0.1)
    assert h.cancel(10) == 0
    r = h.get_result(20)
    assert r.status == STATUS_CANCELED and r.result.error_string == "stopped"
    assert h.cancel(10) == 3            # ERROR_GOAL_TERMINATED: already over


def test_many_goals_at_once(nodes):
    _, server, client, _ = nodes
    handles = [client.send_goal(_goal(client, "ok")) for _ in range(8)]
    assert all(h.accepted for h in handles)
    assert all(h.get_result(30).status == STATUS_SUCCEEDED for h in handles)


RCLPY_CLIENT = r"""
import json, sys, threading
from mechanism_model_ros.transports.rclpy_transport import RclpyNode
node = RclpyNode("rclpy_action_client")
stop = threading.Event(); th = threading.Thread(target=node.spin, args=(stop,)); th.start()
out = {}
try:
    c = node.create_action_client("/arm/follow_joint_trajectory", "control_msgs/action/FollowJointTrajectory")
    assert c.wait_for_server(30), "no server"
    for kind in ("ok", "fail"):
        g = c.goal(); g.trajectory.joint_names = [kind]
        fb = []
        h = c.send_goal(g, fb.append)
        r = h.get_result(30)
        out[kind] = [h.accepted, r.status, r.result.error_code, r.result.error_string,
                     [list(getattr(f, "feedback", f).joint_names) for f in fb]]
    g = c.goal(); g.trajectory.joint_names = ["slow"]
    fb, heard = [], threading.Event()
    h = c.send_goal(g, lambda f: (fb.append(f), heard.set()))
    out["heard"] = heard.wait(30)          # the goal known to the client: its feedback arrives
    out["cancel"] = [h.cancel(10), h.get_result(30).status]
    out["slow"] = [list(getattr(f, "feedback", f).joint_names) for f in fb]
    out["rejected"] = c.send_goal(c.goal()).accepted
finally:
    stop.set(); th.join(); node.close()
print(json.dumps(out))
"""


def test_rclpy_action_client_drives_the_cyclone_server(nodes):
    from ros import ros_env

    domain, server, _, _ = nodes
    p = ros_env.run_python(RCLPY_CLIENT, domain, timeout=120, with_workspace=False)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["ok"][:4] == [True, STATUS_SUCCEEDED, 0, "done"]
    assert out["fail"][:4] == [True, STATUS_ABORTED, -5, "goal tolerance"]
    # the three feedbacks in order, the first ones possibly lost: rclpy's client drops feedback it hears before
    # it has handled the goal's acceptance (or before its feedback reader is matched: a discovery race of
    # volatile topics, as in ROS 2), and a loaded machine can delay that past all three (ci30: none heard);
    # never out of order, nor one missing between two heard
    for kind in ("ok", "fail"):
        fb = out[kind][4]
        assert fb == [[kind, str(k)] for k in range(3 - len(fb), 3)], (kind, fb)
    # the slow goal's feedback, one each 20 ms until cancelled, is heard (waited for, not timed), consecutive
    assert out["heard"], out
    slow = out["slow"]
    first = int(slow[0][1])
    assert slow == [["slow", str(k)] for k in range(first, first + len(slow))], slow
    assert out["cancel"] == [0, STATUS_CANCELED] and out["rejected"] is False


RCLPY_SERVER = r"""
import sys, threading, time
from mechanism_model_ros.transports.rclpy_transport import RclpyNode
from control_msgs.action import FollowJointTrajectory
node = RclpyNode("rclpy_action_server")

def execute(h):
    kind = h.request.trajectory.joint_names[0]
    for k in range(200 if kind == "slow" else 3):
        if h.is_cancel_requested:
            h.canceled(FollowJointTrajectory.Result(error_code=0, error_string="stopped"))
            return
        h.publish_feedback(FollowJointTrajectory.Feedback(joint_names=[kind, str(k)]))
        time.sleep(0.02)
    if kind == "fail":
        h.abort(FollowJointTrajectory.Result(error_code=-5, error_string="goal tolerance"))
    else:
        h.succeed(FollowJointTrajectory.Result(error_code=0, error_string="done"))

node.create_action_server("/arm2/follow_joint_trajectory", "control_msgs/action/FollowJointTrajectory", execute,
                          goal_callback=lambda goal: bool(goal.trajectory.joint_names))
print("ready", flush=True)
stop = threading.Event()
threading.Timer(float(sys.argv[1]), stop.set).start()
node.spin(stop)
node.close()
"""


def test_the_rclpy_action_server_answers_the_cyclone_client(nodes):
    from mechanism_model_ros.transports.cyclone import CycloneNode
    from ros import ros_env

    domain, _, _, ctx = nodes
    ros_env.require("humble")
    proc = ros_env.start([ros_env.ROS_PYTHON, "-c", RCLPY_SERVER, "60"], domain, name="rclpy_action_server",
                         with_workspace=False)
    client_node = CycloneNode("action_client_2", context=ctx)
    try:
        client = client_node.create_action_client("/arm2/follow_joint_trajectory", ACTION)
        assert client.wait_for_server(60), proc.output()[-2000:]
        fb = []
        h = client.send_goal(_goal(client, "ok"), fb.append)
        r = h.get_result(30)
        assert h.accepted and (r.status, r.result.error_code, r.result.error_string) == (STATUS_SUCCEEDED, 0, "done")
        assert [list(f.joint_names) for f in fb] == [["ok", "0"], ["ok", "1"], ["ok", "2"]]
        r = client.send_goal(_goal(client, "fail")).get_result(30)
        assert (r.status, r.result.error_code) == (STATUS_ABORTED, -5)
        h = client.send_goal(_goal(client, "slow"))
        time.sleep(0.2)
        assert h.cancel(10) == 0 and h.get_result(30).status == STATUS_CANCELED
        assert not client.send_goal(_goal(client, "")).accepted
    finally:
        client_node.close()
        proc.stop()
