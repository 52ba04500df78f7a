"""The README's inverse-kinematics example runs as written and does what it says."""

import re

import numpy as np

import mechanism_model_core as mm


def test_readme_ik_example():
    import os

    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    block = re.search(r"## Inverse kinematics.*?```python\n(.*?)```", readme, re.S).group(1)
    scope = {"mm": mm, "np": np}
    exec(compile(block, "README.md", "exec"), scope)   # the project's own README, not external input
    result, rover, goal, look_at = scope["result"], scope["rover"], scope["goal"], scope["look_at"]
    assert result.success, result
    fk = mm.forward_kinematics(rover, result.q)
    np.testing.assert_allclose(fk.position("arm_tool", relative_to="chassis"), goal, atol=1e-6)
    # the camera's x axis points at the goal: independent check by the angle between the two directions
    T = fk.pose("mast_camera")
    d = look_at - T[:3, 3]
    cos = T[:3, 0] @ d / np.linalg.norm(d)
    assert cos > np.cos(1e-4)
    assert rover.within_limits(result.q)
