"""Headless RViz 2 screenshots for the tests (``../shared/ros2/rviz_screenshot.sh``: rviz2 under Xvfb with Mesa's
software OpenGL, then a PNG of the screen) and what the tests read from them.

RViz's window (1280 x 800, the shipped configs' geometry): the Displays panel on the left (x < 340), the 3D
view to its right. A display whose status is Error is written in red in the panel (its name and its
``Status: Error`` line, with a red icon); the panel's own close button (red, in its title row) is left out.
The rover's chassis is amber (``mechanism_model_core.io.appearance``); shaded by RViz's lights it stays a
saturated orange-yellow, which :func:`amber_pixels` counts in a region of the 3D view.
"""

from __future__ import annotations

import os
import re
import tempfile

import numpy as np
import pytest

from ros import ros_env

TOP = ros_env.TOP
PANEL = (slice(86, 740), slice(42, 188))    # the Displays tree's name column below its title row (no icons)
VIEW = (slice(75, 760), slice(375, 1255))   # the 3D view


def screenshot_script() -> str | None:
    """rviz_screenshot.sh of the shared ROS 2 tools: ``$MM_SHARED_ROS2``, ``../shared/ros2`` beside the
    checkout (CI's layout) or /work/shared/ros2."""
    for d in (os.environ.get("MM_SHARED_ROS2"), os.path.join(os.path.dirname(TOP), "shared", "ros2"),
              "/work/shared/ros2"):
        if d and os.path.isfile(os.path.join(d, "rviz_screenshot.sh")):
            return os.path.join(d, "rviz_screenshot.sh")
    return None


def require_rviz() -> str:
    """The screenshot script, or skip (fail where ROS is required, as in CI) without rviz2 or the script."""
    script = screenshot_script()
    missing = None
    if script is None:
        missing = "rviz_screenshot.sh (../shared/ros2) is missing"
    elif not os.path.exists("/opt/ros/humble/bin/rviz2") and not os.path.exists("/opt/ros/humble/lib/rviz2/rviz2"):
        missing = "rviz2 is not installed in /opt/ros/humble (bash ../shared/ros2/install-rviz.sh)"
    if missing:
        if ros_env.required():
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    return script


def config_copy(src: str, dest: str, robot_model: bool = True, fixed_frame: str | None = None) -> str:
    """A copy of RViz config ``src`` with the RobotModel display off and/or another fixed frame."""
    with open(src, encoding="utf-8") as fh:
        text = fh.read()
    if not robot_model:
        text, n = re.subn(r"(Class: rviz_default_plugins/RobotModel\n(?:      .*\n)*?      Enabled: )true",
                          r"\1false", text)
        assert n == 1, "no RobotModel display in " + src
    if fixed_frame:
        text = re.sub(r"(?m)^(    Fixed Frame:).*$", rf"\1 {fixed_frame}", text)
    with open(dest, "w", encoding="utf-8") as fh:
        fh.write(text)
    return dest


def take(domain: int, config: str, out: str, seconds: int = 15, **env) -> np.ndarray:
    """Run RViz with ``config`` for ``seconds`` in ``domain`` and return the screenshot as an (H, W, 3) float
    array in [0, 1]; the PNG stays at ``out`` (and RViz's output at ``out`` with ``.log``)."""
    import matplotlib.image

    script = require_rviz()
    p = ros_env.run(["bash", script, config, out, str(seconds)], domain, timeout=seconds + 120, **env)
    assert p.returncode == 0 and os.path.exists(out), p.stdout[-2000:] + p.stderr[-2000:]
    img = matplotlib.image.imread(out)
    return np.asarray(img[..., :3], dtype=float)


#: how rviz_screenshot.sh runs rviz2, with any shell command in its place: Xvfb with Mesa's software OpenGL,
#: a screenshot of the whole screen after $4 seconds, then Ctrl-C (SIGKILL after 5 s)
_XVFB_COMMAND = """
bash -c "exec $1" > "$3" 2>&1 & pid=$!
for _ in $(seq "$4"); do sleep 1; kill -0 $pid 2>/dev/null || { echo "rviz exited early (log: $3)" >&2; exit 1; }; done
import -window root "$2"; rc=$?
kill -INT $pid 2>/dev/null
for _ in 1 2 3 4 5; do kill -0 $pid 2>/dev/null || break; sleep 1; done
kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
exit $rc
"""


def take_command(domain: int, command: str, out: str, seconds: int = 15, **env) -> np.ndarray:
    """Run the shell ``command`` that starts RViz -- a docs line such as ``rviz2 -d $(ros2 pkg prefix ...)/...
    -f chassis``, by bash as written, in the sourced workspace -- headless as ``rviz_screenshot.sh`` runs its
    ``rviz2 -d CONFIG`` (which takes no other arguments), and return the screenshot after ``seconds`` as
    :func:`take` does (PNG at ``out``, RViz's output at ``out`` with ``.log``)."""
    import matplotlib.image

    require_rviz()
    log = os.path.splitext(out)[0] + ".log"
    with tempfile.TemporaryDirectory() as runtime:
        p = ros_env.run(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24 +extension GLX", "bash", "-c", _XVFB_COMMAND,
                         "_", command, out, log, str(seconds)], domain, timeout=seconds + 120,
                        **{"LIBGL_ALWAYS_SOFTWARE": "1", "QT_QPA_PLATFORM": "xcb", "XDG_RUNTIME_DIR": runtime, **env})
    assert p.returncode == 0 and os.path.exists(out), p.stdout[-2000:] + p.stderr[-2000:]
    img = matplotlib.image.imread(out)
    return np.asarray(img[..., :3], dtype=float)


def amber_pixels(img: np.ndarray, region=VIEW) -> int:
    """Pixels of the chassis' amber (shaded): red high, blue low, green between."""
    r, g, b = (img[region][..., k] for k in range(3))
    return int(np.count_nonzero((r > 0.45) & (r - b > 0.30) & (g > 0.35 * r) & (g < 0.85 * r)))


def error_pixels(img: np.ndarray) -> int:
    """Red text and icons in the Displays panel: a display (or the global status) in Error."""
    r, g, b = (img[PANEL][..., k] for k in range(3))
    return int(np.count_nonzero((r > 0.6) & (g < 0.35) & (b < 0.35)))
