"""State publisher: what robot_state_publisher does, for any mechanism model.

* Subscribes to ``joint_states`` (any number of publishers, each may report some joints: arm, mobility,
  mast ...); keeps the latest value of every joint coordinate.
* Joints nobody reports take their value from the model: coupled joints follow their coupling (a rocker
  differential, URDF mimic), the rest stay at home, so RViz never shows a broken link.
* Never falls behind: whatever ``joint_states`` messages are queued when it wakes are merged into the
  joint cache and the newest state is published once (``publish_frequency`` 0, the default: on every
  change), every moving joint's transform on ``/tf`` (reliable, volatile, depth 100), stamped with the
  newest stamp merged (now, for a zero stamp). With ``publish_frequency`` > 0 (Hz) the merged state is
  published at most that often, as robot_state_publisher's parameter.
* ``/tf`` stamps never go backwards (:mod:`mechanism_model_ros.state_merge`): a wake-up whose newest stamp is
  not newer than the last published one is not published (tf2 would ignore a repeated stamp with a
  TF_REPEATED_DATA warning on every listener, and file an older state behind a newer one); its values go out
  with the next newer stamp.
* Several sources (an arm controller, a wheel controller, a gripper) merge by joint name; each transform
  carries the publication's stamp (the newest merged: the zero-order hold of every joint at that time, so tf2
  lookups at that time find every frame), while each joint's own stamp is kept
  (:meth:`StatePublisher.joint_stamps`). A joint whose every source has gone silent (no report for
  ``joint_silence_timeout`` s, or 5 of its usual intervals if longer) is reported: a warning in the log and
  WARN on ``/diagnostics`` (``diagnostic_msgs/DiagnosticArray``, every ``diagnostics_period`` s; where the
  distribution has no diagnostic_msgs, the log only).
* Publishes every fixed transform and named frame once on ``/tf_static`` (reliable, transient-local,
  depth 1, all in one message) and the model's URDF on ``robot_description`` (reliable, transient-local,
  depth 1), so late subscribers get both.

Closed chains (a four-bar): with ``loop_closures`` (``["frame_a:frame_b:position", ...]``, see
:mod:`mechanism_model_ros.loop_closures`) the joints nobody reports are solved so the loops close.

Floating joints (a rover's chassis on the ground): robot_state_publisher never publishes them, because the
pose of a free body usually comes from localization (``odom -> base``). Parameter ``floating_joints``:
``when_reported`` (default) publishes a floating joint's transforms only once ``joint_states`` has named
one of its coordinates (``chassis.x`` ...), so a localization node can own the transform to the chassis;
``always`` publishes it from the start (home until reported: RViz with the model's root as fixed frame
shows the whole robot at once); ``never`` is robot_state_publisher's behaviour.

Late joiners (RViz started after the node) see the whole robot: the node publishes the home pose at start,
stamped now, and re-publishes the current state (home until joint states arrive; the last state while every
source is silent) every ``idle_republish_period`` s (default 1; 0: never) when nothing else was published,
stamped now (robot_state_publisher publishes nothing for moving joints until joint_states arrive;
joint_state_publisher would publish the home pose at 10 Hz). Joint states stamped slightly before such a
placeholder (in flight at start-up) wait for a newer one, so stamps stay in order; joint states stamped more
than a second before it are on another clock (a simulation without ``use_sim_time`` here, a replay) and go out
anyway, once, with a warning: the one step back.

Parameters: ``robot_description`` (URDF text, as robot_state_publisher takes it; republished verbatim),
``model`` (file or library name, used when ``robot_description`` is empty; default: the library's default
model; a URDF file is republished verbatim when all its links are model frames), ``robot_description_topic``
(serve's ``--robot-description-topic``: the model is the live description on that topic, and this node
does not publish ``robot_description`` itself), ``frame_prefix``
(prepended to every frame id), ``floating_joints``, ``loop_closures``, ``loop_closure_timeout`` (s, default 0.02) and
``loop_closure_max_iterations`` (default 10000: each closure solve ends at whichever comes first),
``joint_states_topics`` (list of ``sensor_msgs/JointState`` topics read instead of ``joint_states``, merged by
joint name: ``["/corner_state", "/drive_state"]`` shows an Open Source Rover's corner angles and wheel positions
from its own topics, no bridge; default empty: ``joint_states``),
``joint_states_reliable`` (false: best-effort subscription as
robot_state_publisher's SensorDataQoS, which also hears reliable publishers; true: reliable),
``publish_frequency`` (Hz, 0: on every change), ``idle_republish_period`` (s), ``joint_silence_timeout`` (s,
default 1), ``diagnostics_period`` (s, default 1; 0: no /diagnostics).

Bad input never stops the node, each case with a rate-limited warning: a message with mismatched lengths
or repeated names is dropped; unknown joint names are ignored; a joint whose position is NaN or infinite
keeps its last value while the message's other joints apply (joint_state_broadcaster reports NaN for a
joint without a position interface, such as a velocity-controlled wheel); a message whose known joints are
all non-finite is dropped.
"""

from __future__ import annotations

import threading

import numpy as np

from . import qos
from .conversions import BadMessage, ReportedConfiguration, fill_transform, matrices_to_quaternions_xyzw, set_stamp
from .joint_state_cache import JointStateCache, JointStateUpdate, MergedJointStates
from .state_merge import Publication, StateMerger
from .tf_tree import build_tf_tree
from .transports.base import RateLimitedLogger, Transport
from mechanism_model_core.io.urdf import to_urdf
from .gravity_compensation import maybe_start
from .loop_closures import LoopCloser
from .serve import run_nodes


#: values of the ``floating_joints`` parameter
FLOATING_MODES = ("when_reported", "always", "never")


class StatePublisher:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, model_path: str | None = None,
                 frame_prefix: str | None = None, description: str | None = None,
                 joint_states: JointStateCache | None = None, publish_description: bool = True):
        """``description``: URDF text to publish verbatim on ``robot_description`` (the
        ``robot_description`` parameter, or a URDF model file whose links are all frames of the model);
        ``None``: the model's own URDF export. ``joint_states``: the process's shared cache (``serve``
        passes it); None: the node subscribes on its own."""
        self.transport = transport
        self.mechanism = mechanism
        self.model_path = model_path
        self.description = description
        self.frame_prefix = str(transport.get_parameter("frame_prefix", "") if frame_prefix is None
                                else frame_prefix)
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        #: guards the merger and each publication: the joint-state cache may run on another node's thread than
        #: this node's timers (rclpy, serve)
        self._publish_lock = threading.RLock()
        self._tf_msg = None
        self._tf_template = None
        self.merger = StateMerger()
        self.transforms_out = 0
        p = transport.get_parameter
        self.publish_frequency = _non_negative("publish_frequency", p("publish_frequency", 0.0))
        self.idle_republish_period = _non_negative("idle_republish_period", p("idle_republish_period", 1.0))
        self.silence_timeout = _non_negative("joint_silence_timeout", p("joint_silence_timeout", 1.0))
        self.diagnostics_period = _non_negative("diagnostics_period", p("diagnostics_period", 1.0))
        self._published_since_tick = False
        self._clock_steps_warned = 0
        self._silent: set[str] = set()

        self.static_edges, self.all_moving = build_tf_tree(mechanism)
        self._configuration = ReportedConfiguration(mechanism)
        self.floating_joints = str(transport.get_parameter("floating_joints", "when_reported")).strip().lower()
        if self.floating_joints not in FLOATING_MODES:
            raise ValueError(f"parameter floating_joints must be one of {', '.join(FLOATING_MODES)}, "
                             f"got {self.floating_joints!r}")
        #: floating joint -> its coordinate names; which floating joints are on /tf
        floating = {j for j, f in zip(self.all_moving.joints, self.all_moving.floating) if f}
        self._floating_coords = {j: set(mechanism.joint(j).coordinate_names) for j in floating}
        self._shown_floating = set(self._floating_coords) if self.floating_joints == "always" else set()
        held = sorted(set(self._floating_coords) - self._shown_floating)
        if held:
            below = [b.name for b in mechanism.bodies[1:] if b.joint is not None and b.joint.name in held]
            self.log.info("floating joint(s) %s not on /tf %s (floating_joints: %s): the TF tree from %s down "
                          "is not connected to %r; use %s as RViz's fixed frame, or set floating_joints to "
                          "'always'", ", ".join(held),
                          "until joint_states report their coordinates" if self.floating_joints ==
                          "when_reported" else "(localization publishes them)", self.floating_joints,
                          ", ".join(below), mechanism.ground, repr(below[0]) if below else "a body below them")
        self._set_moving_edges()
        self.TFMessage = transport.message_class("tf2_msgs/msg/TFMessage")
        self.TransformStamped = transport.message_class("geometry_msgs/msg/TransformStamped")
        self.tf_pub = transport.create_publisher("/tf", "tf2_msgs/msg/TFMessage", qos.TF)
        self.tf_static_pub = transport.create_publisher("/tf_static", "tf2_msgs/msg/TFMessage",
                                                        qos.TF_STATIC)
        self.description_pub = None
        if publish_description:     # not when the model came from another node's robot_description topic
            self.description_pub = transport.create_publisher("robot_description", "std_msgs/msg/String",
                                                              qos.LATCHED)
        self.publish_static()
        self.publish_description()
        self.closer = None
        closures = transport.get_parameter("loop_closures", [])
        if closures:
            self.closer = LoopCloser(mechanism, closures,
                                     float(transport.get_parameter("loop_closure_timeout", 0.02)),
                                     int(transport.get_parameter("loop_closure_max_iterations", 10000)))
        topics = [str(t) for t in (transport.get_parameter("joint_states_topics", []) or [])]
        reliable = bool(transport.get_parameter("joint_states_reliable", False))
        if topics:                       # a stack's own state topics (OSR's /corner_state, /drive_state)
            joint_states = MergedJointStates(transport, mechanism, topics, reliable=reliable)
        elif joint_states is None:
            joint_states = JointStateCache(transport, mechanism, reliable=reliable)
        self.joint_states = joint_states
        self.messages_rejected_here = 0
        joint_states.add_listener(self.on_update, self.on_drained)
        self.gravity_compensation = maybe_start(transport, mechanism, joint_states)
        self.diagnostics_pub = None
        if self.diagnostics_period > 0:
            try:
                self.DiagnosticArray = transport.message_class("diagnostic_msgs/msg/DiagnosticArray")
                self.DiagnosticStatus = transport.message_class("diagnostic_msgs/msg/DiagnosticStatus")
                self.KeyValue = transport.message_class("diagnostic_msgs/msg/KeyValue")
                self.diagnostics_pub = transport.create_publisher("/diagnostics",
                                                                  "diagnostic_msgs/msg/DiagnosticArray", qos.DEFAULT)
            except Exception as exc:    # a distribution without diagnostic_msgs (Jazzy's core)
                self.log.info("no /diagnostics (%s); silent joints are reported in the log only", exc)
        self.timers = []
        if self.publish_frequency > 0:
            self.timers.append(transport.create_timer(1.0 / self.publish_frequency, self.publish_pending))
        if self.idle_republish_period > 0:
            self.timers.append(transport.create_timer(self.idle_republish_period, self.on_idle_tick))
        if self.diagnostics_period > 0 or self.silence_timeout > 0:
            self.timers.append(transport.create_timer(self.diagnostics_period or 1.0, self.report_silence))
        # the home pose until somebody reports a joint (re-published while nothing else is: on_idle_tick)
        self.publish_placeholder()

    # ------------------------------------------------------------------ static parts
    def publish_static(self) -> None:
        stamp = self.transport.now()
        msg = self.TFMessage()
        if self.static_edges:
            T = np.array([e.T for e in self.static_edges])
            quats = matrices_to_quaternions_xyzw(T[:, :3, :3])
            for e, Ti, qi in zip(self.static_edges, T, quats):
                ts = self.TransformStamped()
                set_stamp(ts.header.stamp, stamp)
                ts.header.frame_id = self.frame_prefix + e.parent
                ts.child_frame_id = self.frame_prefix + e.child
                fill_transform(ts.transform, Ti, qi)
                msg.transforms.append(ts)
        self.tf_static_pub.publish(msg)

    def publish_description(self) -> None:
        if self.description_pub is None:
            return
        String = self.transport.message_class("std_msgs/msg/String")
        if self.description is not None:
            self.description_pub.publish(String(data=self.description))
            return
        try:
            text = to_urdf(self.mechanism)
        except Exception as exc:
            self.log.warning("cannot write the model as URDF (%s); robot_description is not published",
                             exc)
            return
        self.description_pub.publish(String(data=text))

    # ------------------------------------------------------------------ joint states
    @property
    def messages_in(self) -> int:
        return self.joint_states.messages_in

    @property
    def messages_rejected(self) -> int:
        return self.joint_states.messages_rejected + self.messages_rejected_here

    @property
    def messages_same_stamp(self) -> int:
        """Wake-ups not published because their newest stamp was not newer than the last published one."""
        return self.merger.held

    def on_joint_state(self, msg) -> None:
        """Take one ``joint_states`` message (through the cache, as the subscription does: one wake-up)."""
        self.joint_states.on_message(msg)
        self.joint_states.on_drained()

    def on_update(self, update: JointStateUpdate) -> None:
        """Merge an accepted joint-state message (published by :meth:`on_drained`)."""
        if self.floating_joints == "when_reported" and len(self._shown_floating) < len(self._floating_coords):
            self._show_reported_floating(update.values)
        stamp = update.stamp if update.stamp is not None else self.transport.now()
        with self._publish_lock:
            self.merger.add(tuple(update.values), stamp, self.transport.monotonic())

    def on_drained(self) -> None:
        """The queued messages are merged: publish the newest state (unless ``publish_frequency`` paces it)."""
        if self.publish_frequency <= 0:
            self.publish_pending()

    def publish_pending(self) -> None:
        """Publish the merged state once if anything new was merged and its stamp is newer than the last."""
        with self._publish_lock:
            steps = self.merger.clock_steps
            pub = self.merger.take()
            if pub is None:
                return
            if self.merger.clock_steps != steps:
                self.warn.warning("clock-step", "joint_states are stamped more than a second before the state "
                                                "published before them (the start-up home pose, stamped with "
                                                "this node's clock): the source runs on another clock "
                                                "(use_sim_time?); /tf steps back once to the source's clock")
            self._publish_state(self.joint_states.latest(), pub)
            self._published_since_tick = True

    def publish_placeholder(self) -> None:
        """Re-publish the current state (home until joint states arrive) stamped now, for late joiners."""
        with self._publish_lock:
            latest = self.joint_states.latest()
            self._publish_state(latest, self.merger.placeholder(self.transport.now()))

    def on_idle_tick(self) -> None:
        """Every ``idle_republish_period``: when nothing was published since the previous tick and no source
        is live (none yet, or all silent), re-publish the current state so late joiners see the robot."""
        with self._publish_lock:
            busy, self._published_since_tick = self._published_since_tick, False
            if busy:
                return
            if self.merger.has_inputs:
                reported = self.merger.joint_stamps()
                if set(self.merger.silent(self.transport.monotonic(), self.silence_timeout)) != set(reported):
                    return          # a source is alive, only slow: its next message is the next state
            self.publish_placeholder()

    def joint_stamps(self) -> dict:
        """Each reported joint's own stamp ``(sec, nanosec)``: the newest of the messages that named it."""
        with self._publish_lock:
            return self.merger.joint_stamps()

    def silent_joints(self) -> dict[str, float]:
        """``{joint: seconds since last reported}`` of the joints whose sources have gone silent."""
        with self._publish_lock:
            return self.merger.silent(self.transport.monotonic(), self.silence_timeout)

    def report_silence(self) -> None:
        """Log joints going silent (and coming back) and publish the node's status on ``/diagnostics``."""
        silent = self.silent_joints()
        gone, back = set(silent) - self._silent, self._silent - set(silent)
        if gone:
            self.log.warning("joint_states: no report for %s for %.1f s or more: their transforms keep the last "
                             "value", ", ".join(sorted(gone)[:10]) + (" ..." if len(gone) > 10 else ""),
                             min(silent[j] for j in gone))
        if back:
            self.log.info("joint_states: %s reported again", ", ".join(sorted(back)[:10]))
        self._silent = set(silent)
        if self.diagnostics_pub is None:
            return
        m = self.merger
        st = self.DiagnosticStatus()
        st.name = f"{self.transport.node_name}: joint_states"
        st.hardware_id = self.mechanism.name if isinstance(getattr(self.mechanism, "name", None), str) else ""
        if silent:
            level = 1
            st.message = f"{len(silent)} joint(s) silent: " + ", ".join(sorted(silent)[:10])
        elif not m.has_inputs:
            level, st.message = 0, "no joint_states yet: publishing the home pose"
        else:
            level, st.message = 0, "all reported joints live"
        # a ``byte`` field: bytes of length 1 in rclpy (an int would pass some distributions' setters and abort
        # the process in the C conversion: Jazzy), an integer in the Cyclone transport's classes
        st.level = bytes([level]) if isinstance(st.level, (bytes, bytearray)) else level
        values = [("inputs merged", m.inputs), ("publications", m.publications),
                  ("most inputs in one publication", m.max_merged), ("held (stamp not newer)", m.held),
                  ("re-published (late joiners)", m.placeholders), ("clock steps", m.clock_steps),
                  ("sources", len(m.sources))]
        values += [(f"silent: {j}", f"{a:.2f} s") for j, a in sorted(silent.items())]
        st.values = [self.KeyValue(key=k, value=str(v)) for k, v in values]
        arr = self.DiagnosticArray()
        set_stamp(arr.header.stamp, self.transport.now())
        arr.status = [st]
        self.diagnostics_pub.publish(arr)

    def _publish_state(self, latest: dict, pub: Publication) -> None:
        try:
            q = self._configuration(latest)
        except BadMessage as exc:
            self.messages_rejected_here += 1
            self.warn.warning("bad-configuration", f"joint_states state not published: {exc}")
            return
        if self.closer:
            q, closed = self.closer.close(q, set(latest))
            if not closed:
                self.warn.warning("loop-closure", "cannot close the mechanism's loops for the reported "
                                                  "joints; passive joints keep their last closed values")
        self.publish_moving(q, pub.stamp)

    def _set_moving_edges(self) -> None:
        """Select the moving edges to publish: every edge but those of floating joints not (yet) shown;
        the prepared /tf message is rebuilt on the next publication."""
        keep = ~self.all_moving.floating | np.array([j in self._shown_floating for j in self.all_moving.joints],
                                                    dtype=bool)
        self.moving = self.all_moving.subset(keep)
        self._moving_parents = [self.frame_prefix + p for p in self.moving.parents]
        self._moving_children = [self.frame_prefix + c for c in self.moving.children]
        self._tf_msg = None
        self._tf_template = None

    def _show_reported_floating(self, reported) -> None:
        """``floating_joints`` = when_reported: start publishing a floating joint once joint_states has
        named one of its coordinates."""
        new = {j for j, coords in self._floating_coords.items()
               if j not in self._shown_floating and not coords.isdisjoint(reported)}
        if new:
            with self._publish_lock:
                self._shown_floating |= new
                self._set_moving_edges()

    def latest_positions(self) -> dict[str, float]:
        return self.joint_states.latest()

    def _prepare_tf_message(self) -> None:
        msg = self.TFMessage()
        for parent, child in zip(self._moving_parents, self._moving_children):
            ts = self.TransformStamped()
            ts.header.frame_id = parent
            ts.child_frame_id = child
            ts.transform.rotation.w = 1.0
            msg.transforms.append(ts)
        self._tf_msg = msg
        make = self.tf_pub.numeric_template      # an optional capability of the transport's publisher
        if make is None:
            return
        tss = msg.transforms
        try:
            self._tf_template = make(msg, {
                "sec": ("i4", [(t.header.stamp, "sec") for t in tss]),
                "nanosec": ("u4", [(t.header.stamp, "nanosec") for t in tss]),
                "pose": ("f8", [(o, a) for t in tss for o, axes in ((t.transform.translation, "xyz"),
                                                                     (t.transform.rotation, "xyzw")) for a in axes]),
            })
        except ValueError as exc:
            self.log.info("fast TF serialization unavailable (%s); using the generic path", exc)

    def publish_moving(self, q: np.ndarray, stamp) -> None:
        """One /tf message with every published moving edge for full coordinates ``q``, stamped ``stamp``."""
        sec, nsec = int(stamp[0]), int(stamp[1])
        with self._publish_lock:
            if not len(self.moving):
                return
            poses = self.moving.xyzquat(q)
            if self._tf_msg is None:
                self._prepare_tf_message()
            if self._tf_template is not None:
                self._tf_template.publish({"sec": sec, "nanosec": nsec, "pose": poses})
            else:
                # the message objects are reused: publish() serializes before it returns
                msg = self._tf_msg
                for ts, (x, y, z, qx, qy, qz, qw) in zip(msg.transforms, poses.tolist()):
                    h = ts.header.stamp
                    h.sec, h.nanosec = sec, nsec
                    tr = ts.transform
                    tr.translation.x, tr.translation.y, tr.translation.z = x, y, z
                    tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w = qx, qy, qz, qw
                self.tf_pub.publish(msg)
        self.transforms_out += len(poses)

    @classmethod
    def from_served(cls, transport, served) -> "StatePublisher":
        """The node as ``serve`` starts it (:mod:`mechanism_model_ros.nodes`)."""
        return cls(transport, served.mechanism, served.model_path, description=served.description,
                   joint_states=served.joint_states(transport),
                   publish_description=not served.description_owned_elsewhere)

    def status(self) -> str:
        """This node's part of ``serve``'s status line."""
        m = self.merger
        return (f"transforms out: {self.transforms_out} ({m.publications} publications of {m.inputs} inputs, "
                f"at most {m.max_merged} merged in one; held, stamp not newer: {m.held}; re-published: "
                f"{m.placeholders}" + (f"; silent joints: {len(self._silent)}" if self._silent else "") + ")")

    def close(self) -> None:
        for t in self.timers:
            t.cancel()


def _non_negative(name: str, value) -> float:
    v = float(value)
    if not v >= 0 or v == float("inf"):
        raise ValueError(f"parameter {name} must be a finite number >= 0, got {value!r}")
    return v


def main(argv=None) -> int:
    """Console script ``state_publisher``: the node alone."""
    return run_nodes(argv, nodes=("state_publisher",), prog="state_publisher", default_transport="auto")
