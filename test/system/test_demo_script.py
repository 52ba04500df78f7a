"""The README's first command and its "call it from another shell": ``bash scripts/demo.sh`` (in this test's
environment, ``MM_DEMO_VENV``, so nothing is installed) says which ROS 2 domain it serves, and the README's
commands run in a second shell that sources ``scripts/demo_env.sh`` reach it over real Cyclone DDS on
loopback: ``compute_fk`` answers with the core's pose and ``check_state_validity`` answers SUCCESS (the
collision extra is installed: not COLLISION_CHECKING_UNAVAILABLE, -22)."""

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import yaml

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import default_model_path

from ros.dds_helpers import unique_domain_id, wait_for

pytestmark = pytest.mark.ros
pytest.importorskip("coal", reason="needs the collision extra (coal)")

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.dirname(os.path.dirname(sys.executable))


def _env(domain: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROS_", "CYCLONEDDS", "RMW_"))}
    env.update(ROS_DOMAIN_ID=str(domain), MM_DEMO_VENV=VENV)
    return env


def _readme_other_shell_commands() -> list[str]:
    """The commands of the README's block that follows "Call it from another shell"."""
    with open(os.path.join(TOP, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("Call it from another shell", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split(" # ")[0].strip() for line in block.strip().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def demo():
    d = unique_domain_id()
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(["bash", "scripts/demo.sh", "--duration", "120", "--status-period", "0"], cwd=TOP,
                            env=_env(d), stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)

    def output():
        log.seek(0)
        return log.read()
    try:
        assert wait_for(lambda: "demo: ROS 2 domain" in output() or proc.poll() is not None, 60), output()
        yield d, output
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert "Traceback" not in output(), output()


def test_demo_says_its_domain(demo):
    d, output = demo
    assert re.search(rf"demo: ROS 2 domain {d}\b", output()), output()


def test_the_readme_commands_from_another_shell_reach_the_demo(demo):
    d, _ = demo
    commands = _readme_other_shell_commands()
    assert commands[0].startswith(". scripts/demo_env.sh") and len(commands) >= 3, commands
    replies = []
    for cmd in commands[1:]:
        argv = shlex.split(cmd)
        assert argv[:2] == ["mechanism-model", "call"], cmd
        # the user's second shell: the env file sourced, nothing else set (PATH without the venv)
        script = commands[0] + " && " + " ".join(shlex.quote(a) for a in argv[:-1]) + " " + \
            shlex.quote(argv[-1]) + " --timeout 30"
        env = _env(d)
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                      if os.path.abspath(p) != os.path.join(VENV, "bin"))
        env.pop("MM_DEMO_VENV")
        p = subprocess.run(["bash", "-c", script], cwd=TOP, env=env, capture_output=True, text=True, timeout=90)
        assert p.returncode == 0, (cmd, p.stdout, p.stderr)
        replies.append(yaml.safe_load(p.stdout))
    fk, validity = replies[0], replies[1]
    assert fk["error_code"]["val"] == 1 and validity["error_code"]["val"] == 1, replies
    model = load_model(default_model_path())
    want = forward_kinematics(model).pose("arm_turret", relative_to="chassis")
    pos = fk["pose_stamped"][0]["pose"]["position"]
    assert np.allclose([pos["x"], pos["y"], pos["z"]], want[:3, 3], atol=1e-9)
    assert validity["valid"] is True
