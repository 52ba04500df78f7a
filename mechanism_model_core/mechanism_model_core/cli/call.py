"""``mechanism-model call``: call a service of the ROS 2 nodes (see :mod:`.ros_client`)."""

from .ros_client import ros_client_command

add_parser, run_argv, run = ros_client_command(
    "call", "call_main",
    "call a service of the ROS 2 nodes (compute_fk, compute_ik ...) over Cyclone DDS, no ROS needed")
