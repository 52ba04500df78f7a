"""Generating a collision matrix as MoveIt's setup assistant does (``mechanism-model collision-matrix``)."""

from __future__ import annotations

import numpy as np

from .matrix import CollisionMatrix, _key
from .model import CollisionModel
from .queries import _pair_hits


def generate_collision_matrix(mech, samples: int = 2000, rng=0, always_fraction: float = 0.95,
                              environment=None) -> tuple[CollisionMatrix, dict]:
    """A collision matrix as MoveIt's setup assistant makes one: over the default rule's ``Adjacent`` and
    ``Rigid`` pairs it disables pairs in collision at the home configuration (``Default``), pairs in
    collision in at least ``always_fraction`` of ``samples`` random configurations (``Always``) and pairs
    never in collision in any of them (``Never``). Returns the matrix and a report
    ``{reason: number of pairs, "samples": n}``.
    """
    base = CollisionMatrix.default(mech)
    everything = CollisionMatrix(mech.body_names, {k: v for k, v in base.disabled.items()})
    model = CollisionModel(mech, matrix=everything)
    disabled = dict(base.disabled)
    home_hits = _pair_hits(model, mech.home[None, :])[0]
    for pair in home_hits:
        disabled.setdefault(_key(*pair), "Default")
    Q = mech.random_configuration(np.random.default_rng(rng), size=int(samples))
    counts: dict[tuple[str, str], int] = {}
    for hits in _pair_hits(model, Q):
        for pair in hits:
            counts[_key(*pair)] = counts.get(_key(*pair), 0) + 1
    for a, b in model.pairs_checked:
        k = _key(a, b)
        if k in disabled:
            continue
        n = counts.get(k, 0)
        if n == 0:
            disabled[k] = "Never"
        elif n >= always_fraction * samples:
            disabled[k] = "Always"
    report = {"samples": int(samples)}
    for why in disabled.values():
        report[why] = report.get(why, 0) + 1
    return CollisionMatrix(mech.body_names, disabled), report
