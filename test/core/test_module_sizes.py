"""No module of mechanism_model_core or mechanism_model_ros grows beyond 700 lines, except the ones listed
here with the reason each stays whole (issue 23: at most 2). Split a module that grows past the limit into
cohesive modules (and re-export from the old path where users import it) rather than adding it here."""

from pathlib import Path

import pytest

import mechanism_model_core

LIMIT = 700
ROOTS = {"mechanism_model_core": Path(mechanism_model_core.__file__).parent,
         "mechanism_model_ros": Path(__file__).resolve().parents[2] / "mechanism_model_ros" / "mechanism_model_ros"}

#: The modules allowed above the limit, with the reason (paths relative to the package folder).
ALLOWED = {
    ("mechanism_model_core", "kinematics.py"):
        "the kernel: the plan compiler and the single, batch and Jacobian passes share private array layouts "
        "(gather indices, the 12-component batch rows) that a split would have to make public",
    ("mechanism_model_core", "ik/batch.py"):
        "the vectorized LM engine, one solver whose lanes, damping and restarts share per-call scratch state; "
        "the IK issue restructures ik/ (issue 23 leaves it to it)",
}


def module_lengths():
    for pkg, root in ROOTS.items():
        for path in sorted(root.rglob("*.py")):
            with open(path, encoding="utf-8") as fh:
                yield pkg, path.relative_to(root).as_posix(), sum(1 for _ in fh)


def test_the_modules_are_found():
    found = {(pkg, rel) for pkg, rel, _ in module_lengths()}
    assert ("mechanism_model_core", "model.py") in found and ("mechanism_model_ros", "serve.py") in found


def test_no_module_over_the_limit_but_the_listed_ones():
    over = {(pkg, rel): n for pkg, rel, n in module_lengths() if n > LIMIT}
    stray = {k: n for k, n in over.items() if k not in ALLOWED}
    assert not stray, f"modules over {LIMIT} lines (split them into cohesive modules): {stray}"
    assert len(ALLOWED) <= 2


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_the_listed_modules_exist(key):
    pkg, rel = key
    assert (ROOTS[pkg] / rel).is_file(), f"{rel} is gone: remove it from ALLOWED"
