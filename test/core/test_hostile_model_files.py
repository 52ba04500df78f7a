"""Hostile and degenerate model files (issue 10, items 1-4): each is refused with a ModelFileError naming the
file and the line (or read under a documented interpretation), fast and with bounded memory; nothing valid
is lost. The files are written here by hand; the expected lines are counted in the text."""

from __future__ import annotations

import math
import os
import textwrap
import warnings

import numpy as np
import pytest

from mechanism_model_core import ModelFileError, forward_kinematics, load_model
from mechanism_model_core.io import limits as read_limits
from mechanism_model_core.io.claraty_xml import load_claraty_xml
from mechanism_model_core.io.urdf import URDFWarning, loads_urdf


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(path)


def line_of(path, needle, occurrence=1):
    """1-based line of the ``occurrence``-th line containing ``needle``."""
    seen = 0
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if needle in line:
                seen += 1
                if seen == occurrence:
                    return n
    raise AssertionError(f"{needle!r} not in {path}")


def refused(path, *, match, line=None, loader=load_model, **kw):
    with pytest.raises(ModelFileError, match=match) as info:
        loader(path, **kw)
    err = info.value
    assert err.file == path, str(err)
    if line is not None:
        assert err.line == line, str(err)
    return err


def claraty(body_xml: str, constants: str = "") -> str:
    return ('<Mechanism_Model name="m" version="1.0">\n' + textwrap.dedent(constants)
            + textwrap.dedent(body_xml) + "</Mechanism_Model>\n")


ONE_JOINT = """\
<ME_Body name="link1">
  <ME_Joint name="j1" type="revolute" {joint}>
    <Joint_Limits {limits}/>
  </ME_Joint>
</ME_Body>
"""


def one_joint(tmp_path, joint="", limits='min="-1" max="1"', name="one.xml"):
    return write(tmp_path, name, claraty(ONE_JOINT.format(joint=joint, limits=limits)))


# ======================================================================== 1. Attach fan-out
def fan_out_files(tmp_path, levels: int, fan: int = 8) -> str:
    """level0.xml attaches level1.xml ``fan`` times, which attaches level2.xml ``fan`` times, ...: a few KB
    of text that would describe fan**levels leaf bodies."""
    leaf = claraty('<ME_Body name="b"><Frame name="mount" type="mount"><Transform/></Frame></ME_Body>\n')
    write(tmp_path, f"level{levels}.xml", leaf)
    for k in range(levels - 1, -1, -1):
        attaches = "".join(f'  <Attach file="level{k + 1}.xml" mount="{"b" if k else "b"}" prefix="p{i}_"/>\n'
                           for i in range(fan))
        body = '<ME_Body name="b"><Frame name="mount" type="mount"><Transform/></Frame></ME_Body>\n'
        write(tmp_path, f"level{k}.xml", claraty(body + attaches))
    return str(tmp_path / "level0.xml")


def test_attach_fan_out_is_capped_and_fails_fast_naming_file_and_line(tmp_path):
    top = fan_out_files(tmp_path, levels=6)        # 8**6 = 262,144 leaves; minutes and gigabytes unchecked
    sizes = sum(os.path.getsize(tmp_path / f"level{k}.xml") for k in range(7))
    assert sizes < 4000
    err = refused(top, match=r"more than .* (bodies|attachments)")
    # the Attach that crossed the cap is named with its own file and line
    assert err.file.endswith(".xml") and err.line is not None
    assert "<Attach" in open(err.file).read().splitlines()[err.line - 1]


def test_attach_caps_are_adjustable(tmp_path):
    top = fan_out_files(tmp_path, levels=2, fan=3)   # 1 + 3 * (1 + 3) = 13 bodies below the ground
    assert len(load_model(top).bodies) == 14
    refused(top, match="more than 10 bodies", limits=read_limits.ReadLimits(max_bodies=10))
    refused(top, match="more than 5 attachments", limits=read_limits.ReadLimits(max_attachments=5))
    refused(top, match="nested more than 1 deep", limits=read_limits.ReadLimits(max_include_depth=1))
    with read_limits.using(read_limits.ReadLimits(max_bodies=10)):
        refused(top, match="more than 10 bodies")
    assert len(load_model(top).bodies) == 14


def test_attach_cycle_is_refused_naming_the_attach(tmp_path):
    a = write(tmp_path, "a.xml", claraty('<ME_Body name="b"/>\n<Attach file="b.xml" mount="b" prefix="x_"/>\n'))
    write(tmp_path, "b.xml", claraty('<ME_Body name="b"/>\n<Attach file="a.xml" mount="b" prefix="y_"/>\n'))
    err = refused(a, match="nested more than")
    assert err.line == 3 and err.file == a


def test_attaching_a_non_model_file_names_the_including_file_and_line(tmp_path):
    top = write(tmp_path, "top.xml", claraty('<ME_Body name="b"/>\n<Attach file="/etc/passwd" mount="b"/>\n'))
    err = refused(top, match="/etc/passwd", line=3)
    assert "unknown model format" in str(err) or "not a model file" in str(err)


def test_an_error_inside_an_attached_file_names_both_files(tmp_path):
    write(tmp_path, "part.xml", claraty('<ME_Body name="c">\n  <ME_Joint name="j" home="x"/>\n</ME_Body>\n'))
    top = write(tmp_path, "top.xml", claraty('<ME_Body name="b"/>\n<Attach file="part.xml" mount="b"/>\n'))
    err = refused(top, match="part.xml:3", line=3)
    assert "unknown name 'x'" in str(err)


# ======================================================================== 2. huge integer literals
BIG = "1" + "0" * 320


@pytest.mark.parametrize("where", ["expression", "constant", "coupling"])
def test_huge_integer_literal_in_claraty_xml_names_the_line(tmp_path, where):
    joint = f'home="{BIG}"' if where == "expression" else ""
    constants = f'<Constant name="big" value="{BIG}"/>\n' if where == "constant" else ""
    body = ONE_JOINT.format(joint=joint, limits='min="-1" max="1"')
    if where == "coupling":
        body += textwrap.dedent(f"""\
            <ME_Body name="link2" parent="link1">
              <ME_Joint name="j2">
                <Joint_Constraint expr="{BIG}*j1"/>
              </ME_Joint>
            </ME_Body>
            """)
    path = write(tmp_path, "big.xml", claraty(body, constants))
    needle = {"expression": "ME_Joint", "constant": "Constant", "coupling": "Joint_Constraint"}[where]
    refused(path, match="too large|not a finite", line=line_of(path, needle))


def test_huge_integer_literal_in_a_dh_row_names_the_line(tmp_path):
    path = write(tmp_path, "big.dh", f"""
        convention craig
        link1 j1 revolute 0 0 0 0
        link2 j2 revolute {BIG} 0 0 0
        """)
    refused(path, match="too large|not a finite", line=3)


def test_huge_integer_literal_in_urdf_mimic_and_kindsl(tmp_path):
    text = urdf_chain(2, mimic=(1, 0, f"{BIG}"))
    with pytest.raises(ModelFileError, match="finite|too large") as info:
        loads_urdf(text, name="big.urdf")
    assert info.value.line == text[:text.index("<mimic")].count("\n") + 1
    pytest.importorskip("lark")
    path = write(tmp_path, "big.kindsl", KINDSL.format(tx=BIG, extra=""))
    refused(path, match="finite|too large", line=line_of(path, "ref_frame") + 1)


def test_expression_evaluator_refuses_huge_integers_and_infinite_intermediates():
    from mechanism_model_core.errors import ExpressionError
    from mechanism_model_core.expressions import evaluate, parse_expression

    with pytest.raises(ExpressionError, match="too large"):
        evaluate(BIG)
    with pytest.raises(ExpressionError, match="too large"):
        parse_expression(f"{BIG}*q", ["q"])
    # 1/(1e308*10) is 0 in floating point: the infinite intermediate is the error, not a silent 0
    with pytest.raises(ExpressionError, match="not finite"):
        evaluate("1/(1e308*10)")
    with pytest.raises(ExpressionError, match="not finite"):
        parse_expression("q + 1/(1e308*10)", ["q"])
    assert evaluate("2**10") == 1024.0 and evaluate("1e308") == 1e308


# ======================================================================== 3. mimic chains
def urdf_chain(n: int, mimic=None, masters_after=False, limits='lower="-1" upper="1"') -> str:
    """A URDF chain of ``n`` revolute joints j0..j{n-1}; ``mimic=(k, master, multiplier)`` adds one mimic;
    ``masters_after``: every joint j_k (k < n-1) mimics j_{k+1}, written before its master."""
    links = "".join(f'  <link name="l{k}"/>\n' for k in range(n + 1))
    joints = []
    for k in range(n):
        extra = ""
        if masters_after and k < n - 1:
            extra = f'<mimic joint="j{k + 1}" multiplier="1" offset="0.001"/>'
        if mimic is not None and mimic[0] == k:
            extra = f'\n    <mimic joint="j{mimic[1]}" multiplier="{mimic[2]}"/>'
        joints.append(f'  <joint name="j{k}" type="revolute"><parent link="l{k}"/><child link="l{k + 1}"/>'
                      f'<axis xyz="0 0 1"/><limit {limits} effort="1" velocity="1"/>{extra}</joint>\n')
    return f'<robot name="chain">\n{links}{"".join(joints)}</robot>\n'


@pytest.mark.slow      # building a 1,000-link chain takes seconds (issue 10.11)
def test_a_chain_of_1000_mimic_joints_resolves_without_recursion():
    n = 1000
    m = loads_urdf(urdf_chain(n, masters_after=True), name="mimic.urdf")
    assert m.independent_coordinates == ("j999",)
    q = m.configuration({"j999": 0.2})
    # j_k = j_{k+1} + 0.001 -> j_k = 0.2 + 0.001 * (999 - k)
    np.testing.assert_allclose(q[m.coordinate_index("j0")], 0.2 + 0.001 * 999, atol=1e-9)
    np.testing.assert_allclose(q[m.coordinate_index("j500")], 0.2 + 0.001 * 499, atol=1e-9)
    fk = forward_kinematics(m, q)
    assert np.all(np.isfinite(fk.pose("l1000")))


def test_circular_couplings_are_still_named():
    text = urdf_chain(3, masters_after=True).replace('<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n</robot>',
                                                     '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
                                                     '<mimic joint="j0"/></joint>\n</robot>')
    with pytest.raises(ModelFileError, match="circular joint couplings: j.* -> j"):
        loads_urdf(text, name="cycle.urdf")


# ======================================================================== 4. numeric limits and values
@pytest.mark.parametrize("limits,match", [
    ('min="-1" max="1" vmax="-2"', "vmax"),
    ('min="-1" max="1" torque_min="3" torque_max="-3"', "torque"),
])
def test_claraty_negative_velocity_or_effort_limit(tmp_path, limits, match):
    path = one_joint(tmp_path, limits=limits)
    refused(path, match=match, line=line_of(path, "Joint_Limits"))


def test_claraty_home_outside_limits(tmp_path):
    path = one_joint(tmp_path, joint='home="2"')
    refused(path, match="home .* outside", line=line_of(path, "ME_Joint"))
    assert load_claraty_xml(one_joint(tmp_path, joint='home="1"', name="ok.xml")).home[0] == 1.0


def test_claraty_unbounded_limits_are_the_documented_convention(tmp_path):
    m = load_claraty_xml(one_joint(tmp_path, limits='min="-1e308" max="1e308"'))
    assert m.lower_limits[0] == -math.inf and m.upper_limits[0] == math.inf
    refused(one_joint(tmp_path, limits='min="-1e309" max="1"', name="inf.xml"), match="finite")


@pytest.mark.parametrize("mass_xml,match", [
    ('<Mass_Properties rho="1e200" volume="1e200"/>', "mass .*not finite"),
    ('<Mass_Properties mass="-1"/>', "negative mass"),
    ('<Mass_Properties mass="1"><Inertia xx="-1" yy="1" zz="1"/></Mass_Properties>', "inertia"),
    ('<Mass_Properties mass="1"><Inertia xx="1" yy="1" zz="-3"/></Mass_Properties>', "semi-definite"),
    ('<Mass_Properties mass="1"><Inertia xx="1" yy="1" zz="1" xy="5"/></Mass_Properties>', "inertia"),
])
def test_claraty_mass_properties(tmp_path, mass_xml, match):
    path = write(tmp_path, "mass.xml", claraty(f'<ME_Body name="link1">\n  {mass_xml}\n</ME_Body>\n'))
    refused(path, match=match, line=3)


def test_claraty_point_mass_and_massless_links_stay_valid(tmp_path):
    path = write(tmp_path, "mass.xml", claraty('<ME_Body name="link1">\n  <Mass_Properties mass="2">'
                                               '<Inertia xx="0" yy="0" zz="0"/></Mass_Properties>\n'
                                               '</ME_Body>\n'))
    assert load_claraty_xml(path).body("link1").mass.mass == 2.0


def test_claraty_origins_that_overflow_in_forward_kinematics(tmp_path):
    bodies = "".join(f'<ME_Body name="b{k}"{f" parent={chr(34)}b{k - 1}{chr(34)}" if k else ""}>'
                     f'<Frame name="r{k}" type="reference"><Transform><Position x="1e308"/></Transform></Frame>'
                     f'</ME_Body>\n' for k in range(3))
    path = write(tmp_path, "far.xml", claraty(bodies))
    refused(path, match="not finite|overflow", line=3)     # b1: 1e308 + 1e308


def test_claraty_constants_cannot_redefine_pi(tmp_path):
    path = write(tmp_path, "pi.xml", claraty(ONE_JOINT.format(joint="", limits='min="-M_PI" max="M_PI"'),
                                             '<Constant name="M_PI" value="3"/>\n'))
    refused(path, match="M_PI", line=2)


def test_axis_of_huge_components_is_a_direction_not_a_zero_axis(tmp_path):
    path = one_joint(tmp_path, joint='axis="1e308 1e308 0"')
    m = load_claraty_xml(path)
    np.testing.assert_allclose(m.joint("j1").axis, [math.sqrt(0.5), math.sqrt(0.5), 0], atol=1e-15)
    refused(one_joint(tmp_path, joint='axis="0 0 0"', name="zero.xml"), match="zero|usable direction",
            line=3)


# ---- URDF
def urdf_one(limit='lower="-1" upper="1" effort="1" velocity="1"', inertial="") -> str:
    return ('<robot name="r">\n  <link name="a"/>\n  <link name="b">' + inertial + '</link>\n'
            '  <joint name="j" type="revolute"><parent link="a"/><child link="b"/>\n'
            f'    <limit {limit}/>\n  </joint>\n</robot>\n')


@pytest.mark.parametrize("limit,match", [
    ('lower="-1" upper="1" effort="-1" velocity="1"', "effort"),
    ('lower="-1" upper="1" effort="1" velocity="-1"', "velocity"),
    ('lower="-inf" upper="1" effort="1" velocity="1"', "finite"),
    ('lower="-1" upper="1e400" effort="1" velocity="1"', "finite"),
])
def test_urdf_bad_limits_name_the_line(limit, match):
    with pytest.raises(ModelFileError, match=match) as info:
        loads_urdf(urdf_one(limit), name="r.urdf")
    assert info.value.line == 5


def test_urdf_huge_finite_limits_are_unbounded_with_a_warning():
    with pytest.warns(URDFWarning, match="unbounded"):
        m = loads_urdf(urdf_one('lower="-1e308" upper="1e308" effort="1" velocity="1"'), name="r.urdf")
    assert m.lower_limits[0] == -math.inf and m.upper_limits[0] == math.inf
    q = m.random_configuration(np.random.default_rng(1))
    assert np.all(np.isfinite(q))


@pytest.mark.parametrize("inertial,match", [
    ('<inertial><mass value="1e400"/></inertial>', "finite"),
    ('<inertial><mass value="1"/><inertia ixx="-1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>',
     "inertia"),
])
def test_urdf_mass_properties_name_the_line(inertial, match):
    with pytest.raises(ModelFileError, match=match) as info:
        loads_urdf(urdf_one(inertial=inertial), name="r.urdf")
    assert info.value.line == 3


# ---- KinDSL
KINDSL = """
Robot R
{{
RobotBase base0 {{
    children {{
        link1 via j1
    }}
}}

link link1 {{
    id = 1
{extra}
    children {{
    }}
}}

r_joint j1 {{
    ref_frame {{
        translation = ({tx}, 0.0, 0.0)
        rotation = (0.0, 0.0, 0.0)
    }}
}}
}}
"""


def test_kindsl_non_utf8_bytes_name_the_line(tmp_path):
    pytest.importorskip("lark")
    path = tmp_path / "bad.kindsl"
    text = KINDSL.format(tx="1.0", extra="    // caf\xe9").lstrip("\n")
    path.write_bytes(text.encode("latin-1"))
    refused(str(path), match="UTF-8", line=text[:text.index("caf")].count("\n") + 1)


def test_kindsl_1000_nested_unary_minus_signs_are_legal_and_deeper_nesting_names_the_line(tmp_path):
    pytest.importorskip("lark")
    path = write(tmp_path, "neg.kindsl", KINDSL.format(tx="-" * 1001 + "1.5", extra=""))
    m = load_model(path)
    np.testing.assert_allclose(m.joint("j1").placement[:3, 3], [-1.5, 0, 0])
    path = write(tmp_path, "deep.kindsl", KINDSL.format(tx="-" * 6000 + "1.5", extra=""))
    refused(path, match="nested too deeply", line=line_of(path, "translation"))


def test_kindsl_pi_cannot_be_redefined_and_masses_are_checked(tmp_path):
    pytest.importorskip("lark")
    path = write(tmp_path, "pi.kindsl", KINDSL.format(tx="<PI=3.0>", extra=""))
    refused(path, match="PI", line=line_of(path, "translation"))
    inertia = ("    inertia_properties {\n        mass = 1.0\n        CoM = (0.0, 0.0, 0.0)\n"
               "        Ix=-1.0 Iy=1.0 Iz=1.0 Ixy=0.0 Ixz=0.0 Iyz=0.0\n    }")
    path = write(tmp_path, "mass.kindsl", KINDSL.format(tx="1.0", extra=inertia))
    refused(path, match="inertia", line=line_of(path, "inertia_properties"))
