"""Bring up a legged walker (legged node: cmd_vel -> gait trajectories to the legs' controller) with ros2_control, the mechanism_model nodes and RViz: robot.launch.py with
``model`` defaulting to lemur/lemur_hexapod.xml (any model works; ``kind:=auto`` lets the model decide).

    ros2 launch mechanism_model_ros walker.launch.py [model:=...] [hardware:=mock|<plugin>] [hardware_params:=...] [rviz:=true|false]

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
        DeclareLaunchArgument("model", default_value="lemur/lemur_hexapod.xml", description="model file or robot-library name"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(robot),
                                 launch_arguments={"model": LaunchConfiguration("model")}.items()),
    ])
