"""``solve_ik(cancel=...)`` (issue 19 item 13, the core side): a set event ends the solve at its next
iteration, for every solver path a server uses; an unset one changes nothing."""

import threading

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint, load_model, solve_ik
from mechanism_model_core.library import default_model_path

ROVER = load_model(default_model_path())
ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
LOCKED = [c for c in ROVER.independent_coordinates if c not in ARM]


@pytest.mark.parametrize("solver", ["auto", "dls", "scipy"])
def test_a_set_cancel_ends_an_unreachable_solve_at_once(solver):
    T = np.eye(4)
    T[:3, 3] = [50.0, 0.0, 0.0]                 # out of the arm's reach: without cancel, all iterations
    c = PoseConstraint("arm_tool", T)
    full = solve_ik(ROVER, c, timeout=60.0, locked=LOCKED, solver=solver, max_iterations=3000)
    assert not full.success and full.iterations > 500, (full.reason, full.iterations)
    cancel = threading.Event()
    cancel.set()
    r = solve_ik(ROVER, c, timeout=60.0, locked=LOCKED, solver=solver, max_iterations=3000, cancel=cancel)
    assert not r.success and r.iterations < 50, (r.reason, r.iterations)


def test_an_unset_cancel_changes_nothing():
    from mechanism_model_core import forward_kinematics
    q = ROVER.configuration({"arm_shoulder": 0.4, "arm_elbow": -1.0})
    T = forward_kinematics(ROVER, q).pose("arm_tool")
    a = solve_ik(ROVER, PoseConstraint("arm_tool", T), locked=LOCKED)
    b = solve_ik(ROVER, PoseConstraint("arm_tool", T), locked=LOCKED, cancel=threading.Event())
    assert a.success and b.success
    np.testing.assert_array_equal(a.q, b.q)
    assert a.iterations == b.iterations


def test_the_collision_avoiding_search_stops_too():
    pytest.importorskip("coal")
    T = np.eye(4)
    T[:3, 3] = [50.0, 0.0, 0.0]
    cancel = threading.Event()
    cancel.set()
    r = solve_ik(ROVER, PoseConstraint("arm_tool", T), timeout=60.0, locked=LOCKED, avoid_collisions=True,
                 cancel=cancel)
    assert not r.success and r.iterations < 50
