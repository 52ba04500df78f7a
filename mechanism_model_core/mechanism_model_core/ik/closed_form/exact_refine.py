"""Damped Gauss-Newton (Levenberg-Marquardt) steps on the exact chain from a closed-form start: what the
near-decomposable closed form (:mod:`.near_decomposable`) runs from an approximate chain's branch, and what
confirms an axis-offset answer (:mod:`.axis_offset`) with one evaluation.

Each iterate is the lane engine's one-lane pass (:meth:`~..batch.LaneEngine._eval1`: the frame's pose, ground
Jacobian and pose residual, position in m and orientation ``log(R R_t^T)`` in rad, ground axes) and its damped
step with joint limits clamped (:meth:`~..batch.LaneEngine._step_one`)."""

from __future__ import annotations

import time

#: Gauss-Newton steps per start (each must divide the cost by at least 1 / REFINE_RATIO)
REFINE_STEPS = 8
REFINE_RATIO = 0.9
#: damping factor of the refining steps (lambda = REFINE_MU |e|^2: nearly Gauss-Newton near a solution), and
#: the slow or rejected steps in a row (each with ten times the damping) before a start is given up
REFINE_MU = 1e-3
#: that of a 6R chain (one try: a branch given up costs the population LM): the xArm6's branches are 0.066 (m +
#: rad, median) off where Baxter's are 0.01, and more damping lets more of them converge -- 300 targets x 2 seed
#: modes, branches given up on 50 -> 26 of 590 targets, evaluations mean 7.1 -> 6.9 (median 5 either way); on
#: Baxter it cost 3-7 % of the median (0.156 -> 0.167 ms, mid seeds), so 7R chains keep REFINE_MU
REFINE_MU_6R = 0.3
REFINE_REJECTS = 2

__all__ = ["REFINE_MU", "REFINE_MU_6R", "REFINE_RATIO", "REFINE_REJECTS", "REFINE_STEPS", "refine"]


def refine(E, x, pt, RtT, tp, to, deadline, mu0):
    """Levenberg-Marquardt steps on lane engine ``E``'s exact chain from the unknowns ``x`` toward the target
    at position ``pt`` (3,, m) with rotation ``RtT`` transposed (3x3), until the position and orientation
    errors are within ``tp`` (m) and ``to`` (rad): a step is kept when it divides the cost by at least
    1 / REFINE_RATIO, else the damping grows tenfold and the step is taken again (at most REFINE_REJECTS times
    in a row); at most REFINE_STEPS steps, none started after ``deadline`` (``time.perf_counter`` s). ``mu0``:
    the initial damping factor (REFINE_MU, or REFINE_MU_6R for a 6R chain).
    Returns ``(x, residual, converged, evaluations)``."""
    r, J, ep, er = E._eval1(x, pt, RtT, tp, to)        # (no Jacobian when within the tolerances)
    k = 1
    if ep <= tp and er <= to:
        return x, r, True, k
    c = float(r @ r)
    mu = mu0
    rejects = 0
    for _ in range(REFINE_STEPS):
        if time.perf_counter() > deadline:
            break
        xn = E._step_one(x, r, J, mu * c + 1e-12)[0]
        rn, Jn, ep, er = E._eval1(xn, pt, RtT, tp, to)
        k += 1
        if ep <= tp and er <= to:
            return xn, rn, True, k
        cn = float(rn @ rn)
        if cn > c * REFINE_RATIO:
            rejects += 1
            if rejects > REFINE_REJECTS:
                break
            if cn < c:
                x, r, J, c = xn, rn, Jn, cn
            mu *= 10.0
            continue
        x, r, J, c = xn, rn, Jn, cn
        rejects = 0
        mu = max(mu * 0.1, 1e-6)
    return x, r, False, k
