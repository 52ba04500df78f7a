"""Bring up the mechanism_model nodes: the state publisher (TF for every frame, robot_description), the
kinematics server (compute_fk, compute_jacobian, compute_ik, compute_cartesian_path, check_state_validity)
and the statics server (compute_statics), over rclpy. With motors (ros2_control) and RViz: rover.launch.py.

    ros2 launch mechanism_model_ros bringup.launch.py
    ros2 launch mechanism_model_ros bringup.launch.py params_file:=<share>/config/mer_idd.yaml
    ros2 launch mechanism_model_ros bringup.launch.py model:=/path/to/robot.urdf frame_prefix:=r1/
    ros2 launch mechanism_model_ros bringup.launch.py floating_joints:=always    # for RViz: the chassis at home

Arguments: ``model`` (file or robot-library name; empty: the parameter file's ``model``),
``params_file`` (default: config/rocky8.yaml of this package), ``namespace``, ``frame_prefix``,
``floating_joints`` (the state publisher's; empty: the parameter file's),
``use_kinematics_server`` (true/false), ``use_statics_server`` (true/false), ``use_sim_time`` (true/false).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from mechanism_model_ros.launch_files import LaunchFiles, node_key, removal_actions


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
    floating = LaunchConfiguration("floating_joints").perform(context)
    if floating:
        overrides["floating_joints"] = floating
    if LaunchConfiguration("use_sim_time").perform(context).lower() in ("1", "true", "yes"):
        overrides["use_sim_time"] = True       # stamps from /clock (simulation, bag replay with --clock)
    wanted = lambda name: LaunchConfiguration(f"use_{name}").perform(context).lower() in ("1", "true", "yes")
    names = ["state_publisher"] + [name for name in ("kinematics_server", "statics_server") if wanted(name)]
    actions = []
    files = None
    if overrides:
        # the overrides in a file of this launch's own, removed when it is over (launch_files), not one that
        # launch_ros would write for a dict and leave in /tmp
        files = LaunchFiles()
        actions += removal_actions(files)
    for name in names:
        params = [params_file]
        if files is not None:
            params.append(files.parameters(f"{name}.yaml", overrides, node=node_key(name)))
        actions.append(Node(package="mechanism_model_ros", executable=name, name=name, namespace=namespace,
                            parameters=params, arguments=["--transport", "rclpy"], output="screen"))
    return actions


def generate_launch_description():
    share = get_package_share_directory("mechanism_model_ros")
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="",
                              description="model file or robot-library name (empty: the parameter file's)"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "rocky8.yaml"),
                              description="ROS 2 parameter file for both nodes"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of both nodes"),
        DeclareLaunchArgument("frame_prefix", default_value="", description="prefix of every frame id"),
        DeclareLaunchArgument("floating_joints", default_value="",
                              description="the state publisher's floating joints on /tf: when_reported | always | "
                                          "never (empty: the parameter file's); always: the body at home until "
                                          "joint_states report it, for RViz where nothing else publishes its pose"),
        DeclareLaunchArgument("use_kinematics_server", default_value="true"),
        DeclareLaunchArgument("use_statics_server", default_value="true"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="take time from /clock (Gazebo, ros2 bag play --clock)"),
        OpaqueFunction(function=_nodes),
    ])
