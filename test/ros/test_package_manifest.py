"""mechanism_model_ros/package.xml declares what the nodes and the launch file use (as ament's dependency
checks would): every imported ROS or system Python package, and every message package named in a ROS type
string (``"tf2_msgs/msg/TFMessage"``), so ``rosdep install`` and a binary release get them all."""

import ast
import os
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from ros.dds_helpers import ROS_PKG

pytestmark = pytest.mark.ros

TOP = os.path.dirname(ROS_PKG)
#: Python modules -> rosdep keys; optional extras (pip only: the Cyclone transport's; coal, the core's collision
#: extra that compute_cartesian_path's avoid_collisions probes for) are not rosdep keys
ROSDEP = {"numpy": "python3-numpy", "scipy": "python3-scipy", "yaml": "python3-yaml"}
OPTIONAL = {"cyclonedds", "rosbags", "coal"}
OWN = {"mechanism_model_ros"}
#: interface packages only one optional feature speaks, not in the ROS distributions: the locomotor's `osr`
#: adapter uses the Open Source Rover's osr_interfaces, which an OSR has installed from its own repository
FOREIGN_INTERFACES = {"osr_interfaces"}


def _sources():
    for folder in (os.path.join(ROS_PKG, "mechanism_model_ros"), os.path.join(TOP, "launch")):
        for dirpath, _, files in os.walk(folder):
            yield from (os.path.join(dirpath, f) for f in files if f.endswith(".py"))


def _needed() -> set[str]:
    need = set()
    for path in _sources():
        text = open(path, encoding="utf-8").read()
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for n in names:
                top = n.split(".")[0]
                if top not in sys.stdlib_module_names and top not in OPTIONAL | OWN:
                    need.add(ROSDEP.get(top, top))
        # the Cyclone transport's types come from rosbags (its graph cache names rmw_dds_common), and type_hash.py
        # names service_msgs, which Humble does not have
        cyclone = os.path.join("transports", "cyclone") + os.sep
        if cyclone not in path and not path.endswith("type_hash.py"):
            need.update(m.group(1) for m in re.finditer(r'"([a-z0-9_]+)/(?:msg|srv)/[A-Za-z0-9]+', text))
    return need - FOREIGN_INTERFACES


def test_package_xml_declares_every_dependency():
    root = ET.parse(os.path.join(ROS_PKG, "package.xml")).getroot()
    declared = {e.text.strip() for e in root if e.tag in ("exec_depend", "depend")}
    need = _needed()
    assert {"rclpy", "tf2_msgs", "sensor_msgs", "mechanism_model_msgs", "launch_ros"} <= need   # the scan works
    assert not need - declared, f"package.xml lacks exec_depend on {sorted(need - declared)}"
