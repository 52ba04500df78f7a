"""Plain Cyclone DDS (``cyclonedds`` from PyPI) speaking the ROS 2 wire protocol, as rmw_cyclonedds_cpp does.

* Topics: ROS name ``/a/b`` is DDS topic ``rt/a/b``; services ``/s`` use ``rq/sRequest`` and
  ``rr/sReply``. Type names are rosidl's (``sensor_msgs::msg::dds_::JointState_``,
  ``pkg::srv::dds_::Name_Request_`` / ``_Response_``), message classes are generated from the ROS
  definitions (:mod:`mechanism_model_ros.transports.typegen`).
* Every reader and writer is restricted to plain CDR (XCDR1), the only representation rmw_cyclonedds
  accepts.
* QoS: KEEP_LAST depth (or KEEP_ALL), reliability, durability (transient-local with the durability-service
  history set like rmw_cyclonedds), writer auto-dispose off, automatic liveliness.
* Services: each request and reply starts, right after the 4-byte encapsulation, with rmw_cyclonedds'
  16-byte header: the client's 64-bit id (the instance handle of its request writer) and a 64-bit
  sequence number; the server echoes both and a client keeps only replies carrying its own id. Client and
  service endpoints carry ``clientid=<id>;`` / ``serviceid=<id>;`` in their USER_DATA, and a server
  waits (up to 10 s; rmw_cyclonedds: 100 ms, too short on a loaded machine) until it has matched the
  requesting client's reply reader, and warns when it gives up.
* On Iron and later (``ROS_DISTRO``, as for ``ros_discovery_info``), every reader's and writer's USER_DATA
  also carries ``typehash=RIHS01_<hex>;``, the REP-2011 hash of its message type
  (:mod:`mechanism_model_ros.transports.cyclone.type_hash`); on Humble it does not, as there.
* The participant's USER_DATA is ``enclave=/;``; ``ros_discovery_info`` lists the process's nodes and their
  readers and writers (:class:`GraphInfo`), for ``ros2 node list``.
* Discovery settings follow rcl and rmw_cyclonedds (Jazzy): ``ROS_DOMAIN_ID`` (default 0),
  ``ROS_AUTOMATIC_DISCOVERY_RANGE`` (SUBNET default, LOCALHOST, OFF, SYSTEM_DEFAULT; another value: a
  warning and LOCALHOST), ``ROS_STATIC_PEERS`` (``;``-separated), ``ROS_LOCALHOST_ONLY=1`` (deprecated,
  but when set it prevails: LOCALHOST, range and static peers ignored; Humble's only setting), with
  ``CYCLONEDDS_URI`` appended last so the user's configuration wins.

Limit: services interoperate only with ROS 2 peers using rmw_cyclonedds_cpp (other RMWs encode the
request id differently); topics interoperate with every DDS-based ROS 2 setup.

One :class:`CycloneContext` (one DDS participant, like one rclcpp context) serves any number of
:class:`CycloneNode` objects in a process. A dispatcher thread waits on all readers; subscription
callbacks run on it in arrival order, service handlers on a small thread pool.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import struct
import threading
import time
from typing import Any, Callable

from cyclonedds._clayer import ddspy_write
from cyclonedds.core import Listener
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.util import duration

from ...qos import QoS, SERVICES
from ..base import (REOPEN_MATCH_TIMEOUT, SERVICE_CONCURRENCY, SERVICE_QUEUE, CallbackTimer, Client, Publisher,
                   ServiceGate, ThreadTimer, Timer, Transport, TransportError, _set_arrival, _set_cancel,
                   busy_or_fallback, check_period, describe_exception, failure_response, guarded,
                   refusal_response, resolve_name, short_traceback, Subscription)
from ..numeric_template import NumericTemplate
from ..rcl_action import ActionsOverServices
from .cdr_limits import CdrLimits
from ..typegen import HEADER_GUID, HEADER_SEQ, message_class, service_wire_class
from .context import (_ANY, GID_SIZES, CycloneContext, DropCounter, GraphInfo,  # noqa: F401 (re-exported)
                      OversizedSample, RefusedSample, _LISTENERS, _LISTENERS_LOCK, _endpoint_user_data, _reader,
                      _register_fast_reader, _writer, csid_to_string, dds_qos, discovery_config, gid_size,
                      parse_user_data, ros_domain_id, take_valid)


def _write_serialized(writer: DataWriter, data: bytes) -> None:
    ret = ddspy_write(writer._ref, data)
    if ret < 0:
        raise TransportError(f"DDS write failed ({ret})")


class _CyclonePublisher(Publisher):
    """``remake(ctx)``: the same writer on another context's participant (:meth:`rebind`)."""

    def __init__(self, writer: DataWriter, remake: Callable[["CycloneContext"], DataWriter] | None = None):
        self.writer = writer
        self._remake = remake
        self._match_by = None          # after rebind: monotonic time until which a write waits for a reader

    def rebind(self, ctx: "CycloneContext") -> None:
        """Write through a new writer on ``ctx`` from now on (the old participant is gone, see
        :meth:`~.base.Transport.reopen_publishers`)."""
        self.writer = self._remake(ctx)
        self._match_by = time.monotonic() + REOPEN_MATCH_TIMEOUT

    def _await_match(self) -> None:
        if self._match_by is not None:
            while not self.writer.get_matched_subscriptions() and time.monotonic() < self._match_by:
                time.sleep(0.001)
            self._match_by = None

    def publish(self, msg) -> None:
        self._await_match()
        self.writer.write(msg)

    def numeric_template(self, msg, groups: dict) -> NumericTemplate:
        """See :class:`~.numeric_template.NumericTemplate` (an optional transport feature)."""
        def write(data):
            self._await_match()
            _write_serialized(self.writer, data)
        return NumericTemplate(msg, groups, lambda m: m.serialize(use_version_2=False), write, pad4=True)

    @property
    def subscription_count(self) -> int:
        return len(self.writer.get_matched_subscriptions())

    def wait_for_acks(self, timeout: float) -> bool:
        """Block until every matched reliable reader acknowledged what was written, at most ``timeout`` s."""
        return bool(self.writer.wait_for_acks(duration(seconds=max(0.0, float(timeout)))))


def _service_topics(ctx: CycloneContext, name: str, srv_type: str, id_key: str):
    """``(request class, reply class, rq/<name>Request topic, rr/<name>Reply topic, request QoS, reply QoS)``
    of a client (``id_key`` ``clientid``) or service (``serviceid``); both QoS carry a new ``<id_key>=<id>;``
    in their USER_DATA, shared by the endpoint's reader and writer as in rmw_cyclonedds, and on Iron and
    later the type hash of ``<srv_type>_Request`` (request topic) or ``_Response`` (reply topic)."""
    req_cls = service_wire_class(srv_type + "_Request")
    rep_cls = service_wire_class(srv_type + "_Response")
    csid = f"{id_key}={csid_to_string(ctx.new_csid())};".encode()
    req_qos = dds_qos(SERVICES, ctx.endpoint_user_data(srv_type + "_Request", csid))
    rep_qos = dds_qos(SERVICES, ctx.endpoint_user_data(srv_type + "_Response", csid))
    return (req_cls, rep_cls, ctx.topic(f"rq{name}Request", req_cls), ctx.topic(f"rr{name}Reply", rep_cls),
            req_qos, rep_qos)


class _CycloneClient(Client):
    def __init__(self, ctx: CycloneContext, name: str, srv_type: str):
        self.ctx = ctx
        self.name = name
        self.req_cls, self.rep_cls, requests, replies, req_qos, rep_qos = _service_topics(
            ctx, name, srv_type, "clientid")
        self.writer = _writer(ctx.participant, requests, req_qos)
        self.reader = _reader(ctx.participant, replies, rep_qos)
        self.guid = self.writer.get_instance_handle() & 0xFFFFFFFFFFFFFFFF  # uint64 on the wire
        self._seq = itertools.count(1)
        self._pending: dict[int, concurrent.futures.Future] = {}
        self._lock = threading.Lock()
        ctx.add_reader(self.reader, self._on_replies)

    def _on_replies(self, samples):
        for s in samples:
            if getattr(s, HEADER_GUID) != self.guid:
                continue           # a reply to another client
            with self._lock:
                fut = self._pending.pop(getattr(s, HEADER_SEQ), None)
            if fut is not None and not fut.done():
                fut.set_result(s)

    def request(self):
        return self.req_cls()

    def service_is_ready(self) -> bool:
        return bool(self.writer.get_matched_subscriptions()) and bool(
            self.reader.get_matched_publications())

    def wait_for_service(self, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.service_is_ready():
                return True
            time.sleep(0.02)
        return self.service_is_ready()

    def call_async(self, request) -> concurrent.futures.Future:
        seq = next(self._seq)
        setattr(request, HEADER_GUID, self.guid)
        setattr(request, HEADER_SEQ, seq)
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            self._pending[seq] = fut
        self.writer.write(request)
        return fut

    def call(self, request, timeout: float = 10.0):
        fut = self.call_async(request)
        try:
            return fut.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            with self._lock:
                self._pending.pop(getattr(request, HEADER_SEQ), None)
            raise TimeoutError(f"no reply from service {self.name} within {timeout} s (request "
                               f"{getattr(request, HEADER_SEQ)}; the service is "
                               f"{'still' if self.service_is_ready() else 'no longer'} matched)") from None


_U64 = (1 << 64) - 1
#: bytes of rmw_cyclonedds' request header (client guid, sequence number) before a request's fields
_REQUEST_HEADER = 16


class _RequestHeader:
    """What a reply needs of a request that was never decoded: its header and sample info."""

    def __init__(self, guid: int, seq: int, info):
        setattr(self, HEADER_GUID, guid)
        setattr(self, HEADER_SEQ, seq)
        self.sample_info = info


class _CycloneService:
    """A service with its own worker threads (``concurrency``) and admission (:class:`~.base.ServiceGate`):
    a slow service never delays another; a request beyond ``concurrency + queue`` gets ``busy`` at once.
    Every request gets a reply: a handler that raises is logged with its traceback and answered with
    :func:`~.base.failure_response` (``error_code`` FAILURE and the reason in ``message``)."""

    #: longest a reply waits for the requesting client's reply reader to be discovered (s), see :meth:`_reply`
    reply_match_timeout = 10.0
    #: how often the requests being handled are checked for a departed client (s)
    departed_poll = 0.1

    def __init__(self, node: "CycloneNode", name: str, srv_type: str, handler, concurrency: int = SERVICE_CONCURRENCY,
                 queue: int = SERVICE_QUEUE, busy=None, limits=()):
        ctx = node.ctx
        self.ctx = ctx
        self.node = node
        self.name = name
        self.handler = handler
        self.busy = busy
        self.gate = ServiceGate(concurrency, queue)
        self._closed = False
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=concurrency,
                                                          thread_name_prefix=f"mm-srv{name.replace('/', '-')}")
        self.req_cls, self.rep_cls, requests, replies, req_qos, rep_qos = _service_topics(
            ctx, name, srv_type, "serviceid")
        self.reader = _reader(ctx.participant, requests, req_qos)
        self.writer = _writer(ctx.participant, replies, rep_qos)
        #: requests being handled: cancel event -> the request writer's instance handle (see _watch_departed)
        self._inflight: dict = {}
        self._inflight_lock = threading.Lock()
        self._watching = threading.Event()
        self._watcher = None
        #: requests of departed clients: dropped before their handler ran, and cancelled while it ran
        self.departed_dropped = 0
        self.departed_cancelled = 0
        #: requests refused before decoding (over one of ``limits``, or malformed)
        self.refused = 0
        precheck = CdrLimits(srv_type + "_Request", limits, header=_REQUEST_HEADER).check if limits else None
        ctx.add_reader(self.reader, self._on_requests, precheck=precheck,
                       on_refused=self._on_refused if limits else None)

    def _on_refused(self, sample: RefusedSample) -> None:
        """A request its limits refused before decoding: an error reply (:func:`~.base.refusal_response`) to
        the client named in its header, off the dispatcher thread (the reply may wait for the client's
        reader)."""
        data = sample.data
        order = "<" if bytes(data[:2]) == b"\x00\x01" else ">"
        if len(data) < 4 + _REQUEST_HEADER:
            return                      # no header: nobody to answer
        guid, seq = struct.unpack_from(order + "Qq", data, 4)
        self.refused += 1
        request = _RequestHeader(guid, seq, sample.info)
        self.ctx._warn.warning(f"refused:{self.name}", f"service {self.name}: request {seq} refused before "
                                                       f"decoding: {sample.text}")
        self.ctx.pool.submit(self._reply, request, refusal_response(self.rep_cls(), sample.text))

    def _on_requests(self, samples):
        now = time.monotonic()
        for s in samples:
            if self.gate.try_enter():
                self.pool.submit(self._serve, s, now)
            else:   # answered at once, off the dispatcher thread (the reply may wait for the client's reader)
                self.ctx.pool.submit(self._refuse, s)

    def _refuse(self, request):
        self._reply(request, busy_or_fallback(self.busy, request, self.rep_cls()))

    def close(self):
        self._closed = True
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _client_reader_matched(self, request_writer_handle) -> bool | None:
        """True when the requesting client's reply reader is matched, None if the client is gone
        (rmw_cyclonedds' check_for_response_reader)."""
        try:
            ep = self.reader.get_matched_publication_data(request_writer_handle)
        except Exception:
            return None
        if ep is None:
            return None
        clientid = _endpoint_user_data(ep).get("clientid")
        if clientid is None:
            return True
        for h in self.writer.get_matched_subscriptions():
            try:
                rd = self.writer.get_matched_subscription_data(h)
            except Exception:
                continue
            if rd is not None and rd.participant_key == ep.participant_key and \
                    _endpoint_user_data(rd).get("clientid") == clientid:
                return True
        return False

    def _serve(self, request, arrival: float):
        handle = request.sample_info.publication_handle
        cancel = threading.Event()
        try:
            with self.gate.slots:
                if self._client_gone(handle):     # the client left while this request waited
                    self.departed_dropped += 1
                    self.node.get_logger().info("service %s: the client of request %s left before it was "
                                                "served; dropped", self.name, getattr(request, HEADER_SEQ, "?"))
                    return
                self._track(cancel, handle)
                _set_arrival(arrival)
                _set_cancel(cancel)
                try:
                    response = self.handler(request, self.rep_cls())
                    if response is None:
                        raise TransportError("the handler returned None instead of the response")
                except Exception as exc:   # handlers map errors themselves; this is the last line of defence
                    self.node.get_logger().error("service %s: handler raised %s; answering with an error\n%s",
                                                 self.name, describe_exception(exc), short_traceback(exc))
                    response = failure_response(self.rep_cls(), exc, self.name)
                finally:
                    _set_arrival(None)
                    _set_cancel(None)
                    self._untrack(cancel)
        finally:
            self.gate.leave()
        if cancel.is_set():
            self.node.get_logger().info("service %s: the client of request %s left while it was handled; its work "
                                        "was cancelled", self.name, getattr(request, HEADER_SEQ, "?"))
            return
        if isinstance(response, concurrent.futures.Future):
            # a deferred reply (an action's get_result): sent when the handler's future completes
            response.add_done_callback(lambda f: self._reply_deferred(request, f))
            return
        self._reply(request, response)

    def _client_gone(self, request_writer_handle) -> bool:
        """Whether the client's request writer is no longer matched (its node or participant is gone). The
        list of matched handles costs about 2.5 us; the writer's endpoint data (what _client_reader_matched
        reads) about 50 us. Handles compare as unsigned 64-bit (the list may give them signed)."""
        try:
            matched = self.reader.get_matched_publications()
        except Exception:
            return True
        h = int(request_writer_handle) & _U64
        return all((int(m) & _U64) != h for m in matched)

    def _track(self, cancel: threading.Event, handle) -> None:
        with self._inflight_lock:
            self._inflight[cancel] = handle
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch_departed, daemon=True,
                                                 name=f"mm-departed{self.name.replace('/', '-')}")
                self._watcher.start()
            self._watching.set()

    def _untrack(self, cancel: threading.Event) -> None:
        with self._inflight_lock:
            self._inflight.pop(cancel, None)
            if not self._inflight:
                self._watching.clear()

    def _watch_departed(self) -> None:
        """Set the cancel event of every request whose client left (its request writer no longer matched:
        the client's participant or node is gone), every :attr:`departed_poll` s while requests are being
        handled (asleep otherwise). A handler sees it through :func:`~.base.request_cancelled`."""
        while not self._closed:
            if not self._watching.wait(1.0):
                continue
            time.sleep(self.departed_poll)
            with self._inflight_lock:
                items = list(self._inflight.items())
            for cancel, handle in items:
                if not cancel.is_set() and self._client_gone(handle):
                    cancel.set()
                    self.departed_cancelled += 1

    def _reply_deferred(self, request, future: concurrent.futures.Future) -> None:
        exc = None if future.cancelled() else future.exception()
        if future.cancelled() or exc is not None:
            exc = exc or concurrent.futures.CancelledError("the deferred reply was cancelled")
            self.node.get_logger().error("service %s: deferred reply failed: %s; answering with an error",
                                         self.name, describe_exception(exc))
            self._reply(request, failure_response(self.rep_cls(), exc, self.name))
            return
        self._reply(request, future.result())

    def _reply(self, request, response):
        """Send ``response`` once the requesting client's reply reader is matched. The client matched this
        service's endpoints before it wrote (``wait_for_service``), but discovery runs independently in each
        process: the server may learn of the client's reply reader later, and a reply written before that
        match is dropped by DDS (volatile), silently. rmw_cyclonedds waits up to 100 ms, which a loaded
        machine exceeds; this waits up to :attr:`reply_match_timeout` and warns when it gives up."""
        log = self.node.get_logger()
        try:
            setattr(response, HEADER_GUID, getattr(request, HEADER_GUID))
            setattr(response, HEADER_SEQ, getattr(request, HEADER_SEQ))
            handle = request.sample_info.publication_handle
            t0 = time.monotonic()
            ok = self._client_reader_matched(handle)
            while ok is False and not self._closed and time.monotonic() - t0 < self.reply_match_timeout:
                time.sleep(0.01)
                ok = self._client_reader_matched(handle)
            waited = time.monotonic() - t0
            if ok is None:
                log.warning("service %s: the client (request %d) left before its reply; reply dropped",
                            self.name, getattr(request, HEADER_SEQ))
                return
            if ok is False:
                log.warning("service %s: the client's reply reader (client %x, request %d) was not discovered "
                            "within %.1f s; sending the reply anyway (it is lost unless the reader appears)",
                            self.name, getattr(request, HEADER_GUID), getattr(request, HEADER_SEQ), waited)
            elif waited > 0.1:
                log.info("service %s: the client's reply reader was discovered %.2f s after the reply was ready",
                         self.name, waited)
            self.writer.write(response)
        except Exception as exc:    # e.g. a value the wire type cannot hold: answer with an error instead
            log.error("service %s: cannot send reply (request %s): %s; answering with an error", self.name,
                      getattr(request, HEADER_SEQ, "?"), describe_exception(exc))
            try:
                fallback = failure_response(self.rep_cls(), exc, self.name)
                setattr(fallback, HEADER_GUID, getattr(request, HEADER_GUID))
                setattr(fallback, HEADER_SEQ, getattr(request, HEADER_SEQ))
                self.writer.write(fallback)
            except Exception as exc2:
                log.error("service %s: cannot send the error reply either: %s", self.name,
                          describe_exception(exc2))


class CycloneNode(ActionsOverServices, Transport):
    """A ROS node over plain Cyclone DDS.

    ``parameters`` is a ``{name: value}`` mapping (e.g. from a ROS parameter file, see
    :func:`mechanism_model_ros.params.load_parameter_file`).
    """

    def __init__(self, node_name: str, namespace: str = "/", parameters: dict | None = None,
                 context: CycloneContext | None = None):
        self.node_name = node_name
        self.namespace = namespace if namespace.startswith("/") else "/" + namespace
        self.parameters = dict(parameters or {})
        self._own_context = context is None
        self.ctx = context or CycloneContext()
        self._entities: list = []
        self._publishers: list[_CyclonePublisher] = []
        if self.ctx.graph is not None:
            self.ctx.graph.add_node(self.namespace, node_name)

    def _graph(self, kind: str, entity) -> None:
        if self.ctx.graph is not None:
            self.ctx.graph.add_entity(self.namespace, self.node_name, kind, entity)

    # -- names
    def _topic(self, name: str) -> str:
        return "rt" + resolve_name(name, self.namespace, self.node_name)

    def _service(self, name: str) -> str:
        return resolve_name(name, self.namespace, self.node_name)

    # -- interface
    def message_class(self, ros_type: str) -> type:
        return message_class(ros_type)

    def service_classes(self, srv_type: str):
        return service_wire_class(srv_type + "_Request"), service_wire_class(srv_type + "_Response")

    def create_publisher(self, topic: str, ros_type: str, qos: QoS) -> _CyclonePublisher:
        cls = message_class(ros_type)
        name = self._topic(topic)

        def make(ctx: CycloneContext) -> DataWriter:
            return _writer(ctx.participant, ctx.topic(name, cls), dds_qos(qos, ctx.endpoint_user_data(ros_type)))
        w = make(self.ctx)
        self._entities.append(w)
        self._graph("writers", w)
        pub = _CyclonePublisher(w, make)
        self._publishers.append(pub)
        return pub

    def reopen_publishers(self, fresh: CycloneContext) -> int:
        """See :meth:`~.base.Transport.reopen_publishers`: every publisher writes through a new writer on
        ``fresh`` (a new participant on the same domain), announced in its graph information."""
        if fresh.graph is not None:
            fresh.graph.add_node(self.namespace, self.node_name)
        for pub in self._publishers:
            pub.rebind(fresh)
            if fresh.graph is not None:
                fresh.graph.add_entity(self.namespace, self.node_name, "writers", pub.writer)
        self.reopened = True
        return len(self._publishers)

    def create_subscription(self, topic: str, ros_type: str, qos: QoS, callback: Callable[[Any], None],
                            on_drained: Callable[[], None] | None = None,
                            max_bytes: int | None = None) -> Subscription:
        cls = message_class(ros_type)
        _register_fast_reader(ros_type, cls)
        drops = DropCounter()
        with _LISTENERS_LOCK:
            _LISTENERS.append(drops)
        r = _reader(self.ctx.participant, self.ctx.topic(self._topic(topic), cls),
                    dds_qos(qos, self.ctx.endpoint_user_data(ros_type)), drops)
        name = self._topic(topic)

        cb = guarded(callback, self.get_logger(), f"subscription {topic}")
        drained = guarded(on_drained, self.get_logger(), f"subscription {topic} (drained)") if on_drained else None

        def on_samples(samples):
            for s in samples:       # one bad sample must not cost the rest of the batch
                cb(s)
            if drained is not None:
                drained()
        self.ctx.add_reader(r, on_samples, max_bytes=None if max_bytes is None else int(max_bytes))
        self._entities.append(r)
        self._graph("readers", r)
        return Subscription(
            topic, ros_type, r,
            samples_lost=lambda: drops.lost + drops.rejected,       # what DDS reports lost or rejected
            samples_dropped=lambda: {"lost": drops.lost, "rejected": drops.rejected},
            samples_undecodable=lambda: self.ctx.undecodable.get(name, 0),
            samples_oversized=lambda: self.ctx.oversized.get(name, 0),
            publisher_count=lambda: len(r.get_matched_publications()))

    def create_service(self, name: str, srv_type: str, handler, *, concurrency: int = SERVICE_CONCURRENCY,
                       queue: int = SERVICE_QUEUE, busy=None, limits=()):
        """See :meth:`~.base.Transport.create_service`; ``limits`` are checked in the serialized request
        before it is decoded (:mod:`.cdr_limits`), a request over one answered with FAILURE and the
        limit's text."""
        s = _CycloneService(self, self._service(name), srv_type, handler, concurrency, queue, busy, limits)
        self._entities.append(s)
        self._graph("readers", s.reader)
        self._graph("writers", s.writer)
        return s

    def create_client(self, name: str, srv_type: str) -> _CycloneClient:
        c = _CycloneClient(self.ctx, self._service(name), srv_type)
        self._entities.append(c)
        self._graph("writers", c.writer)
        self._graph("readers", c.reader)
        return c

    def create_timer(self, period, callback, own_thread: bool = False) -> Timer:
        if own_thread:           # never behind the dispatcher's message handling
            timer = ThreadTimer(check_period(period), guarded(callback, self.get_logger(), "timer"),
                                name=f"mm-timer-{self.node_name}")
            self._entities.append(timer)
            return timer
        timer = CallbackTimer(check_period(period), guarded(callback, self.get_logger(), "timer"))
        self._entities.append(timer)
        self.ctx.add_timer(timer)
        return timer

    def _parameter_value(self, name: str, default):
        return self.parameters.get(name, default)

    def spin(self, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        while not stop.wait(0.5):
            pass

    def close(self) -> None:
        for e in self._entities:
            if isinstance(e, (CallbackTimer, ThreadTimer)):
                e.cancel()
                continue
            r = getattr(e, "reader", e)
            if isinstance(r, DataReader):
                self.ctx.remove_reader(r)
            if isinstance(e, _CycloneService):
                e.close()
        self._entities = []
        self._publishers = []
        if self.ctx.graph is not None:
            self.ctx.graph.remove_node(self.namespace, self.node_name)
        if self._own_context:
            self.ctx.close()


__all__ = ["CycloneContext", "CycloneNode", "discovery_config", "dds_qos", "ros_domain_id",
           "csid_to_string", "parse_user_data", "Listener"]
