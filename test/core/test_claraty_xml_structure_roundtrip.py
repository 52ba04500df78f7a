"""CLARAty XML load -> save -> load keeps the model's structure, compared field by field on the parsed
objects (not on the text, not only through forward kinematics): bodies, joints with every limit, frames and
their kinds, mass properties, bounding shapes, the collision matrix, the mobility description and the motor
groups (controller, interface, joint order, direction, gear, offset, every limit).

What the writer flattens on purpose (the file's meaning is kept, its form is not): ``<Constant>``s and
expressions are written as numbers, ``<Attach>``ed files are written inline with their prefixes applied,
D-H / Zero_Position reference frames and ``relative_to`` frames become plain transforms.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.io.claraty_xml import load_claraty_xml, save_claraty_xml, to_claraty_xml
from mechanism_model_core.io.ros2_control import controllers_yaml, urdf_with_ros2_control
from mechanism_model_core.library import list_models, model_path
from mechanism_model_core.io.motor_groups import load_motor_groups
from mechanism_model_core.locomotion import MotorGroups
from mechanism_model_core.locomotion.motor_group import Motor, MotorGroup, MotorLimits

XML_MODELS = [rel for rel in list_models() if rel.endswith(".xml")]
WITH_MOTORS = ["rocky8/rocky8_rover.xml", "rocky8/rocky8_arm.xml", "rocky8/rocky8_mast.xml",
               "rocky8/rocky8_rocker_bogie.xml", "mer/mer_idd.xml", "lemur/lemur_hexapod.xml"]


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_model(path)


def _same(a, b, what):
    """Exact equality for names and flags; floats equal to 1e-12 relative (the writer uses repr)."""
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        if math.isinf(a) or math.isinf(b):
            assert a == b, what
        else:
            assert a == pytest.approx(b, rel=1e-12, abs=1e-12), what
    elif isinstance(a, (tuple, list, np.ndarray)):
        assert len(a) == len(b), what
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{what}[{k}]")
    else:
        assert a == b, what


def _compare_models(m0, m1):
    assert m1.name == m0.name and m1.ground == m0.ground
    assert m1.body_names == m0.body_names
    for s0, s1 in zip(m0.bodies, m1.bodies):
        w = f"body {s0.name}"
        assert s1.parent == s0.parent, w
        assert s1.graphics == s0.graphics, w
        j0, j1 = s0.joint, s1.joint
        if j0 is None:
            assert j1 is None, w
        else:
            for f in ("name", "type", "actuated", "coupling"):
                assert getattr(j1, f) == getattr(j0, f), f"{w} joint {f}"
            for f in ("axis", "lower", "upper", "home", "velocity", "effort", "offset"):
                _same(getattr(j0, f), getattr(j1, f), f"{w} joint {f}")
            assert (j0.stiffness is None) == (j1.stiffness is None), f"{w} stiffness"
            if j0.stiffness is not None:
                _same(j0.stiffness, j1.stiffness, f"{w} stiffness")
            np.testing.assert_allclose(j1.placement, j0.placement, atol=1e-12, err_msg=w)
        assert list(s1.frames) == list(s0.frames), w
        for f in s0.frames:
            np.testing.assert_allclose(s1.frames[f], s0.frames[f], atol=1e-12, err_msg=f"{w} frame {f}")
            # the kind of a body-origin reference name comes back; other kinds as written
            assert s1.frame_kinds.get(f, "local") == s0.frame_kinds.get(f, "local"), f"{w} frame {f} kind"
        _same(s0.mass.mass, s1.mass.mass, f"{w} mass")
        np.testing.assert_allclose(s1.mass.com, s0.mass.com, atol=1e-12, err_msg=w)
        np.testing.assert_allclose(s1.mass.inertia, s0.mass.inertia, atol=1e-12, err_msg=w)
        assert [sh.name for sh in s1.shapes] == [sh.name for sh in s0.shapes], w
        for a, b in zip(s0.shapes, s1.shapes):
            for f in ("type", "parent", "is_container", "level", "ignore_collisions", "link", "mesh",
                      "mesh_path"):
                assert getattr(b, f) == getattr(a, f), f"{w} shape {a.name} {f}"
            _same(a.dimensions, b.dimensions, f"{w} shape {a.name} dimensions")
            _same(a.tolerance, b.tolerance, f"{w} shape {a.name} tolerance")
            np.testing.assert_allclose(b.transform, a.transform, atol=1e-12, err_msg=f"{w} shape {a.name}")
    assert m1.metadata.get("collision_matrix") == m0.metadata.get("collision_matrix")
    assert m1.metadata.get("mobility") == m0.metadata.get("mobility")


def _compare_motor_groups(g0: MotorGroups, g1: MotorGroups):
    assert list(g1) == list(g0)
    for name in g0:
        a, b = g0[name], g1[name]
        assert (b.controller, b.interface, b.joint_names) == (a.controller, a.interface, a.joint_names), name
        for ma, mb in zip(a.motors, b.motors):
            w = f"{name}/{ma.joint}"
            assert (mb.name, mb.direction) == (ma.name, ma.direction), w
            _same(ma.gear, mb.gear, f"{w} gear")
            _same(ma.offset, mb.offset, f"{w} offset")
            for f in ("lower", "upper", "velocity", "acceleration", "effort"):
                _same(getattr(ma.limits, f), getattr(mb.limits, f), f"{w} {f}")


@pytest.mark.parametrize("rel", XML_MODELS)
def test_library_model_structure_survives_save_and_load(rel, tmp_path):
    m0 = _load(model_path(rel))
    path = tmp_path / "saved.xml"
    save_claraty_xml(m0, path)
    m1 = load_claraty_xml(path)
    _compare_models(m0, m1)
    _compare_motor_groups(load_motor_groups(m0), load_motor_groups(m1))


@pytest.mark.parametrize("rel", WITH_MOTORS)
def test_motor_groups_survive_save_and_load(rel, tmp_path):
    m0 = _load(model_path(rel))
    g0 = load_motor_groups(m0)
    assert len(g0) > 0, f"{rel} should carry motor groups"
    path = tmp_path / "saved.xml"
    save_claraty_xml(m0, path)
    m1 = load_claraty_xml(path)
    g1 = load_motor_groups(m1)
    _compare_motor_groups(g0, g1)
    # the ros2_control export of the saved model is the original's (the same definitions)
    assert urdf_with_ros2_control(m1, g1) == urdf_with_ros2_control(m0, g0)
    assert controllers_yaml(g1) == controllers_yaml(g0)


def test_explicit_motor_groups_with_every_field_are_written(tmp_path):
    """Groups given to the writer (not read from a file): non-default direction, gear, offset, names, narrowed
    limits of every kind, a group of each controller and interface."""
    m = _load(model_path("rocky8/rocky8_arm.xml"))
    joints = [j for j in m.joints if j.dof == 1 and j.actuated and j.coupling is None]
    a, b = joints[0], joints[1]
    lo_a = max(a.lower[0], -1.0) + 0.125
    groups = MotorGroups([
        MotorGroup("first_controller", "joint_trajectory", "position", [
            Motor(a.name, MotorLimits(lo_a, lo_a + 0.5, min(a.velocity, 0.75), 3.5, min(a.effort, 7.25)),
                  direction=-1, gear=160.5, offset=0.3, name="shoulder_actuator")]),
        MotorGroup("second_controller", "forward_command", "velocity", [
            Motor(b.name, MotorLimits(b.lower[0], b.upper[0], min(b.velocity, 0.5), math.inf, b.effort),
                  gear=2.0)]),
    ])
    text = to_claraty_xml(m, motor_groups=groups)
    path = tmp_path / "explicit.xml"
    path.write_text(text)
    _compare_motor_groups(groups, load_motor_groups(load_claraty_xml(path)))


def test_motor_groups_naming_an_unknown_joint_are_refused_by_the_writer():
    m = _load(model_path("rocky8/rocky8_arm.xml"))
    bad = MotorGroups([MotorGroup("g", "forward_command", "velocity",
                                  [Motor("no_such_joint", MotorLimits(velocity=1.0))])])
    with pytest.raises(ValueError, match="no_such_joint"):
        to_claraty_xml(m, motor_groups=bad)


def test_no_motor_groups_when_told_so(tmp_path):
    m = _load(model_path("rocky8/rocky8_arm.xml"))
    assert "<Motor_Group" not in to_claraty_xml(m, motor_groups=MotorGroups())
    assert "<Motor_Group" in to_claraty_xml(m)
