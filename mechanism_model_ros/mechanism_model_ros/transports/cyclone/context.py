"""The Cyclone DDS side of the transport (see the package documentation for the wire protocol): the
discovery settings of rcl and rmw_cyclonedds (:func:`ros_domain_id`, :func:`discovery_config`), QoS
(:func:`dds_qos`), endpoint USER_DATA, the raw readers and writers with their sample checks
(:func:`take_valid`, :class:`DropCounter`), ``ros_discovery_info`` (:class:`GraphInfo`), and
:class:`CycloneContext`: one DDS participant and its dispatcher thread, shared by the nodes of a process.
The package re-exports these names."""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import logging
import os
import struct
import threading
import time
from dataclasses import dataclass
from typing import Callable

from cyclonedds._clayer import ddspy_take
from cyclonedds.core import GuardCondition, InstanceState, Listener, Qos, Policy, ReadCondition, \
    SampleState, ViewState, WaitSet
from cyclonedds.domain import Domain, DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from ...qos import QoS
from ..base import CallbackTimer, RateLimitedLogger, TransportError
from .. import joint_state_cdr
from .type_hash import user_data
from ..typegen import message_class


_RANGES = ("SUBNET", "LOCALHOST", "OFF", "SYSTEM_DEFAULT")


def ros_domain_id(env=None) -> int:
    env = os.environ if env is None else env
    text = env.get("ROS_DOMAIN_ID", "").strip()
    if not text:
        return 0
    try:
        value = int(text)
    except ValueError:
        raise TransportError(f"ROS_DOMAIN_ID must be an integer, got {text!r}") from None
    if not 0 <= value <= 232:
        raise TransportError(f"ROS_DOMAIN_ID must be in 0..232, got {value}")
    return value


def discovery_config(env=None) -> str:
    """The Cyclone configuration rmw_cyclonedds builds from the ROS discovery variables, followed by
    ``CYCLONEDDS_URI`` (Cyclone reads a comma-separated list; later settings override earlier ones)."""
    env = os.environ if env is None else env
    peers = [p.strip() for p in env.get("ROS_STATIC_PEERS", "").split(";") if p.strip()]
    rng = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE", "").strip()
    if env.get("ROS_LOCALHOST_ONLY", "").strip() == "1":
        # rcl (Jazzy): the deprecated variable, when enabled, prevails; range and static peers are ignored
        rng, peers = "LOCALHOST", []
    elif not rng:
        rng = "SUBNET"
    elif rng not in _RANGES:
        import logging
        logging.getLogger("mechanism_model_ros.cyclone").warning(
            "invalid value %r for ROS_AUTOMATIC_DISCOVERY_RANGE (use one of %s), assuming localhost only",
            rng, ", ".join(_RANGES))
        rng = "LOCALHOST"          # as rcl does
    localhost_peer = rng == "LOCALHOST"
    add_peers = rng in ("SUBNET", "LOCALHOST")
    no_multicast = rng in ("LOCALHOST", "OFF")
    config = ""
    if localhost_peer or add_peers or no_multicast:
        config = "<CycloneDDS><Domain>"
        if no_multicast:
            config += "<General><AllowMulticast>false</AllowMulticast></General>"
        if no_multicast and not localhost_peer and not add_peers:
            config += (f"<Discovery><ParticipantIndex>none</ParticipantIndex>"
                       f"<Tag>ros_discovery_off_{os.getpid()}</Tag>")
        else:
            config += ("<Discovery><ParticipantIndex>auto</ParticipantIndex>"
                       "<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>")
        if (add_peers and peers) or localhost_peer:
            config += "<Peers>"
            if localhost_peer:
                config += '<Peer address="localhost"/>'
            for p in peers if add_peers else []:
                if any(c in p for c in '<>"&'):
                    raise TransportError(f"bad ROS_STATIC_PEERS entry {p!r}")
                config += f'<Peer address="{p}"/>'
            config += "</Peers>"
        config += "</Discovery></Domain></CycloneDDS>,"
    config += env.get("CYCLONEDDS_URI", "")
    return config


def dds_qos(qos: QoS, user_data: bytes | None = None) -> Qos:
    """rmw_cyclonedds' mapping of a ROS QoS profile onto DDS QoS (create_readwrite_qos: reliable with an
    infinite max_blocking_time, automatic liveliness with an infinite lease, no deadline or lifespan, no
    autodispose, the durability service history equal to the history), with XCDR1 forced (rmw_cyclonedds
    forces it through its serializer type)."""
    history = Policy.History.KeepAll if qos.keep_all else Policy.History.KeepLast(max(1, qos.depth))
    policies = [
        history,
        Policy.Reliability.Reliable(duration(infinite=True)) if qos.reliable
        else Policy.Reliability.BestEffort,
        Policy.Liveliness.Automatic(duration(infinite=True)),
        Policy.WriterDataLifecycle(autodispose=False),
        Policy.DataRepresentation(use_cdrv0_representation=True),
    ]
    if qos.transient_local:
        policies.append(Policy.Durability.TransientLocal)
        policies.append(Policy.DurabilityService(cleanup_delay=0, history=history,
                                                 max_samples=-1, max_instances=-1,
                                                 max_samples_per_instance=-1))
    else:
        policies.append(Policy.Durability.Volatile)
    if user_data:
        policies.append(Policy.Userdata(user_data))
    return Qos(*policies)


def parse_user_data(data: bytes | None) -> dict[str, str]:
    """``b"clientid=1.2.3;typehash=...;"`` -> ``{"clientid": "1.2.3", ...}`` (rmw_dds_common's format)."""
    out = {}
    if not data:
        return out
    for item in bytes(data).decode("utf-8", "replace").split(";"):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k] = v
    return out


def _endpoint_user_data(ep) -> dict[str, str]:
    if ep is None or ep.qos is None:
        return {}
    ud = ep.qos[Policy.Userdata] if Policy.Userdata in ep.qos else None
    return parse_user_data(ud.data if ud is not None else None)


def csid_to_string(data: bytes) -> str:
    """rmw_cyclonedds' text form of a client/service id: hex bytes joined by '.', the first one
    right-aligned in two characters."""
    return f"{data[0]:2x}" + "".join(f".{b:x}" for b in data[1:])


_domains: dict[int, tuple[Domain, str]] = {}
_domains_lock = threading.Lock()
#: Cyclone's Python binding registers types and creates topics non-atomically; creating entities from
#: several threads at once fails sporadically, so creation is serialized process-wide.
_create_lock = threading.RLock()


def _reader(participant, topic, qos, listener=None):
    with _create_lock:
        return DataReader(participant, topic, qos=qos, listener=listener)


_ANY = SampleState.Any | ViewState.Any | InstanceState.Any


#: message class -> a fast reader of its samples (..joint_state_cdr), made by create_subscription
_FAST_READERS: dict = {}


def _register_fast_reader(ros_type: str, cls) -> None:
    if ros_type == "sensor_msgs/msg/JointState" and cls not in _FAST_READERS:
        _FAST_READERS[cls] = joint_state_cdr.reader(cls, message_class("std_msgs/msg/Header"),
                                                    message_class("builtin_interfaces/msg/Time"))


class OversizedSample(TransportError):
    """A sample longer than its subscription's ``max_bytes``, dropped before deserialization."""


class RefusedSample(TransportError):
    """A sample its reader's ``precheck`` (:meth:`CycloneContext.add_reader`) refused before deserialization (a
    service request over one of its limits, :class:`~.base.SequenceLimit`): ``text`` says why; ``data`` and
    ``info`` are the sample's."""

    def __init__(self, text: str, data, info):
        super().__init__(text)
        self.text, self.data, self.info = text, data, info


def take_valid(reader: DataReader, n: int = 256, max_bytes: int | None = None,
               precheck: Callable[[bytes], str | None] | None = None) -> tuple[list, list]:
    """Take up to ``n`` samples: ``(messages, errors)``. Samples without valid data (Cyclone's notices that
    a writer unregistered or disposed an instance: a peer left) never become messages; a sample that does
    not deserialize (invalid UTF-8 in a string), or whose serialized form is longer than ``max_bytes``
    (never deserialized: :class:`OversizedSample`), is left out alone, with its exception in ``errors``, and
    costs none of the others (``DataReader.take`` would raise for the whole batch). ``precheck(data)``, if
    given, reads each serialized sample first: a text refuses it (:class:`RefusedSample` in ``errors``)."""
    ret = ddspy_take(reader._ref, _ANY, n)
    if isinstance(ret, int):
        raise TransportError(f"DDS take failed ({ret})")
    cls = reader.topic.data_type
    fast = _FAST_READERS.get(cls)
    out, errors = [], []
    for data, info in ret:
        if not info.valid_data:
            continue
        if max_bytes is not None and len(data) > max_bytes:
            errors.append(OversizedSample(f"a sample of {len(data)} bytes is longer than the subscription's "
                                          f"limit of {max_bytes} bytes"))
            continue
        if precheck is not None:
            text = precheck(data)
            if text is not None:
                errors.append(RefusedSample(text, data, info))
                continue
        try:
            msg = None
            if fast is not None:
                try:
                    msg = fast(data)
                except (ValueError, struct.error, UnicodeDecodeError):
                    msg = None          # the generic deserializer decides (and names the problem)
            if msg is None:
                msg = cls.deserialize(data)
        except Exception as exc:
            errors.append(exc)
            continue
        msg.sample_info = info
        out.append(msg)
    return out, errors


#: Every DropCounter ever attached to a reader, kept for the life of the process (one small object per
#: subscription). Cyclone calls a reader's listener through ctypes thunks owned by the Python Listener; the
#: transport drops readers by dropping references, and a listener the garbage collector freed before its
#: reader's C entity was deleted made the next callback jump into freed memory (a segfault, reproduced with
#: a per-sample listener by closing subscribing nodes while another participant publishes).
_LISTENERS: list = []
_LISTENERS_LOCK = threading.Lock()


class DropCounter(Listener):
    """Samples DDS reports lost or rejected on a reader (its sample-lost and sample-rejected statuses).
    Cyclone raises them when the reader's cache refuses a sample: rejected when a KEEP_ALL history is at its
    resource limits, lost when the instance refuses it (destination order by source timestamp, exclusive
    ownership).

    Not counted, because DDS reports neither: samples a KEEP_LAST history overwrites before they are taken
    (what a best-effort depth-100 joint_states reader loses in a burst), and samples that never reach the
    reader (datagrams lost on the network; Cyclone's SampleInfo carries no sequence number). Counting the
    first by a data-available listener (called once per stored sample) was tried and dropped: that Python
    callback takes the GIL on Cyclone's receive thread for every sample, and at 500 Hz the node then lost
    97 to 1,494 of 5,000 joint states that it receives without it (test/system/test_sustained_rate.py).
    """

    def __init__(self):
        super().__init__()
        self.lost = 0
        self.rejected = 0

    def on_sample_lost(self, reader, status) -> None:
        self.lost = int(status.total_count)

    def on_sample_rejected(self, reader, status) -> None:
        self.rejected = int(status.total_count)


def _writer(participant, topic, qos):
    with _create_lock:
        return DataWriter(participant, topic, qos=qos)


def _domain(domain_id: int, config: str) -> Domain:
    """One Domain object per domain id and process (Cyclone allows one); configured by the first user,
    as rmw_cyclonedds does."""
    with _domains_lock:
        entry = _domains.get(domain_id)
        if entry is None:
            entry = (Domain(domain_id, config), config)
            _domains[domain_id] = entry
        return entry[0]


#: ``ROS_DISTRO`` -> size of rmw_dds_common/Gid's data (24 bytes up to Humble, 16 from Iron on)
GID_SIZES = {"foxy": 24, "galactic": 24, "humble": 24, "iron": 16, "jazzy": 16, "kilted": 16, "rolling": 16}


def gid_size(env=None) -> int | None:
    """Size of rmw_dds_common/Gid's data for ``ROS_DISTRO``, None when it is unset or unknown: a
    ``ros_discovery_info`` sample in the other layout breaks the graph of every node of that distribution
    (Humble's ``ros2 node list`` fails for the whole domain), so without a known distribution none is sent."""
    env = os.environ if env is None else env
    return GID_SIZES.get(env.get("ROS_DISTRO", "").strip().lower())


class GraphInfo:
    """Publishes ``ros_discovery_info`` as rmw_dds_common's graph cache does (reliable, transient-local,
    depth 1; the participant's GID and every node's name, namespace and reader/writer GIDs), so that
    ``ros2 node list`` on a ROS 2 machine shows Cyclone-transport nodes. The Gid layout follows
    ``ROS_DISTRO`` (Humble: 24 bytes, Iron and later: 16; default 16)."""

    def __init__(self, participant, size: int, type_hashes: bool = False):
        from rosbags.typesys import Stores, get_typestore

        store = get_typestore(Stores.ROS2_HUMBLE if size == 24 else Stores.ROS2_JAZZY)
        self.size = size
        self.Info = message_class("rmw_dds_common/msg/ParticipantEntitiesInfo", store)
        self.Node = message_class("rmw_dds_common/msg/NodeEntitiesInfo", store)
        self.Gid = message_class("rmw_dds_common/msg/Gid", store)
        with _create_lock:
            topic = Topic(participant, "ros_discovery_info", self.Info)
        self.writer = _writer(participant, topic, dds_qos(
            QoS(depth=1, transient_local=True),
            _type_hash_user_data("rmw_dds_common/msg/ParticipantEntitiesInfo") if type_hashes else None))
        self.participant_gid = self.gid(participant.get_guid().bytes)
        self.nodes: dict[tuple[str, str], dict[str, list]] = {}
        self._lock = threading.Lock()

    def gid(self, guid: bytes):
        return self.Gid(data=list(guid[:16].ljust(self.size, b"\0")))

    def add_node(self, namespace: str, name: str) -> None:
        with self._lock:
            self.nodes.setdefault((namespace, name), {"readers": [], "writers": []})
        self.publish()

    def remove_node(self, namespace: str, name: str) -> None:
        with self._lock:
            self.nodes.pop((namespace, name), None)
        self.publish()

    def add_entity(self, namespace: str, name: str, kind: str, entity) -> None:
        with self._lock:
            self.nodes.setdefault((namespace, name), {"readers": [], "writers": []})[kind].append(
                entity.get_guid().bytes)
        self.publish()

    def message(self):
        with self._lock:
            nodes = [self.Node(node_namespace=ns, node_name=n,
                               reader_gid_seq=[self.gid(g) for g in e["readers"]],
                               writer_gid_seq=[self.gid(g) for g in e["writers"]])
                     for (ns, n), e in self.nodes.items()]
        return self.Info(gid=self.participant_gid, node_entities_info_seq=nodes)

    def publish(self) -> None:
        try:
            self.writer.write(self.message())
        except Exception:       # graph information is a courtesy; never fail a node for it
            pass


def _type_hash_user_data(ros_type: str) -> bytes:
    """``typehash=RIHS01_...;`` for an endpoint of ``ros_type``; empty (with a warning, as rmw_cyclonedds) when
    the type has no hash."""
    try:
        return user_data(ros_type).encode()
    except Exception as exc:
        import logging
        logging.getLogger("mechanism_model_ros.cyclone").warning(
            "no type hash for %s (%s: %s); its endpoints carry none in USER_DATA", ros_type,
            type(exc).__name__, exc)
        return b""


_noted = set()


def _note_no_graph(env) -> None:
    distro = (os.environ if env is None else env).get("ROS_DISTRO", "").strip()
    if distro in _noted:
        return
    _noted.add(distro)
    import logging
    logging.getLogger("mechanism_model_ros.cyclone").info(
        "ROS_DISTRO is %s: the nodes are not announced on ros_discovery_info (its layout differs between "
        "Humble and later distributions, and a wrong one breaks `ros2 node list` for every node of the "
        "domain); topics and services work regardless. Set ROS_DISTRO to the peers' distribution (humble, "
        "jazzy, ...) to list these nodes in `ros2 node list`.",
        f"{distro!r}, not a known distribution" if distro else "not set")


@dataclass(frozen=True)
class _ReaderEntry:
    """A reader the dispatcher takes from, with what it does with the samples (see ``add_reader``)."""
    reader: DataReader
    on_samples: Callable[[list], None]
    max_bytes: int | None
    precheck: Callable[[bytes], str | None] | None
    on_refused: Callable[[RefusedSample], None] | None


class CycloneContext:
    """One DDS participant and its dispatcher; shared by the nodes of a process."""

    _default = None
    _default_lock = threading.Lock()

    def __init__(self, domain_id: int | None = None, env=None, service_threads: int = 4):
        self.domain_id = ros_domain_id(env) if domain_id is None else int(domain_id)
        self._domain = _domain(self.domain_id, discovery_config(env))
        self.participant = DomainParticipant(
            self.domain_id, qos=Qos(Policy.Userdata(b"enclave=/;")))
        guid = self.participant.get_guid().bytes
        self._prefix = guid[:12]
        self._csid_counter = itertools.count(1)
        self._topics: dict[tuple[str, type], Topic] = {}
        self._lock = threading.RLock()
        self._waitset = WaitSet(self.participant)
        self._guard = GuardCondition(self.participant)
        self._waitset.attach(self._guard)
        self._handlers: list[_ReaderEntry] = []
        self._timers: list[tuple[float, int, "CallbackTimer"]] = []     # heap of (due, seq, timer)
        self._timer_seq = itertools.count()
        self._keep: list = []
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=service_threads,
                                                          thread_name_prefix="mm-service")
        self._stop = threading.Event()
        #: DDS topic name -> samples dropped because they did not deserialize
        self.undecodable: dict[str, int] = {}
        #: DDS topic name -> samples dropped unread because they exceeded their subscription's max_bytes
        self.oversized: dict[str, int] = {}
        import logging
        self._warn = RateLimitedLogger(logging.getLogger("mechanism_model_ros.cyclone"))
        self.graph = None
        size = gid_size(env)
        #: Iron and later put the type hash into every endpoint's USER_DATA; Humble (and an unknown
        #: distribution, as for ros_discovery_info) keeps the older bytes
        self.type_hashes = size == 16
        self._type_hash_cache: dict[str, bytes] = {}
        if size is None:
            _note_no_graph(env)
        else:
            try:
                self.graph = GraphInfo(self.participant, size, self.type_hashes)
            except Exception:   # e.g. a rosbags without rmw_dds_common: run without graph information
                self.graph = None
        #: the exception that ended the dispatcher (DDS failed under it), None while it runs or after close()
        self.failure: Exception | None = None
        self._thread = threading.Thread(target=self._dispatch, name="mm-dds-dispatch", daemon=True)
        self._thread.start()

    @classmethod
    def default(cls) -> "CycloneContext":
        with cls._default_lock:
            if cls._default is None or cls._default._stop.is_set():
                cls._default = cls()
            return cls._default

    def alive(self) -> bool:
        """Whether the participant's dispatcher still runs (it ends on :meth:`close`, or when DDS fails:
        then :attr:`failure` holds the exception), and its participant is still there (asked of DDS: a
        participant deleted under the nodes is seen at once, not when the dispatcher next wakes)."""
        if self._stop.is_set() or not self._thread.is_alive():
            return False
        try:
            self.participant.get_guid()
        except Exception as exc:        # noqa: BLE001 -- DDSException: the participant is gone
            self.failure = self.failure or exc
            return False
        return True

    # ------------------------------------------------------------------ entities
    def topic(self, dds_name: str, cls: type) -> Topic:
        with _create_lock:
            key = (dds_name, cls)
            t = self._topics.get(key)
            if t is None:
                t = Topic(self.participant, dds_name, cls)
                self._topics[key] = t
            return t

    def endpoint_user_data(self, ros_type: str, prefix: bytes = b"") -> bytes | None:
        """USER_DATA of a reader or writer of ``ros_type``: ``prefix`` (a client or service id) followed, on
        Iron and later, by ``typehash=RIHS01_...;`` (rmw_cyclonedds' create_readwrite_qos); None if empty."""
        if self.type_hashes:
            entry = self._type_hash_cache.get(ros_type)
            if entry is None:
                entry = self._type_hash_cache[ros_type] = _type_hash_user_data(ros_type)
            prefix += entry
        return prefix or None

    def new_csid(self) -> bytes:
        """A unique client/service id: the participant's GUID prefix and a big-endian counter."""
        return self._prefix + next(self._csid_counter).to_bytes(4, "big")

    def add_reader(self, reader: DataReader, on_samples: Callable[[list], None], *, max_bytes: int | None = None,
                   precheck: Callable[[bytes], str | None] | None = None,
                   on_refused: Callable[[RefusedSample], None] | None = None) -> None:
        """The dispatcher takes ``reader``'s samples (:func:`take_valid` with ``max_bytes`` and ``precheck``)
        and hands the messages to ``on_samples(messages)``, each refused sample to ``on_refused(sample)``."""
        cond = ReadCondition(reader, SampleState.Any | ViewState.Any | InstanceState.Any)
        with self._lock:
            self._keep.append(cond)
            self._handlers.append(_ReaderEntry(reader, on_samples, max_bytes, precheck, on_refused))
            self._waitset.attach(cond)
        self._guard.set(True)

    def remove_reader(self, reader: DataReader) -> None:
        with self._lock:
            self._handlers = [e for e in self._handlers if e.reader is not reader]

    def add_timer(self, timer: "CallbackTimer") -> None:
        """Schedule ``timer`` one period from now; its callbacks run on the dispatcher thread."""
        with self._lock:
            heapq.heappush(self._timers, (time.monotonic() + timer.period, next(self._timer_seq), timer))
        self._guard.set(True)

    def _run_due_timers(self) -> None:
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._timers or self._timers[0][0] > now:
                    return
                due, _, timer = heapq.heappop(self._timers)
                if timer.is_canceled:
                    continue
                nxt = due + timer.period
                if nxt <= now:          # late: no burst of catch-up calls
                    nxt = now + timer.period
                heapq.heappush(self._timers, (nxt, next(self._timer_seq), timer))
            timer.fire()

    def _wait_timeout(self) -> int:
        """Nanoseconds the dispatcher may sleep: until the next timer, at most 200 ms."""
        with self._lock:
            while self._timers and self._timers[0][2].is_canceled:
                heapq.heappop(self._timers)
            nxt = self._timers[0][0] if self._timers else None
        wait = 0.2 if nxt is None else min(0.2, max(0.0, nxt - time.monotonic()))
        return int(wait * 1e9)

    def _dispatch(self):
        try:
            self._dispatch_loop()
        except Exception as exc:    # DDS failed under the dispatcher (its participant deleted): alive() is False
            self.failure = exc
            logging.getLogger("mechanism_model_ros.cyclone").error(
                "the DDS dispatcher stopped: %s: %s", type(exc).__name__, exc)

    def _dispatch_loop(self):
        while not self._stop.is_set():
            timeout = self._wait_timeout()
            if timeout > 0:
                self._waitset.wait(duration(nanoseconds=timeout))
            if self._stop.is_set():
                break
            self._guard.set(False)
            self._run_due_timers()
            with self._lock:
                handlers = list(self._handlers)
            for entry in handlers:
                reader, on_samples, refuse = entry.reader, entry.on_samples, entry.on_refused
                try:
                    samples, errors = take_valid(reader, max_bytes=entry.max_bytes, precheck=entry.precheck)
                except Exception:   # a deleted reader
                    continue
                if errors:
                    if refuse is not None:
                        for e in errors:
                            if isinstance(e, RefusedSample):
                                refuse(e)
                        errors = [e for e in errors if not isinstance(e, RefusedSample)]
                if errors:
                    self._undecodable(reader, errors)
                if samples:
                    try:
                        on_samples(samples)
                    except Exception as exc:  # a callback must never stop the dispatcher
                        import logging
                        logging.getLogger("mechanism_model_ros.cyclone").error(
                            "callback raised %s: %s", type(exc).__name__, exc)

    def _undecodable(self, reader, errors) -> None:
        try:
            name = reader.topic.get_name()
        except Exception:
            name = "?"
        oversized = sum(isinstance(e, OversizedSample) for e in errors)
        with self._lock:
            self.undecodable[name] = self.undecodable.get(name, 0) + len(errors) - oversized
            self.oversized[name] = self.oversized.get(name, 0) + oversized
            total = self.undecodable[name] + self.oversized[name]
        self._warn.warning(f"undecodable:{name}", f"{name}: dropped {len(errors)} sample(s) that were too long "
                                                   f"or do not deserialize ({type(errors[0]).__name__}: "
                                                   f"{errors[0]}); {total} so far on this topic")

    def close(self):
        if self._stop.is_set():
            return
        self._stop.set()
        self._guard.set(True)
        self._thread.join(timeout=2.0)
        self.pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            self._handlers = []
            self._timers = []
            self._keep = []
            self._topics = {}
        self.participant = None
        self._domain = None

