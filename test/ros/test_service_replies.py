"""Every service request gets a reply over the Cyclone transport (real Cyclone DDS on loopback, real message
definitions), even when the handler raises or the client's reply reader is discovered late.

The late reader is what a loaded machine produces: the client has matched the service's endpoints and writes
its request, but the server learns of the client's reply reader only later (discovery runs independently in
each process). A reply written before that match is dropped by DDS without a trace; the server used to wait
100 ms for it (rmw_cyclonedds' value). Here the reader is created only after the handler has returned and
well past those 100 ms: deterministic, not a race."""

import concurrent.futures
import logging
import threading
import time

import pytest

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

pytestmark = pytest.mark.ros

SRV = "mechanism_model_msgs/srv/ComputeFK"


@pytest.fixture
def nodes():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    server_ctx, client_ctx = CycloneContext(domain), CycloneContext(domain)
    server = CycloneNode("replier", context=server_ctx)
    client = CycloneNode("asker", context=client_ctx)
    try:
        yield server, client
    finally:
        client.close()
        server.close()
        client_ctx.close()
        server_ctx.close()


def test_a_raising_handler_is_answered_with_an_error_and_logged(nodes, caplog):
    server, client = nodes
    calls = []

    def handler(req, rep):
        calls.append(req.header.frame_id)
        if req.header.frame_id == "boom":
            raise ZeroDivisionError("a bug in the handler")
        if req.header.frame_id == "none":
            return None                   # forgot to return the response
        rep.message = "fine"
        rep.error_code.val = 1
        return rep
    server.create_service("fk", SRV, handler)
    c = client.create_client("fk", SRV)
    assert c.wait_for_service(30)
    with caplog.at_level(logging.ERROR, "mechanism_model_ros"):
        req = c.request()
        req.header.frame_id = "boom"
        rep = c.call(req, 60)            # a safety net: without the fix no reply ever comes
        assert rep.error_code.val == 99999                      # MoveIt's FAILURE
        assert "ZeroDivisionError" in rep.message and "a bug in the handler" in rep.message
        req.header.frame_id = "none"
        rep = c.call(req, 60)
        assert rep.error_code.val == 99999 and "returned None" in rep.message
    assert "handler raised ZeroDivisionError" in caplog.text and "Traceback" in caplog.text
    req.header.frame_id = "ok"
    rep = c.call(req, 60)                # the service keeps serving
    assert rep.error_code.val == 1 and rep.message == "fine"
    assert calls == ["boom", "none", "ok"]


def test_failure_response_marks_every_kind_of_error_field():
    from mechanism_model_ros.transports.base import failure_response
    from mechanism_model_ros.transports.typegen import service_wire_class
    rep = failure_response(service_wire_class("std_srvs/srv/Trigger_Response")(), KeyError("k"), "/t")
    assert rep.success is False and "KeyError" in rep.message and "/t" in rep.message
    rep = service_wire_class("action_msgs/srv/CancelGoal_Response")()
    assert failure_response(rep, ValueError("v"), "/c").return_code == 1         # ERROR_REJECTED


def _late_reader_client(client_node, name):
    """A client's request writer alone (its reply reader is created later by the test), as rmw_cyclonedds
    announces them: the same ``clientid`` in both endpoints' USER_DATA."""
    from mechanism_model_ros.transports.cyclone import _reader, _service_topics, _writer
    ctx = client_node.ctx
    req_cls, rep_cls, requests, replies, req_qos, rep_qos = _service_topics(ctx, "/" + name, SRV, "clientid")
    writer = _writer(ctx.participant, requests, req_qos)
    guid = writer.get_instance_handle() & 0xFFFFFFFFFFFFFFFF

    def make_reader():
        return _reader(ctx.participant, replies, rep_qos)
    return req_cls, writer, guid, make_reader


def test_a_reply_waits_for_a_client_reader_discovered_late(nodes):
    from mechanism_model_ros.transports.cyclone import take_valid
    from mechanism_model_ros.transports.typegen import HEADER_GUID, HEADER_SEQ
    server, client = nodes
    handled = threading.Event()

    def handler(req, rep):
        rep.message = "late but delivered"
        rep.error_code.val = 1
        handled.set()
        return rep
    server.create_service("late", SRV, handler)
    req_cls, writer, guid, make_reader = _late_reader_client(client, "late")
    assert wait_for(lambda: writer.get_matched_subscriptions(), 30)
    req = req_cls()
    setattr(req, HEADER_GUID, guid)
    setattr(req, HEADER_SEQ, 7)
    writer.write(req)
    assert handled.wait(60)
    # the reply is ready and the client's reader does not exist yet; it appears well after rmw_cyclonedds'
    # 100 ms (the old bound, after which the reply was written to nobody)
    time.sleep(0.5)
    reader = make_reader()
    got = []

    def replied():
        msgs, _ = take_valid(reader)
        got.extend(m for m in msgs if getattr(m, HEADER_GUID) == guid)
        return bool(got)
    assert wait_for(replied, 40), "the reply was lost"
    assert getattr(got[0], HEADER_SEQ) == 7 and got[0].message == "late but delivered"


def test_a_reply_whose_reader_never_appears_is_reported(nodes, caplog):
    server, client = nodes
    from mechanism_model_ros.transports.typegen import HEADER_GUID, HEADER_SEQ
    done = concurrent.futures.Future()

    def handler(req, rep):
        done.set_result(True)
        return rep
    service = server.create_service("never", SRV, handler)
    service.reply_match_timeout = 0.2
    req_cls, writer, guid, _ = _late_reader_client(client, "never")
    assert wait_for(lambda: writer.get_matched_subscriptions(), 30)
    req = req_cls()
    setattr(req, HEADER_GUID, guid)
    setattr(req, HEADER_SEQ, 3)
    with caplog.at_level(logging.WARNING, "mechanism_model_ros"):
        writer.write(req)
        assert done.result(60)
        assert wait_for(lambda: "was not discovered" in caplog.text, 60), caplog.text
    assert f"client {guid:x}, request 3" in caplog.text


def test_closing_the_nodes_and_contexts_ends_every_thread_they_started():
    """The Cyclone transport's threads -- each context's dispatcher and service pool, a service's own pool and
    its departed-client watcher, an own-thread timer -- all end once the nodes and their contexts are closed
    (joined, 5 s bound in all): none is left running in the process."""
    before = set(threading.enumerate())
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    server_ctx, client_ctx = CycloneContext(domain), CycloneContext(domain)
    server, client = CycloneNode("replier", context=server_ctx), CycloneNode("asker", context=client_ctx)
    ticks = []
    server.create_timer(0.01, lambda: ticks.append(1), own_thread=True)

    def handler(req, rep):
        rep.error_code.val = 1
        return rep
    server.create_service("fk", SRV, handler)
    c = client.create_client("fk", SRV)
    assert c.wait_for_service(30)
    assert c.call(c.request(), 60).error_code.val == 1
    assert wait_for(lambda: ticks, 20)
    started = [t for t in threading.enumerate() if t not in before]
    names = {t.name.rstrip("_0123456789") for t in started}
    assert {"mm-dds-dispatch", "mm-srv-fk", "mm-departed-fk", "mm-timer-replier"} <= names, names
    client.close()
    server.close()
    client_ctx.close()
    server_ctx.close()
    end = time.monotonic() + 5.0
    for t in started:
        t.join(max(0.0, end - time.monotonic()))
    assert not [t.name for t in started if t.is_alive()]
