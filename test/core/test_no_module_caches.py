"""Derived data has one home (issue 23): :mod:`mechanism_model_core.data`. This test reads the AST of every module
of the core and fails on a new module-level store -- the shapes per-mechanism caches took before they moved
into the mechanism's ``Data`` (at session 7's start this scan found 28 stores: the home's id-keyed map, 10 caches
of an owner's derived data outside it, 4 caches of constants, 13 stores that are no cache):

* a module-level ``WeakKeyDictionary``, ``WeakValueDictionary``, ``threading.local()``;
* a module-level dict, list, set, ``OrderedDict`` or ``defaultdict`` that the module changes (an item set or
  deleted, ``append``/``setdefault``/``update``/``clear``/``pop``/``add``/...): a constant table is not a store;
* a module-level name rebound through ``global`` (a memo of one value);
* ``functools.lru_cache``/``cache`` on a module-level function, and ``weakref.finalize`` anywhere (the keyed-by-id
  maps that needed them).

Derived constants of no owner (templates by size, objects by joint limits) are memos of ``data.SHARED``. The
few module-level stores left hold no derived data -- registries of what the user registers, optional modules
once imported, a thread's context -- and are listed below, each with its reason; the list
must stay exact (an entry whose store went is an error too), so a new store is either moved into ``data``
(a value, memo or per-thread slot of its owner's ``Data``, or a ``data.work`` array) or argued for here.
"""

import ast
import os
from pathlib import Path

import mechanism_model_core

ROOT = Path(mechanism_model_core.__file__).parent

#: (module path under the package, name) -> why it is not derived data of a mechanism
ALLOWED = {
    ("data.py", "_WORK"): "the one home's per-thread work arrays (data.work): reused memory, not derived data",
    ("cli/common.py", "_xacro_args"): "the command line's --xacro-arg values of this process",
    ("collision/coal_backend.py", "_coal"): "the coal module once imported (an optional extra)",
    ("ik/closed_form/eaik_solver.py", "_EAIK_MODULE"): "the eaik module once looked up (an optional extra)",
    ("ik/registry.py", "_SOLVERS"): "registry of solver factories by name (what the user registers)",
    ("ik/registry.py", "_REGISTRY"): "registry of specialized-solver factories by mechanism name and frame",
    ("io/limits.py", "_local"): "each thread's stack of `using(limits)` blocks (a context, not a cache)",
    ("package_paths.py", "_user_paths"): "package paths the user added (package:// resolution)",
    ("io/__init__.py", "_READERS"): "registry of model-file readers by extension (io.register_reader)",
    ("io/kindsl.py", "_PARSER"): "the lark parser of the grammar, built once (not per mechanism)",
    ("reach/execute.py", "_WORKER_CTX"): "a reach-map worker process's task context (one per process)",
    ("statics/contacts.py", "_LAPACK"): "scipy's LAPACK functions once looked up",
    ("locomotion/legged.py", "_LEG_SOLVERS"): "registry of leg IK factories by mechanism name and foot",
    ("locomotion/trajectory.py", "_TOPPRA"): "the toppra module once imported (an optional extra)",
}

_ALWAYS = {"WeakKeyDictionary", "WeakValueDictionary", "local", "WeakSet"}
_CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque"}
_MUTATORS = {"append", "extend", "insert", "setdefault", "update", "clear", "pop", "popitem", "add", "discard",
             "remove", "appendleft", "__setitem__"}


def _callee(node) -> str:
    return ast.unparse(node.func).split(".")[-1] if isinstance(node, ast.Call) else ""


def module_stores(path: Path) -> dict[str, str]:
    """``{name: kind}`` of the module-level stores of one module (see the module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    candidates, found = {}, {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            v = node.value
            if _callee(v) in _ALWAYS:
                found.update({n: _callee(v) for n in names})
            elif isinstance(v, (ast.Dict, ast.List, ast.Set)) or _callee(v) in _CONTAINERS:
                candidates.update({n: type(v).__name__.lower() if not isinstance(v, ast.Call) else _callee(v)
                                   for n in names})
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if any(k in ast.unparse(d) for k in ("lru_cache", "functools.cache")) or ast.unparse(d) == "cache":
                    found[node.name] = "lru_cache"
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in candidates:
                    found[t.value.id] = candidates[t.value.id]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if isinstance(base, ast.Name) and base.id in candidates and node.func.attr in _MUTATORS:
                found[base.id] = candidates[base.id]
            if ast.unparse(node.func) in ("weakref.finalize", "finalize") and path.name != "data.py":
                found[f"finalize@{node.lineno}"] = "weakref.finalize"
        elif isinstance(node, ast.Global):
            for n in node.names:
                found[n] = "global"
    return found


def all_stores(root: Path = ROOT) -> dict[tuple[str, str], str]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py"):
                p = Path(dirpath) / f
                rel = p.relative_to(root).as_posix()
                out.update({(rel, n): k for n, k in module_stores(p).items()})
    return out


def test_no_module_level_cache_outside_data():
    stores = all_stores()
    new = {k: v for k, v in stores.items() if k not in ALLOWED}
    assert not new, ("module-level stores outside mechanism_model_core.data (make them slots of the owner's Data, "
                     f"or add them to ALLOWED with the reason they hold no per-mechanism data): {new}")
    gone = sorted(set(ALLOWED) - set(stores))
    assert not gone, f"ALLOWED lists stores that are gone (remove them): {gone}"


def test_the_scan_sees_each_kind_of_store(tmp_path):
    """Each shape the scan must catch is caught, and constant tables are not."""
    p = tmp_path / "m.py"
    p.write_text(
        "import threading, weakref, functools\n"
        "A = weakref.WeakKeyDictionary()\n"
        "B = threading.local()\n"
        "C: dict = {}\n"
        "D = {'x': 1}\n"                          # a constant table: never changed
        "E = []\n"
        "F = None\n"
        "def f(m):\n"
        "    C[id(m)] = 1\n"
        "    E.append(m)\n"
        "    global F\n"
        "    F = m\n"
        "    weakref.finalize(m, print)\n"
        "    return D['x']\n"
        "@functools.lru_cache(maxsize=None)\n"
        "def g(n):\n"
        "    return n\n")
    got = module_stores(p)
    assert {k: v for k, v in got.items() if not k.startswith("finalize@")} == {
        "A": "WeakKeyDictionary", "B": "local", "C": "dict", "E": "list", "F": "global", "g": "lru_cache"}
    assert any(k.startswith("finalize@") for k in got)
