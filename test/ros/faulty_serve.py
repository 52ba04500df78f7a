"""``mechanism_model_ros.serve`` with two faults a test triggers by signal (issue 19, item 1: every ending of
the node stops its motors). Run as ``python faulty_serve.py --transport cyclone|rclpy <serve arguments>``:

* SIGUSR1: an exception in serve's main loop. A Python signal handler runs on the main thread between two
  bytecodes of whatever it is executing -- here serve's loop (its wait, its transport check, its status
  line) -- so the ``RuntimeError`` it raises comes out of that loop exactly as a failing call in it would.
* SIGUSR2: the process's DDS participant goes away under the running nodes, from a thread of its own (as a
  library in the process or a failing middleware would do it):

  - rclpy: the nodes' context is shut down (``rclpy.shutdown(context=...)``): its nodes, publishers and
    executors are invalid from then on;
  - Cyclone: the participant is deleted (``dds_delete``): with it go its readers, writers and the
    dispatcher's wait set.

  With ``MM_FAULT_NO_REOPEN=1`` in the environment the loss is for good: no fresh participant can be made
  either (as with no network at all; the transports' ``reopen_publishers`` raise), so nothing the node sends
  reaches the controllers.

Nothing else of serve is replaced: the transport classes are only wrapped so that this script can find the
instances serve creates. The trigger time is printed (``FAULT <name> <time.time()>``)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from mechanism_model_ros import serve
from mechanism_model_ros.transports.base import TransportError

#: the transport objects serve made (CycloneContext or RclpyRuntime)
MADE: list = []


def _record_instances(cls) -> None:
    init = cls.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        MADE.append(self)
    cls.__init__ = recording_init


def _lose_participant(transport: str) -> None:
    made = list(MADE)           # those serve made so far (not the fresh one it makes once it sees the loss)
    if transport == "rclpy":
        import rclpy
        for runtime in made:
            rclpy.shutdown(context=runtime.context)
    else:
        from cyclonedds.core import Entity
        for ctx in made:
            Entity._delete(ctx.participant, ctx.participant._ref)      # dds_delete: children go with it
    print(f"FAULT participant-lost {time.time():.6f}", flush=True)


def main(argv: list[str]) -> int:
    transport = argv[argv.index("--transport") + 1]
    if transport == "rclpy":
        from mechanism_model_ros.transports.rclpy_transport import RclpyNode as Node, RclpyRuntime
        _record_instances(RclpyRuntime)
    else:
        from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode as Node
        _record_instances(CycloneContext)
    if os.environ.get("MM_FAULT_NO_REOPEN") == "1":
        def no_network(self, fresh):
            raise TransportError("no participant can reach the network (faulty_serve, MM_FAULT_NO_REOPEN)")
        Node.reopen_publishers = no_network

    def raise_in_main_loop(signum, frame):
        print(f"FAULT main-loop-exception {time.time():.6f}", flush=True)
        raise RuntimeError("an exception raised in serve's main loop (faulty_serve, SIGUSR1)")

    def lose(signum, frame):
        threading.Thread(target=_lose_participant, args=(transport,), name="lose-participant").start()

    signal.signal(signal.SIGUSR1, raise_in_main_loop)
    signal.signal(signal.SIGUSR2, lose)
    return serve.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
