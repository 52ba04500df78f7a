"""Counting what IK builds (issue 20: "caches are built when the model is loaded or on first use outside the
caller's budget, so that the first solve on a model is as fast as the thousandth"): :func:`install` wraps the
constructors of every per-model IK cache -- the kinematics plan's chains, the problem structures, the lane
engines, their chain constants, seed tables and restart tables, the ``eaik`` and near-decomposable closed forms,
a 7R closed form's fallback preparation and a held base's reference engine -- and every new slot or memo entry
of a mechanism's derived data (:mod:`mechanism_model_core.data`), and records each build by name.

Used by ``test/core/test_ik_prepare.py`` and, in the IK server's process, by
``test/ros/build_counting_serve.py``. What is not counted: ``eaik``'s robot of a 7R chain's swept joint at a
seed value not met before (a few microseconds, per value, not per model)."""

from __future__ import annotations

import collections

from mechanism_model_core import data, kinematics
from mechanism_model_core.ik import batch, structure
from mechanism_model_core.ik.closed_form import eaik_solver, near_decomposable

#: (owner, attribute, label): the constructors and build methods counted
BUILDS = (
    (kinematics.FrameChain, "__init__", "FrameChain"),
    (kinematics.KinematicsPlan, "__init__", "KinematicsPlan"),
    (structure.ProblemStructure, "__init__", "ProblemStructure"),
    (batch.LaneEngine, "__init__", "LaneEngine"),
    (batch._ChainConstants, "__init__", "ChainConstants"),
    (batch.LaneEngine, "_build_seed_table", "seed table"),
    (batch.LaneEngine, "_base_seed_table", "base seed table"),
    (eaik_solver.EAIKSolver, "__init__", "EAIKSolver"),
    (near_decomposable.NearDecomposableSolver, "__init__", "NearDecomposableSolver"),
)


def install(monkeypatch) -> collections.Counter:
    """Count builds from now on (undone by ``monkeypatch``); returns the Counter that collects them by label."""
    built = collections.Counter()
    for owner, attr, label in BUILDS:
        _count(monkeypatch, owner, attr, label, built)
    table = batch._ChainConstants.table

    def counted_table(self, seed, count, _orig=table):
        before = {k: v[0].shape[0] for k, v in self._tables.items()}
        out = _orig(self, seed, count)
        if before.get(seed) != self._tables[seed][0].shape[0]:
            built["restart table"] += 1
        return out
    monkeypatch.setattr(batch._ChainConstants, "table", counted_table)
    prep = eaik_solver.EAIKSolver._prepare_fallback

    def counted_prepare(self, *a, _orig=prep, **k):
        built["7R fallback"] += 1
        return _orig(self, *a, **k)
    monkeypatch.setattr(eaik_solver.EAIKSolver, "_prepare_fallback", counted_prepare)
    reference = near_decomposable.NearDecomposableSolver._reference

    def counted_reference(self, _orig=reference):
        if self._ref is None:
            built["reference engine"] += 1
        return _orig(self)
    monkeypatch.setattr(near_decomposable.NearDecomposableSolver, "_reference", counted_reference)
    # every new derived-data slot and memo entry
    get, memo_get, put = data.Data.get, data.Memo.get, data.Memo.put

    def data_get(self, key, build, _orig=get):
        if key not in self._slots:
            built[f"slot {key!r}"] += 1
        return _orig(self, key, build)

    def memo_get(self, key, build, _orig=memo_get):
        if key not in self._d:
            built["memo entry"] += 1
        return _orig(self, key, build)

    def memo_put(self, key, value, _orig=put):
        if key not in self._d:
            built["memo entry"] += 1
        return _orig(self, key, value)
    monkeypatch.setattr(data.Data, "get", data_get)
    monkeypatch.setattr(data.Memo, "get", memo_get)
    monkeypatch.setattr(data.Memo, "put", memo_put)
    return built


def _count(monkeypatch, owner, attr, label, built):
    orig = getattr(owner, attr)

    def counted(self, *a, _orig=orig, **k):
        built[label] += 1
        return _orig(self, *a, **k)
    monkeypatch.setattr(owner, attr, counted)


class Patcher:
    """A stand-in for pytest's ``monkeypatch`` outside pytest (the IK server's process): ``setattr`` only, never
    undone."""

    @staticmethod
    def setattr(owner, attr, value):
        setattr(owner, attr, value)
