"""Environment files (terrain and obstacles in YAML): what they load to, checked against the numbers written
in the file, verdicts against closed forms, and every broken file a ModelFileError naming file and line."""

import math
import textwrap

import numpy as np
import pytest

from .optional_deps import require

require("coal", "collision")
require("trimesh", "mesh")
require("yaml", "yaml")

from mechanism_model_core import load_model  # noqa: E402
from mechanism_model_core.collision import collisions, distance, in_collision, minimum_distance  # noqa: E402
from mechanism_model_core.io import load_environment  # noqa: E402
from mechanism_model_core import shapes as S  # noqa: E402
from mechanism_model_core.errors import ModelFileError  # noqa: E402
from mechanism_model_core.library import default_model_path  # noqa: E402

ROVER = load_model(default_model_path())       # Rocky 8: wheels of radius 0.1 m touching z = 0 at home

CUBE_OBJ = """# a unit cube
v -0.5 -0.5 -0.5
v 0.5 -0.5 -0.5
v 0.5 0.5 -0.5
v -0.5 0.5 -0.5
v -0.5 -0.5 0.5
v 0.5 -0.5 0.5
v 0.5 0.5 0.5
v -0.5 0.5 0.5
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 2 3 7
f 2 7 6
f 3 4 8
f 3 8 7
f 4 1 5
f 4 5 8
"""


def _write(tmp_path, text, name="env.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(p)


def test_every_kind_of_obstacle_loads_as_written(tmp_path):
    (tmp_path / "rock.obj").write_text(CUBE_OBJ)
    np.savetxt(tmp_path / "dem.csv", [[0.0, 0.1, 0.2], [0.0, 0.1, 0.3]], delimiter=",")
    env = load_environment(_write(tmp_path, """
        terrain:
          height_field: {file: dem.csv, spacing: [0.5, 0.25], origin: [-1.0, 2.0], depth: 0.5}
        obstacles:
          - {name: b, box: [0.4, 0.3, 0.2], position: [1, 2, 3], rpy: [0, 0, 1.5707963267948966]}
          - {name: s, sphere: 0.25, position: [0, 0, 1]}
          - {name: c, cylinder: [0.1, 0.6], orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]}
          - {name: k, capsule: [0.1, 0.5]}
          - {name: n, cone: [0.2, 0.4], padding: 0.01}
          - {name: m, mesh: {file: rock.obj, scale: [2, 2, 2]}, position: [5, 0, 0]}
          - {name: h, mesh: {file: rock.obj, convex: true}}
        """))
    names = [o.name for o in env.obstacles]
    assert names == ["terrain", "b", "s", "c", "k", "n", "m", "h"]
    ob = dict(zip(names, env.obstacles))
    hf = ob["terrain"].geometry
    assert isinstance(hf, S.HeightField)
    # heights[i][j] at x = -1 + 0.5 i, y = 2 + 0.25 j; the shape stores rows by y
    np.testing.assert_allclose(hf.x, [-1.0, -0.5])
    np.testing.assert_allclose(hf.y, [2.0, 2.25, 2.5])
    np.testing.assert_allclose(hf.heights, [[0.0, 0.0], [0.1, 0.1], [0.2, 0.3]])
    assert hf.bottom == pytest.approx(-0.5)
    b = ob["b"]
    assert (b.geometry.x, b.geometry.y, b.geometry.z) == (0.4, 0.3, 0.2)
    np.testing.assert_allclose(b.pose[:3, 3], [1, 2, 3])
    np.testing.assert_allclose(b.pose[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    assert ob["s"].geometry.radius == 0.25
    np.testing.assert_allclose(ob["c"].pose[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    assert (ob["c"].geometry.radius, ob["c"].geometry.length) == (0.1, 0.6)
    assert isinstance(ob["k"].geometry, S.Capsule) and isinstance(ob["n"].geometry, S.Cone)
    assert ob["n"].padding == 0.01
    m = ob["m"].geometry
    assert isinstance(m, S.TriangleMesh) and len(m.faces) == 12
    np.testing.assert_allclose(np.ptp(m.vertices, axis=0), [2, 2, 2])
    assert isinstance(ob["h"].geometry, S.ConvexHull)


def test_a_terrain_plane_against_the_wheels_closed_form(tmp_path):
    """A plane 3 cm above the wheels' lowest points: every wheel sinks 3 cm into it; 5 cm below, the
    smallest wheel-terrain distance is 5 cm."""
    env = load_environment(_write(tmp_path, """
        terrain:
          plane: {point: [0, 0, 0.03], normal: [0, 0, 2]}
        """))
    contacts = [c for c in collisions(ROVER, None, environment=env) if c.environment]
    wheels = {b.name for b in ROVER.bodies if b.name.endswith("_wheel")}
    assert {c.body_a for c in contacts} == wheels and {c.body_b for c in contacts} == {"terrain"}
    assert max(c.depth for c in contacts) == pytest.approx(0.03, abs=1e-9)
    low = load_environment(_write(tmp_path, "terrain: {plane: {point: [0, 0, -0.05]}}\n", "low.yaml"))
    assert not in_collision(ROVER, None, environment=low, self_collision=False)
    d = minimum_distance(ROVER, None, environment=low, self_collision=False)
    assert d.distance == pytest.approx(0.05, abs=1e-9) and d.body_b == "terrain" and d.body_a in wheels


def test_a_box_rock_closed_form_distance(tmp_path):
    """A box whose face is 7 cm in front of the left front wheel's tread (wheel axis along y)."""
    from mechanism_model_core import forward_kinematics
    c = forward_kinematics(ROVER, None).position("left_front_wheel")
    env = load_environment(_write(tmp_path, f"""
        obstacles:
          - name: rock
            box: [0.2, 0.05, 0.05]
            position: [{c[0] + 0.1 + 0.07 + 0.1}, {c[1]}, {c[2]}]
        """))
    d = distance(ROVER, None, "left_front_wheel", "rock", environment=env)
    assert d.distance == pytest.approx(0.07, abs=1e-9)


@pytest.mark.parametrize("text, line, words", [
    ("obstacles:\n  - {name: a, box: [1, 1]}\n", 2, "3 numbers"),
    ("obstacles:\n  - {name: a, box: [1, -1, 1]}\n", 2, "positive"),
    ("obstacles:\n  - {name: a, sphere: .nan}\n", 2, "finite"),
    ("obstacles:\n  - {name: a, sphere: 1}\n  - {name: a, sphere: 2}\n", 3, "two obstacles named"),
    ("obstacles:\n  - {name: a}\n", 2, "exactly one shape"),
    ("obstacles:\n  - {name: a, sphere: 1, colour: red}\n", 2, "unknown key"),
    ("obstacles:\n  - {name: a, sphere: 1, orientation: [0, 0, 0, 0]}\n", 2, "zero quaternion"),
    ("obstacles:\n  - {name: a, sphere: 1, padding: -1}\n", 2, "padding"),
    ("obstacles:\n  - name: a\n    mesh: {file: nowhere.obj}\n", 3, "does not exist"),
    ("terrain:\n  height_field: {heights: [[0, 1], [0]], spacing: [1, 1]}\n", 2, "heights"),
    ("terrain:\n  height_field: {heights: [[0, 1], [0, 1]]}\n", 2, "spacing"),
    ("terrain:\n  sea: {}\n", 2, "unknown terrain"),
    ("walls: []\n", 1, "unknown key"),
    ("obstacles: [\n", 2, "YAML"),
])
def test_broken_files_name_file_and_line(tmp_path, text, line, words):
    path = _write(tmp_path, text)
    with pytest.raises(ModelFileError) as e:
        load_environment(path)
    assert e.value.file == path and e.value.line == line, str(e.value)
    assert words in str(e.value)


def test_a_missing_file_and_an_unreadable_mesh(tmp_path):
    with pytest.raises(ModelFileError, match="does not exist"):
        load_environment(str(tmp_path / "none.yaml"))
    (tmp_path / "junk.obj").write_text("this is not a mesh\n")
    path = _write(tmp_path, "obstacles:\n  - name: j\n    mesh: {file: junk.obj}\n")
    with pytest.raises(ModelFileError) as e:
        load_environment(path)
    assert e.value.file == path and e.value.line == 3 and "junk.obj" in str(e.value)
    assert math.isfinite(e.value.line)


def test_an_obstacle_is_built_once_for_every_environment_it_joins(tmp_path):
    """A node adds a request's objects to its own obstacles per request: the terrain's coal objects (its
    tiled height field, with the tiles built so far) are reused, not rebuilt."""
    from mechanism_model_core.collision import Environment, Obstacle
    from mechanism_model_core.collision.environment import EnvironmentData
    env = load_environment(_write(tmp_path, """
        terrain:
          height_field: {heights: [[0, 0.1, 0], [0, 0.2, 0], [0, 0.1, 0]], spacing: [1, 1]}
        """))
    a = EnvironmentData(env.with_obstacles(Obstacle.box("r1", (1, 1, 1))))
    b = EnvironmentData(Environment(env.obstacles + (Obstacle.box("r2", (1, 1, 1)),)))
    assert a.geoms[0] is b.geoms[0] and a.tiles[0] is b.tiles[0]
    assert a.geoms[1] is not b.geoms[1]
