"""The transport interface the nodes are written against.

A transport is one ROS node's view of the middleware: publishers, subscriptions, service servers and
clients by ROS name and ROS type name (``sensor_msgs/msg/JointState``, ``mechanism_model_msgs/srv/ComputeFK``),
message classes, the clock, parameters and a logger. Messages are objects with the ROS field names as
attributes and keyword constructors (rclpy's generated classes, or the Cyclone transport's classes
generated from the same definitions), so node code is identical on both.

Callbacks never run concurrently with themselves for one subscription; service handlers may run
concurrently (the kinematics server's handlers are thread-safe: the model is immutable).
"""

from __future__ import annotations

import abc
import concurrent.futures
import logging
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from ..qos import QoS
from ..param_values import coerce_parameter


#: defaults of :meth:`Transport.create_service`'s ``concurrency`` and ``queue``
SERVICE_CONCURRENCY = 4
SERVICE_QUEUE = 64

class TransportError(RuntimeError):
    """The middleware refused something (bad name, no ROS installation, service unavailable)."""


#: how long after :meth:`Transport.reopen_publishers` the first message through a re-created publisher may wait
#: for its subscribers to be discovered (s, one deadline for all of a node's publishers): a command written
#: before its reader is matched reaches nobody (the controllers' readers are volatile). Generous, because a
#: zero lost to a slow discovery (a fresh rclpy context discovers the controller manager anew; with 0.25 s a
#: test failed once on a loaded machine, likely so) leaves plain controllers driving; the price is that a publisher
#: nobody subscribes to (a steering controller not running) holds the messages after it back by this long.
REOPEN_MATCH_TIMEOUT = 1.0


@dataclass(frozen=True)
class SequenceLimit:
    """At most ``most`` elements in all the sequences at ``paths`` of one request together. A path names the
    fields from the request down, through sequences and nested messages: ``("world_objects",)`` is the
    request's ``world_objects``, ``("world_objects", "primitives")`` every object's ``primitives``.
    ``message``: the refusal's text, a format string with ``{where}`` (the element of the top-level sequence
    being read, ``world_objects[3] ('rock')``, or the field for a limit on a top-level sequence), ``{count}``
    (elements counted so far) and ``{most}``.

    Given to :meth:`Transport.create_service` (``limits=``), the Cyclone transport checks them in the
    serialized request before decoding it (:mod:`.cyclone.cdr_limits`) and answers a request over a limit with
    :func:`refusal_response`; the handler must check the same limits itself (rclpy and the in-memory transport
    hand it the decoded request)."""

    paths: tuple
    most: int
    message: str


class Publisher(abc.ABC):
    #: optional capability, None where the transport has none (in memory): ``numeric_template(msg, groups)``,
    #: a :class:`~.numeric_template.NumericTemplate` of ``msg`` whose numbers are patched per message (Cyclone
    #: and rclpy define it as a method)
    numeric_template: Callable[..., Any] | None = None

    @abc.abstractmethod
    def publish(self, msg) -> None: ...

    def wait_for_acks(self, timeout: float) -> bool:
        """Block until every matched reliable subscriber acknowledged what was published, at most ``timeout``
        s (True: all acknowledged). Nodes call it for their last command before closing, so that closing the
        transport right after cannot lose it. Transports without acknowledgements return True at once."""
        return True


@dataclass(frozen=True, eq=False)
class Subscription:
    """What :meth:`Transport.create_subscription` returns, on every transport: the subscription's topic and
    type, the middleware's own object (``handle``: a Cyclone ``DataReader``, an rclpy ``Subscription``, the
    in-memory bus's subscriber), and the counters a transport can offer. A capability the transport lacks is
    None (never a stand-in returning 0), so a node tells "none lost" from "cannot tell":

    * ``samples_lost()``: samples DDS reported lost or rejected (int) -- Cyclone; None on rclpy and memory;
    * ``samples_dropped()``: the same by cause, ``{"lost": n, "rejected": n}`` -- Cyclone only;
    * ``samples_undecodable()``: samples that did not deserialize (int) -- Cyclone only;
    * ``samples_oversized()``: messages dropped unread, longer than ``max_bytes`` -- Cyclone; rclpy when
      ``max_bytes`` was given; None in memory (nothing is serialized there);
    * ``publisher_count()``: the publishers matched with this subscription -- every transport (rclpy: the
      graph's count of the topic's publishers).

    KEEP_LAST overwrites and network losses are not reported by DDS (see ``transports.cyclone.DropCounter``).
    """

    topic: str
    ros_type: str
    handle: Any = None
    samples_lost: Callable[[], int] | None = None
    samples_dropped: Callable[[], dict] | None = None
    samples_undecodable: Callable[[], int] | None = None
    samples_oversized: Callable[[], int] | None = None
    publisher_count: Callable[[], int] | None = None


class Client(abc.ABC):
    @abc.abstractmethod
    def request(self):
        """A new, default request object."""

    @abc.abstractmethod
    def wait_for_service(self, timeout: float) -> bool: ...

    @abc.abstractmethod
    def call(self, request, timeout: float = 10.0):
        """Send ``request`` and block for the reply; raises :class:`TimeoutError`."""


class Timer(abc.ABC):
    """A periodic callback made by :meth:`Transport.create_timer`."""

    period: float

    @abc.abstractmethod
    def cancel(self) -> None:
        """Stop calling back (idempotent). A call already running finishes."""

    @property
    @abc.abstractmethod
    def is_canceled(self) -> bool: ...


class ThreadTimer(Timer):
    """A timer with a thread of its own (``create_timer(..., own_thread=True)``): ``callback()`` every
    ``period`` s (the next call due a period after the last one was due; a late one is not repeated), until
    :meth:`cancel`. An exception in ``callback`` is the caller's to guard (transports pass a guarded one)."""

    def __init__(self, period: float, callback: Callable[[], None], name: str = "mm-timer",
                 clock: Callable[[], float] = time.monotonic):
        self.period = period
        self._callback = callback
        self._clock = clock
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        due = self._clock() + self.period
        while not self._halt.wait(max(0.0, due - self._clock())):
            self._callback()
            due += self.period
            now = self._clock()
            if due <= now:                    # late: no burst of catch-up calls
                due = now + self.period

    def cancel(self) -> None:
        self._halt.set()

    @property
    def is_canceled(self) -> bool:
        return self._halt.is_set()


class CallbackTimer(Timer):
    """A timer as a transport's scheduler sees it: ``fire()`` calls back unless cancelled; ``due`` is the
    scheduler's bookkeeping (the time of the next call, where the transport keeps one)."""

    def __init__(self, period: float, callback: Callable[[], None]):
        self.period = period
        self.due = 0.0
        self._callback = callback
        self._canceled = False

    def fire(self) -> None:
        if not self._canceled:
            self._callback()

    def cancel(self) -> None:
        self._canceled = True

    @property
    def is_canceled(self) -> bool:
        return self._canceled


#: action_msgs/msg/GoalStatus values
GOAL_STATUS = {0: "UNKNOWN", 1: "ACCEPTED", 2: "EXECUTING", 3: "CANCELING", 4: "SUCCEEDED", 5: "CANCELED",
               6: "ABORTED"}
STATUS_SUCCEEDED, STATUS_CANCELED, STATUS_ABORTED = 4, 5, 6


@dataclass
class ActionResult:
    """The end of a goal: ``status`` (action_msgs/msg/GoalStatus: 4 succeeded, 5 canceled, 6 aborted) and the
    action's result message."""

    status: int
    result: Any

    @property
    def status_name(self) -> str:
        return GOAL_STATUS.get(self.status, str(self.status))

    @property
    def succeeded(self) -> bool:
        return self.status == STATUS_SUCCEEDED


class GoalHandle(abc.ABC):
    """A goal sent by :meth:`ActionClient.send_goal`. ``accepted`` says whether the server took it;
    ``goal_id`` is its 16-byte UUID."""

    accepted: bool
    goal_id: bytes

    @abc.abstractmethod
    def result_future(self) -> concurrent.futures.Future:
        """A future of the goal's :class:`ActionResult` (done when the goal ends)."""

    def get_result(self, timeout: float | None = None) -> ActionResult:
        """Block until the goal ends; :class:`TimeoutError` after ``timeout`` seconds."""
        try:
            return self.result_future().result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"goal did not end within {timeout} s") from None

    @abc.abstractmethod
    def cancel(self, timeout: float = 10.0) -> int:
        """Ask the server to cancel the goal; returns the CancelGoal ``return_code`` (0: canceling)."""

    @property
    @abc.abstractmethod
    def status(self) -> int:
        """The latest known GoalStatus value (from the status topic or the result)."""


class ActionClient(abc.ABC):
    """A client of one action server (rcl_action's protocol: send_goal / get_result / cancel_goal services,
    feedback and status topics)."""

    @abc.abstractmethod
    def goal(self):
        """A new, default goal message."""

    @abc.abstractmethod
    def wait_for_server(self, timeout: float = 10.0) -> bool: ...

    @abc.abstractmethod
    def send_goal(self, goal, feedback_callback: Callable[[Any], None] | None = None,
                  timeout: float = 10.0) -> GoalHandle:
        """Send ``goal`` and wait (up to ``timeout`` s, else :class:`TimeoutError`) for the server to accept or
        reject it. ``feedback_callback(feedback)`` gets the action's Feedback messages of this goal."""


class ServerGoalHandle(abc.ABC):
    """A goal an action server accepted: ``goal_id`` (16-byte UUID) and ``request`` (the goal message). The
    execute callback reports progress with :meth:`publish_feedback`, watches :attr:`is_cancel_requested`, and
    ends the goal with :meth:`succeed`, :meth:`abort` or :meth:`canceled`, passing the result message (None:
    a default result)."""

    goal_id: bytes
    request: Any

    @property
    @abc.abstractmethod
    def is_cancel_requested(self) -> bool: ...

    @property
    @abc.abstractmethod
    def status(self) -> int: ...

    @abc.abstractmethod
    def publish_feedback(self, feedback) -> None: ...

    @abc.abstractmethod
    def succeed(self, result=None) -> None: ...

    @abc.abstractmethod
    def abort(self, result=None) -> None: ...

    @abc.abstractmethod
    def canceled(self, result=None) -> None: ...


class Transport(abc.ABC):
    """One node on the middleware.

    Concurrency contract (both transports): a node's subscription callbacks and timer callbacks never run
    concurrently with one another (rclpy: one mutually exclusive callback group; Cyclone: the context's
    dispatcher thread), so node state they share needs no lock against each other; service handlers may
    run concurrently with them and with each other. A subscription or timer callback must not wait for a
    service reply or an action result: on Cyclone those arrive through the thread that runs it (hand such
    work to another thread).
    """

    node_name: str
    namespace: str
    #: True once :meth:`reopen_publishers` re-created the publishers on a fresh participant (the node's
    #: subscriptions, services and action clients are gone: a node's last commands must use publishers)
    reopened: bool = False

    @abc.abstractmethod
    def message_class(self, ros_type: str) -> type:
        """Class of ROS message ``ros_type`` (``geometry_msgs/msg/TransformStamped``)."""

    def service_classes(self, srv_type: str) -> tuple[type, type]:
        """(request, response) classes of ``srv_type`` for a server's handler."""
        raise NotImplementedError

    @abc.abstractmethod
    def create_publisher(self, topic: str, ros_type: str, qos: QoS) -> Publisher: ...

    @abc.abstractmethod
    def create_subscription(self, topic: str, ros_type: str, qos: QoS,
                            callback: Callable[[Any], None],
                            on_drained: Callable[[], None] | None = None,
                            max_bytes: int | None = None) -> Subscription:
        """``callback(msg)`` for every message, in arrival order; returns a :class:`Subscription` (its
        optional capabilities, None where the transport lacks them, are listed there). ``on_drained()``, if given, after the
        callbacks of all the messages one wake-up took from the queue (Cyclone: the samples of one take;
        rclpy's take loop: until the queue is empty; an executor or the in-memory bus: after each message),
        on the same thread: a subscriber that only needs the newest state merges in ``callback`` and acts once
        in ``on_drained``, so a backlog costs one action instead of one per message.

        ``max_bytes``: a message whose serialized form is longer is dropped before it is deserialized
        (counted: :attr:`Subscription.samples_oversized`, and logged, rate-limited), so a flood of huge
        messages costs their size check only (Cyclone and rclpy, which then subscribes to serialized
        messages; the in-memory transport has no serialized form and ignores it)."""

    @abc.abstractmethod
    def create_service(self, name: str, srv_type: str,
                       handler: Callable[[Any, Any], Any], *, concurrency: int = SERVICE_CONCURRENCY,
                       queue: int = SERVICE_QUEUE, busy: Callable[[Any, Any], Any] | None = None,
                       limits: tuple = ()) -> Any:
        """``handler(request, response)`` fills and returns ``response`` (as rclpy).

        Each service is served apart from the others (:class:`ServiceGate`): at most ``concurrency`` of its
        requests run at once, ``queue`` more wait, and one beyond that gets ``busy(request, response)`` at
        once. :func:`request_arrival` tells a handler when its request arrived. ``limits``
        (:class:`SequenceLimit`): where the transport can, a request over one is refused before it is decoded
        (Cyclone); the handler checks them too."""

    @abc.abstractmethod
    def create_client(self, name: str, srv_type: str) -> Client: ...

    def create_timer(self, period: float, callback: Callable[[], None], own_thread: bool = False) -> Timer:
        """Call ``callback()`` every ``period`` seconds (> 0, finite) until the timer is cancelled or the node
        closed; the first call comes one period after creation. A late call is not repeated to catch up (the
        next one is due a period after it, as rclpy's timers). An exception in ``callback`` is logged and the
        timer goes on. Use for watchdogs (command silence, stale state) and periodic publishing.

        ``own_thread``: the timer never waits behind message handling -- a thread of its own (Cyclone), a
        callback group of its own outside the node's exclusive lock (rclpy) -- and so runs concurrently with
        the node's subscription callbacks (the node locks the state they share). For watchdogs, whose stop
        must not queue behind a flood of large messages."""
        raise NotImplementedError(f"{type(self).__name__} has no timers")

    def create_action_client(self, name: str, action_type: str) -> ActionClient:
        """A client of action ``name`` (``/arm_controller/follow_joint_trajectory``) of type ``action_type``
        (``control_msgs/action/FollowJointTrajectory``). rclpy: ``rclpy.action.ActionClient`` (the node must
        be spinning for its replies); Cyclone: the action's services and topics in the rmw_cyclonedds format,
        which interoperates with rclcpp_action servers on rmw_cyclonedds_cpp."""
        raise NotImplementedError(f"{type(self).__name__} has no action clients")

    def create_action_server(self, name: str, action_type: str, execute: Callable[[ServerGoalHandle], Any],
                             goal_callback: Callable[[Any], bool] | None = None,
                             cancel_callback: Callable[[ServerGoalHandle], bool] | None = None) -> Any:
        """Serve action ``name`` of ``action_type``: ``goal_callback(goal) -> bool`` accepts or rejects a goal
        (default: accept), ``execute(goal_handle)`` runs each accepted goal on a thread of its own and ends it
        (a goal it leaves open is aborted), ``cancel_callback(goal_handle) -> bool`` accepts a cancel request
        (default: accept; the goal sees :attr:`ServerGoalHandle.is_cancel_requested`). rclpy:
        ``rclpy.action.ActionServer``; Cyclone: rcl_action's protocol (see :meth:`create_action_client`)."""
        raise NotImplementedError(f"{type(self).__name__} has no action servers")

    def monotonic(self) -> float:
        """Steady time in seconds, for timeouts and watchdogs (``time.monotonic()``; the in-memory
        transport's bus may run a manual clock that tests advance). Node logic reads time here, never from
        :mod:`time` directly, so its timing can be tested without waiting."""
        return time.monotonic()

    def now(self) -> tuple[int, int]:
        """Current time as (sec, nanosec) since the epoch."""
        ns = time.time_ns()
        return ns // 1_000_000_000, ns % 1_000_000_000

    def get_parameter(self, name: str, default):
        """Value of parameter ``name`` in the type of ``default`` (see
        :func:`mechanism_model_ros.params.coerce_parameter`); ``default`` when nobody set it."""
        return coerce_parameter(name, self._parameter_value(name, default), default)

    def _parameter_value(self, name: str, default):
        """The value as the middleware holds it (any type), or ``default``."""
        return default

    def get_logger(self) -> logging.Logger:
        return logging.getLogger(f"mechanism_model_ros.{self.node_name}")

    @abc.abstractmethod
    def spin(self, stop: threading.Event | None = None) -> None:
        """Serve until ``stop`` is set (or forever)."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def reopen_publishers(self, fresh) -> int:
        """After the node's DDS participant was lost (serve: the rclpy context shut down, the Cyclone
        dispatcher failed): re-create every publisher of this node on ``fresh`` -- a new participant of the
        same middleware (``CycloneContext``; an initialised rclpy ``Context``) -- so that the node's
        ``close()`` can still send its motors their last command. The objects the node holds stay the same;
        the first message through each waits (at most :data:`REOPEN_MATCH_TIMEOUT` s) until a subscriber is
        matched. Subscriptions, services and action clients are not re-created. Returns how many publishers
        were re-created; a transport that cannot raises ``NotImplementedError``."""
        raise NotImplementedError(f"{type(self).__name__} cannot re-create its publishers")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_period(period) -> float:
    """``period`` as a positive finite float (seconds), else :class:`TransportError`."""
    try:
        p = float(period)
    except (TypeError, ValueError):
        raise TransportError(f"timer period must be a number of seconds, got {period!r}") from None
    if not (p > 0 and p < float("inf")):
        raise TransportError(f"timer period must be positive and finite, got {period!r}")
    return p


def resolve_name(name: str, namespace: str = "/", node_name: str = "") -> str:
    """Fully qualified ROS name: ``joint_states`` in ``/rover`` -> ``/rover/joint_states``;
    ``/tf`` stays; ``~/x`` -> ``/<ns>/<node>/x``."""
    if not name:
        raise TransportError("empty ROS name")
    ns = namespace if namespace.startswith("/") else "/" + namespace
    ns = ns.rstrip("/")
    if name.startswith("~"):
        name = f"{ns}/{node_name}{name[1:]}"
    elif not name.startswith("/"):
        name = f"{ns}/{name}"
    for part in name.strip("/").split("/"):
        if not part or not all(c.isalnum() or c == "_" for c in part) or part[0].isdigit():
            raise TransportError(f"invalid ROS name {name!r}")
    return name


def guarded(callback: Callable, logger, what: str, fallback=None) -> Callable:
    """``callback`` wrapped so that an exception is logged instead of propagating: rclpy's executors re-raise
    a callback's exception out of ``spin_once``, which would stop every node of the process. A service
    handler's wrapper returns its ``response`` argument (``fallback(args)``) so the client still gets an
    answer."""
    def wrapper(*args):
        try:
            return callback(*args)
        except Exception as exc:
            logger.error("%s raised %s", what, describe_exception(exc))
            return fallback(args) if fallback is not None else None
    return wrapper


_arrival = threading.local()


def request_arrival() -> float:
    """``time.monotonic()`` at which the request being handled on this thread arrived (transports set it
    before calling a service handler; a time budget counted from arrival includes the time spent queued).
    Now, outside a handler."""
    return getattr(_arrival, "t", None) or time.monotonic()


def _set_arrival(t: float | None) -> None:
    _arrival.t = t


def request_cancelled():
    """The ``threading.Event`` the transport sets when the client of the request being handled on this
    thread has left (Cyclone transport: the client's request writer is no longer matched), for a handler to
    pass to long work (``solve_ik(cancel=...)``); None where the transport cannot tell (rclpy, outside a
    handler)."""
    return getattr(_arrival, "cancel", None)


def _set_cancel(event) -> None:
    _arrival.cancel = event


class ServiceGate:
    """Admission for one service: at most ``concurrency`` requests handled at once and ``queue`` more waiting;
    a request beyond that is refused at once (the transport answers it with the service's ``busy``
    response) instead of delaying everything behind it. Each service has its own gate and, on the Cyclone
    transport, its own worker threads, so a saturated service never delays another (no head-of-line
    blocking)."""

    def __init__(self, concurrency: int = SERVICE_CONCURRENCY, queue: int = SERVICE_QUEUE):
        if concurrency < 1 or queue < 0:
            raise TransportError(f"service concurrency must be >= 1 and queue >= 0, got {concurrency}, {queue}")
        self.concurrency = int(concurrency)
        self.limit = int(concurrency) + int(queue)
        self.slots = threading.Semaphore(int(concurrency))
        self._lock = threading.Lock()
        self.pending = 0
        self.refused = 0

    def try_enter(self) -> bool:
        with self._lock:
            if self.pending >= self.limit:
                self.refused += 1
                return False
            self.pending += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.pending -= 1


#: MoveIt's ErrorCodes.FAILURE, set in ``error_code.val`` of a reply whose handler raised
_FAILURE = 99999
#: action_msgs/srv/CancelGoal's ERROR_REJECTED
_CANCEL_REJECTED = 1


#: longest exception text a log line or an error reply carries (an exception's message may hold the repr of a
#: whole message: a reply that failed to encode once logged 70 KB per request)
MAX_ERROR_TEXT = 500


def short_text(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def describe_exception(exc: BaseException, limit: int = MAX_ERROR_TEXT) -> str:
    """``"TypeName: message"`` with the message cut to ``limit`` characters."""
    return f"{type(exc).__name__}: {short_text(exc, limit)}"


def short_traceback(exc: BaseException, frames: int = 6) -> str:
    """The last ``frames`` frames of ``exc``'s traceback and its :func:`describe_exception` (a bounded
    replacement for ``exc_info=True``, whose last line repeats the whole exception message)."""
    tb = "".join(traceback.format_tb(exc.__traceback__, limit=-frames)) if exc.__traceback__ else ""
    return f"Traceback (most recent call last, {frames} frames at most):\n{tb}{describe_exception(exc)}"


def refusal_response(response, text: str):
    """``response`` (a fresh response object) refusing its request: ``error_code.val`` FAILURE (as a handler's
    own refusal of a request over a limit), ``success``/``accepted`` false, ``text`` in ``message`` (or
    ``error_message`` / ``error_string``). Returns ``response``."""
    ec = getattr(response, "error_code", None)
    if ec is not None and hasattr(ec, "val"):
        ec.val = _FAILURE
    for flag in ("success", "accepted"):
        if isinstance(getattr(response, flag, None), bool):
            setattr(response, flag, False)
    for field in ("message", "error_message", "error_string"):
        if isinstance(getattr(response, field, None), str):
            setattr(response, field, text)
            break
    return response


def failure_response(response, exc: BaseException, service: str):
    """``response`` (a fresh response object) marked as failed because the handler of ``service`` raised
    ``exc``: ``error_code.val`` FAILURE (MoveIt's code, used by every mechanism_model_msgs service), ``success``
    and ``accepted`` false, a CancelGoal ``return_code`` ERROR_REJECTED, and the reason in ``message`` (or
    ``error_message`` / ``error_string``). A response with none of these fields goes back with its defaults, so
    that the client is answered rather than left waiting. Returns ``response``."""
    text = f"{service}: internal error {describe_exception(exc)}"
    ec = getattr(response, "error_code", None)
    if ec is not None and hasattr(ec, "val"):
        ec.val = _FAILURE
    for flag in ("success", "accepted"):
        if isinstance(getattr(response, flag, None), bool):
            setattr(response, flag, False)
    if hasattr(response, "return_code") and hasattr(response, "goals_canceling"):
        response.return_code = _CANCEL_REJECTED
    for field in ("message", "error_message", "error_string"):
        if isinstance(getattr(response, field, None), str):
            setattr(response, field, text)
            break
    return response


def busy_or_fallback(busy, request, response):
    """The reply to a refused request: ``busy(request, response)`` when the service has one, else the
    default response."""
    if busy is None:
        return response
    try:
        return busy(request, response)
    except Exception:
        return response


class RateLimitedLogger:
    """Logs one message per key at most every ``period`` seconds, counting what it swallowed."""

    def __init__(self, logger: logging.Logger, period: float = 2.0):
        self.logger = logger
        self.period = period
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def warning(self, key: str, msg: str) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return
            n = self._suppressed.pop(key, 0)
            self._last[key] = now
        if n:
            msg += f" ({n} similar messages suppressed)"
        self.logger.warning(msg)
