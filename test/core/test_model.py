"""The mechanism as a stateless, immutable, thread-safe model; coordinates, couplings, editing."""

import math
import threading

import numpy as np
import pytest

from mechanism_model_core import (InvalidConfiguration, Joint, MechanismBuilder, ModelStructureError, attach,
                                  edit, forward_kinematics, jacobian, save_model)
from mechanism_model_core.spatial import translation

from .robots import mixed_tree, planar_arm


def rocker_rover():
    """A rocker differential: right rocker = -left rocker; a bogie coupled non-linearly for the test."""
    b = MechanismBuilder("rocker")
    b.add_body("chassis", None, Joint.fixed("chassis_fix", translation(0, 0, 0.5)))
    b.add_body("left_rocker", "chassis", Joint.revolute("left_rocker", translation(0, 0.4, 0), axis=(0, 1, 0)))
    b.add_body("right_rocker", "chassis", Joint.revolute("right_rocker", translation(0, -0.4, 0), axis=(0, 1, 0),
                                                         coupling="-left_rocker"))
    b.add_body("left_bogie", "left_rocker", Joint.revolute("left_bogie", translation(-0.3, 0, -0.2),
                                                           axis=(0, 1, 0)))
    b.add_body("mast", "chassis", Joint.revolute("mast_pan"))
    b.add_body("mast_head", "mast", Joint.revolute("mast_tilt", translation(0, 0, 1), axis=(0, 1, 0),
                                                   coupling="0.5*sin(mast_pan) + 2*left_bogie"))
    return b.build()


def test_coordinate_order_is_documented_depth_first():
    m = mixed_tree()
    assert m.coordinate_names[:6] == ("base_float.x", "base_float.y", "base_float.z", "base_float.roll",
                                      "base_float.pitch", "base_float.yaw")
    # depth-first: the arm branch (inserted first) comes before the sled branch
    assert m.coordinate_names[6:] == ("shoulder", "slide", "wrist_ball.roll", "wrist_ball.pitch",
                                      "wrist_ball.yaw", "sled_plane.x", "sled_plane.y", "sled_plane.theta",
                                      "wheel_spin")
    assert m.nq == 15 and m.joint_slice("wrist_ball") == slice(8, 11)


def test_floating_joint_pose_follows_documented_rpy():
    m = mixed_tree()
    q = np.zeros(m.nq)
    q[:6] = [1, 2, 3, 0.1, 0.2, 0.3]
    T = forward_kinematics(m, q).pose("base")
    from scipy.spatial.transform import Rotation

    np.testing.assert_allclose(T[:3, :3], Rotation.from_euler("xyz", [0.1, 0.2, 0.3]).as_matrix(), atol=1e-12)
    np.testing.assert_allclose(T[:3, 3], [1, 2, 3 + 0.5], atol=1e-12)


def test_differential_and_nonlinear_couplings_fill_dependents():
    m = rocker_rover()
    assert m.independent_coordinates == ("left_rocker", "left_bogie", "mast_pan")
    q = m.configuration({"left_rocker": 0.2, "left_bogie": -0.1, "mast_pan": 0.4})
    assert q[m.coordinate_index("right_rocker")] == pytest.approx(-0.2)
    assert q[m.coordinate_index("mast_tilt")] == pytest.approx(0.5 * math.sin(0.4) - 0.2)
    # independent-only arrays, and batches of them
    Q = m.configuration(np.array([[0.2, -0.1, 0.4], [0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(Q[0], q)
    # measured joint states: an explicitly given dependent value is kept (a publisher reporting it wins);
    # otherwise a contradiction is an error (test_named_values.py)
    q2 = m.configuration({"left_rocker": 0.2, "right_rocker": 0.0}, measured=True)
    assert q2[m.coordinate_index("right_rocker")] == 0.0


def test_coupling_jacobian_matches_finite_differences():
    m = rocker_rover()
    qi = np.array([0.2, -0.1, 0.4])
    D = m.coupling_jacobian(m.configuration(qi))
    h = 1e-6
    for k in range(3):
        dq = np.zeros(3)
        dq[k] = h
        num = (m.configuration(qi + dq) - m.configuration(qi - dq)) / (2 * h)
        np.testing.assert_allclose(D[:, k], num, atol=1e-8)


def test_configuration_errors():
    m = planar_arm((1.0, 1.0))
    for bad in ([1.0], [[1.0, 2.0, 3.0]], [1.0, math.inf], {"joint1": "x"}, {"joint1": math.nan},
                np.zeros((2, 2, 2))):
        with pytest.raises(InvalidConfiguration):
            m.configuration(bad)


def test_mechanism_is_immutable():
    m = planar_arm()
    with pytest.raises(ValueError):
        m.lower_limits[0] = 0.0
    with pytest.raises(ValueError):
        m.joint("joint2").placement[0, 3] = 5.0
    with pytest.raises((AttributeError, TypeError)):
        m.joint("joint2").name = "x"
    before = forward_kinematics(m, [0.1, 0.2, 0.3]).pose("tool").copy()
    forward_kinematics(m, [1.0, 2.0, 3.0])   # no state is kept between calls
    np.testing.assert_array_equal(forward_kinematics(m, [0.1, 0.2, 0.3]).pose("tool"), before)


def test_editing_returns_a_new_mechanism():
    m = planar_arm((1.0, 0.5))
    b = edit(m)
    b.add_body("gripper", "link2", Joint.prismatic("finger", translation(0.5, 0, 0), axis=(1, 0, 0),
                                                   lower=0, upper=0.1))
    m2 = b.build()
    assert m.nq == 2 and m2.nq == 3 and "gripper" not in m.body_names
    np.testing.assert_allclose(forward_kinematics(m2, [0, 0, 0.05]).position("gripper"), [1.55, 0, 0])
    m3 = edit(m2).remove_body("link2").build()
    assert m3.body_names == ["ground", "link1"] and m3.nq == 1


def test_structure_errors():
    b = MechanismBuilder()
    b.add_body("a", None, Joint.revolute("j"))
    with pytest.raises(ModelStructureError, match="already exists"):
        b.add_body("a", None, Joint.revolute("k"))
    b.add_body("b", "a", Joint.revolute("j"))
    with pytest.raises(ModelStructureError, match="duplicate joint"):
        b.build()
    b2 = MechanismBuilder()
    b2.add_body("a", "missing", Joint.revolute("j"))
    with pytest.raises(ModelStructureError, match="parent 'missing'"):
        b2.build()
    b3 = MechanismBuilder()
    b3.add_body("a", None, Joint.revolute("j"))
    b3.add_frame("a", "a_tool")
    b3.add_body("a_tool", "a", Joint.revolute("k"))
    with pytest.raises(ModelStructureError, match="used twice"):
        b3.build()
    with pytest.raises(ModelStructureError, match="axis"):
        Joint.revolute("z", axis=(0, 0, 0))


def test_many_threads_get_the_answers_of_one():
    """CLARAty 4.7: one mechanism, many clients at once, the same answers as one thread."""
    m = mixed_tree()
    rng = np.random.default_rng(0)
    Q = m.random_configuration(rng, size=64)
    expected = [(forward_kinematics(m, q).pose("tool"), jacobian(m, q, "rim", "camera", "LOCAL")) for q in Q]
    errors = []
    barrier = threading.Barrier(8)

    def worker(offset):
        barrier.wait()
        for rep in range(20):
            for k in range(offset, len(Q), 3):
                T = forward_kinematics(m, Q[k]).pose("tool")
                J = jacobian(m, Q[k], "rim", "camera", "LOCAL")
                if not (np.array_equal(T, expected[k][0]) and np.array_equal(J, expected[k][1])):
                    errors.append(k)

    threads = [threading.Thread(target=worker, args=(i % 3,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_joint_reference_transform_agrees_with_compiled_kinematics():
    """Joint.transform (a plain product of elementary motions) against the compiled single pass."""
    m = mixed_tree()
    q = m.random_configuration(np.random.default_rng(4))
    fk = forward_kinematics(m, q)
    for spec in m.bodies[1:]:
        j = spec.joint
        T_parent = fk.pose(spec.parent)
        expected = T_parent @ j.transform(q[m.joint_slice(j.name)])
        np.testing.assert_allclose(fk.pose(spec.name), expected, atol=1e-12)


def test_ground_frames_mass_and_shapes_survive_editing():
    from mechanism_model_core import BoundingShape, MassProperties

    b = MechanismBuilder("site")
    b.add_frame("ground", "dock", translation(1, 2, 0), kind="mount")
    b.update_body("ground", mass=MassProperties(2.5))
    b.add_shape("ground", BoundingShape("floor", "box", translation(0, 0, -0.05), (10, 10, 0.1)))
    b.add_body("arm", "ground", Joint.revolute("j"))
    m = b.build()
    m2 = edit(m).build()
    assert m2.body("ground").mass.mass == 2.5 and m2.body("ground").shapes[0].name == "floor"
    np.testing.assert_allclose(forward_kinematics(m2, [0.0]).position("dock"), [1, 2, 0])
    # a frame of the ground is a mount point too
    m3 = attach(m, planar_arm((1.0,)), "dock", prefix="p_")
    np.testing.assert_allclose(forward_kinematics(m3, np.zeros(m3.nq)).position("p_tool"), [2, 2, 0])
    with pytest.raises(ModelStructureError):
        edit(m).remove_body("ground")


def doubled_elbow(home=(1.0, 0.0)):
    """joint2 = 2*joint1, both limited to [-pi, pi]: only |joint1| <= pi/2 keeps joint2 within its limits."""
    b = MechanismBuilder("doubled")
    b.add_body("l1", None, Joint.revolute("joint1", lower=-math.pi, upper=math.pi, home=(home[0],)))
    b.add_body("l2", "l1", Joint.revolute("joint2", translation(1, 0, 0), lower=-math.pi, upper=math.pi,
                                          home=(home[1],), coupling="2*joint1"))
    b.add_body("l3", "l2", Joint.prismatic("slide", translation(1, 0, 0), lower=0.0, upper=0.5))
    return b.build()


def test_random_configurations_keep_coupled_joints_within_their_limits():
    m = doubled_elbow()
    Q = m.random_configuration(np.random.default_rng(0), size=2000)
    assert Q.shape == (2000, 3)
    assert m.within_limits(Q).all()
    np.testing.assert_array_equal(Q[:, 1], 2 * Q[:, 0])
    # uniform over the feasible independent values: joint1 spreads over [-pi/2, pi/2], the slide over [0, 0.5]
    assert Q[:, 0].min() < -1.4 and Q[:, 0].max() > 1.4
    assert Q[:, 2].min() < 0.05 and Q[:, 2].max() > 0.45
    q = m.random_configuration(1)
    assert q.shape == (3,) and m.within_limits(q) and q[1] == 2 * q[0]


def test_random_configurations_when_a_coupling_contradicts_the_limits():
    # PR2's right parallel root joint mimics the finger with multiplier -1 but has limits [0, 0.548]: no
    # draw meets them; the coupling wins and the other coordinates stay within their limits
    b = MechanismBuilder("pr2_like")
    b.add_body("f", None, Joint.revolute("finger", lower=0.0, upper=0.548))
    b.add_body("p", None, Joint.revolute("parallel", lower=0.0, upper=0.548, coupling="-1.0*finger"))
    b.add_body("w", None, Joint.revolute("wrist", lower=-1.0, upper=1.0))
    m = b.build()
    Q = m.random_configuration(np.random.default_rng(2), size=500)
    np.testing.assert_array_equal(Q[:, 1], -Q[:, 0])
    assert ((Q[:, 0] >= 0) & (Q[:, 0] <= 0.548)).all() and (np.abs(Q[:, 2]) <= 1).all()


def test_home_obeys_the_couplings():
    m = doubled_elbow(home=(0.25, 0.0))      # the file's home of joint2 (0) contradicts its coupling
    np.testing.assert_array_equal(m.home, [0.25, 0.5, 0.0])
    np.testing.assert_array_equal(m.configuration(), [0.25, 0.5, 0.0])
    np.testing.assert_array_equal(m.configuration({"slide": 0.1}), [0.25, 0.5, 0.1])


def test_configuration_accepts_lists_integers_and_mappings_with_dependents():
    m = doubled_elbow()
    np.testing.assert_array_equal(m.configuration([1, 0]), [1.0, 2.0, 0.0])           # independent only
    np.testing.assert_array_equal(m.configuration(np.array([[1, 0], [0, 1]])), [[1, 2, 0], [0, 0, 1]])
    np.testing.assert_array_equal(m.configuration(np.array([1, 5, 0])), [1.0, 5.0, 0.0])  # full: as given
    np.testing.assert_array_equal(m.configuration([1, 5, 0], fill_couplings=True), [1.0, 2.0, 0.0])
    np.testing.assert_array_equal(m.configuration({"joint1": 0.5}), [0.5, 1.0, 0.0])
    # a measured state may give a dependent joint too: it is taken as given (otherwise: test_named_values)
    np.testing.assert_array_equal(m.configuration({"joint1": 0.5, "joint2": 0.7}, measured=True),
                                  [0.5, 0.7, 0.0])
    assert m.configuration(np.zeros((0, 2))).shape == (0, 3)
    for bad in ([[1, 2], [3]], [1, None], {"joint1": [1, 2]}, {"nobody": 1.0}, [1.0, math.nan],
                np.zeros((2, 2, 2)), [1, 2, 3, 4]):
        with pytest.raises(InvalidConfiguration):
            m.configuration(bad)


def test_attaching_keeps_the_appendage_grounds_frames_shapes_and_mass():
    from mechanism_model_core import BoundingShape, MassProperties
    from mechanism_model_core.spatial import rot_z

    leg = MechanismBuilder("leg")
    leg.add_body("thigh", None, Joint.revolute("hip", translation(0.1, 0, 0)))
    # the leg file's own ground carries a marker frame, a bounding box and a 2 kg point mass at x = 0.2
    leg.add_frame("ground", "hip_marker", translation(0.2, 0, 0), kind="mount")
    leg.add_shape("ground", BoundingShape("housing", "box", translation(0.2, 0, 0), (1, 1, 1)))
    leg.update_body("ground", mass=MassProperties(2.0, (0.2, 0, 0)))
    base = MechanismBuilder("bot")
    base.add_body("body", None, Joint.fixed("body_fix"), mass=MassProperties(1.0, (0, 0, 0)))
    base.add_frame("body", "m1", translation(0, 1, 0) @ rot_z(math.pi / 2))
    m = base.attach(leg.build(), "m1", prefix="l_").build()
    # the marker is where composing the transforms by hand puts it: (0, 1, 0) + Rz(90) (0.2, 0, 0)
    T = forward_kinematics(m, m.home).pose("l_hip_marker")
    np.testing.assert_allclose(T[:3, 3], [0, 1.2, 0], atol=1e-12)
    assert m.frame("l_hip_marker").body == "body"
    (shape,) = m.body("body").shapes
    assert shape.name == "l_housing"
    np.testing.assert_allclose(shape.transform[:3, 3], [0, 1.2, 0], atol=1e-12)
    # lumped mass: 1 kg at the origin and 2 kg at (0, 1.2, 0) -> 3 kg at (0, 0.8, 0); point masses m_i at
    # distances r_i from the axis: I = sum m_i r_i^2 about x and z through the centre of mass, 0 about y
    mp = m.body("body").mass
    assert mp.mass == pytest.approx(3.0)
    np.testing.assert_allclose(mp.com, [0, 0.8, 0], atol=1e-12)
    izz = 1.0 * 0.8 ** 2 + 2.0 * 0.4 ** 2
    np.testing.assert_allclose(mp.inertia, np.diag([izz, 0.0, izz]), atol=1e-12)


def test_readme_using_the_core_snippet_runs_as_written(monkeypatch):
    import os
    import re

    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(top, "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    section = readme.split("## Using the core", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(top)                   # the snippet names models/... relative to the repository
    ns: dict = {}
    exec(compile(code, "README.md (Using the core)", "exec"), ns)  # our own documentation, not input
    T, T_rel, J, V, fk = ns["T"], ns["T_rel"], ns["J"], ns["V"], ns["fk"]
    model = ns["model"]
    assert model.coordinate_names == ("joint1", "joint2", "joint3")
    # joint2 = 2*joint1 in the sample: the mapping filled it in
    np.testing.assert_allclose(fk.q, [0.3, 0.6, -0.1])
    np.testing.assert_allclose(T_rel, np.linalg.inv(fk.pose("link1")) @ T, atol=1e-12)
    assert J.shape == (6, 3)
    np.testing.assert_allclose(V, J @ np.ones(3), atol=1e-12)


def test_a_coupling_outside_its_domain_is_an_invalid_configuration_on_every_path():
    b = MechanismBuilder("log")
    b.add_body("a", None, Joint.revolute("j1"))
    b.add_body("b", "a", Joint.revolute("j2", coupling="log(j1)"))
    m = b.build()                                     # home j1 = 0: log(0) is undefined there
    np.testing.assert_allclose(m.configuration({"j1": 2.0}), [2.0, math.log(2.0)])
    for values in (None, {"j1": -1.0}, [-1.0], [[2.0], [-1.0]]):
        with pytest.raises(InvalidConfiguration):
            m.configuration(values)


def test_joint_rates_follow_the_couplings_by_the_chain_rule():
    m = rocker_rover()          # right_rocker = -left_rocker; mast_tilt = 0.5 sin(mast_pan) + 2 left_bogie
    q = m.configuration({"left_rocker": 0.2, "left_bogie": -0.1, "mast_pan": 0.4})
    rates = {"left_rocker": 0.3, "left_bogie": -0.2, "mast_pan": 0.5}
    # by hand: d(right_rocker) = -0.3; d(mast_tilt) = 0.5 cos(0.4) 0.5 + 2 (-0.2)
    expected = {"left_rocker": 0.3, "right_rocker": -0.3, "left_bogie": -0.2, "mast_pan": 0.5,
                "mast_tilt": 0.25 * math.cos(0.4) - 0.4}
    want = np.array([expected[c] for c in m.coordinate_names])
    np.testing.assert_allclose(m.joint_rates(q, rates), want, atol=1e-12)
    np.testing.assert_allclose(m.joint_rates(q, [0.3, -0.2, 0.5]), want, atol=1e-12)
    np.testing.assert_allclose(m.joint_rates(q, want), want)                 # full: as given
    assert m.joint_rates(q, {"left_bogie": 1})[m.coordinate_index("left_rocker")] == 0.0
    for bad in ({"nobody": 1.0}, [1.0], {"left_rocker": "x"}, [[1, 2], [3]], [math.inf, 0, 0]):
        with pytest.raises(InvalidConfiguration):
            m.joint_rates(q, bad)


def test_save_takes_the_format_of_save_model(tmp_path):
    from mechanism_model_core import load_model

    m = planar_arm((1.0, 0.5))
    save_model(m, tmp_path / "arm.robot", format="urdf")            # an extension that says nothing
    text = (tmp_path / "arm.robot").read_text()
    assert "<robot" in text
    (tmp_path / "arm.urdf").write_text(text)
    back = load_model(tmp_path / "arm.urdf")
    q1, q2 = 0.3, -0.7                                         # closed form of the planar arm's tool
    want = [math.cos(q1) + 0.5 * math.cos(q1 + q2), math.sin(q1) + 0.5 * math.sin(q1 + q2), 0.0]
    np.testing.assert_allclose(forward_kinematics(back, [q1, q2]).pose("tool")[:3, 3], want, atol=1e-12)


def test_frames_and_couplings_of_a_built_mechanism_cannot_be_changed():
    m = rocker_rover()
    T = translation(1, 0, 0)
    b = MechanismBuilder("f")
    b.add_body("a", None, Joint.revolute("j"), frames={"tool": T})
    m2 = b.build()
    T[0, 3] = 5.0                                   # the caller's array is not the model's
    assert forward_kinematics(m2, [0.0]).pose("tool")[0, 3] == 1.0
    with pytest.raises(TypeError):
        m2.body("a").frames["tool"] = np.eye(4)
    with pytest.raises(ValueError):
        m2.body("a").frames["tool"][0, 3] = 2.0
    with pytest.raises(TypeError):
        m.couplings["left_bogie"] = m.couplings["right_rocker"]


def test_a_mechanism_pickles_for_other_processes():
    import pickle

    from mechanism_model_core import load_model
    from mechanism_model_core.expressions import parse_expression
    from mechanism_model_core.library import model_path

    rover = load_model(model_path("rocky8/rocky8_rover.xml"))        # couplings, mounts, ground frames
    copy = pickle.loads(pickle.dumps(rover))
    assert copy.coordinate_names == rover.coordinate_names and dict(copy.couplings).keys() == rover.couplings.keys()
    q = rover.random_configuration(np.random.default_rng(3))
    independent = [q[rover.coordinate_index(c)] for c in rover.independent_coordinates]
    a, b = forward_kinematics(rover, independent), forward_kinematics(copy, independent)
    for f in rover.frame_names:
        np.testing.assert_array_equal(b.pose(f), a.pose(f))
    e = pickle.loads(pickle.dumps(parse_expression("k*x + M_PI", ["x"], {"k": 2.0})))
    assert e({"x": 1.0}) == pytest.approx(2.0 + math.pi)


def test_frame_velocity_takes_rates_by_name_and_follows_couplings():
    from mechanism_model_core import frame_velocity

    # a point on the right rocker away from its pivot, so that its linear velocity is not zero
    m = edit(rocker_rover()).add_frame("right_rocker", "right_tip", translation(0.3, 0, -0.2)).build()
    q = m.configuration({"left_rocker": 0.2})
    # the right rocker turns at -1 rad/s when the left one turns at +1: compare with finite differences
    h = 1e-6
    num = (forward_kinematics(m, {"left_rocker": 0.2 + h}).position("right_tip")
           - forward_kinematics(m, {"left_rocker": 0.2 - h}).position("right_tip")) / (2 * h)
    assert np.linalg.norm(num) > 0.1
    V = frame_velocity(m, q, {"left_rocker": 1.0}, "right_tip")
    np.testing.assert_allclose(V[:3], num, atol=1e-8)
    np.testing.assert_allclose(V[3:], [0, -1, 0], atol=1e-12)
    with pytest.raises(InvalidConfiguration):
        frame_velocity(m, q, {"nope": 1.0}, "right_tip")


# ----------------------------------------------------------- the builder parses couplings, the model takes them
def test_the_builder_parses_couplings_and_the_model_takes_finished_values():
    """Coupling text (``Joint.coupling``) is parsed by the builder (``parse_couplings``, through
    ``build_mechanism`` and ``MechanismBuilder.build``), dependencies first; ``Mechanism`` takes the parsed
    expressions as they are and refuses coupled joints without them (issue 23: the model parses nothing)."""
    from mechanism_model_core import Mechanism, build_mechanism
    from mechanism_model_core.builder import parse_couplings
    from mechanism_model_core.expressions import Expression

    m = rocker_rover()
    specs = list(m.bodies)
    parsed = parse_couplings(b.joint for b in specs[1:])
    assert list(parsed) == list(m.couplings) == ["right_rocker", "mast_tilt"]
    assert all(isinstance(e, Expression) for e in parsed.values())
    assert parsed["mast_tilt"].variables == m.couplings["mast_tilt"].variables == {"mast_pan", "left_bogie"}
    same = Mechanism(m.name, specs, m.ground, couplings=parsed)
    q = m.configuration({"left_rocker": 0.3, "mast_pan": 0.2, "left_bogie": -0.1})
    np.testing.assert_array_equal(same.apply_couplings(q), m.apply_couplings(q))
    np.testing.assert_array_equal(build_mechanism(m.name, specs, m.ground).home, m.home)
    with pytest.raises(ModelStructureError, match="build_mechanism"):
        Mechanism(m.name, specs, m.ground)                       # the text alone: the model does not parse it
    with pytest.raises(ModelStructureError, match="couplings given are for"):
        Mechanism(m.name, specs, m.ground, couplings={"right_rocker": parsed["right_rocker"]})


def test_the_model_refuses_couplings_out_of_dependency_order():
    from mechanism_model_core import Mechanism
    from mechanism_model_core.builder import parse_couplings

    b = MechanismBuilder("chain")
    b.add_body("a", None, Joint.revolute("j1"))
    b.add_body("b", "a", Joint.revolute("j2", coupling="2*j1"))
    b.add_body("c", "b", Joint.revolute("j3", coupling="j2 + 1"))
    m = b.build()
    parsed = parse_couplings(s.joint for s in m.bodies[1:])
    assert list(parsed) == ["j2", "j3"] and m.dependent_coordinates == ("j2", "j3")
    with pytest.raises(ModelStructureError, match="dependencies first"):
        Mechanism(m.name, list(m.bodies), m.ground, couplings={"j3": parsed["j3"], "j2": parsed["j2"]})
    with pytest.raises(ModelStructureError, match="circular joint couplings"):
        parse_couplings([Joint.revolute("x", coupling="y"), Joint.revolute("y", coupling="x")])


def test_the_model_offers_no_algorithm_methods():
    """As Pinocchio's Model (issue 23): poses, Jacobians, velocities, editing and saving are free functions
    (forward_kinematics, jacobian, frame_velocity, builder.edit/attach, io.save_model), not methods, and no
    string-keyed registry fills methods in at import time (the former provide_operation / _OPERATIONS)."""
    import mechanism_model_core.model as model_module
    from mechanism_model_core.model import Body, Mechanism

    m = planar_arm()
    for obj, names in ((m, ("edit", "save", "attach", "pose", "jacobian", "velocity", "forward_kinematics")),
                       (m.body(m.body_names[-1]), ("pose", "jacobian", "velocity"))):
        assert not [n for n in names if hasattr(obj, n)], type(obj).__name__
    assert isinstance(m, Mechanism) and Body is not None
    assert not [n for n in ("provide_operation", "_OPERATIONS") if hasattr(model_module, n)]
