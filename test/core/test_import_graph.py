"""The import graphs of mechanism_model_core and mechanism_model_ros have no circles (issue 13): every
``import`` statement in every module, at module level or inside a function, is an edge; the graph of modules
must be acyclic (the ROS package is read as text, not imported: ``serve`` <-> the nodes included). A package
``__init__`` counts as the package: importing ``pkg.sub`` is an edge to ``pkg.sub`` only (Python runs the
parent's ``__init__`` first, but that does not make ``__init__``'s own imports the importer's)."""

import ast
import os
from pathlib import Path

import pytest

import mechanism_model_core

ROOT = Path(mechanism_model_core.__file__).parent
PKG = "mechanism_model_core"
ROS_ROOT = Path(__file__).resolve().parents[2] / "mechanism_model_ros" / "mechanism_model_ros"
PACKAGES = {PKG: ROOT, "mechanism_model_ros": ROS_ROOT}


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                p = Path(dirpath) / f
                out[module_name(p, root)] = p
    return out


def resolve(importer: str, is_pkg: bool, node, known, pkg: str = PKG) -> set[str]:
    """Module names (within the package) that one import statement refers to."""
    found = set()
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name.startswith(pkg):
                found.add(a.name)
    else:
        if node.level:
            base = importer.split(".")
            if not is_pkg:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if not mod.startswith(pkg):
            return found
        for a in node.names:
            sub = f"{mod}.{a.name}"
            found.add(sub if sub in known else mod)
    # an import of a name that is not a module of the package (a stray prefix) is dropped
    return {m for m in found if m in known}


def import_graph(pkg: str = PKG) -> dict[str, set[str]]:
    known = modules(PACKAGES[pkg])
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= resolve(name, path.name == "__init__.py", node, known, pkg)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_packages_are_found():
    g = import_graph()
    assert f"{PKG}.kinematics" in g and f"{PKG}.model" in g
    r = import_graph("mechanism_model_ros")
    assert "mechanism_model_ros.serve" in r and "mechanism_model_ros.locomotor" in r
    assert "mechanism_model_ros.nodes" in r["mechanism_model_ros.serve"]      # edges are found


@pytest.mark.parametrize("pkg", sorted(PACKAGES))
def test_no_import_circles(pkg):
    found = cycles(import_graph(pkg))
    assert not found, f"import circles in {pkg}:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_model_imports_no_algorithm():
    g = import_graph()
    algorithms = {f"{PKG}.{m}" for m in ("kinematics", "jacobians", "ik", "ik_solvers", "specialized",
                                         "constraints", "builder", "io", "statics", "collision")}
    assert not (g[f"{PKG}.model"] & algorithms), g[f"{PKG}.model"]
