"""A small, safe evaluator for the arithmetic that model files contain.

Model files write constants such as ``M_PI/2`` or ``-M_PI_2``, KinDSL writes ``PI/2.0``, and joint
couplings write ``2*joint1`` or ``-left_rocker``. This module parses such text with Python's own parser
(which builds a syntax tree and executes nothing) and accepts only: numbers, the operators
``+ - * / **`` with parentheses, named constants, a fixed set of math functions, and (where the caller
allows them) variable names. Nothing read from a file is ever passed to ``eval``.

A parsed :class:`Expression` evaluates element-wise on numpy arrays, so one coupling serves a whole batch of
configurations, and it gives its partial derivatives (complex-step, exact to rounding for the smooth
functions offered here) for the Jacobians of joint constraints.
"""

from __future__ import annotations

import ast
import math
from typing import Callable, Iterable, Mapping

import numpy as np

from .errors import ExpressionError

#: Named constants every expression may use (C's math.h names, KinDSL's PI, and plain pi / e).
CONSTANTS: dict[str, float] = {
    "M_PI": math.pi, "M_PI_2": math.pi / 2, "M_PI_4": math.pi / 4, "M_1_PI": 1 / math.pi,
    "M_2_PI": 2 / math.pi, "M_E": math.e, "M_SQRT2": math.sqrt(2.0), "M_SQRT1_2": math.sqrt(0.5),
    "PI": math.pi, "pi": math.pi, "e": math.e,
}


def _abs(x):
    # sign of the real part keeps the complex-step derivative right away from 0
    return x * np.sign(np.real(x))


FUNCTIONS: dict[str, Callable] = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "atan2": np.arctan2, "sqrt": np.sqrt, "exp": np.exp, "log": np.log,
    "abs": _abs, "fabs": _abs, "radians": np.deg2rad, "degrees": np.rad2deg,
}

MAX_LENGTH = 2000
MAX_DEPTH = 60
_BINOPS = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide,
           ast.Pow: np.power}


class Expression:
    """A parsed, safe arithmetic expression.

    ``variables`` are the free names it reads (joint names, model parameters); call it with a mapping of
    those names to numbers or numpy arrays.
    """

    __slots__ = ("source", "variables", "_fn", "_constants")

    def __init__(self, source: str, variables: frozenset[str], fn: Callable,
                 constants: Mapping[str, float] | None = None):
        self.source = source
        self.variables = variables
        self._fn = fn
        self._constants = constants

    def __reduce__(self):   # the compiled closures do not pickle: parse the source again
        return parse_expression, (self.source, self.variables, self._constants)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"

    def __call__(self, env: Mapping[str, object] | None = None):
        env = env or {}
        missing = self.variables.difference(env)
        if missing:
            raise ExpressionError(f"{self.source!r} needs values for {sorted(missing)}")
        with np.errstate(all="ignore"):
            value = self._fn(env)
        if np.ndim(value) == 0:
            value = float(np.real(value))
        return value

    def is_constant(self) -> bool:
        return not self.variables

    def gradient(self, env: Mapping[str, object]) -> dict[str, object]:
        """Partial derivatives with respect to every variable, at ``env`` (numbers or arrays)."""
        out = {}
        h = 1e-30
        for name in self.variables:
            shifted = dict(env)
            shifted[name] = np.asarray(env[name], dtype=complex) + 1j * h
            try:
                with np.errstate(all="ignore"):
                    d = np.imag(self._fn(shifted)) / h
            except TypeError:  # a function without complex support (atan2): central difference
                step = 1e-7
                plus, minus = dict(env), dict(env)
                plus[name] = np.asarray(env[name], dtype=float) + step
                minus[name] = np.asarray(env[name], dtype=float) - step
                d = (self._fn(plus) - self._fn(minus)) / (2 * step)
            out[name] = float(d) if np.ndim(d) == 0 else d
        return out

    def linear_coefficients(self) -> tuple[dict[str, float], float] | None:
        """``({var: a}, b)`` when the expression is affine in its variables, else ``None``."""
        names = sorted(self.variables)
        zero = {n: 0.0 for n in names}
        b = self(zero)
        coeffs = self.gradient(zero)
        rng = np.random.default_rng(12345)
        for _ in range(3):
            probe = {n: float(rng.uniform(-3, 3)) for n in names}
            predicted = b + sum(coeffs[n] * probe[n] for n in names)
            if not np.isclose(self(probe), predicted, rtol=1e-9, atol=1e-9):
                return None
        return coeffs, b


def parse_expression(text: str, variables: Iterable[str] = (),
                     constants: Mapping[str, float] | None = None) -> Expression:
    """Parse ``text`` into an :class:`Expression`.

    ``variables`` are the free names allowed (e.g. joint names); ``constants`` adds named values to
    :data:`CONSTANTS` (e.g. a KinDSL file's constants or bound parameters). Any other name, any call to a
    function outside :data:`FUNCTIONS`, attribute access, subscripts, comparisons, lambdas and the like raise
    :class:`ExpressionError`.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"expression must be text, not {type(text).__name__}")
    src = text.strip()
    if not src:
        raise ExpressionError("empty expression")
    if len(src) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters")
    consts = dict(CONSTANTS)
    if constants:
        consts.update(constants)
    allowed = set(variables)
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {src!r}: {exc.msg}") from None
    used: set[str] = set()
    try:
        fn = _compile(tree.body, src, consts, allowed, used, 0)
    except RecursionError:      # Python's own parser nests deeper than MAX_DEPTH allows for
        raise ExpressionError(f"expression {src!r} is nested too deeply") from None
    return Expression(src, frozenset(used), fn, dict(constants) if constants else None)


def evaluate(text: str, constants: Mapping[str, float] | None = None) -> float:
    """Evaluate a constant expression (no variables) to a float, e.g. ``"-M_PI/2"``."""
    value = parse_expression(text, (), constants)({})
    if not math.isfinite(value):
        raise ExpressionError(f"expression {text.strip()!r} is not a finite number")
    return value


def _compile(node, src, consts, allowed, used, depth):
    """``node`` as a function of the variables. A part that reads no variable is evaluated here, once: an
    infinite or NaN value there is an error (``1/(1e308*10)`` would otherwise become 0 silently)."""
    fn = _compile_node(node, src, consts, allowed, used, depth)
    if isinstance(node, ast.Constant) or any(isinstance(n, ast.Name) and n.id in allowed
                                             for n in ast.walk(node)):
        return fn
    with np.errstate(all="ignore"):
        value = fn({})
    if not np.all(np.isfinite(value)):
        raise ExpressionError(f"{src!r}: {_text(node, src)} is not finite ({float(np.real(value))})")
    return lambda env: value


def _text(node, src) -> str:
    part = ast.get_source_segment(src, node)
    return repr(part) if part and part != src else "the value"


def _compile_node(node, src, consts, allowed, used, depth):
    if depth > MAX_DEPTH:
        raise ExpressionError(f"expression {src!r} is nested too deeply")
    d = depth + 1
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"{src!r}: only numbers are allowed, not {node.value!r}")
        try:
            value = float(node.value)
        except OverflowError:       # an integer literal of 309 digits or more
            raise ExpressionError(f"{src!r}: number {_text(node, src)[:40]}... is too large") from None
        if not math.isfinite(value):     # 1e309
            raise ExpressionError(f"{src!r}: number {_text(node, src)} is too large (not finite)")
        return lambda env: value
    if isinstance(node, ast.Name):
        name = node.id
        if name in allowed:
            used.add(name)
            return lambda env: env[name]
        if name in consts:
            value = float(consts[name])
            return lambda env: value
        raise ExpressionError(f"{src!r}: unknown name {name!r}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = _compile(node.operand, src, consts, allowed, used, d)
        if isinstance(node.op, ast.USub):
            return lambda env: -operand(env)
        return operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        op = _BINOPS[type(node.op)]
        left = _compile(node.left, src, consts, allowed, used, d)
        right = _compile(node.right, src, consts, allowed, used, d)
        if op is np.power:
            return lambda env: _safe_power(left(env), right(env), src)
        return lambda env: op(left(env), right(env))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fname = node.func.id
        if fname not in FUNCTIONS:
            raise ExpressionError(f"{src!r}: function {fname!r} is not allowed")
        func = FUNCTIONS[fname]
        nargs = 2 if fname == "atan2" else 1
        if len(node.args) != nargs:
            raise ExpressionError(f"{src!r}: {fname}() takes {nargs} argument(s)")
        args = [_compile(a, src, consts, allowed, used, d) for a in node.args]
        if nargs == 1:
            a0 = args[0]
            return lambda env: func(a0(env))
        a0, a1 = args
        return lambda env: func(a0(env), a1(env))
    raise ExpressionError(f"{src!r}: {type(node).__name__} is not allowed in an expression")


def _safe_power(base, exponent, src):
    if np.any(np.abs(np.real(exponent)) > 1e3):
        raise ExpressionError(f"{src!r}: exponent too large")
    return np.power(base, exponent)
