"""Helpers for tests over real Cyclone DDS on the loopback interface (multicast off, unique domain id).

The nodes run in their own process (``python -m mechanism_model_ros.serve``) over the cyclone transport;
the test side uses Cyclone DDS with message classes built from rosbags' definitions.
"""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
import threading
import time

LOOPBACK_URI = (
    '<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="lo"/></Interfaces>'
    '<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>'
    '<Peers><Peer address="127.0.0.1"/></Peers><MaxAutoParticipantIndex>50</MaxAutoParticipantIndex>'
    '</Discovery></Domain></CycloneDDS>')

ROS_PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "mechanism_model_ros")


def unique_domain_id() -> int:
    """A domain id unlikely to be used by another test run on this machine.

    ``MM_TEST_DOMAINS=lo-hi`` (inclusive) confines the draw, so that test runs started side by side (several
    work trees, a benchmark beside the suite) cannot meet on one domain; the default is 1..230.
    """
    lo, hi = 1, 230
    spec = os.environ.get("MM_TEST_DOMAINS", "").strip()
    if spec:
        a, _, b = spec.partition("-")
        lo, hi = int(a), int(b or a)
        if not 0 <= lo <= hi <= 232:
            raise ValueError(f"MM_TEST_DOMAINS={spec!r}: want lo-hi within 0-232")
    global _domain_start
    n = hi - lo + 1
    with _domain_lock:
        if _domain_start is None:
            _domain_start = os.getpid() * 7 + random.randrange(1000)
        # successive calls of one process take successive ids: servers alive together (a module's fixture
        # beside a test's own server) never share a domain while fewer than the range's size were drawn
        k = next(_domain_counter)
    return lo + (_domain_start + k) % n


_domain_lock = threading.Lock()
_domain_counter = itertools.count()
_domain_start = None


def dds_env(domain_id: int) -> dict:
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["CYCLONEDDS_URI"] = LOOPBACK_URI
    env.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)
    env.pop("ROS_LOCALHOST_ONLY", None)
    env.pop("ROS_STATIC_PEERS", None)
    env["PYTHONPATH"] = os.pathsep.join([ROS_PKG] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                                     if p])
    return env


def configure_this_process(domain_id: int) -> None:
    for k, v in dds_env(domain_id).items():
        if k in ("ROS_DOMAIN_ID", "CYCLONEDDS_URI"):
            os.environ[k] = v
    for k in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOCALHOST_ONLY", "ROS_STATIC_PEERS"):
        os.environ.pop(k, None)


def start_serve(domain_id: int, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``serve`` over the Cyclone transport in its own process; ``env`` entries are added to its environment
    (a value of None removes the variable)."""
    e = dds_env(domain_id)
    for k, v in (env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return subprocess.Popen(
        [sys.executable, "-m", "mechanism_model_ros.serve", "--transport", "cyclone", "--status-period", "0",
         "--log-level", "ERROR", *args],
        env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop(proc: subprocess.Popen) -> tuple[str, str]:
    if proc.poll() is None:
        proc.terminate()
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out, err


def wait_for(predicate, timeout: float = 10.0, period: float = 0.02) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(period)
    return predicate()


def transform_to_matrix(tr):
    """4x4 of a ``geometry_msgs/Transform`` (scipy's quaternion conversion, independent of the package)."""
    import numpy as np
    from scipy.spatial.transform import Rotation
    T = np.eye(4)
    T[:3, :3] = Rotation.from_quat([tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w]).as_matrix()
    T[:3, 3] = tr.translation.x, tr.translation.y, tr.translation.z
    return T
