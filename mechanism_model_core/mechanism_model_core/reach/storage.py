"""Stored reachability maps: one HDF5 file per map, written atomically, and the journal of a running map.

Why HDF5 (h5py) rather than Zarr: a map is one file an operator copies, mails and opens in any tool
(h5py, MATLAB, HDFView; reuleaux's maps are HDF5 too); its datasets are chunked and gzip-compressed
(the per-sample ``reached`` bits of a 5 cm MER map shrink to a few hundred kB); and only the driver ever
writes (workers hand their results back), so Zarr's strength, many concurrent writers to one store, buys
nothing here. HDF5's weakness, a file left damaged when its writer is killed mid-write, is kept away from the
map itself: a running computation streams each finished chunk of voxels into a *journal* directory beside
the map (``MAP.partial/``, one small ``.npz`` per chunk, each written to a temporary name and renamed, so a
kill at any instant leaves only whole chunks), and the HDF5 file is written once at the end under a
temporary name and renamed over ``MAP`` (atomic on POSIX). A killed run, started again with the same
request, reads the journal and computes only the missing chunks.

File layout (format version 1): root attributes ``format`` (``"mechanism_model.reach_map"``),
``format_version``, ``software_version``, ``model_name``, ``model_hash`` (SHA-256 of the chain's CLARAty XML
and the tool name), ``request`` (JSON of every setting), ``samples`` and ``iterations`` (IK work done);
datasets ``index`` (nx, ny, nz) float32 reachability index, ``reached`` (nx, ny, nz, S) bool per sample,
``manipulability`` and ``margin`` (nx, ny, nz) float32 best per voxel, ``q`` (nx, ny, nz, nq) float32 the
reached configuration with the largest joint-limit margin (NaN where none) and ``best_sample`` (nx, ny, nz)
int32 its sample (-1 where none), ``computed`` (nx, ny, nz) bool
(voxels inside the reach ball; the others are unreachable by the bound), ``directions`` (D, 3) and
``rotations`` (S, 3, 3) in the base frame.
"""

from __future__ import annotations

import glob
import json
import os
import tempfile

import numpy as np

from ..errors import MechanismModelError
from ..extras import install_hint

__all__ = ["FORMAT", "FORMAT_VERSION", "MapFileError", "write_map_file", "read_map_file", "Journal"]

FORMAT = "mechanism_model.reach_map"
FORMAT_VERSION = 1
_DATASETS = ("index", "reached", "manipulability", "margin", "q", "best_sample", "computed", "directions",
             "rotations")


class MapFileError(MechanismModelError):
    """A map file cannot be used: not a map, another version, or computed for another model or request."""


def _h5py():
    try:
        import h5py
    except ImportError as exc:   # pragma: no cover - the 'reach' extra
        raise MechanismModelError(f"reachability map files need h5py: {install_hint('reach')}") from exc
    return h5py


def write_map_file(path, attrs: dict, arrays: dict) -> None:
    """Write a map file atomically: a temporary file in the same directory, renamed over ``path``."""
    h5py = _h5py()
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=d)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            for k, v in attrs.items():
                f.attrs[k] = v
            for k in _DATASETS:
                a = np.asarray(arrays[k])
                big = a.ndim >= 3 and a.size > 4096
                f.create_dataset(k, data=a, compression="gzip" if big else None, shuffle=big)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_map_file(path) -> tuple:
    """``(attrs, arrays)`` of a map file; :class:`MapFileError` when it is not one of this version."""
    h5py = _h5py()
    path = os.fspath(path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise MapFileError(f"{path}: not a readable HDF5 map file ({exc})") from None
    with f:
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        if attrs.get("format") != FORMAT:
            raise MapFileError(f"{path}: not a reachability map (format {attrs.get('format')!r})")
        if int(attrs.get("format_version", -1)) != FORMAT_VERSION:
            raise MapFileError(f"{path}: map format version {attrs.get('format_version')} is not supported "
                               f"(this software reads version {FORMAT_VERSION}); recompute the map")
        missing = [k for k in _DATASETS if k not in f]
        if missing:
            raise MapFileError(f"{path}: map file lacks datasets {missing}")
        arrays = {k: f[k][()] for k in _DATASETS}
    return attrs, arrays


class Journal:
    """The chunks of a running map computation (``MAP.partial/``): ``request.json`` (the model hash and the
    request; a journal of another request is refused) and one ``chunk_NNNNNN.npz`` per finished chunk."""

    def __init__(self, map_path, identity: dict):
        self.dir = os.fspath(map_path) + ".partial"
        self.identity = identity

    def open(self, restart: bool = False) -> set:
        """Create or reopen the journal; returns the ids of the chunks already done."""
        meta = os.path.join(self.dir, "request.json")
        if os.path.isdir(self.dir) and restart:
            self.remove()
        if os.path.isdir(self.dir):
            try:
                with open(meta) as fh:
                    old = json.load(fh)
            except (OSError, ValueError):
                old = None
            if old != json.loads(json.dumps(self.identity)):
                why = "another model" if old and old.get("model_hash") != self.identity.get("model_hash") \
                    else "another request"
                raise MapFileError(f"{self.dir}: an unfinished map of {why} is in the way; remove it or "
                                   f"start over (restart=True, --restart)")
            return {int(os.path.basename(p)[6:12]) for p in glob.glob(os.path.join(self.dir, "chunk_*.npz"))}
        os.makedirs(self.dir)
        self._atomic(meta, lambda fh: fh.write(json.dumps(self.identity, indent=1).encode()))
        return set()

    def _atomic(self, path, write) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".tmp_", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def write(self, chunk_id: int, result: dict) -> None:
        arrays = {k: v for k, v in result.items() if isinstance(v, np.ndarray)}
        totals = np.array([result["samples"], result["iterations"]], dtype=np.int64)
        self._atomic(os.path.join(self.dir, f"chunk_{chunk_id:06d}.npz"),
                     lambda fh: np.savez(fh, totals=totals, **arrays))

    def read(self, chunk_id: int) -> dict:
        with np.load(os.path.join(self.dir, f"chunk_{chunk_id:06d}.npz")) as z:
            out = {k: z[k] for k in z.files if k != "totals"}
            out["samples"], out["iterations"] = (int(v) for v in z["totals"])
        return out

    def remove(self) -> None:
        for p in glob.glob(os.path.join(self.dir, "*")) + glob.glob(os.path.join(self.dir, ".tmp_*")):
            os.unlink(p)
        if os.path.isdir(self.dir):
            os.rmdir(self.dir)


def check_identity(attrs: dict, model_hash: str | None, path) -> None:
    """Refuse a map computed for another model (``model_hash`` None: no check)."""
    if model_hash is not None and attrs.get("model_hash") != model_hash:
        raise MapFileError(f"{path}: the map was computed for another model ({attrs.get('model_name')!r}, hash "
                           f"{str(attrs.get('model_hash'))[:12]}...) than the one given (hash {model_hash[:12]}...):"
                           f" the chain's kinematics, limits or shapes changed; recompute the map")


