"""Which test runs each command line of README.md and docs/*.md (issue 21: every README and docs command is
executed by a test), checked both ways: every command line of their shell blocks (``docs_text.doc_lines``;
comment lines aside) has an entry below, and every entry names tests that exist and matches some line. A new
documented command fails here until a test runs it (or an entry says why it cannot, and which test checks what
can be checked). A line's entry is the longest key its text starts with. (``pip install`` lines written
inline in the text, outside shell blocks, are found and run by test_docs_install_lines.py.)
"""

import os
import re

import pytest

from docs_text import TOP, doc_lines

#: documents whose bare code blocks are not shell (docs/architecture.md: the module tree)
NOT_SHELL = {os.path.join("docs", "architecture.md")}

_FRESH = "system/test_readme_first_commands.py::"
_DEMO = "system/test_demo_script.py::test_the_readme_commands_from_another_shell_reach_the_demo"
_WS = "system/test_readme_ros_workspace.py::"
_CLI = "system/test_client_cli.py::"
_DOCS = "core/test_docs_commands.py::"
_PIP = "core/test_docs_install_lines.py::test_the_documented_pip_lines_resolve"
_ROS2WS = "system/test_ros2_workspace.py::"
_LAUNCH = "system/test_rover_launch.py::"
_RVIZ_DOCS = _LAUNCH + "test_the_docs_bringup_rviz_and_joint_states_commands"
_BY_HAND = _LAUNCH + "test_the_docs_by_hand_commands_bring_up_the_rover"
_ROBOTS = _LAUNCH + "test_the_docs_rover_walker_and_arm_launches_bring_up_their_controllers_nodes_and_rviz"

#: (document, the start of its command line) -> (tests that run it, how it departs from "as written")
COMMANDS = {
    ("README.md", "bash scripts/demo.sh"): ((_FRESH + "test_the_readme_demo_command_on_a_fresh_clone",
                                            "system/test_demo_script.py::test_demo_says_its_domain"), ""),
    ("README.md", "bash scripts/test.sh"): ((_FRESH + "test_ci_runs_the_readme_test_command",),
                                            "not from a test (it is the whole suite): CI's .ci/run runs it as written"),
    ("README.md", ". scripts/demo_env.sh"): ((_DEMO, _FRESH + "test_the_readme_demo_command_on_a_fresh_clone"), ""),
    ("README.md", "mechanism-model call compute_fk"): (
        (_DEMO, _CLI + "test_the_readme_without_ros_block_serves_calls_and_echoes"), "with --timeout"),
    ("README.md", "mechanism-model call check_state_validity"): ((_DEMO,), "with --timeout"),
    ("README.md", "mkdir -p ~/ros2_ws/src && cd ~/ros2_ws/src && git clone"): (
        (_WS + "test_the_readme_clone_colcon_build_and_source_lines",), "this checkout's path for <repo-url>"),
    ("README.md", "rosdep install"): (
        (_WS + "test_every_rosdep_key_of_the_packages_resolves_offline",),
        "not run (rosdep's database comes from GitHub, apt needs root): its keys checked offline"),
    ("README.md", "colcon build"): ((_WS + "test_the_readme_clone_colcon_build_and_source_lines",), ""),
    ("README.md", "source install/setup.bash"): (
        (_WS + "test_the_readme_clone_colcon_build_and_source_lines",
         _ROS2WS + "test_mechanism_model_cli_is_on_path_after_sourcing_the_workspace"), ""),
    ("README.md", "ros2 launch mechanism_model_ros rover.launch.py"): ((_ROBOTS,), "under Xvfb"),
    ("README.md", "ros2 topic pub -r 10 /cmd_vel"): (
        (_LAUNCH + "test_the_docs_cmd_vel_command_turns_the_wheels_and_ctrl_c_stops_them",), ""),
    ("README.md", "ros2 launch mechanism_model_ros bringup.launch.py floating_joints:=always"): ((_RVIZ_DOCS,), ""),
    ("README.md", "rviz2 -d"): ((_RVIZ_DOCS,), "under Xvfb"),
    ("README.md", "ros2 topic pub -r 10 -t 10 -w 3 /joint_states"): ((_RVIZ_DOCS,), ""),
    ("README.md", "ros2 service call"): ((_ROS2WS + "test_readme_service_calls_answer",
                                          _ROS2WS + "test_readme_service_calls_answer_our_cyclone_nodes"), ""),
    ("README.md", "python3 -m venv"): ((_DOCS + "test_the_readme_install_lines_install_a_working_suite",), ""),
    ("README.md", "pip install"): ((_DOCS + "test_the_readme_install_lines_install_a_working_suite",), ""),
    ("README.md", "mechanism-model serve"): ((_CLI + "test_the_readme_without_ros_block_serves_calls_and_echoes",),
                                            ""),
    ("README.md", "mechanism-model echo tf_static"): (
        (_CLI + "test_the_readme_without_ros_block_serves_calls_and_echoes",), ""),
    ("docs/collision.md", "pip install"): ((_PIP,), "pip --dry-run"),
    ("docs/collision.md", "mechanism-model collision-matrix"): ((_DOCS + "test_the_collision_matrix_line",), ""),
    ("docs/collision.md", "mechanism-model-serve -p environment_file:="): (
        ("ros/test_state_validity.py::test_the_world_over_dds",), "a test world for /path/world.yaml"),
    ("docs/reach.md", "mechanism-model reach map mer/mer_idd.xml --chain ground:mi --resolution 0.3"): (
        (_DOCS + "test_the_reach_map_show_and_place_lines",), ""),
    ("docs/reach.md", "mechanism-model reach map mer/mer_idd.xml --chain ground:mi --resolution 0.05"): (
        (_DOCS + "test_the_reach_map_line_on_a_dask_scheduler",),
        "a local Dask scheduler for HOST, 0.3 m and 10 directions for 0.05 m (tens of minutes)"),
    ("docs/reach.md", "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON="): (
        (_DOCS + "test_the_dask_worker_line_starts_a_worker_without_a_fixed_malloc_threshold",),
        "a local Dask scheduler on loopback for HOST"),
    ("docs/reach.md", "mechanism-model reach show"): ((_DOCS + "test_the_reach_map_show_and_place_lines",), ""),
    ("docs/reach.md", "mechanism-model reach place"): ((_DOCS + "test_the_reach_map_show_and_place_lines",), ""),
    ("docs/reach.md", "mechanism-model call compute_base_placement"): (
        ("ros/test_reach_server.py::test_the_docs_serve_and_call_lines",), ""),
    ("docs/ros.md", "pip install"): ((_PIP,), "pip --dry-run"),
    ("docs/ros.md", "mechanism-model serve"): ((_CLI + "test_the_docs_serve_commands_serve_their_models",), ""),
    ("docs/ros.md", "colcon build"): ((_WS + "test_the_readme_clone_colcon_build_and_source_lines",),
                                     "the README's identical line"),
    ("docs/ros.md", "source install/setup.bash"): ((_WS + "test_the_readme_clone_colcon_build_and_source_lines",),
                                                   "the README's identical line"),
    ("docs/ros.md", "ros2 launch mechanism_model_ros bringup.launch.py"): (
        (_ROS2WS + "test_readme_service_calls_answer",), "the same argv, written in the test"),
    ("docs/ros.md", "ros2 launch mechanism_model_ros bringup.launch.py params_file:="): (
        (_LAUNCH + "test_the_docs_bringup_of_another_robot_serves_it",), ""),
    ("docs/ros.md", "ros2 launch mechanism_model_ros bringup.launch.py floating_joints:=always"): ((_RVIZ_DOCS,), ""),
    ("docs/ros.md", "rviz2 -d"): ((_RVIZ_DOCS,), "under Xvfb"),
    ("docs/ros.md", "ros2 service call /compute_"): ((_ROS2WS + "test_readme_service_calls_answer",
                                                      _ROS2WS + "test_readme_service_calls_answer_our_cyclone_nodes"),
                                                     ""),
    ("docs/ros.md", "ros2 service call /manipulator/"): (
        (_LAUNCH + "test_the_docs_manipulator_service_calls_move_the_mast",), ""),
    ("docs/ros.md", "ros2 launch mechanism_model_ros rover.launch.py"): ((_ROBOTS,), "under Xvfb"),
    ("docs/ros.md", "ros2 launch mechanism_model_ros rover.launch.py model:=/path/to/my_rover.xml"): (
        (_LAUNCH + "test_cmd_vel_turns_the_wheels_and_odometry_follows",), "Rocky 8's file for the placeholder"),
    ("docs/ros.md", "ros2 launch mechanism_model_ros rover.launch.py hardware:="): (
        (_LAUNCH + "test_an_unknown_hardware_plugin_stops_the_launch_before_anything_starts",),
        "its example plugin does not exist: a clear error expected"),
    ("docs/ros.md", "ros2 launch mechanism_model_ros rover.launch.py model:=curiosity/"): (
        ("system/test_curiosity_launch.py::"
         "test_the_docs_curiosity_launch_drives_one_node_per_controller_and_stops_on_shutdown",), ""),
    ("docs/ros.md", "ros2 launch mechanism_model_ros walker.launch.py"): ((_ROBOTS,), "under Xvfb"),
    ("docs/ros.md", "ros2 launch mechanism_model_ros arm.launch.py"): ((_ROBOTS,), "under Xvfb"),
    ("docs/ros.md", "ros2 topic pub -r 10 /cmd_vel"): (
        (_LAUNCH + "test_the_docs_cmd_vel_command_turns_the_wheels_and_ctrl_c_stops_them",), ""),
    ("docs/ros.md", "mechanism-model ros2-control"): ((_BY_HAND,), "the test's folder for /tmp/rocky8"),
    ("docs/ros.md", "ros2 run mechanism_model_ros state_publisher"): ((_BY_HAND,), "the test's folder for /tmp/rocky8"),
    ("docs/ros.md", "ros2 run controller_manager ros2_control_node"): ((_BY_HAND,),
                                                                       "the test's folder for /tmp/rocky8"),
    ("docs/ros.md", "ros2 run controller_manager spawner"): ((_BY_HAND,), "with --controller-manager-timeout"),
    ("docs/urdf.md", "mechanism-model info ur.urdf.xacro"): ((_DOCS + "test_the_xacro_lines",),
                                                             "small stand-in xacro files"),
    ("docs/urdf.md", "mechanism-model convert robot.urdf.xacro"): ((_DOCS + "test_the_xacro_lines",),
                                                                   "a small stand-in xacro file"),
    ("docs/urdf.md", "mechanism-model serve --robot-description-topic"): (
        ("ros/test_robot_description_topic.py::test_cyclone_nodes_from_the_topic_publish_the_same_tf_as_from_the_file",),
        "with --description-timeout"),
    ("docs/urdf.md", "mechanism-model info --from-topic"): (
        ("ros/test_robot_description_topic.py::test_info_reads_the_live_description_over_cyclone",), "with --timeout"),
}


def documented_commands() -> list[tuple[str, str]]:
    docs = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(TOP, "docs"))
                                  if f.endswith(".md"))
    return [(doc, line) for doc in docs if doc not in NOT_SHELL
            for line in doc_lines(doc, "") if not line.startswith("#")]


def entry_of(doc: str, line: str):
    keys = [k for k in COMMANDS if k[0] == doc.replace(os.sep, "/") and (line == k[1] or line.startswith(k[1]))]
    return max(keys, key=lambda k: len(k[1])) if keys else None


@pytest.mark.parametrize("doc,line", documented_commands())
def test_every_documented_command_has_a_test(doc, line):
    assert entry_of(doc, line), f"{doc}: no test runs {line!r}: give it one and list it in COMMANDS"


def test_every_entry_names_tests_that_exist_and_a_documented_line():
    used = {entry_of(doc, line) for doc, line in documented_commands()}
    assert not set(COMMANDS) - used, f"entries no documented line uses: {sorted(set(COMMANDS) - used)}"
    for (doc, _), (tests, _) in COMMANDS.items():
        assert tests
        for test in tests:
            path, name = test.split("::")
            with open(os.path.join(TOP, "test", path), encoding="utf-8") as fh:
                assert re.search(rf"^def {re.escape(name)}\(", fh.read(), re.M), f"{test} does not exist"
