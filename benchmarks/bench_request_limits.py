"""What refusing an oversized ``check_state_validity`` request costs (issue 19, item 10), in CPU time (the
machine is shared): the Cyclone transport's check of the serialized request (transports/cyclone/cdr_limits.py) next
to the decoding it saves (the cyclonedds package's deserializer, what the transport ran before the check),
for a request of 100,000 boxes (refused), one at the limit of 1,000 boxes and a small one (both accepted: the
check is then overhead), and rclpy's C decoding of the 100,000-box request under ROS 2 Humble's Python where
it is installed (rclpy hands a service nothing before that).

    python benchmarks/bench_request_limits.py

Medians of interleaved repetitions in one process; prints a Markdown table.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test"))
sys.path.insert(0, os.path.join(ROOT, "mechanism_model_ros"))

from mechanism_model_ros.state_validity import REQUEST_LIMITS  # noqa: E402
from mechanism_model_ros.transports.cyclone.cdr_limits import CdrLimits  # noqa: E402
from mechanism_model_ros.transports.typegen import service_wire_class  # noqa: E402
from ros.big_requests import REQUEST, boxes_request  # noqa: E402


def cpu(fn, min_time: float = 0.2, most: int = 2000) -> float:
    """CPU seconds of one call: calls repeated for at least ``min_time`` s (at least once, at most ``most``)."""
    n, t0 = 0, time.process_time()
    while n < most and (n == 0 or time.process_time() - t0 < min_time):
        fn()
        n += 1
    return (time.process_time() - t0) / n


def _rclpy_decode(data: bytes) -> float | None:
    try:
        from ros import ros_env
        if not ros_env.available("humble"):
            return None
    except Exception:
        return None
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"mm_bench_100k_{os.getpid()}.cdr")
    with open(path, "wb") as fh:
        fh.write(data)
    code = ("import statistics, sys, time\n"
            "from rclpy.serialization import deserialize_message\n"
            "from mechanism_model_msgs.srv import CheckStateValidity\n"
            "data = open(sys.argv[1], 'rb').read()\n"
            "ts = []\n"
            "for _ in range(3):\n"
            "    t = time.process_time(); deserialize_message(data, CheckStateValidity.Request)\n"
            "    ts.append(time.process_time() - t)\n"
            "print(statistics.median(ts))\n")
    try:
        p = ros_env.run_python(code, ros_env.domain(), timeout=600, args=(path,))
        return float(p.stdout.strip().splitlines()[-1])
    except Exception:
        return None
    finally:
        os.unlink(path)


def main() -> int:
    check = CdrLimits(REQUEST, REQUEST_LIMITS, header=16).check
    Req = service_wire_class(REQUEST)
    rows = []
    for label, n in (("100,000 boxes (9.6 MB): refused", 100_000), ("1,000 boxes (the limit): accepted", 1000),
                     ("10 boxes: accepted", 10)):
        data = boxes_request(n, guid=1, seq=1)
        verdict = check(data)
        assert (verdict is not None) == (n > 1000), verdict
        reps = 3 if n > 1000 else 7
        c, d = [], []
        for _ in range(reps):           # interleaved
            c.append(cpu(lambda: check(data)))
            d.append(cpu(lambda: Req.deserialize(data), min_time=0.0 if n > 1000 else 0.2, most=1 if n > 1000 else 500))
        c, d = statistics.median(c), statistics.median(d)
        rows.append((label, c, d))
    rclpy = _rclpy_decode(boxes_request(100_000))
    print(f"load average {os.getloadavg()[0]:.1f}, Python {sys.version.split()[0]}\n")
    print("| request | check of the serialized request (CPU) | cyclonedds decoding (CPU) | ratio |")
    print("|---|---|---|---|")
    for label, c, d in rows:
        print(f"| {label} | {c * 1e6:.1f} us | {d * 1e3:.2f} ms | {d / c:,.0f}x |")
    if rclpy is not None:
        print(f"\nrclpy (Humble) decoding of the 100,000-box request, before any Python code sees it: {rclpy:.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
