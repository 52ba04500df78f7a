"""KinDSL (RobCoGen) import: closed forms on the Fancy robot, parameters and constants, inertia conventions,
the URDF2KinDSL twins (UR5, ANYmal) against their URDF originals, and syntax/structure errors with lines."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_core import JointType, ModelFileError, forward_kinematics
from mechanism_model_core.io import kindsl as kindsl_module
from mechanism_model_core.io.kindsl import load_kindsl, loads_kindsl
from mechanism_model_core.io.urdf import load_urdf

pytest.importorskip("lark")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "robots")
FANCY = os.path.join(DATA, "fancy_kindsl", "fancy.kindsl")


def Rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def Ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1.0]])


def Rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def Tr(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def fancy_ee(q, ll=1.0):
    """Fancy's end effector by hand: joint frames are translation then rotations about x, y', z''."""
    a, b, c, d, e = q
    return (Rz(a) @ Tr(ll, 0, 0) @ Rx(-math.pi / 2) @ Tr(0, 0, b) @ Tr(0, 0, 1) @ Rz(c)
            @ Tr(1, 0, 0) @ Rx(math.pi / 2) @ Tr(0, 0, d) @ Tr(0, 0, 1) @ Rz(e) @ Tr(1, 0, 0))


@settings(max_examples=30)
@given(st.lists(st.floats(-3, 3), min_size=5, max_size=5))
def test_fancy_forward_kinematics_closed_form(q):
    m = load_kindsl(FANCY)
    assert m.coordinate_names == ("jA", "jB", "jC", "jD", "jE")
    assert [m.joint(j).type for j in m.coordinate_names] == [JointType.REVOLUTE, JointType.PRISMATIC,
                                                            JointType.REVOLUTE, JointType.PRISMATIC,
                                                            JointType.REVOLUTE]
    np.testing.assert_allclose(forward_kinematics(m, q).pose("ee"), fancy_ee(q), atol=1e-12)


def test_parameters_take_defaults_and_bindings():
    m = load_kindsl(FANCY)
    assert m.metadata["parameters"] == {"ll": 1.0, "m1": 1.0}
    assert m.body("link1").mass.mass == 1.0
    m2 = load_kindsl(FANCY, parameters={"ll": 2.5, "m1": 3.0})
    assert m2.body("link1").mass.mass == 3.0
    q = [0.3, 0.2, -0.4, 0.1, 0.9]
    np.testing.assert_allclose(forward_kinematics(m2, q).pose("ee"), fancy_ee(q, ll=2.5), atol=1e-12)


def test_inertia_about_the_origin_becomes_the_tensor_about_the_com():
    """Fancy's link1: thin hollow cylinder (r = 0.05, unit length and mass) along x from the origin.
    About its centre of mass: Ixx = m r^2, Iyy = Izz = m (r^2/2 + L^2/12)."""
    mp = load_kindsl(FANCY).body("link1").mass
    np.testing.assert_allclose(mp.com, (0.5, 0, 0))
    expected = np.diag([0.0025, 0.05**2 / 2 + 1 / 12, 0.05**2 / 2 + 1 / 12])
    np.testing.assert_allclose(mp.inertia, expected, atol=1e-5)    # the file rounds to 1e-5


def test_products_of_inertia_are_integrals_with_the_opposite_sign_of_the_tensor():
    text = """Robot P { RobotBase b { children { l via j } }
      link l { id = 1 inertia_properties { mass = 2.0 CoM = (0.0, 0.0, 0.0)
               Ix = 1.0 Iy = 2.0 Iz = 3.0 Ixy = 0.1 Ixz = -0.2 Iyz = 0.3 } children {} }
      r_joint j { ref_frame { translation = (0.0, 0.0, 0.0) rotation = (0.0, 0.0, 0.0) } } }"""
    I = loads_kindsl(text).body("l").mass.inertia
    np.testing.assert_allclose(I, [[1.0, -0.1, 0.2], [-0.1, 2.0, -0.3], [0.2, -0.3, 3.0]])


def test_rotation_is_intrinsic_xyz_after_the_translation():
    text = """Robot R { RobotBase b { children { l via j } }
      link l { id = 1 children {} frames { f { translation = (0.1, 0.2, 0.3) rotation = (0.4, -0.5, 0.6) } } }
      r_joint j { ref_frame { translation = (1.0, -2.0, 0.5) rotation = (PI/2.0, -PI/3.0, 2*PI/5) } } }"""
    m = loads_kindsl(text)
    q = 0.7
    expected = (Tr(1.0, -2.0, 0.5) @ Rx(math.pi / 2) @ Ry(-math.pi / 3) @ Rz(2 * math.pi / 5) @ Rz(q)
                @ Tr(0.1, 0.2, 0.3) @ Rx(0.4) @ Ry(-0.5) @ Rz(0.6))
    np.testing.assert_allclose(forward_kinematics(m, [q]).pose("f"), expected, atol=1e-12)


def test_named_constants_parameters_and_floating_base():
    text = """Robot F {
      RobotBase trunk floating { inertia_properties { mass = 10.0 CoM = (0.0, 0.0, 0.0)
          Ix=1.0 Iy=1.0 Iz=1.0 Ixy=0.0 Ixz=0.0 Iyz=0.0 } children { leg via hip } }
      link leg { id = 1 children {} frames { foot { translation = (hip_len, 0.0, 0.0)
          rotation = (0.0, 0.0, 0.0) } } }
      p_joint hip { ref_frame { translation = (<half=0.25>, half, -(half + 0.5) * 2.0)
          rotation = (0.0, 0.0, 0.0) } } }"""
    m = loads_kindsl(text, parameters={"hip_len": 0.4})
    assert m.ground == "world" and m.joint("trunk_floating").type is JointType.FLOATING
    assert m.body("trunk").mass.mass == 10.0
    q = {"trunk_floating.z": 1.0, "hip": 0.1}
    np.testing.assert_allclose(forward_kinematics(m, q).position("foot"), (0.25 + 0.4, 0.25, 1.0 - 1.5 + 0.1))


def test_unbound_parameter_is_an_error_naming_line_and_column():
    text = "Robot U {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n" \
           "r_joint j { ref_frame {\n  translation = (0.0, 0.0, jC_tz)\n  rotation = (0.0, 0.0, 0.0) } } }"
    with pytest.raises(ModelFileError, match="parameter 'jC_tz' has no value") as err:
        loads_kindsl(text, name="u.kindsl")
    assert (err.value.file, err.value.line, err.value.column) == ("u.kindsl", 5, 28)
    m = loads_kindsl(text, parameters={"jC_tz": 0.3})
    np.testing.assert_allclose(forward_kinematics(m, [0.0]).position("l"), (0, 0, 0.3))


@pytest.mark.parametrize("text, line, column, fragment", [
    ("Robot X {\nRobotBase b {\n  children { l via j }\n\nlink l { id = 1 children {} }\n}", 5, 1,
     "unexpected 'link'"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "r_joint j { ref_frame { translation = (0.0, 0.0 0.0) rotation = (0.0, 0.0, 0.0) } } }", 4, 49,
     "syntax error"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "r_joint j { ref_frame { translation = (0.0, 0.0, 0.0) rotation = (0.0, 0.0, 0.0) } }", 4, None,
     "syntax error"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "r_joint j { ref_frame { translation = (0.0, 0.0, 1.0 $ 2) rotation = (0.0, 0.0, 0.0) } } }", 4, 54,
     "unexpected character '$'"),
])
def test_syntax_errors_name_line_and_column(text, line, column, fragment):
    with pytest.raises(ModelFileError, match="syntax error") as err:
        loads_kindsl(text, name="bad.kindsl")
    assert err.value.line == line, str(err.value)
    if column is not None:
        assert err.value.column == column, str(err.value)
    assert fragment in str(err.value)


J = "r_joint j { ref_frame { translation = (0.0, 0.0, 0.0) rotation = (0.0, 0.0, 0.0) } }\n"


@pytest.mark.parametrize("text, line, fragment", [
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children { ghost via j } }\n" + J + "}",
     3, "child link 'ghost' is not defined"),
    ("Robot X {\nRobotBase b { children { l via k } }\nlink l { id = 1 children {} }\n" + J + "}",
     2, "joint 'k' is not defined"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "link m { id = 2 children {} }\n" + J + "}", 4, "'m' is not a child of any link"),
    ("Robot X {\nRobotBase b { children { l via j m via k } }\nlink l { id = 1 children { m via i } }\n"
     "link m { id = 2 children {} }\n" + J + J.replace(" j ", " k ") + J.replace(" j ", " i ") + "}",
     3, "two parents"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "link l { id = 2 children {} }\n" + J + "}", 4, "defined twice"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "r_joint j { ref_frame { translation = (0.0, 1.0/0.0, 0.0) rotation = (0.0, 0.0, 0.0) } } }", 4,
     "division by zero"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 inertia_properties {\n"
     "  mass = -1.0 CoM = (0.0, 0.0, 0.0) } children {} }\n" + J + "}", 3, "negative mass"),
    ("Robot X {\nRobotBase b { children { l via j } }\nlink l { id = 1 children {} }\n"
     "r_joint j { ref_frame { translation = (0.0, exec(1.0), 0.0) rotation = (0.0, 0.0, 0.0) } } }", 4,
     "function 'exec' is not allowed"),
    ("Robot X {\nRobotBase b { children { l via j m via k } }\nlink l { id = 1 children {}\n"
     "  frames { m { translation = (0.0, 0.0, 0.0) rotation = (0.0, 0.0, 0.0) } } }\n"
     "link m { id = 2 children {} }\n" + J + J.replace(" j ", " k ") + "}", 5, "'m' is used twice"),
])
def test_structure_errors_name_the_line(text, line, fragment):
    with pytest.raises(ModelFileError) as err:
        loads_kindsl(text, name="bad.kindsl")
    assert err.value.line == line, str(err.value)
    assert fragment in str(err.value)


def test_missing_lark_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "lark", None)
    monkeypatch.setattr(kindsl_module, "_PARSER", None)
    with pytest.raises(ModelFileError, match="needs the 'lark' package"):
        load_kindsl(FANCY)


# ------------------------------------------------------------------ URDF twins (URDF2KinDSL outputs)
TWINS = [
    # (KinDSL, URDF, tolerance). The UR5 URDF writes pi/2 as 1.570796325 where the KinDSL has PI/2.0:
    # the poses differ by up to ~5e-9 m for that reason alone.
    ("ur5_kindsl/ur5_urdf2kindsl.kindsl", "ur5_kindsl/ur5_urdf2kindsl.urdf", 1e-8),
    ("anymal_b_kindsl/anymal_urdf2kindsl.kindsl", "anymal_b_kindsl/anymal_b_urdf2kindsl.urdf", 1e-9),
]


@pytest.mark.parametrize("kin, urdf, tol", TWINS, ids=["ur5", "anymal_b"])
@settings(max_examples=25)
@given(data=st.data())
def test_kindsl_twin_matches_its_urdf_for_every_link(kin, urdf, tol, data):
    mk = load_kindsl(os.path.join(DATA, kin))
    mu = load_urdf(os.path.join(DATA, urdf))
    u = data.draw(st.lists(st.floats(0, 1), min_size=mu.nq, max_size=mu.nq))
    q = mu.lower_limits + np.array(u) * (mu.upper_limits - mu.lower_limits)
    qu = dict(zip(mu.coordinate_names, q))
    # URDF2KinDSL turns fixed joints into revolute ones: they stay at zero
    qk = {c: qu.get(c, 0.0) for c in mk.coordinate_names}
    fu, fk = forward_kinematics(mu, qu), forward_kinematics(mk, qk)
    for link in mu.frame_names:
        # URDF2KinDSL puts z on the joint axis and keeps the URDF link frame as 'urdf_<link>' when they differ
        twin = f"urdf_{link}" if mk.has_frame(f"urdf_{link}") else link
        np.testing.assert_allclose(fk.pose(twin), fu.pose(link), atol=tol, err_msg=link)


def test_ur5_twin_mass_properties_agree():
    """The KinDSL file gives inertia about the link-frame origin with integral products; converted, it must
    equal the URDF's (about the COM, tensor), rotated into the KinDSL link frame -- to the file's 1e-6."""
    mk = load_kindsl(os.path.join(DATA, "ur5_kindsl", "ur5_urdf2kindsl.kindsl"))
    mu = load_urdf(os.path.join(DATA, "ur5_kindsl", "ur5_urdf2kindsl.urdf"))
    checked = 0
    for b in mu.bodies[1:]:
        if b.mass.mass == 0:
            continue
        k = mk.body(b.name).mass
        T = mk.frame_in_body(f"urdf_{b.name}") if mk.has_frame(f"urdf_{b.name}") else np.eye(4)
        R = T[:3, :3]
        assert k.mass == pytest.approx(b.mass.mass)
        np.testing.assert_allclose(k.com, R @ b.mass.com + T[:3, 3], atol=1e-9)
        np.testing.assert_allclose(k.inertia, R @ b.mass.inertia @ R.T, atol=1e-6)
        checked += 1
    assert checked == 10


def test_hostile_nesting_is_refused_cleanly():
    deep = "-" * 20000 + "1.0"
    text = ("Robot X { RobotBase b { children { l via j } } link l { id = 1 children {} } r_joint j { ref_frame "
            "{ translation = (0.0, %s, 0.0) rotation = (0.0, 0.0, 0.0) } } }" % deep)
    with pytest.raises(ModelFileError, match="too deeply"):
        loads_kindsl(text)
