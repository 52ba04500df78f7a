"""Timers of the transport interface: periodic calls, cancel, bad periods, a raising callback that does not
stop the timer, and the concurrency contract (timer and subscription callbacks of a node never overlap),
over real Cyclone DDS on loopback."""

import threading
import time

import pytest

from mechanism_model_ros.transports.base import TransportError

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

pytestmark = pytest.mark.ros


@pytest.fixture(scope="module")
def node():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    ctx = CycloneContext(domain)
    n = CycloneNode("timers", context=ctx)
    yield n
    n.close()
    ctx.close()


def test_a_timer_calls_back_until_cancelled(node):
    calls = []
    t = node.create_timer(0.01, lambda: calls.append(time.monotonic()))
    assert t.period == 0.01 and not t.is_canceled
    assert wait_for(lambda: len(calls) >= 5, timeout=10)
    t.cancel()
    assert t.is_canceled
    n = len(calls)
    time.sleep(0.1)
    assert len(calls) <= n + 1          # at most a call that was already running
    assert all(b > a for a, b in zip(calls, calls[1:]))


def test_a_raising_timer_callback_is_logged_and_the_timer_goes_on(node, caplog):
    calls = []

    def boom():
        calls.append(1)
        raise RuntimeError("bug in a watchdog")
    t = node.create_timer(0.01, boom)
    try:
        assert wait_for(lambda: len(calls) >= 3, timeout=10)
    finally:
        t.cancel()
    assert "timer raised RuntimeError" in caplog.text


@pytest.mark.parametrize("period", [0, -1, float("nan"), float("inf"), "x", None])
def test_bad_periods_are_refused(node, period):
    with pytest.raises(TransportError, match="period"):
        node.create_timer(period, lambda: None)


def test_timer_and_subscription_callbacks_never_overlap(node):
    from mechanism_model_ros.qos import DEFAULT

    busy = threading.Event()
    overlaps, ticks, got = [], [], []

    def on_msg(m):
        busy.set()
        time.sleep(0.02)
        got.append(m.data)
        busy.clear()

    def tick():
        overlaps.append(busy.is_set())
        ticks.append(threading.get_ident())

    node.create_subscription("timer_overlap", "std_msgs/msg/String", DEFAULT, on_msg)
    pub = node.create_publisher("timer_overlap", "std_msgs/msg/String", DEFAULT)
    String = node.message_class("std_msgs/msg/String")
    t = node.create_timer(0.005, tick)
    try:
        assert wait_for(lambda: pub.subscription_count > 0, timeout=10)
        k = 0
        end = time.monotonic() + 30
        while (len(got) < 10 or len(ticks) < 10) and time.monotonic() < end:
            pub.publish(String(data=str(k)))
            k += 1
            time.sleep(0.01)
    finally:
        t.cancel()
    assert len(got) >= 10 and len(ticks) >= 10 and not any(overlaps)


def test_closing_the_node_stops_its_timers(node):
    from mechanism_model_ros.transports.cyclone import CycloneNode

    n = CycloneNode("short_lived", context=node.ctx)
    calls = []
    t = n.create_timer(0.01, lambda: calls.append(1))
    assert wait_for(lambda: calls, timeout=10)
    n.close()
    assert t.is_canceled
    count = len(calls)
    time.sleep(0.05)
    assert len(calls) <= count + 1
