"""A fake clock for "the first solve is not billed for its caches" tests (issue 20): every reading of the IK
modules' ``time.perf_counter`` advances 1 us, and every build of a per-chain cache (the chain, the LM's
constants, the eaik closed form) advances it by a whole second. A 5 ms budget then holds only if the solve
does not count the builds against it."""

from mechanism_model_core import kinematics
from mechanism_model_core.ik import batch
from mechanism_model_core.ik.closed_form import eaik_solver

#: the caches whose construction "takes" a second
SLOW_BUILDS = (batch._ChainConstants, kinematics.FrameChain, eaik_solver.EAIKSolver)


def install(monkeypatch) -> set:
    """Install the fake clock (through ``monkeypatch``); returns the set that collects the names of the
    classes built while it runs."""
    clock = [1000.0]

    def now():
        clock[0] += 1e-6
        return clock[0]

    monkeypatch.setattr(batch.time, "perf_counter", now)          # the time module, for every reader
    slow = set()
    for cls in SLOW_BUILDS:
        orig = cls.__init__

        def wrapped(self, *a, _orig=orig, **k):
            clock[0] += 1.0
            slow.add(type(self).__name__)
            return _orig(self, *a, **k)

        monkeypatch.setattr(cls, "__init__", wrapped)
    return slow
