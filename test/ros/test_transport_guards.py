"""Parameter values in their defaults' types, and callbacks that raise: the node keeps going (rclpy's
executors re-raise a callback's exception out of spin_once; the Cyclone dispatcher takes samples in
batches). The Cyclone part runs over real Cyclone DDS on loopback."""

import array
import logging

import pytest

from mechanism_model_ros.params import coerce_parameter
from mechanism_model_ros.transports.base import guarded

from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for

pytestmark = pytest.mark.ros


def test_parameter_values_take_their_defaults_type():
    # what rclpy hands back for a dynamically typed parameter set from YAML or -p
    assert coerce_parameter("ik_timeout", 1, 1.0) == 1.0 and isinstance(coerce_parameter("t", 1, 1.0), float)
    assert coerce_parameter("n", 3.0, 2) == 3
    assert coerce_parameter("frame_prefix", 7, "") == "7"
    assert coerce_parameter("loop_closures", ("a:b",), []) == ["a:b"]
    assert coerce_parameter("w", array.array("d", [1.0, 2.0]), []) == [1.0, 2.0]
    assert coerce_parameter("reliable", True, False) is True
    assert coerce_parameter("model", None, "x.xml") == "x.xml"
    for name, value, default in [("reliable", "false", False), ("reliable", 1, False), ("ik_timeout", "1", 1.0),
                                 ("ik_timeout", True, 1.0), ("n", 2.5, 2), ("loop_closures", "a:b", []),
                                 ("frame_prefix", [1], "")]:
        with pytest.raises(ValueError, match=name):
            coerce_parameter(name, value, default)


def test_guarded_callback_logs_and_a_service_handler_still_answers(caplog):
    log = logging.getLogger("test_guards")

    def boom(*args):
        raise ZeroDivisionError("x")
    with caplog.at_level(logging.ERROR, "test_guards"):
        assert guarded(boom, log, "subscription /js")("msg") is None
        response = object()
        assert guarded(boom, log, "service /s", fallback=lambda a: a[1])("req", response) is response
    assert "subscription /js raised ZeroDivisionError" in caplog.text


def test_a_raising_subscription_callback_loses_no_other_sample():
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.qos import DEFAULT
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode

    ctx = CycloneContext(domain)
    node = CycloneNode("guards", context=ctx)
    try:
        got = []

        def callback(m):
            if m.data == "bad":
                raise RuntimeError("a bug in a callback")
            got.append(m.data)
        reader = node.create_subscription("chatter", "std_msgs/msg/String", DEFAULT.with_depth(100), callback)
        pub = node.create_publisher("chatter", "std_msgs/msg/String", DEFAULT.with_depth(100))
        String = node.message_class("std_msgs/msg/String")
        assert wait_for(lambda: pub.subscription_count and reader.handle.get_matched_publications(), 10)
        for i in range(50):          # written back to back: the dispatcher takes them in batches
            pub.publish(String(data="bad" if i % 5 == 0 else str(i)))
        expected = [str(i) for i in range(50) if i % 5]
        assert wait_for(lambda: len(got) >= len(expected), 10)
        assert got == expected
    finally:
        node.close()
        ctx.close()
