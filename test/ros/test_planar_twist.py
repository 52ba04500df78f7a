"""``conversions.planar_twist``: the one ``cmd_vel`` check of the locomotor and legged nodes, on real
``geometry_msgs/Twist`` messages (the generated classes the transports use)."""

import math

import pytest
from hypothesis import given, settings, strategies as st

from mechanism_model_ros.conversions import BadMessage, TwistRejected, planar_twist
from mechanism_model_ros.transports.typegen import message_class

Twist = message_class("geometry_msgs/msg/Twist")
Vector3 = message_class("geometry_msgs/msg/Vector3")


def twist(vx=0.0, vy=0.0, vz=0.0, wx=0.0, wy=0.0, wz=0.0):
    return Twist(linear=Vector3(x=vx, y=vy, z=vz), angular=Vector3(x=wx, y=wy, z=wz))


def test_a_planar_twist_comes_back_in_order():
    assert planar_twist(twist(0.3, -0.2, wz=0.5, wy=-0.1), 1.0, 2.0) == (0.3, -0.2, 0.5, -0.1)


@pytest.mark.parametrize("field", ["vx", "vy", "vz", "wx", "wy", "wz"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_any_non_finite_component_is_refused(field, bad):
    with pytest.raises(TwistRejected) as e:
        planar_twist(twist(**{field: bad}), 1.0, 2.0)
    assert e.value.key == "cmd_nan" and isinstance(e.value, BadMessage)


def test_the_limits_are_the_planar_speed_and_the_yaw_rate():
    assert planar_twist(twist(0.6, 0.8), 1.0, 2.0)[:2] == (0.6, 0.8)          # |v| = 1.0: at the limit
    with pytest.raises(TwistRejected, match="max_linear_speed 1.0") as e:
        planar_twist(twist(0.6, 0.81), 1.0, 2.0)                             # |v| > 1 though each < 1
    assert e.value.key == "cmd_range"
    with pytest.raises(TwistRejected):
        planar_twist(twist(wz=-2.01), 1.0, 2.0)
    # angular.y counts only for a node that turns in place from it
    assert planar_twist(twist(wy=3.0), 1.0, 2.0)[3] == 3.0
    with pytest.raises(TwistRejected):
        planar_twist(twist(wy=3.0), 1.0, 2.0, angular_y=True)


finite = st.floats(-10, 10, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(finite, finite, finite, finite)
def test_accepted_exactly_within_the_limits(vx, vy, wz, wy):
    ok = math.hypot(vx, vy) <= 1.5 and max(abs(wz), abs(wy)) <= 0.7
    try:
        out = planar_twist(twist(vx, vy, wz=wz, wy=wy), 1.5, 0.7, angular_y=True)
    except TwistRejected:
        assert not ok
    else:
        assert ok and out == (vx, vy, wz, wy)
