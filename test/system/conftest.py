"""ROS-layer tests: make mechanism_model_ros importable from a source checkout and skip cleanly where the
Cyclone DDS / rosbags pieces are missing."""

import os
import sys

import pytest

ROS_PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "mechanism_model_ros")
if ROS_PKG not in sys.path:
    sys.path.insert(0, ROS_PKG)

pytest.importorskip("cyclonedds", reason="needs cyclonedds from PyPI")
pytest.importorskip("rosbags", reason="needs rosbags from PyPI")
