"""System tests: the same setup as the ROS-layer tests (mechanism_model_ros importable from a source
checkout, clean skips without cyclonedds or rosbags), from test/ros/conftest.py."""

from ros.conftest import ROS_PKG  # noqa: F401  (importing it runs the setup)
from ros.conftest import close_what_the_module_opened  # noqa: F401  (the fixture, autouse here too)
