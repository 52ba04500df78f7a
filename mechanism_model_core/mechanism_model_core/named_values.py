"""Joint values given by name (``{"arm_elbow": 1.2, "right_rocker": 0.3}``) -> the full configuration.

What :meth:`Mechanism.configuration` does with a mapping:

* a name that is not a coordinate raises :class:`~mechanism_model_core.errors.UnknownCoordinate` (an
  ``UnknownJoint`` and an ``InvalidConfiguration``) with the closest names ("did you mean");
* coordinates not given take their home value; coupled (dependent) coordinates not given follow their
  coupling;
* a dependent coordinate given whose coupling reads coordinates that are not given is **solved** for
  them when the coupling is affine in the one coordinate left unknown (a rocker differential
  ``right_rocker = -left_rocker`` given ``right_rocker = 0.3`` sets ``left_rocker = -0.3``), with a
  :class:`CouplingSolved` warning that says so; several unknowns or a non-affine coupling is an error
  naming the coupling;
* a dependent coordinate given together with what its coupling reads must agree with the coupling to
  within :data:`COUPLING_TOLERANCE`; a contradiction is an
  :class:`~mechanism_model_core.errors.InvalidConfiguration` naming the coupling.
"""

from __future__ import annotations

import math
import warnings
from typing import Mapping

import numpy as np

from .errors import InvalidConfiguration, UnknownCoordinate

#: How far (rad or m, plus the same relative) a given dependent value may differ from its coupling.
COUPLING_TOLERANCE = 1e-9


class CouplingSolved(UserWarning):
    """A dependent coordinate was given without its independent one, which was solved from the coupling."""


def configuration_from_mapping(mech, values: Mapping, measured: bool = False) -> np.ndarray:
    """The full configuration (length ``mech.nq``) for ``{coordinate name: value}``; see the module.
    ``measured``: values a robot reported; a dependent coordinate given keeps its value, unchecked, and
    nothing is solved (what a joint_states publisher reports wins)."""
    q = np.array(mech.home, dtype=float)
    index = mech.coordinate_indices
    given: dict[str, float] = {}
    for k, v in values.items():
        idx = index.get(k)
        if idx is None:
            raise UnknownCoordinate(str(k), list(mech.coordinate_names))
        q[idx] = given[k] = finite_value(k, v)
    couplings = mech.couplings
    if not couplings:
        return q
    if measured:
        q = mech.apply_couplings(q, skip=given)
        if not np.all(np.isfinite(q)):
            raise InvalidConfiguration("the coupled joint values: not every value is finite (a coupling "
                                       "outside its domain?)")
        return q
    _solve_dependent_side(mech, q, given)
    q = mech.apply_couplings(q)
    if not np.all(np.isfinite(q)):
        raise InvalidConfiguration("the coupled joint values: not every value is finite (a coupling outside "
                                   "its domain?)")
    for name, value in given.items():
        if name in couplings:
            expected = q[mech.coordinate_indices[name]]
            if abs(expected - value) > COUPLING_TOLERANCE * (1.0 + abs(value)):
                expr = couplings[name]
                reads = ", ".join(f"{v} = {q[mech.coordinate_indices[v]]:.9g}" for v in sorted(expr.variables))
                raise InvalidConfiguration(
                    f"{name} = {value:.9g} contradicts the coupling {name} = {expr.source} "
                    f"({reads} give {expected:.9g}); give only one side of the coupling")
    return q


def _solve_dependent_side(mech, q: np.ndarray, given: dict) -> None:
    """Set the coordinates that given dependent values determine through affine couplings (in place)."""
    couplings = mech.couplings
    known = set(given)
    todo = [n for n in given if n in couplings]
    while todo:
        progress = False
        for name in list(todo):
            expr = couplings[name]
            unknown = [v for v in sorted(expr.variables) if v not in known]
            if not unknown:
                todo.remove(name)
                continue
            if len(unknown) > 1:
                raise InvalidConfiguration(
                    f"{name} is coupled ({name} = {expr.source}) and cannot alone give "
                    f"{', '.join(unknown)}: give those instead")
            var = unknown[0]
            env = {v: q[mech.coordinate_indices[v]] for v in expr.variables}
            env[var] = 0.0
            b = expr(env)
            a = expr.gradient(env)[var]
            if (expr.linear_coefficients() is None or not math.isfinite(a) or abs(a) < 1e-12
                    or not math.isfinite(b)):
                raise InvalidConfiguration(
                    f"{name} is coupled ({name} = {expr.source}), which is not affine in {var}: give {var} "
                    f"instead of {name}")
            value = (q[mech.coordinate_indices[name]] - b) / a
            q[mech.coordinate_indices[var]] = value
            known.add(var)
            warnings.warn(f"{name} = {q[mech.coordinate_indices[name]]:.9g} given: {var} = {value:.9g} from the "
                          f"coupling {name} = {expr.source}", CouplingSolved, stacklevel=4)
            if var in couplings:
                todo.append(var)
            todo.remove(name)
            progress = True
        if not progress:
            break


def finite_value(name, v) -> float:
    """``v`` as a float, or :class:`InvalidConfiguration` naming ``name`` when it is not a finite real number
    (strings, booleans and complex values are refused: ``float('0.5')`` and ``float(True)`` would pass)."""
    if isinstance(v, (str, bytes, bool, np.bool_, complex, np.complexfloating)):
        raise InvalidConfiguration(f"value of {name!r} must be a real number, got {v!r}")
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InvalidConfiguration(f"value of {name!r} is not a number: {v!r}") from None
    if not math.isfinite(f):
        raise InvalidConfiguration(f"value of {name!r} is not finite: {v!r}")
    return f
