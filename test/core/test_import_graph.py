"""The import graphs of mechanism_model_core and mechanism_model_ros have no circles (issue 13): every
``import`` statement in every module, at module level or inside a function, is an edge; the graph of modules
must be acyclic (the ROS package is read as text, not imported: ``serve`` <-> the nodes included). A package
``__init__`` counts as the package: importing ``pkg.sub`` is an edge to ``pkg.sub`` only (Python runs the
parent's ``__init__`` first, but that does not make ``__init__``'s own imports the importer's).

Issue 23 adds rules that the module graph alone misses: no circle between first-level packages either
(``io`` <-> ``locomotion``, ``model`` <-> ``collision``, ... were hidden by function-level imports; none is
left since session 7), the model's "no algorithm" rule matched by module prefix, and the number of
function-level imports of project modules (a ratchet on today's figure, which may only fall)."""

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


# ------------------------------------------------------------------------ the model imports no algorithm
#: Modules and packages that hold algorithms or formats; the model may import none of them, nor anything
#: under them (the rule matches by module prefix: ``collision`` covers ``collision.shapes``).
ALGORITHMS = ("kinematics", "kinematics_banded", "jacobians", "ik", "ik_problem", "ik_registry", "ik_solvers",
              "specialized", "constraints", "builder", "io", "statics", "collision", "locomotion", "reach",
              "terrain", "virtual", "render", "library", "cli")

#: The model's algorithm imports: none. (2026-11-27: two, inside functions, collision.shapes and
#: io.expressions; session 5 made both foundation modules beside ``spatial``: ``shapes``, the plain geometry
#: data of bounding shapes, and ``expressions``, the safe evaluator.) The test fails on any.
MODEL_ALGORITHM_IMPORTS_TODAY: dict = {}


def algorithm_imports(imported: set[str], pkg: str = PKG) -> set[str]:
    """The members of ``imported`` that are an algorithm module or lie under one (by dotted prefix)."""
    prefixes = [f"{pkg}.{a}" for a in ALGORITHMS]
    return {m for m in imported if any(m == p or m.startswith(p + ".") for p in prefixes)}


def test_the_algorithm_rule_matches_by_prefix():
    assert algorithm_imports({f"{PKG}.collision.shapes", f"{PKG}.io", f"{PKG}.errors", f"{PKG}.spatial",
                              f"{PKG}.kinematics_banded", f"{PKG}.iox"}) == \
        {f"{PKG}.collision.shapes", f"{PKG}.io", f"{PKG}.kinematics_banded"}


def test_the_model_imports_no_algorithm():
    found = algorithm_imports(import_graph()[f"{PKG}.model"])
    new = sorted(found - set(MODEL_ALGORITHM_IMPORTS_TODAY))
    gone = sorted(set(MODEL_ALGORITHM_IMPORTS_TODAY) - found)
    assert not new, f"model.py imports algorithms (the model holds constants only): {new}"
    assert not gone, f"model.py no longer imports {gone}: remove it from MODEL_ALGORITHM_IMPORTS_TODAY"


def test_the_model_parses_nothing():
    """The builder parses the joints' coupling text (builder.parse_couplings) and hands ``Mechanism`` the
    parsed expressions (issue 23); bounding shapes are validated values (bodies.BoundingShape) before they reach
    it. So the model imports neither the expression parser nor the shape geometry."""
    imported = import_graph()[f"{PKG}.model"]
    assert f"{PKG}.expressions" not in imported and f"{PKG}.shapes" not in imported


# ------------------------------------------------------------------ the layers docs/architecture.md lists
DOCS = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def documented_layers() -> list[str]:
    """The first-level modules and packages of the layer list in docs/architecture.md, top first: the names
    before the description on each unindented line of its first code block (``ik/`` -> ``ik``)."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("```\n", 2)[1]
    out = []
    for line in block.splitlines():
        if line and not line.startswith(" "):
            names = line[:27].strip()
            out += [n.strip().rstrip("/") for n in names.split(",") if n.strip()]
    return out


def test_the_documented_layers_are_true():
    """docs/architecture.md's layer list names every first-level module of the core once, and each imports
    only what the list puts above it (or its own package's modules)."""
    layers = documented_layers()
    assert len(layers) == len(set(layers)), "a module is listed twice"
    rank = {name: i for i, name in enumerate(layers)}
    found = {m.split(".")[1] if m != PKG else "__init__" for m in import_graph()}
    assert found == set(rank), (f"listed but gone: {sorted(set(rank) - found)}; "
                                f"not listed: {sorted(found - set(rank))}")
    def layer(module):
        return rank["__init__" if module == PKG else module.split(".")[1]]

    pg = package_graph(import_graph())
    upward = sorted((a, b) for a, bs in pg.items() for b in bs if layer(a) < layer(b))
    assert not upward, f"imports of modules the list puts below (reorder the list or the code): {upward}"


# ------------------------------------------------------------------------------- package-level circles
def package_of(module: str, pkg: str = PKG) -> str:
    """The first-level package or module below ``pkg`` that ``module`` belongs to (``pkg.io.urdf`` ->
    ``pkg.io``; ``pkg.model`` -> itself): the unit of the package-level graph."""
    return ".".join(module.split(".")[:2]) if module.startswith(pkg + ".") else module


def package_graph(graph: dict[str, set[str]], pkg: str = PKG) -> dict[str, set[str]]:
    """The module graph with every module replaced by its first-level package (edges within one dropped)."""
    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        pa = package_of(a, pkg)
        out.setdefault(pa, set()).update(package_of(b, pkg) for b in targets)
        out[pa].discard(pa)
    return out


def mutual_pairs(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {tuple(sorted((a, b))) for a, targets in graph.items() for b in targets if a in graph.get(b, ())}


def module_level_import_graph(pkg: str = PKG) -> dict[str, set[str]]:
    """As :func:`import_graph`, but only the imports that run when the module is imported (not those inside
    functions)."""
    known = modules(PACKAGES[pkg])
    graph = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges, todo = set(), list(tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, FUNCTIONS):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= resolve(name, path.name == "__init__.py", node, known, pkg)
            todo.extend(ast.iter_child_nodes(node))
        edges.discard(name)
        graph[name] = edges
    return graph


def _short(names) -> list[str]:
    return sorted(n.removeprefix(PKG + ".") for n in names)


#: Package-level circles of the core, counting function-level imports: none (the test fails on any circle of
#: first-level packages/modules, and on any pair that import each other). History: 2026-11-27: 11 packages, 6 pairs, and io <-> locomotion
#: even at module level; session 5 (the formats of locomotion/ moved into io/, which now imports locomotion
#: one way): 10 packages (library left), 5 pairs, none at module level; io.expressions -> expressions (a
#: foundation module), constraints' load_constraints wrapper dropped (io's is the one): 2 pairs;
#: collision.shapes -> shapes (a foundation module: the model no longer imports collision): a circle of 4
#: packages, 1 pair; session 7 (the formats of collision/ -- the environment file and SRDF readers -- moved into
#: io/, which imports collision one way; the mesh reader and the package lookup became the foundation modules
#: mesh_files and package_paths, below both; ik.solve imports collision.constraint at module level, which
#: never imports ik: solve_ik is passed in): none. Layers: collision < ik < locomotion < io.
CIRCLE_MEMBERS_TODAY: set = set()
#: session 6: the mesh reader moved from collision/ into io/ (io.meshes; collision.meshes re-exports it), so
#: io no longer imports collision: no pair left.
MUTUAL_PAIRS_TODAY: set = set()
MODULE_LEVEL_PAIRS_TODAY: set = set()


def test_the_core_has_no_package_level_circles():
    pg = package_graph(import_graph())
    members = {m for c in cycles(pg) for m in _short(c)}
    pairs = {tuple(_short(p)) for p in mutual_pairs(pg)}
    assert not cycles(pg), "package-level import circles in the core:\n" + "\n".join(
        " <-> ".join(_short(c)) for c in cycles(pg))
    assert members <= CIRCLE_MEMBERS_TODAY, f"new packages in an import circle: {members - CIRCLE_MEMBERS_TODAY}"
    assert pairs <= MUTUAL_PAIRS_TODAY, f"new packages importing each other: {pairs - MUTUAL_PAIRS_TODAY}"
    module_level = {tuple(_short(p)) for p in mutual_pairs(package_graph(module_level_import_graph()))}
    assert module_level <= MODULE_LEVEL_PAIRS_TODAY, module_level - MODULE_LEVEL_PAIRS_TODAY


def test_the_ros_package_has_no_package_level_circles():
    pg = package_graph(import_graph("mechanism_model_ros"), "mechanism_model_ros")
    assert not cycles(pg), cycles(pg)


def test_the_package_graph_finds_hidden_circles():
    g = {f"{PKG}.model": {f"{PKG}.collision.shapes"}, f"{PKG}.collision.shapes": set(),
         f"{PKG}.collision.matrix": {f"{PKG}.model"}}
    pg = package_graph(g)
    assert cycles(g) == [] and cycles(pg) == [[f"{PKG}.collision", f"{PKG}.model"]]
    assert mutual_pairs(pg) == {(f"{PKG}.collision", f"{PKG}.model")}


# ------------------------------------------------------------------ function-level imports: a ratchet
#: Import statements inside functions (methods, nested functions and lambdas included) that import a module
#: of the project (``mechanism_model_core`` or ``mechanism_model_ros``, relative imports included), counted
#: on 2026-11-27 (issue 23, before its restructuring: 133 / 75), lowered as the restructuring removes them
#: (session 5: formats into io/, Cyclone modules into transports/cyclone/, expressions, shapes: 105 / 60;
#: session 6: every import that no circle or optional extra needs moved to module level, and the mesh reader into io/: 2 / 7;
#: session 7: ik.solve's collision-aware IK at module level, no circle left: 1 / 7): the
#: figures may only fall. The style rule is imports at module level, function-level only for optional
#: third-party extras; lower a figure when you remove some.
FUNCTION_LEVEL_PROJECT_IMPORTS_TODAY = {PKG: 1, "mechanism_model_ros": 7}
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def function_level_imports(tree: ast.AST) -> list[ast.stmt]:
    """The import statements of project modules that sit inside a function (at any depth) of ``tree``."""
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, FUNCTIONS):
            continue
        todo = list(ast.iter_child_nodes(fn))
        while todo:                         # this function's own body; nested functions are visited by walk
            node = todo.pop()
            if isinstance(node, FUNCTIONS):
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)) and _is_project_import(node):
                out.append(node)
            todo.extend(ast.iter_child_nodes(node))
    return out


def function_level_project_imports(pkg: str) -> list[str]:
    """``"module:line"`` of every function-level import statement of a project module in ``pkg``."""
    out = []
    for name, path in sorted(modules(PACKAGES[pkg]).items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out += [f"{name}:{node.lineno}" for node in function_level_imports(tree)]
    return out


def _is_project_import(node) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] in PACKAGES for a in node.names)
    return node.level > 0 or (node.module or "").split(".")[0] in PACKAGES


#: The modules that may keep function-level imports of project modules, each with its reason: optional
#: third-party extras (what the imported module needs at import time) or a documented circle. Any other module
#: with one fails.
FUNCTION_LEVEL_IMPORTS_ALLOWED = {
    PKG: {
        f"{PKG}.cli.serve": "the ROS package (mechanism_model_ros) is not a dependency of the core",
    },
    "mechanism_model_ros": {
        "mechanism_model_ros.transports": "create_transport imports the transport asked for: cyclone and memory "
                                          "need cyclonedds (and rosbags), rclpy_transport needs rclpy",
        "mechanism_model_ros.serve": "the transport is chosen at run time: cyclonedds or rclpy (optional)",
        "mechanism_model_ros.client_cli": "typegen and the Cyclone transport need cyclonedds (optional)",
    },
}


@pytest.mark.parametrize("pkg", sorted(PACKAGES))
def test_function_level_project_imports_only_where_allowed(pkg):
    where = {entry.split(":")[0] for entry in function_level_project_imports(pkg)}
    stray = sorted(where - set(FUNCTION_LEVEL_IMPORTS_ALLOWED[pkg]))
    assert not stray, (f"function-level imports of project modules in {stray}: import at module level (the "
                       f"module graph has no circle), or add the module with its reason")


@pytest.mark.parametrize("pkg", sorted(PACKAGES))
def test_function_level_project_imports_do_not_grow(pkg):
    found = function_level_project_imports(pkg)
    limit = FUNCTION_LEVEL_PROJECT_IMPORTS_TODAY[pkg]
    assert len(found) <= limit, (f"{len(found)} function-level imports of project modules in {pkg} (at most "
                                 f"{limit}): import at module level, or remove the circle that prevents it")


def test_the_function_level_counter_counts():
    tree = ast.parse("import os\nfrom . import a\ndef f():\n    from .b import c\n    import numpy\n"
                     "    def g():\n        import mechanism_model_core.model\n    return lambda: 0\n"
                     "class K:\n    def m(self):\n        from mechanism_model_ros import x\n"
                     "try:\n    from .d import e\nexcept ImportError:\n    pass\n")
    assert sorted(n.lineno for n in function_level_imports(tree)) == [4, 7, 11]
