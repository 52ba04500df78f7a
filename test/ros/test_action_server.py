"""The Cyclone transport's action server (rcl_action's protocol), over real Cyclone DDS on loopback: goals
accepted or rejected, feedback, succeed/abort/cancel, an execute that raises or leaves its goal open, and a
get_result that waits for the goal's end. Interoperation: rclpy's ActionClient (real ROS 2 Humble) drives the
Cyclone server."""

import json
import threading
import time

import pytest

from mechanism_model_ros.transports.base import STATUS_ABORTED, STATUS_CANCELED, STATUS_SUCCEEDED

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

ACTION = "control_msgs/action/FollowJointTrajectory"


class Server:
    """A FollowJointTrajectory server whose behaviour the first joint name selects: ``ok`` succeeds after
    three feedbacks, ``slow`` runs until cancelled, ``fail`` aborts, ``raise`` raises, ``open`` returns
    without ending its goal; a goal without joints is rejected."""

    def __init__(self, node):
        from mechanism_model_ros.typegen import message_class
        self.Result = message_class("control_msgs/action/FollowJointTrajectory_Result")
        self.Feedback = message_class("control_msgs/action/FollowJointTrajectory_Feedback")
        self.executed = []
        node.create_action_server("/arm/follow_joint_trajectory", ACTION, self.execute,
                                  goal_callback=lambda goal: bool(goal.trajectory.joint_names))

    def execute(self, handle):
        kind = handle.request.trajectory.joint_names[0]
        self.executed.append(kind)
        for k in range(200 if kind == "slow" else 3):
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
    yield domain, server, client
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
    _, server, client = nodes
    feedback = []
    h = client.send_goal(_goal(client, kind), feedback.append)
    assert h.accepted
    r = h.get_result(20)
    assert (r.status, r.result.error_code) == (status, code)
    assert [list(f.joint_names) for f in feedback] == [[kind, "0"], [kind, "1"], [kind, "2"]]
    assert wait_for(lambda: h.status == status, 5)        # the status topic says so too


def test_a_goal_without_joints_is_rejected(nodes):
    _, server, client = nodes
    before = list(server.executed)
    h = client.send_goal(_goal(client, ""))
    assert not h.accepted and server.executed == before


def test_cancel(nodes):
    _, server, client = nodes
    h = client.send_goal(_goal(client, "slow"))
    assert h.accepted
    time.sleep(0.1)
    assert h.cancel(10) == 0
    r = h.get_result(20)
    assert r.status == STATUS_CANCELED and r.result.error_string == "stopped"
    assert h.cancel(10) == 3            # ERROR_GOAL_TERMINATED: already over


def test_many_goals_at_once(nodes):
    _, server, client = nodes
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
        out[kind] = [h.accepted, r.status, r.result.error_code, r.result.error_string, len(fb)]
    g = c.goal(); g.trajectory.joint_names = ["slow"]
    h = c.send_goal(g)
    import time; time.sleep(0.2)
    out["cancel"] = [h.cancel(10), h.get_result(30).status]
    out["rejected"] = c.send_goal(c.goal()).accepted
finally:
    stop.set(); th.join(); node.close()
print(json.dumps(out))
"""


def test_rclpy_action_client_drives_the_cyclone_server(nodes):
    from ros import ros_env

    domain, server, _ = nodes
    p = ros_env.run_python(RCLPY_CLIENT, domain, timeout=120, with_workspace=False)
    assert p.returncode == 0, p.stdout + p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["ok"] == [True, STATUS_SUCCEEDED, 0, "done", 3]
    assert out["fail"] == [True, STATUS_ABORTED, -5, "goal tolerance", 3]
    assert out["cancel"] == [0, STATUS_CANCELED] and out["rejected"] is False
