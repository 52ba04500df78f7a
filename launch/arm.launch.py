"""Bring up an arm or mast on a fixed base (manipulator node: checked trajectories to its joint_trajectory_controller) with ros2_control, the mechanism_model nodes and RViz: robot.launch.py with
``model`` defaulting to mer/mer_idd.xml (any model works; ``kind:=auto`` lets the model decide).

    ros2 launch mechanism_model_ros arm.launch.py [model:=...] [hardware:=mock|<plugin>] [hardware_params:=...] [rviz:=true|false]

Every argument of robot.launch.py applies (see its documentation).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration


def generate_launch_description():
    robot = os.path.join(get_package_share_directory("mechanism_model_ros"), "launch", "robot.launch.py")
    return LaunchDescription([
        DeclareLaunchArgument("model", default_value="mer/mer_idd.xml", description="model file or robot-library name"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(robot),
                                 launch_arguments={"model": LaunchConfiguration("model")}.items()),
    ])
