"""The robot library in models/: every model loads, validates against the DTD, round-trips through URDF and
CLARAty XML, and its forward kinematics match values computed by hand from the dimensions written in the
files (closed forms below, with rotation matrices written out here, not taken from the package)."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import DEFAULT_MODEL, list_models, model_path, models_dir

from .robots import SAFETY, Rx, Ry, Rz  # noqa: F401  (independent elementary rotations, written out)

ALL_MODELS = list_models()
XML_MODELS = [m for m in ALL_MODELS if m.endswith(".xml")]
REPO_MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models")


def v(*xs):
    return np.array(xs, dtype=float)


angle = st.floats(-1.2, 1.2, allow_nan=False)


@pytest.fixture(scope="module")
def rover():
    return load_model(model_path(DEFAULT_MODEL))


def pos(mech, q, frame, relative_to=None):
    return forward_kinematics(mech, q).position(frame, relative_to)


# ------------------------------------------------------------------------------------------- the library
def test_library_lists_every_model_family():
    expected = {"rocky8/rocky8_rover.xml", "rocky8/rocky8_mast.xml", "rocky8/rocky8_arm.xml",
                "rocky8/rocky8_body.xml", "rocky8/rocky8_rocker_bogie.xml", "mer/mer_idd.xml",
                "moonrise/moonrise_arm.xml", "fido/fido_rover.xml", "rocky7/rocky7_rover.xml",
                "srr/srr_rover.xml", "atrv/atrv_rover.xml", "lemur/lemur_leg.xml", "lemur/lemur_body.xml",
                "lemur/lemur_hexapod.xml", "four_bar/four_bar.xml", "claraty_samples/sample1.xml",
                "claraty_samples/simple_sample1.xml"}
    assert expected <= set(ALL_MODELS)
    assert DEFAULT_MODEL in ALL_MODELS


@pytest.mark.parametrize("name", ALL_MODELS)
def test_every_model_loads_and_has_finite_poses(name):
    m = load_model(model_path(name))
    assert m.nq == len(m.coordinate_names)
    poses = forward_kinematics(m, m.random_configuration(rng=1)).all_poses()
    assert all(np.all(np.isfinite(T)) for T in poses.values())


@pytest.mark.parametrize("name", XML_MODELS)
def test_every_xml_model_is_valid_against_the_dtd(name):
    from lxml import etree

    from mechanism_model_core.io.claraty_xml import DTD_PATH
    from mechanism_model_core.io.safe_xml import parse_file

    root = parse_file(model_path(name))
    dtd = etree.DTD(DTD_PATH)
    assert dtd.validate(root), dtd.error_log.filter_from_errors()


@pytest.mark.parametrize("name", ALL_MODELS)
def test_every_model_is_documented_in_the_readme(name):
    with open(os.path.join(models_dir(), "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert os.path.basename(name) in text


@pytest.mark.parametrize("name", [m for m in ALL_MODELS if not m.startswith("claraty_samples")])
def test_library_bodies_carry_mass_and_bounding_shapes(name):
    m = load_model(model_path(name))
    for spec in m.bodies[1:]:
        assert spec.mass.mass > 0, f"{spec.name} has no mass"
        assert np.all(np.linalg.eigvalsh(spec.mass.inertia) > 0), f"{spec.name}: inertia not positive"
        assert spec.shapes, f"{spec.name} has no bounding shape"
        assert all(s.type in ("box", "cylinder") for s in spec.shapes)


# ------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("name", ALL_MODELS)
def test_urdf_round_trip_keeps_every_frame(name):
    urdf = pytest.importorskip("mechanism_model_core.io.urdf")
    m = load_model(model_path(name))
    m2 = urdf.loads_urdf(urdf.to_urdf(m))
    _same_kinematics(m, m2)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_exported_urdf_follows_urdfdoms_rules(name):
    """What urdfdom (robot_state_publisher, MoveIt, ros2_control) requires, read with lxml alone: unique link
    and joint names, parent and child links that exist, one tree with one root, a <limit> with lower, upper,
    effort and velocity on every revolute and prismatic joint, and mimic joints that name a moving joint."""
    from lxml import etree

    from mechanism_model_core.io.urdf import to_urdf

    m = load_model(model_path(name))
    robot = etree.fromstring(to_urdf(m).encode("utf-8"))
    links = [el.get("name") for el in robot.findall("link")]
    joints = {el.get("name"): el for el in robot.findall("joint")}
    assert len(set(links)) == len(links) and len(joints) == len(robot.findall("joint"))
    assert all(n and n.strip() == n for n in links + list(joints))
    children = [j.find("child").get("link") for j in joints.values()]
    assert len(set(children)) == len(children)
    assert {j.find("parent").get("link") for j in joints.values()} <= set(links) and set(children) <= set(links)
    assert set(links) - set(children) == {m.ground}
    for jname, j in joints.items():
        assert j.get("type") in ("fixed", "revolute", "continuous", "prismatic")
        if j.get("type") in ("revolute", "prismatic"):
            limit = j.find("limit")
            assert limit is not None and all(limit.get(a) is not None for a in
                                             ("lower", "upper", "effort", "velocity")), jname
            assert float(limit.get("lower")) <= float(limit.get("upper"))
        mimic = j.find("mimic")
        if mimic is not None:
            assert j.get("type") != "fixed" and joints[mimic.get("joint")].get("type") != "fixed"
            # multiplier and offset reproduce the coupling at two values of the master
            master, a, b = mimic.get("joint"), float(mimic.get("multiplier")), float(mimic.get("offset"))
            for v in (0.0, 0.3):
                q = m.configuration({master: v})
                assert q[m.coordinate_index(jname)] == pytest.approx(a * v + b, abs=1e-12)


@pytest.mark.parametrize("name", ALL_MODELS)
def test_claraty_xml_round_trip_keeps_every_frame(name, tmp_path):
    import mechanism_model_core.io as mio

    m = load_model(model_path(name))
    out = tmp_path / "saved.xml"
    mio.save_model(m, str(out))
    _same_kinematics(m, load_model(str(out)))


def _same_kinematics(m, m2):
    assert set(m.coordinate_names) <= set(m2.coordinate_names)
    missing = [f for f in m.frame_names if f != m.ground and not m2.has_frame(f)]
    assert not missing
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = m.random_configuration(rng=rng)
        values = {c: q[m.coordinate_index(c)] for c in m.independent_coordinates}
        fk, fk2 = forward_kinematics(m, values), forward_kinematics(m2, values)
        for f in m.frame_names:
            if f == m.ground:
                continue
            np.testing.assert_allclose(fk2.pose(f), fk.pose(f), atol=1e-9, err_msg=f)


# ------------------------------------------------------------------------------------------- Rocky 8 rover
def test_default_rover_is_assembled_from_separate_files():
    from mechanism_model_core.io.safe_xml import parse_file

    root = parse_file(model_path(DEFAULT_MODEL))
    attached = [(a.get("file"), a.get("mount")) for a in root.iter("Attach")]
    assert attached == [("rocky8_body.xml", "ground"), ("rocky8_rocker_bogie.xml", "mobility_mount"),
                        ("rocky8_mast.xml", "mast_mount"), ("rocky8_arm.xml", "arm_mount")]
    assert not list(root.iter("ME_Body"))


def test_default_rover_structure(rover):
    assert rover.joint("chassis").type.value == "floating"
    assert rover.parent_body_of_joint("chassis") == rover.ground
    steer = [j.name for j in rover.joints if j.name.endswith("_steer")]
    drive = [j.name for j in rover.joints if j.name.endswith("_drive")]
    assert sorted(steer) == sorted(f"{s}_{p}_steer" for s in ("left", "right") for p in ("front", "middle", "rear"))
    assert len(drive) == 6 and all(rover.joint(d).type.value == "continuous" for d in drive)
    assert [rover.joint(n).type.value for n in ("mast_pan", "mast_tilt")] == ["revolute"] * 2
    arm = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
    assert [c for c in rover.coordinate_names if c.startswith("arm_")] == arm
    assert set(rover.couplings) == {"right_rocker"}
    assert "right_rocker" not in rover.independent_coordinates
    for mount in ("mobility_mount", "mast_mount", "arm_mount"):
        assert rover.frame(mount).kind == "mount" and rover.frame(mount).body == "chassis"
    for f in ("mast_camera", "left_navcam", "right_navcam", "mast_camera_optical", "arm_tool", "imu"):
        assert rover.has_frame(f)
    # reference frames are named like their bodies, so they add no duplicate frames (TF stays readable)
    assert len(rover.frame_names) == len(rover.bodies) + 16


def test_rover_home_poses(rover):
    fk = forward_kinematics(rover)
    for side, y in (("left", 0.35), ("right", -0.35)):
        for wheel, x in (("front", 0.40), ("middle", 0.0), ("rear", -0.40)):
            np.testing.assert_allclose(fk.position(f"{side}_{wheel}_contact"), v(x, y, 0), atol=1e-12)
            np.testing.assert_allclose(fk.position(f"{side}_{wheel}_wheel"), v(x, y, 0.10), atol=1e-12)
    np.testing.assert_allclose(fk.position("mast_camera"), v(0.30, 0, 1.55), atol=1e-12)
    np.testing.assert_allclose(fk.position("arm_tool"), v(1.20, 0, 0.25), atol=1e-12)
    # tool approach axis (z) points down
    np.testing.assert_allclose(fk.rotation("arm_tool")[:, 2], v(0, 0, -1), atol=1e-12)
    np.testing.assert_allclose(fk.position("chassis"), v(0, 0, 0.40), atol=1e-12)
    # the stereo baseline is 0.20 m along the camera's y axis
    np.testing.assert_allclose(fk.position("left_navcam") - fk.position("right_navcam"), v(0, 0.20, 0),
                               atol=1e-12)
    # optical frame: z forward (= camera x), x right (= -camera y), y down (= -camera z)
    R = fk.rotation("mast_camera_optical", relative_to="mast_camera")
    np.testing.assert_allclose(R, np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]]), atol=1e-12)


@given(theta=st.floats(-0.5, 0.5), phi=st.floats(-0.8, 0.8))
def test_rocker_differential_and_contacts(rover, theta, phi):
    """Contacts of both sides for a rocker angle (the right one follows -theta) and a bogie angle."""
    fk = forward_kinematics(rover, {"left_rocker": theta, "left_bogie": phi, "right_bogie": phi})
    assert fk.q[rover.coordinate_index("right_rocker")] == pytest.approx(-theta)
    for side, s, th in (("left", 1, theta), ("right", -1, -theta)):
        pivot = v(0, 0.30 * s, 0.30)
        R = Ry(th)
        front = pivot + R @ v(0.40, 0.05 * s, -0.30)
        bogie = pivot + R @ v(-0.20, 0.05 * s, -0.10)
        middle = bogie + R @ Ry(phi) @ v(0.20, 0, -0.20)
        rear = bogie + R @ Ry(phi) @ v(-0.20, 0, -0.20)
        np.testing.assert_allclose(fk.position(f"{side}_front_contact"), front, atol=1e-12)
        np.testing.assert_allclose(fk.position(f"{side}_middle_contact"), middle, atol=1e-12)
        np.testing.assert_allclose(fk.position(f"{side}_rear_contact"), rear, atol=1e-12)


@given(steer=st.floats(-math.pi / 2, math.pi / 2))
def test_all_six_wheels_steer_about_their_contact(rover, steer):
    """Six-wheel steering (CLARAty 3.1.3): each steering axis passes through its wheel's contact point, so
    steering turns the wheel's spin axis (y) about the vertical and leaves the contact where it was."""
    home = forward_kinematics(rover)
    for wheel in ("front", "middle", "rear"):
        for side in ("left", "right"):
            fk = forward_kinematics(rover, {f"{side}_{wheel}_steer": steer})
            np.testing.assert_allclose(fk.position(f"{side}_{wheel}_contact"),
                                       home.position(f"{side}_{wheel}_contact"), atol=1e-12)
            np.testing.assert_allclose(fk.rotation(f"{side}_{wheel}_wheel")[:, 1],
                                       v(-math.sin(steer), math.cos(steer), 0), atol=1e-12)


@given(pan=st.floats(-3.0, 3.0), tilt=st.floats(-1.2, 1.4))
def test_mast_camera_pose(rover, pan, tilt):
    fk = forward_kinematics(rover, {"mast_pan": pan, "mast_tilt": tilt})
    R = Rz(pan) @ Ry(tilt)
    np.testing.assert_allclose(fk.position("mast_camera"), v(0.25, 0, 1.50) + R @ v(0.05, 0, 0.05), atol=1e-12)
    np.testing.assert_allclose(fk.rotation("mast_camera"), R, atol=1e-12)


def test_mast_camera_at_right_angles(rover):
    np.testing.assert_allclose(pos(rover, {"mast_pan": math.pi / 2}, "mast_camera"), v(0.25, 0.05, 1.55),
                               atol=1e-12)
    # tilted 90 degrees down: the camera looks at the ground and sits 0.05 m below/ahead of the tilt axis
    fk = forward_kinematics(rover, {"mast_tilt": math.pi / 2})
    np.testing.assert_allclose(fk.position("mast_camera"), v(0.30, 0, 1.45), atol=1e-12)
    np.testing.assert_allclose(fk.rotation("mast_camera")[:, 0], v(0, 0, -1), atol=1e-12)


def _arm_tool(yaw, shoulder, elbow, wrist):
    """Closed form of the YPPPY arm's tool position in its mount frame (turret on the tool axis)."""
    a1, a2, a3 = shoulder, shoulder + elbow, shoulder + elbow + wrist
    x = 0.35 * math.cos(a1) + 0.30 * math.cos(a2) + 0.08 * math.cos(a3) - 0.10 * math.sin(a3)
    z = -0.35 * math.sin(a1) - 0.30 * math.sin(a2) - 0.08 * math.sin(a3) - 0.10 * math.cos(a3)
    return Rz(yaw) @ v(0.05 + x, 0, z)


def test_arm_tool_at_zero_and_at_right_angles(rover):
    mount = v(0.42, 0, 0.35)
    np.testing.assert_allclose(pos(rover, None, "arm_tool"), mount + v(0.78, 0, -0.10), atol=1e-12)
    np.testing.assert_allclose(pos(rover, {"arm_shoulder": math.pi / 2}, "arm_tool"),
                               mount + v(-0.05, 0, -0.73), atol=1e-12)
    np.testing.assert_allclose(pos(rover, {"arm_elbow": math.pi / 2}, "arm_tool"),
                               mount + v(0.30, 0, -0.38), atol=1e-12)
    np.testing.assert_allclose(pos(rover, {"arm_yaw": math.pi / 2}, "arm_tool"),
                               mount + v(0, 0.78, -0.10), atol=1e-12)
    np.testing.assert_allclose(pos(rover, None, "arm_tool", relative_to="arm_mount"), v(0.78, 0, -0.10),
                               atol=1e-12)


@given(yaw=angle, shoulder=angle, elbow=angle, wrist=angle, turret=st.floats(-3, 3))
def test_arm_tool_closed_form(rover, yaw, shoulder, elbow, wrist, turret):
    q = {"arm_yaw": yaw, "arm_shoulder": shoulder, "arm_elbow": elbow, "arm_wrist": wrist, "arm_turret": turret}
    np.testing.assert_allclose(pos(rover, q, "arm_tool", relative_to="arm_mount"),
                               _arm_tool(yaw, shoulder, elbow, wrist), atol=1e-12)


def test_floating_base_moves_everything(rover):
    fk = forward_kinematics(rover, {"chassis.yaw": math.pi / 2, "chassis.z": 0.1, "chassis.x": 1.0})
    np.testing.assert_allclose(fk.position("mast_camera"), v(1.0, 0.30, 1.65), atol=1e-12)
    np.testing.assert_allclose(fk.position("left_front_contact"), v(1.0 - 0.35, 0.40, 0.1), atol=1e-12)


def test_rover_parts_load_on_their_own():
    mast = load_model(model_path("rocky8/rocky8_mast.xml"))
    assert mast.coordinate_names == ("mast_pan", "mast_tilt")
    np.testing.assert_allclose(pos(mast, None, "mast_camera"), v(0.05, 0, 1.05), atol=1e-12)
    arm = load_model(model_path("rocky8/rocky8_arm.xml"))
    np.testing.assert_allclose(pos(arm, None, "arm_tool"), v(0.78, 0, -0.10), atol=1e-12)
    body = load_model(model_path("rocky8/rocky8_body.xml"))
    np.testing.assert_allclose(pos(body, None, "mast_mount"), v(0.25, 0, 0.10), atol=1e-12)


# ------------------------------------------------------------------------------------------- other rovers
def _contacts(name, wheels, xs, y, extra=None):
    m = load_model(model_path(name))
    fk = forward_kinematics(m, extra)
    for side, s in (("left", 1), ("right", -1)):
        for wheel, x in zip(wheels, xs):
            np.testing.assert_allclose(fk.position(f"{side}_{wheel}_contact"), v(x, s * y, 0), atol=1e-12)
    return m


def test_fido_fully_steerable_rocker_bogie():
    m = _contacts("fido/fido_rover.xml", ("front", "middle", "rear"), (0.45, 0.0, -0.45), 0.435)
    steer = [j for j in m.joints if j.name.endswith("_steer")]
    drive = [j for j in m.joints if j.name.endswith("_drive")]
    assert len(steer) == 6 and len(drive) == 6
    assert str(m.couplings["right_rocker"].source) == "-left_rocker"
    # public footprint: 110 cm long, 97 cm wide (wheels 0.20 m in diameter, 0.10 m wide)
    fk = forward_kinematics(m)
    assert 2 * (0.45 + 0.10) == pytest.approx(1.10)
    assert 2 * (0.435 + 0.05) == pytest.approx(0.97)
    # steering turns a wheel about the vertical line through its contact point
    fk2 = forward_kinematics(m, {"left_middle_steer": 1.0})
    np.testing.assert_allclose(fk2.position("left_middle_contact"), fk.position("left_middle_contact"),
                               atol=1e-12)
    np.testing.assert_allclose(fk2.rotation("left_middle_wheel")[:, 1], v(-math.sin(1), math.cos(1), 0),
                               atol=1e-12)


@given(theta=st.floats(-0.5, 0.5))
def test_fido_rocker_closed_form(theta):
    m = load_model(model_path("fido/fido_rover.xml"))
    fk = forward_kinematics(m, {"left_rocker": theta})
    for side, s, th in (("left", 1, theta), ("right", -1, -theta)):
        expected = v(0, 0.30 * s, 0.30) + Ry(th) @ v(0.45, 0.135 * s, -0.30)
        np.testing.assert_allclose(fk.position(f"{side}_front_contact"), expected, atol=1e-12)


def test_rocky7_front_wheel_steering():
    m = _contacts("rocky7/rocky7_rover.xml", ("front", "middle", "rear"), (0.25, 0.0, -0.25), 0.21)
    assert sorted(j.name for j in m.joints if j.name.endswith("_steer")) == ["left_front_steer",
                                                                             "right_front_steer"]
    assert len([j for j in m.joints if j.name.endswith("_drive")]) == 6
    assert "right_rocker" in m.couplings


def test_srr_four_wheel_rocker():
    m = _contacts("srr/srr_rover.xml", ("front", "rear"), (0.20, -0.20), 0.20)
    assert len([j for j in m.joints if j.name.endswith("_steer")]) == 4
    assert len([j for j in m.joints if j.name.endswith("_drive")]) == 4
    fk = forward_kinematics(m, {"left_rocker": 0.3})
    expected = v(0, 0.15, 0.18) + Ry(0.3) @ v(0.20, 0.05, -0.18)
    np.testing.assert_allclose(fk.position("left_front_contact"), expected, atol=1e-12)
    expected = v(0, -0.15, 0.18) + Ry(-0.3) @ v(-0.20, -0.05, -0.18)
    np.testing.assert_allclose(fk.position("right_rear_contact"), expected, atol=1e-12)


def test_atrv_skid_steer():
    m = load_model(model_path("atrv/atrv_rover.xml"))
    assert [j.type.value for j in m.joints] == ["floating"] + ["continuous"] * 4
    fk = forward_kinematics(m, {"front_left_drive": 1.3})
    for fb, x in (("front", 0.25), ("rear", -0.25)):
        for lr, y in (("left", 0.32), ("right", -0.32)):
            np.testing.assert_allclose(fk.position(f"{fb}_{lr}_contact"), v(x, y, 0), atol=1e-12)
            np.testing.assert_allclose(fk.position(f"{fb}_{lr}_wheel"), v(x, y, 0.165), atol=1e-12)


# ------------------------------------------------------------------------------------------- arms
def test_mer_idd():
    m = load_model(model_path("mer/mer_idd.xml"))
    assert m.coordinate_names == ("idd_azimuth", "idd_elevation", "idd_elbow", "idd_wrist", "idd_turret")
    np.testing.assert_allclose(pos(m, None, "mi"), v(0.94, 0, 0), atol=1e-12)
    np.testing.assert_allclose(pos(m, {"idd_turret": math.pi / 2}, "mi"), v(0.82, 0.12, 0), atol=1e-12)
    np.testing.assert_allclose(pos(m, {"idd_elevation": math.pi / 2}, "mi"), v(0.06, 0, -0.88), atol=1e-12)
    np.testing.assert_allclose(pos(m, {"idd_azimuth": -math.pi / 2}, "mi"), v(0, -0.94, 0), atol=1e-12)
    fk = forward_kinematics(m)
    centre = v(0.82, 0, 0)
    for inst, direction in (("mi", v(1, 0, 0)), ("apxs", v(0, 1, 0)), ("mb", v(-1, 0, 0)), ("rat", v(0, -1, 0))):
        np.testing.assert_allclose(fk.position(inst), centre + 0.12 * direction, atol=1e-12)
        np.testing.assert_allclose(fk.rotation(inst)[:, 0], direction, atol=1e-12)


@given(az=angle, el=angle, elbow=angle, wrist=angle)
def test_mer_idd_closed_form(az, el, elbow, wrist):
    m = load_model(model_path("mer/mer_idd.xml"))
    a1, a2, a3 = el, el + elbow, el + elbow + wrist
    x = 0.06 + 0.32 * math.cos(a1) + 0.34 * math.cos(a2) + 0.22 * math.cos(a3)
    z = -0.32 * math.sin(a1) - 0.34 * math.sin(a2) - 0.22 * math.sin(a3)
    q = {"idd_azimuth": az, "idd_elevation": el, "idd_elbow": elbow, "idd_wrist": wrist}
    np.testing.assert_allclose(pos(m, q, "mi"), Rz(az) @ v(x, 0, z), atol=1e-12)


def test_moonrise_digging_arm():
    m = load_model(model_path("moonrise/moonrise_arm.xml"))
    assert m.nq == 4
    np.testing.assert_allclose(pos(m, None, "scoop_tip"), v(1.25, 0, 0.15), atol=1e-12)
    np.testing.assert_allclose(pos(m, {"dig_shoulder": -math.pi / 2}, "scoop_tip"), v(0, 0, 1.40), atol=1e-12)
    np.testing.assert_allclose(pos(m, {"dig_yaw": math.pi / 2}, "scoop_tip"), v(0, 1.25, 0.15), atol=1e-12)
    np.testing.assert_allclose(pos(m, {"dig_elbow": math.pi / 2, "dig_scoop": math.pi / 2}, "scoop_tip"),
                               v(0.45, 0, 0.15 - 0.50), atol=1e-12)


# ------------------------------------------------------------------------------------------- hexapod
MOUNTS = [(0.15, 0.10, math.pi / 4), (0.0, 0.10, math.pi / 2), (-0.15, 0.10, 3 * math.pi / 4),
          (0.15, -0.10, -math.pi / 4), (0.0, -0.10, -math.pi / 2), (-0.15, -0.10, -3 * math.pi / 4)]


def _foot_in_mount(hip_yaw, hip_pitch, knee):
    return Rz(hip_yaw) @ (v(0.04, 0, 0) + Ry(hip_pitch) @ (v(0.10, 0, 0) + Ry(knee) @ v(0, 0, -0.12)))


def test_hexapod_from_one_leg_file():
    m = load_model(model_path("lemur/lemur_hexapod.xml"))
    assert m.nq == 6 + 6 * 3
    expected = [f"lemur_body.{c}" for c in ("x", "y", "z", "roll", "pitch", "yaw")]
    for i in range(1, 7):
        expected += [f"leg{i}_hip_yaw", f"leg{i}_hip_pitch", f"leg{i}_knee"]
    assert list(m.coordinate_names) == expected
    fk = forward_kinematics(m)
    for i, (x, y, yaw) in enumerate(MOUNTS, 1):
        np.testing.assert_allclose(fk.position(f"leg{i}_foot"),
                                   v(x, y, 0.12) + Rz(yaw) @ _foot_in_mount(0, 0, 0), atol=1e-12)
        assert fk.position(f"leg{i}_foot")[2] == pytest.approx(0.0, abs=1e-12)


@given(st.lists(angle, min_size=3, max_size=3), st.integers(1, 6), st.floats(-1, 1))
def test_hexapod_attachment_equals_composition_by_hand(joints, leg, body_yaw):
    m = load_model(model_path("lemur/lemur_hexapod.xml"))
    q = {f"leg{leg}_hip_yaw": joints[0], f"leg{leg}_hip_pitch": joints[1], f"leg{leg}_knee": joints[2],
         "lemur_body.yaw": body_yaw}
    x, y, yaw = MOUNTS[leg - 1]
    expected = v(0, 0, 0.12) + Rz(body_yaw) @ (v(x, y, 0) + Rz(yaw) @ _foot_in_mount(*joints))
    np.testing.assert_allclose(pos(m, q, f"leg{leg}_foot"), expected, atol=1e-12)


def test_single_leg_file_has_no_placement():
    leg = load_model(model_path("lemur/lemur_leg.xml"))
    assert leg.coordinate_names == ("hip_yaw", "hip_pitch", "knee")
    np.testing.assert_allclose(leg.joint("hip_yaw").placement, np.eye(4))
    np.testing.assert_allclose(pos(leg, None, "foot"), v(0.14, 0, -0.12), atol=1e-12)


# ------------------------------------------------------------------------------------------- four-bar
def _four_bar_closed(theta):
    """Crank angle -> (coupler relative angle, rocker angle, C) on the assembly branch of the home pose."""
    A, D, a, b, c = v(0, 0), v(0.40, 0), 0.10, 0.50, 0.40
    B = A + a * v(math.cos(theta), math.sin(theta))
    d = np.linalg.norm(D - B)
    # circle-circle intersection: |C - B| = b, |C - D| = c; take the solution left of B->D (upper branch)
    along = (b * b - c * c + d * d) / (2 * d)
    h = math.sqrt(b * b - along * along)
    u = (D - B) / d
    C = B + along * u + h * v(-u[1], u[0])
    beta = math.atan2(C[1] - B[1], C[0] - B[0])
    gamma = math.atan2(C[1] - D[1], C[0] - D[0])
    return beta - theta, gamma, C


def test_four_bar_home_is_closed():
    m = load_model(model_path("four_bar/four_bar.xml"))
    fk = forward_kinematics(m)
    np.testing.assert_allclose(fk.position("closure_a"), v(0.40, 0.40, 0), atol=1e-12)
    np.testing.assert_allclose(fk.position("closure_b"), v(0.40, 0.40, 0), atol=1e-12)
    assert m.joint("crank").actuated and not m.joint("coupler").actuated and not m.joint("rocker").actuated
    coupler, rocker, _ = _four_bar_closed(math.pi / 2)
    np.testing.assert_allclose(m.home, [math.pi / 2, coupler, rocker], atol=1e-12)


@given(theta=st.floats(0.0, 2 * math.pi))
def test_four_bar_closure_frames_coincide_on_the_loop(theta):
    m = load_model(model_path("four_bar/four_bar.xml"))
    coupler, rocker, C = _four_bar_closed(theta)
    fk = forward_kinematics(m, {"crank": theta, "coupler": coupler, "rocker": rocker})
    np.testing.assert_allclose(fk.position("closure_a"), v(C[0], C[1], 0), atol=1e-12)
    np.testing.assert_allclose(fk.position("closure_b"), v(C[0], C[1], 0), atol=1e-12)


# ------------------------------------------------------------------------------------------- samples
def test_simple_sample_closed_form():
    m = load_model(model_path("claraty_samples/simple_sample1.xml"))
    for q1 in (0.0, 0.7):
        # link1 at (2, 0, 0) turned by Rz(pi/2) (EULER_ZYZ pi/2, 0, 0), then joint1; link2 10 m along x
        expected = v(2, 0, 0) + Rz(math.pi / 2) @ Rz(q1) @ v(10, 0, 0)
        np.testing.assert_allclose(pos(m, {"joint1": q1}, "link2"), expected, atol=1e-12)


def test_repository_models_folder_is_the_library():
    assert os.path.samefile(os.path.realpath(models_dir()), os.path.realpath(REPO_MODELS)) or \
        os.path.exists(os.path.join(models_dir(), DEFAULT_MODEL))


@pytest.mark.parametrize("name", XML_MODELS)
def test_every_xml_model_describes_itself(name):
    from mechanism_model_core.library import model_summary

    text = model_summary(name)
    assert 10 < len(text) <= 100 and "\n" not in text


@pytest.mark.parametrize("theta", [0.3, 1.2, 2.5, 4.0])
def test_four_bar_closure_is_solvable_with_the_recorded_frames(theta):
    """The constraint/IK code closes the loop from the two recorded frames alone; the passive angles it
    finds are the textbook circle-intersection ones."""
    ik = pytest.importorskip("mechanism_model_core.ik")
    constraints = pytest.importorskip("mechanism_model_core.constraints")
    m = load_model(model_path("four_bar/four_bar.xml"))
    coupler, rocker, _ = _four_bar_closed(theta)
    q0 = m.configuration({"crank": theta, "coupler": coupler + 0.1, "rocker": rocker - 0.1})
    result = ik.solve_ik(m, [constraints.LoopClosure("closure_a", "closure_b", mask=(1, 1, 1, 0, 0, 0)),
                             constraints.JointLock(["crank"], [theta])], q0, timeout=SAFETY)
    assert result.success
    np.testing.assert_allclose(result.q, [theta, coupler, rocker], atol=1e-6)
