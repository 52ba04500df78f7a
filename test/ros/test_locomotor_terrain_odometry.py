"""The locomotor's 3-D odometry on a terrain over real DDS on loopback, both transports: the Open Source Rover
on a constant slope given as a height field (``environment_file``), fed stamped /corner_state and
/drive_state of an arc; /odom (nav_msgs/Odometry) must carry the closed form of test_terrain_odometry (the
planar motion carried on the plane, z and attitude from the plane) and the covariances."""


import numpy as np
import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel
from mechanism_model_core.terrain import Plane

from core.test_terrain_odometry import planar, start_pose
from ros.dds_helpers import configure_this_process, unique_domain_id, wait_for
from system.serving import Server

pytestmark = [pytest.mark.ros, pytest.mark.slow]

CORE = WheeledLocomotorModel(load_model(model_path("osr/osr_rover.xml")))
SLOPE, DIRECTION, YAW = 0.25, 0.7, 0.3
V, W, DT, STEPS = 0.3, 0.25, 0.1, 30


@pytest.fixture(params=["cyclone", "rclpy-humble"])
def served(request, tmp_path):
    plane = Plane.from_slope(SLOPE, DIRECTION)
    x = np.arange(-3.0, 3.0001, 0.25)
    X, Y = np.meshgrid(x, x, indexing="ij")
    np.save(tmp_path / "dem.npy", plane.height(X, Y))
    env = tmp_path / "slope.yaml"
    env.write_text("terrain:\n  height_field: {file: dem.npy, spacing: [0.25, 0.25], origin: [-3.0, -3.0]}\n")
    domain = unique_domain_id()
    args = ["--model", "osr/osr_rover.xml", "--nodes", "locomotor", "-p", "adapter:=osr",
            "-p", f"environment_file:={env}", "-p", f"odometry_start:=[0.0, 0.0, {YAW}]"]
    server = Server(request.param, domain, *args)
    configure_this_process(domain)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(domain)
    user = CycloneNode("rover", context=ctx)
    pubs = {t: user.create_publisher(t, "sensor_msgs/msg/JointState", qos.DEFAULT)
            for t in ("/corner_state", "/drive_state")}
    odom = []
    user.create_subscription("odom", "nav_msgs/msg/Odometry", qos.DEFAULT, odom.append)
    try:
        yield plane, user, pubs, odom
    finally:
        user.close()
        ctx.close()
        text = server.stop()
        if text.strip():
            print(f"serve ({request.param}) output:\n{text[-3000:]}")


def test_odometry_on_a_slope_is_the_closed_form(served):
    from scipy.spatial.transform import Rotation
    plane, user, pubs, odom = served
    JS = user.message_class("sensor_msgs/msg/JointState")
    cmd = CORE.drive((V, 0.0, W), mode="ackermann")
    steer, rates = cmd.steering_by_joint(CORE), cmd.rates_by_joint(CORE)
    T0 = start_pose(plane, YAW)

    def at_start():
        return odom and np.allclose([odom[-1].pose.pose.position.x, odom[-1].pose.pose.position.y,
                                     odom[-1].pose.pose.position.z], T0[:3, 3], atol=1e-9)
    assert wait_for(at_start, 30, 0.05), odom[-1].pose.pose if odom else "no odom"
    # the corners hold the arc's angles; the wheels report its rates, stamped DT apart
    corners = JS()
    corners.name = list(steer)
    corners.position = [float(v) for v in steer.values()]
    positions = dict.fromkeys(rates, 0.0)
    for k in range(STEPS + 1):
        pubs["/corner_state"].publish(corners)
        m = JS()
        m.header.stamp.sec, m.header.stamp.nanosec = 100 + k // 10, (k % 10) * 100_000_000
        m.name = list(rates)
        m.position = [positions[j] + k * DT * rates[j] for j in rates]
        m.velocity = [float(rates[j]) for j in rates]
        pubs["/drive_state"].publish(m)
        wait_for(lambda: False, 0.005, 0.005)          # pace the burst (reliable, depth 100 either way)
    want = T0 @ planar(V, W, STEPS * DT)

    def pose(o):
        p = o.pose.pose
        T = np.eye(4)
        T[:3, :3] = Rotation.from_quat([p.orientation.x, p.orientation.y, p.orientation.z,
                                        p.orientation.w]).as_matrix()
        T[:3, 3] = p.position.x, p.position.y, p.position.z
        return T
    assert wait_for(lambda: np.allclose(pose(odom[-1]), want, atol=1e-7), 30, 0.05), (pose(odom[-1]), want)
    o = odom[-1]
    rise = plane.height(want[0, 3], want[1, 3]) - plane.height(0.0, 0.0)
    assert o.pose.pose.position.z - T0[2, 3] == pytest.approx(rise, abs=1e-7) and abs(rise) > 0.05
    assert o.twist.twist.linear.x == pytest.approx(V, abs=1e-9) and o.twist.twist.angular.z == pytest.approx(W)
    # covariances: the floors (1e-3 diagonal by default) plus what the wheels' disagreement and dead reckoning
    # add on x, y, yaw; consistent wheels add nothing to the twist's
    pc = np.array(o.pose.covariance).reshape(6, 6)
    assert np.all(np.diag(pc) >= 1e-3 - 1e-15) and np.all(np.isfinite(pc)) and np.allclose(pc, pc.T)
    assert np.array(o.twist.covariance).reshape(6, 6)[0, 0] == pytest.approx(1e-3, abs=1e-12)
