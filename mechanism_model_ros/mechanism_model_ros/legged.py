"""Legged node: ``cmd_vel`` in, leg joint trajectories out to a ``joint_trajectory_controller``.

A thin adapter over :class:`mechanism_model_core.locomotion.legged.LeggedLocomotorModel` (all the math lives
there: gait planning, leg IK, the static margin at every sample, refusals with reasons):

* Subscribes ``cmd_vel`` (``geometry_msgs/Twist``: ``linear.x``, ``linear.y``, ``angular.z`` in the body
  frame) and ``joint_states`` (the process's shared cache).
* At each cycle boundary while commanded, plans one cycle of the gait for the latest twist and publishes it
  as a ``trajectory_msgs/JointTrajectory`` of every walking joint on ``/<controller>/joint_trajectory``
  (the first point ``transition`` seconds ahead, so the controller moves from where the legs are).

Safety (the rover's rules, every case logged, rate-limited):

* ``cmd_vel`` silent for ``cmd_vel_timeout`` s, or ``joint_states`` silent for ``joint_states_timeout`` s (or
  never heard, with ``require_joint_states``): a hold trajectory (one point at the measured positions) is
  published within one heartbeat period (``command_rate``; defaults 0.25 s + 50 ms, inside 0.5 s);
* a ``cmd_vel`` with NaN/inf, or faster than ``max_linear_speed`` / ``max_angular_speed``, is rejected;
* a gait the core refuses (static margin, reach, joint speed) is not sent: the legs hold, the reason is
  logged and counted;
* every trajectory is checked whole before it is sent: finite, within every joint's position limits, and
  the speed implied between consecutive points (the transition from the measured positions included)
  within every joint's velocity limit; otherwise it is not sent and the legs hold.

Parameters (units): ``gait`` (tripod, ripple, wave, crawl), ``period`` (s per cycle), ``swing_height`` (m),
``samples_per_cycle``, ``min_margin`` (m), ``controller`` (name of the joint_trajectory_controller),
``command_rate`` (Hz), ``cmd_vel_timeout`` (s), ``joint_states_timeout`` (s), ``require_joint_states``
(bool), ``max_linear_speed`` (m/s), ``max_angular_speed`` (rad/s), ``legs`` (foot frames; empty: found
from the model).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from mechanism_model_core.locomotion.legged import GaitInfeasible, LeggedLocomotorModel

from . import qos
from .transports.base import RateLimitedLogger, Transport

TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"


class LeggedNode:
    """The node logic over a :class:`~mechanism_model_ros.transports.base.Transport`."""

    def __init__(self, transport: Transport, mechanism, joint_states=None, start_timer: bool = True):
        self.transport = transport
        self.log = transport.get_logger()
        self.warn = RateLimitedLogger(self.log)
        p = transport.get_parameter
        feet = list(p("legs", [])) or None
        self.model = LeggedLocomotorModel(mechanism, feet=feet)
        m = mechanism
        self.gait = str(p("gait", "tripod"))
        self.period = float(p("period", 2.0))
        self.swing_height = float(p("swing_height", 0.03))
        self.samples = int(p("samples_per_cycle", 48))
        self.min_margin = float(p("min_margin", 0.0))
        self.rate = float(p("command_rate", 20.0))
        self.cmd_timeout = float(p("cmd_vel_timeout", 0.25))
        self.js_timeout = float(p("joint_states_timeout", 0.25))
        self.require_js = bool(p("require_joint_states", True))
        self.max_v = float(p("max_linear_speed", 0.2))
        self.max_w = float(p("max_angular_speed", 0.5))
        for what, v in (("period", self.period), ("command_rate", self.rate), ("cmd_vel_timeout", self.cmd_timeout),
                        ("joint_states_timeout", self.js_timeout)):
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"parameter {what} must be a positive number, got {v}")
        controller = str(p("controller", "leg_controller"))
        self.joint_names = list(self.model.joint_names)
        idx = [m.coordinate_index(n) for n in self.joint_names]
        self.lower = np.asarray(m.lower_limits)[idx]
        self.upper = np.asarray(m.upper_limits)[idx]
        self.vmax = np.where(np.isfinite(self.model.velocity_limits), self.model.velocity_limits, 1.0)
        self._stand = self.model.stand[idx]
        self._Traj = transport.message_class(TRAJECTORY)
        self._Point = transport.message_class("trajectory_msgs/msg/JointTrajectoryPoint")
        self.pub = transport.create_publisher(f"/{controller}/joint_trajectory", TRAJECTORY, qos.DEFAULT)
        self.cmd_sub = transport.create_subscription("cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT,
                                                     self.on_cmd_vel)
        if joint_states is None:
            from .joint_state_cache import JointStateCache
            joint_states = JointStateCache(transport, mechanism)
        self.joint_states = joint_states
        joint_states.add_listener(self.on_joint_states)
        self._lock = threading.RLock()
        self._twist = np.zeros(3)
        self._cmd_time = -math.inf
        self._js_time = -math.inf
        self._cycle_end = -math.inf          # monotonic time the published cycle ends
        self._holding = False
        self._last_hold = -math.inf
        self.counts = {"cmd_vel": 0, "rejected": 0, "refused": 0, "cycles": 0, "holds": 0, "unsafe": 0}
        self.last_refusal = ""
        self._refused = None                 # the twist of the last refused gait (not replanned while unchanged)
        self._halt = threading.Event()
        self.heartbeat = None
        if start_timer:
            # the watchdog is a transport timer; planning runs on a thread of its own so that planning a
            # cycle never delays a hold
            self.heartbeat = transport.create_timer(1.0 / self.rate, self._tick)
            threading.Thread(target=self._plan_loop, name="legged-planner", daemon=True).start()

    @classmethod
    def from_served(cls, transport, served) -> "LeggedNode":
        return cls(transport, served.mechanism, joint_states=served.joint_states(transport))

    # ---------------------------------------------------------------------------------------- input
    def on_cmd_vel(self, msg) -> None:
        v = (float(msg.linear.x), float(msg.linear.y), float(msg.angular.z))
        self.counts["cmd_vel"] += 1
        if not all(math.isfinite(x) for x in v):
            self.counts["rejected"] += 1
            self.warn.warning("cmd_nan", "cmd_vel rejected: NaN or infinite components")
            return
        if math.hypot(v[0], v[1]) > self.max_v or abs(v[2]) > self.max_w:
            self.counts["rejected"] += 1
            self.warn.warning("cmd_range", f"cmd_vel rejected: beyond max_linear_speed {self.max_v} m/s or "
                                           f"max_angular_speed {self.max_w} rad/s")
            return
        with self._lock:
            self._twist = np.array(v)
            self._cmd_time = self.transport.monotonic()

    def on_joint_states(self, update) -> None:
        with self._lock:
            self._js_time = self.transport.monotonic()

    def measured(self) -> np.ndarray:
        latest = self.joint_states.latest()
        return np.array([latest.get(n, s) for n, s in zip(self.joint_names, self._stand)])

    # ------------------------------------------------------------------------------------ commanding
    def _stale(self, now: float):
        """Why the legs must hold now (None: commanded and fresh)."""
        if now - self._cmd_time > self.cmd_timeout:
            return "cmd_vel silent" if self._cmd_time > -math.inf else "no cmd_vel yet"
        if self.require_js and now - self._js_time > self.js_timeout:
            return "joint_states stale" if self._js_time > -math.inf else "no joint_states yet"
        return None

    def watchdog(self) -> bool:
        """Hold the legs when cmd_vel or joint_states are stale; True when commanding may go on."""
        now = self.transport.monotonic()
        with self._lock:
            reason = self._stale(now)
            if reason is not None:
                self._hold(reason, now)
                return False
            return True

    def step(self) -> None:
        """Watchdog, then publish the next cycle when the last one ends (planned outside the lock; the
        watchdog is checked again before publishing)."""
        if not self.watchdog():
            return
        now = self.transport.monotonic()
        with self._lock:
            if now < self._cycle_end - 1.0 / self.rate:
                return                                       # the published cycle is still running
            twist = self._twist.copy()
            if self._refused is not None and np.array_equal(twist, self._refused):
                return                                       # refused already: keep holding, do not replan
        self._refused = None
        try:
            plan = self.model.plan_gait(self.gait, twist, period=self.period, cycles=1.0,
                                        swing_height=self.swing_height, samples_per_cycle=self.samples,
                                        min_margin=self.min_margin)
        except GaitInfeasible as exc:
            with self._lock:
                self._refused = twist
                self.counts["refused"] += 1
                self.last_refusal = str(exc)
                self.warn.warning("refused", f"gait refused ({exc.reason}): {exc}")
                self._hold("gait refused", now)
            return
        traj = plan.trajectory
        q_now = self.measured()
        # the first point: far enough ahead for the move from the measured positions at the joints' speeds
        jump = np.abs(traj.positions[0] - q_now) / self.vmax
        transition = max(0.1, 1.5 * float(np.max(jump)))
        times = traj.times + transition
        ok, why = self._safe(q_now, times, traj.positions)
        with self._lock:
            if self._stale(self.transport.monotonic()) is not None:
                return                                       # went stale while planning: the watchdog holds
            if not ok:
                self.counts["unsafe"] += 1
                self.warn.warning("unsafe", f"trajectory not sent: {why}")
                self._hold("unsafe trajectory", now)
                return
            self._publish(times, traj.positions, traj.velocities, traj.accelerations)
            self._cycle_end = now + float(times[-1])
            self._holding = False
            self.counts["cycles"] += 1

    def _safe(self, q_now, times, Q):
        if not (np.all(np.isfinite(Q)) and np.all(np.isfinite(times))):
            return False, "non-finite values"
        if np.any(Q < self.lower - 1e-9) or np.any(Q > self.upper + 1e-9):
            k = int(np.argmax(np.max((Q < self.lower - 1e-9) | (Q > self.upper + 1e-9), axis=0)))
            return False, f"joint {self.joint_names[k]!r} leaves its limits"
        P = np.vstack([q_now, Q])
        t = np.concatenate([[0.0], times])
        v = np.abs(np.diff(P, axis=0)) / np.maximum(np.diff(t), 1e-9)[:, None]
        if np.any(v > self.vmax * (1 + 1e-6)):
            b, k = np.unravel_index(int(np.argmax(v / self.vmax)), v.shape)
            return False, f"joint {self.joint_names[k]!r} would move at {v[b, k]:.3g} (limit {self.vmax[k]:.3g})"
        return True, ""

    def _hold(self, reason: str, now: float) -> None:
        """One point at the measured positions (published on the transition and once a second after)."""
        if self._holding and now - self._last_hold < 1.0:
            return
        if not self._holding:
            self.warn.warning("hold", f"legs holding: {reason}")
            self.counts["holds"] += 1
        q = np.clip(self.measured(), self.lower, self.upper)
        z = np.zeros_like(q)
        self._publish(np.array([0.05]), q[None], z[None], z[None])
        self._holding = True
        self._last_hold = now
        self._cycle_end = -math.inf

    def _publish(self, times, Q, V, A) -> None:
        msg = self._Traj()
        msg.joint_names = list(self.joint_names)
        pts = []
        for k in range(len(times)):
            pt = self._Point()
            pt.positions = [float(x) for x in Q[k]]
            pt.velocities = [float(x) for x in V[k]]
            pt.accelerations = [float(x) for x in A[k]]
            t = float(times[k])
            pt.time_from_start.sec = int(math.floor(t))
            pt.time_from_start.nanosec = min(int(round((t - math.floor(t)) * 1e9)), 999_999_999)
            pts.append(pt)
        msg.points = pts
        self.pub.publish(msg)

    def _tick(self) -> None:
        try:
            self.watchdog()
        except Exception as exc:       # the heartbeat is the watchdog: it must never die
            self.warn.warning("tick", f"legged watchdog failed: {type(exc).__name__}: {exc}")

    def _plan_loop(self) -> None:
        period = 1.0 / self.rate
        while not self._halt.is_set():
            try:
                self.step()
            except Exception as exc:
                self.warn.warning("plan", f"legged planning failed: {type(exc).__name__}: {exc}")
            self._halt.wait(period)

    def status(self) -> str:
        c = self.counts
        return (f"legged {self.gait}: cycles {c['cycles']}, holds {c['holds']}, cmd_vel {c['cmd_vel']} "
                f"(rejected {c['rejected']}, refused {c['refused']}, unsafe {c['unsafe']})")

    def close(self) -> None:
        self._halt.set()
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        try:
            with self._lock:
                self._holding = False
                self._hold("node closing", self.transport.monotonic())
        except Exception:
            pass


def main(argv=None) -> int:
    """Console script ``legged``: the node alone."""
    from .serve import run_nodes
    return run_nodes(argv, nodes=("legged",), prog="legged", default_transport="auto")
