"""Rules behind issue 23's leftovers, each an AST scan of the source that fails on the code before its fix
(so that a copy that creeps back is caught, not found again by the next review):

* the angle wrap is written once, ``spatial.wrap_angle`` (it was written out 7 times: ``(a + pi) % (2 pi) -
  pi``, ``atan2(sin(a), cos(a))``, ...);
* the rigid-transform inverse once, ``spatial.inverse`` (``model.py`` had a second, ``_rigid_inverse``);
* quaternions come from matrices through ``spatial.matrix_to_quaternion`` (one sign convention, ``w >= 0``;
  the ROS conversions and the odometry used scipy's ``as_quat()`` raw, of either sign);
* ``locomotion/`` holds no file format (``io/`` reads and writes the mobility, manipulator and legged
  descriptions and motor groups, and imports ``locomotion``'s data types one way);
* the tests fail, never skip, when a shipped model breaks: an ``except`` that skips catches ``ImportError``
  (a missing optional extra) and nothing else (three ``except Exception: pytest.skip`` blocks hid the MER IDD
  and rover mast models).
"""

import ast
from pathlib import Path

import pytest

import mechanism_model_core

CORE = Path(mechanism_model_core.__file__).parent
ROS = Path(__file__).resolve().parents[2] / "mechanism_model_ros" / "mechanism_model_ros"
TESTS = Path(__file__).resolve().parents[1]


def sources(root: Path):
    """``(path relative to the package folder, syntax tree)`` of every module under ``root``."""
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(root).as_posix(), ast.parse(path.read_text(encoding="utf-8"), str(path))


def all_sources():
    yield from ((f"mechanism_model_core/{rel}", tree) for rel, tree in sources(CORE))
    yield from ((f"mechanism_model_ros/{rel}", tree) for rel, tree in sources(ROS))


def _name(node) -> str:
    """The last name of a ``Name`` or dotted ``Attribute`` (``np.pi`` -> ``pi``), else ``""``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _mentions_a_turn(node) -> bool:
    """Whether ``node`` mentions pi or a turn: ``pi``, ``tau``, ``_TWO_PI``, ``2 * math.pi``, 6.283..."""
    for n in ast.walk(node):
        name = _name(n)
        if name in ("pi", "tau") or "PI" in name or "TAU" in name:
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, float) and (
                abs(n.value - 6.283185307179586) < 1e-6 or abs(n.value - 3.141592653589793) < 1e-6):
            return True
    return False


def angle_wraps(tree) -> list[tuple[int, str]]:
    """``(line, function)`` of each place in ``tree`` that wraps an angle by hand: a remainder by a turn
    (``%``, ``%=``, ``remainder``, ``fmod``), whole turns rounded away (``round(a / (2 pi))``) or
    ``atan2(sin(a), cos(a))``. ``function`` is the innermost enclosing function's name ("" at module level)."""
    spans = sorted(((f.lineno, f.end_lineno, f.name) for f in ast.walk(tree)
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))), key=lambda s: s[1] - s[0])

    def where(line):
        return next((name for a, b, name in spans if a <= line <= b), "")

    out = []
    for n in ast.walk(tree):
        hit = False
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod):
            hit = _mentions_a_turn(n.right)
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Mod):
            hit = _mentions_a_turn(n.value)
        elif isinstance(n, ast.Call):
            f = _name(n.func)
            if f in ("remainder", "fmod", "mod"):
                hit = any(_mentions_a_turn(a) for a in n.args[1:])
            elif f in ("round", "rint", "floor", "ceil", "trunc", "around") and n.args:
                hit = any(isinstance(d, ast.BinOp) and isinstance(d.op, (ast.Div, ast.FloorDiv))
                          and _mentions_a_turn(d.right) for d in ast.walk(n.args[0]))
            elif f in ("atan2", "arctan2") and len(n.args) == 2:
                hit = [_name(a.func) if isinstance(a, ast.Call) else "" for a in n.args] == ["sin", "cos"]
        if hit:
            out.append((n.lineno, where(n.lineno)))
    return out


#: Where an angle may be reduced by hand, with the reason. (module, function).
ANGLE_WRAPS_ALLOWED = {
    ("mechanism_model_core/spatial.py", "wrap_angle"): "the definition",
    ("mechanism_model_core/kinematics.py", "_reduced"):
        "not the wrap: revolute coordinates above 64 rad brought to (-pi, pi] through their exact sine and cosine "
        "(np.sin/np.cos reduce exactly; a remainder by a rounded 2 pi would not at 1e16 rad: "
        "test_large_angles.py)",
}


def test_the_angle_wrap_is_written_once():
    found = {(mod, fn, line) for mod, tree in all_sources() for line, fn in angle_wraps(tree)}
    stray = sorted((mod, line, fn) for mod, fn, line in found if (mod, fn) not in ANGLE_WRAPS_ALLOWED)
    assert not stray, f"angles wrapped by hand (spatial.wrap_angle; nearest ref: ref + wrap_angle(a - ref)): {stray}"
    assert {(mod, fn) for mod, fn, _ in found} == set(ANGLE_WRAPS_ALLOWED), "ANGLE_WRAPS_ALLOWED lists a gone one"


@pytest.mark.parametrize("code", [
    "def _wrap_pi(q):\n    return (q + math.pi) % (2 * math.pi) - math.pi",
    "S = q_ref + (S - q_ref + np.pi) % (2 * np.pi) - np.pi",
    "x = math.atan2(math.sin(th + a), math.cos(th + a))",
    "q[rev] = np.arctan2(np.sin(r), np.cos(r))",
    "q = ref + d - 2 * math.pi * np.round(d / (2 * math.pi))",
    "d = np.remainder(d + np.pi, TWO_PI) - np.pi",
    "d %= math.tau",
    "d = math.fmod(d, 6.283185307179586)",
])
def test_the_scan_finds_the_former_copies(code):
    assert angle_wraps(ast.parse(code))


@pytest.mark.parametrize("code", [
    "sector = ((np.arctan2(dv, du) + math.pi) / (2 * math.pi) * SECTORS).astype(int) % SECTORS",
    "i = k % n",
    "a = wrap_angle(q - ref) + ref",
    "phi = math.atan2(y, x)",
])
def test_the_scan_leaves_other_arithmetic_alone(code):
    assert not angle_wraps(ast.parse(code))


# ------------------------------------------------------------------------------------ the rigid inverse
def rigid_inverses(tree) -> list[int]:
    """Lines that write the translation of an inverse rigid transform by hand: ``-R.T @ p``,
    ``-(R.T @ p)``, ``-R.T.dot(p)`` or ``-np.einsum(..., swapaxes(R), p)``."""
    out = []
    for n in ast.walk(tree):
        if not (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)):
            continue
        e = n.operand
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):
            e = e.left
        elif isinstance(e, ast.Call) and _name(e.func) == "dot" and isinstance(e.func, ast.Attribute):
            e = e.func.value
        elif isinstance(e, ast.Call) and _name(e.func) in ("einsum", "matmul", "dot"):
            e = next((a for a in e.args if isinstance(a, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))), None)
        if isinstance(e, ast.Attribute) and e.attr == "T":
            out.append(n.lineno)
        elif isinstance(e, ast.Call) and _name(e.func) in ("swapaxes", "transpose"):
            out.append(n.lineno)
        elif isinstance(e, ast.Name) and e.id in ("Rt", "RT", "R_T"):
            out.append(n.lineno)
    return out


def test_the_rigid_transform_inverse_is_written_once():
    found = sorted((mod, line) for mod, tree in all_sources() for line in rigid_inverses(tree))
    assert [mod for mod, _ in found] == ["mechanism_model_core/spatial.py"], \
        f"rigid-transform inverses written by hand (use spatial.inverse): {found}"


def test_the_inverse_scan_finds_the_former_copy():
    old = ("def _rigid_inverse(T):\n    out = np.eye(4)\n    out[:3, :3] = T[:3, :3].T\n"
           "    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]\n    return out\n")
    assert rigid_inverses(ast.parse(old)) == [4]
    assert rigid_inverses(ast.parse("p_b = T_wb[:3, :3].T @ (t - T_wb[:3, 3])\nx = -a @ b")) == []


# ------------------------------------------------------------------------------------ quaternion signs
def as_quat_calls(tree) -> list[int]:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and _name(n.func) == "as_quat"]


def test_quaternions_from_matrices_have_one_sign():
    """scipy's ``as_quat()`` gives either sign; only ``spatial.matrix_to_quaternion`` calls it, and it
    applies ``canonical_quaternion``."""
    found = sorted((mod, line) for mod, tree in all_sources() for line in as_quat_calls(tree))
    assert [mod for mod, _ in found] == ["mechanism_model_core/spatial.py"], \
        f"quaternions taken from scipy outside spatial.matrix_to_quaternion (its sign is not the package's): {found}"


# ------------------------------------------------------------------------------ locomotion: no formats
PARSERS = ("yaml", "lxml", "xml", "json", "csv", "configparser", "tomllib", "defusedxml")


def test_locomotion_holds_no_file_format():
    """The file formats of ``locomotion``'s descriptions live in ``io/`` (issue 23): no module under
    ``locomotion/`` imports a parser, opens a file or imports ``io`` (which imports ``locomotion``)."""
    bad = []
    for rel, tree in sources(CORE / "locomotion"):
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                bad += [(rel, n.lineno, a.name) for a in n.names if a.name.split(".")[0] in PARSERS]
            elif isinstance(n, ast.ImportFrom):
                mod = n.module or ""
                if (n.level == 0 and mod.split(".")[0] in PARSERS) or (n.level == 2 and mod.split(".")[0] == "io") \
                        or mod.startswith("mechanism_model_core.io"):
                    bad.append((rel, n.lineno, mod))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open":
                bad.append((rel, n.lineno, "open()"))
    assert not bad, f"file formats in locomotion/ (they belong in io/): {bad}"


# ----------------------------------------------------------------- tests fail when a shipped model breaks
SKIPPABLE = {"ImportError", "ModuleNotFoundError"}


def skipping_handlers(tree) -> list[tuple[int, str]]:
    """``(line, caught)`` of each ``except`` whose body skips (``pytest.skip``/``xfail``/``importorskip``) and
    that catches anything but a missing module."""
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.ExceptHandler):
            continue
        skips = any(isinstance(c, ast.Call) and _name(c.func) in ("skip", "xfail", "importorskip")
                    for s in n.body for c in ast.walk(s))
        caught = [] if n.type is None else (n.type.elts if isinstance(n.type, ast.Tuple) else [n.type])
        # pytest.skip.Exception (a skip raised inside the try, passed on) counts as a skip, not an error
        names = {"Skipped" if isinstance(c, ast.Attribute) and _name(c.value) == "skip" else _name(c)
                 for c in caught}
        if skips and (not names or not names <= SKIPPABLE | {"Skipped"}):
            out.append((n.lineno, ast.unparse(n.type) if n.type is not None else "everything"))
    return out


def test_no_test_skips_on_an_error():
    found = sorted((path.relative_to(TESTS).as_posix(), line, caught)
                   for path in sorted(TESTS.rglob("*.py"))
                   for line, caught in skipping_handlers(ast.parse(path.read_text(encoding="utf-8"))))
    assert not found, ("tests that skip when something raises (a broken shipped model must fail the test; skip "
                       f"only on ImportError of an optional extra): {found}")


def test_the_skip_scan_finds_the_former_blocks():
    old = ("try:\n    m = load_model(model_path('mer/mer_idd.xml'))\nexcept Exception:\n"
           "    pytest.skip('MER IDD model does not load')\n")
    assert skipping_handlers(ast.parse(old)) == [(3, "Exception")]
    missing_extra = "try:\n    import coal\nexcept ImportError:\n    pytest.skip('no coal')\n"
    assert skipping_handlers(ast.parse(missing_extra)) == []
    assert skipping_handlers(ast.parse("try:\n    f()\nexcept ValueError:\n    raise\n")) == []
    assert skipping_handlers(ast.parse("try:\n    f()\nexcept:\n    pytest.skip('x')\n")) == [(3, "everything")]


# ------------------------------------------------------------------------------ one cmd_vel validation
def twist_reads(tree) -> list[int]:
    """Lines that read a velocity component of a message (``msg.linear.x``, ``twist.angular.z``): what
    ``conversions.planar_twist`` does once, with its checks (finite, within the limits, planar)."""
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and n.attr in ("x", "y", "z")
            and isinstance(n.value, ast.Attribute) and n.value.attr in ("linear", "angular")]


def test_cmd_vel_is_checked_in_one_place():
    """The locomotor and the legged node both take their cmd_vel through ``conversions.planar_twist`` (issue
    23: each had its own checks); no other module of the ROS package reads a twist's components."""
    found = sorted((rel, line) for rel, tree in sources(ROS) for line in twist_reads(tree))
    assert found and {rel for rel, _ in found} == {"conversions.py"}, \
        f"twist components read outside conversions.planar_twist: {found}"
