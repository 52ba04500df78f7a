"""No head-of-line blocking, over real DDS (Cyclone transport, and rclpy on Humble and Jazzy): with IK saturated (one
solving, one queued, the rest refused with SERVER_BUSY at once), compute_fk still answers before any IK
request finishes. Orderings and counts only, no wall-time thresholds (that the IK budget counts from arrival
is checked on the node logic: test/ros/test_nodes_in_memory.py)."""

import threading

import pytest

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for
from system.serving import TRANSPORTS, Server

pytestmark = [pytest.mark.ros, pytest.mark.serial]

SERVER_BUSY, TIMED_OUT, NO_IK_SOLUTION = -50, -6, -31


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fk_answers_while_ik_is_saturated_and_the_excess_is_refused(transport):
    d = unique_domain_id()
    configure_this_process(d)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    server = Server(transport, d, "-p", "ik_max_concurrent:=1", "-p", "ik_max_queued:=1")
    ctx = CycloneContext(d)
    node = CycloneNode("isolation_tester", context=ctx)
    try:
        fk = node.create_client("compute_fk", "mechanism_model_msgs/srv/ComputeFK")
        iks = [node.create_client("compute_ik", "mechanism_model_msgs/srv/ComputeIK") for _ in range(6)]
        assert fk.wait_for_service(60) and all(c.wait_for_service(60) for c in iks), server.stop()
        KC = node.message_class("mechanism_model_msgs/msg/KinematicConstraint")

        def ik_request(seconds, nanoseconds=0):
            r = iks[0].request()
            # two targets each within the arm's reach but not both at once (the wrist 0.4 m to the side of the
            # turret it carries): no bound proves that unreachable, so the solver searches until its timeout. (A
            # single target beyond reach would not do: the reach bound refuses it at once, the slot frees early.)
            r.constraints = [KC(link_name="arm_turret", kind=KC.POSITION), KC(link_name="arm_wrist", kind=KC.POSITION)]
            for c, y in zip(r.constraints, (0.2, -0.2)):
                c.target.position.x, c.target.position.y, c.target.position.z = 0.5, y, 0.2
            r.active_joints = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
            r.timeout.sec, r.timeout.nanosec = seconds, nanoseconds
            return r

        # every client's request and reply paths are matched before the test proper: a reply sent right after
        # discovery can be lost (the server's reply writer has not matched this client's reader yet, a DDS
        # discovery race); a bounded retry, one quick request per client
        for c, req in [(fk, fk.request())] + [(c, ik_request(0, 1_000_000)) for c in iks]:
            for attempt in range(3):
                try:
                    c.call(req, 20)
                    break
                except TimeoutError:
                    if attempt == 2:
                        raise
        done, results = [], {}

        def ik_call(i, client):
            rep = client.call(ik_request(5), 120)
            results[i] = (rep.error_code.val, rep.message)
            done.append(i)
        threads = [threading.Thread(target=ik_call, args=(i, c)) for i, c in enumerate(iks)]
        for t in threads:
            t.start()
        # wait until the refusals are back: then one IK request is solving and one is queued
        assert wait_for(lambda: sum(1 for v in results.values() if v[0] == SERVER_BUSY) >= 4, 90), results
        solving_done_before = {i for i, v in results.items() if v[0] != SERVER_BUSY}
        r = fk.request()
        r.fk_link_names = ["arm_turret"]
        rep = fk.call(r, 30)
        finished_when_fk_answered = {i for i, v in list(results.items()) if v[0] != SERVER_BUSY}
        for t in threads:
            t.join(60)
        assert rep.error_code.val == 1
        assert not solving_done_before and not finished_when_fk_answered, \
            "compute_fk waited for an IK request to finish"
        codes = sorted(v[0] for v in results.values())
        assert codes.count(SERVER_BUSY) == 4, results
        others = [v for v in results.values() if v[0] != SERVER_BUSY]
        assert all(c in (TIMED_OUT, NO_IK_SOLUTION) for c, _ in others), results
        assert all("busy" in m for c, m in results.values() if c == SERVER_BUSY)
    finally:
        node.close()
        ctx.close()
        text = server.stop()
    assert "Traceback" not in text, text
