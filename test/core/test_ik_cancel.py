"""``solve_ik(cancel=...)`` (issue 19 item 13, the core side): a set event ends the solve at its next
iteration, for every solver path a server uses; an unset one changes nothing."""

import threading

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint, forward_kinematics, load_model, solve_ik
from mechanism_model_core.library import default_model_path
from mechanism_model_core.spatial import rot_x, rot_y
from .robots import SAFETY

ROVER = load_model(default_model_path())
ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]
LOCKED = [c for c in ROVER.independent_coordinates if c not in ARM]


@pytest.mark.parametrize("solver", ["auto", "dls", "scipy"])
def test_a_set_cancel_ends_an_unreachable_solve_at_once(solver):
    # within the arm's reach sphere (a target beyond it is reported at once from the seed: the reach bound from
    # the locked chassis) but in an orientation the five joints cannot take: without cancel, all iterations
    T = forward_kinematics(ROVER, ROVER.home).pose("arm_tool") @ rot_x(1.3) @ rot_y(0.7)
    c = PoseConstraint("arm_tool", T)
    full = solve_ik(ROVER, c, timeout=60.0, locked=LOCKED, solver=solver, max_iterations=3000)
    assert not full.success and full.iterations > 500, (full.reason, full.iterations)
    cancel = threading.Event()
    cancel.set()
    r = solve_ik(ROVER, c, timeout=60.0, locked=LOCKED, solver=solver, max_iterations=3000, cancel=cancel)
    assert not r.success and r.iterations < 50, (r.reason, r.iterations)


def test_an_unset_cancel_changes_nothing():
    q = ROVER.configuration({"arm_shoulder": 0.4, "arm_elbow": -1.0})
    T = forward_kinematics(ROVER, q).pose("arm_tool")
    a = solve_ik(ROVER, PoseConstraint("arm_tool", T), locked=LOCKED, timeout=SAFETY)
    b = solve_ik(ROVER, PoseConstraint("arm_tool", T), locked=LOCKED, timeout=SAFETY, cancel=threading.Event())
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


def _count_seed_tables(monkeypatch, on_build=None):
    """The list of seed tables the lane engines build from now on; ``on_build()`` is called at each build."""
    from mechanism_model_core.ik import batch

    built = []
    original = batch.LaneEngine.seed_table

    def counting(self):
        if self._seeds is None:
            built.append(self)
            if on_build is not None:
                on_build()
        return original(self)

    monkeypatch.setattr(batch.LaneEngine, "seed_table", counting)
    return built


def test_thousands_of_copies_of_one_constraint_build_one_seed_table(monkeypatch):
    """A request repeating one pose constraint built a seed table per copy on the first restart, about 6 ms
    each -- 12 s unbilled for 2000 copies, which neither the timeout nor a cancel could end. Repeats now count
    once, and at most START_TASKS distinct tasks get tables. (A fresh model: lane engines, and their tables,
    are kept per mechanism and shared by the problems of one shape.)"""
    from mechanism_model_core.ik.batch import START_TASKS

    rover = load_model(default_model_path())
    built = _count_seed_tables(monkeypatch)
    T = np.eye(4)
    T[:3, 3] = [50.0, 0.0, 0.0]
    r = solve_ik(rover, [PoseConstraint("arm_tool", T, relative_to="chassis")] * 300, timeout=60.0,
                 locked=LOCKED, max_iterations=40)
    assert not r.success
    assert len(built) == 1, len(built)
    built.clear()
    many = _distinct_unreachable(8)
    r = solve_ik(rover, many, timeout=60.0, locked=LOCKED, max_iterations=40)
    assert not r.success
    assert len(built) == START_TASKS, len(built)


def test_a_cancel_set_while_seed_tables_are_built_stops_the_building(monkeypatch):
    """The client leaves while the first restart builds its seed tables: no further table is built (each
    is about 6 ms, none billed to the timeout), and the solve ends."""
    cancel = threading.Event()
    built = _count_seed_tables(monkeypatch, on_build=cancel.set)
    r = solve_ik(load_model(default_model_path()), _distinct_unreachable(8), timeout=60.0, locked=LOCKED,
                 max_iterations=100000, cancel=cancel)
    assert not r.success
    assert len(built) == 1, len(built)


def _distinct_unreachable(n: int) -> list:
    """``n`` pose constraints of the arm tool at distinct targets out of reach, in the chassis frame, each of
    another shape (its yaw row weighted differently: an engine, and a seed table, of its own)."""
    out = []
    for k in range(n):
        T = np.eye(4)
        T[:3, 3] = [50.0, 0.1 * k, 0.0]
        out.append(PoseConstraint("arm_tool", T, relative_to="chassis", mask=(1, 1, 1, 1, 1, 1.1 + 0.1 * k)))
    return out
