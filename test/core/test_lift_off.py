"""Near the limits of stability: settling with lift-off, the tip-over margin of the wheels in contact, slope
sweeps; against closed forms (a rigid box on its support points; an outrigger arm's moment balance)."""

import json
import math

import numpy as np
import pytest

import mechanism_model_core as mm
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
from mechanism_model_core.statics import center_of_mass, total_mass
from mechanism_model_core.terrain import Plane

G = 9.81


@pytest.fixture(scope="module")
def atrv():
    """ATRV: four wheels on a rigid chassis (no suspension): a rigid box on four support points."""
    return WheeledLocomotorModel(mm.load_model(model_path("atrv/atrv_rover.xml")))


@pytest.mark.parametrize("direction", [0.0, math.pi / 2, math.pi, -math.pi / 2])
def test_tip_angle_of_a_rigid_box_is_the_closed_form(atrv, direction):
    """On a plane rising along one of the rover's axes (its yaw held) a rigid rover's pose relative to the
    plane does not depend on the slope, so the tip angle is where gravity through the centre of mass crosses
    the downhill edge of the support polygon found on flat ground: tan(theta) = (distance in the plane from
    the COM to that edge) / (COM height). (Along other directions the held yaw turns the rover relative to the
    plane's fall line as the slope grows.)"""
    flat = atrv.settle(Plane(), 0.0, 0.0, 0.0)
    pts = flat.points[:, :2]
    com = center_of_mass(atrv.mechanism, flat.q)
    down = -np.array([math.cos(direction), math.sin(direction)])     # downhill direction in the plane
    # the rover tips about the support edge that gravity's in-plane part first pushes the COM over: for each
    # edge of the hull with outward normal n, the COM crosses it at tan(theta) = dist / (h * (n . down))
    from scipy.spatial import ConvexHull
    hull = pts[ConvexHull(pts).vertices]
    best = math.inf
    for a, b in zip(hull, np.roll(hull, -1, axis=0)):
        e = (b - a) / np.linalg.norm(b - a)
        n = np.array([e[1], -e[0]])
        if n @ (a - com[:2]) < 0:
            n = -n
        dist = n @ (a - com[:2])
        if n @ down > 1e-12:
            best = min(best, math.atan2(dist, com[2] * (n @ down)))
    sweep = atrv.slope_sweep(np.linspace(0.0, 1.4, 15), direction, tol=1e-6)
    assert sweep.tip == pytest.approx(best, abs=2e-6)
    assert sweep.first_lift == pytest.approx(sweep.tip, abs=2e-6)          # a rigid box lifts only as it tips
    below = atrv.settle_with_lift_off(Plane.from_slope(best - 1e-3, direction), 0.0, 0.0, 0.0)
    above = atrv.settle_with_lift_off(Plane.from_slope(best + 1e-3, direction), 0.0, 0.0, 0.0)
    assert not below.tips and not below.lifted and above.tips
    margin = atrv.tipover_margin(Plane.from_slope(best - 1e-3, direction), below.q, method="support_polygon")
    assert 0 < margin.margin < 2e-3


def outrigger_xml():
    """A rigid four-wheeled chassis with a passive outrigger arm behind it carrying a fifth wheel; the arm's
    pivot is level with the wheel contacts, so traction cannot balance it: its wheel lifts at
    tan(theta) = (sum m a) / (sum m h) on a slope rising backwards (a: COM behind the pivot, h: above it)."""
    wheels = []
    for name, x, y in (("front_left", 0.3, 0.25), ("front_right", 0.3, -0.25), ("rear_left", -0.3, 0.25),
                       ("rear_right", -0.3, -0.25)):
        wheels.append(f"""
  <ME_Body name="{name}_wheel" parent="chassis">
    <ME_Joint name="{name}_drive" type="continuous" axis="0 1 0"/>
    <Frame name="{name}_wheel" type="reference"><Transform><Position x="{x}" y="{y}" z="-0.1"/></Transform></Frame>
    <Mass_Properties mass="1"><CM><Transform><Position/></Transform></CM>
      <Inertia xx="0.003" yy="0.005" zz="0.003"/></Mass_Properties>
  </ME_Body>""")
    return f"""<?xml version="1.0" encoding="US-ASCII"?>
<!DOCTYPE Mechanism_Model SYSTEM "mechanism_model.dtd">
<Mechanism_Model name="outrigger" version="1.0">
  <ME_Body name="chassis">
    <ME_Joint name="chassis" type="floating" actuated="false"/>
    <Frame name="chassis" type="reference"><Transform><Position z="0.2"/></Transform></Frame>
    <Mass_Properties mass="20"><CM><Transform><Position/></Transform></CM>
      <Inertia xx="0.5" yy="0.8" zz="1.0"/></Mass_Properties>
  </ME_Body>{''.join(wheels)}
  <ME_Body name="arm" parent="chassis">
    <ME_Joint name="arm" type="revolute" axis="0 1 0" actuated="false">
      <Joint_Limits min="-0.4" max="0.4" vmax="1"/>
    </ME_Joint>
    <Frame name="arm" type="reference"><Transform><Position x="-0.45" z="-0.2"/></Transform></Frame>
    <Mass_Properties mass="2"><CM><Transform><Position x="-0.05" z="0.3"/></Transform></CM>
      <Inertia xx="0.01" yy="0.01" zz="0.01"/></Mass_Properties>
  </ME_Body>
  <ME_Body name="tail_wheel" parent="arm">
    <ME_Joint name="tail_drive" type="continuous" axis="0 1 0"/>
    <Frame name="tail_wheel" type="reference"><Transform><Position x="-0.3" z="0.1"/></Transform></Frame>
    <Mass_Properties mass="0.2"><CM><Transform><Position/></Transform></CM>
      <Inertia xx="0.001" yy="0.001" zz="0.001"/></Mass_Properties>
  </ME_Body>
  <Mobility body_frame="chassis" skid="true">
    <Wheel name="front_left" drive_joint="front_left_drive" radius="0.1"/>
    <Wheel name="front_right" drive_joint="front_right_drive" radius="0.1"/>
    <Wheel name="rear_left" drive_joint="rear_left_drive" radius="0.1"/>
    <Wheel name="rear_right" drive_joint="rear_right_drive" radius="0.1"/>
    <Wheel name="tail" drive_joint="tail_drive" radius="0.1"/>
    <Suspension joint="arm"/>
  </Mobility>
</Mechanism_Model>
"""


@pytest.fixture(scope="module")
def outrigger(tmp_path_factory):
    p = tmp_path_factory.mktemp("outrigger") / "outrigger.xml"
    p.write_text(outrigger_xml(), encoding="utf-8")
    return WheeledLocomotorModel(mm.load_model(str(p)))


def test_a_wheel_lifts_past_its_angle_and_the_others_carry_the_weight(outrigger):
    W = outrigger
    lift = math.atan2(2 * 0.05 + 0.2 * 0.3, 2 * 0.3 + 0.2 * 0.1)         # moment balance about the pivot
    uphill_back = math.pi
    sweep = W.slope_sweep(np.linspace(0.0, 0.6, 7), uphill_back, tol=1e-6)
    assert sweep.first_lift == pytest.approx(lift, abs=2e-6) and sweep.first_lift_wheels == ["tail"]
    assert sweep.tip is None or sweep.tip > lift + 0.3                      # the chassis stands far beyond
    plane = Plane.from_slope(0.35, uphill_back)
    r = W.settle_with_lift_off(plane, 0.0, 0.0, 0.0)
    assert not r.tips and r.lifted == [W.names.index("tail")]
    m = W.mechanism
    q = r.q
    assert q[m.coordinate_index("arm")] == pytest.approx(m.upper_limits[m.coordinate_index("arm")], abs=1e-6)
    d = W.contacts(plane, q)[2]
    assert d[W.names.index("tail")] > 0.01 and np.all(np.abs(np.delete(d, W.names.index("tail"))) < 1e-6)
    weight = total_mass(m) * np.array([0.0, 0.0, G])
    assert r.loads.forces.sum(axis=0) == pytest.approx(weight, abs=1e-6 * weight[2])
    assert np.all(r.loads.normal[r.in_contact] > 0) and r.loads.normal[~r.in_contact] == 0
    # below the angle: every wheel down, every load positive
    r0 = W.settle_with_lift_off(Plane.from_slope(lift - 1e-3, uphill_back), 0.0, 0.0, 0.0)
    assert not r0.lifted and np.all(r0.loads.normal > 0)
    # the margin counts the wheels in contact only
    full = W.tipover_margin(plane, W.settle(plane, 0, 0, 0).q, method="support_polygon")
    lifted = W.tipover_margin(plane, q, method="support_polygon")
    assert lifted.margin < full.margin or lifted.margin == pytest.approx(full.margin)


def test_statics_cli_settles_the_rover_on_the_slope(capsys):
    """`mechanism-model statics MODEL --contacts wheels --slope A` settles a wheeled model on the slope: every
    rim on the plane, loads at the rim contacts summing to the weight, and the sweep's tip beyond A."""
    from mechanism_model_core.cli import main
    assert main(["statics", "osr/osr_rover.xml", "--contacts", "wheels", "--slope", "0.35", "--direction", "1.0",
                 "--sweep", "1.2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    W = WheeledLocomotorModel(mm.load_model(model_path("osr/osr_rover.xml")))
    weight = total_mass(W.mechanism) * G
    forces = np.array([w["force"] for w in out["wheels"]])
    assert forces.sum(axis=0) == pytest.approx([0, 0, weight], abs=1e-6 * weight)
    assert all(w["in_contact"] and w["normal_force"] > 0 for w in out["wheels"])
    assert not out["slope"]["tips"] and out["slope"]["support_polygon_margin"] > 0
    n = Plane.from_slope(0.35, 1.0).unit_normal
    # loads along the tilted normal: their sum is the weight's normal part
    assert sum(w["normal_force"] for w in out["wheels"]) == pytest.approx(weight * n[2], rel=1e-9)
    assert out["sweep"]["tip"] > 0.35


# ------------------------------------------------------------------------------------ height fields
@pytest.mark.parametrize("interpolation", ["bilinear", "triangles"])
def test_on_a_height_field_a_wheel_over_a_step_down_hangs_on_its_limit(outrigger, interpolation):
    """The ground drops by 0.3 m behind the chassis (a step in a height field): the four chassis wheels stay
    on the upper level, the outrigger arm falls to its lower limit and the tail wheel hangs above the lower
    level. Closed form: the chassis level at its flat-ground height (0.2 m, wheel centres 0.1 m above the
    ground), the tail wheel's centre at pivot + R_y(-0.4) (-0.3, 0, 0.1), its lowest rim point r below."""
    from mechanism_model_core.terrain import HeightField
    W = outrigger
    m = W.mechanism
    depth, edge = 0.3, -0.625                     # the step between the grid rows at x = -0.65 and -0.60
    hf = HeightField.from_function(lambda X, Y: np.where(X < edge, -depth, 0.0), (-2, 2), (-2, 2), 0.05,
                                   interpolation=interpolation)
    r = W.settle_with_lift_off(hf, 0.0, 0.0, 0.0)
    tail = W.names.index("tail")
    assert not r.tips and r.lifted == [tail], r.reason
    q = r.q
    lim = m.lower_limits[m.coordinate_index("arm")]
    assert lim == pytest.approx(-0.4)
    assert q[m.coordinate_index("arm")] == pytest.approx(lim, abs=1e-9)
    for c, v in (("chassis.z", 0.0), ("chassis.roll", 0.0), ("chassis.pitch", 0.0)):
        assert q[m.coordinate_index(c)] == pytest.approx(v, abs=1e-9)
    pivot = np.array([-0.45, 0.0, 0.2 - 0.2])
    c, s = math.cos(lim), math.sin(lim)
    centre = pivot + np.array([c * -0.3 + s * 0.1, 0.0, -s * -0.3 + c * 0.1])
    clearance = centre[2] - 0.1 + depth
    d = W.contacts(hf, q)[2]
    assert d[tail] == pytest.approx(clearance, abs=1e-9) and clearance > 0.1
    assert np.all(np.abs(np.delete(d, tail)) < 1e-6)
    weight = total_mass(m) * G
    assert r.loads.forces.sum(axis=0) == pytest.approx([0, 0, weight], abs=1e-6 * weight)
    assert r.loads.normal[tail] == 0 and np.all(np.delete(r.loads.normal, tail) > 0)


def test_on_a_slope_given_as_a_height_field_the_wheel_lifts_as_on_the_plane(outrigger):
    """The lift-off loop on a height field: a plane rising backwards past the tail's lift-off angle, sampled
    as a height field (bilinear interpolation of a plane is the plane), settles as on the Plane itself."""
    from mechanism_model_core.terrain import HeightField
    W = outrigger
    slope = 0.35
    plane = Plane.from_slope(slope, math.pi)
    hf = HeightField.from_function(lambda X, Y: plane.height(X, Y), (-2, 2), (-2, 2), 0.1)
    a = W.settle_with_lift_off(plane, 0.0, 0.0, 0.0)
    b = W.settle_with_lift_off(hf, 0.0, 0.0, 0.0)
    assert a.lifted == b.lifted == [W.names.index("tail")] and not b.tips
    assert b.q == pytest.approx(a.q, abs=1e-6)
    assert b.loads.normal == pytest.approx(a.loads.normal, abs=1e-6 * total_mass(W.mechanism) * G)
