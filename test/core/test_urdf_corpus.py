"""The public corpus (issue 25): every URDF of the PyPI ``example-robot-data`` package (quadrupeds, humanoids,
arms, hands, Baxter, PR2, TIAGo, Talos, iCub, Unitree, ...) loads as urdfdom loads it -- the same links,
joints, limits, and every link at the same pose as Pinocchio's (1e-9) at random configurations -- or is
refused where urdfdom refuses it (:mod:`.urdf_corpus`). The table in docs/urdf.md is this measurement
(``scripts/urdf_corpus_table.py``)."""

from __future__ import annotations

import os
import re

import pytest

from .optional_deps import require
from .urdf_corpus import compare, example_robot_data_dir, example_robot_data_urdfs

require("pinocchio", "test")

FILES = example_robot_data_urdfs()


def test_the_corpus_is_there_and_large_enough():
    if not FILES and not (os.environ.get("CI") and not os.environ.get("MM_OLDEST_DEPS")):
        pytest.skip("example-robot-data is not installed (pip install -r requirements-test.txt)")
    assert len(FILES) >= 60, f"only {len(FILES)} URDFs in {example_robot_data_dir()}"


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, example_robot_data_dir() or "/")
                                            for f in FILES])
def test_a_public_urdf_loads_as_urdfdom_loads_it(path):
    v = compare(path, configurations=5)
    assert v.ok, v.status
    # every warning names the file and a line
    assert all(re.match(re.escape(path) + r":\d+: ", w) for w in v.warnings), v.warnings
