"""ROS-layer benchmark over real Cyclone DDS on loopback (no ROS installation needed).

Starts ``mechanism_model_ros.serve`` in its own process on the default rover (or ``--model``), then:

1. publishes ``joint_states`` at ``--rate`` Hz for ``--seconds`` s and records, per message, the time from
   ``publish()`` to the arrival of its ``/tf`` update in this process (matched by header stamp; includes
   serialization, the server's FK and TF message, loopback DDS and deserialization here);
2. calls ``compute_ik`` (arm pose targets reachable from the seed, ``active_joints`` = the arm) as fast as
   one client can for ``--ik-seconds`` s, then with four concurrent clients; same for ``compute_fk``.

Prints a Markdown table for BENCHMARKS.md. Run:  python benchmarks/bench_ros.py
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "mechanism_model_ros"))
sys.path.insert(0, os.path.join(TOP, "test"))

from ros.dds_helpers import configure_this_process, start_serve, stop, unique_domain_id, wait_for  # noqa: E402

ARM = ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"]


def rate_run(node, rate, seconds):
    from mechanism_model_ros.qos import DEFAULT, QoS
    sent, got, sizes = {}, {}, {}

    def on_tf(m):
        if m.transforms:
            got.setdefault(m.transforms[0].header.stamp.sec, time.perf_counter_ns())
            sizes[m.transforms[0].header.stamp.sec] = len(m.transforms)
    tf_reader = node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", QoS(depth=1000), on_tf)
    pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", DEFAULT.with_depth(100))
    assert wait_for(lambda: pub.subscription_count >= 1 and tf_reader.handle.get_matched_publications(), 30), \
        "server did not come up"
    JS = node.message_class("sensor_msgs/msg/JointState")
    probe = JS()
    probe.header.stamp.sec = 1          # discovery is asymmetric: wait until a probe makes the round trip
    assert wait_for(lambda: pub.publish(probe) or 1 in got, 15, period=0.2)
    got.clear()
    names = ARM + ["left_front_steer", "chassis.x", "chassis.yaw"]
    msg = JS(name=names, position=[0.0] * len(names))
    n = int(rate * seconds)
    t0 = time.perf_counter()
    for i in range(n):
        delay = t0 + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        msg.header.stamp.sec = 200_000 + i
        msg.position = [0.001 * (i % 1000)] * len(names)
        sent[200_000 + i] = time.perf_counter_ns()
        pub.publish(msg)
    achieved = n / (time.perf_counter() - t0)
    wait_for(lambda: all(k in got for k in sent), 30)     # not len(got): a late probe reply may be in it
    lat = np.array([(got[k] - sent[k]) / 1e6 for k in sent if k in got])
    edges = sorted({sizes[k] for k in sent if k in sizes})
    missing = [k - 200_000 for k in sent if k not in got]
    if missing:
        print(f"/tf updates missing for messages {missing[:20]}", file=sys.stderr)
    return {"sent": n, "received": len(lat), "achieved_hz": achieved, "edges": edges,
            "median_ms": float(np.median(lat)) if len(lat) else float("nan"),
            "p99_ms": float(np.percentile(lat, 99)) if len(lat) else float("nan"),
            "max_ms": float(lat.max()) if len(lat) else float("nan")}


def _ik_requests(node, model, count, seed):
    from mechanism_model_core import forward_kinematics
    from mechanism_model_ros.conversions import fill_pose
    rng = np.random.default_rng(seed)
    PS = node.message_class("geometry_msgs/msg/PoseStamped")
    out = []
    for _ in range(count):
        q0 = model.random_configuration(rng)
        qg = np.array(q0)
        for n in ARM:
            qg[model.coordinate_index(n)] += rng.uniform(-0.3, 0.3)
        qg = model.configuration(np.clip(qg, model.lower_limits, model.upper_limits))
        ps = PS()
        ps.header.frame_id = "chassis"
        fill_pose(ps.pose, forward_kinematics(model, qg).pose("arm_turret", relative_to="chassis"))
        out.append((q0, ps))
    return out


def service_rate(domain, model, service, seconds, clients):
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    counts, ok, failures = [0] * clients, [0] * clients, []
    start = threading.Barrier(clients + 1)

    def worker(k):
        ctx = CycloneContext(domain)
        node = CycloneNode(f"bench{k}", context=ctx)
        try:
            srv = "mechanism_model_msgs/srv/ComputeIK" if service == "compute_ik" else \
                "mechanism_model_msgs/srv/ComputeFK"
            c = node.create_client(service, srv)
            assert c.wait_for_service(30)
            reqs = _ik_requests(node, model, 50, k)
            JS = node.message_class("sensor_msgs/msg/JointState")
            start.wait()
            end = time.perf_counter() + seconds
            i = 0
            while time.perf_counter() < end:
                q0, ps = reqs[i % len(reqs)]
                r = c.request()
                r.robot_state = JS(name=list(model.coordinate_names), position=[float(v) for v in q0])
                if service == "compute_ik":
                    r.ik_link_names = ["arm_turret"]
                    r.pose_stamped_vector = [ps]
                    r.active_joints = ARM
                    r.timeout.nanosec = 200_000_000
                else:
                    r.fk_link_names = ["arm_turret", "mast_camera"]
                rep = c.call(r, 30)
                counts[k] += 1
                ok[k] += rep.error_code.val == 1
                if rep.error_code.val != 1 and not failures:
                    failures.append(f"{service}: error {rep.error_code.val}: {rep.message}")
                i += 1
        finally:
            node.close()
            ctx.close()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    for f in failures:
        print(f"first failed call: {f}", file=sys.stderr)
    return {"calls": sum(counts), "per_s": sum(counts) / dt, "success": sum(ok) / max(1, sum(counts))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=500.0)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--ik-seconds", type=float, default=10.0)
    ap.add_argument("--model", default=None)
    args = ap.parse_args(argv)
    from mechanism_model_core import load_model
    from mechanism_model_core.library import default_model_path
    model_file = args.model or default_model_path()
    model = load_model(model_file)
    domain = unique_domain_id()
    configure_this_process(domain)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    proc = start_serve(domain, *(["--model", args.model] if args.model else []))
    ctx = CycloneContext(domain)
    node = CycloneNode("bench", context=ctx)
    try:
        r = rate_run(node, args.rate, args.seconds)
        node.close()
        ik1 = service_rate(domain, model, "compute_ik", args.ik_seconds, 1)
        ik4 = service_rate(domain, model, "compute_ik", args.ik_seconds, 4)
        fk1 = service_rate(domain, model, "compute_fk", args.ik_seconds / 2, 1)
    finally:
        ctx.close()
        stop(proc)
    from importlib.metadata import version
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, cyclonedds {version('cyclonedds')}, rosbags {version('rosbags')}; "
          f"model {os.path.basename(model_file)} ({model.nq} coordinates, {len(model.frame_names)} frames)\n")
    print("| measurement | value |")
    print("|---|---|")
    print(f"| joint_states sent at {args.rate:.0f} Hz for {args.seconds:.0f} s (achieved) | {r['sent']} "
          f"({r['achieved_hz']:.1f} Hz) |")
    print(f"| /tf updates received (transforms per message) | {r['received']} of {r['sent']} "
          f"({', '.join(map(str, r['edges']))}) |")
    print(f"| joint_states -> /tf latency, median | {r['median_ms']:.2f} ms |")
    print(f"| joint_states -> /tf latency, 99th percentile | {r['p99_ms']:.2f} ms |")
    print(f"| joint_states -> /tf latency, max | {r['max_ms']:.2f} ms |")
    print(f"| compute_ik calls/s, 1 client (arm pose, success rate) | {ik1['per_s']:.0f} "
          f"({100 * ik1['success']:.0f} %) |")
    print(f"| compute_ik calls/s, 4 concurrent clients | {ik4['per_s']:.0f} ({100 * ik4['success']:.0f} %) |")
    print(f"| compute_fk calls/s, 1 client (2 frames) | {fk1['per_s']:.0f} |")


if __name__ == "__main__":
    main()
