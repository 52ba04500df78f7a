"""An in-memory transport for fast unit tests of node logic: no DDS, no network.

Nodes on one :class:`MemoryBus` see each other's topics, services and actions. Messages are the Cyclone transport's
classes, generated from the real ROS definitions (:mod:`mechanism_model_ros.transports.typegen`; needs ``cyclonedds``
and ``rosbags``), and every message and request crosses the bus serialized to plain CDR and back, so a
node cannot share a mutable object with its peer and a field the wire cannot carry fails here as it
would over DDS.

Delivery is synchronous: ``publish`` runs the subscribers' callbacks before it returns and ``call`` runs
the service handler in the caller's thread. Transient-local topics keep their last ``depth`` messages for
late subscribers; a volatile topic's messages reach only the subscriptions that exist when published.
Callbacks are guarded as on the other transports (an exception is logged, never raised into the
publisher). The bus's timer callbacks never overlap one another; a subscription callback runs in the
publisher's thread, so a node publishing from a thread of its own may see it run beside a timer callback (a
node's own lock covers that, as on rclpy with several threads).

Time: ``MemoryBus()`` runs on the real steady clock, its timers on one scheduler thread, which ends when no
timer is left: :meth:`MemoryBus.close` cancels every timer and joins it (a node's ``close()`` cancels its own
timers, and closes the bus it made when given none).
``MemoryBus(manual_clock=True)`` has a clock that only :meth:`MemoryBus.advance` moves: timers fire inside
``advance``, in time order, so a test of a watchdog runs in microseconds and is exact (no sleeps, nothing
depends on the machine's load). Nodes read the clock with :meth:`Transport.monotonic`.

Actions are rcl_action's protocol (:mod:`.rcl_action`) over this bus's services and topics, as on Cyclone;
an action server's execute callback runs on a thread of its own.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import threading
import time
from collections import defaultdict, deque
from typing import Any, Callable

from ..qos import QoS
from .typegen import message_class, service_wire_class
from .base import (SERVICE_CONCURRENCY, SERVICE_QUEUE, CallbackTimer, Client, Publisher, ServiceGate, Timer,
                   Subscription, Transport, TransportError, _set_arrival, busy_or_fallback, check_period, guarded,
                   resolve_name)
from .rcl_action import ActionsOverServices


def _copy(msg):
    """``msg`` through plain CDR and back (what crossing DDS does)."""
    return type(msg).deserialize(msg.serialize(use_version_2=False))


class MemoryBus:
    """One in-memory "domain": topics with their subscriptions, publishers and latched messages, services,
    and a clock with its timers (``manual_clock``: see the module docstring)."""

    def __init__(self, manual_clock: bool = False):
        self._lock = threading.RLock()
        self.subscriptions: dict[str, list] = defaultdict(list)
        self.publishers: dict[str, int] = defaultdict(int)
        self.latched: dict[str, deque] = {}
        self.services: dict[str, Any] = {}
        self.published: dict[str, int] = defaultdict(int)
        #: held while a timer callback runs: the bus's timers never overlap
        self.callbacks = threading.RLock()
        self.manual_clock = bool(manual_clock)
        self._now = 0.0
        self._timers: list = []                   # heap of (due, sequence, timer)
        self._seq = itertools.count()
        self._wake = threading.Condition()
        self._scheduler: threading.Thread | None = None

    # -- topics
    def publish(self, topic: str, msg, qos: QoS) -> None:
        with self._lock:
            subs = list(self.subscriptions[topic])
            if qos.transient_local:
                self.latched.setdefault(topic, deque(maxlen=max(1, qos.depth))).append(msg)
            self.published[topic] += 1
        for sub in subs:
            sub.deliver(msg)

    def subscribe(self, topic: str, sub) -> None:
        with self._lock:
            self.subscriptions[topic].append(sub)
            backlog = list(self.latched.get(topic, ())) if sub.qos.transient_local else []
        for msg in backlog:
            sub.deliver(msg)

    # -- clock and timers
    def monotonic(self) -> float:
        """The bus's steady time in seconds (the manual clock's reading, else ``time.monotonic()``)."""
        return self._now if self.manual_clock else time.monotonic()

    def advance(self, seconds: float) -> None:
        """Move the manual clock ``seconds`` forward, firing every timer that falls due on the way, in time
        order (a timer due several times fires several times; each call is at its due time)."""
        if not self.manual_clock:
            raise TransportError("advance() needs MemoryBus(manual_clock=True)")
        if not seconds >= 0:
            raise TransportError(f"advance() takes a non-negative time, got {seconds!r}")
        end = self._now + float(seconds)
        while True:
            timer = self._pop_due(end)
            if timer is None:
                break
            self._fire(timer)
        self._now = max(self._now, end)

    def add_timer(self, timer: "CallbackTimer") -> None:
        timer.due = self.monotonic() + timer.period
        with self._wake:
            heapq.heappush(self._timers, (timer.due, next(self._seq), timer))
            if not self.manual_clock and self._scheduler is None:
                self._scheduler = threading.Thread(target=self._run_timers, daemon=True, name="mm-memory-timers")
                self._scheduler.start()
            self._wake.notify()

    def _pop_due(self, until: float):
        """The next live timer due at or before ``until`` (the manual clock set to its time), else None."""
        with self._wake:
            while self._timers:
                due, _, timer = self._timers[0]
                if timer.is_canceled:
                    heapq.heappop(self._timers)
                    continue
                if due > until:
                    return None
                heapq.heappop(self._timers)
                if self.manual_clock:
                    self._now = max(self._now, due)
                return timer
            return None

    def _fire(self, timer: "CallbackTimer") -> None:
        with self.callbacks:
            timer.fire()
        if timer.is_canceled:
            return
        with self._wake:
            nxt = timer.due + timer.period             # the manual clock: every due call, in order
            if not self.manual_clock and nxt < time.monotonic():
                nxt = time.monotonic() + timer.period  # late on the real clock: no catch-up (as rclpy)
            timer.due = nxt
            heapq.heappush(self._timers, (nxt, next(self._seq), timer))

    def close(self, timeout: float = 5.0) -> bool:
        """Cancel every timer on the bus and end its scheduler thread, waiting for it at most ``timeout`` s (a
        timer callback running meanwhile finishes first); True when no scheduler thread is left. Topics and
        services keep working; a timer created afterwards starts a scheduler again."""
        with self._wake:
            for _, _, timer in self._timers:
                timer.cancel()
            self._timers.clear()
            scheduler = self._scheduler
            self._wake.notify_all()
        if scheduler is None or scheduler is threading.current_thread():
            return scheduler is None
        scheduler.join(timeout)
        return not scheduler.is_alive()

    def timers_cancelled(self) -> None:
        """Wake the scheduler after timers were cancelled, so that it ends at once when none is left."""
        with self._wake:
            self._wake.notify_all()

    def _run_timers(self) -> None:
        """The real clock's scheduler thread; it ends when no timer is left (:meth:`close`)."""
        while True:
            timer = self._pop_due(time.monotonic())
            if timer is not None:
                self._fire(timer)
                continue
            with self._wake:
                if not self._timers:
                    self._scheduler = None
                    return
                self._wake.wait(min(max(self._timers[0][0] - time.monotonic(), 0.0), 1.0))

    def unsubscribe(self, topic: str, sub) -> None:
        with self._lock:
            if sub in self.subscriptions[topic]:
                self.subscriptions[topic].remove(sub)


class _Subscription:
    def __init__(self, bus: MemoryBus, topic: str, qos: QoS, callback, on_drained=None):
        self.bus = bus
        self.topic = topic
        self.qos = qos
        self.callback = callback
        self.on_drained = on_drained
        self.received = 0

    def deliver(self, msg) -> None:
        self.received += 1
        self.callback(_copy(msg))
        if self.on_drained is not None:     # delivered synchronously: every message is its own wake-up
            self.on_drained()

    def get_matched_publications(self) -> list:
        """The publishers of this topic on the bus (one entry each), as DDS readers report them."""
        return [None] * self.bus.publishers[self.topic]


class _MemoryPublisher(Publisher):
    def __init__(self, bus: MemoryBus, topic: str, qos: QoS):
        self.bus, self.topic, self.qos = bus, topic, qos
        bus.publishers[topic] += 1

    def publish(self, msg) -> None:
        self.bus.publish(self.topic, _copy(msg), self.qos)

    @property
    def subscription_count(self) -> int:
        return len(self.bus.subscriptions[self.topic])


class _MemoryService:
    def __init__(self, name: str, req_cls, rep_cls, handler, gate: ServiceGate, busy):
        self.name, self.req_cls, self.rep_cls, self.handler = name, req_cls, rep_cls, handler
        self.gate, self.busy = gate, busy
        self.calls = 0

    def serve(self, request):
        arrival = time.monotonic()
        response = self.rep_cls()
        if not self.gate.try_enter():
            return busy_or_fallback(self.busy, request, response)
        try:
            with self.gate.slots:
                _set_arrival(arrival)
                try:
                    return self.handler(request, response)
                finally:
                    _set_arrival(None)
        finally:
            self.gate.leave()


class _MemoryClient(Client):
    def __init__(self, bus: MemoryBus, name: str, srv_type: str):
        self.bus, self.name = bus, name
        self.req_cls = service_wire_class(srv_type + "_Request")

    def request(self):
        return self.req_cls()

    def service_is_ready(self) -> bool:
        return self.name in self.bus.services

    def wait_for_service(self, timeout: float = 10.0) -> bool:
        return self.service_is_ready()

    def call_async(self, request) -> concurrent.futures.Future:
        """The handler runs now, in this thread; the future is done when it returns, or, for a deferred
        reply (the handler returned a future, as an action's get_result does), when that completes."""
        out: concurrent.futures.Future = concurrent.futures.Future()
        service = self.bus.services.get(self.name)
        if service is None:
            out.set_exception(TimeoutError(f"no service {self.name}"))
            return out
        service.calls += 1
        reply = service.serve(_copy(request))
        if isinstance(reply, concurrent.futures.Future):
            def done(f):
                if f.exception() is not None:
                    out.set_exception(f.exception())
                else:
                    out.set_result(_copy(f.result()))
            reply.add_done_callback(done)
        else:
            out.set_result(_copy(reply))
        return out

    def call(self, request, timeout: float = 10.0):
        try:
            return self.call_async(request).result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"no reply from service {self.name} within {timeout} s") from None


class MemoryNode(ActionsOverServices, Transport):
    """A node on a :class:`MemoryBus` (a new private bus when none is given)."""

    def __init__(self, node_name: str, namespace: str = "/", parameters: dict | None = None,
                 bus: MemoryBus | None = None):
        self.node_name = node_name
        self.namespace = namespace if namespace.startswith("/") else "/" + namespace
        self.parameters = dict(parameters or {})
        self.bus = bus if bus is not None else MemoryBus()
        self._own_bus = bus is None               # closed with the node
        self._subs: list[_Subscription] = []
        self._services: list[str] = []
        self._timers: list[CallbackTimer] = []
        self._sec_nsec = None

    def _name(self, name: str) -> str:
        return resolve_name(name, self.namespace, self.node_name)

    def message_class(self, ros_type: str) -> type:
        return message_class(ros_type)

    def service_classes(self, srv_type: str):
        return service_wire_class(srv_type + "_Request"), service_wire_class(srv_type + "_Response")

    def create_publisher(self, topic: str, ros_type: str, qos: QoS) -> _MemoryPublisher:
        message_class(ros_type)             # an unknown type fails here, as on the other transports
        return _MemoryPublisher(self.bus, self._name(topic), qos)

    def create_subscription(self, topic: str, ros_type: str, qos: QoS, callback: Callable[[Any], None],
                            on_drained: Callable[[], None] | None = None,
                            max_bytes: int | None = None) -> Subscription:
        message_class(ros_type)
        sub = _Subscription(self.bus, self._name(topic), qos,
                            guarded(callback, self.get_logger(), f"subscription {topic}"),
                            guarded(on_drained, self.get_logger(), f"subscription {topic} (drained)")
                            if on_drained else None)
        self._subs.append(sub)
        self.bus.subscribe(sub.topic, sub)
        # no loss counters: nothing is serialized or lost in memory
        return Subscription(topic, ros_type, sub, publisher_count=lambda: len(sub.get_matched_publications()))

    def create_service(self, name: str, srv_type: str, handler, *, concurrency: int = SERVICE_CONCURRENCY,
                       queue: int = SERVICE_QUEUE, busy=None, limits=()):
        """See :meth:`~.base.Transport.create_service` (``limits``: the handler checks them; nothing is
        serialized here)."""
        full = self._name(name)
        if full in self.bus.services:
            raise TransportError(f"service {full} already exists on this bus")
        req_cls, rep_cls = self.service_classes(srv_type)
        svc = _MemoryService(full, req_cls, rep_cls,
                             guarded(handler, self.get_logger(), f"service {full}", fallback=lambda a: a[1]),
                             ServiceGate(concurrency, queue), busy)
        self.bus.services[full] = svc
        self._services.append(full)
        return svc

    def create_client(self, name: str, srv_type: str) -> _MemoryClient:
        return _MemoryClient(self.bus, self._name(name), srv_type)

    def create_timer(self, period, callback, own_thread: bool = False) -> Timer:
        """``own_thread`` is accepted and ignored: the bus's timers run apart from message delivery already."""
        timer = CallbackTimer(check_period(period), guarded(callback, self.get_logger(), "timer"))
        self._timers.append(timer)
        self.bus.add_timer(timer)
        return timer

    def monotonic(self) -> float:
        return self.bus.monotonic()

    def set_time(self, sec: int, nanosec: int = 0) -> None:
        """Freeze this node's clock (None: wall time again)."""
        self._sec_nsec = (int(sec), int(nanosec))

    def now(self):
        return self._sec_nsec if self._sec_nsec is not None else super().now()

    def _parameter_value(self, name: str, default):
        return self.parameters.get(name, default)

    def spin(self, stop: threading.Event | None = None) -> None:
        (stop or threading.Event()).wait()

    def close(self) -> None:
        for sub in self._subs:
            self.bus.unsubscribe(sub.topic, sub)
        for name in self._services:
            self.bus.services.pop(name, None)
        for timer in self._timers:
            timer.cancel()
        self._subs, self._services, self._timers = [], [], []
        if self._own_bus:
            self.bus.close()
        else:
            self.bus.timers_cancelled()


__all__ = ["MemoryBus", "MemoryNode"]
