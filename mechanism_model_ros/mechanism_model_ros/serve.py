"""``mechanism-model serve``: the state publisher and the kinematics server in one process.

On rclpy where rclpy imports (a sourced ROS 2: ``ros2 run mechanism_model_ros mechanism-model-serve``), else
over the Cyclone transport (no ROS installation needed) -- ``--transport auto``, the default; on the robot
library's default model, ``--model``, the ``robot_description`` parameter, or the live description of a
running bringup (``--robot-description-topic /robot_description``: then the state publisher does not
publish one itself); prints a status line (joint-state messages in and dropped, transforms
out, service calls) every few seconds.

The core's ``mechanism-model`` command delegates its ``serve`` subcommand here
(:func:`main` takes the arguments after ``serve``).
"""

from __future__ import annotations

from .start_up import quiet_interrupt
if __name__ == "__main__":      # python -m: Ctrl-C during the seconds of imports below exits quietly, so they
    quiet_interrupt()           # come after this on purpose (start_up.py)

import argparse
import gc
import logging
import signal
import sys
import threading
import time

from .nodes import DEFAULT_NODES
from mechanism_model_core.errors import MechanismModelError
from .description_topic import receive_robot_description
from .model_loading import load_robot_description, load_robot_description_topic, load_served_model, urdf_text_for
from .nodes import Served, create, available
from .params import load_parameter_file
from .param_values import parse_override
from .transports.base import TransportError

NODE_NAMES = DEFAULT_NODES


def build_parser(prog: str = "mechanism-model serve", nodes=NODE_NAMES,
                 default_transport: str = "auto") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the mechanism_model ROS 2 nodes (" + ", ".join(nodes) + ") over rclpy (where it "
                    "imports: a sourced ROS 2) or plain Cyclone DDS. Honours ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE, "
                    "ROS_LOCALHOST_ONLY, ROS_STATIC_PEERS and CYCLONEDDS_URI like rmw_cyclonedds.")
    p.add_argument("--model", help="model file or robot-library name (default: the library's default "
                                   "model, or the 'model' parameter)")
    p.add_argument("--robot-description-topic", default=None, metavar="TOPIC",
                   help="take the model from the live robot description on TOPIC (e.g. /robot_description of "
                        "a running robot_state_publisher; reliable, transient local) instead of a file; also "
                        "the 'robot_description_topic' parameter")
    p.add_argument("--description-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for the robot description on the topic (default 30)")
    p.add_argument("--params-file", help="ROS 2 parameter file (ros__parameters YAML)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME:=VALUE",
                   help="set a parameter of every node (repeatable)")
    p.add_argument("--transport", choices=("cyclone", "rclpy", "auto"), default=default_transport,
                   help=f"middleware (default {default_transport}; auto: rclpy where it imports)")
    p.add_argument("--nodes", default=None, metavar="NAME[,NAME...]",
                   help="nodes to run, from the registry (mechanism_model_ros.nodes; default: "
                        + ",".join(nodes) + ")")
    p.add_argument("--namespace", default="/", help="ROS namespace of the nodes (default /)")
    p.add_argument("--frame-prefix", default=None, help="prefix of every published frame id")
    p.add_argument("--status-period", type=float, default=5.0,
                   help="seconds between status lines; 0 disables them (default 5)")
    p.add_argument("--duration", type=float, default=0.0,
                   help="stop after this many seconds (default: run until interrupted)")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return p


def _parameters(args, node_name: str) -> dict:
    params = {}
    if args.params_file:
        params.update(load_parameter_file(args.params_file, node_name, args.namespace))
    for text in args.param:
        k, v = parse_override(text)
        params[k] = v
    if args.model:
        params["model"] = args.model
    if args.frame_prefix is not None:
        params["frame_prefix"] = args.frame_prefix
    return params


def resolve_transport(kind: str) -> str:
    """``auto`` -> ``rclpy`` where rclpy imports (a sourced ROS 2), else ``cyclone``; others unchanged."""
    if kind != "auto":
        return kind
    try:
        import rclpy  # noqa: F401
        return "rclpy"
    except Exception:       # not installed, or built for another Python
        return "cyclone"


def status_line(nodes: dict, joint_states=None) -> str:
    """One line: the joint-state cache's counts, then each node's ``status()``."""
    parts = [joint_states.status()] if joint_states is not None else []
    for node in nodes.values():
        fn = getattr(node, "status", None)
        if callable(fn):
            parts.append(fn())
    return " | ".join(parts)


def run_nodes(argv=None, nodes=NODE_NAMES, prog: str = "mechanism-model serve",
              default_transport: str = "auto") -> int:
    """Run ``nodes`` in this process. Arguments after ``--ros-args`` go to rclpy untouched (as
    ``ros2 run``/``ros2 launch`` pass them)."""
    parser = build_parser(prog, nodes, default_transport)
    argv = list(sys.argv[1:] if argv is None else argv)
    ros_args = []
    if "--ros-args" in argv:
        i = argv.index("--ros-args")
        argv, ros_args = argv[:i], argv[i:]
    args = parser.parse_args(argv)
    if args.nodes:
        nodes = tuple(n.strip() for n in args.nodes.split(",") if n.strip())
        unknown = [n for n in nodes if n not in available()]
        if unknown or not nodes:
            parser.error(f"--nodes: unknown node(s) {', '.join(unknown) or '(none given)'}; known: "
                         f"{', '.join(sorted(available()))}")
    logging.basicConfig(level=getattr(logging, args.log_level),
                        format="[%(levelname)s] [%(name)s] %(message)s")
    log = logging.getLogger("mechanism_model_ros.serve")

    try:
        parameters = {name: _parameters(args, name) for name in nodes}
    except ValueError as exc:           # a missing or malformed --params-file, a bad -p
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kind = resolve_transport(args.transport)

    stop = threading.Event()            # set: leave (a signal, --duration, a lost transport)
    spinning = threading.Event()        # set: the rclpy spin thread stops (after the nodes have closed)
    spin_thread = None
    spin_error: list = []
    transports = {}
    running = {}
    code = 0
    lost = None                         # why the middleware was lost (the main loop saw it)
    fresh = None                        # the Cyclone participant made for the last commands after a loss

    # from the start: a SIGINT/SIGTERM arriving while the nodes are being created (a node may command its
    # motors before its constructor returns: the locomotor on its first cmd_vel) ends in their close() too
    def on_signal(signum, frame):
        stop.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(sig, on_signal)
        except ValueError:       # not the main thread
            pass

    def start_spin():
        """The rclpy executor on a thread of its own until ``spinning`` is set; an exception it raises is
        kept for the main loop (:func:`transport_lost`)."""
        def spin():
            try:
                runtime.spin(spinning)
            except BaseException as exc:      # noqa: BLE001 -- reported by the main loop
                spin_error.append(exc)
        thread = threading.Thread(target=spin, daemon=True, name="mm-serve-spin")
        thread.start()
        return thread
    try:
        if kind == "cyclone":
            try:
                from .transports.cyclone import CycloneContext, CycloneNode
            except ImportError as exc:
                print(f"error: the cyclone transport needs the cyclonedds and rosbags packages "
                      f"(pip install cyclonedds rosbags): {exc}", file=sys.stderr)
                return 2
            ctx = CycloneContext()
            for name in nodes:
                transports[name] = CycloneNode(name, args.namespace, parameters[name], context=ctx)
        else:
            try:
                from .transports.rclpy_transport import RclpyRuntime
            except ImportError as exc:
                print(f"error: the rclpy transport needs a sourced ROS 2 installation: {exc}", file=sys.stderr)
                return 2
            runtime = RclpyRuntime(ros_args)
            for name in nodes:
                transports[name] = runtime.node(name, args.namespace, parameters[name])
        if stop.is_set():
            return code                       # asked to stop while the middleware started
        try:
            model = transports[nodes[0]].get_parameter("model", args.model or "")
            description = transports[nodes[0]].get_parameter("robot_description", "")
            topic = args.robot_description_topic or transports[nodes[0]].get_parameter(
                "robot_description_topic", "")
            from_topic = bool(topic) and not args.model and not description.strip()
            if from_topic:
                if kind == "rclpy":       # the subscription's callback needs the executor spinning
                    spin_thread = start_spin()
                log.info("waiting for the robot description on %s (at most %g s)", topic, args.description_timeout)
                text = receive_robot_description(transports[nodes[0]], topic, args.description_timeout, stop)
                if text is None:
                    return code               # asked to stop while waiting for the description
                mechanism, description = load_robot_description_topic(text, topic)
                path = f"robot_description topic {topic}"
            elif description.strip() and not args.model:
                mechanism, description = load_robot_description(description)
                path = "robot_description parameter"
            else:
                mechanism, path = load_served_model(model or None)
                # --model with a robot_description of that model (a launch file adding a <ros2_control>
                # block for the controller manager): published verbatim when it describes the model's frames
                description = urdf_text_for(mechanism, description) if description.strip() else None
                if description is None and path.lower().endswith(".urdf"):
                    with open(path, encoding="utf-8") as fh:
                        description = urdf_text_for(mechanism, fh.read())
        except (MechanismModelError, OSError, UnicodeDecodeError, ValueError, TransportError,
                TimeoutError) as exc:
            print(f"error: cannot load the model: {exc}", file=sys.stderr)
            return 2
        log.info("model %s (%s): %d joint coordinates, %d frames", mechanism.name, path, mechanism.nq,
                 len(mechanism.frame_names))
        served = Served(mechanism, path, description, description_owned_elsewhere=from_topic)
        try:
            for name in nodes:
                if stop.is_set():
                    break                     # asked to stop while starting: close what runs
                running[name] = create(name, transports[name], served)
        except (ValueError, TypeError, TransportError) as exc:    # bad parameters
            print(f"error: {exc}", file=sys.stderr)
            return 2
        freeze_start_up_heap()
        log.info("serving over %s (ROS domain %s): %s", kind,
                 getattr(getattr(transports[nodes[0]], "ctx", None), "domain_id", "from ROS"),
                 ", ".join(running))

        if kind == "rclpy" and spin_thread is None:
            spin_thread = start_spin()
        t_end = time.monotonic() + args.duration if args.duration > 0 else None
        next_status = time.monotonic() + args.status_period
        while not stop.is_set():
            now = time.monotonic()
            if t_end is not None and now >= t_end:
                break
            lost = transport_lost(kind, runtime if kind == "rclpy" else ctx, spin_thread, spin_error)
            if lost:
                log.error("%s: stopping the nodes", lost)
                code = 1
                break
            if args.status_period > 0 and now >= next_status:
                print(status_line(running, served.joint_state_cache), flush=True)
                next_status = now + args.status_period
            stop.wait(0.1)
        if args.status_period > 0:
            print(status_line(running, served.joint_state_cache), flush=True)
        return code
    except Exception:
        log.exception("serve failed: stopping the nodes")
        raise
    finally:
        stop.set()
        if lost and running:
            fresh = reopen_for_last_commands(kind, runtime if kind == "rclpy" else ctx, transports, log)
        # the nodes' last commands (zero wheel rates, leg holds, cancelled goals) go out while the
        # transports still run: an action goal needs the executor spinning to be sent and answered
        close_nodes(running, log)
        spinning.set()
        if spin_thread is not None:
            spin_thread.join(timeout=2.0)     # no callback may run on a node being destroyed
        for t in transports.values():
            try:
                t.close()
            except Exception:
                pass
        if kind == "cyclone" and transports:
            for c in (ctx, fresh):
                try:
                    if c is not None:
                        c.close()
                except Exception:
                    pass
        elif kind == "rclpy" and transports:
            runtime.shutdown()


def freeze_start_up_heap() -> None:
    """Collect once, then move every object start-up made (modules, the model, the nodes' tables: some
    56,000 in a state publisher's process) out of reach of Python's cyclic garbage collector (``gc.freeze``).
    A full collection scans every tracked object while holding the interpreter: 20-30 ms of CPU over that heap
    (the rclpy state publisher, Humble and Jazzy), a pause every node of the process takes whenever one
    comes; after the freeze it scans only what was made since. Objects made at start-up are kept for the
    process's life anyway; cycles among them that die later are not reclaimed (none are expected)."""
    gc.collect()
    gc.freeze()


def reopen_for_last_commands(kind: str, runtime, transports: dict, log):
    """The middleware was lost under the nodes (:func:`transport_lost`): where the participant itself is
    gone (the rclpy context shut down; the Cyclone dispatcher failed), every node's publishers are re-created
    on a fresh participant of the same domain, so that the nodes' ``close()`` still reaches the motor
    controllers (:meth:`~.transports.base.Transport.reopen_publishers`). Best effort: where that fails too (no
    network at all), the controllers' own command timeout stops the motors (docs/ros.md). Returns the fresh
    Cyclone context to close (None otherwise)."""
    fresh = None
    try:
        if kind == "rclpy":
            if runtime.context.ok():         # the executor failed, the participant is still there
                return None
            ctx = runtime.fresh_context()
        else:
            ctx = fresh = type(runtime)(runtime.domain_id)
        n = sum(t.reopen_publishers(ctx) for t in transports.values())
        log.warning("the nodes' %d publishers re-created on a fresh participant for their last commands", n)
    except Exception as exc:        # noqa: BLE001 -- the controllers' command timeout is the fallback
        log.error("cannot re-create the publishers for the last commands (%s: %s); the controllers' command "
                  "timeout stops the motors", type(exc).__name__, exc)
    return fresh


def close_nodes(running: dict, log) -> None:
    """``close()`` of every node that has one, in reverse start order; a failing one is logged and the others
    still close (each sends its motors their last command: zero rates, a hold)."""
    for name, node in reversed(list(running.items())):
        fn = getattr(node, "close", None)
        if not callable(fn):
            continue
        try:
            fn()
        except Exception as exc:       # noqa: BLE001 -- the other nodes must still stop their motors
            log.error("closing %s failed: %s: %s", name, type(exc).__name__, exc)


def transport_lost(kind: str, runtime, spin_thread, spin_error) -> str | None:
    """Why the process's middleware can no longer carry the nodes' messages (None: it can): the rclpy
    context shut down or its spin thread died; the Cyclone dispatcher thread ended."""
    if kind == "rclpy":
        if not runtime.context.ok():        # first: the executor stops because of it
            return "the rclpy context was shut down"
        if spin_error:
            return f"the rclpy executor failed ({type(spin_error[0]).__name__}: {spin_error[0]})"
        if spin_thread is not None and not spin_thread.is_alive():
            return "the rclpy executor stopped"
        return None
    if not runtime.alive():
        failure = getattr(runtime, "failure", None)
        return "the Cyclone DDS dispatcher stopped" + (f" ({type(failure).__name__}: {failure})" if failure else "")
    return None


def main(argv=None) -> int:
    """Entry point of ``mechanism-model-serve`` and of ``mechanism-model serve``."""
    return run_nodes(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
