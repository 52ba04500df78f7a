"""One joint-state cache per process: one ``joint_states`` subscription whose latest value of every joint
coordinate all nodes read, and whose updates nodes may follow (the state publisher publishes /tf on each).

A message is parsed once (:func:`~.conversions.joint_state_positions`): mismatched lengths or repeated
names drop it; unknown names are ignored; a non-finite position leaves that joint at its last value (the
message's other joints apply, as joint_state_broadcaster sends NaN for a joint without a position
interface); a message whose known joints are all non-finite is dropped. Each case is counted and warned
about (rate-limited). Listeners run on the subscription's thread, in arrival order, after the values are
stored: ``listener(update)`` with :class:`JointStateUpdate`; a listener's ``on_drained()`` runs once the
messages queued at a wake-up have all been delivered (:meth:`~.transports.base.Transport.create_subscription`),
so a node that needs only the newest state (the state publisher) acts once per backlog, not per message.

Freshness is per joint: :meth:`JointStateCache.stalest` gives the joint of a set heard longest ago (the
transport's monotonic clock), so that a motor group's watchdog asks whether *its* joints are reported, not
whether any joint_states message arrived (another publisher naming other joints must not keep wheels
driving).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Callable

from . import qos
from .conversions import BadMessage, joint_state_positions, normalized_stamp
from .transports.base import RateLimitedLogger, Subscription, Transport


#: depth of the ``joint_states`` subscription's queue: 0.5 s of a 2 kHz source. The queue is one for every
#: publisher of the topic (JointState has no key), so when it overflows during a stall the oldest samples go,
#: whichever source sent them: at depth 100 (50 ms of a 2 kHz arm controller) a stall on a loaded machine lost a
#: 50 Hz source's last message and its joints kept an older value for good (the ordering test over rclpy:
#: 3,503 of 6,953 inputs lost, the steering off by 0.0096 m). Samples are queued only during a backlog, which a
#: wake-up then merges at once.
QUEUE_DEPTH = 1000

#: default ``joint_states_max_bytes``: 512 KiB, a JointState of about 8,000 joints (names, positions,
#: velocities, efforts); the flood of issue 19 sent 1.5 MB messages
MAX_BYTES = 512 * 1024


@dataclass(frozen=True)
class JointStateUpdate:
    """One accepted joint-state message: the values it gave (finite, known joints only), a snapshot of all
    latest values, its header stamp ``(sec, nanosec)`` (None when zero: "now") and the message."""
    values: dict
    latest: dict
    stamp: tuple | None
    msg: object


class JointStateCache:
    """Latest joint positions of ``mechanism`` from ``joint_states`` on ``transport``.

    ``reliable``: subscribe reliable instead of best-effort (robot_state_publisher's SensorDataQoS, which also
    hears reliable publishers); depth :data:`QUEUE_DEPTH` either way.
    """

    def __init__(self, transport: Transport, mechanism, reliable: bool = False, topic: str = "joint_states"):
        self.mechanism = mechanism
        self.transport = transport
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        self._coords = set(mechanism.coordinate_names)
        self._latest: dict[str, float] = {}
        self._heard: dict[str, float] = {}          # joint -> transport.monotonic() of its last finite value
        #: the names of the last message that passed every check with all names known (unique, all finite):
        #: a message naming the same joints needs only its positions checked (controllers repeat their names)
        self._clean_names: list | None = None
        self._lock = threading.Lock()
        self._listeners: list[Callable[[JointStateUpdate], None]] = []
        self._drained: list[Callable[[], None]] = []
        self.messages_in = 0
        self.messages_rejected = 0
        self.bad_stamps = 0
        #: longest serialized joint state accepted (bytes; parameter ``joint_states_max_bytes``): longer ones
        #: are dropped unread by the transport, so a flood of huge messages cannot delay the watchdogs
        self.max_bytes = int(transport.get_parameter("joint_states_max_bytes", MAX_BYTES))
        if self.max_bytes <= 0:
            raise ValueError(f"parameter joint_states_max_bytes must be positive, got {self.max_bytes}")
        self.sub: Subscription = transport.create_subscription(
            topic, "sensor_msgs/msg/JointState",
            qos.DEFAULT.with_depth(QUEUE_DEPTH) if reliable else qos.SENSOR_DATA.with_depth(QUEUE_DEPTH),
            self.on_message,
            on_drained=self.on_drained, max_bytes=self.max_bytes)

    def add_listener(self, listener: Callable[[JointStateUpdate], None],
                     on_drained: Callable[[], None] | None = None) -> None:
        """``listener(update)`` for every accepted message (None: none); ``on_drained()`` after each wake-up's
        messages."""
        if listener is not None:
            self._listeners.append(listener)
        if on_drained is not None:
            self._drained.append(on_drained)

    def on_drained(self) -> None:
        """The messages queued at this wake-up have all gone through :meth:`on_message`."""
        for fn in self._drained:
            fn()

    def latest(self) -> dict[str, float]:
        """A copy of the latest value of every joint reported so far."""
        with self._lock:
            return dict(self._latest)

    def stalest(self, names) -> tuple[str | None, float]:
        """``(joint, age)``: of ``names``, the joint whose last finite value is oldest and its age in seconds
        (``inf`` for one never heard); ``(None, 0.0)`` for no names."""
        now = self.transport.monotonic()
        worst, age = None, 0.0
        with self._lock:
            for n in names:
                a = now - self._heard.get(n, -float("inf"))
                if worst is None or a > age:
                    worst, age = n, a
        return worst, age

    def samples_lost(self) -> int:
        """Samples DDS reports lost or rejected on the subscription (the Cyclone transport's
        :attr:`~.transports.base.Subscription.samples_lost`; 0 where the transport cannot tell: rclpy, memory).
        KEEP_LAST overwrites and network losses are not reported by DDS (see transports.cyclone.DropCounter)."""
        fn = self.sub.samples_lost
        return 0 if fn is None else int(fn())

    def samples_dropped(self) -> dict:
        """``samples_lost`` by cause: ``{"lost": n, "rejected": n}`` (empty where unknown)."""
        fn = self.sub.samples_dropped
        return {} if fn is None else dict(fn())

    def on_message(self, msg) -> None:
        self.messages_in += 1
        names, pos = msg.name, msg.position
        if names == self._clean_names and len(pos) == len(names) and _all_finite(pos):
            # the names of the last clean message: known and unique, so only the positions need checking
            values, unknown, nonfinite = dict(zip(names, map(float, pos))), (), ()
        else:
            values, unknown, nonfinite = self._parse(msg)
            if values is None:
                return
            if not unknown and not nonfinite:
                self._clean_names = list(names)
        self._accept(msg, values, unknown, nonfinite)

    def _parse(self, msg):
        """``(values, unknown names, non-finite names)`` of a message (full checks), None values if dropped."""
        try:
            return joint_state_positions(msg, self._coords, skip_nonfinite=True)
        except BadMessage as exc:
            self.messages_rejected += 1
            self.warn.warning("bad-joint-state", f"joint_states message dropped: {exc}")
            return None, (), ()

    def _accept(self, msg, values: dict, unknown, nonfinite) -> None:
        if unknown:
            self.warn.warning("unknown-joint", f"joint_states names joints the model does not have: "
                                               f"{', '.join(sorted(unknown)[:5])} (ignored)")
        if nonfinite:
            self.warn.warning("nonfinite-joint", f"joint_states gives no finite position for "
                                                 f"{', '.join(sorted(nonfinite)[:5])} (these keep their last "
                                                 f"value)")
            if not values:
                self.messages_rejected += 1
                return
        try:
            stamp = normalized_stamp(msg.header.stamp)
        except BadMessage as exc:
            self.messages_rejected += 1
            self.bad_stamps += 1
            self.warn.warning("bad-stamp", f"joint_states message dropped: {exc}")
            return
        now = self.transport.monotonic()
        with self._lock:
            self._latest.update(values)
            self._heard.update(dict.fromkeys(values, now))
            latest = dict(self._latest)
        update = JointStateUpdate(values, latest, stamp, msg)
        for listener in self._listeners:
            listener(update)

    def samples_oversized(self) -> int:
        """Messages dropped unread because they were longer than :attr:`max_bytes` (0 where the transport
        cannot tell: the in-memory one)."""
        fn = self.sub.samples_oversized
        return 0 if fn is None else int(fn())

    def status(self) -> str:
        lost = self.samples_lost()
        big = self.samples_oversized()
        return (f"joint_states in: {self.messages_in} (rejected {self.messages_rejected}"
                + (f", lost by DDS {lost}" if lost else "") + (f", oversized {big}" if big else "") + ")")


def _all_finite(values) -> bool:
    """True when every value is a finite number (their sum is finite unless one is not, or the sum overflows:
    then False, and the caller's full check decides)."""
    try:
        return math.isfinite(sum(values))
    except (TypeError, ValueError, OverflowError):
        return False


class MergedJointStates:
    """Several ``sensor_msgs/JointState`` topics read as one source, with the interface of
    :class:`JointStateCache` that the nodes use (``latest``, ``stalest``, ``add_listener``, ``on_message``,
    counters, ``status``): a rover stack that reports its joints on topics of its own (the Open Source Rover's
    ``/corner_state`` and ``/drive_state``) feeds the state publisher and the locomotor without a bridge.
    ``latest()`` holds each joint's value from the topic that reported it last; listeners hear every topic's
    updates (each carrying the merged latest values)."""

    def __init__(self, transport: Transport, mechanism, topics, reliable: bool = False):
        topics = [str(t) for t in topics]
        if not topics or len(set(topics)) != len(topics) or not all(topics):
            raise ValueError(f"joint-state topics must be distinct, non-empty names, got {topics}")
        self.transport = transport
        self.topics = topics
        self.caches = [JointStateCache(transport, mechanism, reliable=reliable, topic=t) for t in topics]

    def latest(self) -> dict[str, float]:
        out, when = {}, {}
        for c in self.caches:
            with c._lock:
                for n, v in c._latest.items():
                    t = c._heard.get(n, -float("inf"))
                    if n not in out or t >= when[n]:
                        out[n], when[n] = v, t
        return out

    def stalest(self, names) -> tuple[str | None, float]:
        """As :meth:`JointStateCache.stalest`, a joint's age from whichever topic reported it last."""
        worst, age = None, 0.0
        for n in names:
            a = min(c.stalest([n])[1] for c in self.caches)
            if worst is None or a > age:
                worst, age = n, a
        return worst, age

    def add_listener(self, listener, on_drained=None, topics=None) -> None:
        """``listener(update)`` for every accepted message of ``topics`` (default: all; ``update.latest`` is
        the merged state), ``on_drained()`` after each wake-up of any of them."""
        def merged(u):
            listener(JointStateUpdate(u.values, self.latest(), u.stamp, u.msg))
        for t, c in zip(self.topics, self.caches):
            c.add_listener(merged if topics is None or t in topics else None, on_drained)

    def on_message(self, msg) -> None:
        """A message given by hand goes to the first topic's cache (tests, in-process feeding)."""
        self.caches[0].on_message(msg)

    def on_drained(self) -> None:
        self.caches[0].on_drained()

    @property
    def messages_in(self) -> int:
        return sum(c.messages_in for c in self.caches)

    @property
    def messages_rejected(self) -> int:
        return sum(c.messages_rejected for c in self.caches)

    def samples_lost(self) -> int:
        return sum(c.samples_lost() for c in self.caches)

    def status(self) -> str:
        return "; ".join(f"{t}: {c.status()}" for t, c in zip(self.topics, self.caches))


__all__ = ["JointStateCache", "JointStateUpdate", "MergedJointStates", "MAX_BYTES"]
