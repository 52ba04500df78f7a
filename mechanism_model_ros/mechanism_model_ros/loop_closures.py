"""Closing the loops of closed-chain mechanisms for the state publisher (a four-bar's passive joints).

A closed chain is modelled as a tree plus pairs of frames that must coincide (CLARAty 4.4). The pairs come
from the ``loop_closures`` parameter: strings ``"frame_a:frame_b"`` (pose: both frames coincide) or
``"frame_a:frame_b:position"`` (only their origins coincide, as a pin joint's). Given the joints somebody
reports, the joints nobody reports (the passive ones) are solved with the core's IK
(:func:`mechanism_model_core.ik.solve_ik` with :class:`~mechanism_model_core.constraints.LoopClosure`
constraints, reported joints locked), seeded with the previous solution so the linkage stays on its branch.
"""

from __future__ import annotations

import numpy as np

from mechanism_model_core.errors import MechanismModelError
from mechanism_model_core.constraints import LoopClosure
from mechanism_model_core.ik import solve_ik


class LoopCloser:
    def __init__(self, mechanism, specs, timeout: float = 0.02, max_iterations: int = 10000):
        """``timeout`` (s) and ``max_iterations`` bound each solve (whichever ends it first)."""
        self.mechanism = mechanism
        self.timeout = float(timeout)
        self.max_iterations = int(max_iterations)
        self.constraints = []
        for text in specs or []:
            parts = [p.strip() for p in str(text).split(":")]
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("pose", "position")):
                raise ValueError(f"loop_closures entry {text!r}: use 'frame_a:frame_b' or "
                                 f"'frame_a:frame_b:position'")
            for f in parts[:2]:
                if not mechanism.has_frame(f):
                    raise ValueError(f"loop_closures entry {text!r}: no frame {f!r} in the model")
            mask = (1, 1, 1, 0, 0, 0) if len(parts) == 3 and parts[2] == "position" else None
            self.constraints.append(LoopClosure(frame_a=parts[0], frame_b=parts[1], mask=mask,
                                                name=f"closure {parts[0]}-{parts[1]}"))
        self._previous = None

    def __bool__(self) -> bool:
        return bool(self.constraints)

    def close(self, q: np.ndarray, reported: set[str]) -> tuple[np.ndarray, bool]:
        """``(q with the unreported independent joints solved, closed?)``. On failure the previous
        closed values of the passive joints are kept (or ``q``'s)."""
        m = self.mechanism
        locked = [c for c in m.independent_coordinates if c in reported]
        q0 = np.array(q)
        if self._previous is not None:
            for i, c in enumerate(m.coordinate_names):
                if c not in reported:
                    q0[i] = self._previous[i]
        try:
            result = solve_ik(m, self.constraints, m.configuration(q0), timeout=self.timeout, locked=locked,
                              restarts=False, max_iterations=self.max_iterations)
        except MechanismModelError:
            return q0, False
        if result.success:
            self._previous = np.array(result.q)
            return np.array(result.q), True
        return q0, False
