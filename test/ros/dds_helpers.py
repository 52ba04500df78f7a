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
#: the core's project folder: first on a child's PYTHONPATH too, else ``python -m`` started from the checkout's
#: top (CI, pytest from the top folder) imports its ``mechanism_model_core`` folder as an empty namespace package
CORE_PKG = os.path.join(os.path.dirname(ROS_PKG), "mechanism_model_core")


def unique_domain_id() -> int:
    """A domain id no other test process on this machine is using.

    ``MM_TEST_DOMAINS=lo-hi`` (inclusive) confines the draw, so that test runs started side by side (several
    work trees, a benchmark beside the suite) cannot meet on one domain; the default is 1..230.

    Ranges may still overlap (a run with the default range beside runs confined to theirs), and two servers of
    one service on one domain break a test without a trace: the client's ``wait_for_service`` is satisfied by
    the other run's server, its request goes there alone, and its own server, discovered a moment later, never
    sees it (a volatile request reaches only the readers matched when it is written). So every id handed out
    is also reserved machine-wide by an advisory lock (``flock`` on ``/tmp/mm-dds-domains/<id>.lock``, released
    when the process exits or :data:`HOLD` newer ids have been drawn), and ids that another process holds are
    skipped. Only when every id of the range is held elsewhere is one shared, as before.
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
        first = None
        for _ in range(n):
            d = lo + (_domain_start + next(_domain_counter)) % n
            first = d if first is None else first
            if _reserve(d):
                return d
        return first


#: how many of the ids it drew a process keeps reserved (the newest); a module's servers and a test's own
#: server are alive together, never this many
HOLD = 12
_LOCK_DIR = os.path.join(os.environ.get("TMPDIR", "/tmp"), "mm-dds-domains")
_held: dict[int, int] = {}       # domain id -> file descriptor holding its lock, oldest first
_domain_lock = threading.Lock()
_domain_counter = itertools.count()
_domain_start = None


def _reserve(domain: int) -> bool:
    """Reserve ``domain`` for this process (True), or False when another process holds it."""
    import fcntl
    if domain in _held:
        _held[domain] = _held.pop(domain)          # the newest again
        return True
    try:
        os.makedirs(_LOCK_DIR, mode=0o777, exist_ok=True)
        fd = os.open(os.path.join(_LOCK_DIR, f"{domain}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return True                                # no lock directory: no reservation, as before
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _held[domain] = fd
    while len(_held) > HOLD:
        old = next(iter(_held))
        os.close(_held.pop(old))                   # closing the descriptor releases the lock
    return True


def dds_env(domain_id: int) -> dict:
    env = dict(os.environ)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["CYCLONEDDS_URI"] = LOOPBACK_URI
    env.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)
    env.pop("ROS_LOCALHOST_ONLY", None)
    env.pop("ROS_STATIC_PEERS", None)
    env["PYTHONPATH"] = os.pathsep.join([ROS_PKG, CORE_PKG] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
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


def two_cyclone_nodes(name_a: str, name_b: str):
    """Two Cyclone-transport nodes in this process, each with a DDS participant of its own, on a fresh domain
    (loopback): a generator for a pytest fixture (yields the nodes, closes them and their contexts)."""
    d = unique_domain_id()
    configure_this_process(d)
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx_a, ctx_b = CycloneContext(d), CycloneContext(d)
    a, b = CycloneNode(name_a, context=ctx_a), CycloneNode(name_b, context=ctx_b)
    try:
        yield a, b
    finally:
        for n, c in ((a, ctx_a), (b, ctx_b)):
            n.close()
            c.close()


def assert_lookups_equal_forward_kinematics(model, values: dict, got: dict, atol: float = 1e-9) -> None:
    """``got``: ``{frame: [translation xyz, quaternion xyzw]}`` as tf2 looked them up from the root; each pose
    must equal the core's forward kinematics at the joint ``values`` (quaternions converted by scipy)."""
    import numpy as np
    from scipy.spatial.transform import Rotation

    from mechanism_model_core import forward_kinematics
    fk = forward_kinematics(model, values)
    for f, (translation, quaternion) in got.items():
        T = np.eye(4)
        T[:3, :3] = Rotation.from_quat(quaternion).as_matrix()
        T[:3, 3] = translation
        np.testing.assert_allclose(T, fk.pose(f), atol=atol, err_msg=f)
