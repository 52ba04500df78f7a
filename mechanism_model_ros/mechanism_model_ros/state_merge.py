"""What the state publisher publishes and when: joint_states inputs merged into one state, published newest
first, never older after newer. Plain bookkeeping (no ROS, no clock of its own: times are passed in).

* :meth:`StateMerger.add` merges one input (the joints it reported, its stamp, its arrival time). Inputs
  naming the same joints are one source (an arm controller, a wheel controller, a gripper); each source keeps
  its own newest stamp, last arrival and usual interval, so every joint keeps its own stamp
  (:meth:`StateMerger.joint_stamps`) and a joint whose every source has gone silent is told apart
  (:meth:`StateMerger.silent`).
* :meth:`StateMerger.take` is called when the publisher wakes and has merged whatever was queued: one
  :class:`Publication` of the merged state, stamped with the newest stamp merged, counting the inputs it
  covers. A stamp that is not newer than the last published one is held back (its values wait for the next
  newer stamp): ``/tf`` stamps never go backwards, so tf2 never files an older state after a newer one.
* :meth:`StateMerger.placeholder` re-publishes the current state (the home pose until joint states arrive,
  then the last one) for late joiners, stamped "now" but never before the last stamp.
* A placeholder is stamped on the node's clock. Inputs stamped a little older (in flight when it went out:
  start-up) are held until a newer one arrives; inputs stamped more than ``clock_tolerance`` older come from
  another clock (a simulation, a log replay, hand-made stamps) and would be held for ever, so the first of
  them is published, counted in :attr:`StateMerger.clock_steps` (the caller warns): the one step back
  allowed, from the node's clock to the source's.

Stamps are ``(sec, nanosec)`` tuples (normalized: ``0 <= nanosec < 1e9``); arrival times are seconds of a
steady clock.
"""

from __future__ import annotations

from dataclasses import dataclass

Stamp = tuple  # (sec, nanosec)

#: a joint is silent once not reported for max(silence_timeout, SILENT_PERIODS x its usual period)
SILENT_PERIODS = 5.0
#: weight of the newest interval in a joint's usual period (exponential average)
PERIOD_WEIGHT = 0.1
#: most sources kept (a publisher whose joint set changes from message to message makes a new source each
#: time); beyond it the one heard longest ago is forgotten, so memory stays bounded
MAX_SOURCES = 64


def stamp_ns(stamp: Stamp) -> int:
    return int(stamp[0]) * 1_000_000_000 + int(stamp[1])


def ns_stamp(ns: int) -> Stamp:
    return ns // 1_000_000_000, ns % 1_000_000_000


@dataclass(frozen=True)
class Publication:
    """One state to publish: its ``stamp``, how many inputs it ``merged`` since the previous publication, and
    whether it is a ``placeholder`` (the current state re-published for late joiners, no new input)."""
    stamp: Stamp
    merged: int
    placeholder: bool = False


class StateMerger:
    """Merges joint-state inputs and chooses each publication's stamp (see the module doc).

    ``clock_tolerance``: seconds an input may be stamped before a placeholder and still count as in flight
    on the same clock (held until a newer one), rather than as another clock (published once, counted).
    """

    def __init__(self, clock_tolerance: float = 1.0):
        self.clock_tolerance_ns = int(clock_tolerance * 1e9)
        #: per source (the tuple of joint names an input reported): [its newest stamp (ns), its latest arrival
        #: time (s), its usual interval (s, None until a second input)]
        self.sources: dict[tuple, list] = {}
        self.pending = 0                        # inputs merged since the last publication
        self._newest: int | None = None         # newest stamp among them (ns)
        self.last: Stamp | None = None          # stamp of the last publication
        self.last_was_placeholder = False
        # counters
        self.inputs = 0
        self.publications = 0
        self.placeholders = 0
        self.held = 0               # wake-ups whose newest stamp was not newer than the last publication
        self.clock_steps = 0        # inputs from another clock published after a placeholder (see module doc)
        self.max_merged = 0         # most inputs one publication covered

    # ------------------------------------------------------------------ inputs
    def add(self, joints: tuple, stamp: Stamp, arrival: float) -> None:
        """Merge one input: ``joints`` (the tuple of names it reported: its source), its ``stamp``, its
        ``arrival`` time (s). Bookkeeping is per source, so an input costs the same for 3 joints or 30."""
        self.inputs += 1
        self.pending += 1
        s = int(stamp[0]) * 1_000_000_000 + int(stamp[1])
        if self._newest is None or s > self._newest:
            self._newest = s
        src = self.sources.get(joints)
        if src is None:
            if len(self.sources) >= MAX_SOURCES:
                del self.sources[min(self.sources, key=lambda k: self.sources[k][1])]
            self.sources[joints] = [s, arrival, None]
            return
        dt = max(0.0, arrival - src[1])
        src[2] = dt if src[2] is None else (1 - PERIOD_WEIGHT) * src[2] + PERIOD_WEIGHT * dt
        src[1] = arrival
        if s > src[0]:
            src[0] = s

    def joint_stamps(self) -> dict[str, Stamp]:
        """Each reported joint's own stamp: the newest of the inputs that named it."""
        out: dict[str, int] = {}
        for names, (s, _, _) in self.sources.items():
            for j in names:
                if out.get(j, -1) < s:
                    out[j] = s
        return {j: ns_stamp(s) for j, s in out.items()}

    @property
    def has_inputs(self) -> bool:
        return self.inputs > 0

    # ------------------------------------------------------------------ publications
    def take(self) -> Publication | None:
        """The publication for everything merged since the last one, or None: nothing new, or its newest stamp
        is not newer than the last publication's (held: the values go out with the next newer stamp)."""
        if not self.pending:
            return None
        s = self._newest
        if self.last is not None and s <= stamp_ns(self.last):
            behind = stamp_ns(self.last) - s
            if not (self.last_was_placeholder and behind > self.clock_tolerance_ns):
                self.held += 1
                return None
            self.clock_steps += 1
        pub = Publication(ns_stamp(s), self.pending)
        self.max_merged = max(self.max_merged, self.pending)
        self._published(pub)
        return pub

    def placeholder(self, now: Stamp) -> Publication:
        """The current state again, stamped ``now`` or, if the last stamp is not older, just after it."""
        s = stamp_ns(now)
        if self.last is not None and s <= stamp_ns(self.last):
            s = stamp_ns(self.last) + 1
        pub = Publication(ns_stamp(s), self.pending, placeholder=True)
        self.placeholders += 1
        self._published(pub)
        return pub

    def _published(self, pub: Publication) -> None:
        self.publications += 1
        self.pending = 0
        self._newest = None
        self.last = pub.stamp
        self.last_was_placeholder = pub.placeholder

    # ------------------------------------------------------------------ silence
    def silent(self, now: float, timeout: float) -> dict[str, float]:
        """``{joint: seconds since it was last reported}`` of every reported joint whose every source is silent
        at steady time ``now``: not heard for max(``timeout``, :data:`SILENT_PERIODS` x its usual interval)."""
        fresh, age = set(), {}
        for names, (_, t, p) in self.sources.items():
            a = now - t
            limit = timeout if p is None else max(timeout, SILENT_PERIODS * p)
            if a <= limit:
                fresh.update(names)
                continue
            for j in names:
                age[j] = min(a, age.get(j, a))
        return {j: a for j, a in age.items() if j not in fresh}


__all__ = ["Publication", "StateMerger", "stamp_ns", "ns_stamp"]
