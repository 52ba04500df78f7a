"""One command for a robot with motors: ros2_control, the mechanism_model nodes and RViz, all from the model.

    ros2 launch mechanism_model_ros rover.launch.py                                  # Rocky 8, mock hardware
    ros2 launch mechanism_model_ros rover.launch.py model:=fido/fido_rover.xml rviz:=false
    ros2 launch mechanism_model_ros rover.launch.py hardware:=my_robot_hardware/MySystem \\
        hardware_params:="{port: /dev/ttyACM0, baud: 115200}"
    ros2 launch mechanism_model_ros walker.launch.py       # LEMUR hexapod (legs_controller, legged node)
    ros2 launch mechanism_model_ros arm.launch.py          # MER IDD (arm_controller, manipulator node)

At launch time (``mechanism_model_ros.bringup_plan``) the model's motor groups give the ``<ros2_control>``
block and the controller_manager YAML (``mechanism-model ros2-control`` in memory; that YAML and the nodes'
parameter files go to a temporary directory of this launch, ``mechanism_model_ros.launch_files``, removed when
the launch has shut down and its last process has exited), and the model tells the robot's kind: a rover (wheels in its
``<Mobility>``) gets the locomotor (and the manipulator for its mast and arm), a walker the legged node, an arm
the manipulator. Started: the state publisher (publishing that URDF on ``robot_description``, where
``ros2_control_node`` takes it from: ``~/robot_description`` remapped, Humble's non-deprecated way), the
kinematics and statics servers, ``ros2_control_node`` with the hardware plugin, one ``spawner`` for
joint_state_broadcaster and every motor group's controller, the node that moves the robot, and RViz with
the shipped configuration of the robot's kind (fixed frame ``odom`` for a rover, the body for a walker, the
base for an arm). If the hardware plugin is not installed the launch stops before starting anything; if
``ros2_control_node`` or the spawner fails, the whole launch shuts down (the motor nodes send their stop
commands on the way down). At a shutdown ``ros2_control_node`` stays up for ``CONTROL_STOP_DELAY`` seconds
after the others are signalled (``mechanism_model_ros.shutdown_delay``), so those stop commands reach the
controllers before the controller manager deactivates the hardware.

Arguments: ``model`` (file or robot-library name), ``kind`` (auto, rover, walker, arm), ``hardware`` (``mock``:
the model's own plugin, by default mock_components/GenericSystem; or a plugin name), ``hardware_params``
(YAML mapping), ``rviz`` (true/false), ``rviz_config`` (a file; default the kind's), ``namespace``,
``params_file`` (extra ROS 2 parameters for the mechanism_model nodes), ``use_sim_time``.
"""

import os
import sys

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, LogInfo, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from mechanism_model_ros.launch_files import LaunchFiles, node_key, removal_actions


#: seconds ros2_control_node keeps running after a launch shutdown begins (mechanism_model_ros.shutdown_delay):
#: the locomotor's and legged node's stop commands go out at once, the timed controllers' command timeout
#: is 0.25 s; the launch escalates to SIGTERM only after its sigterm_timeout (5 s)
CONTROL_STOP_DELAY = 1.0


def _truth(text):
    return text.strip().lower() in ("1", "true", "yes", "on")


def _bringup(context):
    from mechanism_model_core import load_model
    from mechanism_model_core.library import model_path
    from mechanism_model_ros.bringup_plan import (BringupError, check_controller_plugins, check_hardware_plugin,
                                                  parse_hardware_params, plan)

    get = lambda name: LaunchConfiguration(name).perform(context)
    share = get_package_share_directory("mechanism_model_ros")
    model = model_path(get("model"))
    namespace = get("namespace")
    try:
        p = plan(load_model(model), hardware=get("hardware"),
                 hardware_params=parse_hardware_params(get("hardware_params")), kind=get("kind"))
        check_hardware_plugin(p.hardware)
        check_controller_plugins(p.controllers_yaml)
    except (BringupError, ValueError) as exc:
        raise RuntimeError(f"mechanism_model bringup of {model}: {exc}") from None
    # every generated file in one directory of this launch, removed when the launch is over (launch_files)
    files = LaunchFiles()
    controllers_yaml = files.write("controllers.yaml", p.controllers_yaml)
    sim = {"use_sim_time": True} if _truth(get("use_sim_time")) else {}
    sim_file = [files.parameters("use_sim_time.yaml", sim)] if sim else []
    actions = [LogInfo(msg=f"mechanism_model: {p.kind} {model}: nodes {', '.join(p.nodes)}; hardware "
                           f"{p.hardware}; controllers {', '.join(p.controllers)}; RViz fixed frame {p.fixed_frame}; "
                           f"generated files in {files.path}")]
    actions += removal_actions(files)
    for name in p.nodes:
        key = node_key(name)
        params = [files.parameters(f"{name}.yaml", {"model": model, **sim}, node=key)] + \
            ([get("params_file")] if get("params_file") else [])
        extra = []
        if name == "state_publisher":
            # the URDF with its <ros2_control> block, published verbatim for ros2_control_node and RViz
            params.append(files.parameters("robot_description.yaml", {"robot_description": p.robot_description},
                                           node=key))
            extra = ["--model", model]
        actions.append(Node(package="mechanism_model_ros", executable=name, name=name, namespace=namespace,
                            parameters=params, arguments=["--transport", "rclpy", *extra], output="screen"))
    # the controller manager outlives the motor nodes at shutdown (shutdown_delay): their stop commands
    # reach the controllers, and the timed controllers zero any group whose commands stopped, before it goes
    control = Node(package="controller_manager", executable="ros2_control_node", namespace=namespace,
                   prefix=f"{sys.executable} -m mechanism_model_ros.shutdown_delay --delay {CONTROL_STOP_DELAY} --",
                   parameters=[controllers_yaml, *sim_file],
                   remappings=[("~/robot_description", "robot_description")], output="screen")
    spawner = Node(package="controller_manager", executable="spawner", namespace=namespace,
                   arguments=["joint_state_broadcaster", *p.controllers, "--controller-manager", "controller_manager",
                              "--controller-manager-timeout", "60"], output="screen")
    actions += [control, spawner]

    def _died(what):
        def handler(event, _context):
            if event.returncode != 0:
                return [LogInfo(msg=f"mechanism_model: {what} exited with {event.returncode}: shutting the robot "
                                    f"down"), EmitEvent(event=Shutdown(reason=f"{what} failed"))]
            return None
        return handler
    actions.append(RegisterEventHandler(OnProcessExit(target_action=control,
                                                      on_exit=_died("ros2_control_node"))))
    actions.append(RegisterEventHandler(OnProcessExit(target_action=spawner, on_exit=_died("the spawner"))))
    if _truth(get("rviz")):
        config = get("rviz_config") or os.path.join(share, "rviz", p.rviz_config)
        actions.append(Node(package="rviz2", executable="rviz2", name="rviz2", namespace=namespace,
                            arguments=["-d", config, "--fixed-frame", p.fixed_frame],
                            parameters=[files.parameters("rviz2.yaml", sim, node=node_key("rviz2"))] if sim
                            else [],
                            output="screen"))
    return actions


def launch_arguments(model="rocky8/rocky8_rover.xml", kind="auto"):
    """The arguments every robot launch declares (``model`` and ``kind`` defaults per launch)."""
    return [
        DeclareLaunchArgument("model", default_value=model, description="model file or robot-library name"),
        DeclareLaunchArgument("kind", default_value=kind, description="auto | rover | walker | arm"),
        DeclareLaunchArgument("hardware", default_value="mock",
                              description="mock (the model's plugin, default mock_components/GenericSystem) or "
                                          "a hardware_interface plugin name"),
        DeclareLaunchArgument("hardware_params", default_value="",
                              description="the plugin's <param>s as a YAML mapping, e.g. \"{port: /dev/ttyACM0}\""),
        DeclareLaunchArgument("rviz", default_value="true", description="start RViz"),
        DeclareLaunchArgument("rviz_config", default_value="", description="RViz config (default: the kind's)"),
        DeclareLaunchArgument("namespace", default_value=""),
        DeclareLaunchArgument("params_file", default_value="",
                              description="extra ROS 2 parameter file for the mechanism_model nodes"),
        DeclareLaunchArgument("use_sim_time", default_value="false"),
    ]


def generate_launch_description():
    return LaunchDescription(launch_arguments() + [OpaqueFunction(function=_bringup)])
