"""Reachability (capability) maps and base placement (see :mod:`.map` and :mod:`.placement`).

Needs the ``reach`` extra for map files (h5py; tqdm for the CLI's progress bar) and the ``dask`` extra for
``executor="dask"``.
"""

from .grid import MAX_FILE_BYTES, MAX_SAMPLES, MAX_VOXELS, VoxelGrid, chain_reach
from .map import MODES, ReachMap, chain_of, compute_map, model_hash, parse_chain
from .sampling import sphere_directions
from .storage import MapFileError

__all__ = ["MAX_FILE_BYTES", "MAX_SAMPLES", "MAX_VOXELS", "MODES", "MapFileError", "ReachMap", "VoxelGrid",
           "chain_of", "chain_reach", "compute_map", "model_hash", "parse_chain", "sphere_directions"]
