"""A stand-in for ros2_control_node + mock hardware + controllers, for machines without ROS 2 (a test double
of the hardware side only; with ROS 2 the tests run the real ``ros2_control_node``).

It speaks the same topics over the Cyclone transport: ``/joint_states`` (every single-coordinate joint of
the model, 100 Hz), ``/<group>/commands`` (``std_msgs/Float64MultiArray``) for forward-command groups,
mirrored into the state as mock_components/GenericSystem with ``calculate_dynamics`` does (positions
directly; velocities integrated into positions; a velocity or effort group's command lapses to zero after
``COMMAND_TIMEOUT`` s, as the exported TimedForwardCommandController does), ``/<group>/joint_trajectory`` for trajectory groups
(followed by linear interpolation from the current state; a new trajectory replaces the old one) and the
``/<group>/follow_joint_trajectory`` action (goals naming exactly the group's joints; feedback; cancel holds
the position; a new goal replaces the running one, which ends CANCELED; SUCCEEDED when the last point's time
has passed).

Run: ``python ros2_control_standin.py MODEL [--motors FILE]`` with ROS_DOMAIN_ID / CYCLONEDDS_URI set.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "mechanism_model_ros"))


#: the exported velocity/effort controllers' command_timeout (mechanism_model_core.io.ros2_control)
COMMAND_TIMEOUT = 0.25


class StandIn:
    RATE = 100.0

    def __init__(self, node, mechanism, motors, command_timeout: float | None = COMMAND_TIMEOUT):
        from mechanism_model_ros.qos import DEFAULT

        self.node = node
        self.command_timeout = command_timeout
        self.m = mechanism
        self.motors = motors
        self.names = [j.name for j in mechanism.joints if j.dof == 1]
        self.index = {n: i for i, n in enumerate(self.names)}
        self.q = np.array([mechanism.home[mechanism.joint_slice(n)][0] for n in self.names])
        self.v = np.zeros(len(self.names))
        self.mode = {}                     # joint index -> ("position" | "velocity", value)
        self.trajectories = {}             # group -> (start time, [idx], times, positions)
        self.goals = {}                    # group -> the goal handle being executed
        self.received = {}                 # velocity/effort group -> (time of its last command, [idx])
        self.lock = threading.Lock()
        self.JointState = node.message_class("sensor_msgs/msg/JointState")
        self.pub = node.create_publisher("/joint_states", "sensor_msgs/msg/JointState", DEFAULT)
        for g in motors.groups:
            idx = [self.index[j] for j in g.joint_names]
            if g.controller.value == "forward_command":
                node.create_subscription(f"/{g.name}/commands", "std_msgs/msg/Float64MultiArray", DEFAULT,
                                         lambda msg, g=g, idx=idx: self.on_command(g, idx, msg))
            else:
                node.create_subscription(f"/{g.name}/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                                         DEFAULT, lambda msg, g=g: self.on_trajectory(g, msg))
                node.create_action_server(f"/{g.name}/follow_joint_trajectory",
                                          "control_msgs/action/FollowJointTrajectory",
                                          lambda h, g=g: self.execute(g, h),
                                          goal_callback=lambda goal, g=g: self.acceptable(g, goal.trajectory))
        node.create_timer(1.0 / self.RATE, self.step)

    def on_command(self, group, idx, msg):
        data = list(msg.data)
        if len(data) != len(idx):
            return                         # forward_command_controller ignores a wrong-size command
        # the export's TimedForwardCommandController
        timed = group.interface.value != "position" and self.command_timeout is not None
        if timed and not all(np.isfinite(data)):
            return
        with self.lock:
            for i, v in zip(idx, data):
                self.mode[i] = (group.interface.value, float(v))
            if timed:
                self.received[group.name] = (time.monotonic(), idx)

    def on_trajectory(self, group, msg):
        names = list(msg.joint_names)
        if not names or any(n not in group for n in names) or not msg.points:
            return
        idx = [self.index[n] for n in names]
        times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in msg.points]
        pos = np.array([list(p.positions) for p in msg.points], dtype=float)
        with self.lock:
            start = self.q[idx].copy()
            self.trajectories[group.name] = (time.monotonic(), idx, np.array([0.0] + times),
                                             np.vstack([start, pos]))

    @staticmethod
    def acceptable(group, msg) -> bool:
        """As joint_trajectory_controller without partial goals: every joint of the group, no other, points."""
        names = list(msg.joint_names)
        return sorted(names) == sorted(group.joint_names) and bool(msg.points) and \
            all(len(p.positions) == len(names) for p in msg.points)

    def execute(self, group, handle):
        """FollowJointTrajectory as joint_trajectory_controller answers it: feedback while moving, a cancel
        holds the current position, the result when the last point's time has passed."""
        from mechanism_model_ros.transports.typegen import message_class

        Result = message_class("control_msgs/action/FollowJointTrajectory_Result")
        Feedback = message_class("control_msgs/action/FollowJointTrajectory_Feedback")
        with self.lock:
            self.goals[group.name] = handle          # a newer goal preempts this one (as the controller does)
        self.on_trajectory(group, handle.request.trajectory)
        names = list(handle.request.trajectory.joint_names)
        idx = [self.index[n] for n in names]
        while True:
            time.sleep(0.02)
            with self.lock:
                running = group.name in self.trajectories
                preempted = self.goals.get(group.name) is not handle
                q = self.q[idx].tolist()
            if preempted:
                handle.canceled(Result(error_code=0))
                return
            if handle.is_cancel_requested:
                with self.lock:
                    self.trajectories.pop(group.name, None)
                handle.canceled(Result(error_code=0))
                return
            fb = Feedback(joint_names=names)
            fb.actual.positions = q
            handle.publish_feedback(fb)
            if not running:
                handle.succeed(Result(error_code=0))
                return

    def step(self):
        dt = 1.0 / self.RATE
        now = time.monotonic()
        with self.lock:
            old = self.q.copy()
            for name, (t, idx) in list(self.received.items()):
                if now - t > self.command_timeout:     # the watchdog of the exported controller: zero
                    for i in idx:
                        self.mode[i] = (self.mode[i][0], 0.0)
                    del self.received[name]
            for i, (kind, value) in self.mode.items():
                if kind == "position":
                    self.q[i] = value
                elif kind == "velocity":
                    self.q[i] += value * dt
            for name, (t0, idx, times, pos) in list(self.trajectories.items()):
                t = now - t0
                for k, i in enumerate(idx):
                    self.q[i] = np.interp(t, times, pos[:, k])
                if t > times[-1]:
                    del self.trajectories[name]
            self.v = (self.q - old) / dt
            for i, (kind, value) in self.mode.items():
                if kind == "velocity":
                    self.v[i] = value
            q, v = self.q.tolist(), self.v.tolist()
        msg = self.JointState(name=list(self.names), position=q, velocity=v)
        sec, nsec = self.node.now()
        msg.header.stamp.sec, msg.header.stamp.nanosec = sec, nsec
        self.pub.publish(msg)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--motors")
    p.add_argument("--command-timeout", type=float, default=COMMAND_TIMEOUT,
                   help="the export's --command-timeout (0: plain forward command controllers)")
    args = p.parse_args(argv)
    from mechanism_model_core import load_model
    from mechanism_model_core.library import model_path
    from mechanism_model_core.io.motor_groups import load_motor_groups
    from mechanism_model_ros.transports.cyclone import CycloneNode

    mech = load_model(model_path(args.model))
    motors = load_motor_groups(mech, args.motors)
    node = CycloneNode("controller_manager")
    StandIn(node, mech, motors, command_timeout=args.command_timeout or None)
    print("stand-in ready", flush=True)
    try:
        node.spin()
    except KeyboardInterrupt:
        pass
    finally:
        node.close()


if __name__ == "__main__":
    main()
