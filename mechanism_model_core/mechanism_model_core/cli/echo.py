"""``mechanism-model echo``: print a topic of the ROS 2 nodes (see :mod:`.ros_client`)."""

from .ros_client import ros_client_command

add_parser, run_argv, run = ros_client_command(
    "echo", "echo_main",
    "print a topic of the ROS 2 nodes (tf, tf_static, robot_description, joint_states) over Cyclone DDS, no ROS needed")
