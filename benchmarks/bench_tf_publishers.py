"""Staleness of /tf: our state publisher against the C++ robot_state_publisher (ROS 2 Humble), same URDF, same
joint_states, sender, listener and publisher each in a process of its own.

**Staleness** of a joint_states message: from its publication to the arrival of the first ``/tf`` update whose
state includes it (stamped like it or later). Per publisher -- robot_state_publisher (``publish_frequency``
1 kHz, its maximum: a message stamped within 1 ms of its last publication is skipped, the next one covers it), ours over the Cyclone transport, ours over rclpy on Humble and on Jazzy -- in a
DDS domain of its own, and per scenario:

* ``1kHz+stalls``: 1 kHz, and every 0.5 s the sender stalls for 20 ms, then publishes the 20 missed messages
  at once (a controller loop catching up);
* ``2kHz``: steady 2 kHz;
* ``2kHz+stalls``: both.

The sender (this script, ``--role sender``) publishes every moving, non-mimic joint of our URDF export of the
default rover (28) over Cyclone, stamped with its send time (``time.time_ns``), its serialized message patched
in place so that it costs a few microseconds; it runs 1 s of warm-up first (not counted). The listener
(``--role listener``) takes /tf samples raw and reads only the stamp of the first transform, its arrival
time and its DDS source timestamp (the publisher's write), so that it does not measure itself and a delay is
told apart: in the publisher (staleness at its write) or in delivery (the transport, the listener). The
publisher's CPU time (user + system of the process tree, from /proc) over the counted window is divided by the
messages sent (CPU per input) and by its /tf messages (CPU per update). Medians and percentiles are over every
message of the window; a message whose state never arrived counts as unanswered.

    python benchmarks/bench_tf_publishers.py                        # ~2 min; rewrites its BENCHMARKS.md section
    python benchmarks/bench_tf_publishers.py --who rsp cyclone --scenarios 2kHz --seconds 3 --no-write
    python benchmarks/bench_tf_publishers.py --realtime --no-write    # on a shared machine (root): see --help

Needs ROS 2 (test/ros/ros_env.py); a distribution that is missing is left out. Targets (issue 24): staleness
p99 <= 5 ms at 1 kHz with stalls and at steady 2 kHz, on both transports and on Jazzy; CPU per input within 2x
robot_state_publisher's in the same run.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "mechanism_model_ros"))
sys.path.insert(0, os.path.join(TOP, "test"))
sys.path.insert(0, HERE)

from ros import ros_env  # noqa: E402
from ros.dds_helpers import dds_env, start_serve, stop, unique_domain_id  # noqa: E402

PUBLISHERS = {
    "rsp": "robot_state_publisher (C++, Humble)",
    "cyclone": "ours, Cyclone transport",
    "rclpy-humble": "ours, rclpy (Humble)",
    "rclpy-jazzy": "ours, rclpy (Jazzy)",
}
#: name -> (rate Hz, stall every s (0: none), stall length s)
SCENARIOS = {"1kHz+stalls": (1000.0, 0.5, 0.020), "2kHz": (2000.0, 0.0, 0.0), "2kHz+stalls": (2000.0, 0.5, 0.020)}
WARMUP = 1.0
BEGIN, END = "<!-- bench_tf_publishers:begin -->", "<!-- bench_tf_publishers:end -->"


# ---------------------------------------------------------------------------------------------- processes
def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
        except OSError:
            pass
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` and all its descendants so far (Linux /proc)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            pass
    return total


def _quiet_collector() -> None:
    """The sender and the listener are instruments: no full collection of their start-up heap (tens of ms) may
    pause them while they measure (as serve does for the publisher, ``freeze_start_up_heap``)."""
    gc.collect()
    gc.freeze()


class _Slot:
    """One element of a list as an attribute (what NumericTemplate patches)."""

    def __init__(self, seq, i):
        self.__dict__.update(seq=seq, i=i)

    def __getattr__(self, name):
        return self.seq[self.i]

    def __setattr__(self, name, value):
        self.seq[self.i] = value


def role_sender(domain, names, rate, stall_every, stall_len, seconds, out, marker):
    """Publish joint_states: WARMUP s, then ``seconds`` s counted (``marker`` file written at the switch);
    records (send ns = stamp) of the counted messages in ``out``."""
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    node = CycloneNode("bench_sender", context=ctx)
    pub = node.create_publisher("joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT.with_depth(100))
    JS = node.message_class("sensor_msgs/msg/JointState")
    msg = JS(name=list(names), position=[0.0] * len(names))
    slots = [_Slot(msg.position, k) for k in range(len(names))]
    tpl = pub.numeric_template(msg, {"sec": ("i4", [(msg.header.stamp, "sec")]),
                                     "nanosec": ("u4", [(msg.header.stamp, "nanosec")]),
                                     "position": ("f8", [(s, "v") for s in slots])})
    _quiet_collector()
    end = time.monotonic() + 60
    while not pub.subscription_count and time.monotonic() < end:
        time.sleep(0.05)
    sent, late = [], []
    n_warm, n = int(WARMUP * rate), int(seconds * rate)
    pos = np.zeros(len(names))
    t0 = time.perf_counter()
    next_stall = t0 + WARMUP + stall_every if stall_every else None
    stall_end = t0
    for i in range(n_warm + n):
        if i == n_warm:
            open(marker, "w").close()
        target = t0 + i / rate
        if next_stall is not None and target >= next_stall:
            time.sleep(stall_len)                         # the stall; then the missed messages go out at once
            stall_end = time.perf_counter()
            next_stall += stall_every
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        pos[:] = 0.3 * np.sin(1e-3 * i + np.arange(len(names)))
        ns = time.time_ns()
        tpl.publish({"sec": [ns // 10**9], "nanosec": [ns % 10**9], "position": pos})
        if i >= n_warm:
            sent.append(ns)
            # the sender's own lateness, not planned (a stall's missed messages are due when it ends)
            late.append(int((time.perf_counter() - max(target, stall_end)) * 1e9))
    np.save(out, np.array([sent, late], dtype=np.int64))
    node.close()
    ctx.close()


def role_listener(domain, out, done):
    """Take /tf raw until ``done`` exists and 1 s passed without a sample: (arrival ns, stamp ns) per message."""
    from cyclonedds._clayer import ddspy_take
    from cyclonedds.core import ReadCondition, WaitSet
    from cyclonedds.util import duration

    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import _ANY, CycloneContext, _reader, dds_qos
    from mechanism_model_ros.transports.typegen import message_class
    ctx = CycloneContext(domain)
    reader = _reader(ctx.participant, ctx.topic("rt/tf", message_class("tf2_msgs/msg/TFMessage")),
                     dds_qos(qos.TF.with_depth(10000), ctx.endpoint_user_data("tf2_msgs/msg/TFMessage")))
    ws = WaitSet(ctx.participant)
    ws.attach(ReadCondition(reader, _ANY))
    rec = []
    _quiet_collector()
    quiet_since = done_at = None
    while True:
        ws.wait(duration(milliseconds=50))
        got = ddspy_take(reader._ref, _ANY, 1000)
        now = time.time_ns()
        if isinstance(got, list) and got:
            quiet_since = None
            for data, info in got:
                if not info.valid_data or len(data) < 16 or struct.unpack_from("<I", data, 4)[0] == 0:
                    continue
                sec, nsec = struct.unpack_from("<iI", data, 8)      # first transform's header.stamp (CDR LE)
                rec.append((now, sec * 10**9 + nsec, info.source_timestamp))
        else:
            quiet_since = quiet_since or time.monotonic()
        if done_at is None and os.path.exists(done):
            done_at = time.monotonic()
        # after the sender: until 0.5 s without a sample, at most 3 s (ours re-publishes once a second when idle)
        if done_at is not None and ((quiet_since and time.monotonic() - quiet_since > 0.5)
                                    or time.monotonic() - done_at > 3.0):
            break
    np.save(out, np.array(rec, dtype=np.int64).reshape(-1, 3))
    os._exit(0)


# ---------------------------------------------------------------------------------------------- analysis
def staleness_ms(sent: np.ndarray, tf: np.ndarray) -> np.ndarray:
    """Per sent message (stamp = send time, ns): ms to the arrival of the first /tf stamped at or after it
    (NaN: never)."""
    if not len(tf):
        return np.full(len(sent), np.nan)
    arrival, stamp = tf[:, 0], tf[:, 1]
    newest = np.maximum.accumulate(stamp)                 # the newest state known at each arrival
    k = np.searchsorted(newest, sent, side="left")
    out = np.full(len(sent), np.nan)
    ok = k < len(tf)
    out[ok] = (arrival[k[ok]] - sent[ok]) * 1e-6
    return out


def run_one(who, domain, pid, names, scenario, seconds, work):
    rate, every, length = SCENARIOS[scenario]
    tag = f"{who}-{scenario}".replace("+", "_")
    files = {k: os.path.join(work, f"{tag}.{k}") for k in ("sent.npy", "tf.npy", "marker", "done")}
    env = dds_env(domain)
    me = [sys.executable, os.path.abspath(__file__)]
    listener = subprocess.Popen(me + ["--role", "listener", "--domain", str(domain), "--out", files["tf.npy"],
                                      "--done", files["done"]], env=env)
    time.sleep(1.0)
    sender = subprocess.Popen(me + ["--role", "sender", "--domain", str(domain), "--out", files["sent.npy"],
                                    "--marker", files["marker"], "--rate", str(rate), "--stall-every", str(every),
                                    "--stall-len", str(length), "--seconds", str(seconds),
                                    "--names", ",".join(names)], env=env)
    while not os.path.exists(files["marker"]) and sender.poll() is None:
        time.sleep(0.005)
    cpu0 = cpu_seconds(pid)
    sender.wait()
    cpu1 = cpu_seconds(pid)
    open(files["done"], "w").close()
    try:
        listener.wait(60)
    except subprocess.TimeoutExpired:
        listener.kill()
        raise
    sent, late = np.load(files["sent.npy"])
    tf = np.load(files["tf.npy"])
    window = tf[(tf[:, 1] >= sent[0]) & (tf[:, 0] <= sent[-1] + 2 * 10**9)] if len(tf) else tf
    st = staleness_ms(sent, tf)
    ok = st[np.isfinite(st)]
    at_write = staleness_ms(sent, tf[:, [2, 1]])        # to the publisher's write of that /tf (its source time)
    at_write = at_write[np.isfinite(at_write)]
    delivery = (window[:, 0] - window[:, 2]) * 1e-6 if len(window) else np.zeros(1)
    stamps = tf[:, 1] if len(tf) else np.zeros(0, dtype=np.int64)
    backwards = int(np.sum(np.diff(stamps) < 0)) if len(stamps) > 1 else 0
    cpu = cpu1 - cpu0
    return {"answered": len(ok) / len(sent), "median": float(np.median(ok)) if len(ok) else float("nan"),
            "p99": float(np.percentile(ok, 99)) if len(ok) else float("nan"),
            "max": float(ok.max()) if len(ok) else float("nan"), "inputs": len(sent), "updates": len(window),
            "cpu_per_input": cpu / len(sent) * 1e3, "cpu_per_update": cpu / max(1, len(window)) * 1e3,
            "backwards": backwards,
            "p99_at_write": float(np.percentile(at_write, 99)) if len(at_write) else float("nan"),
            "max_at_write": float(at_write.max()) if len(at_write) else float("nan"),
            "delivery_p99": float(np.percentile(delivery, 99)), "delivery_max": float(delivery.max()),
            "sender_late_max": float(late.max()) * 1e-6, "sender_late_2ms": int(np.sum(late > 2_000_000))}


def start_publisher(who, d, urdf_path, params):
    """(pid, stop callable) of publisher ``who`` in domain ``d``."""
    if who == "rsp":
        proc = ros_env.start(["ros2", "run", "robot_state_publisher", "robot_state_publisher", "--ros-args",
                              "--params-file", params], d, with_workspace=False, name="rsp")
        return proc.pid, proc.stop
    if who == "cyclone":
        p = start_serve(d, "--model", urdf_path, "--nodes", "state_publisher", "-p", "floating_joints:=always")
        return p.pid, (lambda: stop(p))
    # the state publisher needs no workspace (its messages come with the distribution): none is built
    proc = ros_env.start_serve(d, "--model", urdf_path, "--nodes", "state_publisher", "-p",
                               "floating_joints:=always", distro=who.split("-")[1], with_workspace=False)
    return proc.pid, proc.stop


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="counted seconds per scenario (default 5)")
    ap.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    ap.add_argument("--who", nargs="+", choices=list(PUBLISHERS), default=list(PUBLISHERS))
    ap.add_argument("--no-write", action="store_true", help="do not rewrite BENCHMARKS.md")
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--realtime", action="store_true",
                    help="run every process of the benchmark (publishers, sender, listener) at real-time priority "
                         "(SCHED_RR 1; needs root or CAP_SYS_NICE) so that other work on a shared machine does not "
                         "preempt them; staleness then shows the publishers' own delays, not the machine's load")
    # the child processes' roles
    ap.add_argument("--role", choices=["sender", "listener"], help=argparse.SUPPRESS)
    ap.add_argument("--domain", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--marker", help=argparse.SUPPRESS)
    ap.add_argument("--done", help=argparse.SUPPRESS)
    ap.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--stall-every", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--stall-len", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--names", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.role == "sender":
        return role_sender(args.domain, args.names.split(","), args.rate, args.stall_every, args.stall_len,
                           args.seconds, args.out, args.marker)
    if args.role == "listener":
        return role_listener(args.domain, args.out, args.done)

    if args.realtime:       # inherited by every process started from here
        try:
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
        except (AttributeError, PermissionError) as exc:
            ap.error(f"--realtime: cannot set SCHED_RR ({exc}); run as root or with CAP_SYS_NICE")

    from lxml import etree
    from mechanism_model_core import load_model
    from mechanism_model_core.io.urdf import to_urdf
    from mechanism_model_core.library import default_model_path
    urdf = to_urdf(load_model(default_model_path()))
    moving = [j.get("name") for j in etree.fromstring(urdf.encode()).iter("joint")
              if j.get("type") != "fixed" and j.find("mimic") is None]
    work = tempfile.mkdtemp(prefix="bench_tf_")
    urdf_path = os.path.join(work, "robot.urdf")
    with open(urdf_path, "w") as fh:
        fh.write(urdf)
    params = os.path.join(work, "rsp.yaml")
    with open(params, "w") as fh:
        yaml.safe_dump({"robot_state_publisher": {"ros__parameters": {"robot_description": urdf,
                                                                      "publish_frequency": 1000.0}}}, fh)
    load0 = os.getloadavg()[0]
    rows = {}
    try:
        run_all(args, rows, moving, urdf_path, params, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()[0]
    report(args, rows, moving, load0, load1)


def run_all(args, rows, moving, urdf_path, params, work):
    for who in args.who:
        distro = "humble" if who in ("rsp", "cyclone") else who.split("-")[1]
        if who != "cyclone" and not ros_env.available(distro):
            print(f"{PUBLISHERS[who]}: skipped, ROS 2 {distro} is not usable here", flush=True)
            continue
        d = unique_domain_id()
        pid, stopper = start_publisher(who, d, urdf_path, params)
        try:
            time.sleep(3.0)             # up (a Python node imports for a second or two)
            for sc in args.scenarios:
                r = run_one(who, d, pid, moving, sc, args.seconds, work)
                rows[who, sc] = r
                print(f"{PUBLISHERS[who]:38s} {sc:12s} answered {100 * r['answered']:5.1f} %  median "
                      f"{r['median']:6.2f} ms  p99 {r['p99']:7.2f} ms  max {r['max']:7.2f} ms  CPU/input "
                      f"{r['cpu_per_input']:.3f} ms  CPU/update {r['cpu_per_update']:.3f} ms  updates/input "
                      f"{r['updates'] / r['inputs']:.2f}  stamps back {r['backwards']}\n{'':51s}at the publisher's "
                      f"write: p99 {r['p99_at_write']:.2f} ms, max {r['max_at_write']:.1f} ms; delivery to the "
                      f"listener p99 {r['delivery_p99']:.2f} ms, max {r['delivery_max']:.1f} ms; sender late by "
                      f"> 2 ms {r['sender_late_2ms']} times, at most {r['sender_late_max']:.1f} ms", flush=True)
        finally:
            stopper()


def report(args, rows, moving, load0, load1):
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({f"{w}|{s}": r for (w, s), r in rows.items()}, fh, indent=1)
    lines = ["| publisher | scenario | answered | staleness median | p99 | max | p99 at write | delivery p99 (max) | "
             "sender late > 2 ms | CPU per input | CPU per update | /tf per input | stamps back |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (who, sc), r in rows.items():
        base = rows.get(("rsp", sc))
        ratio = ratio_u = ""
        if base and who != "rsp":
            ratio = f" ({r['cpu_per_input'] / base['cpu_per_input']:.1f}x rsp)"
            ratio_u = f" ({r['cpu_per_update'] / base['cpu_per_update']:.1f}x rsp)"
        lines.append(f"| {PUBLISHERS[who]} | {sc} | {100 * r['answered']:.1f} % | {r['median']:.2f} ms | "
                     f"{r['p99']:.2f} ms | {r['max']:.1f} ms | {r['p99_at_write']:.2f} ms | "
                     f"{r['delivery_p99']:.2f} ms ({r['delivery_max']:.1f} ms) | {r['sender_late_2ms']} "
                     f"({r['sender_late_max']:.1f} ms) | {r['cpu_per_input']:.3f} ms{ratio} | "
                     f"{r['cpu_per_update']:.3f} ms{ratio_u} | {r['updates'] / r['inputs']:.2f} | {r['backwards']} |")
    targets = []
    for who in ("cyclone", "rclpy-humble", "rclpy-jazzy"):
        for sc in ("1kHz+stalls", "2kHz"):
            r, base = rows.get((who, sc)), rows.get(("rsp", sc))
            if r is None:
                continue
            ok = r["answered"] == 1.0 and r["p99"] <= 5.0
            cpu = ""
            if base:
                u = r["cpu_per_update"] / base["cpu_per_update"]
                cpu = (f"; CPU per /tf update {u:.1f}x robot_state_publisher's (target 2x): "
                       f"{'met' if u <= 2.0 else 'NOT met'}; per input "
                       f"{r['cpu_per_input'] / base['cpu_per_input']:.1f}x (rsp published "
                       f"{base['updates'] / base['inputs']:.2f} /tf per input, ours {r['updates'] / r['inputs']:.2f})")
            rsp_p99 = f" (robot_state_publisher {base['p99']:.2f} ms)" if base else ""
            targets.append(f"- {PUBLISHERS[who]}, {sc}: p99 {r['p99']:.2f} ms{rsp_p99} (target 5 ms): "
                           f"{'met' if ok else 'NOT met'}{cpu}")
    table = "\n".join(lines)
    cores = os.cpu_count() or 1
    rt = ", every process at real-time priority (--realtime)" if args.realtime else ""
    print(f"\n{len(moving)} joints per message, {args.seconds:g} s per scenario, load average {load0:.1f} at the "
          f"start, {load1:.1f} at the end{rt}\n\n{table}\n\n" + "\n".join(targets))
    if args.no_write:
        return
    from common import replace_marked_section
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    loaded = ""
    if args.realtime:
        loaded = (f"\n\nEvery process of the benchmark (publishers, sender, listener) ran at real-time priority "
                  f"(`--realtime`, SCHED_RR 1), so the other work on the machine (load average up to "
                  f"{max(load0, load1):.1f} on {cores} cores) did not preempt them; CPU figures still include the "
                  f"cache contention of a loaded machine.")
    elif max(load0, load1) > cores:
        loaded = (f"\n\nThe machine was loaded while this ran (load average up to {max(load0, load1):.1f} on {cores} "
                  f"cores): staleness includes each process's wait for a core (sender, publisher and listener "
                  f"alike). CPU time is less distorted, but how many inputs one /tf update merges (the /tf per input "
                  f"column) depends on the load too, and with it both CPU figures: compare rows whose /tf per input "
                  f"is alike.")
    section = f"""{BEGIN}
## TF publishers side by side: staleness (`benchmarks/bench_tf_publishers.py`, needs ROS 2)

The C++ robot_state_publisher of ROS 2 Humble (`publish_frequency` 1 kHz, its maximum: a message stamped within
1 ms of its last publication is skipped, its state covered by the next one published), our state publisher
over the Cyclone transport and over rclpy (Humble, Jazzy), one after the other in one run, each in its own
domain, fed the same `joint_states` (our URDF export of the default rover: {len(moving)} moving joints per message)
by a sender process, /tf read by a listener process (raw samples: only the first stamp is read, so that it does
not measure itself). **Staleness**: from a joint_states publication to the arrival of the first /tf update whose
state includes it (its stamp or a later one). Scenarios: 1 kHz with a 20 ms sender stall every 0.5 s (then the
missed messages at once: a controller catching up), steady 2 kHz, and 2 kHz with stalls. Where a delay arises:
**p99 at write** is the staleness to the publisher's write of that /tf (its DDS source timestamp), **delivery**
from that write to the listener's take (the transport and the listener: a late listener shows here, not in the
publisher's figure), **sender late** counts the sender's own unplanned delays (after its planned stalls) and
the longest (its messages are stamped when sent, so they do not add to staleness; they bunch up the input).
The sender and the listener freeze their start-up heap (no full garbage collection while they measure), as
`serve` does. CPU: user + system time of the publisher's process tree over the counted window, per input
message and per /tf update. Run:
`python benchmarks/bench_tf_publishers.py` (about 2 minutes).

Measured {now} on a {cores}-core machine shared with other work (load average {load0:.1f} at the start,
{load1:.1f} at the end), {args.seconds:g} s counted per scenario after 1 s of warm-up, every message counted:

{table}{loaded}

Targets of issue 24 in this run:

{chr(10).join(targets) if targets else "- (no publisher of ours ran)"}

How ours keeps up: whatever joint_states are queued when it wakes are merged into the joint cache and the newest
state is published once ("/tf per input" falls below 1 when messages queue up, as after a stall), and /tf
stamps never go backwards (the "stamps back" column counts /tf messages stamped before their predecessor, at
start-up included). robot_state_publisher publishes one /tf message per input unless its `publish_frequency`
throttle (1 kHz at most, by stamps, per joint) skips it, which with the sender's jitter and bursts skips most
inputs: its CPU per input is that of a fraction of the inputs, so CPU per /tf update is the comparable figure
(the issue's target), per input is shown as well. On the Cyclone
transport JointState samples are read by a struct-based reader (about 4x faster than the generic
deserializer of the cyclonedds package). Per update, ours converts the cache's values with indices looked up
once per joint set, computes every moving edge's translation and quaternion at once from half-angles
(`kinematics.joint_step_xyzquat`: no matrices, no matrix-to-quaternion conversion) and patches them and the
stamp into a pre-serialized /tf message (both transports); fixed joints and named frames are on /tf_static
only, as robot_state_publisher does. Correctness against robot_state_publisher (every transform to 1e-9 for
every library model) is a test: `test/system/test_against_robot_state_publisher.py`; ordering, merging and the
stall behaviour over DDS: `test/system/test_state_publisher_ordering.py`.
{END}
"""
    replace_marked_section(os.path.join(TOP, "BENCHMARKS.md"), section, BEGIN, END)
    print("BENCHMARKS.md updated")


if __name__ == "__main__":
    main()
