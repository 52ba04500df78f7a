"""An in-memory transport for fast unit tests of node logic: no DDS, no threads, no network.

Nodes on one :class:`MemoryBus` see each other's topics and services. Messages are the Cyclone transport's
classes, generated from the real ROS definitions (:mod:`mechanism_model_ros.typegen`; needs ``cyclonedds``
and ``rosbags``), and every message and request crosses the bus serialized to plain CDR and back, so a
node cannot share a mutable object with its peer and a field the wire cannot carry fails here as it
would over DDS.

Delivery is synchronous: ``publish`` runs the subscribers' callbacks before it returns and ``call`` runs
the service handler in the caller's thread. Transient-local topics keep their last ``depth`` messages for
late subscribers; a volatile topic's messages reach only the subscriptions that exist when published.
Callbacks are guarded as on the other transports (an exception is logged, never raised into the
publisher).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from typing import Any, Callable

from ..qos import QoS
from ..typegen import message_class, service_wire_class
from .base import (SERVICE_CONCURRENCY, SERVICE_QUEUE, Client, Publisher, ServiceGate, Transport, TransportError,
                   _set_arrival, busy_or_fallback, guarded, resolve_name)


def _copy(msg):
    """``msg`` through plain CDR and back (what crossing DDS does)."""
    return type(msg).deserialize(msg.serialize(use_version_2=False))


class MemoryBus:
    """One in-memory "domain": topics with their subscriptions and latched messages, and services."""

    def __init__(self):
        self._lock = threading.RLock()
        self.subscriptions: dict[str, list] = defaultdict(list)
        self.latched: dict[str, deque] = {}
        self.services: dict[str, Any] = {}
        self.published: dict[str, int] = defaultdict(int)

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

    def unsubscribe(self, topic: str, sub) -> None:
        with self._lock:
            if sub in self.subscriptions[topic]:
                self.subscriptions[topic].remove(sub)


class _Subscription:
    def __init__(self, topic: str, qos: QoS, callback):
        self.topic = topic
        self.qos = qos
        self.callback = callback
        self.received = 0

    def deliver(self, msg) -> None:
        self.received += 1
        self.callback(_copy(msg))


class _MemoryPublisher(Publisher):
    def __init__(self, bus: MemoryBus, topic: str, qos: QoS):
        self.bus, self.topic, self.qos = bus, topic, qos

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

    def wait_for_service(self, timeout: float = 10.0) -> bool:
        return self.name in self.bus.services

    def call(self, request, timeout: float = 10.0):
        service = self.bus.services.get(self.name)
        if service is None:
            raise TimeoutError(f"no service {self.name}")
        service.calls += 1
        return _copy(service.serve(_copy(request)))


class MemoryNode(Transport):
    """A node on a :class:`MemoryBus` (a new private bus when none is given)."""

    def __init__(self, node_name: str, namespace: str = "/", parameters: dict | None = None,
                 bus: MemoryBus | None = None):
        self.node_name = node_name
        self.namespace = namespace if namespace.startswith("/") else "/" + namespace
        self.parameters = dict(parameters or {})
        self.bus = bus if bus is not None else MemoryBus()
        self._subs: list[_Subscription] = []
        self._services: list[str] = []
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

    def create_subscription(self, topic: str, ros_type: str, qos: QoS, callback: Callable[[Any], None]):
        message_class(ros_type)
        sub = _Subscription(self._name(topic), qos, guarded(callback, self.get_logger(), f"subscription {topic}"))
        self._subs.append(sub)
        self.bus.subscribe(sub.topic, sub)
        return sub

    def create_service(self, name: str, srv_type: str, handler, *, concurrency: int = SERVICE_CONCURRENCY,
                       queue: int = SERVICE_QUEUE, busy=None):
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
        self._subs, self._services = [], []


__all__ = ["MemoryBus", "MemoryNode"]
