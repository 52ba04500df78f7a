"""Joint values by name (issue 14.10, 14.11): misspelled names get "did you mean", a coupled joint given alone
is solved for the joint it follows (and says so), a value that contradicts its coupling is an error naming the
coupling. Expected values come from the couplings written in the model files (Rocky 8: right_rocker =
-left_rocker), not from the code under test."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mechanism_model_core import (InvalidConfiguration, Joint, MechanismBuilder, UnknownJoint, forward_kinematics,
                                  load_model)
from mechanism_model_core.library import model_path
from mechanism_model_core.named_values import CouplingSolved
from mechanism_model_core.spatial import translation


@pytest.fixture(scope="module")
def rocky8():
    return load_model(model_path("rocky8/rocky8_rover.xml"))


def test_a_misspelled_joint_is_an_unknown_joint_with_did_you_mean(rocky8):
    with pytest.raises(UnknownJoint, match=r"unknown joint coordinate 'arm_elbw' \(did you mean 'arm_elbow'"):
        rocky8.configuration({"arm_elbw": 0.3})
    with pytest.raises(InvalidConfiguration):           # still the configuration family, for old callers
        rocky8.configuration({"arm_elbw": 0.3})
    with pytest.raises(UnknownJoint, match="did you mean"):
        forward_kinematics(rocky8, {"mast_tlt": 0.1})


def test_the_dependent_side_of_a_linear_coupling_alone_is_solved_and_said(rocky8):
    with pytest.warns(CouplingSolved, match=r"right_rocker = 0\.3 given: left_rocker = -0\.3 from the "
                                            r"coupling right_rocker = -left_rocker"):
        q = rocky8.configuration({"right_rocker": 0.3})
    assert q[rocky8.coordinate_index("left_rocker")] == pytest.approx(-0.3, abs=1e-15)
    assert q[rocky8.coordinate_index("right_rocker")] == pytest.approx(0.3, abs=1e-15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q_left = rocky8.configuration({"left_rocker": -0.3})
    np.testing.assert_allclose(q, q_left, atol=1e-15)


def test_a_value_contradicting_its_coupling_is_an_error_naming_it(rocky8):
    with pytest.raises(InvalidConfiguration, match=r"right_rocker = 0\.3 contradicts the coupling "
                                                   r"right_rocker = -left_rocker"):
        rocky8.configuration({"left_rocker": 0.1, "right_rocker": 0.3})
    # both sides given and consistent is fine
    q = rocky8.configuration({"left_rocker": 0.1, "right_rocker": -0.1})
    assert q[rocky8.coordinate_index("right_rocker")] == pytest.approx(-0.1)
    # measured joint states keep what was reported (robot_state_publisher's rule)
    q = rocky8.configuration({"left_rocker": 0.1, "right_rocker": 0.3}, measured=True)
    assert q[rocky8.coordinate_index("right_rocker")] == 0.3


def coupled_chain():
    """j2 = 2*j1 + 0.1 (affine), j3 = j2 - 0.05 (a chain of couplings), j4 = sin(j1) (not affine),
    j5 = j1 + j0 (two joints)."""
    b = MechanismBuilder("coupled")
    b.add_body("l0", None, Joint.revolute("j0"))
    b.add_body("l1", "l0", Joint.revolute("j1", translation(1, 0, 0)))
    b.add_body("l2", "l1", Joint.revolute("j2", translation(1, 0, 0), coupling="2*j1 + 0.1"))
    b.add_body("l3", "l2", Joint.revolute("j3", translation(1, 0, 0), coupling="j2 - 0.05"))
    b.add_body("l4", "l3", Joint.revolute("j4", translation(1, 0, 0), coupling="sin(j1)"))
    b.add_body("l5", "l4", Joint.revolute("j5", translation(1, 0, 0), coupling="j1 + j0"))
    return b.build()


def test_chains_of_affine_couplings_are_solved_through():
    m = coupled_chain()
    with pytest.warns(CouplingSolved) as record:
        q = m.configuration({"j3": 0.45})
    # j2 = 0.5, j1 = 0.2
    assert q[m.coordinate_index("j1")] == pytest.approx(0.2, abs=1e-14)
    assert q[m.coordinate_index("j4")] == pytest.approx(math.sin(0.2), abs=1e-14)
    assert len(record) == 2


def test_a_coupling_that_cannot_be_solved_names_itself():
    m = coupled_chain()
    with pytest.raises(InvalidConfiguration, match=r"j4 is coupled \(j4 = sin\(j1\)\), which is not affine"):
        m.configuration({"j4": 0.1})
    with pytest.raises(InvalidConfiguration, match=r"j5 is coupled \(j5 = j1 \+ j0\) and cannot alone give j0, "
                                                   r"j1"):
        m.configuration({"j5": 0.1})
    with pytest.warns(CouplingSolved, match="j0 = 0.3"):
        q = m.configuration({"j5": 0.5, "j1": 0.2})
    assert q[m.coordinate_index("j0")] == pytest.approx(0.3)
