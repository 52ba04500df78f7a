"""URDF import and export: what each element becomes, closed-form checks, and a specific error for each
malformed or hostile file."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from lxml import etree

from mechanism_model_core import (Joint, JointType, MechanismBuilder, ModelFileError, UnsafeModelFileError,
                                  forward_kinematics)
from mechanism_model_core.io.urdf import URDFWarning, load_urdf, loads_urdf, save_urdf, to_urdf
from mechanism_model_core.model import BoundingShape, MassProperties

from .robots import Rx, Ry, Rz  # independent elementary rotations, written out

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
ODD = os.path.join(DATA, "odd", "odd.urdf")



def T(R=np.eye(3), p=(0, 0, 0)):
    out = np.eye(4)
    out[:3, :3] = R
    out[:3, 3] = p
    return out


@pytest.fixture(scope="module")
def odd():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_urdf(ODD)
    return m, caught


# ------------------------------------------------------------------------------------------ import
def test_non_unit_axis_is_normalised_with_a_warning_naming_the_line(odd):
    m, caught = odd
    msgs = [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]
    assert len(msgs) == 1
    assert "odd.urdf:" in msgs[0] and "/slider_joint" in msgs[0] and "normalised" in msgs[0]
    a = np.array([0.6, -0.48, 0.6401])
    np.testing.assert_allclose(m.joint("/slider_joint").axis, a / np.linalg.norm(a), atol=1e-15)


def test_root_link_is_the_ground_and_names_are_kept(odd):
    m, _ = odd
    assert m.ground == "/base_link"
    assert "/slider" in m.frame_names
    # a joint named like its child link: both names live on
    assert "elbow" in m.joint_names and "elbow" in m.frame_names
    assert m.child_body_of_joint("elbow") == "elbow"


def test_joint_types_limits_and_mimic_couplings(odd):
    m, _ = odd
    assert m.joint("forearm_roll").type is JointType.CONTINUOUS
    assert m.joint("/slider_joint").type is JointType.PRISMATIC
    assert m.joint("free").type is JointType.FLOATING
    assert m.joint("slide_plane").type is JointType.PLANAR
    assert m.joint("tool_fixed").type is JointType.FIXED
    assert m.joint("elbow").lower == (-6.5,) and m.joint("elbow").upper == (6.5,)   # wider than pi
    assert math.isinf(m.joint("forearm_roll").upper[0])
    assert m.joint("elbow").velocity == 2 and m.joint("elbow").effort == 10
    assert set(m.dependent_coordinates) == {"finger_b", "finger_c"}
    q = m.configuration({"finger_a": 0.03})
    assert q[m.coordinate_index("finger_b")] == pytest.approx(0.03)
    assert q[m.coordinate_index("finger_c")] == pytest.approx(-2.5 * 0.03 + 0.1)


def test_joint_origin_is_the_placement_and_the_axis_is_in_the_joint_frame(odd):
    """Closed form for the elbow: T = T(slider origin) Trans(axis*d) T(elbow origin) Rot(axis, q)."""
    m, _ = odd
    d, qe = 0.3, 1.1
    a1 = np.array([0.6, -0.48, 0.6401])
    a1 /= np.linalg.norm(a1)
    a2 = np.array([0.2672612419124244, 0.5345224838248488, 0.8017837257372732])
    K = np.array([[0, -a2[2], a2[1]], [a2[2], 0, -a2[0]], [-a2[1], a2[0], 0]])
    Rq = np.eye(3) + math.sin(qe) * K + (1 - math.cos(qe)) * K @ K
    expected = (T(Rz(0.1) @ Ry(-0.2) @ Rx(0.3), (0.1, -0.2, 0.3)) @ T(p=a1 * d)
                @ T(Rz(-2.0) @ Ry(0.4) @ Rx(1.2), (0.2, 0.05, -0.1)) @ T(Rq))
    fk = forward_kinematics(m, {"/slider_joint": d, "elbow": qe})
    np.testing.assert_allclose(fk.pose("elbow"), expected, atol=1e-12)


def test_inertial_is_rotated_into_body_axes(odd):
    m, _ = odd
    mp = m.bodies[0].mass                      # the root link's inertial stays with the ground
    R = Rz(0.3) @ Ry(0.2) @ Rx(0.1)
    I = np.array([[0.1, 0.01, -0.02], [0.01, 0.2, 0.03], [-0.02, 0.03, 0.3]])
    assert mp.mass == 2.5
    np.testing.assert_allclose(mp.com, (0.01, 0.02, 0.03))
    np.testing.assert_allclose(mp.inertia, R @ I @ R.T, atol=1e-15)


def test_collision_primitives_and_meshes_become_bounding_shapes(odd):
    m, _ = odd
    base = m.bodies[0].shapes
    assert [(s.type, s.dimensions) for s in base] == [("box", (0.4, 0.3, 0.1))]
    np.testing.assert_allclose(base[0].transform, T(Rz(0.4), (0, 0, 0.05)), atol=1e-15)
    (cyl,) = m.body("elbow").shapes
    assert cyl.name == "elbow_cyl" and cyl.type == "cylinder" and cyl.dimensions == (0.03, 0.2)
    sphere, mesh = m.body("forearm").shapes
    assert sphere.type == "sphere" and sphere.dimensions == (0.05,)
    assert mesh.type == "mesh" and mesh.mesh == "package://odd/meshes/forearm.stl"
    assert mesh.dimensions == (0.001, 0.001, 0.001)
    assert sphere.name != mesh.name


def test_root_joint_option_hangs_the_robot_from_a_new_ground():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixed = load_urdf(ODD)
        free = load_urdf(ODD, root_joint="floating")
    assert free.ground == "world" and free.nq == fixed.nq + 6
    assert free.joint("root_joint").type is JointType.FLOATING
    q = {"root_joint.z": 0.5, "root_joint.yaw": 0.3, "elbow": 0.2}
    qf = {"elbow": 0.2}
    np.testing.assert_allclose(forward_kinematics(free, q).pose("wrist"),
                               T(Rz(0.3), (0, 0, 0.5)) @ forward_kinematics(fixed, qf).pose("wrist"),
                               atol=1e-12)


PLANAR_X = """<robot name="p">
  <link name="a"/><link name="b"/>
  <joint name="pl" type="planar"><parent link="a"/><child link="b"/>
    <origin xyz="1 2 3" rpy="0.1 0.2 0.3"/><axis xyz="1 0 0"/></joint>
</robot>"""


def test_planar_joint_moves_in_the_plane_normal_to_its_axis():
    m = loads_urdf(PLANAR_X)
    assert m.nq == 3
    P = T(Rz(0.3) @ Ry(0.2) @ Rx(0.1), (1, 2, 3))
    for x, y, th in [(0.3, -0.2, 0.7), (-1.0, 0.5, -2.0)]:
        Tb = np.linalg.inv(P) @ forward_kinematics(m, [x, y, th]).pose("b")
        assert Tb[0, 3] == pytest.approx(0.0, abs=1e-12)          # no motion along the normal x
        assert np.hypot(Tb[1, 3], Tb[2, 3]) == pytest.approx(math.hypot(x, y))
        np.testing.assert_allclose(Tb[:3, :3], Rx(th), atol=1e-12)  # rotation about the normal


def test_loads_every_vendored_real_world_file():
    for rel in ("ur5/ur5.urdf", "panda/panda.urdf", "hyq/hyq.urdf", "osr_rover/osr_rover.urdf",
                "anymal_b_kindsl/anymal_b_urdf2kindsl.urdf", "ur5_kindsl/ur5_urdf2kindsl.urdf"):
        m = load_urdf(os.path.join(DATA, rel))
        assert m.nq > 0
    panda = load_urdf(os.path.join(DATA, "panda", "panda.urdf"))
    assert panda.couplings["panda_finger_joint2"].source == "panda_finger_joint1"


# ------------------------------------------------------------------------------------------ errors
def _urdf(body: str) -> str:
    return f'<?xml version="1.0"?>\n<robot name="r">\n{body}\n</robot>\n'


LINKS = '  <link name="a"/>\n  <link name="b"/>\n  <link name="c"/>'


@pytest.mark.parametrize("body, line, fragment", [
    (LINKS + '\n  <joint name="j" type="revolute"><parent link="zz"/><child link="b"/>'
             '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n  <joint name="k" type="fixed">'
             '<parent link="a"/><child link="c"/></joint>', 6, "parent link 'zz' is not defined"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="nope"/></joint>', 6,
     "child link 'nope' is not defined"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>\n'
             '  <joint name="k" type="fixed"><parent link="c"/><child link="b"/></joint>', 7, "two parents"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>\n'
             '  <joint name="k" type="fixed"><parent link="b"/><child link="c"/></joint>\n'
             '  <joint name="l" type="fixed"><parent link="c"/><child link="b"/></joint>', 8, "two parents"),
    ('  <link name="a"/>\n  <link name="b"/>\n  <link name="c"/>\n'
     '  <joint name="j" type="fixed"><parent link="c"/><child link="b"/></joint>\n'
     '  <joint name="k" type="fixed"><parent link="b"/><child link="c"/></joint>', 6, "cycle through links"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>', 5,
     "several root links"),
    ('  <link name="b"/>\n  <link name="c"/>\n'
     '  <joint name="j" type="fixed"><parent link="c"/><child link="b"/></joint>\n'
     '  <joint name="k" type="fixed"><parent link="b"/><child link="c"/></joint>', 5, "cycle"),
    (LINKS + '\n  <joint name="j" type="hinge"><parent link="a"/><child link="b"/></joint>', 6,
     "unknown joint type 'hinge'"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/>\n'
             '    <origin xyz="0 0.1x 0"/></joint>', 7, "not a list of numbers"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/>\n'
             '    <origin xyz="0 0"/></joint>', 7, "needs 3 numbers"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/>\n'
             '    <origin rpy="0 nan 0"/></joint>', 7, "must be finite"),
    (LINKS + '\n  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>\n'
             '    <limit lower="-1" upper="one" effort="1" velocity="1"/></joint>', 7, "not a number"),
    (LINKS + '\n  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>\n'
             '    <limit lower="1" upper="-1" effort="1" velocity="1"/></joint>', 7, "lower limit"),
    (LINKS + '\n  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>\n'
             '    <axis xyz="0 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>', 7,
     "zero length"),
    ('  <link name="a"/>\n  <link name="a"/>', 4, "defined twice"),
    (LINKS + '\n  <joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>\n'
             '  <joint name="j" type="fixed"><parent link="a"/><child link="c"/></joint>', 7, "defined twice"),
    (LINKS + '\n  <joint name="j" type="fixed"><child link="b"/></joint>', 6, "needs <parent"),
    ('  <link name="a">\n    <inertial><mass value="-1"/></inertial>\n  </link>', 4, "negative mass"),
    (LINKS + '\n  <joint name="j" type="continuous"><parent link="a"/><child link="b"/>\n'
             '    <mimic joint="k"/></joint>\n  <joint name="k" type="continuous"><parent link="a"/>'
             '<child link="c"/>\n    <mimic joint="j"/></joint>', 7, "circular joint couplings"),
    ('  <link name="r"/>\n' + LINKS + '\n  <joint name="ra" type="fixed"><parent link="r"/><child link="a"/></joint>'
     '\n  <joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>'
     '\n  <joint name="cb" type="fixed"><parent link="c"/><child link="b"/></joint>', 9,
     "cycle through links b -> c -> b"),
])
def test_malformed_files_get_specific_errors_with_lines(tmp_path, body, line, fragment):
    path = tmp_path / "bad.urdf"
    path.write_text(_urdf(body))
    with pytest.raises(ModelFileError) as err:
        load_urdf(path)
    assert err.value.file == str(path)
    assert err.value.line == line, str(err.value)
    assert fragment in str(err.value)


def test_not_a_robot_and_not_xml(tmp_path):
    p = tmp_path / "x.urdf"
    p.write_text("<Mechanism_Model name='m'/>")
    with pytest.raises(ModelFileError, match="expected <robot>"):
        load_urdf(p)
    p.write_text("<robot name='r'><link name='a'></robot>")
    with pytest.raises(ModelFileError, match="not well-formed") as err:
        load_urdf(p)
    assert err.value.line == 1


def test_hostile_entities_are_refused():
    bomb = ('<?xml version="1.0"?>\n<!DOCTYPE robot [\n <!ENTITY a "aaaaaaaaaa">\n'
            ' <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n<robot name="&b;"><link name="x"/></robot>')
    with pytest.raises(UnsafeModelFileError):
        loads_urdf(bomb)
    xxe = ('<?xml version="1.0"?>\n<!DOCTYPE robot [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
           '<robot name="r"><link name="&x;"/></robot>')
    with pytest.raises(UnsafeModelFileError):
        loads_urdf(xxe)


def test_mimic_of_a_name_that_cannot_be_an_expression_variable_loads_with_a_warning():
    text = _urdf(LINKS + '\n  <joint name="j-1" type="continuous"><parent link="a"/><child link="b"/></joint>\n'
                         '  <joint name="k" type="continuous"><parent link="a"/><child link="c"/>\n'
                         '    <mimic joint="j-1"/></joint>')
    with pytest.warns(URDFWarning, match=r"robot_description:8: joint 'k' mimics 'j-1'.*left independent"):
        m = loads_urdf(text, name="robot_description")
    assert m.couplings == {} and m.nq == 2


# ------------------------------------------------------------------------------------------ export
def _exported_tree(mech):
    root = etree.fromstring(to_urdf(mech).encode())
    links = {l.get("name"): l for l in root.findall("link")}
    joints = {j.get("name"): j for j in root.findall("joint")}
    return root, links, joints


def _demo():
    b = MechanismBuilder("demo", ground="site")
    b.add_body("chassis", None, Joint.floating("chassis"),
               shapes=(BoundingShape("hull", "box", np.eye(4), (1.0, 0.6, 0.3)),),
               mass=MassProperties(20.0, (0.1, 0, 0), np.diag([1.0, 2.0, 3.0])))
    b.add_body("head", "chassis", Joint.ball("neck", T(p=(0.3, 0, 0.4))))
    b.add_body("wheel", "chassis", Joint.revolute("spin", T(Rx(math.pi / 2), (0, 0.4, 0)), axis=(0, 0, 1)))
    b.add_body("arm", "chassis", Joint.revolute("shoulder", T(p=(0.5, 0, 0.2)), axis=(0, 1, 0), lower=-1,
                                                upper=1.5, offset=0.25, velocity=0.7, effort=30))
    b.add_body("slide", "arm", Joint.prismatic("extend", T(p=(0.2, 0, 0)), axis=(1, 0, 0)))
    b.add_body("finger", "arm", Joint.revolute("finger", T(p=(0.3, 0, 0)), lower=-1, upper=1,
                                               coupling="-0.5*shoulder + 0.1"))
    b.add_body("thumb", "arm", Joint.revolute("thumb", T(p=(0.3, 0.1, 0)), lower=-1, upper=1,
                                              coupling="sin(shoulder)"))
    b.add_frame("arm", "tool", T(Ry(0.3), (0.4, 0, 0)))
    b.add_frame("chassis", "mast_mount", T(p=(0.2, 0, 0.3)), kind="mount")
    return b.build()


def test_export_structure_for_robot_description():
    mech = _demo()
    root, links, joints = _exported_tree(mech)
    children = {j.find("child").get("link") for j in joints.values()}
    assert [n for n in links if n not in children] == ["site"]            # the ground is the root link
    # multi-DOF joints become chains of single-DOF joints named like our coordinates
    for c in mech.coordinate_names:
        assert c in joints, c
    assert joints["chassis.x"].get("type") == "prismatic"
    assert joints["chassis.yaw"].get("type") == "continuous"
    assert joints["neck.roll"].find("child").get("link") == "head"
    assert links["chassis.x_link"].find("inertial") is None                 # massless chain links
    # an unlimited revolute joint is continuous; limits and offsets
    assert joints["spin"].get("type") == "continuous"
    lim = joints["shoulder"].find("limit")
    assert (lim.get("lower"), lim.get("upper"), lim.get("velocity"), lim.get("effort")) == \
        ("-1.0", "1.5", "0.7", "30.0")
    assert joints["extend"].find("limit").get("upper") == "1000000000.0"   # unbounded prismatic
    # named frames are fixed links
    assert joints["tool.local_frame"].get("type") == "fixed"
    assert joints["mast_mount.mount_frame"].find("parent").get("link") == "chassis"
    # couplings: affine -> mimic, anything else -> a comment
    mimic = joints["finger"].find("mimic")
    assert (mimic.get("joint"), float(mimic.get("multiplier")), float(mimic.get("offset"))) == \
        ("shoulder", -0.5, 0.1)
    assert joints["thumb"].find("mimic") is None
    assert any("thumb = sin(shoulder)" in c.text for c in root.iter(etree.Comment))
    # bounding shapes are collision and visual primitives
    hull = links["chassis"]
    assert hull.find("collision/geometry/box").get("size") == "1.0 0.6 0.3"
    assert hull.find("visual/geometry/box").get("size") == "1.0 0.6 0.3"
    assert hull.find("inertial/mass").get("value") == "20.0"


def test_export_folds_the_offset_into_the_origin():
    """URDF has no articulation offset: the origin carries it, so link poses agree for the same q."""
    mech = _demo()
    back = loads_urdf(to_urdf(mech))
    assert back.joint("shoulder").offset == 0.0
    for q in (0.0, 0.4, -0.9):
        np.testing.assert_allclose(forward_kinematics(back, {"shoulder": q}).pose("arm"),
                                   forward_kinematics(mech, {"shoulder": q}).pose("arm"), atol=1e-12)


def test_export_then_import_rebuilds_multi_dof_joints_frames_and_couplings(tmp_path):
    mech = _demo()
    path = tmp_path / "demo.urdf"
    save_urdf(mech, path)
    back = load_urdf(path)
    assert back.ground == "site"
    assert back.joint("chassis").type is JointType.FLOATING
    assert back.joint("neck").type is JointType.BALL
    assert set(back.coordinate_names) == set(mech.coordinate_names)
    assert back.frame_in_body("tool") is not None and back.frame("tool").body == "arm"
    assert back.frame("mast_mount").kind == "mount"
    assert back.couplings["finger"].linear_coefficients() == ({"shoulder": -0.5}, pytest.approx(0.1))
    assert math.isinf(back.joint("extend").upper[0])
    assert back.body_names == mech.body_names
    rng = np.random.default_rng(0)
    for _ in range(10):
        q = mech.random_configuration(rng)
        qd = dict(zip(mech.coordinate_names, q))
        qd.pop("thumb")     # not expressible in URDF: independent in the imported model
        a = forward_kinematics(mech, q).all_poses()
        b = forward_kinematics(back, {**qd, "thumb": q[mech.coordinate_index("thumb")]}).all_poses()
        assert max(np.abs(a[f] - b[f]).max() for f in a) < 1e-12


def test_home_is_zero_or_mid_range_when_zero_is_outside_the_limits(tmp_path):
    # URDF has no home; the Panda's joint 4 is limited to [-3.0718, -0.0698], so 0 is not a valid position
    m = load_urdf(os.path.join(DATA, "panda", "panda.urdf"))
    i = m.coordinate_index("panda_joint4")
    assert m.home[i] == pytest.approx((-3.0718 - 0.0698) / 2)
    assert m.home[m.coordinate_index("panda_joint1")] == 0.0       # [-2.8973, 2.8973] holds 0
    assert m.within_limits(m.home)
    p = tmp_path / "one.urdf"
    p.write_text(_urdf('  <link name="a"/>\n  <link name="b"/>\n  <joint name="j" type="prismatic">'
                       '<parent link="a"/><child link="b"/>\n    <limit lower="0.015" upper="0.037" effort="1" '
                       'velocity="1"/></joint>'))
    assert load_urdf(p).home.tolist() == [pytest.approx(0.026)]


def test_mimic_on_a_joint_without_a_coordinate_is_ignored_with_a_warning_naming_the_line(tmp_path):
    p = tmp_path / "m.urdf"
    p.write_text(_urdf(LINKS + '\n  <joint name="j1" type="continuous"><parent link="a"/><child link="b"/></joint>'
                               '\n  <joint name="j2" type="fixed"><parent link="b"/><child link="c"/>'
                               '\n    <mimic joint="j1"/></joint>'))
    with pytest.warns(URDFWarning, match=r"m\.urdf:8: joint 'j2' of type fixed .* <mimic> ignored"):
        m = load_urdf(p)
    assert m.coordinate_names == ("j1",) and not m.couplings
