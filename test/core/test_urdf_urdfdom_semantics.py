"""URDF read with urdfdom's semantics (issue 25): what urdfdom reads loads, with a warning naming file and line
for what it ignores; what protects users stays an error naming file and line.

The three refusals reported from published arm descriptions, each rebuilt as a small file of our own with the
same feature: a commented-out copy of the robot after ``</robot>`` whose comments contain ``--``; a
``<gazebo>`` block with undeclared namespace prefixes (``<sensor:camera>``); ``<mimic>`` inside a fixed
joint naming a joint that does not exist. Pinocchio (which parses URDF with urdfdom) is the oracle for the
tree and the frames."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from mechanism_model_core import ModelFileError, UnsafeModelFileError, forward_kinematics, load_model
from mechanism_model_core.io.urdf import URDFWarning, loads_urdf

from .optional_deps import require

ARM = """\
<?xml version="1.0"?>
<!-- a two-link arm -- published with an older copy commented out at the end -->
<robot name="arm">
  <link name="base"/>
  <link name="upper"/>
  <link name="tool"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/>
    <child link="upper"/>
    <origin xyz="0 0 0.3" rpy="0 0.2 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/>
  </joint>
  <joint name="wrist" type="continuous">
    <parent link="upper"/>
    <child link="tool"/>
    <origin xyz="0.4 0 0"/>
    <axis xyz="1 0 0"/>
  </joint>
</robot>
"""

TRAILING_COPY = ARM + """\
<!--
<robot name="arm_old">
  <link name="base"/>  <!-- the old base -- unused
  <link name="upper"/>
</robot>
-->
"""

GAZEBO_PREFIXES = ARM.replace("</robot>", """\
  <gazebo reference="tool">
    <sensor:camera name="cam">
      <sensor:imageSize>640 480</sensor:imageSize>
      <controller:gazebo_ros_camera name="ctl" plugin="libgazebo_ros_camera.so"/>
    </sensor:camera>
  </gazebo>
</robot>""")

FIXED_MIMIC = ARM.replace("""  <joint name="wrist" type="continuous">""", """\
  <link name="camera"/>
  <joint name="camera_joint" type="fixed">
    <parent link="tool"/>
    <child link="camera"/>
    <origin xyz="0.05 0 0.02"/>
    <mimic joint="hand_motor_joint" multiplier="2"/>
  </joint>
  <joint name="wrist" type="continuous">""")


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _line(text, needle):
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def _load_with_warnings(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = load_model(path)
    return m, [str(w.message) for w in caught if issubclass(w.category, URDFWarning)]


def _same_as_pinocchio(path, mech):
    pin = require("pinocchio", "test")
    from .test_pinocchio_oracle import pin_configuration

    pmodel = pin.buildModelFromUrdf(path)
    assert {f.name for f in pmodel.frames if f.type == pin.FrameType.BODY} == set(mech.frame_names)
    pdata = pmodel.createData()
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = mech.random_configuration(rng)
        pin.framesForwardKinematics(pmodel, pdata, pin_configuration(pmodel, mech, q))
        poses = forward_kinematics(mech, q).all_poses()
        for f in mech.frame_names:
            np.testing.assert_allclose(pdata.oMf[pmodel.getFrameId(f, pin.FrameType.BODY)].homogeneous,
                                       poses[f], atol=1e-9)


@pytest.mark.parametrize("case, text, needle, words", [
    ("trailing_copy", TRAILING_COPY, "a two-link arm --", "comments (the first here) contain '--'"),
    ("gazebo_prefixes", GAZEBO_PREFIXES, "<sensor:camera", "namespace prefix 'sensor'"),
    ("fixed_mimic", FIXED_MIMIC, "<mimic joint=\"hand_motor_joint\"", "of type fixed has no coordinate"),
])
def test_the_three_refusals_now_load_as_urdfdom_reads_them_with_a_warning_at_the_line(tmp_path, case, text,
                                                                                     needle, words):
    path = _write(tmp_path, f"{case}.urdf", text)
    mech, said = _load_with_warnings(path)
    expected = f"{path}:{_line(text, needle)}: "
    assert any(s.startswith(expected) and words in s for s in said), said
    assert mech.coordinate_names == ("shoulder", "wrist")
    assert mech.joint("shoulder").lower == (-1.0,) and mech.joint("shoulder").upper == (1.0,)
    _same_as_pinocchio(path, mech)


def test_every_undeclared_prefix_is_named_once_and_the_extension_block_is_ignored(tmp_path):
    path = _write(tmp_path, "cam.urdf", GAZEBO_PREFIXES)
    mech, said = _load_with_warnings(path)
    assert sorted(s.split("'")[1] for s in said if "namespace prefix" in s) == ["controller", "sensor"]
    assert set(mech.frame_names) == {"base", "upper", "tool"}


def test_a_second_root_element_or_text_after_the_robot_is_ignored_with_a_warning(tmp_path):
    for tail in ('<robot name="copy"><link name="x"/></robot>\n', "trailing text & </nonsense>\n"):
        path = _write(tmp_path, "tail.urdf", ARM + tail)
        mech, said = _load_with_warnings(path)
        assert f"{path}:{ARM.count(chr(10)) + 1}: content after the root element is ignored" in said[-1]
        assert set(mech.frame_names) == {"base", "upper", "tool"}


def test_a_mimic_of_an_unknown_joint_on_a_moving_joint_leaves_it_independent_with_a_warning(tmp_path):
    text = ARM.replace('<axis xyz="1 0 0"/>', '<axis xyz="1 0 0"/>\n    <mimic joint="ghost"/>')
    path = _write(tmp_path, "ghost.urdf", text)
    mech, said = _load_with_warnings(path)
    assert any(f"{path}:{_line(text, 'ghost')}: joint 'wrist' mimics 'ghost', which is not a joint" in s
               for s in said)
    assert "wrist" in mech.independent_coordinates
    _same_as_pinocchio(path, mech)


def test_mirrored_meshes_and_rounded_inertias_load_as_urdfdom_reads_them(tmp_path):
    text = ARM.replace('<link name="tool"/>', """<link name="tool">
    <inertial><mass value="4.7"/>
      <inertia ixx="0.0390706" ixy="-2.41786e-05" ixz="0.0250104" iyy="0.0395116" iyz="0.000712271" izz="0.0122599"/>
    </inertial>
    <collision><geometry><mesh filename="arm.stl" scale="1 -1 1"/></geometry></collision>
  </link>""")
    path = _write(tmp_path, "mirror.urdf", text)
    mech, said = _load_with_warnings(path)
    assert any(f"{path}:{_line(text, '<inertia ')}: link 'tool': the inertia tensor is not positive "
               f"semi-definite" in s for s in said)
    assert np.linalg.eigvalsh(mech.body("tool").mass.inertia).min() >= -1e-15
    (shape,) = mech.body("tool").shapes
    assert shape.dimensions == (1.0, -1.0, 1.0)


# ------------------------------------------------------------------- what stays refused, with file and line
def test_a_negative_moment_of_inertia_stays_an_error():
    text = ARM.replace('<link name="tool"/>', '<link name="tool"><inertial><mass value="1"/>'
                       '<inertia ixx="-1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    with pytest.raises(ModelFileError, match="semi-definite") as info:
        loads_urdf(text, name="neg.urdf")
    assert info.value.file == "neg.urdf" and info.value.line == _line(text, '<link name="tool">')


BOMB = """\
<?xml version="1.0"?>
<!DOCTYPE robot [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
]>
<!-- read tolerantly -- this comment is not well-formed XML -->
<robot name="&c;"><link name="base"/><gazebo><sensor:camera/></gazebo></robot>
"""

EXTERNAL = """\
<?xml version="1.0"?>
<!-- read tolerantly -- this comment is not well-formed XML -->
<!DOCTYPE robot [ <!ENTITY secret SYSTEM "file:///etc/passwd"> ]>
<robot name="x"><link name="&secret;"/></robot>
"""


@pytest.mark.parametrize("text, line", [(BOMB, 3), (EXTERNAL, 3)])
def test_entity_bombs_and_external_entities_are_refused_in_tolerant_reading_too(tmp_path, text, line):
    path = _write(tmp_path, "hostile.urdf", text)
    with pytest.raises(UnsafeModelFileError, match="entit") as info:
        load_model(path)
    assert info.value.file == path and info.value.line == line


def test_an_undeclared_entity_reference_is_refused_with_its_line(tmp_path):
    text = ARM.replace('<link name="tool"/>', '<link name="&tool;"/>')
    path = _write(tmp_path, "ref.urdf", text)
    with pytest.raises(ModelFileError) as info:
        load_model(path)
    assert info.value.file == path and info.value.line == _line(text, "&tool;")


def test_a_1_gb_file_is_refused_before_it_is_read(tmp_path):
    path = str(tmp_path / "huge.urdf")
    with open(path, "wb") as fh:         # sparse: no disk used
        fh.write(b"<robot>")
        fh.truncate(1 << 30)
    with pytest.raises(UnsafeModelFileError, match="1073741824 bytes") as info:
        load_model(path)
    assert info.value.file == path


@pytest.mark.parametrize("joints, needle, words", [
    ('<joint name="a" type="fixed"><parent link="upper"/><child link="tool"/></joint>\n'
     '  <joint name="b" type="fixed"><parent link="tool"/><child link="upper"/></joint>',
     '<joint name="b"', "two parents"),
    ('<joint name="a" type="fixed"><parent link="upper"/><child link="tool"/></joint>\n'
     '  <joint name="b" type="fixed"><parent link="tool"/><child link="upper2"/></joint>',
     '<parent link="tool"/><child link="upper2"/>', "child link 'upper2' is not defined"),
    ('<joint name="a" type="fixed"><parent link="nowhere"/><child link="tool"/></joint>',
     "nowhere", "parent link 'nowhere' is not defined"),
    ('<joint name="a" type="hinge"><parent link="base"/><child link="tool"/></joint>', "hinge",
     "unknown joint type 'hinge'"),
    ('<joint name="a" type="fixed"><parent link="base"/><child link="tool"/><origin xyz="0 NaN 0"/></joint>',
     "NaN", "finite"),
])
def test_cycles_missing_links_unknown_types_and_nan_stay_errors_at_their_line(tmp_path, joints, needle, words):
    # with the tolerated features present too: nothing tolerant hides an error
    text = ('<?xml version="1.0"?>\n<!-- a tree -- or not -->\n<robot name="r">\n  <link name="base"/>\n'
            '  <link name="upper"/>\n  <link name="tool"/>\n'
            '  <joint name="s" type="fixed"><parent link="base"/><child link="upper"/></joint>\n'
            f'  {joints}\n  <gazebo><sensor:camera name="c"/></gazebo>\n</robot>\n<!-- a copy -- commented out -->\n')
    path = _write(tmp_path, "bad.urdf", text)
    with pytest.raises(ModelFileError, match=words) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", URDFWarning)
            load_model(path)
    assert info.value.file == path and info.value.line == _line(text, needle), str(info.value)


def test_a_robot_that_is_not_closed_stays_not_well_formed(tmp_path):
    text = ARM.replace("</robot>\n", "")
    path = _write(tmp_path, "open.urdf", text)
    with pytest.raises(ModelFileError, match="not well-formed"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", URDFWarning)
            load_model(path)


def test_a_urdf_with_an_xml_extension_is_recognised_tolerantly(tmp_path):
    from mechanism_model_core.io.check import check_model

    path = _write(tmp_path, "arm.xml", TRAILING_COPY)
    with pytest.warns(URDFWarning, match="contain '--'"):
        mech = load_model(path)
    assert mech.coordinate_names == ("shoulder", "wrist")
    assert os.path.basename(mech.source) == "arm.xml"
    with pytest.warns(URDFWarning, match="contain '--'"):
        problems, checked = check_model(path)         # mechanism-model check reads it the same way
    assert not problems and checked.coordinate_names == ("shoulder", "wrist")


# ------------------------------------------------------------------- properties of the tolerant reading
from hypothesis import given, settings, strategies as st  # noqa: E402

from mechanism_model_core.io.safe_xml import parse_bytes  # noqa: E402

_comment_text = st.text(alphabet="-ab <>\n&", max_size=40).filter(lambda t: "-->" not in t)
CLEAN_ARM = ARM.replace("<!-- a two-link arm -- published with an older copy commented out at the end -->",
                        "<!-- a two-link arm -->")


@settings(max_examples=60)
@given(comments=st.lists(_comment_text, min_size=1, max_size=4), where=st.data())
def test_comments_read_as_tinyxml_reads_them_keep_every_line_and_element(comments, where):
    lines = CLEAN_ARM.splitlines()
    slots = sorted(where.draw(st.lists(st.integers(3, len(lines) - 1), min_size=len(comments),
                                       max_size=len(comments))), reverse=True)
    for at, text in zip(slots, comments):
        lines.insert(at, f"<!--{text}-->")
    doc = "\n".join(lines) + "\n"
    said = []
    root = parse_bytes(doc, "c.urdf", tolerant=True, warn=lambda line, msg: said.append((line, msg)))
    # every element where it is in the text, named as written
    expected = [(n, ln.strip().split()[0][1:]) for n, ln in enumerate(doc.splitlines(), 1)
                if ln.strip().startswith(("<link", "<joint"))]
    got = [(el.sourceline, el.tag) for el in root.iter("link", "joint")]
    assert got == expected
    bad = [c for c in comments if "--" in c or c.endswith("-")]
    assert bool(said) == bool(bad)
    if not bad:          # a well-formed document is parsed exactly as the strict reader parses it
        strict = parse_bytes(doc, "c.urdf")
        assert [(e.sourceline, e.tag) for e in strict.iter("link", "joint")] == got


@settings(max_examples=40)
@given(prefixes=st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=5,
                         unique=True))
def test_any_undeclared_prefixes_in_an_extension_block_are_each_named_once(prefixes):
    block = "".join(f'    <{p}:thing {p}:attr="1"><{p}:inner/></{p}:thing>\n' for p in prefixes)
    doc = CLEAN_ARM.replace("</robot>", f"  <gazebo>\n{block}  </gazebo>\n</robot>")
    said = []
    root = parse_bytes(doc, "p.urdf", tolerant=True, warn=lambda line, msg: said.append((line, msg)))
    assert sorted(m.split("'")[1] for _, m in said) == sorted(prefixes)
    for p in prefixes:     # each warning at the line of the prefix's first use
        line = next(n for n, ln in enumerate(doc.splitlines(), 1) if f"<{p}:thing" in ln)
        assert (line, next(m for _, m in said if m.split("'")[1] == p)) in said
    assert [e.get("name") for e in root.iter("link")] == ["base", "upper", "tool"]
