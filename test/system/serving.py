"""``serve`` in its own process over the Cyclone transport or over rclpy on ROS 2 Humble/Jazzy, for the
system tests that run over both transports (one set of tests, parametrized by ``TRANSPORTS``)."""

import pytest

from ros.dds_helpers import start_serve, stop

#: where the nodes run: our Cyclone transport, or rclpy on ROS 2 Humble and on Jazzy (test/ros/ros_env.py; on
#: shared/ros2's core-only Jazzy the workspace also builds the standard interface packages it lacks); the test
#: side is this process's Cyclone transport either way, so over rclpy every test is also interop.
TRANSPORTS = ["cyclone", pytest.param("rclpy-humble", marks=pytest.mark.rclpy),
              pytest.param("rclpy-jazzy", marks=pytest.mark.rclpy)]

class Server:
    """``serve`` in its own process over ``transport``; ``poll()`` and ``stop() -> output`` either way."""

    def __init__(self, transport: str, domain: int, *args: str, env: dict | None = None):
        self.transport = transport
        if transport == "cyclone":
            self.proc, self.ros = start_serve(domain, *args, env=env), None
        else:
            from ros import ros_env
            distro = transport.split("-")[1]
            ros_env.require(distro)
            self.proc = self.ros = ros_env.start_serve(domain, *args, distro=distro)

    def poll(self):
        return self.proc.poll() if self.ros is None else self.ros.proc.poll()

    def stop(self) -> str:
        if self.ros is None:
            out, err = stop(self.proc)
            return out + err
        return self.ros.stop()
