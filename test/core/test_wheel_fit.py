"""Wheels from meshes: the fit of a wheel (axis, radius, width) to mesh vertices, checked against meshes of
known size made with trimesh, and the mobility proposer on a six-wheel rocker-bogie rover whose wheels are
drawn with STL meshes only (as the JPL Open Source Rover's Gazebo description draws them)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.locomotion.wheel_fit import MIN_ROUNDNESS, fit_wheel
from mechanism_model_core.locomotion.mobility import propose_mobility
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
from mechanism_model_core.spatial import rpy_to_matrix

from .optional_deps import require

trimesh = require("trimesh", "mesh")


def _treaded_wheel(radius=0.13, width=0.09, lugs=16, depth=0.006):
    """A wheel along z: a cylinder with ``lugs`` tread blocks standing ``depth`` proud of it."""
    parts = [trimesh.creation.cylinder(radius=radius - depth, height=width, sections=64)]
    for k in range(lugs):
        lug = trimesh.creation.box((2 * depth, 0.02, width))
        a = 2 * math.pi * k / lugs
        T = np.eye(4)
        T[:3, :3] = rpy_to_matrix([0, 0, a])
        T[:3, 3] = [(radius - depth) * math.cos(a), (radius - depth) * math.sin(a), 0]
        lug.apply_transform(T)
        parts.append(lug)
    return trimesh.util.concatenate(parts)


def test_a_treaded_wheel_turned_and_shifted_is_measured_to_its_true_size():
    mesh = _treaded_wheel(radius=0.13, width=0.09)
    R = rpy_to_matrix([0.3, -1.1, 0.7])
    c = np.array([0.02, -0.01, 0.05])
    V = mesh.vertices @ R.T + c
    axis = R[:, 2]
    # the joint axis passes through the hub: the point c
    fit = fit_wheel(V, axis, axis_point=c + 0.3 * axis)
    assert fit.is_wheel, fit.why()
    # the outer tread corners lie at sqrt(r^2 + (lug half width)^2) from the axis
    assert fit.radius == pytest.approx(math.hypot(0.13, 0.01), rel=1e-9)
    assert fit.width == pytest.approx(0.09, rel=1e-9)
    np.testing.assert_allclose(fit.center, c, atol=1e-9)
    assert fit.offset < 1e-9 and fit.axis_angle < 1e-6
    assert fit.roundness > MIN_ROUNDNESS


def test_a_box_a_wheel_off_its_axle_and_a_wheel_about_the_wrong_axis_are_not_wheels():
    box = trimesh.creation.box((0.2, 0.2, 0.05))
    fit = fit_wheel(box.vertices, [0, 0, 1])
    assert not fit.is_wheel and "not round" in fit.why()
    assert fit.roundness < MIN_ROUNDNESS     # 8 corners: most sectors around the axis hold no vertex
    wheel = trimesh.creation.cylinder(radius=0.1, height=0.05, sections=64)
    off = fit_wheel(wheel.vertices + [0.05, 0, 0], [0, 0, 1])
    assert not off.is_wheel and "off the joint axis" in off.why() and off.offset == pytest.approx(0.05)
    sideways = fit_wheel(wheel.vertices, [1, 0, 0])   # a joint that spins the disc about a diameter
    assert not sideways.is_wheel


def _rover_urdf(tmp_path) -> str:
    """A six-wheel rocker-bogie rover (front and rear wheels steer) whose wheels are STL meshes only; the
    wheel mesh is drawn along z and turned onto the joint's y axis by the collision origin, as OSR does."""
    _treaded_wheel(radius=0.075, width=0.06).export(tmp_path / "wheel.stl")
    trimesh.creation.box((0.3, 0.05, 0.05)).export(tmp_path / "beam.stl")
    links, joints = ['<link name="base_link"/>'], []

    def link(name, mesh=None, rpy="0 0 0"):
        geo = "" if mesh is None else (f'<collision><origin rpy="{rpy}"/><geometry><mesh filename="{mesh}"/>'
                                       f'</geometry></collision>')
        links.append(f'<link name="{name}"><inertial><mass value="0.5"/><inertia ixx="0.001" iyy="0.001" '
                     f'izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>{geo}</link>')

    def joint(name, jtype, parent, child, xyz, axis="0 1 0", lim=""):
        joints.append(f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
                      f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{lim}</joint>')

    lim = '<limit lower="-0.6" upper="0.6" effort="5" velocity="2"/>'
    for side, y in (("left", 0.2), ("right", -0.2)):
        link(f"rocker_{side}", "beam.stl")
        joint(f"rocker_{side}_joint", "revolute", "base_link", f"rocker_{side}", f"0 {y} 0", lim=lim)
        link(f"bogie_{side}", "beam.stl")
        joint(f"bogie_{side}_joint", "revolute", f"rocker_{side}", f"bogie_{side}", "-0.1 0 -0.1", lim=lim)
        for pos, parent, x, steer in (("front", f"rocker_{side}", 0.25, True),
                                      ("middle", f"bogie_{side}", 0.1, False),
                                      ("rear", f"bogie_{side}", -0.2, True)):
            carrier = parent
            if steer:
                carrier = f"{pos}_steer_{side}"
                link(carrier)
                joint(f"{pos}_steer_{side}_joint", "revolute", parent, carrier, f"{x} 0 -0.05", "0 0 1", lim)
                x = 0
            link(f"{pos}_wheel_{side}", "wheel.stl", rpy="-1.5707963267948966 0 0")
            joint(f"{pos}_wheel_{side}_joint", "continuous", carrier, f"{pos}_wheel_{side}", f"{x} 0 -0.1")
    text = '<?xml version="1.0"?>\n<robot name="meshrover">\n' + "\n".join(links + joints) + "\n</robot>\n"
    path = tmp_path / "meshrover.urdf"
    path.write_text(text)
    return str(path)


def test_the_proposer_fits_six_mesh_wheels_and_finds_four_steering_joints(tmp_path):
    mech = load_model(_rover_urdf(tmp_path), root_joint="floating")
    spec = propose_mobility(mech)
    wheels = {w.name: w for w in spec.wheels}
    assert set(wheels) == {f"{p}_wheel_{s}" for p in ("front", "middle", "rear") for s in ("left", "right")}
    for w in spec.wheels:
        assert w.radius == pytest.approx(math.hypot(0.075, 0.01), rel=1e-6)   # STL stores float32
    steering = sorted(w.steering_joint for w in spec.wheels if w.steering_joint)
    assert steering == sorted(f"{p}_steer_{s}_joint" for p in ("front", "rear") for s in ("left", "right"))
    assert set(spec.suspension_joints) == {"rocker_left_joint", "rocker_right_joint", "bogie_left_joint",
                                           "bogie_right_joint"}
    # it says which links it took and why
    assert len(spec.notes) == 6 and all("wheel.stl fitted" in n and "radius 0.07566 m" in n and
                                        "width 0.06 m" in n for n in spec.notes)
    WheeledLocomotorModel(mech, spec)   # every check the locomotor makes passes


def test_a_mesh_that_is_not_round_is_left_out_with_the_reason(tmp_path):
    path = _rover_urdf(tmp_path)
    text = open(path).read().replace('<link name="middle_wheel_left"><inertial>',
                                     '<link name="middle_wheel_left"><inertial>', 1)
    # the left middle wheel drawn with the beam instead of the wheel
    start = text.index('<link name="middle_wheel_left">')
    end = text.index("</link>", start)
    text = text[:start] + text[start:end].replace("wheel.stl", "beam.stl") + text[end:]
    (tmp_path / "meshrover.urdf").write_text(text)
    spec = propose_mobility(load_model(path, root_joint="floating"))
    assert "middle_wheel_left" not in {w.name for w in spec.wheels} and len(spec.wheels) == 5
    note = next(n for n in spec.notes if n.startswith("'middle_wheel_left'"))
    assert "is not a wheel" in note and "beam.stl fitted" in note and "not round" in note


def test_the_cli_prints_the_proposal_and_says_why(tmp_path):
    path = _rover_urdf(tmp_path)
    out = subprocess.run([sys.executable, "-m", "mechanism_model_core", "mobility", path, "--propose"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("<Wheel ") == 6, out.stdout
    assert out.stderr.count("is a wheel driven by") == 6
