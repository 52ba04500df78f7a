"""The README's first two commands as a newcomer runs them (issue 21: every README and docs command is executed
by a test).

* ``bash scripts/demo.sh`` on a fresh clone (this checkout's committed HEAD cloned into a temporary folder):
  it creates the clone's ``.venv``, installs the packages, says its domain and serves; the README's "call it
  from another shell" lines, run in that clone, get ``compute_fk`` and ``check_state_validity`` answered. (The
  same lines against a demo that skips the installation, ``MM_DEMO_VENV``: test_demo_script.py.)
* ``bash scripts/test.sh`` (the whole suite) is not run from a test, which would run the suite inside itself:
  CI's ``.ci/run`` runs it as the README writes it, on a clean clone, so every CI run executes it;
  :func:`test_ci_runs_the_readme_test_command` keeps that so.
"""

import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile

import pytest
import yaml

from docs_text import TOP
from ros.dds_helpers import unique_domain_id, wait_for

VENV_BIN = os.path.dirname(sys.executable)


def _first_block() -> list[str]:
    with open(os.path.join(TOP, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line.split(" # ")[0].strip() for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readme_test_command():
    """The README's second command, ``bash scripts/test.sh``, is what CI runs on its clean clone (with pytest
    options only), and the script hands its arguments to pytest."""
    demo, test = _first_block()
    assert (demo, test) == ("bash scripts/demo.sh", "bash scripts/test.sh"), (demo, test)
    with open(os.path.join(TOP, ".ci", "run"), encoding="utf-8") as fh:
        runs = [line.strip() for line in fh if line.strip().startswith(test)]
    assert runs and all(re.fullmatch(re.escape(test) + r"( -[-\w=]+)*", r) for r in runs), runs
    with open(os.path.join(TOP, "scripts", "test.sh"), encoding="utf-8") as fh:
        calls = [line for line in fh if '"$VENV/bin/pytest"' in line and not line.lstrip().startswith("#")]
    # one pass, or the parallel pass and the serial pass: every pytest the script runs gets the arguments
    assert calls and all('"$@"' in c for c in calls), calls


def _newcomer_env(domain: int, home) -> dict:
    """A newcomer's shell: nothing of ROS, DDS or this test's venv (not on PATH, no MM_DEMO_VENV), their own
    domain id (as `export ROS_DOMAIN_ID=...`; the demo's default 42 could meet another run here)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ROS_", "CYCLONEDDS", "RMW_", "MM_DEMO", "AMENT_", "COLCON_"))
           and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and os.path.abspath(p) != os.path.abspath(VENV_BIN))
    env.update(ROS_DOMAIN_ID=str(domain), HOME=str(home))
    env.pop("MM_DEMO_VENV", None)
    return env


@pytest.mark.ros
@pytest.mark.slow
def test_the_readme_demo_command_on_a_fresh_clone(tmp_path):
    """``bash scripts/demo.sh`` in a fresh clone (its install: about 20 s of CPU from pip's cache), then the
    README's other-shell lines in that clone: ``compute_fk`` answers SUCCESS and ``check_state_validity`` says
    valid (the collision extra the demo installs is there). Ctrl-C stops the demo without a traceback."""
    head = subprocess.run(["git", "-C", TOP, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=60)
    if head.returncode != 0:
        pytest.skip(f"{TOP} is not a git checkout: {head.stderr.strip()}")
    clone = tmp_path / "mechanism_model"
    subprocess.run(["git", "clone", "-q", TOP, str(clone)], check=True, timeout=300)
    demo_line, _ = _first_block()
    other = _other_shell_block()
    env = _newcomer_env(unique_domain_id(), tmp_path)
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(shlex.split(demo_line), cwd=clone, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)

    def output():
        log.seek(0)
        return log.read()
    try:
        assert wait_for(lambda: "demo: ROS 2 domain" in output() or proc.poll() is not None, 900), output()
        assert proc.poll() is None, output()
        assert f"demo: ROS 2 domain {env['ROS_DOMAIN_ID']}," in output(), output()
        assert (clone / ".venv" / "bin" / "mechanism-model").exists()
        replies = []
        for cmd in other[1:]:
            script = f"{other[0]} && {cmd} --timeout 60"
            p = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True,
                               timeout=180)
            assert p.returncode == 0, (cmd, p.stdout[-2000:], p.stderr[-2000:], output()[-2000:])
            replies.append(yaml.safe_load(p.stdout))
        fk, validity = replies
        assert fk["error_code"]["val"] == 1 and validity["error_code"]["val"] == 1, replies
        assert fk["fk_link_names"] == ["arm_turret"] and validity["valid"] is True, replies
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert "Traceback" not in output(), output()


def _other_shell_block() -> list[str]:
    """The README's block after "Call it from another shell": ``. scripts/demo_env.sh`` and the calls."""
    with open(os.path.join(TOP, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("Call it from another shell", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split(" # ")[0].strip() for line in block.splitlines() if line.strip()]
    assert lines[0] == ". scripts/demo_env.sh" and len(lines) == 3, lines
    assert all(line.startswith("mechanism-model call ") for line in lines[1:]), lines
    return lines
