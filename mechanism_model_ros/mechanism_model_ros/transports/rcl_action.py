"""ROS 2 actions over any transport's services and topics: rcl_action's wire protocol (see
:mod:`mechanism_model_ros.action_types`) written against the :class:`~.base.Transport` interface, so the Cyclone
transport (interoperating with rclcpp_action servers and clients on rmw_cyclonedds_cpp) and the in-memory
transport (unit tests of node logic) share one implementation.

What it needs of a transport beyond the interface: clients with ``call_async`` (a future of the reply) and
``service_is_ready()``, subscriptions with the ``publisher_count`` capability, and services whose handler may
return a :class:`concurrent.futures.Future` (a deferred reply, sent when it completes).
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from typing import Callable

from ..qos import DEFAULT, QoS
from .typegen import message_class
from .base import (STATUS_ABORTED, STATUS_CANCELED, STATUS_SUCCEEDED, ActionClient, ActionResult, GoalHandle,
                   ServerGoalHandle, Transport, describe_exception, resolve_name)

#: the status topic's QoS (rcl_action: reliable, transient local, depth 1)
STATUS_QOS = QoS(depth=1, transient_local=True)


def _action_name(node: Transport, name: str) -> str:
    return resolve_name(name, node.namespace, node.node_name)


class RclGoalHandle(GoalHandle):
    def __init__(self, client: "RclActionClient", goal_id: bytes, accepted: bool):
        self.client = client
        self.goal_id = goal_id
        self.accepted = accepted
        self._status = 1 if accepted else 0
        self._future: concurrent.futures.Future = concurrent.futures.Future()
        if not accepted:
            self._future.set_result(ActionResult(0, None))

    def result_future(self) -> concurrent.futures.Future:
        return self._future

    def cancel(self, timeout: float = 10.0) -> int:
        req = self.client.cancel_client.request()
        req.goal_info.goal_id.uuid = list(self.goal_id)
        return int(self.client.cancel_client.call(req, timeout).return_code)

    @property
    def status(self) -> int:
        return self._status


class RclActionClient(ActionClient):
    """rcl_action's client protocol over a transport: ``<name>/_action/send_goal``,
    ``get_result`` (requested as soon as a goal is accepted; the server answers when the goal ends) and
    ``cancel_goal`` services, ``feedback`` and ``status`` topics."""

    def __init__(self, node: Transport, name: str, action_type: str):
        self.name = _action_name(node, name)
        base = self.name + "/_action"
        self.action_type = action_type
        self.goal_cls = message_class(action_type + "_Goal")
        self.send_client = node.create_client(base + "/send_goal", action_type + "_SendGoal")
        self.result_client = node.create_client(base + "/get_result", action_type + "_GetResult")
        self.cancel_client = node.create_client(base + "/cancel_goal", "action_msgs/srv/CancelGoal")
        self._handles: dict[bytes, RclGoalHandle] = {}
        self._feedback: dict[bytes, Callable] = {}
        self._lock = threading.Lock()
        self._topic_readers = (
            node.create_subscription(base + "/feedback", action_type + "_FeedbackMessage", DEFAULT,
                                     self._on_feedback),
            node.create_subscription(base + "/status", "action_msgs/msg/GoalStatusArray",
                                     STATUS_QOS, self._on_status))

    def goal(self):
        return self.goal_cls()

    def server_is_ready(self) -> bool:
        """The three services and the feedback and status topics are matched (rcl_action_server_is_available)."""
        return all(c.service_is_ready() for c in (self.send_client, self.result_client, self.cancel_client)) and \
            all(r.publisher_count() for r in self._topic_readers)

    def wait_for_server(self, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.server_is_ready():
                return True
            time.sleep(0.02)
        return self.server_is_ready()

    def send_goal(self, goal, feedback_callback=None, timeout: float = 10.0) -> GoalHandle:
        goal_id = uuid.uuid4().bytes
        req = self.send_client.request()
        req.goal_id.uuid = list(goal_id)
        req.goal = goal
        if feedback_callback is not None:
            with self._lock:
                self._feedback[goal_id] = feedback_callback
        try:
            reply = self.send_client.call(req, timeout)
        except BaseException:
            with self._lock:
                self._feedback.pop(goal_id, None)
            raise
        handle = RclGoalHandle(self, goal_id, bool(reply.accepted))
        if not handle.accepted:
            with self._lock:
                self._feedback.pop(goal_id, None)
            return handle
        with self._lock:
            self._handles[goal_id] = handle
        rreq = self.result_client.request()
        rreq.goal_id.uuid = list(goal_id)
        fut = self.result_client.call_async(rreq)

        def done(f):
            with self._lock:
                self._handles.pop(goal_id, None)
                self._feedback.pop(goal_id, None)
            try:
                rep = f.result()
            except BaseException as exc:   # noqa: BLE001 -- handed to the waiter
                handle._future.set_exception(exc)
                return
            handle._status = int(rep.status)
            handle._future.set_result(ActionResult(int(rep.status), rep.result))
        fut.add_done_callback(done)
        return handle

    def _on_feedback(self, msg):
        key = bytes(msg.goal_id.uuid)
        with self._lock:
            cb = self._feedback.get(key)
        if cb is not None:
            cb(msg.feedback)

    def _on_status(self, msg):
        with self._lock:
            for st in msg.status_list:
                h = self._handles.get(bytes(st.goal_info.goal_id.uuid))
                if h is not None:
                    h._status = int(st.status)


class RclServerGoal(ServerGoalHandle):
    def __init__(self, server: "RclActionServer", goal_id: bytes, request, stamp):
        self.server = server
        self.goal_id = goal_id
        self.request = request
        self.stamp = stamp
        self._status = 1                    # ACCEPTED
        self._cancel = threading.Event()
        self.result = None
        self.done = concurrent.futures.Future()

    @property
    def status(self) -> int:
        return self._status

    @property
    def is_cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def publish_feedback(self, feedback) -> None:
        msg = self.server.feedback_cls(feedback=feedback)
        msg.goal_id.uuid = list(self.goal_id)
        self.server.feedback_pub.publish(msg)

    def _finish(self, status: int, result) -> None:
        if self.done.done():
            return
        self._status = status
        self.result = result if result is not None else self.server.result_cls()
        self.server._publish_status()
        self.done.set_result((status, self.result))

    def succeed(self, result=None) -> None:
        self._finish(STATUS_SUCCEEDED, result)

    def abort(self, result=None) -> None:
        self._finish(STATUS_ABORTED, result)

    def canceled(self, result=None) -> None:
        self._finish(STATUS_CANCELED, result)


class RclActionServer:
    """rcl_action's server protocol over a transport (see :class:`RclActionClient`).

    ``execute(goal_handle) -> result`` runs on its own thread per goal; it ends the goal with
    ``succeed``/``abort``/``canceled`` (a goal left open when it returns is aborted, as rclpy does).
    ``goal_callback(goal) -> bool`` accepts or rejects; ``cancel_callback(goal_handle) -> bool`` accepts a cancel
    request. Results are kept for ``result_timeout`` seconds after the goal ends (rcl_action's default 900 s) so
    a late get_result is answered; a get_result for a running goal is answered when it ends."""

    def __init__(self, node: Transport, name: str, action_type: str, execute, goal_callback=None,
                 cancel_callback=None, result_timeout: float = 900.0):
        self.node = node
        self.name = _action_name(node, name)
        base = self.name + "/_action"
        self.execute = execute
        self.goal_callback = goal_callback or (lambda goal: True)
        self.cancel_callback = cancel_callback or (lambda handle: True)
        self.result_timeout = float(result_timeout)
        self.result_cls = message_class(action_type + "_Result")
        self.feedback_cls = message_class(action_type + "_FeedbackMessage")
        self.Status = message_class("action_msgs/msg/GoalStatus")
        self.StatusArray = message_class("action_msgs/msg/GoalStatusArray")
        self.GoalInfo = message_class("action_msgs/msg/GoalInfo")
        self._goals: dict[bytes, RclServerGoal] = {}
        self._ended: dict[bytes, float] = {}
        self._lock = threading.Lock()
        self.feedback_pub = node.create_publisher(base + "/feedback", action_type + "_FeedbackMessage", DEFAULT)
        self.status_pub = node.create_publisher(base + "/status", "action_msgs/msg/GoalStatusArray", STATUS_QOS)
        node.create_service(base + "/send_goal", action_type + "_SendGoal", self._on_send_goal)
        node.create_service(base + "/get_result", action_type + "_GetResult", self._on_get_result)
        node.create_service(base + "/cancel_goal", "action_msgs/srv/CancelGoal", self._on_cancel)

    def _publish_status(self) -> None:
        now = time.monotonic()
        with self._lock:
            for gid in [g for g, t in self._ended.items() if now - t > self.result_timeout]:
                self._ended.pop(gid, None)
                self._goals.pop(gid, None)
            goals = list(self._goals.values())
        msg = self.StatusArray()
        for g in goals:
            st = self.Status(status=g.status)
            st.goal_info.goal_id.uuid = list(g.goal_id)
            st.goal_info.stamp.sec, st.goal_info.stamp.nanosec = g.stamp
            msg.status_list.append(st)
        self.status_pub.publish(msg)

    def _on_send_goal(self, request, response):
        gid = bytes(request.goal_id.uuid)
        with self._lock:
            known = gid in self._goals
        accepted = not known and bool(self.goal_callback(request.goal))
        stamp = self.node.now()
        response.accepted = accepted
        response.stamp.sec, response.stamp.nanosec = stamp
        if not accepted:
            return response
        handle = RclServerGoal(self, gid, request.goal, stamp)
        handle.done.add_done_callback(lambda _f, g=gid: self._ended.__setitem__(g, time.monotonic()))
        with self._lock:
            self._goals[gid] = handle
        handle._status = 2                 # EXECUTING
        self._publish_status()
        threading.Thread(target=self._run, args=(handle,), daemon=True, name="mm-action-execute").start()
        return response

    def _run(self, handle: RclServerGoal) -> None:
        try:
            result = self.execute(handle)
        except Exception as exc:           # noqa: BLE001 -- the goal ends, the server goes on
            self.node.get_logger().error("action %s: execute raised %s", self.name, describe_exception(exc))
            handle.abort()
            return
        if not handle.done.done():
            self.node.get_logger().warning("action %s: goal left open by execute; aborting it", self.name)
            handle.abort(result)

    def _on_get_result(self, request, response):
        gid = bytes(request.goal_id.uuid)
        with self._lock:
            handle = self._goals.get(gid)
        if handle is None:
            response.status = 0            # STATUS_UNKNOWN, as rcl_action answers an unknown goal
            return response
        fut: concurrent.futures.Future = concurrent.futures.Future()

        def done(f):
            status, result = f.result()
            response.status = status
            response.result = result
            fut.set_result(response)
        handle.done.add_done_callback(done)
        return fut                          # answered when the goal ends (see _CycloneService)

    def _on_cancel(self, request, response):
        gid = bytes(request.goal_info.goal_id.uuid)
        with self._lock:
            if any(gid):
                targets = [self._goals[gid]] if gid in self._goals else []
            else:                           # a zero id: every goal (stamp filtering not implemented)
                targets = list(self._goals.values())
        running = [h for h in targets if not h.done.done()]
        canceling = [h for h in running if self.cancel_callback(h)]
        for h in canceling:
            h._cancel.set()
            h._status = 3                  # CANCELING
        if canceling:
            self._publish_status()
        # action_msgs/CancelGoal: ERROR_NONE, ERROR_REJECTED, ERROR_UNKNOWN_GOAL_ID, ERROR_GOAL_TERMINATED
        if canceling:
            response.return_code = 0
        elif not targets:
            response.return_code = 2 if any(gid) else 0
        elif not running:
            response.return_code = 3
        else:
            response.return_code = 1
        for h in canceling:
            info = self.GoalInfo()
            info.goal_id.uuid = list(h.goal_id)
            info.stamp.sec, info.stamp.nanosec = h.stamp
            response.goals_canceling.append(info)
        return response


class ActionsOverServices:
    """``create_action_client`` / ``create_action_server`` of a transport by this module's classes (mixed into
    the Cyclone and in-memory transports)."""

    def create_action_client(self, name: str, action_type: str) -> ActionClient:
        return RclActionClient(self, name, action_type)

    def create_action_server(self, name: str, action_type: str, execute, goal_callback=None,
                             cancel_callback=None):
        return RclActionServer(self, name, action_type, execute, goal_callback, cancel_callback)


__all__ = ["ActionsOverServices", "RclActionClient", "RclActionServer", "RclGoalHandle", "RclServerGoal"]
