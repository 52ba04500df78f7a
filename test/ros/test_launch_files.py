"""``mechanism_model_ros.launch_files``: the robot launches' generated files live in one temporary directory,
removed only once the launch is shutting down and its last process has exited (the controller manager, kept
up by ``shutdown_delay``, reads its files until then). No ROS needed; the launch itself is checked in
``test/system/test_rover_launch.py``."""

import os

import pytest
import yaml

from mechanism_model_ros.launch_files import LaunchFiles


@pytest.fixture
def files(tmp_path):
    f = LaunchFiles(parent=str(tmp_path))
    yield f
    f.remove()


def test_a_parameter_file_reads_back_as_ros2_parameters(files):
    urdf = '<robot name="r">\n  <link name="a: b"/>\n  <!-- "quotes" \'and\' {braces} # hash -->\n</robot>\n'
    path = files.parameters("p.yaml", {"robot_description": urdf, "model": "true", "rate": 1.5, "on": True})
    assert os.path.dirname(path) == files.path
    with open(path, encoding="utf-8") as fh:
        got = yaml.safe_load(fh)
    # every value keeps its type: the string "true" stays a string, the URDF byte for byte
    assert got == {"/**": {"ros__parameters": {"robot_description": urdf, "model": "true", "rate": 1.5, "on": True}}}


def test_the_directory_stays_until_shutdown_and_the_last_process_exit(files):
    path = files.write("controllers.yaml", "controller_manager: {}\n")
    files.started(11)
    files.started(12)
    assert not files.exited(11)               # a process ending while the launch runs (the spawner)
    assert os.path.exists(path)
    assert not files.shutting_down()          # the controller manager (12) still runs: it may still read
    assert os.path.exists(path)
    assert not files.exited(99)               # a process nobody saw start changes nothing
    assert os.path.exists(path)
    assert files.exited(12)                   # the last one: removed, and said so once
    assert not os.path.exists(files.path)
    assert not files.exited(12) and not files.remove()


def test_a_shutdown_with_nothing_running_removes_at_once(files):
    files.write("x.yaml", "")
    assert files.shutting_down()
    assert not os.path.exists(files.path)


def test_file_names_stay_in_the_directory(files):
    for bad in ("../escape.yaml", "", "..", os.path.join("sub", "x.yaml")):
        with pytest.raises(ValueError):
            files.write(bad, "")
    assert os.listdir(files.path) == []
