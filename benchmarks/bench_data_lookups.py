"""The cost of one look-up of derived data (issue 23): the module-level weak maps the caches used before
session 7 against the slots of the mechanism's ``Data`` that replaced them, in one process, CPU time.

    python benchmarks/bench_data_lookups.py

Rows: a memo (a map by a key that is not the mechanism's alone: IK's problem structures, lane engines,
specialized and eaik solvers, looked up once per solve) and a value (IK's angle coordinates, statics' plans).
Best of 7 runs of 200,000 look-ups each, nanoseconds per look-up.
"""

from __future__ import annotations

import os
import time
import timeit
import weakref

import numpy as np

from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_core.data import data_of, derived, memo


def main() -> None:
    b = MechanismBuilder("arm")
    b.add_body("l1", None, Joint.revolute("j1", np.eye(4)))
    m = b.build()
    key = ("frame", b"limits")
    old_memo = weakref.WeakKeyDictionary({m: {key: 1}})
    old_value = weakref.WeakKeyDictionary({m: np.zeros(1)})
    memo(m, "bench.memo").put(key, 1)
    derived(m, "bench.value", lambda _: np.zeros(1))
    rows = {
        "memo: weak map, then dict (before)": lambda: old_memo.get(m).get(key),
        "memo: data.memo(m, k).peek(key) (after)": lambda: memo(m, "bench.memo").peek(key),
        "memo: data_of(m).memo(k).get(key, build)": lambda: data_of(m).memo("bench.memo").get(key, lambda: 1),
        "value: weak map (before)": lambda: old_value.get(m),
        "value: data.derived(m, k, build) (after)": lambda: derived(m, "bench.value", None),
    }
    print(f"load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, f in rows.items():
        t = min(timeit.repeat(f, number=200_000, repeat=7, timer=time.process_time)) / 200_000
        print(f"{name:45s} {t * 1e9:6.0f} ns")


if __name__ == "__main__":
    main()
