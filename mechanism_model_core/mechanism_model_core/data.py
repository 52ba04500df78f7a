"""The one home of derived data (Pinocchio's ``Data`` beside its ``Model``).

A :class:`~mechanism_model_core.model.Mechanism` holds constants only. What an algorithm precomputes from
them -- the kinematics plans (:func:`~mechanism_model_core.kinematics.kinematics_plan`), the mass model and
gravity plans of :mod:`~mechanism_model_core.statics`, the collision model, the IK solvers' chain constants
and engines ... -- lives in the mechanism's :class:`Data`, found by :func:`data_of` (or passed explicitly:
the batch kinematics, statics and collision functions take an optional ``data=data_of(m)``, as Pinocchio's
functions take ``data``). The same holds for the other constant models that algorithms derive data from: a
:class:`~mechanism_model_core.collision.model.CollisionModel` (its per-thread ``CollisionData``, Pinocchio's
``GeometryData``), an :class:`~mechanism_model_core.collision.environment.Environment` and an
:class:`~mechanism_model_core.collision.environment.Obstacle` (their coal objects), the wheeled and manipulator
models of :mod:`~mechanism_model_core.locomotion` (settling constants, specialized solvers).

One home, one lock, one rule:

* **one home**: the :class:`Data` of an owner (the mechanism, or another constant model) is held by the owner
  itself, in one attribute that only this module writes (:data:`ATTR`), so it lives exactly as long as the
  owner -- also when a slot refers back to its owner (a collision model holds its mechanism, a solver its
  mechanism): the garbage collector drops the pair together. A pickled or deep-copied owner carries an empty
  :class:`Data` (the copy builds its own). No module keeps a map of its own;
  ``test/core/test_no_module_caches.py`` fails on a new module-level cache;
* **one lock**: a slot is built once, under one re-entrant lock (a build may use other slots of the same or
  another owner); reads take no lock: a slot never changes once built, so any number of threads share it;
* **one invalidation rule**: nothing is ever invalidated while the owner lives (it never changes: editing a
  mechanism gives a new mechanism, with its own data); everything goes with the owner.

Kinds of slot (named by their module: ``"statics.mass_model"``, ``("ik.chain_constants", frame)``):

* a **value** (:meth:`Data.get`, :func:`derived`): built once, read-only after;
* a **memo** (:meth:`Data.memo`, :func:`memo` in one call): a bounded map of values by a key that is not the
  owner's alone (a problem's shape, limits, a contact list): each value built on first use (by a racing
  thread perhaps twice, one kept), the whole memo cleared when it reaches its bound;
* **per thread** (:meth:`Data.per_thread`, :class:`PerThread`): a value each thread builds and keeps for
  itself, for objects that must not be shared between threads (coal's collision objects, scratch arrays a
  pass writes into); a thread's values go when the thread ends, all of them with the owner;
* the kinematics plan, read on every forward-kinematics call, has an attribute of its own
  (:attr:`Data.kinematics`);
* **work arrays** (:func:`work`): per-thread scratch arrays by name and shape, shared by every owner (they
  hold no derived data, only reused memory: one set per thread, not per mechanism).

Derived constants of no owner (a KKT template by problem size, toppra's constraint objects by joint limits)
are slots of :data:`SHARED`, one process-wide :class:`Data`.
"""

from __future__ import annotations

import threading
from typing import Callable, Hashable

import numpy as np

__all__ = ["ATTR", "Data", "Memo", "PerThread", "SHARED", "check_data", "data_of", "derived", "memo", "work"]

#: the attribute of an owner that holds its :class:`Data` (hot paths read it with ``getattr(m, ATTR, None)``)
ATTR = "_mm_data"
_LOCK = threading.RLock()
_MISSING = object()


class PerThread(threading.local):
    """A value of each thread: ``build()`` is called on a thread's first read of :attr:`value` (and at
    construction, for the constructing thread); a thread's value goes when the thread ends."""

    def __init__(self, build: Callable[[], object]):
        self.value = build()


class Memo:
    """A bounded memo: values by key, each built on first use; cleared when it holds ``max_entries``."""

    __slots__ = ("_d", "max_entries")

    def __init__(self, max_entries: int):
        self._d: dict = {}
        self.max_entries = max_entries

    def get(self, key: Hashable, build: Callable[[], object]):
        """The value of ``key``, built by ``build()`` on first use (outside the lock: a racing thread may
        build it too; the first stored is kept and returned to both)."""
        value = self._d.get(key, _MISSING)
        if value is _MISSING:
            value = build()
            with _LOCK:
                if len(self._d) >= self.max_entries:
                    self._d.clear()
                value = self._d.setdefault(key, value)
        return value

    def peek(self, key: Hashable, default=None):
        """The value of ``key`` if built, else ``default`` (builds nothing)."""
        return self._d.get(key, default)

    def put(self, key: Hashable, value):
        """Store ``value`` for ``key`` unless one is there; returns the one kept."""
        with _LOCK:
            if len(self._d) >= self.max_entries:
                self._d.clear()
            return self._d.setdefault(key, value)

    def __len__(self) -> int:
        return len(self._d)


class Data:
    """The derived data of one owner (a mechanism, or another constant model): :attr:`kinematics` (a
    mechanism's :class:`~mechanism_model_core.kinematics.KinematicsPlan`, or None before first use) and
    named slots (:meth:`get`, :meth:`memo`, :meth:`per_thread`)."""

    __slots__ = ("kinematics", "_slots", "__weakref__")

    def __init__(self):
        self.kinematics = None
        self._slots: dict = {}

    def get(self, key: Hashable, build: Callable[[], object]):
        """The value slot ``key``, built by ``build()`` on first use (once, under the lock)."""
        value = self._slots.get(key, _MISSING)
        if value is _MISSING:
            with _LOCK:
                value = self._slots.get(key, _MISSING)
                if value is _MISSING:
                    value = self._slots[key] = build()
        return value

    def memo(self, key: Hashable, max_entries: int = 64) -> Memo:
        """The memo slot ``key`` (a :class:`Memo` of at most ``max_entries`` values)."""
        m = self._slots.get(key)
        if m is None:
            m = self.get(key, lambda: Memo(max_entries))
        return m

    def per_thread(self, key: Hashable, build: Callable[[], object]):
        """This thread's value of the per-thread slot ``key``, built by ``build()`` on the thread's first
        use."""
        p = self._slots.get(key)
        if p is None:
            p = self.get(key, lambda: PerThread(build))
        return p.value

    def set_kinematics(self, build: Callable[[], object]):
        """:attr:`kinematics`, built by ``build()`` on first use (once, under the lock)."""
        value = self.kinematics
        if value is None:
            with _LOCK:
                value = self.kinematics
                if value is None:
                    value = self.kinematics = build()
        return value

    def __reduce__(self):
        """An owner pickles (or deep-copies) with an empty :class:`Data`: the copy builds its own."""
        return Data, ()

    def __contains__(self, key) -> bool:
        return key in self._slots

    def __len__(self) -> int:
        return len(self._slots) + (self.kinematics is not None)


#: derived constants that belong to no owner (templates by problem size, objects by joint limits, a loader
#: class per YAML module): one process-wide :class:`Data`, with the same kinds of slot
SHARED = Data()


def data_of(owner) -> Data:
    """The :class:`Data` of ``owner`` (created empty on first use; kept by the owner, see :data:`ATTR`)."""
    d = getattr(owner, ATTR, None)
    if d is None:
        with _LOCK:
            d = getattr(owner, ATTR, None)
            if d is None:
                d = Data()
                object.__setattr__(owner, ATTR, d)       # owners may be frozen dataclasses
    return d


def memo(owner, key: Hashable, max_entries: int = 64) -> Memo:
    """``data_of(owner).memo(key, max_entries)``, one call shorter on the hot path (a solve looks up a few)."""
    d = getattr(owner, ATTR, None)
    if d is not None:
        m = d._slots.get(key)
        if m is not None:
            return m
    return data_of(owner).memo(key, max_entries)


def per_thread(owner, key: Hashable, build: Callable[[], object]):
    """``data_of(owner).per_thread(key, build)``, one call shorter on the hot path (a collision query looks
    up its thread's coal data on every call)."""
    d = getattr(owner, ATTR, None)
    if d is not None:
        p = d._slots.get(key)
        if p is not None:
            return p.value
    return data_of(owner).per_thread(key, build)


def check_data(owner, data) -> Data:
    """What a function taking ``data=`` does with it: ``owner``'s :class:`Data` (``data`` itself, which must be
    the owner's -- ``data_of(owner)`` -- else ValueError: derived data of another mechanism would give wrong
    answers silently; ``data=None``: found from the owner)."""
    d = getattr(owner, ATTR, None)
    if data is None:
        return d if d is not None else data_of(owner)
    if d is not data:
        raise ValueError(f"data= is not the Data of {getattr(owner, 'name', type(owner).__name__)!r}: pass "
                         f"data_of(mechanism) of the mechanism the call is about")
    return data


def derived(owner, key: Hashable, build: Callable[[object], object]):
    """Value slot ``key`` of ``owner``'s :class:`Data`, built by ``build(owner)`` on first use."""
    d = getattr(owner, ATTR, None)
    if d is not None:
        value = d._slots.get(key, _MISSING)
        if value is not _MISSING:
            return value
    else:
        d = data_of(owner)
    return d.get(key, lambda: build(owner))


# ---------------------------------------------------------------------------------------------- work arrays
#: per-thread work arrays (see :func:`work`)
_WORK = threading.local()
#: work arrays above this many bytes are not kept between calls
WORK_MAX_BYTES = 32 << 20


def work(name: str, shape: tuple) -> np.ndarray:
    """A work array of ``shape``, this thread's own, reused between calls (name them by module:
    ``"kinematics.cos"``): a fresh megabyte-sized temporary costs more in page faults than the arithmetic on
    it (glibc hands large blocks back to the kernel on free). Only for arrays that never leave the function
    using them; arrays above :data:`WORK_MAX_BYTES` are fresh every time."""
    d = _WORK.__dict__
    a = d.get(name)
    if a is None or a.shape != shape:
        a = np.empty(shape)
        if a.nbytes <= WORK_MAX_BYTES:
            d[name] = a
    return a
