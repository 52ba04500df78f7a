"""The one home of per-mechanism derived data (Pinocchio's ``Data`` beside its ``Model``).

A :class:`~mechanism_model_core.model.Mechanism` holds constants only. What an algorithm precomputes from
them -- the kinematics plans (:func:`~mechanism_model_core.kinematics.kinematics_plan`), the mass model and
gravity plans of :mod:`~mechanism_model_core.statics`, the passive joints of a contact problem ... -- lives
in the mechanism's :class:`Data`, found by :func:`data_of`. One map, one lock, one rule:

* **one map**: the :class:`Data` of a mechanism is keyed by the mechanism's identity (``BY_ID``; an
  algorithm's hot path may read it directly: ``BY_ID.get(id(m))``, then the slot);
* **one lock**: a slot is built once, under one re-entrant lock (a build may use other slots of the same or
  another mechanism); reads take no lock: a slot never changes once built, so any number of threads share it
  (a slot that is itself a bounded memo, such as statics' contact plans by contact list, is its module's to
  fill and bound);
* **one invalidation rule**: nothing is ever invalidated while the mechanism lives (it never changes:
  editing gives a new mechanism, with its own data); the whole :class:`Data` is dropped when the mechanism is
  garbage-collected (``weakref.finalize``).

Slots are named by their module (``"statics.mass"``, ``("statics.contact_plan", key)``); the kinematics
plan, read on every forward-kinematics call, has an attribute of its own (:attr:`Data.kinematics`).
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable, Hashable

__all__ = ["BY_ID", "Data", "data_of", "derived"]

#: ``id(mechanism) -> Data`` for every live mechanism that has derived data (entries removed when the
#: mechanism is collected)
BY_ID: dict[int, "Data"] = {}
_LOCK = threading.RLock()
_MISSING = object()


class Data:
    """The derived data of one mechanism: :attr:`kinematics` (its
    :class:`~mechanism_model_core.kinematics.KinematicsPlan`, or None before first use) and named slots
    (:meth:`get`). Holds no reference to the mechanism (so that it can be collected)."""

    __slots__ = ("kinematics", "_slots")

    def __init__(self):
        self.kinematics = None
        self._slots: dict = {}

    def get(self, key: Hashable, build: Callable[[], object]):
        """The slot ``key``, built by ``build()`` on first use (once, under the lock)."""
        value = self._slots.get(key, _MISSING)
        if value is _MISSING:
            with _LOCK:
                value = self._slots.get(key, _MISSING)
                if value is _MISSING:
                    value = self._slots[key] = build()
        return value

    def set_kinematics(self, build: Callable[[], object]):
        """:attr:`kinematics`, built by ``build()`` on first use (once, under the lock)."""
        value = self.kinematics
        if value is None:
            with _LOCK:
                value = self.kinematics
                if value is None:
                    value = self.kinematics = build()
        return value

    def __len__(self) -> int:
        return len(self._slots) + (self.kinematics is not None)


def data_of(mechanism) -> Data:
    """The :class:`Data` of ``mechanism`` (created empty on first use)."""
    d = BY_ID.get(id(mechanism))
    if d is None:
        with _LOCK:
            d = BY_ID.get(id(mechanism))
            if d is None:
                d = BY_ID[id(mechanism)] = Data()
                weakref.finalize(mechanism, BY_ID.pop, id(mechanism), None)
    return d


def derived(mechanism, key: Hashable, build: Callable[[object], object]):
    """Slot ``key`` of ``mechanism``'s :class:`Data`, built by ``build(mechanism)`` on first use."""
    d = BY_ID.get(id(mechanism))
    if d is not None:
        value = d._slots.get(key, _MISSING)
        if value is not _MISSING:
            return value
    else:
        d = data_of(mechanism)
    return d.get(key, lambda: build(mechanism))
