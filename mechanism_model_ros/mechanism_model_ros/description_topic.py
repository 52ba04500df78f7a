"""Receiving the robot description (URDF text) from a ``robot_description`` topic, on any transport. Plain
Python: the Cyclone client (``mechanism-model-echo``, ``info --from-topic``) uses it without loading model
code; :mod:`.model_loading` builds the mechanism from the text."""

from __future__ import annotations

import threading
import time

from . import qos


def receive_robot_description(transport, topic: str = "/robot_description", timeout: float = 30.0,
                              stop: threading.Event | None = None) -> str | None:
    """The URDF text of the first message on ``topic`` (``std_msgs/String``, reliable, transient local, so a
    description published before this subscribes still arrives), waiting at most ``timeout`` seconds;
    :class:`TimeoutError` naming the topic when none comes. None when ``stop`` is set first (serve: Ctrl-C
    while the program waits for its model; looked at every 0.1 s)."""
    got: list = []
    arrived = threading.Event()

    def on_message(msg):
        if not got:
            got.append(msg.data)
            arrived.set()

    transport.create_subscription(topic, "std_msgs/msg/String", qos.LATCHED, on_message)
    end = time.monotonic() + timeout
    while not arrived.wait(max(0.0, min(0.1, end - time.monotonic())) if stop is not None else timeout):
        if stop is not None and stop.is_set():
            return None
        if stop is None or time.monotonic() >= end:
            raise TimeoutError(f"no robot description on {topic} within {timeout:g} s (is the robot's bringup, "
                               f"e.g. robot_state_publisher, running in this ROS domain?)")
    return got[0]
