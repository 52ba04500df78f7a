"""Colours in the URDF export (RViz draws links without a <material> in its default red): every visual carries a
material, from the shape's own colour (read from a URDF visual's material, inline or named) or its body's
default; colours survive a URDF round trip; bad colours are refused or warned about."""

import warnings

import pytest
from lxml import etree

from mechanism_model_core import load_model
from mechanism_model_core.errors import ModelStructureError
from mechanism_model_core.io.appearance import body_color, material_name
from mechanism_model_core.io.urdf import loads_urdf, to_urdf
from mechanism_model_core.library import model_path
from mechanism_model_core.model import BoundingShape


def _visual_colors(urdf: str) -> dict[str, tuple]:
    doc = etree.fromstring(urdf.encode())
    out = {}
    for link in doc.findall("link"):
        for v in link.findall("visual"):
            rgba = v.find("material/color").get("rgba")
            out[v.get("name")] = tuple(float(x) for x in rgba.split())
            assert v.find("material").get("name") == material_name(out[v.get("name")])
    return out


def test_every_visual_of_the_rover_has_its_body_s_default_color():
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    colors = _visual_colors(to_urdf(rover))
    assert colors and len(colors) == sum(1 for b in rover.bodies for s in b.shapes if s.type != "none")
    assert colors["chassis_box"] == body_color("chassis") != body_color("left_front_wheel")
    assert colors["left_front_wheel_cyl"] == body_color("left_front_wheel")
    assert len(set(colors.values())) >= 3          # wheels, chassis, arm ... told apart


URDF = """<robot name="r">
  <material name="blue"><color rgba="0 0 0.8 1"/></material>
  <link name="base">
    <visual><geometry><box size="1 1 1"/></geometry><material name="blue"/></visual>
    <collision><geometry><box size="1 1 1"/></geometry></collision>
  </link>
  <link name="arm">
    <visual><geometry><cylinder radius="0.1" length="1"/></geometry>
      <material name="orange"><color rgba="1 0.5 0 0.5"/></material></visual>
    <collision><geometry><cylinder radius="0.1" length="1"/></geometry></collision>
  </link>
  <link name="plain"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="k" type="fixed"><parent link="arm"/><child link="plain"/></joint>
</robot>"""


def test_urdf_colors_are_read_inline_and_named_and_written_back():
    m = loads_urdf(URDF)
    color = {s.link or b.name: s.color for b in m.bodies for s in b.shapes}
    assert color == {"base": (0.0, 0.0, 0.8, 1.0), "arm": (1.0, 0.5, 0.0, 0.5), "plain": None}
    written = _visual_colors(to_urdf(m))
    by_body = {n.split("_collision")[0]: c for n, c in written.items()}
    assert by_body == {"base": (0.0, 0.0, 0.8, 1.0), "arm": (1.0, 0.5, 0.0, 0.5), "plain": body_color("plain")}
    again = loads_urdf(to_urdf(m))
    assert {b.name: [s.color for s in b.shapes] for b in again.bodies} == \
        {"base": [(0.0, 0.0, 0.8, 1.0)], "arm": [(1.0, 0.5, 0.0, 0.5)], "plain": [body_color("plain")]}


def test_out_of_range_colors_are_refused_or_warned():
    with pytest.raises(ModelStructureError, match="color"):
        BoundingShape("s", "sphere", dimensions=(0.1,), color=(1, 0, 0))
    with pytest.raises(ModelStructureError, match="color"):
        BoundingShape("s", "sphere", dimensions=(0.1,), color=(2, 0, 0, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = loads_urdf(URDF.replace('rgba="1 0.5 0 0.5"', 'rgba="255 128 0 1"'))
    assert any("outside [0, 1]" in str(w.message) for w in caught)
    assert [s.color for b in m.bodies if b.name == "arm" for s in b.shapes] == [None]
