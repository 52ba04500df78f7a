"""Start-up cost of the command-line entry points: median CPU time (user + system, of the child process) of
each command, run ``--runs`` times. ``call`` runs against an empty DDS domain (loopback, a test domain id)
with a 0.2 s timeout, so it measures start-up, participant and type generation, not a server.

    python benchmarks/bench_start_up.py [--runs 7]

CPU time, not wall time: the machine is usually shared (give the load average with any figure).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test"))

from ros.dds_helpers import dds_env, unique_domain_id  # noqa: E402

BIN = os.path.dirname(sys.executable)

COMMANDS = [
    ["mechanism-model-call", "--help"],
    ["mechanism-model-echo", "--help"],
    ["mechanism-model-serve", "--help"],
    ["mechanism-model", "--help"],
    ["mechanism-model-call", "compute_fk", "--timeout", "0.2"],
    ["mechanism-model", "call", "compute_fk", "--timeout", "0.2"],
    [sys.executable, "-c", "import mechanism_model_ros.transports.cyclone"],
    [sys.executable, "-c", "import mechanism_model_core"],
]


def cpu_of(cmd, env) -> float:
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, capture_output=True, cwd="/")
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    env = dds_env(unique_domain_id())
    print(f"load average {os.getloadavg()[0]:.1f}; median CPU s of {args.runs} runs")
    for cmd in COMMANDS:
        full = [os.path.join(BIN, cmd[0]) if os.sep not in cmd[0] else cmd[0], *cmd[1:]]
        t = statistics.median(cpu_of(full, env) for _ in range(args.runs))
        shown = " ".join(cmd if os.sep not in cmd[0] else ["python", *cmd[1:]])
        print(f"{t:6.2f}  {shown}")


if __name__ == "__main__":
    main()
