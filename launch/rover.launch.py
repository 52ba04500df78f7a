"""Bring up a wheeled rover (locomotor: cmd_vel -> steering and wheel controllers, odometry; manipulator for its mast and arm) with ros2_control, the mechanism_model nodes and RViz: robot.launch.py with
``model`` defaulting to rocky8/rocky8_rover.xml (any model works; ``kind:=auto`` lets the model decide).

    ros2 launch mechanism_model_ros rover.launch.py [model:=...] [hardware:=mock|<plugin>] [hardware_params:=...] [rviz:=true|false]

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
        DeclareLaunchArgument("model", default_value="rocky8/rocky8_rover.xml", description="model file or robot-library name"),
        IncludeLaunchDescription(PythonLaunchDescriptionSource(robot),
                                 launch_arguments={"model": LaunchConfiguration("model")}.items()),
    ])
