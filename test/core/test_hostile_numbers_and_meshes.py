"""Hostile numbers in files (issue 19 item 12): each is refused with a ModelFileError/MeshError naming the
file, the line and the field, or read as the number it is; nothing reaches coal that makes it throw."""

from __future__ import annotations

import struct
import textwrap

import numpy as np
import pytest

from mechanism_model_core import ModelFileError
from mechanism_model_core.io.kindsl import loads_kindsl

from .optional_deps import require


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip("\n"))
    return p


# ------------------------------------------------------------------------------------- environment YAML
@pytest.mark.parametrize("heights, words", [
    ("[[0, 1e308], [0, -1e308]]", "heights must lie within"),
    ("[[0, 0.0], [0, 1.0e300]]", "heights must lie within"),
])
def test_height_fields_coal_cannot_take_are_refused_with_the_line(tmp_path, heights, words):
    require("coal", "collision")
    from mechanism_model_core.io import load_environment

    p = _write(tmp_path, "env.yaml", f"""
        obstacles: []
        terrain:
          height_field: {{heights: {heights}, spacing: [1, 1]}}
        """)
    with pytest.raises(ModelFileError, match=words) as err:
        load_environment(p)
    assert err.value.file == str(p) and err.value.line == 3


def test_exponent_floats_read_as_numbers_in_every_yaml_model_file(tmp_path):
    """``1e-3`` (YAML 1.2 float, a string to YAML 1.1) is a number in environments as in motor groups."""
    require("coal", "collision")
    from mechanism_model_core.io import load_environment

    p = _write(tmp_path, "env.yaml", """
        terrain:
          height_field: {heights: [[0, 1e-3], [0, 2E-3]], spacing: [5e-2, 1e-1], depth: 1e0}
        obstacles:
          - {name: pebble, sphere: 1e-3, position: [1e0, 0, +2e-3]}
        """)
    env = load_environment(p)
    terrain, pebble = env.obstacles
    np.testing.assert_allclose(terrain.geometry.heights.T, [[0, 1e-3], [0, 2e-3]])
    np.testing.assert_allclose(np.diff(terrain.geometry.x)[0], 5e-2)
    assert pebble.geometry.radius == 1e-3 and pebble.pose[2, 3] == 2e-3
    # a quoted one stays a string
    p2 = _write(tmp_path, "env2.yaml", """
        obstacles:
          - {name: "1e3", box: [1e-1, 1e-1, 1e-1]}
        """)
    assert load_environment(p2).obstacles[0].name == "1e3"


def test_a_huge_quaternion_in_an_environment_is_normalised(tmp_path):
    require("coal", "collision")
    from mechanism_model_core.io import load_environment

    p = _write(tmp_path, "env.yaml", """
        obstacles:
          - {name: a, box: [1, 1, 1], orientation: [0, 0, 0, 1e200]}
          - {name: b, box: [1, 1, 1], orientation: [1e308, 0, 0, 1e308]}
        """)
    a, b = load_environment(p).obstacles
    np.testing.assert_allclose(a.pose[:3, :3], np.eye(3), atol=1e-15)
    np.testing.assert_allclose(b.pose[:3, :3], [[1, 0, 0], [0, 0, -1], [0, 1, 0]], atol=1e-12)


# ---------------------------------------------------------------------------------------------- meshes
def _dae(unit="1.0", first="-0.5"):
    from .test_collision_meshes import dae_text
    text = dae_text().replace('meter="1.0"', f'meter="{unit}"')
    return text.replace(">-0.5 ", f">{first} ", 1)


@pytest.mark.parametrize("unit", ["0", "-1", "1e300", "abc", "nan"])
def test_dae_units_that_are_not_a_length_are_refused(tmp_path, unit):
    require("trimesh", "mesh")
    require("collada", "mesh")
    from mechanism_model_core.mesh_files import MeshError, read_mesh

    p = tmp_path / "m.dae"
    p.write_text(_dae(unit=unit))
    with pytest.raises(MeshError, match=rf"line 3: <unit meter='{unit}'> must be a number of metres"):
        read_mesh(str(p))


@pytest.mark.parametrize("value, words", [("nan", "holds 'nan'"), ("inf", "holds 'inf'"),
                                          ("abc", "'abc' is not a number")])
def test_dae_float_arrays_must_hold_finite_numbers(tmp_path, value, words):
    require("trimesh", "mesh")
    require("collada", "mesh")
    from mechanism_model_core.mesh_files import MeshError, read_mesh

    p = tmp_path / "m.dae"
    p.write_text(_dae(first=value))
    with pytest.raises(MeshError, match=f"line 6: float_array 'pa'.*{words}"):
        read_mesh(str(p))
    from .test_collision_meshes import dae_text
    p.write_text(dae_text(unit=0.01))          # a good file in centimetres still reads, scaled
    v, _ = read_mesh(str(p))
    assert np.abs(v).max() == pytest.approx(0.5)


def test_a_binary_stl_with_a_wrong_triangle_count_says_so(tmp_path):
    require("trimesh", "mesh")
    from mechanism_model_core.mesh_files import MeshError, read_mesh

    tri = struct.pack("<12fH", 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0)
    p = tmp_path / "m.stl"
    p.write_bytes(b"\0" * 80 + struct.pack("<I", 5) + tri * 2)
    with pytest.raises(MeshError, match="header says 5 triangles must have 334 bytes .* the file has 184"):
        read_mesh(str(p))
    p.write_bytes(b"\0" * 80 + struct.pack("<I", 2) + tri * 2)      # the right count reads
    v, f = read_mesh(str(p))
    assert f.shape == (2, 3)


# ---------------------------------------------------------------------------------------------- KinDSL
def test_a_kindsl_intermediate_that_overflows_is_an_error_with_the_line():
    text = """Robot R { RobotBase b { children { l via j } }
      link l { id = 1 children {} }
      r_joint j { ref_frame { translation = (1/(1e308*10), 0.0, 0.0) rotation = (0.0, 0.0, 0.0) } } }"""
    with pytest.raises(ModelFileError, match="not finite") as err:
        loads_kindsl(text)
    assert err.value.line == 3
    ok = text.replace("1/(1e308*10)", "1/(1e307*10)")
    assert loads_kindsl(ok) is not None
