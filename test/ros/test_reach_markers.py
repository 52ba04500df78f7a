"""RViz markers of a reachability map: one cube list with a cube per reachable voxel at its centre, the voxel's
size, coloured by index; built into a real visualization_msgs/MarkerArray through the in-memory transport."""

import numpy as np
import pytest

from mechanism_model_core import Joint, MechanismBuilder
from mechanism_model_core.reach import compute_map
from mechanism_model_core.spatial import translation

pytestmark = pytest.mark.ros

M = pytest.importorskip("mechanism_model_ros.markers")
pytest.importorskip("h5py")


def planar_arm(lengths):
    b = MechanismBuilder("planar")
    parent = None
    for i, _ in enumerate(lengths):
        b.add_body(f"link{i + 1}", parent, Joint.revolute(f"joint{i + 1}", np.eye(4) if i == 0 else
                                                          translation(lengths[i - 1], 0, 0)))
        parent = f"link{i + 1}"
    b.add_frame(parent, "tool", translation(lengths[-1], 0, 0))
    return b.build()


def test_reach_map_markers_are_the_reachable_voxels_coloured_by_index():
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode

    rmap = compute_map(planar_arm((0.8, 0.5, 0.3)), "ground:tool", 0.3, directions=[[1, 0, 0], [0, 1, 0], [0, 0, 1]],
                       axis="x", bound=((-1.2, -1.2, 0.0), (1.2, 1.2, 0.0)), executor="serial", max_iterations=60)
    specs = M.reach_map_markers(rmap)
    assert len(specs) == 1 and specs[0].type == M.CUBE_LIST and specs[0].frame == "ground"
    reachable = np.argwhere(rmap.index > 0)
    assert len(specs[0].points) == len(reachable) > 0
    centers = rmap.grid.centers(np.ravel_multi_index(tuple(reachable.T), rmap.grid.shape))
    np.testing.assert_allclose(np.sort(specs[0].points, axis=0), np.sort(centers, axis=0))
    assert specs[0].scale == (0.3, 0.3, 0.3)
    # red for a low index, green for a full one
    c = M.index_color([1e-3, 0.5, 1.0])
    assert c[0, 0] > 0.8 and c[0, 1] < 0.2 and c[2, 1] > 0.7 and c[2, 0] < 0.2 and np.all(c[:, 3] == 1)
    node = MemoryNode("viewer", bus=MemoryBus(manual_clock=True))
    arr = M.marker_array(node, specs, (1, 0))
    cubes = arr.markers[1]
    assert cubes.type == 6 and len(cubes.points) == len(cubes.colors) == len(reachable)
    idx = rmap.index[tuple(reachable.T)]
    np.testing.assert_allclose(sorted(k.g for k in cubes.colors), sorted(M.index_color(idx)[:, 1]), atol=1e-6)
