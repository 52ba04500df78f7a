"""The rclpy transport: what runs on robots with ROS 2 (Humble, Jazzy), over any RMW.

Importing this module needs rclpy and the generated Python packages of the message types
(``mechanism_model_msgs`` built by colcon, ``tf2_msgs``, ``sensor_msgs`` ...); nothing else in
mechanism_model_ros imports it unless asked for ``--transport rclpy`` (or ``auto`` where rclpy exists).

Parameters: every parameter given to :meth:`RclpyRuntime.node` (from ``--params-file``/``-p``) is declared
with that value as its default, so ROS parameter files and ``--ros-args -p`` given to the process override
it; :meth:`RclpyNode.get_parameter` declares the parameter on first use. Declarations use dynamic typing and
values are converted to the default's type on reading, so ``ik_timeout: 1`` works for a float parameter.

Callbacks and service handlers are wrapped (:func:`~.base.guarded`): rclpy's executors re-raise a
callback's exception out of ``spin_once``, which would stop the process's nodes.
"""

from __future__ import annotations

import importlib
import struct
import threading
import time

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription as RclpySubscription

from ..qos import QoS
from . import joint_state_cdr
from .base import (REOPEN_MATCH_TIMEOUT, SERVICE_CONCURRENCY, SERVICE_QUEUE, ActionClient, ActionResult, Client,
                   GoalHandle, Publisher, RateLimitedLogger, ServerGoalHandle, ServiceGate, Timer, Transport,
                   TransportError, _set_arrival, busy_or_fallback, check_period, describe_exception, failure_response,
                   guarded, short_traceback, Subscription)
from .numeric_template import NumericTemplate


#: threads of the process's executor (see RclpyRuntime)
EXECUTOR_THREADS = 24
#: most messages the take loop takes from one subscription per wake-up before its ``on_drained`` hook (as
#: the Cyclone transport's take)
TAKE_BATCH = 256


def _ros_class(ros_type: str):
    """``sensor_msgs/msg/JointState`` -> the rosidl-generated Python class; an action's parts by the wire names
    the Cyclone transport uses (``pkg/action/Name_Goal``, ``_Result``, ``_Feedback``) -> ``Name.Goal`` ..."""
    try:
        pkg, kind, name = ros_type.split("/")
        module = importlib.import_module(f"{pkg}.{kind}")
        if kind == "action" and not hasattr(module, name):
            base, _, part = name.rpartition("_")
            if base and part in ("Goal", "Result", "Feedback"):
                return getattr(getattr(module, base), part)
        return getattr(module, name)
    except (ValueError, ImportError, AttributeError) as exc:
        raise TransportError(f"ROS type {ros_type!r} is not available ({exc}); is its package built and "
                             f"sourced?") from None


class _SubscriptionGroup(MutuallyExclusiveCallbackGroup):
    """A node's subscriptions and timers (mutually exclusive). Once :class:`RclpyRuntime` hands the node's
    subscriptions to a take loop of their own (``loop_owned``), executors no longer wait on them or take
    from them. Every subscription and timer callback holds the node's ``exclusive`` lock, so they exclude
    each other whichever thread runs them (an executor's or the take loop)."""

    def __init__(self):
        super().__init__()
        self.loop_owned = False

    def can_execute(self, entity) -> bool:
        if self.loop_owned and isinstance(entity, RclpySubscription):
            return False
        return super().can_execute(entity)


def ros_qos(qos: QoS) -> QoSProfile:
    return QoSProfile(
        history=HistoryPolicy.KEEP_ALL if qos.keep_all else HistoryPolicy.KEEP_LAST,
        depth=max(1, qos.depth),
        reliability=ReliabilityPolicy.RELIABLE if qos.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if qos.transient_local else DurabilityPolicy.VOLATILE,
    )


class _Publisher(Publisher):
    """``remake(node)``: the same publisher on another rclpy node (:meth:`rebind`)."""

    def __init__(self, pub, remake=None):
        self.pub = pub
        self._remake = remake
        self._match_by = None          # after rebind: monotonic time until which a publish waits for a reader

    def rebind(self, node: Node) -> None:
        """Publish through a new publisher of ``node`` (on a fresh context) from now on, see
        :meth:`~.base.Transport.reopen_publishers`."""
        self.pub = self._remake(node)
        self._match_by = time.monotonic() + REOPEN_MATCH_TIMEOUT

    def _await_match(self) -> None:
        if self._match_by is not None:
            while self.pub.get_subscription_count() == 0 and time.monotonic() < self._match_by:
                time.sleep(0.001)
            self._match_by = None

    def publish(self, msg) -> None:
        self._await_match()
        self.pub.publish(msg)

    def numeric_template(self, msg, groups: dict):
        """A :class:`~.numeric_template.NumericTemplate` over rclpy's serializer, publishing the patched bytes
        as a serialized message (``Publisher.publish(bytes)``): the state publisher's /tf message skips
        filling Python message objects and rclpy's conversion of them, most of its cost per message."""
        from rclpy.serialization import serialize_message

        def write(data):
            self._await_match()
            self.pub.publish(data)
        return NumericTemplate(msg, groups, serialize_message, write)

    @property
    def subscription_count(self) -> int:
        return self.pub.get_subscription_count()

    def wait_for_acks(self, timeout: float) -> bool:
        """Block until every matched reliable reader acknowledged what was published, at most ``timeout`` s."""
        from rclpy.duration import Duration
        return bool(self.pub.wait_for_all_acked(Duration(nanoseconds=int(max(0.0, float(timeout)) * 1e9))))


class _Client(Client):
    def __init__(self, node: Node, name: str, srv_cls):
        self.srv_cls = srv_cls
        self.client = node.create_client(srv_cls, name, callback_group=ReentrantCallbackGroup())

    def request(self):
        return self.srv_cls.Request()

    def wait_for_service(self, timeout: float = 10.0) -> bool:
        return self.client.wait_for_service(timeout_sec=timeout)

    def call(self, request, timeout: float = 10.0):
        future = self.client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            self.client.remove_pending_request(future)
            raise TimeoutError(f"no reply from service {self.client.srv_name} within {timeout} s")
        return future.result()


class _Timer(Timer):
    def __init__(self, node: Node, period: float, callback, group):
        self.period = period
        self.timer = node.create_timer(period, callback, callback_group=group)

    def cancel(self) -> None:
        self.timer.cancel()

    @property
    def is_canceled(self) -> bool:
        return self.timer.is_canceled()


def _wait(future, timeout, what):
    """Block on an rclpy future that another thread's executor completes."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout):
        raise TimeoutError(f"{what}: no answer within {timeout} s")
    return future.result()


class _RclpyGoalHandle(GoalHandle):
    def __init__(self, handle):
        import concurrent.futures

        self.handle = handle
        self.accepted = bool(handle.accepted)
        self.goal_id = bytes(handle.goal_id.uuid)
        self._future = concurrent.futures.Future()
        if not self.accepted:
            self._future.set_result(ActionResult(0, None))
            return
        rf = handle.get_result_async()

        def done(f):
            try:
                r = f.result()
            except BaseException as exc:   # noqa: BLE001 -- handed to the waiter
                self._future.set_exception(exc)
                return
            self._future.set_result(ActionResult(int(r.status), r.result))
        rf.add_done_callback(done)

    def result_future(self):
        return self._future

    def cancel(self, timeout: float = 10.0) -> int:
        return int(_wait(self.handle.cancel_goal_async(), timeout, "cancel_goal").return_code)

    @property
    def status(self) -> int:
        return int(self.handle.status)


class _RclpyActionClient(ActionClient):
    def __init__(self, node: Node, name: str, action_cls):
        from rclpy.action import ActionClient as RclpyActionClient

        self.cls = action_cls
        self.client = RclpyActionClient(node, action_cls, name, callback_group=ReentrantCallbackGroup())

    def goal(self):
        return self.cls.Goal()

    def wait_for_server(self, timeout: float = 10.0) -> bool:
        return self.client.wait_for_server(timeout_sec=timeout)

    def send_goal(self, goal, feedback_callback=None, timeout: float = 10.0) -> GoalHandle:
        fb = None if feedback_callback is None else (lambda msg: feedback_callback(msg.feedback))
        handle = _wait(self.client.send_goal_async(goal, feedback_callback=fb), timeout, "send_goal")
        return _RclpyGoalHandle(handle)


class _RclpyServerGoal(ServerGoalHandle):
    def __init__(self, handle):
        self.handle = handle
        self.goal_id = bytes(handle.goal_id.uuid)
        self.request = handle.request
        self.result = None

    @property
    def is_cancel_requested(self) -> bool:
        return bool(self.handle.is_cancel_requested)

    @property
    def status(self) -> int:
        return int(self.handle.status)

    def publish_feedback(self, feedback) -> None:
        self.handle.publish_feedback(feedback)

    def succeed(self, result=None) -> None:
        self.result = result
        self.handle.succeed()

    def abort(self, result=None) -> None:
        self.result = result
        self.handle.abort()

    def canceled(self, result=None) -> None:
        self.result = result
        self.handle.canceled()


class RclpyNode(Transport):
    """One rclpy node behind the transport interface."""

    def __init__(self, node_name: str, namespace: str = "/", parameters: dict | None = None,
                 context=None):
        self.node_name = node_name
        self.namespace = namespace
        self._own_init = False
        if context is None and not rclpy.ok():
            rclpy.init()
            self._own_init = True
        self.node = Node(node_name, namespace=namespace, context=context,
                         allow_undeclared_parameters=False,
                         automatically_declare_parameters_from_overrides=False)
        self._defaults = dict(parameters or {})
        #: whether the node serves services or actions of its own (RclpyRuntime: such nodes share the
        #: multi-threaded executor; the others get a single-threaded one each)
        self.serves_requests = False
        self._sub_group = _SubscriptionGroup()
        #: rclpy subscription -> its ``on_drained`` (guarded), which the take loop calls once its queue is empty
        self.drained: dict = {}
        #: held while a subscription or timer callback runs (see _SubscriptionGroup)
        self.exclusive = threading.Lock()
        self._srv_group = ReentrantCallbackGroup()
        self._publishers: list[_Publisher] = []
        self._fresh_node = None         # reopen_publishers' node on a fresh context
        for name, value in self._defaults.items():
            self._declare(name, value)

    def _declare(self, name, default):
        """Declare ``name`` with dynamic typing (its value from an override, else ``default``): a statically
        typed declaration would refuse ``ik_timeout: 1`` (an integer) for a float default with
        InvalidParameterTypeException; :meth:`get_parameter` converts the value to the default's type."""
        if not self.node.has_parameter(name):
            try:
                if isinstance(default, (list, tuple)) and not default:
                    # rclpy cannot infer an empty list's element type (it would call it a byte array):
                    # declare a string array holding [] so `ros2 param get` shows a value, not "not set"
                    self.node.declare_parameter(name, Parameter.Type.STRING_ARRAY)
                    if self.node.get_parameter_or(name).type_ == Parameter.Type.NOT_SET:   # no override
                        self.node.set_parameters([Parameter(name, Parameter.Type.STRING_ARRAY, [])])
                else:
                    self.node.declare_parameter(name, default, ParameterDescriptor(dynamic_typing=True))
            except Exception as exc:    # an invalid name or value
                raise TransportError(f"parameter {name!r}: {exc}") from None
        return self.node.get_parameter(name).value

    def message_class(self, ros_type: str):
        return _ros_class(ros_type)

    def service_classes(self, srv_type: str):
        cls = _ros_class(srv_type)
        return cls.Request, cls.Response

    def create_publisher(self, topic, ros_type, qos):
        cls, profile = _ros_class(ros_type), ros_qos(qos)

        def make(node: Node):
            return node.create_publisher(cls, topic, profile)
        pub = _Publisher(make(self.node), make)
        self._publishers.append(pub)
        return pub

    def reopen_publishers(self, fresh) -> int:
        """See :meth:`~.base.Transport.reopen_publishers`: a node of the same name on the initialised context
        ``fresh`` (``RclpyRuntime.fresh_context``) gets a publisher for each of this node's."""
        self._fresh_node = Node(self.node_name, namespace=self.namespace, context=fresh)
        for pub in self._publishers:
            pub.rebind(self._fresh_node)
        self.reopened = True
        return len(self._publishers)

    def create_subscription(self, topic, ros_type, qos, callback, on_drained=None, max_bytes=None) -> Subscription:
        guarded_cb = guarded(callback, self.get_logger(), f"subscription {topic}")
        drained = guarded(on_drained, self.get_logger(), f"subscription {topic} (drained)") if on_drained else None
        group = self._sub_group
        cls = _ros_class(ros_type)
        oversized = [0]
        if max_bytes is not None:
            # serialized messages: the size is checked before anything is deserialized
            from rclpy.serialization import deserialize_message
            limit = int(max_bytes)
            warn = RateLimitedLogger(self.get_logger())

            # JointState (the joint-state cache's subscription) by the struct reader: plain objects, a sixth of
            # rclpy's deserialization time; anything it cannot read goes to rclpy's deserializer
            fast = joint_state_cdr.plain_reader() if ros_type == "sensor_msgs/msg/JointState" else None

            def deliver(data):
                if len(data) > limit:
                    oversized[0] += 1
                    warn.warning("oversized", f"{topic}: dropped a message of {len(data)} bytes, longer than the "
                                              f"subscription's limit of {limit} bytes ({oversized[0]} so far)")
                    return
                msg = None
                if fast is not None:
                    try:
                        msg = fast(data)
                    except (ValueError, struct.error, UnicodeDecodeError):
                        msg = None
                guarded_cb(msg if msg is not None else deserialize_message(data, cls))
        else:
            deliver = guarded_cb

        def cb(msg):
            # the lock, not only the callback group, keeps the contract wherever the callback runs: an
            # executor's thread or the take loop (see _SubscriptionGroup)
            with self.exclusive:
                deliver(msg)
                if drained is not None and not group.loop_owned:    # an executor takes one message a time
                    drained()
        sub = self.node.create_subscription(cls, topic, cb, ros_qos(qos), callback_group=group,
                                            raw=max_bytes is not None)
        if drained is not None:
            self.drained[sub] = drained     # the take loop calls it once the queue is empty (see _take_loop)
        return Subscription(topic, ros_type, sub,
                            samples_oversized=(lambda: oversized[0]) if max_bytes is not None else None,
                            publisher_count=lambda: self.node.count_publishers(topic))

    def create_service(self, name, srv_type, handler, *, concurrency=SERVICE_CONCURRENCY, queue=SERVICE_QUEUE,
                       busy=None, limits=()):
        """Requests run on the executor's threads (enough for every service's gate: see RclpyRuntime);
        the gate bounds this service's share and refuses the excess with ``busy`` at once. ``limits`` are left
        to the handler: rclpy hands a service only the decoded request (its C conversion to Python objects
        runs before any Python code sees the request; docs/ros.md has the cost)."""
        self.serves_requests = True
        log = self.get_logger()

        def guarded_handler(request, response):
            try:
                return handler(request, response)
            except Exception as exc:      # every request gets an answer: an error response (failure_response)
                log.error("service %s: handler raised %s; answering with an error\n%s", name,
                          describe_exception(exc), short_traceback(exc))
                return failure_response(type(response)(), exc, name)
        gate = ServiceGate(concurrency, queue)

        def cb(request, response):
            arrival = time.monotonic()
            if not gate.try_enter():
                return busy_or_fallback(busy, request, response)
            try:
                with gate.slots:
                    _set_arrival(arrival)
                    try:
                        return guarded_handler(request, response)
                    finally:
                        _set_arrival(None)
            finally:
                gate.leave()
        srv = self.node.create_service(_ros_class(srv_type), name, cb, callback_group=self._srv_group)
        srv.mm_gate = gate
        return srv

    def create_client(self, name, srv_type) -> Client:
        return _Client(self.node, name, _ros_class(srv_type))

    def create_timer(self, period, callback, own_thread=False) -> Timer:
        """rclpy timer in the subscriptions' mutually exclusive callback group (see :class:`Transport`);
        ``own_thread``: in a callback group of its own, outside the node's ``exclusive`` lock, so that it runs
        while a subscription callback does."""
        period = check_period(period)
        guarded_cb = guarded(callback, self.get_logger(), "timer")
        if own_thread:
            return _Timer(self.node, period, guarded_cb, MutuallyExclusiveCallbackGroup())

        def cb():
            with self.exclusive:
                guarded_cb()
        return _Timer(self.node, period, cb, self._sub_group)

    def create_action_server(self, name, action_type, execute, goal_callback=None, cancel_callback=None):
        """``rclpy.action.ActionServer`` with the transport's callback conventions (see :class:`Transport`)."""
        from rclpy.action import ActionServer, CancelResponse, GoalResponse

        cls = _ros_class(action_type)
        log = self.get_logger()
        self.serves_requests = True

        def run(handle):
            goal = _RclpyServerGoal(handle)
            try:
                returned = execute(goal)
            except Exception as exc:        # noqa: BLE001 -- the goal ends, the server goes on
                log.error("action %s: execute raised %s", name, describe_exception(exc))
                if handle.is_active:
                    handle.abort()
                return cls.Result()
            if handle.is_active:
                log.warning("action %s: goal left open by execute; aborting it", name)
                handle.abort()
                goal.result = goal.result if goal.result is not None else returned
            return goal.result if goal.result is not None else cls.Result()

        def on_goal(goal):
            ok = True if goal_callback is None else bool(goal_callback(goal))
            return GoalResponse.ACCEPT if ok else GoalResponse.REJECT

        def on_cancel(handle):
            ok = True if cancel_callback is None else bool(cancel_callback(_RclpyServerGoal(handle)))
            return CancelResponse.ACCEPT if ok else CancelResponse.REJECT

        return ActionServer(self.node, cls, name, execute_callback=run, goal_callback=on_goal,
                            cancel_callback=on_cancel, callback_group=ReentrantCallbackGroup())

    def create_action_client(self, name, action_type) -> ActionClient:
        """``rclpy.action.ActionClient``; the node must be spinning (its replies arrive through the
        executor)."""
        return _RclpyActionClient(self.node, name, _ros_class(action_type))

    def now(self):
        t = self.node.get_clock().now().seconds_nanoseconds()
        return int(t[0]), int(t[1])

    def _parameter_value(self, name, default):
        return self._declare(name, self._defaults.get(name, default))

    def get_logger(self):
        return _LoggerAdapter(self.node.get_logger())

    def spin(self, stop=None):
        executor = MultiThreadedExecutor(context=self.node.context)
        executor.add_node(self.node)
        stop = stop or threading.Event()
        while rclpy.ok(context=self.node.context) and not stop.is_set():
            executor.spin_once(timeout_sec=0.2)
        executor.remove_node(self.node)

    def close(self):
        try:
            if self._fresh_node is not None:
                self._fresh_node.destroy_node()
            self.node.destroy_node()
        finally:
            if self._own_init and rclpy.ok():
                rclpy.shutdown()


class _LoggerAdapter:
    """rclpy's logger with the ``logging``-style ``%`` formatting the node code uses."""

    def __init__(self, logger):
        self._l = logger

    def _fmt(self, msg, args):
        return msg % args if args else msg

    def debug(self, msg, *args):
        self._l.debug(self._fmt(msg, args))

    def info(self, msg, *args):
        self._l.info(self._fmt(msg, args))

    def warning(self, msg, *args):
        self._l.warning(self._fmt(msg, args))

    def error(self, msg, *args, exc_info=False):
        text = self._fmt(msg, args)
        if exc_info:                       # as logging does: the traceback of the exception being handled
            import traceback
            text += "\n" + traceback.format_exc().rstrip()
        self._l.error(text)


def _take_loop(node: RclpyNode, context, stop: threading.Event) -> None:
    """Serve ``node``'s subscriptions without an executor: wait on them alone (an rcl wait set of just these,
    as ``rclpy.wait_for_message`` does) and, on each wake-up, take every queued message of each and run its
    callback in place, holding the node's ``exclusive`` lock, then its ``on_drained`` hook once the queue is
empty (or TAKE_BATCH messages were taken) (see :meth:`~.base.Transport.create_subscription`). Subscriptions created later are picked up on the
    next wake-up (at most 0.2 s)."""
    from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy

    wait_set, size = None, -1
    while context.ok() and not stop.is_set():
        subs = list(node.node.subscriptions)
        if not subs:
            stop.wait(0.2)
            continue
        try:
            if len(subs) != size:
                wait_set, size = _rclpy.WaitSet(len(subs), 0, 0, 0, 0, 0, context.handle), len(subs)
            # the handles held (entered) while the wait set points at them; entered and left by hand, not
            # through an ExitStack: this runs on every wake-up, up to thousands per second
            handles = [sub.handle for sub in subs]
            entered = 0
            try:
                for h in handles:
                    h.__enter__()
                    entered += 1
                wait_set.clear_entities()
                for h in handles:
                    wait_set.add_subscription(h)
                wait_set.wait(200_000_000)
                ready = set(wait_set.get_ready_entities("subscription"))
                ready_subs = [sub for sub, h in zip(subs, handles) if h.pointer in ready]
            finally:
                for h in reversed(handles[:entered]):
                    h.__exit__(None, None, None)
            for sub in ready_subs:
                took = False
                for _ in range(TAKE_BATCH):     # bounded: a queue refilled as fast as it drains still ends
                    if stop.is_set():
                        break
                    with sub.handle:
                        taken = sub.handle.take_message(sub.msg_type, sub.raw)
                    if taken is None:
                        break
                    took = True
                    sub.callback(taken[0])      # holds node.exclusive; guarded: an exception is logged
                drained = node.drained.get(sub)
                if took and drained is not None:
                    with node.exclusive:
                        drained()
        except Exception as exc:                  # noqa: BLE001 -- a destroyed handle while closing
            if stop.is_set() or not context.ok():
                break
            node.get_logger().warning("subscription take loop: %s: %s", type(exc).__name__, exc)
            stop.wait(0.05)


class RclpyRuntime:
    """rclpy initialised once for the process (with the ``--ros-args`` it was given) and its nodes.

    Threads (chosen in :meth:`spin`, once every node has made its entities): nodes that serve services or
    actions share one multi-threaded executor, so a long request (IK) never blocks a cheap one. Every other
    node (the state publisher: subscriptions, timers, publishers) gets a single-threaded executor of its
    own for its parameter services and timers, and a take loop (:func:`_take_loop`) for its subscriptions:
    rclpy's executors rebuild their wait set from every entity of their nodes on each wake-up, run each
    callback as a task (the multi-threaded one through a thread pool) and take one message per wake-up, which
    cost the state publisher 2-3x its own work per joint_states message; on one shared executor a 500 Hz
    stream fell ~0.1 s behind (BENCHMARKS.md). The loop waits on the subscriptions alone and drains each
    queue per wake-up.
    """

    def __init__(self, ros_args=None):
        self.context = rclpy.context.Context()
        self._args = ["mechanism_model_ros"] + list(ros_args or [])
        self._fresh: list = []          # contexts made by fresh_context
        rclpy.init(args=self._args, context=self.context)
        # threads for every service's concurrent and queued requests, so a saturated service (IK) never
        # holds the threads a cheap one (FK) needs; idle threads cost nothing
        self.executor = MultiThreadedExecutor(num_threads=EXECUTOR_THREADS, context=self.context)
        self.nodes: list[RclpyNode] = []
        self._own: list[tuple[RclpyNode, SingleThreadedExecutor]] = []

    def node(self, name: str, namespace: str = "/", parameters: dict | None = None) -> RclpyNode:
        n = RclpyNode(name, namespace, parameters, context=self.context)
        self.nodes.append(n)
        self.executor.add_node(n.node)
        return n

    def _spin_alone(self, executor, stop: threading.Event) -> None:
        try:
            while self.context.ok() and not stop.is_set():
                executor.spin_once(timeout_sec=0.2)
        except ExternalShutdownException:   # the context shut down under it: serve sees that and closes
            pass

    def spin(self, stop: threading.Event) -> None:
        """Spin every node until ``stop`` is set (see the class doc for which thread runs what)."""
        threads = []
        for n in self.nodes:
            if n.serves_requests or any(node is n for node, _ in self._own):
                continue
            self.executor.remove_node(n.node)
            ex = SingleThreadedExecutor(context=self.context)
            ex.add_node(n.node)
            self._own.append((n, ex))
            # before either thread starts: the executor must never take from a subscription the loop owns
            n._sub_group.loop_owned = True
            threads.append(threading.Thread(target=self._spin_alone, args=(ex, stop), daemon=True,
                                            name=f"mm-executor-{n.node_name}"))
            threads.append(threading.Thread(target=_take_loop, args=(n, self.context, stop), daemon=True,
                                            name=f"mm-subscriptions-{n.node_name}"))
        for t in threads:
            t.start()
        try:
            while self.context.ok() and not stop.is_set():
                self.executor.spin_once(timeout_sec=0.2)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=2.0)

    def fresh_context(self):
        """A new initialised context with the process's ROS arguments, for :meth:`RclpyNode.reopen_publishers`
        once :attr:`context` was shut down under the nodes (shut down by :meth:`shutdown`)."""
        ctx = rclpy.context.Context()
        rclpy.init(args=self._args, context=ctx)
        self._fresh.append(ctx)
        return ctx

    def shutdown(self) -> None:
        self.executor.shutdown()
        for _, ex in self._own:
            ex.shutdown()
        for ctx in [self.context, *self._fresh]:
            if ctx.ok():
                rclpy.shutdown(context=ctx)
