"""Memory and time of the first collision check against a large height field (issue 19 item 7).

    python benchmarks/bench_height_field_memory.py            # 2000 x 2000 grid (the documented limit)
    python benchmarks/bench_height_field_memory.py --n 500

Writes an N x N ``.npy`` grid (5 cm spacing, the Rocky 8 rover's wheels about 5 cm in the ground), loads it
as an environment file and reports the resident memory and CPU time of loading, of the first
``in_collision`` and of the first ``minimum_distance`` (environment only), each per grid point, and the
median CPU time of further checks. Resident memory from /proc/self/statm (Linux).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

from mechanism_model_core import load_model
from mechanism_model_core.collision import in_collision, minimum_distance
from mechanism_model_core.io import load_environment
from mechanism_model_core.library import default_model_path


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="grid points per side")
    args = ap.parse_args(argv)
    n = args.n
    rover = load_model(default_model_path())
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        np.save(os.path.join(tmp, "dem.npy"), 0.02 * rng.standard_normal((n, n)) + 0.05)
        with open(os.path.join(tmp, "env.yaml"), "w") as fh:
            fh.write("terrain:\n  height_field: {file: dem.npy, spacing: [0.05, 0.05], "
                     f"origin: [{-0.025 * n}, {-0.025 * n}]}}\n")
        m0, t0 = rss(), time.process_time()
        env = load_environment(os.path.join(tmp, "env.yaml"))
        m1, t1 = rss(), time.process_time()
        hit = in_collision(rover, None, environment=env, self_collision=False)
        m2, t2 = rss(), time.process_time()
        d = minimum_distance(rover, None, environment=env, self_collision=False)
        m3, t3 = rss(), time.process_time()
    again = []
    for _ in range(20):
        s = time.process_time()
        in_collision(rover, None, environment=env, self_collision=False)
        again.append(time.process_time() - s)
    pts = n * n
    print(f"grid {n} x {n} ({pts} points); rover in collision: {hit}, minimum distance {d.distance:.4f} m")
    print(f"load environment:        {(m1 - m0) / pts:8.1f} B/point  {t1 - t0:7.3f} s CPU")
    print(f"first in_collision:      {(m2 - m1) / pts:8.1f} B/point  {t2 - t1:7.3f} s CPU")
    print(f"first minimum_distance:  {(m3 - m2) / pts:8.1f} B/point  {t3 - t2:7.3f} s CPU")
    print(f"further in_collision:    median {statistics.median(again) * 1e3:.2f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
