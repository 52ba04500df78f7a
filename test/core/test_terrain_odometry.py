"""3-D odometry on a terrain (locomotion/terrain_odometry.py) against a closed form: on a constant slope given
as a height field, a rover riding parallel to the plane moves by the planar SE(2) motion carried on the plane,
its heading turning about the plane's normal."""

import math

import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.terrain_odometry import TerrainOdometry
from mechanism_model_core.locomotion.wheeled import Odometry, WheeledLocomotorModel
from mechanism_model_core.terrain import HeightField, Plane

RIDE = 0.25            # osr_rover.xml: base_link 0.25 m above the wheel contacts at home


@pytest.fixture(scope="module")
def osr():
    return WheeledLocomotorModel(load_model(model_path("osr/osr_rover.xml")))


def start_pose(plane, yaw):
    """Body frame on the plane: z axis the plane's normal, x axis the heading ``yaw`` (seen from above)
    lifted into the plane, origin RIDE above the plane along the normal, straight above (0, 0) in x, y."""
    n = np.asarray(plane.unit_normal, dtype=float)
    c, s = math.cos(yaw), math.sin(yaw)
    x = np.array([c, s, -(n[0] * c + n[1] * s) / n[2]])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([x, np.cross(n, x), n])
    z0 = (RIDE + n[2] * float(plane.height(0.0, 0.0))) / n[2]          # n . (p - RIDE n - (0, 0, h0)) = 0
    T[:3, 3] = 0.0, 0.0, z0
    return T


def planar(v, w, t):
    """The body's motion after ``t`` s of constant (v, 0, w), as a 4x4 in its starting frame."""
    a = w * t
    T = np.eye(4)
    T[:2, :2] = [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
    T[:2, 3] = v / w * math.sin(a), v / w * (1 - math.cos(a))
    return T


@pytest.mark.parametrize("slope,direction,yaw", [(0.25, 0.7, 0.3), (0.15, -2.0, 1.2)])
def test_an_arc_on_a_slope_is_the_planar_motion_carried_on_the_plane(osr, slope, direction, yaw):
    plane = Plane.from_slope(slope, direction)
    hf = HeightField.from_function(lambda X, Y: plane.height(X, Y), (-3, 3), (-3, 3), 0.25)
    odo = TerrainOdometry(osr, hf, 0.0, 0.0, yaw)
    T0 = start_pose(plane, yaw)
    np.testing.assert_allclose(odo.matrix, T0, atol=1e-9)
    v, w, dt = 0.3, 0.25, 0.1
    flat = Odometry(0.0, 0.0, yaw)
    for k in range(1, 41):
        odo.update((v, 0.0, w), dt, twist_covariance=np.diag([1e-4, 1e-4, 1e-4]))
        flat.update((v, 0.0, w), dt)
        want = T0 @ planar(v, w, k * dt)
        np.testing.assert_allclose(odo.matrix, want, atol=1e-8, err_msg=f"step {k}")
    assert odo.settle_failures == 0
    # the path climbs with the plane: the body's height change is the plane's rise under it
    rise = plane.height(odo.position[0], odo.position[1]) - plane.height(0.0, 0.0)
    assert odo.position[2] - T0[2, 3] == pytest.approx(rise, abs=1e-8) and abs(rise) > 0.05
    # and is not the level-ground answer (heading turning about the vertical)
    assert np.linalg.norm(odo.position[:2] - flat.position[:2]) > 1e-3
    assert np.all(np.diag(odo.covariance) > 0)


def test_off_the_terrain_the_prediction_is_kept_and_counted(osr):
    hf = HeightField.from_function(lambda X, Y: 0.1 * X, (-1, 1), (-1, 1), 0.25, outside="error")
    odo = TerrainOdometry(osr, hf)
    for _ in range(30):
        odo.update((0.5, 0.0, 0.0), 0.1)
    assert odo.settle_failures > 0 and np.all(np.isfinite(odo.matrix))
