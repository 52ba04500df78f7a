"""Inverse kinematics (CLARAty 7.4, 8): every IK solver of the project, behind one interface.

>>> result = solve_ik(arm, [PoseConstraint("tool", T_target)], q0)
>>> result.success, result.reason, result.q                # q: full coordinates, within limits
>>> batch = solve_ik_batch(arm, "tool", T_targets)          # (B, 4, 4) poses -> per-target results
>>> batch.q, batch.success, batch.reason                    # (B, nq), (B,), (B,)

Batch API (stable): ``solve_ik_batch(mechanism, constraint, targets, q0=None, *, timeout=None,
tol_position=1e-6, tol_orientation=1e-5, max_iterations=2000, rng=None, locked=(), restarts=True,
population=6, start_width=1) -> BatchIKResult``. ``constraint`` is a frame name (full pose) or a
Pose/Position/Orientation constraint used as a template (frame, ``relative_to``, mask, weights; its own
target is ignored); ``targets`` (B, 4, 4) poses (or (B, 3) points for a position); ``q0`` one seed or (B, nq) seeds. The result
holds ``q`` (B, nq), ``success`` (B,), ``reason`` (B,), ``position_error``/``orientation_error`` (B,) (m,
rad), ``iterations``/``restarts`` (B,) and ``time`` (s); ``result(k)`` is target ``k`` as an
:class:`IKResult`. Each target's answer does not depend on the others in the batch.

Package layout:

* :mod:`.problem` -- :class:`IKProblem` (constraints compiled into unknowns, limits, levels), :class:`IKResult`,
  :class:`IKOptions`, the :class:`Solver` protocol and the restart loop of iterative solvers;
* :mod:`.solve` -- :func:`solve_ik`, :func:`solve_ik_batch`, :class:`ConstraintManager`, and
  :func:`problem_and_solver`: the problem and the solver ``solve_ik`` would use, without solving;
* :mod:`.registry` -- solvers by name (:func:`register_solver`) and closed forms by mechanism and frame
  (:func:`register_specialized`);
* :mod:`.solvers` -- ``"dls"`` (prioritized damped least squares, every constraint kind) and ``"scipy"``;
* :mod:`.batch` -- ``"lm"``: vectorized Levenberg-Marquardt over a population of seeds and over many targets
  (one pose/position/orientation on one chain);
* :mod:`.closed_form` -- the planar two-link elbow shared by the closed forms, the YPPPY (MER IDD), YPPP
  (Moonrise arm) and YPP leg solvers, :mod:`~.closed_form.eaik_solver` (analytic IK of decomposable
  6R arms through the optional ``eaik`` package), :mod:`~.closed_form.near_decomposable` (closed-form
  answers or starts for arms on a lift and arms near a decomposable chain: TIAGo, Fetch, Baxter, xArm) and the
  pan-tilt pointing closed form;
* :mod:`.path_tracker` -- step-by-step IK along Cartesian paths (manipulator paths, the generic leg IK);
* :mod:`.leg_points` -- foot points of a leg of any structure (the generic leg solver);
* :mod:`.verify` -- :func:`verify_specialized`, a closed form against the generic solver.
* :mod:`.prepare` -- :func:`prepare_ik`, a frame's caches (closed form, lane engine, tables) built before its
  first solve, and :func:`group_tip_frames`, the frames a motor group's IK requests name.

Solvers by name (``solve_ik(..., solver=name)``):

``"auto"``   the default: a closed form registered for this mechanism and frame when the problem suits it,
             else (full poses) the eaik closed form when the chain decomposes, else the closed form of a
             chain on a lift or near a decomposable one (:class:`~.closed_form.NearDecomposableSolver`,
             the population LM its fallback), else ``"lm"`` for one
             pose/position/orientation on a chain of 6 or more unknowns, else ``"dls"``.
``"lm"``     :class:`~.batch.LMPopulationSolver`: ``q0`` and (full poses on chains of 6 or more unknowns) the
             entries of a fixed table whose frame pose is nearest the target advance together; once the lane of
             lowest cost converges fast it goes on alone (``solver_options={"focus": False}``: never); stalled
             seeds restart from a fixed restart sequence; the first within tolerance wins.
``"dls"``    prioritized damped least squares (:class:`~.solvers.DLSSolver`): priorities, several
             constraints, postures, coupled and closed chains; its first restarts start from the seed
             table's configurations nearest the top level's pose/position targets
             (:func:`~.batch.top_level_nearest_starts`), later ones from the best of a few random draws.
``"scipy"``  :func:`scipy.optimize.least_squares` with bounds; levels become weights (1e3 per level).

Plugging in a solver: a class with ``name`` and ``solve(problem, options) -> IKResult`` (:class:`Solver`),
registered with ``register_solver("mine", factory)``; ``factory(**solver_options)`` returns an instance.

Solving is re-entrant: a solve keeps its state in its own objects (the mechanism is immutable; the only shared
data are caches of constant chain geometry and restart tables, built on first use outside the caller's time
budget; :func:`prepare_ik` builds them ahead), so threads may solve on one mechanism at once.

An unreachable target does not raise: the result holds the best compromise found, ``success=False`` and a
``reason``: ``"converged"`` (success), ``"unreachable"`` (the target lies beyond the chain's reach, reported
at once, or the solver gave up on its own with every attempt stalled with a residual left), ``"limits"`` (the
best compromise is stalled against joint limits), ``"singular"`` (stalled at a singular Jacobian while a
descent direction remained), ``"timeout"`` (the time budget ended the search -- the first attempt while it
was still progressing, or the restarts without an answer and without a better diagnosis: a target not found
in its budget is not reported ``"unreachable"``) or ``"max_iterations"`` (likewise, the iteration budget).
"""

from .problem import IKOptions, IKProblem, IKResult, Residual, RestartingSolver, Solver
from .registry import find_specialized, register_solver, register_specialized, unregister_specialized
from .solvers import DLSSolver, ScipySolver
from .batch import BatchIKResult, LMPopulationSolver
from .solve import ConstraintManager, available_solvers, problem_and_solver, solve_ik, solve_ik_batch
from . import closed_form  # noqa: F401  (registers the shipped models' closed forms)
from .closed_form import (EAIKSolver, NearDecomposableSolver, YPPPSolver, YPPPYSolver, eaik_solver_for,
                          ik_solutions, near_decomposable_solver_for)
from .verify import VerificationReport, verify_specialized
from .prepare import PreparedFrame, group_tip_frames, prepare_ik

__all__ = ["BatchIKResult", "ConstraintManager", "DLSSolver", "EAIKSolver", "IKOptions", "IKProblem", "IKResult",
           "LMPopulationSolver", "NearDecomposableSolver", "PreparedFrame", "Residual", "RestartingSolver", "ScipySolver", "Solver",
           "VerificationReport", "YPPPSolver", "YPPPYSolver", "available_solvers", "eaik_solver_for",
           "find_specialized", "group_tip_frames", "ik_solutions",
           "near_decomposable_solver_for", "prepare_ik", "problem_and_solver", "register_solver", "register_specialized", "solve_ik", "solve_ik_batch", "unregister_specialized",
           "verify_specialized"]
