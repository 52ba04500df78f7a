"""Every ``pip install`` line of the README and docs/*.md -- in a shell block or inline in the text -- as a user
types it from the checkout's top (issue 21: every README and docs command is executed by a test).

Our packages are not on PyPI: a line must name them by their folder (``./mechanism_model_core[reach]``, or a
folder after ``-e``), never by a bare name (a defect: ``pip install 'mechanism_model_core[collision]'`` in four
docs asked PyPI for a project that does not exist there). The extras a line names must be declared in that
package's setup.py, and a package it names from PyPI must be one our setup.py files require; the extras'
requirements are in requirements-test.txt (CI installs them). The slow test gives pip the lines' requirements
with ``--dry-run --ignore-installed --report`` (merged into one call per kind, editable or not, to keep CI
short): pip resolves every requirement of the extras named (from PyPI or pip's cache; nothing is installed).
The README's "Without ROS" line is installed for real by test_docs_commands.py.
"""

import ast
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from docs_text import TOP, doc_lines

DOCS = ["README.md"] + sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(TOP, "docs"))
                              if f.endswith(".md"))
OUR_PACKAGES = ("mechanism_model_core", "mechanism_model_ros")
#: pip options that take a value (the value is not a requirement)
VALUE_OPTIONS = ("--config-settings", "-C", "-r", "--requirement", "-c", "--constraint")
#: lines run for real elsewhere (test_docs_commands.py installs the README's "Without ROS" line)
INSTALLED_FOR_REAL = ("pip install './mechanism_model_core[collision]' './mechanism_model_ros[cyclone]'",)


def documented_pip_lines() -> list[tuple[str, str]]:
    """(doc, line) for every ``pip install`` of the docs: the command lines of their shell blocks and every
    inline code span that starts with ``pip install``."""
    out = []
    for doc in DOCS:
        out += [(doc, line) for line in doc_lines(doc, "pip install")]
        with open(os.path.join(TOP, doc), encoding="utf-8") as fh:
            text = fh.read()
        out += [(doc, m.group(1).strip()) for m in re.finditer(r"(?<!`)`(pip install [^`\n]+)`(?!`)", text)]
    return out


def _strings(node) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def setup_py(package: str) -> dict:
    """What ``<package>/setup.py`` declares, read with ``ast`` (never run): ``extras`` (name -> requirement
    strings, module-level list names resolved) and ``requires`` (every requirement string it names)."""
    with open(os.path.join(TOP, package, "setup.py"), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    names = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)}
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "setup"]
    kw = {k.arg: k.value for k in call.keywords}
    extras = {}
    for key, value in zip(kw["extras_require"].keys, kw["extras_require"].values):
        value = names.get(value.id, value) if isinstance(value, ast.Name) else value
        extras[key.value] = _strings(value)
    requires = _strings(kw.get("install_requires", ast.List(elts=[]))) + [r for v in extras.values() for r in v]
    return {"extras": extras, "requires": requires}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def requirements_of(line: str) -> list[tuple[str, list[str], bool]]:
    """The requirements a ``pip install`` line names: (folder or PyPI name, extras, editable)."""
    argv = shlex.split(line.split(" # ")[0])
    assert argv[:2] == ["pip", "install"], line
    out, i = [], 2
    while i < len(argv):
        a = argv[i]
        if a in VALUE_OPTIONS:
            i += 2
            continue
        editable = a in ("-e", "--editable")
        if editable:
            i += 1
            a = argv[i]
        elif a.startswith("-"):
            i += 1
            continue
        m = re.fullmatch(r"([^\[\]]+)(?:\[([^\]]*)\])?", a)
        assert m, (line, a)
        out.append((m.group(1), [e.strip() for e in (m.group(2) or "").split(",") if e.strip()], editable))
        i += 1
    return out


def test_the_docs_have_the_pip_lines_this_test_knows():
    """The scan finds the lines it should (a doc reshuffle that hides them from it fails here)."""
    lines = documented_pip_lines()
    docs = {d for d, _ in lines}
    assert {"README.md", os.path.join("docs", "collision.md"), os.path.join("docs", "reach.md"),
            os.path.join("docs", "ros.md"), os.path.join("docs", "urdf.md")} <= docs, lines
    extras = {e for _, line in lines for _, ex, _ in requirements_of(line) for e in ex}
    assert {"collision", "eaik", "trajectory", "reach", "dask", "xacro", "cyclone"} <= extras, extras


@pytest.mark.parametrize("doc,line", documented_pip_lines())
def test_a_documented_pip_line_names_our_packages_by_folder_and_declared_extras(doc, line):
    declared = {p: setup_py(p) for p in OUR_PACKAGES}
    our_requirements = {_name(r) for d in declared.values() for r in d["requires"]}
    for target, extras, editable in requirements_of(line):
        folder = os.path.normpath(target)
        if folder in OUR_PACKAGES:
            assert editable or target.startswith(("./", "/")), \
                f"{doc}: {line!r}: {target} is not on PyPI; name its folder (./{folder}) or use -e"
            unknown = set(extras) - set(declared[folder]["extras"])
            assert not unknown, f"{doc}: {line!r}: {folder}'s setup.py declares no extra {sorted(unknown)}"
        else:
            assert not os.path.exists(os.path.join(TOP, target)), (doc, line, target)
            assert _name(target) not in {p.replace("_", "-") for p in OUR_PACKAGES}, (doc, line)
            assert _name(target) in our_requirements, \
                f"{doc}: {line!r}: {target} is not a requirement of our packages"


def _merged_argv(editable: bool) -> tuple[list[str], list[str]]:
    """One ``pip install`` argument list holding every requirement of the documented lines of one kind
    (editable or not; pip refuses one project both ways in a call), the extras of a folder named twice merged,
    with the options those lines give; and the lines it stands for."""
    folders, names, options, lines = {}, [], [], []
    for _, line in documented_pip_lines():
        line = line.split(" # ")[0].strip()
        reqs = requirements_of(line)
        if line in INSTALLED_FOR_REAL or line in lines or any(e for *_, e in reqs) != editable:
            continue
        lines.append(line)
        argv = shlex.split(line)
        options += [a for i, a in enumerate(argv) if a in VALUE_OPTIONS or (i and argv[i - 1] in VALUE_OPTIONS)]
        for target, extras, _ in reqs:
            folder = os.path.normpath(target)
            if folder in OUR_PACKAGES:
                folders.setdefault(folder, set()).update(extras)
            elif target not in names:
                names.append(target)
    args = []
    for folder, extras in folders.items():
        spec = f"./{folder}" + (f"[{','.join(sorted(extras))}]" if extras else "")
        args += ["-e", spec] if editable else [spec]
    return args + names + options, lines


def test_the_extras_requirements_are_test_requirements():
    """Every requirement of every extra the docs name is in requirements-test.txt, which CI installs from PyPI
    (so an extra that cannot be installed fails CI before any test)."""
    with open(os.path.join(TOP, "requirements-test.txt"), encoding="utf-8") as fh:
        listed = {_name(line) for line in fh if line.strip() and not line.startswith(("#", "-"))}
    for _, line in documented_pip_lines():
        for target, extras, _ in requirements_of(line):
            folder = os.path.normpath(target)
            for extra in extras if folder in OUR_PACKAGES else ():
                missing = [r for r in setup_py(folder)["extras"][extra] if _name(r) not in listed]
                assert not missing, (line, extra, missing)


@pytest.mark.slow
@pytest.mark.parametrize("editable", [False, True], ids=["installs", "editable-installs"])
def test_the_documented_pip_lines_resolve(editable, tmp_path):
    """The requirements of the documented lines (all but the README's "Without ROS" one, installed for real in
    test_docs_commands.py), one pip call per kind -- editable or not -- to keep CI short (one resolve of about
    5 s of CPU instead of nine): from the checkout's top, with ``--dry-run --ignore-installed --report`` and
    this environment's pip, it succeeds and pip would install each package named (our folders with every
    extra named) and every requirement of those extras; nothing is installed."""
    args, lines = _merged_argv(editable)
    assert lines, editable
    report = tmp_path / "report.json"
    argv = [sys.executable, "-m", "pip", "install", *args, "--dry-run", "--ignore-installed",
            "--disable-pip-version-check", "--quiet", "--report", str(report)]
    p = subprocess.run(argv, cwd=TOP, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, (argv, p.stderr[-3000:])
    install = json.loads(report.read_text())["install"]
    would = {_name(i["metadata"]["name"]): set(i.get("requested_extras") or ()) for i in install}
    for line in lines:
        for target, extras, _ in requirements_of(line):
            folder = os.path.normpath(target)
            if folder in OUR_PACKAGES:
                name = _name(folder)
                assert name in would and set(extras) <= would[name], (line, would)
                for extra in extras:
                    for req in setup_py(folder)["extras"][extra]:
                        assert _name(req) in would, (line, extra, req, sorted(would))
            else:
                assert _name(target) in would, (line, sorted(would))
