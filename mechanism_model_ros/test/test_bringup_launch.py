"""launch_testing test of the bringup launch file on a machine with ROS 2 (rclpy, launch_testing and a
colcon-built, sourced mechanism_model_msgs / mechanism_model_ros). Skipped cleanly elsewhere.

Run on a ROS 2 machine:  colcon test --packages-select mechanism_model_ros  or
                         launch_test test/ros/test_launch_bringup.py
"""

import os
import time
import unittest

import pytest

pytest.importorskip("launch_testing", reason="needs ROS 2 (launch_testing)")
rclpy = pytest.importorskip("rclpy", reason="needs ROS 2 (rclpy)")
pytest.importorskip("mechanism_model_msgs", reason="needs the built mechanism_model_msgs package")
ament_index = pytest.importorskip("ament_index_python.packages")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402

pytestmark = pytest.mark.rclpy


@pytest.mark.launch_test
def generate_test_description():
    share = ament_index.get_package_share_directory("mechanism_model_ros")
    bringup = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, "launch", "bringup.launch.py")),
        launch_arguments={"params_file": os.path.join(share, "config", "rocky8.yaml")}.items())
    return launch.LaunchDescription([bringup, launch_testing.actions.ReadyToTest()])


class TestBringup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("bringup_tester")

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def _spin_until(self, predicate, timeout=90.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not predicate():
            rclpy.spin_once(self.node, timeout_sec=0.1)
        return predicate()

    def test_tf_static_and_robot_description_are_latched(self):
        from std_msgs.msg import String
        from tf2_msgs.msg import TFMessage
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        static, desc = [], []
        self.node.create_subscription(TFMessage, "/tf_static", static.append, latched)
        self.node.create_subscription(String, "robot_description", desc.append, latched)
        self.assertTrue(self._spin_until(lambda: static and desc))
        self.assertIn("<robot", desc[0].data)
        self.assertTrue(any(t.child_frame_id == "mast_camera" for t in static[0].transforms))

    def test_compute_fk_answers(self):
        from mechanism_model_msgs.msg import ErrorCodes
        from mechanism_model_msgs.srv import ComputeFK
        client = self.node.create_client(ComputeFK, "compute_fk")
        self.assertTrue(client.wait_for_service(timeout_sec=90))
        req = ComputeFK.Request()
        req.fk_link_names = ["arm_turret"]
        future = client.call_async(req)
        self.assertTrue(self._spin_until(future.done))
        self.assertEqual(future.result().error_code.val, ErrorCodes.SUCCESS)
        bad = ComputeFK.Request()
        bad.fk_link_names = ["no_such_link"]
        future = client.call_async(bad)
        self.assertTrue(self._spin_until(future.done))
        self.assertEqual(future.result().error_code.val, ErrorCodes.INVALID_LINK_NAME)
