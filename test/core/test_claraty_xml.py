"""CLARAty XML: the corrected Appendix A samples, every transform form, and malformed or hostile files."""

import math
import os

import numpy as np
import pytest

from mechanism_model_core import (ModelFileError, UnsafeModelFileError, forward_kinematics, load_model)
from mechanism_model_core.io import safe_xml
from mechanism_model_core.library import model_path

HERE = os.path.dirname(__file__)


def write(tmp_path, text, name="m.xml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def body(inner, name="b", parent=None, joint='<ME_Joint name="j" type="revolute"/>'):
    par = f' parent="{parent}"' if parent else ""
    return f'<ME_Body name="{name}"{par}>{joint}{inner}</ME_Body>'


def model(*bodies, extra=""):
    return f'<?xml version="1.0"?>\n<Mechanism_Model name="t">{extra}{"".join(bodies)}</Mechanism_Model>\n'


# ------------------------------------------------------------------ the corrected draft samples
def test_simple_sample_loads_with_its_euler_placements():
    m = load_model(model_path("claraty_samples/simple_sample1.xml"))
    assert m.name == "simple_two_link" and m.coordinate_names == ("joint1", "joint2")
    fk = forward_kinematics(m, [0.0, 0.0])
    # link1: at (2, 0, 0), rotated by ZYZ(pi/2, 0, 0) = Rz(pi/2)
    np.testing.assert_allclose(fk.pose("link1")[:3, 3], [2, 0, 0], atol=1e-12)
    np.testing.assert_allclose(fk.pose("link1")[:3, :3], [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    # link2: (10, 0, 0) in link1, rotated by intrinsic XYZ(pi/2, pi, 0) = Rx(pi/2) Ry(pi)
    Rx = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    Ry = np.array([[-1, 0, 0], [0, 1, 0], [0, 0, -1]])
    Rz = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_allclose(fk.pose("link2")[:3, :3], Rz @ Rx @ Ry, atol=1e-12)
    np.testing.assert_allclose(fk.pose("link2")[:3, 3], [2, 10, 0], atol=1e-12)


def test_three_link_sample_loads_everything():
    m = load_model(model_path("claraty_samples/sample1.xml"))
    assert m.name == "two_link"
    assert set(m.body_names) == {"ground", "link1", "link2", "link3"}
    assert m.body("link2").parent.name == "link1" and m.body("link3").parent.name == "ground"
    j1, j2 = m.joint("joint1"), m.joint("joint2")
    assert j1.home == (1.0,) and j1.velocity == 0.25 and math.isinf(j1.effort)
    assert j1.stiffness == (0.1, 0.2, 0.3, 0.0, 0.0, 0.0)
    assert j2.offset == pytest.approx(math.pi / 2) and not j2.actuated and j2.effort == 1.0
    assert j2.lower == (-math.pi,) and j2.upper == (math.pi,)
    # the coupling joint2 = 2*joint1 makes joint2 dependent
    assert m.independent_coordinates == ("joint1", "joint3")
    np.testing.assert_allclose(m.configuration({"joint1": 0.2}), [0.2, 0.4, 0.0])
    np.testing.assert_allclose(m.configuration([0.2, -0.1]), [0.2, 0.4, -0.1])
    # mass properties and the bounding-shape tree are kept
    assert m.body("link1").mass.mass == 0.25
    np.testing.assert_allclose(m.body("link1").mass.com, [1, 1, 1])
    np.testing.assert_allclose(np.diag(m.body("link3").mass.inertia), [1, 2, 3])
    shapes = {s.name: s for s in m.body("link1").shapes}
    assert shapes["obj21"].parent == "obj20" and shapes["obj20"].is_container and shapes["obj21"].level == 2
    assert m.body("link1").spec.graphics == "graphics_file.vrml"
    # frames: ref2 is link2's reference frame (at its origin), sens1 a local frame
    q = m.configuration({"joint1": 0.3})
    fk = forward_kinematics(m, q)
    a = 0.3 + 0.6 + math.pi / 2          # joint1 + joint2 + joint2's offset
    p_link2 = 10 * np.array([math.cos(0.3), math.sin(0.3)])
    sens = p_link2 + np.array([4 * math.cos(a) - 10 * math.sin(a), 4 * math.sin(a) + 10 * math.cos(a)])
    np.testing.assert_allclose(fk.position("sens1")[:2], sens, atol=1e-12)
    np.testing.assert_allclose(fk.pose("ref2"), fk.pose("link2"))
    np.testing.assert_allclose(fk.position("ref3", "link3"), [1, 0, 10])


# ------------------------------------------------------------------ transforms
def test_every_transform_form(tmp_path):
    half = math.sqrt(0.5)
    frames = f"""
      <Frame name="f_quat"><Transform><Position x="1" y="2" z="3"/>
        <Quaternion qi="0" qj="0" qk="{half}" qs="{half}"/></Transform></Frame>
      <Frame name="f_zyx"><Transform><Rotation type="EULER_ZYX" angle1="M_PI/2" angle2="M_PI/2" angle3="0"/>
        </Transform></Frame>
      <Frame name="f_seq"><Transform><RX angle="M_PI/2"/><RZ angle="-M_PI_2"/><RY angle="0"/></Transform></Frame>
      <Frame name="f_mat"><Transform><Matrix values="0 -1 0 1  1 0 0 2  0 0 1 3"/></Transform></Frame>
      <Frame name="f_rel" relative_to="f_mat"><Transform><Position x="1"/></Transform></Frame>
      <Frame name="mnt" type="mount"><Transform><Position z="0.5"/></Transform></Frame>"""
    m = load_model(write(tmp_path, model(body(frames))))
    fk = forward_kinematics(m, [0.0])
    Rz90 = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
    np.testing.assert_allclose(fk.pose("f_quat")[:3, :3], Rz90, atol=1e-12)
    np.testing.assert_allclose(fk.position("f_quat"), [1, 2, 3])
    Ry90 = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0.0]])
    np.testing.assert_allclose(fk.pose("f_zyx")[:3, :3], Rz90 @ Ry90, atol=1e-12)   # intrinsic z then new y
    Rx90 = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0.0]])
    np.testing.assert_allclose(fk.pose("f_seq")[:3, :3], Rx90 @ Rz90.T, atol=1e-12)
    np.testing.assert_allclose(fk.position("f_rel"), [1, 3, 3], atol=1e-12)          # 6.7: via f_mat
    np.testing.assert_allclose(m.frame_in_body("f_rel")[:3, 3], [1, 3, 3], atol=1e-12)
    assert m.frame("mnt").kind == "mount"


def test_constants_and_expressions(tmp_path):
    text = model(body('<Frame name="r" type="reference"><Transform><Position x="L*2" z="-M_PI/4 + sin(0)"/>'
                      '</Transform></Frame>'), extra='<Constant name="L" value="0.25"/>')
    m = load_model(write(tmp_path, text))
    np.testing.assert_allclose(forward_kinematics(m, [0.0]).position("b"), [0.5, 0, -math.pi / 4])


def test_attach_at_mount_with_prefix_and_placement(tmp_path):
    leg = model(body('<Frame name="foot"><Transform><Position x="0.3"/></Transform></Frame>', name="thigh",
                     joint='<ME_Joint name="hip" type="revolute"/>'))
    write(tmp_path, leg, "leg.xml")
    base = model(body('<Frame name="m1" type="mount"><Transform><Position y="1"/></Transform></Frame>'
                      '<Frame name="m2" type="mount"><Transform><Position y="-1"/></Transform></Frame>',
                      name="torso", joint='<ME_Joint name="torso_fix" type="fixed"/>'),
                 '<Attach file="leg.xml" mount="m1" prefix="l1_"/>'
                 '<Attach file="leg.xml" mount="m2" prefix="l2_"><Transform><Position z="0.1"/>'
                 '<RZ angle="M_PI"/></Transform></Attach>')
    m = load_model(write(tmp_path, base, "robot.xml"))
    assert m.coordinate_names == ("l1_hip", "l2_hip")
    fk = forward_kinematics(m, [0.0, 0.0])
    np.testing.assert_allclose(fk.position("l1_foot"), [0.3, 1, 0], atol=1e-12)
    np.testing.assert_allclose(fk.position("l2_foot"), [-0.3, -1, 0.1], atol=1e-12)


# ------------------------------------------------------------------ malformed files
@pytest.mark.parametrize("text, pattern, line", [
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a">\n</Mechanism_Model>\n',
     "not well-formed", 4),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a">\n<Bogus/>\n</ME_Body>\n'
     '</Mechanism_Model>\n', "DTD.*got \\(Bogus", 3),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a" parent="nowhere">\n'
     '<ME_Joint name="j"/></ME_Body>\n</Mechanism_Model>\n', "parent 'nowhere'", 3),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j"/></ME_Body>\n'
     '<ME_Body name="a"><ME_Joint name="k"/></ME_Body>\n</Mechanism_Model>\n', "defined twice", 4),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j">\n'
     '<Joint_Limits min="__import__(\'os\')"/></ME_Joint></ME_Body>\n</Mechanism_Model>\n',
     "not allowed", 4),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j"/>\n'
     '<Frame name="r" type="reference"><Transform><Quaternion qs="0"/></Transform></Frame>\n'
     '</ME_Body>\n</Mechanism_Model>\n', "zero or non-finite norm", 4),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j"/>\n'
     '<Frame name="r"><Transform><Matrix values="1 0 0 0 0 2 0 0 0 0 1 0"/></Transform></Frame>\n'
     '</ME_Body>\n</Mechanism_Model>\n', "not a proper rotation", 4),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j">\n'
     '<Joint_Constraint expr="2*k"/></ME_Joint></ME_Body>\n'
     '<ME_Body name="b"><ME_Joint name="k"><Joint_Constraint expr="j/2"/></ME_Joint></ME_Body>\n'
     '</Mechanism_Model>\n', "circular joint couplings", 4),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j">\n'
     '<Joint_Constraint expr="2*nobody"/></ME_Joint></ME_Body>\n</Mechanism_Model>\n',
     "unknown name 'nobody'", 4),
    # names that clash across bodies are found when the mechanism is built; the line is the second
    # definition's
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j"/></ME_Body>\n'
     '<ME_Body name="b" parent="a">\n<ME_Joint name="j"/></ME_Body>\n</Mechanism_Model>\n',
     "duplicate joint names", 5),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j"/>\n'
     '<Frame name="tool"><Transform/></Frame></ME_Body>\n<ME_Body name="b" parent="a"><ME_Joint name="k"/>\n'
     '<Frame name="tool"><Transform/></Frame></ME_Body>\n</Mechanism_Model>\n', "'tool' is used twice", 6),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j"/>\n'
     '<Frame name="b"><Transform/></Frame></ME_Body>\n<ME_Body name="b" parent="a"><ME_Joint name="k"/>\n'
     '</ME_Body>\n</Mechanism_Model>\n', "'b' is used twice", 5),
    ('<?xml version="1.0"?>\n<Mechanism_Model name="t">\n<ME_Body name="a"><ME_Joint name="j">\n'
     '<Joint_Limits min="1" max="-1"/></ME_Joint></ME_Body>\n</Mechanism_Model>\n', "above upper limit", 3),
    ('<?xml version="1.0"?>\n<robot_model/>\n', "expected <Mechanism_Model>", 2),
    ('<?xml version="1.0"?>\n<Mechanism_Assembly/>\n', "expected <Mechanism_Model>", 2),
])
def test_malformed_files_name_file_line_and_problem(tmp_path, text, pattern, line):
    path = write(tmp_path, text)
    with pytest.raises(ModelFileError, match=pattern) as info:
        load_model(path)
    err = info.value
    assert err.file == path
    assert err.line == line
    assert str(err).startswith(path)


def test_a_directory_is_not_a_model_file(tmp_path):
    (tmp_path / "robot.urdf").mkdir()
    for path in (tmp_path, tmp_path / "robot.urdf"):
        with pytest.raises(ModelFileError, match="is a directory"):
            load_model(path)
    from mechanism_model_core.io.urdf import load_urdf

    with pytest.raises(ModelFileError, match="cannot read file: Is a directory"):
        load_urdf(tmp_path / "robot.urdf")


def test_missing_file():
    with pytest.raises(ModelFileError, match="no such file"):
        load_model("/nonexistent/model.xml")


# ------------------------------------------------------------------ hostile files
BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE Mechanism_Model [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<Mechanism_Model name="&lol3;"/>
"""

XXE = """<?xml version="1.0"?>
<!DOCTYPE Mechanism_Model [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<Mechanism_Model name="t"><ME_Body name="&secret;"><ME_Joint name="j"/></ME_Body></Mechanism_Model>
"""

EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE Mechanism_Model SYSTEM "http://127.0.0.1:9/evil.dtd">
<Mechanism_Model name="t"><ME_Body name="a"><ME_Joint name="j"/></ME_Body></Mechanism_Model>
"""

PARAMETER_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE Mechanism_Model [<!ENTITY % ext SYSTEM "file:///etc/passwd"> %ext;]>
<Mechanism_Model name="t"/>
"""


@pytest.mark.parametrize("text", [BILLION_LAUGHS, XXE, PARAMETER_ENTITY], ids=["laughs", "xxe", "param"])
def test_entity_declarations_are_refused(tmp_path, text):
    with pytest.raises(UnsafeModelFileError, match="entit"):
        load_model(write(tmp_path, text))


def test_external_dtd_is_never_fetched(tmp_path):
    # the SYSTEM DTD is ignored (nothing listens there; a fetch attempt would fail differently), and the
    # file validates against the package's own DTD
    m = load_model(write(tmp_path, EXTERNAL_DTD))
    assert m.coordinate_names == ("j",)


def test_size_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(safe_xml, "MAX_BYTES", 1000)
    path = write(tmp_path, model(*[body("", name=f"b{i}", joint=f'<ME_Joint name="j{i}"/>')
                                   for i in range(40)]))
    with pytest.raises(UnsafeModelFileError, match="limit"):
        load_model(path)


def test_deep_nesting_of_attachments_is_refused(tmp_path):
    write(tmp_path, model('<ME_Body name="a"><ME_Joint name="j"/><Frame name="m" type="mount"><Transform/>'
                          '</Frame></ME_Body>', extra='<Attach file="self.xml" mount="m" prefix="x"/>'),
          "self.xml")
    with pytest.raises(ModelFileError, match="nested|mount|exist"):
        load_model(str(tmp_path / "self.xml"))


FEATURES = '''<?xml version="1.0"?>
<Mechanism_Model name="features" ground="base">
  <Constant name="L" value="0.5"/>
  <Constant name="H" value="L/2"/>
  <ME_Body name="base">
    <Frame name="g1" type="mount"><Transform><Position x="1"/><RZ angle="M_PI_2"/></Transform></Frame>
    <Frame name="g2" relative_to="g1"><Transform><Position x="H"/></Transform></Frame>
    <Mass_Properties mass="3"><Inertia xx="1" yy="2" zz="3"/></Mass_Properties>
  </ME_Body>
  <ME_Body name="link1">
    <ME_Joint name="j1" offset="0.1" home="0.2" axis="0 1 0" actuated="false">
      <Joint_Limits min="-1" max="2" vmax="3" torque_min="-4" torque_max="4"/>
      <Joint_Stiffness kx="1" ky="2" kz="3" tx="4" ty="5" tz="6"/>
    </ME_Joint>
    <Frame name="r1" type="reference"><Transform><Position x="L" y="0.1"/>
      <Rotation type="EULER_ZYX" angle1="0.3" angle2="0.2" angle3="0.1"/></Transform></Frame>
    <Frame name="tool" relative_to="tool_base"><Transform><Position z="0.1"/><RX angle="0.5"/></Transform></Frame>
    <Frame name="tool_base" type="mount"><Transform><Position x="0.3"/><RY angle="0.4"/></Transform></Frame>
    <Mass_Properties mass="2"><CM><Transform><Position x="0.1"/><RZ angle="M_PI_2"/></Transform></CM>
      <Inertia xx="1" yy="2" zz="3" xy="0.5"/></Mass_Properties>
    <Bounding_Shape>
      <Obj_Params name="top" type="no_shape" is_container="true"><Transform/></Obj_Params>
      <Obj_Params name="b1" type="box" parent="top" level="2" tol="0.01" link="x" ignore_collisions="true">
        <Transform><Position x="0.1"/><RZ angle="0.3"/></Transform><Dimension dim-x="0.1" dim-y="0.2" dim-z="0.3"/>
      </Obj_Params>
      <Obj_Params name="c1" type="cyl" parent="top" level="2"><Transform/><Dimension dim-x="0.05" dim-z="0.4"/>
      </Obj_Params>
    </Bounding_Shape>
    <Display_Graphics path="package://x/link1.dae"/>
  </ME_Body>
  <ME_Body name="link2" parent="link1">
    <ME_Joint name="j2" type="prismatic" axis="1 1 0"><Joint_Limits min="0" max="0.5" vmax="0"/>
      <Joint_Constraint expr="0.5*j1 + 0.1"/></ME_Joint>
    <Frame name="r2" type="reference"><Transform><Matrix values="0 -1 0 0.1  1 0 0 0.2  0 0 1 0.3"/></Transform>
    </Frame>
  </ME_Body>
  <ME_Body name="link3" parent="link2">
    <ME_Joint name="j3" type="continuous" axis="0 0 -1"><Joint_Constraint expr="sin(j1)*j2"/></ME_Joint>
    <Frame name="r3" type="reference"><Zero_Position parent_to_joint="0.1 0 0" axis="0 0 -1"/></Frame>
  </ME_Body>
  <ME_Body name="link4" parent="base">
    <ME_Joint name="j4" type="floating" home="0, 0, 1, 0, 0, 0">
      <Joint_Limits min="-1, -1, 0, -M_PI, -1, -M_PI" max="1, 1, 2, M_PI, 1, M_PI" vmax="0"/></ME_Joint>
  </ME_Body>
  <ME_Body name="link5" parent="link4">
    <ME_Joint name="j5" type="ball"/>
    <Frame name="r5" type="reference"><DH_Parameter type="DH_Craig" length="0.2" twist="0.3" offset="0.1"
      angle="0.4"/></Frame>
  </ME_Body>
</Mechanism_Model>
'''


def test_file_features_read_right_and_survive_writing(tmp_path):
    from mechanism_model_core import save_model

    m = load_model(write(tmp_path, FEATURES))
    c, s = math.cos(0.4), math.sin(0.4)
    # frames relative_to another frame (defined below it), stored relative to the body, by hand
    tool_base = np.array([[c, 0, s, 0.3], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]])
    ca, sa = math.cos(0.5), math.sin(0.5)
    tool = np.array([[1, 0, 0, 0], [0, ca, -sa, 0], [0, sa, ca, 0.1], [0, 0, 0, 1]])
    np.testing.assert_allclose(m.frame_in_body("tool"), tool_base @ tool, atol=1e-12)
    np.testing.assert_allclose(m.frame_in_body("g2")[:3, 3], [1, 0.25, 0], atol=1e-12)  # Constant H = L/2
    # inertia given in a CM frame turned 90 degrees about z: x and y swap, the product changes sign
    np.testing.assert_allclose(m.body("link1").mass.inertia, [[2, -0.5, 0], [-0.5, 1, 0], [0, 0, 3]], atol=1e-12)
    np.testing.assert_allclose(m.body("link1").mass.com, [0.1, 0, 0])
    # write and read again: every constant the same, every frame at the same pose
    out = tmp_path / "out.xml"
    save_model(m, out)
    back = load_model(out)
    assert back.ground == "base" and back.coordinate_names == m.coordinate_names
    for j in m.joints:
        k = back.joint(j.name)
        for attr in ("type", "lower", "upper", "home", "velocity", "effort", "offset", "actuated", "stiffness",
                     "coupling"):
            assert getattr(k, attr) == getattr(j, attr), (j.name, attr)
    for a, b in zip(m.bodies, back.bodies):
        assert (a.name, a.graphics, set(a.frames), a.mass.mass) == (b.name, b.graphics, set(b.frames), b.mass.mass)
        np.testing.assert_allclose(b.mass.inertia, a.mass.inertia, atol=1e-15)
        assert [(s.name, s.type, s.dimensions, s.parent, s.is_container, s.level, s.ignore_collisions,
                 s.tolerance, s.link) for s in a.shapes] == \
            [(s.name, s.type, s.dimensions, s.parent, s.is_container, s.level, s.ignore_collisions,
              s.tolerance, s.link) for s in b.shapes]
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = m.random_configuration(rng)
        fa, fb = forward_kinematics(m, q), forward_kinematics(back, q)
        for f in m.frame_names:
            np.testing.assert_allclose(fb.pose(f), fa.pose(f), atol=1e-12, err_msg=f)


def test_comments_inside_frames_are_ignored(tmp_path):
    text = model('<ME_Body name="ground"><Frame name="g"><!-- landmark --><Transform><Position y="2"/>'
                 '</Transform></Frame></ME_Body>',
                 body('<Frame name="r" type="reference"><!-- placement --><Transform><Position z="1"/></Transform>'
                      '</Frame><Frame name="tool"><!-- the tool --><Transform><Position x="1"/></Transform></Frame>'))
    m = load_model(write(tmp_path, text))
    fk = forward_kinematics(m, [0.0])
    np.testing.assert_allclose(fk.pose("tool")[:3, 3], [1, 0, 1])
    np.testing.assert_allclose(fk.pose("g")[:3, 3], [0, 2, 0])


def test_ground_frames_may_be_relative_to_a_ground_frame_defined_below(tmp_path):
    text = model('<ME_Body name="ground"><Frame name="cam" relative_to="mast"><Transform><Position z="0.5"/>'
                 '</Transform></Frame><Frame name="mast"><Transform><Position x="1"/><RZ angle="M_PI_2"/>'
                 '</Transform></Frame><Frame name="loop_a" relative_to="loop_b"><Transform/></Frame>'
                 '<Frame name="loop_b" relative_to="loop_a"><Transform/></Frame></ME_Body>', body(""))
    with pytest.raises(ModelFileError, match="relative_to 'loop_b'") as err:
        load_model(write(tmp_path, text))
    assert err.value.line == 2
    text = text.replace('<Frame name="loop_a" relative_to="loop_b"><Transform/></Frame>'
                        '<Frame name="loop_b" relative_to="loop_a"><Transform/></Frame>',
                        '<Frame name="tip" relative_to="cam"><Transform><Position x="0.2"/></Transform></Frame>')
    m = load_model(write(tmp_path, text))
    fk = forward_kinematics(m, [0.0])
    np.testing.assert_allclose(fk.pose("cam")[:3, 3], [1, 0, 0.5], atol=1e-12)
    np.testing.assert_allclose(fk.pose("tip")[:3, 3], [1, 0.2, 0.5], atol=1e-12)   # x of cam is the world y
    assert [f for f in m.frame_names if f in ("cam", "mast", "tip")] == ["cam", "mast", "tip"]
