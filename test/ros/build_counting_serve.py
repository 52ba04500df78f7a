"""``mechanism_model_ros.serve`` with IK's cache builds counted (test/core/ik_builds.py) from the start of the
process: after each ``compute_ik`` request the kinematics server prints ``IK-BUILDS <json>``, what that request
built by kind (``{}``: nothing). Run as ``python build_counting_serve.py <serve arguments>``; nothing of serve
is replaced, the server's ``compute_ik`` is only wrapped."""

from __future__ import annotations

import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))      # test/: core.ik_builds

from core import ik_builds  # noqa: E402
from mechanism_model_ros import kinematics_server, serve  # noqa: E402


def main(argv: list[str]) -> int:
    built = ik_builds.install(ik_builds.Patcher)
    lock = threading.Lock()
    compute_ik = kinematics_server.KinematicsServer.compute_ik

    def counted(self, req, rep):
        with lock:                      # one request at a time: its builds are its own
            before = dict(built)
            try:
                return compute_ik(self, req, rep)
            finally:
                new = {k: v - before.get(k, 0) for k, v in built.items() if v != before.get(k, 0)}
                print(f"IK-BUILDS {json.dumps(new, sort_keys=True)}", flush=True)
    kinematics_server.KinematicsServer.compute_ik = counted
    return serve.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
