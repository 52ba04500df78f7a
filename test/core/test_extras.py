"""The optional extras as errors name them (mechanism_model_core.extras): the table equals setup.py's
``extras_require``, and no message or docstring tells a user to ``pip install 'mechanism_model_core[X]'`` by
name -- the packages are not on PyPI, so that line fails with "No matching distribution"."""

import ast
import pathlib
import re

import pytest

from mechanism_model_core.extras import EXTRAS, install_hint

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _setup_extras() -> dict:
    """setup.py's extras_require, read with ast (names of module-level lists resolved; nothing executed)."""
    tree = ast.parse((ROOT / "mechanism_model_core" / "setup.py").read_text())
    names = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    extras = next(k.value for k in call.keywords if k.arg == "extras_require")
    out = {}
    for key, value in zip(extras.keys, extras.values):
        if isinstance(value, ast.Name):
            value = names[value.id]
        reqs = [ast.literal_eval(e) for e in value.elts]
        out[ast.literal_eval(key)] = tuple(re.split(r"[<>=!~; \[]", r, maxsplit=1)[0] for r in reqs)
    return out


def test_the_table_is_setup_pys_extras():
    assert EXTRAS == _setup_extras()


def test_no_two_extras_are_the_same_packages():
    """One name per set of packages (issue 23: 'yaml' and 'mobility' were both PyYAML): a second name for the
    same packages is one more thing to document and keep equal."""
    by_packages: dict = {}
    for extra, packages in _setup_extras().items():
        by_packages.setdefault(frozenset(packages), []).append(extra)
    same = [sorted(names) for names in by_packages.values() if len(names) > 1]
    assert not same, f"extras that install the same packages: {same}"


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_the_hint_names_the_pypi_packages_and_the_folder_form(extra):
    hint = install_hint(extra)
    assert hint.startswith("pip install " + " ".join(EXTRAS[extra]) + " ")
    assert f"pip install './mechanism_model_core[{extra}]'" in hint


def test_no_source_names_an_extra_by_the_package_name_alone():
    bad = re.compile(r"pip install ['\"]?mechanism_model_(core|ros)\[")
    found = []
    for pkg in ("mechanism_model_core/mechanism_model_core", "mechanism_model_ros/mechanism_model_ros"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if bad.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_a_missing_extra_is_reported_with_a_line_that_installs_it(monkeypatch):
    """What a user sees without PyYAML: the hint, not a name pip cannot find."""
    import builtins

    from mechanism_model_core.errors import MechanismModelError
    from mechanism_model_core.io import ros2_control

    real_import = builtins.__import__

    def no_yaml(name, *a, **k):
        if name == "yaml":
            raise ImportError("No module named 'yaml'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_yaml)
    with pytest.raises(MechanismModelError, match=r"pip install PyYAML \(the 'yaml' extra"):
        ros2_control._yaml({"a": 1})
