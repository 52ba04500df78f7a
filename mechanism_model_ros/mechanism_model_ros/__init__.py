"""ROS 2 layer of the mechanism_model suite: nodes (state publisher, kinematics server), message
conversions and two transports (rclpy for ROS 2 installations, plain Cyclone DDS speaking the ROS 2 wire
protocol for machines without ROS). Nodes hold no math: they convert messages and call
:mod:`mechanism_model_core`."""

__version__ = "0.1.0"
