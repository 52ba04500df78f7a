"""Drive a wheeled rover: the locomotor node (cmd_vel -> steering and wheel controller commands, odometry),
over rclpy, next to ros2_control's controllers (steering_controller, wheel_controller).

    ros2 launch mechanism_model_ros locomotor.launch.py
    ros2 launch mechanism_model_ros locomotor.launch.py model:=fido/fido_rover.xml drive_mode:=crab

Arguments: ``model`` (file or robot-library name; empty: the parameter file's ``model``), ``params_file``
(default: config/rocky8.yaml of this package), ``namespace``, ``drive_mode`` (auto, ackermann, crab,
turn_in_place, skid; empty: the parameter file's), ``cmd_vel_stamped`` (true/false), ``publish_tf``
(true/false), ``use_sim_time`` (true/false).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from mechanism_model_ros.launch_files import LaunchFiles, node_key, removal_actions


def _truth(text):
    return text.lower() in ("1", "true", "yes")


def _nodes(context):
    get = lambda name: LaunchConfiguration(name).perform(context)
    overrides = {}
    if get("model"):
        overrides["model"] = get("model")
    if get("drive_mode"):
        overrides["drive_mode"] = get("drive_mode")
    for flag in ("cmd_vel_stamped", "publish_tf"):
        if get(flag):
            overrides[flag] = _truth(get(flag))
    if _truth(get("use_sim_time")):
        overrides["use_sim_time"] = True
    params = [get("params_file")]
    actions = []
    if overrides:
        # the overrides in a file of this launch's own, removed when it is over (launch_files), not one that
        # launch_ros would write for a dict and leave in /tmp
        files = LaunchFiles()
        actions += removal_actions(files)
        params.append(files.parameters("locomotor.yaml", overrides, node=node_key("locomotor")))
    return actions + [Node(package="mechanism_model_ros", executable="locomotor", name="locomotor",
                           namespace=get("namespace"), parameters=params, arguments=["--transport", "rclpy"],
                           output="screen")]


def generate_launch_description():
    share = get_package_share_directory("mechanism_model_ros")
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="", description="model file or robot-library name"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "rocky8.yaml"),
                              description="ROS 2 parameter file (the /**/locomotor section)"),
        DeclareLaunchArgument("namespace", default_value=""),
        DeclareLaunchArgument("drive_mode", default_value="",
                              description="auto | ackermann | crab | turn_in_place | skid (empty: the file's)"),
        DeclareLaunchArgument("cmd_vel_stamped", default_value="", description="true: TwistStamped on cmd_vel"),
        DeclareLaunchArgument("publish_tf", default_value="", description="odom -> base on /tf"),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
        OpaqueFunction(function=_nodes),
    ])
