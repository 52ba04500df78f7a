"""The damped least-squares step of one configuration with joint limits, shared by the DLS solver's
single-chain kernel (:class:`~.solvers._ChainKernel`) and the lane engine's one-lane pass
(:meth:`~.batch.LaneEngine._step_one`): ``dx = argmin |J dx + r|^2 + lam |dx|^2`` through the smaller of the two
normal equations (LAPACK ``posv``), a joint that would cross a limit held on it (an active set), full-turn
joints wrapped into their range.
"""

from __future__ import annotations

import numpy as np

from ..spatial import wrap_angle

__all__ = ["limited_step"]


def limited_step(K, x, r, J, lam):
    """The damped least-squares step from ``x`` (nv,) for residual ``r`` and Jacobian ``J`` (damping ``lam``)
    within the joint limits of ``K`` (a :class:`~.solvers._ChainKernel` or a lane engine: ``lo``, ``hi``, ``clo``,
    ``chi``, ``wrap``, ``any_wrap``): a joint that would cross a limit is set onto it and the others' step
    computed again with it held (its column zeroed: the same normal equations as without it, no gathers);
    full-turn joints wrapped into their range instead. A step within every range (the common case) is told
    by the bytes of the step clamped to the ranges being its own: one clamp and no masks."""
    xn = x - _dls(J, r, lam)
    lo, hi = K.lo, K.hi
    if np.minimum(np.maximum(xn, lo), hi).tobytes() == xn.tobytes():
        return xn
    clo, chi = K.clo, K.chi
    out = (xn < clo) | (xn > chi)
    k = np.count_nonzero(out)
    if k:
        xc = np.minimum(np.maximum(xn, clo), chi)
        if k < out.size:
            held = xc - x
            held *= out
            e = J.dot(held)
            e += r
            d = _dls(J * ~out, e, lam)
            np.subtract(x, d, out=d)
            xn = np.where(out, xc, np.minimum(np.maximum(d, clo, out=d), chi, out=d))
        else:
            xn = xc
    if K.any_wrap:
        wr = K.wrap & ((xn < lo) | (xn > hi))
        if np.count_nonzero(wr):
            xn[wr] = wrap_angle(xn[wr], lo[wr])
    return xn


def _dls(J, e, lam):
    """``argmin |J dx - e|^2 + lam |dx|^2`` through the smaller of the two normal equations (Cholesky). The
    damping goes onto the diagonal through a strided view of the (new, contiguous) normal matrix: the same
    sums as ``A.flat[::m + 1] += lam`` at half its cost (about 1 us of the 2 us of a flat iterator). The
    products are ``ndarray.dot`` (half the call cost of ``@`` on these sizes), and LAPACK's ``posv`` gets the
    symmetric matrix as its Fortran-ordered transpose, to overwrite (no copy)."""
    m, n = J.shape
    if m <= n:
        A = J.dot(J.T)
        A.ravel()[::m + 1] += lam
        c, y, info = _posv(A.T, e, overwrite_a=1)
        if info == 0:
            return J.T.dot(y)
        return J.T.dot(np.linalg.lstsq(J.dot(J.T) + lam * np.eye(m), e, rcond=None)[0])
    A = J.T.dot(J)
    A.ravel()[::n + 1] += lam
    g = J.T.dot(e)
    c, y, info = _posv(A.T, g, overwrite_a=1)
    if info == 0:
        return y
    return np.linalg.lstsq(J.T.dot(J) + lam * np.eye(n), g, rcond=None)[0]


def _posv_numpy(A, b, overwrite_a=0):
    try:
        return None, np.linalg.solve(A, b), 0
    except np.linalg.LinAlgError:
        return None, None, 1


try:
    from scipy.linalg.lapack import dposv as _posv
except ImportError:  # pragma: no cover - scipy is a core dependency
    _posv = _posv_numpy
