"""The rclpy transport on a real rclpy (run by ``colcon test`` in a sourced workspace; the repository's
test/ros/test_rclpy_package.py runs it in CI): parameters are declared with values, values are converted to
their defaults' types, a raising callback does not stop the executor, and ``serve --transport auto`` picks
rclpy where rclpy imports."""

import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy", reason="needs ROS 2 (rclpy)")
pytest.importorskip("mechanism_model_msgs", reason="needs the built mechanism_model_msgs package")

from rclpy.parameter import Parameter  # noqa: E402

from mechanism_model_ros.transports.rclpy_transport import RclpyRuntime  # noqa: E402

pytestmark = pytest.mark.rclpy


@pytest.fixture
def runtime():
    rt = RclpyRuntime(["--ros-args", "-p", "ik_timeout:=2"])
    stop = threading.Event()
    yield rt, stop
    stop.set()
    for n in rt.nodes:
        n.close()
    rt.shutdown()


def test_parameters_have_values_and_their_defaults_types(runtime):
    rt, _ = runtime
    node = rt.node("params_node", parameters={"frame_prefix": "r1/"})
    # an empty list default is declared as an empty string array (not "not set", not a byte array)
    assert node.get_parameter("loop_closures", []) == []
    p = node.node.get_parameter("loop_closures")
    assert p.type_ == Parameter.Type.STRING_ARRAY and list(p.value) == []
    # the -p override (an integer) read as the default's type (float)
    assert node.get_parameter("ik_timeout", 1.0) == 2.0 and isinstance(node.get_parameter("ik_timeout", 1.0), float)
    assert node.get_parameter("frame_prefix", "") == "r1/"
    # a later set of the list parameter (what `ros2 param set` does) is accepted
    result = node.node.set_parameters([Parameter("loop_closures", Parameter.Type.STRING_ARRAY, ["a:b:position"])])
    assert result[0].successful
    assert node.get_parameter("loop_closures", []) == ["a:b:position"]


def test_a_raising_callback_does_not_stop_the_executor(runtime):
    rt, stop = runtime
    node = rt.node("guard_node")
    from mechanism_model_ros import qos
    got = []

    def callback(msg):
        got.append(msg.data)
        if msg.data == "boom":
            raise RuntimeError("boom")
    node.create_subscription("guard_topic", "std_msgs/msg/String", qos.DEFAULT, callback)
    pub = node.create_publisher("guard_topic", "std_msgs/msg/String", qos.DEFAULT)
    String = node.message_class("std_msgs/msg/String")
    spinner = threading.Thread(target=rt.spin, args=(stop,), daemon=True)
    spinner.start()
    end = time.monotonic() + 20
    while time.monotonic() < end and "after" not in got:
        pub.publish(String(data="boom"))
        pub.publish(String(data="after"))
        time.sleep(0.1)
    stop.set()
    spinner.join(5)
    assert "boom" in got and "after" in got


def test_serve_auto_picks_rclpy_where_rclpy_imports():
    from mechanism_model_ros.serve import resolve_transport
    assert resolve_transport("auto") == "rclpy"
    assert resolve_transport("cyclone") == "cyclone"


def test_timer_and_subscription_callbacks_never_overlap_on_either_executor(runtime):
    """The transport's contract (a node's timer and subscription callbacks never run at the same time) where
    RclpyRuntime runs a node's subscriptions in a take loop of their own (a node without services) and where
    they share the multi-threaded executor (a node with a service)."""
    rt, stop = runtime
    from mechanism_model_ros import qos
    alone = rt.node("contract_alone")
    serving = rt.node("contract_serving")
    serving.create_service("contract_trigger", "std_srvs/srv/Trigger", lambda req, rep: rep)
    state = {}
    for node in (alone, serving):
        s = state[node.node_name] = {"inside": False, "overlaps": 0, "subs": 0, "timers": 0, "unlocked": 0}

        def enter(kind, s=s, node=node):
            if not node.exclusive.locked():     # the lock, not timing luck, is what keeps the contract
                s["unlocked"] += 1
            if s["inside"]:
                s["overlaps"] += 1
            s["inside"] = True
            time.sleep(0.002)
            s[kind] += 1
            s["inside"] = False
        topic = f"{node.node_name}_topic"
        node.create_subscription(topic, "std_msgs/msg/String", qos.DEFAULT, lambda _m, enter=enter: enter("subs"))
        node.create_timer(0.003, lambda enter=enter: enter("timers"))
    pubs = [(alone.create_publisher("contract_alone_topic", "std_msgs/msg/String", qos.DEFAULT)),
            (serving.create_publisher("contract_serving_topic", "std_msgs/msg/String", qos.DEFAULT))]
    String = alone.message_class("std_msgs/msg/String")
    spinner = threading.Thread(target=rt.spin, args=(stop,), daemon=True)
    spinner.start()
    end = time.monotonic() + 60
    while time.monotonic() < end and not all(s["subs"] >= 50 and s["timers"] >= 20 for s in state.values()):
        for p in pubs:
            p.publish(String(data="x"))
        time.sleep(0.001)
    stop.set()
    spinner.join(5)
    for name, s in state.items():
        assert s["subs"] >= 50 and s["timers"] >= 20, (name, s)
        assert s["overlaps"] == 0 and s["unlocked"] == 0, (name, s)
