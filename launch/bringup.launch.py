"""Bring up the mechanism_model nodes: the state publisher (TF for every frame, robot_description), the
kinematics server (compute_fk, compute_jacobian, compute_ik, compute_cartesian_path, check_state_validity)
and the statics server (compute_statics), over rclpy. With motors (ros2_control) and RViz: rover.launch.py.

    ros2 launch mechanism_model_ros bringup.launch.py
    ros2 launch mechanism_model_ros bringup.launch.py params_file:=<share>/config/mer_idd.yaml
    ros2 launch mechanism_model_ros bringup.launch.py model:=/path/to/robot.urdf frame_prefix:=r1/

Arguments: ``model`` (file or robot-library name; empty: the parameter file's ``model``),
``params_file`` (default: config/rocky8.yaml of this package), ``namespace``, ``frame_prefix``,
``use_kinematics_server`` (true/false), ``use_statics_server`` (true/false), ``use_sim_time`` (true/false).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _nodes(context):
    model = LaunchConfiguration("model").perform(context)
    params_file = LaunchConfiguration("params_file").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    prefix = LaunchConfiguration("frame_prefix").perform(context)
    overrides = {}
    if model:
        overrides["model"] = model
    if prefix:
        overrides["frame_prefix"] = prefix
    if LaunchConfiguration("use_sim_time").perform(context).lower() in ("1", "true", "yes"):
        overrides["use_sim_time"] = True       # stamps from /clock (simulation, bag replay with --clock)
    params = [params_file] + ([overrides] if overrides else [])
    nodes = [Node(package="mechanism_model_ros", executable="state_publisher", name="state_publisher",
                  namespace=namespace, parameters=params, arguments=["--transport", "rclpy"],
                  output="screen")]
    if LaunchConfiguration("use_kinematics_server").perform(context).lower() in ("1", "true", "yes"):
        nodes.append(Node(package="mechanism_model_ros", executable="kinematics_server",
                          name="kinematics_server", namespace=namespace, parameters=params,
                          arguments=["--transport", "rclpy"], output="screen"))
    if LaunchConfiguration("use_statics_server").perform(context).lower() in ("1", "true", "yes"):
        nodes.append(Node(package="mechanism_model_ros", executable="statics_server",
                          name="statics_server", namespace=namespace, parameters=params,
                          arguments=["--transport", "rclpy"], output="screen"))
    return nodes


def generate_launch_description():
    share = get_package_share_directory("mechanism_model_ros")
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="",
                              description="model file or robot-library name (empty: the parameter file's)"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "rocky8.yaml"),
                              description="ROS 2 parameter file for both nodes"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of both nodes"),
        DeclareLaunchArgument("frame_prefix", default_value="", description="prefix of every frame id"),
        DeclareLaunchArgument("use_kinematics_server", default_value="true"),
        DeclareLaunchArgument("use_statics_server", default_value="true"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="take time from /clock (Gazebo, ros2 bag play --clock)"),
        OpaqueFunction(function=_nodes),
    ])
