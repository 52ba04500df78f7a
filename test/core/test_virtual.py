"""Virtual articulation (MSim): add a virtual link and joint at run time, close a chain through it, operate
the virtual joint, remove it again. Checked against the geometry the virtual joint prescribes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder, forward_kinematics
from mechanism_model_core.constraints import LoopClosure
from mechanism_model_core.errors import ModelStructureError
from mechanism_model_core.spatial import rot_x, rot_y, translation
from mechanism_model_core.virtual import (VirtualArticulation, add_virtual_link, real_coordinates,
                                          remove_virtual, virtual_bodies)

from .robots import panda


#: wall-clock budget per solve: a safety net, not a verdict (each converges in a few iterations; with the
#: 50 ms default a worker preempted under a loaded CI spent 62 ms on its first iteration and failed)
BUDGET = 10.0

def planar3():
    b = MechanismBuilder("planar3")
    b.add_body("l1", None, Joint.revolute("j1", lower=-3, upper=3))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(1.0, 0, 0), lower=-3, upper=3))
    b.add_body("l3", "l2", Joint.revolute("j3", translation(0.7, 0, 0), lower=-3, upper=3))
    b.add_frame("l3", "tip", translation(0.4, 0, 0))
    return b.build()


def test_virtual_revolute_joint_drives_tip_on_a_circle():
    """A virtual link of radius 0.3 turning about a virtual pin at (1.0, 0.5): closing it onto the arm's
    tip (position) and operating the virtual joint moves the tip along that circle."""
    m = planar3()
    centre, radius = np.array([1.0, 0.5, 0.0]), 0.3
    mv = add_virtual_link(m, "vlink", Joint.revolute("vpin", translation(*centre)),
                          frames={"vtip": translation(radius, 0, 0)})
    assert virtual_bodies(mv) == ["vlink"] and "vpin" in mv.coordinate_names
    assert m.coordinate_names == ("j1", "j2", "j3")           # the original is untouched
    va = VirtualArticulation(mv, [LoopClosure("vtip", "tip", mask=(1, 1, 1, 0, 0, 0))],
                             {"j1": 0.5, "j2": -0.8, "j3": 0.6})
    assert va.settle(timeout=BUDGET).success
    assert va.virtual_coordinates() == ["vpin"]
    for alpha in np.linspace(0, 2 * math.pi, 13):
        r = va.operate(vpin=alpha, timeout=BUDGET)
        assert r.success, (alpha, r)
        assert r.q[mv.coordinate_index("vpin")] == pytest.approx(alpha)
        tip = forward_kinematics(mv, r.q).position("tip")
        np.testing.assert_allclose(tip, centre + radius * np.array([math.cos(alpha), math.sin(alpha), 0]),
                                   atol=1e-6)
        # the real arm alone, at the real joint values, puts its tip at the same place
        q_real = va.real_configuration(m)
        np.testing.assert_allclose(forward_kinematics(m, q_real).position("tip"), tip, atol=1e-12)
    back = remove_virtual(mv)
    assert back.coordinate_names == m.coordinate_names and virtual_bodies(back) == []
    np.testing.assert_allclose(forward_kinematics(back, q_real).pose("tip"),
                               forward_kinematics(m, q_real).pose("tip"))


def test_virtual_tilt_axis_on_a_redundant_arm():
    """MSim's ATHLETE example in miniature: a virtual revolute joint whose axis passes through the Panda's
    flange holds the flange pose; operating it tilts the flange about that axis and keeps its origin."""
    m = panda()
    q0 = np.array([0.2, -0.3, 0.1, -2.0, 0.1, 1.9, 0.7])
    T0 = forward_kinematics(m, q0).pose("flange")
    axis_frame = T0 @ rot_y(math.pi / 2)                        # virtual joint axis = flange x axis
    mv = add_virtual_link(m, "tilt", Joint.revolute("tilt", axis_frame),
                          frames={"handle": rot_y(-math.pi / 2)})
    va = VirtualArticulation(mv, [LoopClosure("handle", "flange")], q0)
    assert va.settle(timeout=BUDGET).success
    for angle in (0.1, 0.25, -0.2):
        r = va.operate(tilt=angle, timeout=BUDGET)
        assert r.success
        T = forward_kinematics(mv, r.q).pose("flange")
        np.testing.assert_allclose(T[:3, 3], T0[:3, 3], atol=1e-6)              # origin stays
        np.testing.assert_allclose(T[:3, :3], T0[:3, :3] @ rot_x(angle)[:3, :3], atol=1e-5)
        assert m.within_limits(va.real_configuration(m))


def test_virtual_link_on_a_named_frame_and_errors():
    m = planar3()
    mv = add_virtual_link(m, "probe", Joint.prismatic("slide", axis=(1, 0, 0), lower=0, upper=1), parent="tip")
    q = mv.configuration({"j1": 0.3, "slide": 0.25})
    tip = forward_kinematics(m, real_coordinates(mv, m, q)).pose("tip")
    np.testing.assert_allclose(forward_kinematics(mv, q).position("probe"), (tip @ [0.25, 0, 0, 1.0])[:3],
                               atol=1e-12)
    with pytest.raises(ModelStructureError):
        remove_virtual(mv, ["l1"])
    with pytest.raises(ModelStructureError):
        VirtualArticulation(m)
    two = add_virtual_link(mv, "second", Joint.revolute("v2"))
    assert virtual_bodies(two) == ["probe", "second"]
    one = remove_virtual(two, ["second"])
    assert virtual_bodies(one) == ["probe"]
