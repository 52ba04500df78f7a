"""The one home of derived data (``mechanism_model_core.data``, issue 23): what kinematics, statics, collision
and IK derive from a mechanism (or an environment, an obstacle, a collision model) lives in one :class:`Data`
per owner, built once (also when threads race for it), shared, per thread where it must be, and dropped with
its owner -- also when a slot refers back to the owner (a collision model holds its mechanism, a specialized
solver its mechanism)."""

import copy
import gc
import pickle
import threading
import weakref

import numpy as np
import pytest

from mechanism_model_core import PoseConstraint, forward_kinematics, load_model
from mechanism_model_core.data import ATTR, Memo, data_of, derived, work
from mechanism_model_core.ik import solve_ik
from mechanism_model_core.ik.registry import register_specialized, unregister_specialized
from mechanism_model_core.kinematics import kinematics_plan
from mechanism_model_core.library import model_path
from mechanism_model_core.statics import gravity_torques
from mechanism_model_core.statics.mass import mass_model

from .optional_deps import require
from .robots import panda, planar_arm


def _collected(make_and_use):
    """True when the owner ``make_and_use()`` returns (after using it) is garbage once dropped."""
    ref = weakref.ref(make_and_use())
    gc.collect()
    return ref() is None


def test_derived_data_lives_in_one_place_and_goes_with_the_mechanism():
    m = planar_arm((0.5, 0.4, 0.3))
    forward_kinematics(m, np.zeros(m.nq))
    gravity_torques(m, np.zeros(m.nq))
    d = data_of(m)
    assert getattr(m, ATTR) is d and d.kinematics is kinematics_plan(m)
    assert d.get("statics.mass_model", lambda: None) is mass_model(m)
    assert len(d) >= 3                                    # kinematics, mass model, gravity plan
    ref, dref = weakref.ref(m), weakref.ref(d)
    del m, d
    gc.collect()
    assert ref() is None and dref() is None              # nothing keeps the mechanism alive; its data went


def test_kinematics_statics_and_ik_data_go_with_the_mechanism():
    """Every IK cache (angle coordinates, coupling forms, chain constants, lane engines, a specialized solver
    whose factory keeps the mechanism) is a slot of the mechanism's data, and none keeps it alive."""
    def use():
        m = panda()
        q = np.full(m.nq, 0.3)
        forward_kinematics(m, np.tile(q, (5, 1)))
        gravity_torques(m, q)
        target = forward_kinematics(m, q).pose("link7")
        res = solve_ik(m, PoseConstraint("link7", target), q + 0.1, solver="lm", timeout=60)
        assert res.success
        d = data_of(m)
        for key in ("ik.angle_coordinates", "ik.coupling_linear_forms", "ik.chain_constants", "ik.lane_engines",
                    "ik.problem_structures"):
            assert key in d, key
        return m
    assert _collected(use)

    class Holds:                      # a specialized solver that keeps its mechanism (as user factories may)
        def __init__(self, m):
            self.m = m

        def accepts(self, problem):
            return False

    register_specialized("panda", "link7", Holds)
    try:
        def use_specialized():
            m = panda()
            q = np.full(m.nq, 0.2)
            solve_ik(m, PoseConstraint("link7", forward_kinematics(m, q).pose("link7")), q, timeout=60)
            assert "ik.specialized" in data_of(m)
            return m
        assert _collected(use_specialized)
    finally:
        unregister_specialized("panda", "link7")


def test_collision_data_goes_with_its_owners_and_threads():
    """The collision model (which holds its mechanism), its per-thread collision data, and the per-thread coal
    data of an environment and of its obstacles go with their owners; a thread's go with the thread."""
    require("coal", "collision")
    from mechanism_model_core.collision import Environment, Obstacle, in_collision
    from mechanism_model_core.collision.model import collision_data, collision_model
    from mechanism_model_core.collision.scene import _environment_data

    path = model_path("rocky8/rocky8_rover.xml")

    def use():
        m = load_model(path)
        env = Environment([Obstacle.ground_plane(height=-0.02)])
        in_collision(m, m.home, environment=env)
        assert "collision.model" in data_of(m) and "collision.data" in data_of(collision_model(m))
        assert "collision.environment_data" in data_of(env)
        assert "collision.obstacle_coal" in data_of(env.obstacles[0])
        return m
    assert _collected(use)

    m = load_model(path)
    env = Environment([Obstacle.ground_plane(height=-0.02)])
    cm = collision_model(m)
    mine = (collision_data(cm), _environment_data(env))
    assert collision_data(cm) is mine[0] and _environment_data(env) is mine[1]
    theirs = []
    worker = threading.Thread(target=lambda: theirs.append(
        (weakref.ref(collision_data(cm)), weakref.ref(_environment_data(env)))))
    worker.start()
    worker.join(30)
    gc.collect()
    assert theirs and all(r() is None for r in theirs[0]), "a finished thread's collision data is still alive"
    assert collision_data(cm) is mine[0]


def test_a_slot_is_built_once_when_threads_race():
    m = planar_arm((0.5, 0.4))
    calls = []
    start = threading.Barrier(8)

    def build(mech):
        calls.append(1)
        return object()

    out = []

    def worker():
        start.wait()
        out.append(derived(m, "test.race", build))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(out) == 8 and all(o is out[0] for o in out)


def test_per_thread_slots_are_each_threads_own():
    m = planar_arm((0.5, 0.4))
    d = data_of(m)
    here = d.per_thread("test.scratch", lambda: [threading.get_ident()])
    assert d.per_thread("test.scratch", lambda: None) is here and here == [threading.get_ident()]
    there = []
    t = threading.Thread(target=lambda: there.append(d.per_thread("test.scratch", lambda: None)))
    t.start()
    t.join(10)
    assert there and there[0] is not here and there[0] == [t.ident]     # built by the first build function


def test_a_memo_keeps_one_value_per_key_and_stays_bounded():
    d = data_of(planar_arm((0.5,)))
    memo = d.memo("test.memo", max_entries=4)
    assert isinstance(memo, Memo) and d.memo("test.memo") is memo
    first = memo.get("a", lambda: ["a"])
    assert memo.get("a", lambda: ["other"]) is first and memo.put("a", ["other"]) is first
    for k in range(10):
        memo.get(k, lambda: k)
        assert len(memo) <= 4


def test_mechanisms_do_not_share_data():
    a, b = planar_arm((0.5, 0.4)), planar_arm((0.5, 0.4))
    assert derived(a, "test.k", lambda m: [m.name]) is not derived(b, "test.k", lambda m: [m.name])
    assert kinematics_plan(a) is not kinematics_plan(b)


def test_an_owner_pickles_without_its_data():
    """A mechanism sent to another process (reach maps), or deep-copied, goes without its derived data (locks
    and per-thread values do not pickle) and builds its own there, with the same answers."""
    m = panda()
    q = np.full(m.nq, 0.4)
    fk = forward_kinematics(m, q).pose("link7")
    gravity_torques(m, q)
    assert len(data_of(m)) >= 2
    for m2 in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):
        assert getattr(m2, ATTR) is not data_of(m) and len(data_of(m2)) == 0
        np.testing.assert_array_equal(forward_kinematics(m2, q).pose("link7"), fk)


def test_work_arrays_are_per_thread_and_large_ones_are_not_kept():
    a = work("test.a", (3, 4))
    assert work("test.a", (3, 4)) is a and work("test.a", (4, 3)) is not a
    other = []
    t = threading.Thread(target=lambda: other.append(work("test.a", (4, 3))))
    t.start()
    t.join(10)
    assert other and other[0] is not work("test.a", (4, 3))
    big = (5 << 20,)                                      # 40 MB: above the kept size
    assert work("test.big", big) is not work("test.big", big)


def test_data_of_is_the_owners_attribute():
    m = planar_arm((0.5,))
    assert getattr(m, ATTR, None) is None
    d = data_of(m)
    assert getattr(m, ATTR) is d and data_of(m) is d


def test_functions_take_the_mechanisms_data_explicitly():
    """Kinematics, statics and collision functions take ``data=data_of(m)`` (Pinocchio's style) with the same
    answers as without; the Data of another mechanism, or a Data of none, is refused (its plans would give
    wrong answers silently)."""
    from mechanism_model_core import jacobian
    from mechanism_model_core.data import Data
    from mechanism_model_core.kinematics import batch_segment_components, joint_transforms, single_pass_output
    from mechanism_model_core.statics import center_of_mass, contact_loads, static_torques, wheel_contacts

    m, other = panda(), panda()
    rover = load_model(model_path("rocky8/rocky8_rover.xml"))      # has masses
    Q, Qr = m.random_configuration(3, size=5), rover.random_configuration(4, size=5)
    assert "model.attainable_dependents" in data_of(rover)      # the sampler's probe of coupled limits
    q, qr = Q[0], Qr[0]
    contacts = wheel_contacts(rover)
    calls = {
        "fk batch": (m, lambda **k: forward_kinematics(m, Q, **k).pose("link7")),
        "fk": (m, lambda **k: forward_kinematics(m, q, **k).frame_array()),
        "jacobian batch": (m, lambda **k: jacobian(m, Q, "link7", **k)),
        "jacobian WORLD": (m, lambda **k: jacobian(m, q, "link7", convention="WORLD", **k)),
        "segment components": (m, lambda **k: batch_segment_components(m, Q, **k)),
        "pass output": (m, lambda **k: single_pass_output(m, q, **k)),
        "joint transforms": (m, lambda **k: joint_transforms(m, Q, **k)),
        "gravity": (rover, lambda **k: gravity_torques(rover, qr, **k)),
        "gravity batch": (rover, lambda **k: gravity_torques(rover, Qr, **k)),
        "static torques": (rover, lambda **k: static_torques(rover, qr, **k)),
        "centre of mass": (rover, lambda **k: center_of_mass(rover, Qr, **k)),
        "contact loads": (rover, lambda **k: contact_loads(rover, rover.home, contacts, **k).forces),
    }
    for name, (mech, f) in calls.items():
        np.testing.assert_array_equal(f(data=data_of(mech)), f(), err_msg=name)
        for wrong in (data_of(other), Data()):
            with pytest.raises(ValueError, match="not the Data of"):
                f(data=wrong)


def test_collision_queries_take_the_mechanisms_data_explicitly():
    require("coal", "collision")
    from mechanism_model_core.collision import Environment, Obstacle, collisions, distance, in_collision, \
        minimum_distance
    from mechanism_model_core.collision.model import collision_model

    rover = load_model(model_path("rocky8/rocky8_rover.xml"))
    d = data_of(rover)
    env = Environment([Obstacle.ground_plane(height=-0.02)])
    Q = rover.random_configuration(5, size=8)
    assert list(in_collision(rover, Q, environment=env, data=d)) == list(in_collision(rover, Q, environment=env))
    assert d.get("collision.model", lambda: None) is collision_model(rover, data=d) is collision_model(rover)
    a = minimum_distance(rover, Q[0], data=d)
    b = minimum_distance(rover, Q[0])
    assert (a.distance, a.body_a, a.body_b) == (b.distance, b.body_a, b.body_b)
    assert len(collisions(rover, Q[0], data=d)) == len(collisions(rover, Q[0]))
    bodies = collision_model(rover).bodies
    assert distance(rover, Q[0], bodies[0], bodies[-1], data=d).distance == \
        distance(rover, Q[0], bodies[0], bodies[-1]).distance
    for f in (lambda: in_collision(rover, Q[0], data=data_of(panda())),
              lambda: minimum_distance(collision_model(rover), Q[0], data=data_of(panda()))):
        with pytest.raises(ValueError, match="not the Data of"):
            f()
