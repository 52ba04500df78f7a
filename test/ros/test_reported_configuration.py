"""``ReportedConfiguration`` (the state publisher's per-update conversion of the joint-state cache's values to
full coordinates) gives exactly what ``configuration_from`` gives -- couplings for joints not reported, a
reported coupled joint kept as reported -- whichever joints each call reports and in whatever order, and the
same errors for what the cache would never hold."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path

from mechanism_model_ros.conversions import BadMessage, ReportedConfiguration, configuration_from

pytestmark = pytest.mark.ros

ROVER = load_model(model_path("rocky8/rocky8_rover.xml"))      # right_rocker = -left_rocker
FIDO = load_model(model_path("fido/fido_rover.xml"))


@pytest.mark.parametrize("mech", [ROVER, FIDO], ids=["rocky8", "fido"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_equals_configuration_from_over_changing_joint_sets(mech, data):
    conv = ReportedConfiguration(mech)
    names = list(mech.coordinate_names)
    assert mech.couplings
    for _ in range(4):          # successive calls with other sets and orders of joints (the index cache)
        chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        values = {n: data.draw(st.floats(-3, 3, allow_nan=False)) for n in chosen}
        for _ in range(2):
            got = conv(values)
            np.testing.assert_array_equal(got, configuration_from(mech, values))
            got[:] = 99.0       # a fresh array each call: the caller may keep or change it


def test_what_the_cache_never_holds_is_refused_as_configuration_from_refuses_it():
    conv = ReportedConfiguration(ROVER)
    conv({"left_rocker": 0.1})
    for bad in ({"left_rocker": math.nan}, {"left_rocker": math.inf}, {"no_such_joint": 0.0},
                {"left_rocker": "0.1"}):
        with pytest.raises(BadMessage):
            configuration_from(ROVER, bad)
        with pytest.raises(BadMessage):
            conv(bad)
    np.testing.assert_array_equal(conv({"left_rocker": 0.2}), configuration_from(ROVER, {"left_rocker": 0.2}))
