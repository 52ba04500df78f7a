"""Hostile YAML (issue 19 item 6): every YAML file the suite reads (collision environments, motor groups,
mobility descriptions, ROS parameter files) goes through one bounded reader. An alias bomb (a few hundred
bytes whose anchors expand to 1e9 heights), nesting deep enough to exhaust Python's recursion, and an alias
cycle are each refused with an UnsafeModelFileError naming the file and the line, quickly and without the
expansion ever being built; the ``mechanism-model`` command prints that error, not a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mechanism_model_core import ModelFileError, load_model
from mechanism_model_core.io.environment_file import load_environment
from mechanism_model_core.errors import UnsafeModelFileError
from mechanism_model_core.io.yaml_lines import MAX_DEPTH, MAX_EXPANDED_NODES, read_yaml_with_lines
from mechanism_model_core.library import model_path
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.io.mobility_yaml import load_mobility
from mechanism_model_core.locomotion.mobility import MobilityError

ROCKY8 = model_path("rocky8/rocky8_rover.xml")


def nested_anchors(levels: int, fan: int) -> str:
    """A flow sequence of ``levels`` levels whose first item at each level anchors the level below and whose
    other ``fan - 1`` items alias it: fan**levels zeros from a few hundred bytes."""
    text = "[" + ", ".join(["0.0"] * fan) + "]"
    for k in range(1, levels):
        text = f"[&l{k} {text}, " + ", ".join([f"*l{k}"] * (fan - 1)) + "]"
    return text


def alias_bomb(levels=9, fan=10) -> str:
    """An environment file whose height grid expands to fan**levels heights (1e9 by default)."""
    return f"terrain:\n  height_field: {{spacing: [1, 1], heights: {nested_anchors(levels, fan)}}}\n"


def deep(prefix: str, depth=5000) -> str:
    """``prefix`` followed by ``depth`` nested flow sequences on line 2 (about 10 KB)."""
    return prefix + "\n  " + "[" * depth + "]" * depth + "\n"


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    p = tmp_path / "bomb.yaml"
    p.write_text(alias_bomb())
    assert p.stat().st_size < 600
    with pytest.raises(UnsafeModelFileError, match="aliases expanded") as err:
        load_environment(p)
    assert err.value.file == str(p) and err.value.line == 2
    # a bomb that stays under the bound is read normally (aliases are legal YAML)
    p.write_text(alias_bomb(levels=2, fan=3))
    env = load_environment(p)
    assert len(env.obstacles) == 1


def test_the_bound_counts_expanded_nodes_not_bytes(tmp_path):
    fan = 10
    levels = 1
    while fan ** (levels + 1) <= MAX_EXPANDED_NODES // 2:
        levels += 1
    p = tmp_path / "under.yaml"
    p.write_text("a: " + nested_anchors(levels, fan) + "\n")
    assert read_yaml_with_lines(str(p), "YAML") is not None            # about a million leaves: allowed
    p.write_text("a: " + nested_anchors(levels + 2, fan) + "\n")
    with pytest.raises(UnsafeModelFileError, match="aliases expanded"):
        read_yaml_with_lines(str(p), "YAML")


def test_an_alias_cycle_is_refused(tmp_path):
    p = tmp_path / "cycle.yaml"
    p.write_text("obstacles:\n  - &x {name: a, box: [1, 1, 1], more: [*x]}\n")
    with pytest.raises(UnsafeModelFileError, match="cycle") as err:
        load_environment(p)
    assert err.value.line == 2


@pytest.mark.parametrize("kind", ["environment", "motor groups", "mobility"])
def test_deep_nesting_is_refused_with_file_and_line(tmp_path, kind):
    p = tmp_path / f"{kind.replace(' ', '_')}.yaml"
    with pytest.raises(ModelFileError, match=f"nested deeper than {MAX_DEPTH}") as err:
        if kind == "environment":
            p.write_text(deep("obstacles:"))
            load_environment(p)
        elif kind == "motor groups":
            p.write_text(deep("motor_groups:"))
            load_motor_groups(load_model(ROCKY8), p)
        else:
            p.write_text(deep("mobility:"))
            load_mobility(p)
    assert err.value.file == str(p) and err.value.line == 2
    if kind == "mobility":
        assert isinstance(err.value, MobilityError)


def test_nesting_up_to_the_bound_is_read(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text("a: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n")
    data = read_yaml_with_lines(str(p), "YAML")["a"]
    for _ in range(MAX_DEPTH - 1):
        (data,) = data
    assert data == 1


def test_the_command_prints_the_error_not_a_traceback(tmp_path):
    p = tmp_path / "motors.yaml"
    p.write_text(deep("motor_groups:"))
    r = subprocess.run([sys.executable, "-m", "mechanism_model_core", "ros2-control", ROCKY8, "--motors", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr
    assert f"{p}:2: YAML nested deeper than {MAX_DEPTH} levels" in r.stderr


def test_a_ros_parameter_file_is_bounded_too(tmp_path):
    params = pytest.importorskip("mechanism_model_ros.params")
    p = tmp_path / "params.yaml"
    p.write_text(deep("state_publisher:"))
    with pytest.raises(params.ParameterFileError, match=r"line 2 .*nested deeper"):
        params.read_parameter_file(str(p))
    p.write_text("state_publisher:\n  ros__parameters:\n    a: " + nested_anchors(9, 10) + "\n")
    with pytest.raises(params.ParameterFileError, match="aliases expanded"):
        params.read_parameter_file(str(p))
