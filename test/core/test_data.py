"""The one home of derived data (``mechanism_model_core.data``, issue 23): the kinematics plan and the statics
caches live in one :class:`Data` per mechanism, built once (also when threads race for it), shared, and
dropped with the mechanism."""

import gc
import threading
import weakref

import numpy as np

from mechanism_model_core import forward_kinematics
from mechanism_model_core.data import BY_ID, data_of, derived
from mechanism_model_core.kinematics import kinematics_plan
from mechanism_model_core.statics import gravity_torques
from mechanism_model_core.statics.mass import mass_model

from .robots import planar_arm


def test_derived_data_lives_in_one_place_and_goes_with_the_mechanism():
    m = planar_arm((0.5, 0.4, 0.3))
    forward_kinematics(m, np.zeros(m.nq))
    gravity_torques(m, np.zeros(m.nq))
    d = BY_ID[id(m)]
    assert d is data_of(m) and d.kinematics is kinematics_plan(m)
    assert d.get("statics.mass_model", lambda: None) is mass_model(m)
    assert len(d) >= 3                                    # kinematics, mass model, gravity plan
    ref, key = weakref.ref(m), id(m)
    del m, d
    gc.collect()
    assert ref() is None and key not in BY_ID           # nothing keeps the mechanism alive; its data went


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


def test_mechanisms_do_not_share_data():
    a, b = planar_arm((0.5, 0.4)), planar_arm((0.5, 0.4))
    assert derived(a, "test.k", lambda m: [m.name]) is not derived(b, "test.k", lambda m: [m.name])
    assert kinematics_plan(a) is not kinematics_plan(b)
