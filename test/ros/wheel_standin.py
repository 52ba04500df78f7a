"""A stand-in for ros2_control where ROS 2 is absent: it mirrors the steering and wheel controllers'
``~/commands`` into ``joint_states`` as mock_components/GenericSystem does (position commands become
positions at once; velocity commands become velocities and integrate into positions), publishing at a fixed
rate with positions and velocities. It stands in for hardware only; the locomotor under test is real. With
``steering_trajectory`` the steering controller is a joint trajectory controller: a JointTrajectory on
``~/joint_trajectory`` sets each named joint to its last point's position (``steer_durations`` keeps the
last points' time_from_start, s)."""

from __future__ import annotations

import threading
import time


class WheelStandIn:
    def __init__(self, transport, steering_joints, wheel_joints, steering_controller="steering_controller",
                 wheel_controller="wheel_controller", rate=50.0, extra_joints=None, steering_trajectory=False):
        from mechanism_model_ros import qos
        self.t = transport
        self.steering = {j: 0.0 for j in steering_joints}
        self.wheel_pos = {j: 0.0 for j in wheel_joints}
        self.wheel_vel = {j: 0.0 for j in wheel_joints}
        self.extra = dict(extra_joints or {})
        self.steer_order, self.wheel_order = list(steering_joints), list(wheel_joints)
        self.lock = threading.Lock()
        self.history = []                   # (monotonic time, steering dict, wheel velocity dict)
        self.wheel_history = []             # (monotonic time, wheel velocity dict): wheel commands only
        F64 = "std_msgs/msg/Float64MultiArray"
        self.steer_durations = []
        if steering_trajectory:
            transport.create_subscription(f"/{steering_controller}/joint_trajectory",
                                          "trajectory_msgs/msg/JointTrajectory", qos.DEFAULT, self.on_trajectory)
        else:
            transport.create_subscription(f"/{steering_controller}/commands", F64, qos.DEFAULT, self.on_steer)
        transport.create_subscription(f"/{wheel_controller}/commands", F64, qos.DEFAULT, self.on_wheel)
        self.JS = transport.message_class("sensor_msgs/msg/JointState")
        self.pub = transport.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT)
        self.period = 1.0 / rate
        self.halt = threading.Event()
        self.silent = threading.Event()     # set: stop publishing joint_states (stale-state tests)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def on_steer(self, msg):
        with self.lock:
            for j, v in zip(self.steer_order, msg.data):
                self.steering[j] = float(v)
            self.history.append((time.monotonic(), dict(self.steering), dict(self.wheel_vel)))

    def on_trajectory(self, msg):
        last = msg.points[-1]
        with self.lock:
            for j, v in zip(msg.joint_names, last.positions):
                self.steering[str(j)] = float(v)
            self.steer_durations.append(last.time_from_start.sec + 1e-9 * last.time_from_start.nanosec)
            self.history.append((time.monotonic(), dict(self.steering), dict(self.wheel_vel)))

    def on_wheel(self, msg):
        with self.lock:
            for j, v in zip(self.wheel_order, msg.data):
                self.wheel_vel[j] = float(v)
            now = time.monotonic()
            self.history.append((now, dict(self.steering), dict(self.wheel_vel)))
            self.wheel_history.append((now, dict(self.wheel_vel)))

    def first_stop_after(self, t0: float):
        """``(t_stop, times)``: receive time of the first all-zero wheel command after ``t0`` (None if none
        yet) and the receive times of the wheel commands between ``t0`` and it."""
        with self.lock:
            hist = [(t, v) for t, v in self.wheel_history if t >= t0]
        times = []
        for t, v in hist:
            if all(x == 0.0 for x in v.values()):
                return t, times
            times.append(t)
        return None, times

    def run(self):
        last = time.monotonic()
        while not self.halt.wait(self.period):
            now = time.monotonic()
            dt, last = now - last, now
            with self.lock:
                for j, v in self.wheel_vel.items():
                    self.wheel_pos[j] += v * dt
                names = list(self.steering) + list(self.wheel_pos) + list(self.extra)
                pos = list(self.steering.values()) + list(self.wheel_pos.values()) + list(self.extra.values())
                vel = [0.0] * len(self.steering) + list(self.wheel_vel.values()) + [0.0] * len(self.extra)
            if self.silent.is_set():
                continue
            m = self.JS()
            m.name, m.position, m.velocity = names, pos, vel
            self.pub.publish(m)

    def close(self):
        self.halt.set()
        self.thread.join(timeout=2)
