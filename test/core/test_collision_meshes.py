"""Mesh bounding shapes from OBJ and COLLADA (DAE) files that the tests write themselves, in URDF
``<collision><mesh>`` and in CLARAty ``Obj_Params type="mesh"|"convex"``: what is read (vertices, faces,
scale, the DAE unit) and distances against closed forms; broken, missing and oversized files are a
ModelFileError naming the model file and line (URDF: the ``<collision>`` element; CLARAty: the
``Obj_Params``)."""

import pytest

from .optional_deps import require

require("coal", "collision")
require("trimesh", "mesh")
require("collada", "mesh")

import numpy as np  # noqa: E402

from mechanism_model_core import ModelFileError  # noqa: E402
from mechanism_model_core.collision import CollisionModel, ConvexHull, Environment, Obstacle, Sphere, TriangleMesh, \
    distance  # noqa: E402
from mechanism_model_core import mesh_files as meshes  # noqa: E402
from mechanism_model_core.io.claraty_xml import load_claraty_xml  # noqa: E402
from mechanism_model_core.io.urdf import load_urdf  # noqa: E402
from mechanism_model_core.spatial import translation  # noqa: E402

# a cube of side 1 centred on the origin, 12 triangles (OBJ indices from 1)
CUBE_V = [(-0.5, -0.5, -0.5), (0.5, -0.5, -0.5), (0.5, 0.5, -0.5), (-0.5, 0.5, -0.5),
          (-0.5, -0.5, 0.5), (0.5, -0.5, 0.5), (0.5, 0.5, 0.5), (-0.5, 0.5, 0.5)]
CUBE_F = [(0, 2, 1), (0, 3, 2), (4, 5, 6), (4, 6, 7), (0, 1, 5), (0, 5, 4),
          (1, 2, 6), (1, 6, 5), (2, 3, 7), (2, 7, 6), (3, 0, 4), (3, 4, 7)]


def obj_text(scale=1.0):
    return "# cube\n" + "".join(f"v {x * scale} {y * scale} {z * scale}\n" for x, y, z in CUBE_V) + \
        "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in CUBE_F)


def dae_text(unit=1.0):
    """A minimal COLLADA 1.4.1 document of the cube, its coordinates given in units of ``unit`` metres."""
    pos = " ".join(f"{v / unit:g}" for p in CUBE_V for v in p)
    tri = " ".join(str(i) for f in CUBE_F for i in f)
    return f"""<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="u" meter="{unit}"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries>
    <geometry id="cube" name="cube"><mesh>
      <source id="p"><float_array id="pa" count="24">{pos}</float_array>
        <technique_common><accessor source="#pa" count="8" stride="3">
          <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
        </accessor></technique_common></source>
      <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
      <triangles count="12"><input semantic="VERTEX" source="#v" offset="0"/><p>{tri}</p></triangles>
    </mesh></geometry>
  </library_geometries>
  <library_visual_scenes><visual_scene id="s"><node id="n"><instance_geometry url="#cube"/></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


URDF = """<?xml version="1.0"?>
<robot name="r">
  <link name="base"/>
  <link name="l1">
    <collision>
      <geometry><mesh filename="{mesh}" scale="0.2 0.2 0.2"/></geometry>
    </collision>
  </link>
  <joint name="j" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""

CLARATY = """<?xml version="1.0"?>
<Mechanism_Model name="m">
  <ME_Body name="l1">
    <ME_Joint name="j" type="revolute"/>
    <Bounding_Shape>
      <Obj_Params name="hull" type="{kind}" mesh="{mesh}">
        <Transform/>
        <Dimension dim-x="0.2" dim-y="0.2" dim-z="0.2"/>
      </Obj_Params>
    </Bounding_Shape>
  </ME_Body>
</Mechanism_Model>
"""

#: a ball of radius 0.1 whose centre is 0.5 m along x from the cube's centre: 0.5 - 0.1 - 0.1 = 0.3 m apart
BALL = Environment([Obstacle("ball", Sphere(0.1), translation(0.5, 0.0, 0.0))])


def _files(tmp_path):
    (tmp_path / "cube.obj").write_text(obj_text())
    (tmp_path / "cube.dae").write_text(dae_text())
    (tmp_path / "cube_cm.dae").write_text(dae_text(unit=0.01))      # the same cube, written in centimetres


@pytest.mark.parametrize("mesh", ["cube.obj", "cube.dae", "cube_cm.dae"])
def test_urdf_mesh_files(tmp_path, mesh):
    _files(tmp_path)
    p = tmp_path / "r.urdf"
    p.write_text(URDF.format(mesh=mesh))
    m = load_urdf(p)
    g = CollisionModel(m).objects[0].geometry
    assert isinstance(g, TriangleMesh) and g.faces.shape == (12, 3)
    np.testing.assert_allclose(g.vertices.min(axis=0), [-0.1] * 3, atol=1e-12)
    np.testing.assert_allclose(g.vertices.max(axis=0), [0.1] * 3, atol=1e-12)
    assert distance(m, None, "l1", "ball", environment=BALL).distance == pytest.approx(0.3, abs=1e-6)
    # turned by 45 degrees about z, the cube's edge comes 0.1 (sqrt 2 - 1) nearer
    d = distance(m, {"j": np.pi / 4}, "l1", "ball", environment=BALL).distance
    assert d == pytest.approx(0.4 - 0.1 * np.sqrt(2), abs=1e-6)


@pytest.mark.parametrize("mesh", ["cube.obj", "cube.dae"])
@pytest.mark.parametrize("kind, cls", [("mesh", TriangleMesh), ("convex", ConvexHull)])
def test_claraty_mesh_and_convex_shapes(tmp_path, mesh, kind, cls):
    _files(tmp_path)
    p = tmp_path / "m.xml"
    p.write_text(CLARATY.format(kind=kind, mesh=mesh))
    m = load_claraty_xml(p)
    g = CollisionModel(m).objects[0].geometry
    assert isinstance(g, cls)
    np.testing.assert_allclose(np.ptp(g.vertices, axis=0), [0.2] * 3, atol=1e-12)
    assert distance(m, None, "l1", "ball", environment=BALL).distance == pytest.approx(0.3, abs=1e-6)


@pytest.mark.parametrize("name, content, words", [
    ("missing.obj", None, "does not exist"),
    ("missing.dae", None, "does not exist"),
    ("junk.obj", "this is no mesh at all\n", "junk.obj"),
    ("junk.dae", "<COLLADA><not closed", "junk.dae"),
    ("empty.dae", '<?xml version="1.0"?><COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" '
                  'version="1.4.1"></COLLADA>', "empty.dae"),
    ("model.ply", "ply\n", "unsupported format"),
])
def test_broken_mesh_files_name_the_model_file_and_line(tmp_path, name, content, words):
    if content is not None:
        (tmp_path / name).write_text(content)
    p = tmp_path / "r.urdf"
    p.write_text(URDF.format(mesh=name))
    m = load_urdf(p)
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(m)
    assert ei.value.file == str(p) and ei.value.line == 5 and words in str(ei.value), str(ei.value)
    x = tmp_path / "m.xml"
    x.write_text(CLARATY.format(kind="mesh", mesh=name))
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(load_claraty_xml(x))
    assert ei.value.file == str(x) and ei.value.line == 6 and words in str(ei.value), str(ei.value)


@pytest.mark.parametrize("mesh", ["cube.obj", "cube.dae"])
def test_oversized_meshes_are_refused(tmp_path, monkeypatch, mesh):
    """The limits (triangles, bytes) apply to OBJ and DAE as to STL (lowered here: the real limits are
    200,000 triangles and 64 MiB)."""
    _files(tmp_path)
    p = tmp_path / "r.urdf"
    p.write_text(URDF.format(mesh=mesh))
    monkeypatch.setattr(meshes, "MAX_TRIANGLES", 11)
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(load_urdf(p))
    assert "12 triangles" in str(ei.value) and ei.value.line == 5
    monkeypatch.setattr(meshes, "MAX_TRIANGLES", 200_000)
    monkeypatch.setattr(meshes, "MAX_FILE_BYTES", 100)
    with pytest.raises(ModelFileError) as ei:
        CollisionModel(load_urdf(p))
    assert "bytes" in str(ei.value) and mesh in str(ei.value) and ei.value.line == 5
