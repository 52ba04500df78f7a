"""Gravity-compensation torques for a controller's feed-forward (CLARAty 13.4.4), published by the state
publisher when its parameter ``gravity_compensation`` is true (off by default).

For every accepted ``joint_states`` message it publishes a ``sensor_msgs/JointState`` on
``gravity_compensation_topic`` (default ``gravity_compensation``; reliable, depth 10) stamped like the joint
states: ``name`` the actuated independent coordinates (a floating base and passive joints are left out),
``position`` the values used, ``effort`` the torques (N m) or forces (N) that hold the mechanism against
gravity there (:func:`mechanism_model_core.statics.gravity_torques`, couplings folded onto the independent
coordinates). Parameter ``gravity``: three values in m/s^2 in the model's root frame (default 0 0 -9.81).
"""

from __future__ import annotations

import numpy as np

from mechanism_model_core.statics import gravity_torques, passive_coordinates

from . import qos
from .joint_state_cache import JointStateUpdate


class GravityCompensation:
    """Publishes g(q) for each joint-state update of the cache it listens to."""

    def __init__(self, transport, mechanism, joint_states, frame_prefix: str = ""):
        g = transport.get_parameter("gravity", [0.0, 0.0, -9.81])
        try:
            g = np.array([float(v) for v in g], dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"parameter gravity must be three numbers, got {g!r}") from None
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError(f"parameter gravity must be three finite numbers (m/s^2), got {list(g)}")
        self.gravity = g
        self.transport = transport
        self.mechanism = mechanism
        self.topic = str(transport.get_parameter("gravity_compensation_topic", "gravity_compensation"))
        passive = set(passive_coordinates(mechanism))
        indep = list(mechanism.independent_coordinates)
        self.names = [c for c in indep if c not in passive]
        self.index = np.array([indep.index(c) for c in self.names], dtype=int)
        self.full_index = np.array([mechanism.coordinate_names.index(c) for c in self.names], dtype=int)
        self.JointState = transport.message_class("sensor_msgs/msg/JointState")
        self.pub = transport.create_publisher(self.topic, "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(10))
        self.published = 0
        self.log = transport.get_logger()
        joint_states.add_listener(self.on_update)

    def on_update(self, update: JointStateUpdate) -> None:
        try:
            q = self.mechanism.configuration(update.latest, measured=True)   # as reported
        except Exception as exc:        # a bad message never stops the publisher
            self.log.warning(f"gravity compensation skipped: {exc}")
            return
        tau = gravity_torques(self.mechanism, q, self.gravity)
        msg = self.JointState()
        stamp = update.stamp if update.stamp is not None else self.transport.now()
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp[0]), int(stamp[1])
        msg.name = list(self.names)
        msg.position = [float(v) for v in q[self.full_index]]
        msg.effort = [float(v) for v in tau[self.index]]
        self.pub.publish(msg)
        self.published += 1


def maybe_start(transport, mechanism, joint_states) -> GravityCompensation | None:
    """A :class:`GravityCompensation` when the node's ``gravity_compensation`` parameter is true."""
    on = transport.get_parameter("gravity_compensation", False)
    if isinstance(on, str):
        on = on.strip().lower() in ("1", "true", "yes", "on")
    return GravityCompensation(transport, mechanism, joint_states) if on else None


__all__ = ["GravityCompensation", "maybe_start"]
