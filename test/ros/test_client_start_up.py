"""``mechanism-model-call`` and ``mechanism-model-echo`` start without loading the model code (issue 23): their
module and the Cyclone transport import no ``mechanism_model_core`` module and no scipy (the core's package
``__init__`` imports every algorithm, about 0.4 s of CPU; figures in BENCHMARKS.md). Checked on what a fresh
interpreter has imported, not on time."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ros

PROBE = r"""
import json, sys
import mechanism_model_ros.client_cli
import mechanism_model_ros.transports.cyclone
import mechanism_model_ros.transports.memory
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("mechanism_model_core", "scipy"))))
"""


def test_the_clients_and_the_cyclone_transport_load_no_model_code():
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, cwd="/")
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout) == []


def test_the_call_and_echo_help_come_from_their_own_commands():
    for entry in ("call_main", "echo_main"):
        p = subprocess.run([sys.executable, "-c", f"from mechanism_model_ros.client_cli import {entry}; "
                            f"import sys; {entry}(['--help'])"], capture_output=True, text=True, timeout=120,
                           cwd="/")
        assert p.returncode == 0 and "usage: mechanism-model " + entry.split("_")[0] in p.stdout, p.stderr
