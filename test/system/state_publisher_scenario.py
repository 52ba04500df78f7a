"""The state publisher fed at 2 kHz over DDS, in one process, over either transport (our Cyclone transport in the
pytest process; rclpy under the ROS Python, run as ``python state_publisher_scenario.py <distro> <seconds>``,
printing its result as JSON). Used by test_state_publisher_ordering.py, which asserts on the result.

What happens (every wait bounded; nothing is decided by a clock):

* A fast source (22 joints: chassis, bogies, drives, mast, arm) publishes ``joint_states`` at 2 kHz, stamped
  with the system clock as a controller does, starting *before* the state publisher exists, so that inputs
  are in flight while it starts (the start-up home pose must not be followed by older states). A slow
  source (the six steering joints) publishes at 50 Hz for the first second, then goes silent.
* A /tf listener on the state publisher's own participant records every /tf stamp from the first (the home
  pose) on.
* A stall, made to order: at one input a listener of the node's joint-state cache blocks the subscription
  thread; the fast source then sends BURST inputs at once and waits until the node's reader has acknowledged
  them all (reliable), then the thread is released. Those inputs were all queued when the node woke, so no
  /tf may be stamped strictly between the stall's input and the burst's last: at most the one publication
  in progress (counted by stamps).
* At the end: the /tf message stamped like the last input, composed with /tf_static, against the core's
  forward kinematics of the last values of both sources; the joints the node reports silent; its
  /diagnostics (where the distribution has diagnostic_msgs).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

RATE = 2000.0
SLOW_RATE = 50.0
SLOW_SECONDS = 1.0
BURST = 50
PARAMS = {"joint_states_reliable": True, "floating_joints": "always", "joint_silence_timeout": 0.3,
          "diagnostics_period": 0.5, "idle_republish_period": 1.0}


def _model():
    from mechanism_model_core import load_model
    from mechanism_model_core.library import default_model_path
    return load_model(default_model_path())


def _matrix(tr):
    from scipy.spatial.transform import Rotation
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat([tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w]).as_matrix()
    T[:3, 3] = tr.translation.x, tr.translation.y, tr.translation.z
    return T


def run(make_node, spin, seconds: float) -> dict:
    """``make_node(name, params, side)`` -> a transport node (``side``: "node" for the state publisher and its
    listener, "source" for the senders); ``spin()`` starts serving the nodes made so far."""
    from mechanism_model_core import forward_kinematics
    from mechanism_model_ros import qos
    from mechanism_model_ros.state_publisher import StatePublisher

    model = _model()
    slow_joints = [c for c in model.independent_coordinates if c.endswith("_steer")]
    fast_joints = [c for c in model.independent_coordinates if c not in slow_joints]

    listener = make_node("tf_listener", {}, "node")
    sp_node = make_node("state_publisher", PARAMS, "node")
    fast_node = make_node("fast_source", {}, "source")
    slow_node = make_node("slow_source", {}, "source")
    tf_stamps, tf_by_stamp, static, diag = [], {}, [], []
    lock = threading.Lock()

    def on_tf(m):       # cheap: on Cyclone it shares the state publisher's thread (the same participant)
        if m.transforms:
            s = m.transforms[0].header.stamp
            ns = s.sec * 10**9 + s.nanosec
            with lock:
                tf_stamps.append(ns)
                tf_by_stamp[ns] = m
    listener.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.TF.with_depth(10000), on_tf)
    listener.create_subscription("/tf_static", "tf2_msgs/msg/TFMessage", qos.TF_STATIC_LISTENER, static.append)
    try:
        listener.create_subscription("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos.DEFAULT, diag.append)
        have_diagnostics = True
    except Exception:
        have_diagnostics = False
    fast_pub = fast_node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(100))
    slow_pub = slow_node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(100))
    JS = fast_node.message_class("sensor_msgs/msg/JointState")
    spin()

    started = threading.Event()         # the state publisher exists
    stall = {"at": None, "blocked": threading.Event(), "release": threading.Event()}
    sent, last = [], {}
    errors = []

    def stamp_now(msg):
        ns = time.time_ns()
        msg.header.stamp.sec, msg.header.stamp.nanosec = ns // 10**9, ns % 10**9
        return ns

    def fast_values(i):
        return [0.3 * np.sin(1e-3 * i + k) for k in range(len(fast_joints))]

    def fast():
        msg = JS(name=fast_joints, position=[0.0] * len(fast_joints))
        try:
            i = 0
            # before the state publisher exists (0.3 s), then `seconds` s from its start
            t0 = time.perf_counter()
            end = None
            stall_after = None
            while end is None or i < end:
                if end is None and started.is_set():
                    end = i + int(RATE * seconds)
                    stall_after = i + int(0.6 * RATE * seconds)
                delay = t0 + i / RATE - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                msg.position = fast_values(i)
                ns = stamp_now(msg)
                if stall_after is not None and i == stall_after:
                    stall["at"] = ns
                fast_pub.publish(msg)
                sent.append(ns)
                last.update(zip(fast_joints, msg.position))
                if stall_after is not None and i == stall_after:
                    if not stall["blocked"].wait(30):
                        raise RuntimeError("the stall listener never saw the stall's input")
                    for _ in range(BURST):
                        i += 1
                        msg.position = fast_values(i)
                        ns = stamp_now(msg)
                        fast_pub.publish(msg)
                        sent.append(ns)
                        last.update(zip(fast_joints, msg.position))
                    stall["burst_end"] = ns
                    stall["acked"] = fast_pub.wait_for_acks(30)
                    stall["release"].set()
                    t0 = time.perf_counter() - (i + 1) / RATE      # pace on from here
                i += 1
        except Exception as exc:        # reported, never hidden
            errors.append(f"fast source: {type(exc).__name__}: {exc}")
            stall["release"].set()

    def slow():
        msg = JS(name=slow_joints, position=[0.0] * len(slow_joints))
        started.wait(60)
        t0 = time.perf_counter()
        k = 0
        while time.perf_counter() - t0 < SLOW_SECONDS:
            msg.position = [0.2 + 0.01 * k + 0.05 * j for j in range(len(slow_joints))]
            stamp_now(msg)
            slow_pub.publish(msg)
            last.update(zip(slow_joints, msg.position))
            k += 1
            time.sleep(1.0 / SLOW_RATE)

    threads = [threading.Thread(target=fast, daemon=True), threading.Thread(target=slow, daemon=True)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    sp = StatePublisher(sp_node, model)

    def hook(update):
        at = stall["at"]
        if at is not None and not stall["blocked"].is_set() and update.stamp is not None \
                and update.stamp[0] * 10**9 + update.stamp[1] >= at:
            stall["blocked"].set()
            stall["release"].wait(60)
    sp.joint_states.add_listener(hook)
    started.set()
    for t in threads:
        t.join(120)

    def wait_for(pred, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not pred():
            time.sleep(0.01)
        return pred()
    got_last = wait_for(lambda: sent and sent[-1] in tf_by_stamp, 30)
    silent_ok = wait_for(lambda: set(sp.silent_joints()) == set(slow_joints), 10)
    diag_ok = have_diagnostics and wait_for(lambda: any(
        d.status and (d.status[0].level[0] if isinstance(d.status[0].level, bytes) else d.status[0].level) == 1
        and all(j in d.status[0].message for j in slow_joints) for d in diag), 10)
    time.sleep(0.2)

    # the last input's state against forward kinematics (both sources' last values)
    err = None
    if got_last and static:
        edges = {t.child_frame_id: (t.header.frame_id, _matrix(t.transform))
                 for t in tf_by_stamp[sent[-1]].transforms}
        edges.update({t.child_frame_id: (t.header.frame_id, _matrix(t.transform)) for t in static[-1].transforms})
        world = {model.ground: np.eye(4)}

        def pose(f):
            if f not in world:
                p, T = edges[f]
                world[f] = pose(p) @ T
            return world[f]
        fk = forward_kinematics(model, dict(last))
        err = max(float(np.abs(pose(f) - fk.pose(f)).max()) for f in model.frame_names[1:])
    m = sp.merger
    with lock:
        stamps = list(tf_stamps)
    return {"errors": errors, "stamps": stamps, "sent": len(sent), "first_sent": sent[0] if sent else None,
            "last_sent": sent[-1] if sent else None, "got_last": bool(got_last), "last_error": err,
            "stall_at": stall["at"], "burst_end": stall.get("burst_end"), "acked": stall.get("acked"),
            "silent": sorted(sp.silent_joints()), "silent_ok": bool(silent_ok), "slow_joints": slow_joints,
            "have_diagnostics": have_diagnostics, "diag_ok": bool(diag_ok),
            "inputs": m.inputs, "publications": m.publications, "max_merged": m.max_merged, "held": m.held,
            "placeholders": m.placeholders, "clock_steps": m.clock_steps}


def run_cyclone(domain: int, seconds: float) -> dict:
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = {"node": CycloneContext(domain), "source": CycloneContext(domain)}
    nodes = []

    def make_node(name, params, side):
        n = CycloneNode(name, parameters=params, context=ctx[side])
        nodes.append(n)
        return n
    try:
        return run(make_node, lambda: None, seconds)
    finally:
        for n in nodes:
            n.close()
        for c in ctx.values():
            c.close()


def run_rclpy(seconds: float) -> dict:
    from mechanism_model_ros.transports.rclpy_transport import RclpyRuntime
    rt = RclpyRuntime()
    stop = threading.Event()
    spinner = []

    def spin():
        t = threading.Thread(target=rt.spin, args=(stop,), daemon=True)
        t.start()
        spinner.append(t)
    try:
        return run(lambda name, params, side: rt.node(name, parameters=params), spin, seconds)
    finally:
        stop.set()
        for t in spinner:
            t.join(5)
        rt.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(HERE))
    result = run_rclpy(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)
