"""``ros2 launch mechanism_model_ros rover.launch.py`` on real ROS 2 Humble with real ros2_control
(ros2_control_node, mock_components/GenericSystem, the spawner), the way a user starts the rover:

* every controller of the model's motor groups and joint_state_broadcaster become active;
* ``/cmd_vel`` turns the wheels in ``/joint_states`` (the core's wheel rates for that twist) and odometry moves;
* ``/compute_ik``, ``/compute_statics`` and ``/check_state_validity`` answer SUCCESS (the nodes' Python has
  the collision extra, as the package declares);
* with ``hardware:=`` a plugin that is not installed the launch stops at once, naming the plugin and the
  installed ones, with no process started.

* a real RViz 2 (headless, ``system/rviz_shots.py``) with the shipped ``rviz/rover.rviz`` draws the driven
  rover: pixels of the chassis' amber where the rover stands, none with the RobotModel display off, and no
  display in Error in the Displays panel (the detector itself is checked on a screenshot with a fixed frame
  nobody publishes, where RobotModel and the global status are in Error); the same with the state
  publisher and locomotor served over the Cyclone transport next to ros2_control_node.

Skipped without ROS 2 Humble + ros2_control (+ rviz2 for the screenshots); failed instead in CI. The PNGs
stay in the test's temporary folder.
"""

import contextlib
import math
import os
import re
import shlex
import signal
import time

import numpy as np
import pytest
import yaml

from mechanism_model_core import forward_kinematics, load_model
from mechanism_model_core.library import model_path
from mechanism_model_core.locomotion.wheeled import WheeledLocomotorModel

from ros import ros_env
from ros.dds_helpers import configure_this_process, start_serve, stop, wait_for
from system import rviz_shots

pytestmark = [pytest.mark.ros, pytest.mark.rclpy, pytest.mark.slow, pytest.mark.serial]

MODEL = "rocky8/rocky8_rover.xml"
CONTROLLERS = ["joint_state_broadcaster", "steering_controller", "wheel_controller", "mast_controller",
               "arm_controller"]


def collision_pythonpath(domain: int) -> str:
    """PYTHONPATH for ROS processes with the collision extra: this interpreter's ``coal`` (a cmeel wheel
    built for CPython 3.11 and numpy's stable ABI) next to the workspace's paths; Debian has no coal."""
    coal = pytest.importorskip("coal", reason="needs the collision extra (coal)")
    site = os.path.dirname(os.path.dirname(os.path.abspath(coal.__file__)))
    return os.pathsep.join([ros_env.ros_env(domain)["PYTHONPATH"], site])


def launch_doc_command(domain: int, prefix: str, replace: dict | None = None, name: str = "rover_launch",
                       **env) -> ros_env.RosProcess:
    """Start the one README/docs command that begins with ``prefix``, as written (by bash, in the sourced
    workspace), with the texts of ``replace`` (placeholders) replaced."""
    found = list(doc_commands(prefix))
    assert len(found) == 1, (prefix, found)
    command = found[0]
    for old, new in (replace or {}).items():
        assert old in command, (old, command)
        command = command.replace(old, new)
    return ros_env.start(["bash", "-c", "exec " + command], domain, name=name, **env)


def active_controllers(domain: int) -> dict[str, str]:
    p = ros_env.ros2("control", "list_controllers", domain_id=domain, timeout=30)
    text = re.sub(r"\x1b\[[0-9;]*m", "", p.stdout)
    return {m.group(1): m.group(2) for m in re.finditer(r"^(\S+)\s+\S+\s+(\w+)\s*$", text, re.M)}


@pytest.fixture(scope="module")
def rover():
    if not os.path.exists("/opt/ros/humble/lib/controller_manager/ros2_control_node"):
        ros_env.require("humble")
        if ros_env.required():
            pytest.fail("ros2_control is missing from /opt/ros/humble")
        pytest.skip("needs ros2_control (ROS 2 Humble)")
    d = ros_env.domain()
    # docs/ros.md's "your own model, no RViz" line as written, its placeholder replaced by Rocky 8's file
    proc = launch_doc_command(d, "ros2 launch mechanism_model_ros rover.launch.py model:=/path/to/my_rover.xml",
                              {"/path/to/my_rover.xml": model_path(MODEL)}, PYTHONPATH=collision_pythonpath(d))
    configure_this_process(d)
    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    ctx = CycloneContext(d, env=dict(os.environ, ROS_DISTRO="humble"))
    node = CycloneNode("mm_rover_launch_test", context=ctx)
    joint_states, odom = {}, []

    def on_js(msg):
        vel = list(msg.velocity) or [0.0] * len(msg.name)
        for n, p, v in zip(msg.name, msg.position, vel):
            joint_states[n] = (float(p), float(v))
    node.create_subscription("/joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT, on_js)
    node.create_subscription("/odom", "nav_msgs/msg/Odometry", qos.DEFAULT, odom.append)
    try:
        state = {}
        assert wait_for(lambda: state.update(active_controllers(d)) or
                        all(state.get(c) == "active" for c in CONTROLLERS) or not proc.running(), 120, 1.0), \
            (state, proc.output()[-6000:])
        assert all(state.get(c) == "active" for c in CONTROLLERS), (state, proc.output()[-6000:])
        generated = generated_dir(proc.output())
        yield d, proc, node, joint_states, odom
    finally:
        node.close()
        ctx.close()
        text = proc.stop()
        ros_env.stop_daemon(d)
    assert "Traceback" not in text, text[-6000:]
    assert_generated_files_removed_last(generated, text)
    # Humble's current invocation: robot_description from the topic, not the deprecated parameter; spawner
    # (not spawner.py) with --controller-manager. (joint_trajectory_controller's own notice about
    # allow_nonzero_velocity_at_trajectory_end stays: the legged node's gait cycles end in motion.)
    ours = [line for line in text.splitlines() if "eprecated" in line and "allow_nonzero_velocity" not in line]
    assert not ours, ours


def generated_dir(output: str) -> str:
    """The launch's directory of generated files, as its first log line names it."""
    m = re.search(r"generated files in (\S+)", output)
    assert m, output[-3000:]
    return m.group(1)


def assert_generated_files_removed_last(generated: str, output: str) -> None:
    """After the launch: its generated files are gone, and were removed after every process it started had
    exited (the controller manager, which shutdown_delay keeps up after the signal, could read them to the
    end)."""
    assert not os.path.exists(generated), (generated, os.listdir(generated))
    lines = output.splitlines()
    removed = [k for k, line in enumerate(lines) if f"removed the launch's generated files ({generated})" in line]
    exits = [k for k, line in enumerate(lines) if re.search(r"\]: process (has finished|has died|started)", line)]
    assert len(removed) == 1 and exits and max(exits) < removed[0], (removed, exits, output[-4000:])


def _process_group_cmdlines(pgid: int) -> list[list[str]]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == pgid:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    out.append(fh.read().decode(errors="replace").split("\0"))
        except (OSError, ProcessLookupError):
            pass
    return out


def test_every_generated_file_is_in_the_launch_directory(rover):
    """ros2_control_node's YAML and the nodes' parameter files (robot_description among them) are all in the
    launch's own directory, not launch_ros' /tmp/launch_params_* files that nobody removes."""
    d, proc, node, joint_states, odom = rover
    generated = generated_dir(proc.output())
    assert {"controllers.yaml", "robot_description.yaml", "state_publisher.yaml", "locomotor.yaml"} <= set(
        os.listdir(generated))
    files = {c[k + 1] for c in _process_group_cmdlines(proc.pid) for k, a in enumerate(c[:-1])
             if a == "--params-file"}
    assert os.path.join(generated, "controllers.yaml") in files, files
    assert os.path.join(generated, "robot_description.yaml") in files, files
    assert all(os.path.dirname(f) == generated for f in files), files


def test_cmd_vel_turns_the_wheels_and_odometry_follows(rover):
    d, proc, node, joint_states, odom = rover
    core = WheeledLocomotorModel(load_model(model_path(MODEL)))
    drive = [w.drive_joint for w in core.wheels]
    twist = (0.1, 0.0, 0.0)                           # m/s straight ahead
    want = core.drive(twist, mode="auto").rates       # rad/s per wheel, the core's answer
    Twist = node.message_class("geometry_msgs/msg/Twist")
    pub = node.create_publisher("/cmd_vel", "geometry_msgs/msg/Twist", __import__(
        "mechanism_model_ros.qos", fromlist=["DEFAULT"]).DEFAULT)
    assert wait_for(lambda: pub.subscription_count > 0, 30)
    msg = Twist()
    msg.linear.x = twist[0]

    def turning():
        pub.publish(msg)
        return all(j in joint_states for j in drive) and np.allclose(
            [joint_states[j][1] for j in drive], want, atol=1e-6)
    assert wait_for(turning, 60, 0.05), ({j: joint_states.get(j) for j in drive}, list(want))
    odom.clear()
    assert wait_for(lambda: pub.publish(msg) or len(odom) >= 10, 30, 0.05)
    last = odom[-1]
    assert last.header.frame_id == "odom" and last.child_frame_id == "chassis"
    assert math.isclose(last.twist.twist.linear.x, twist[0], abs_tol=1e-3)
    x0 = odom[0].pose.pose.position.x
    assert wait_for(lambda: pub.publish(msg) or odom[-1].pose.pose.position.x > x0 + 0.005, 30, 0.05)


def test_the_docs_cmd_vel_command_turns_the_wheels_and_ctrl_c_stops_them(rover):
    """README's and docs/ros.md's ``ros2 topic pub -r 10 /cmd_vel ...`` run as written with the real ``ros2``
    CLI against the launched rover: ros2_control_node's ``/joint_states`` show every wheel at the core's rate
    for the command's twist; after Ctrl-C on the publisher (the README: "the wheels stop") they are at rest."""
    d, proc, node, joint_states, odom = rover
    commands = doc_commands("ros2 topic pub -r 10 /cmd_vel")
    assert len(commands) == 1 and sorted(next(iter(commands.values()))) == ["README.md", "docs/ros.md"], commands
    command = next(iter(commands))
    argv = shlex.split(command)
    assert argv[:6] == ["ros2", "topic", "pub", "-r", "10", "/cmd_vel"] and argv[6] == "geometry_msgs/msg/Twist", argv
    sent = yaml.safe_load(argv[7])
    twist = (sent.get("linear", {}).get("x", 0.0), sent.get("linear", {}).get("y", 0.0),
             sent.get("angular", {}).get("z", 0.0))
    assert twist != (0.0, 0.0, 0.0), sent
    core = WheeledLocomotorModel(load_model(model_path(MODEL)))
    drive = [w.drive_joint for w in core.wheels]
    want = core.drive(twist, mode="auto").rates       # rad/s per wheel

    def rates():
        return [joint_states.get(j, (0.0, math.nan))[1] for j in drive]
    assert wait_for(lambda: np.allclose(rates(), 0.0, atol=1e-9), 30, 0.05), rates()   # at rest before
    pub = ros_env.start(["bash", "-c", "exec " + command], d, name="docs_cmd_vel")
    try:
        assert wait_for(lambda: np.allclose(rates(), want, atol=1e-6) or not pub.running(), 60, 0.05), \
            (rates(), list(want), pub.output()[-2000:])
        assert pub.running(), pub.output()[-2000:]
    finally:
        out = pub.stop()                 # SIGINT: Ctrl-C
    assert "Traceback" not in out, out[-2000:]
    assert wait_for(lambda: np.allclose(rates(), 0.0, atol=1e-9), 30, 0.05), rates()


def test_the_docs_manipulator_service_calls_move_the_mast(rover):
    """docs/ros.md's ``ros2 service call /manipulator/execute_trajectory ...`` and ``.../point_at ...`` as written
    (real ``ros2`` CLI) against the launched rover's manipulator node and the real joint_trajectory_controller:
    both SUCCESS, and ros2_control_node's ``/joint_states`` show the mast at the trajectory's end point."""
    d, proc, node, joint_states, odom = rover
    calls = doc_commands("ros2 service call /manipulator/")
    assert len(calls) == 2, calls
    execute = next(c for c in calls if "/execute_trajectory" in c)
    sent = yaml.safe_load(shlex.split(execute)[-1])["trajectory"]
    end = dict(zip(sent["joint_names"], sent["points"][-1]["positions"]))
    for command in (execute, next(c for c in calls if "/point_at" in c)):
        p = ros_env.run(["bash", "-c", command], d, timeout=120)
        reply = re.search(r"error_code=mechanism_model_msgs\.msg\.ErrorCodes\(val=(-?\d+)\), message='([^']*)'",
                          p.stdout)
        # the reply's code and message first: pytest shortens a long stdout in the middle, where they are
        assert p.returncode == 0 and reply is not None and reply.group(1) == "1", \
            (reply and reply.groups(), command, p.stdout[-2000:], p.stderr[-2000:])
        if command is execute:     # the trajectory was waited for: the mast is there
            assert all(abs(joint_states[j][0] - q) < 1e-3 for j, q in end.items()), (end, joint_states)


def _call(node, name, srv_type, data):
    from mechanism_model_ros.client_cli import fill_message
    client = node.create_client(name, srv_type)
    assert client.wait_for_service(60), name
    req = client.request()
    fill_message(req, data, srv_type + "_Request")
    for attempt in range(2):      # one retry: a reply can be lost right after discovery on a loaded machine
        try:
            return client.call(req, 60)
        except TimeoutError:
            if attempt:
                raise


def test_ik_statics_and_validity_services_answer_success(rover):
    d, proc, node, joint_states, odom = rover
    ik = _call(node, "/compute_ik", "mechanism_model_msgs/srv/ComputeIK", {
        "constraints": [{"kind": 1, "link_name": "arm_turret", "reference_frame": "chassis",
                         "target": {"position": {"x": 1.1, "y": 0.1, "z": -0.1}}}],
        "active_joints": ["arm_yaw", "arm_shoulder", "arm_elbow", "arm_wrist", "arm_turret"],
        "timeout": {"sec": 10}})      # the server's cap (max_ik_timeout): a safety net, not its 1 s default
    assert ik.error_code.val == 1, ik.message
    statics = _call(node, "/compute_statics", "mechanism_model_msgs/srv/ComputeStatics",
                    {"payload_links": ["arm_tool"], "payload_masses": [2.0]})
    assert statics.error_code.val == 1 and len(statics.effort) > 0, statics.message
    valid = _call(node, "/check_state_validity", "mechanism_model_msgs/srv/CheckStateValidity", {})
    assert valid.error_code.val == 1, valid.message


def test_an_unknown_hardware_plugin_stops_the_launch_before_anything_starts():
    ros_env.require("humble")
    d = ros_env.domain()
    # docs/ros.md's "any hardware_interface plugin" line as written: its example plugin is not installed here
    proc = launch_doc_command(d, "ros2 launch mechanism_model_ros rover.launch.py hardware:=my_vendor_hardware/",
                              PYTHONPATH=collision_pythonpath(d))
    try:
        assert wait_for(lambda: not proc.running(), 60, 0.2), proc.output()[-4000:]
        assert proc.proc.returncode != 0
    finally:
        text = proc.stop()
    assert "hardware plugin 'my_vendor_hardware/MySystem' is not installed" in text, text[-4000:]
    assert "mock_components/GenericSystem" in text          # the installed ones are named
    assert "process started" not in text, text[-4000:]      # no half-started robot


ROBOT_REGION = (slice(250, 650), slice(550, 1100))   # where the rover stands in the 3D view (camera on odom)


def _installed_config(kind: str = "rover") -> str:
    return os.path.join(ros_env.workspace("humble"), "install", "share", "mechanism_model_ros", "rviz",
                        f"{kind}.rviz")


def _assert_rover_drawn(d, tmp_path, tag):
    """Screenshots with the shipped config, with RobotModel off, and with a fixed frame nobody publishes."""
    config = _installed_config()
    on = rviz_shots.take(d, config, str(tmp_path / f"{tag}_rover.png"))
    if rviz_shots.amber_pixels(on, ROBOT_REGION) < 500 or rviz_shots.error_pixels(on):
        # a loaded machine: RViz may not have drawn everything yet after 15 s; once more with twice the time
        on = rviz_shots.take(d, config, str(tmp_path / f"{tag}_rover.png"), seconds=30)
    off = rviz_shots.take(d, rviz_shots.config_copy(config, str(tmp_path / "off.rviz"), robot_model=False),
                          str(tmp_path / f"{tag}_robot_model_off.png"))
    drawn, without = rviz_shots.amber_pixels(on, ROBOT_REGION), rviz_shots.amber_pixels(off, ROBOT_REGION)
    # (the TF axes' antialiased red-green edges give a few dozen orange pixels without the robot)
    assert drawn >= 500 and without * 20 < drawn, (drawn, without, str(tmp_path))
    assert rviz_shots.error_pixels(on) == 0, ("a display is in Error", str(tmp_path))
    log = open(str(tmp_path / f"{tag}_rover.log"), errors="replace").read()
    assert "incompatible QoS" not in log and "Could not load resource" not in log, log[-3000:]
    return on


def test_rviz_draws_the_driven_rover_with_every_status_ok(rover, tmp_path):
    d, proc, node, joint_states, odom = rover
    _assert_rover_drawn(d, tmp_path, "rclpy")
    # the error detector can fail: a fixed frame nobody publishes puts RobotModel and the global status in Error
    bad = rviz_shots.take(d, rviz_shots.config_copy(_installed_config(), str(tmp_path / "bad.rviz"),
                                                    fixed_frame="nowhere"), str(tmp_path / "bad_frame.png"))
    assert rviz_shots.error_pixels(bad) > 200, str(tmp_path)


def test_rviz_draws_the_rover_served_over_the_cyclone_transport(tmp_path):
    """The state publisher and locomotor of ``serve --transport cyclone`` (no rclpy) with the launch's
    description, next to the real ros2_control_node: RViz (rclpy on rmw_cyclonedds) draws the rover alike."""
    import json

    from mechanism_model_ros.bringup_plan import plan
    from ros.ros2_control_env import ControlledRobot
    rviz_shots.require_rviz()
    ros_env.require("humble")
    d = ros_env.domain()
    p = plan(load_model(model_path(MODEL)))
    params = tmp_path / "description.yaml"
    params.write_text("/**:\n  ros__parameters:\n    robot_description: " + json.dumps(p.robot_description) + "\n")
    with ControlledRobot(MODEL, d, tmp_path, controllers=["steering_controller", "wheel_controller"]) as robot:
        server = start_serve(d, "--transport", "cyclone", "--model", MODEL, "--nodes", "state_publisher,locomotor",
                             "--params-file", str(params), env={"ROS_DISTRO": "humble"})
        try:
            Twist = robot.node.message_class("geometry_msgs/msg/Twist")
            cmd = robot.publisher("cmd_vel", "geometry_msgs/msg/Twist")
            msg = Twist()
            msg.linear.x = 0.1
            wheel = WheeledLocomotorModel(robot.mechanism).wheels[0].drive_joint
            assert wait_for(lambda: cmd.publish(msg) or abs(robot.joint_states.get(wheel, (0, 0))[1]) > 0.1,
                            60, 0.05), robot.joint_states
            _assert_rover_drawn(d, tmp_path, "cyclone")
        finally:
            out, err = stop(server)
        assert "Traceback" not in err, err[-3000:]


def test_the_docs_bringup_rviz_and_joint_states_commands(tmp_path):
    """The README's no-motors block as written: ``ros2 launch mechanism_model_ros bringup.launch.py
    floating_joints:=always`` (its overrides on the command line, no launch_ros parameter file), then ``rviz2 -d
    $(ros2 pkg prefix ...)/rover.rviz -f ground`` (headless, ``rviz_shots.take_command``) draws the rover --
    chassis amber where it stands, against a screenshot with RobotModel off -- with no display in Error; then
    ``ros2 topic pub -r 10 -t 10 -w 3 /joint_states ... arm_shoulder 0.5`` moves the arm on ``/tf`` to the core's
    forward kinematics at that angle."""
    rviz_shots.require_rviz()
    ros_env.require("humble")
    launch_line = "ros2 launch mechanism_model_ros bringup.launch.py floating_joints:=always"
    launches = doc_commands(launch_line)
    rviz = doc_commands("rviz2 ")
    pubs = {c: docs for c, docs in doc_commands("ros2 topic pub").items() if " /joint_states " in c}
    assert sorted(launches.get(launch_line, [])) == ["README.md", "docs/ros.md"], launches
    assert len(rviz) == 1 and len(pubs) == 1, (rviz, pubs)
    frame = shlex.split(next(iter(rviz)))[-1]
    d = ros_env.domain()
    proc = ros_env.start(["bash", "-c", "exec " + launch_line], d, name="docs_bringup",
                         PYTHONPATH=collision_pythonpath(d))
    try:
        assert ros_env.wait_for_messages(d, "/tf_static", "tf2_msgs/msg/TFMessage", timeout=60), proc.output()
        # the package's parameter file and the override in the launch's own directory (no launch_params_*)
        params = {c[k + 1] for c in _process_group_cmdlines(proc.pid) for k, a in enumerate(c[:-1])
                  if a == "--params-file"}
        generated = {os.path.dirname(p) for p in params if not p.endswith("/mechanism_model_ros/config/rocky8.yaml")}
        assert len(generated) == 1 and os.path.basename(next(iter(generated))).startswith("mechanism_model_launch_"), \
            params
        shot = str(tmp_path / "docs_rviz.png")
        on = rviz_shots.take_command(d, next(iter(rviz)), shot)
        if rviz_shots.amber_pixels(on, ROBOT_REGION) < 500 or rviz_shots.error_pixels(on):
            on = rviz_shots.take_command(d, next(iter(rviz)), shot, seconds=30)    # a loaded machine: more time
        off = rviz_shots.take(d, rviz_shots.config_copy(_installed_config(), str(tmp_path / "off.rviz"),
                                                        robot_model=False, fixed_frame=frame),
                              str(tmp_path / "docs_robot_model_off.png"))
        drawn, without = rviz_shots.amber_pixels(on, ROBOT_REGION), rviz_shots.amber_pixels(off, ROBOT_REGION)
        assert drawn >= 500 and without * 20 < drawn, (drawn, without, str(tmp_path))
        assert rviz_shots.error_pixels(on) == 0, ("a display is in Error", str(tmp_path))
        log = open(str(tmp_path / "docs_rviz.log"), errors="replace").read()
        assert "incompatible QoS" not in log and "Could not load resource" not in log, log[-3000:]

        # the README's joint state, then /tf at it
        model = load_model(model_path(MODEL))
        sent = yaml.safe_load(shlex.split(next(iter(pubs)))[-1])
        with tf_verdicts(d, model, dict(zip(sent["name"], sent["position"]))) as verdicts:
            pub = ros_env.run(["bash", "-c", next(iter(pubs))], d, timeout=60)
            assert pub.returncode == 0, pub.stdout[-2000:] + pub.stderr[-2000:]
            moved = wait_for(lambda: (True, True) in verdicts, 30, 0.05)
    finally:
        text = proc.stop()
        ros_env.stop_daemon(d)
    assert "Traceback" not in text, text[-4000:]
    assert not os.path.exists(next(iter(generated))), "the launch's generated files stayed"
    # (a single message, `ros2 topic pub --once`, even with -w 3, was lost in about 1 of 3 runs: the state
    # publisher's best-effort subscription drops a sample that arrives before it has discovered the writer;
    # hence the README's ten)
    assert moved, "README's joint state did not move the arm on /tf"


def test_the_docs_bringup_of_another_robot_serves_it():
    """docs/ros.md's ``bringup.launch.py params_file:=$(ros2 pkg prefix ...)/config/mer_idd.yaml`` as written:
    the MER IDD's description on ``robot_description`` and its frames on ``/tf_static``; no traceback."""
    ros_env.require("humble")
    d = ros_env.domain()
    proc = launch_doc_command(d, "ros2 launch mechanism_model_ros bringup.launch.py params_file:=", name="docs_mer",
                              PYTHONPATH=collision_pythonpath(d))
    try:
        desc = ros_env.wait_for_messages(d, "/robot_description", "std_msgs/msg/String", timeout=60)
        assert desc and '<robot name="mer_idd"' in desc[0].data, (desc[:1], proc.output()[-3000:])
        static = ros_env.wait_for_messages(d, "/tf_static", "tf2_msgs/msg/TFMessage", timeout=60)
        frames = {f for m in static for t in m.transforms for f in (t.header.frame_id, t.child_frame_id)}
        mer = set(load_model(model_path("mer/mer_idd.xml")).frame_names)
        assert frames and frames <= mer, (frames - mer, frames)
        # every node has started serving before the launch is stopped: the state publisher's messages can come
        # while another node is still importing, and a Ctrl-C then is a KeyboardInterrupt in the import (ci20)
        assert wait_for(lambda: _all_nodes_serving(proc.output()) or not proc.running(), 60, 0.1), \
            proc.output()[-3000:]
    finally:
        text = proc.stop()
        ros_env.stop_daemon(d)
    assert "Traceback" not in text, text[-4000:]


def _all_nodes_serving(text: str) -> bool:
    """Whether every mechanism_model node the launch started (``[INFO] [name-N]: process started``) has logged
    ``serving over`` (``serve.run_nodes``, once its nodes are made)."""
    started = set(re.findall(r"\[INFO\] \[([\w.]+-\d+)\]: process started", text))
    ours = {p for p in started if not p.startswith(("rviz2", "ros2_control_node", "spawner", "robot_state_publisher"))}
    serving = set(re.findall(r"\[([\w.]+-\d+)\] \[INFO\] \[mechanism_model_ros\.serve\] serving over", text))
    return bool(ours) and ours <= serving


@contextlib.contextmanager
def tf_verdicts(domain: int, model, values: dict):
    """While open, a list of ``(at_values, moved)`` per ``/tf`` message received: whether every transform between
    frames of the model (parent to child; not the URDF's helper links of a floating joint) is the core's forward
    kinematics at the joint ``values`` (the others at home) within 1e-6, and whether one is not at home."""
    from scipy.spatial.transform import Rotation

    from mechanism_model_ros import qos
    from mechanism_model_ros.transports.cyclone import CycloneContext, CycloneNode
    fk, home = forward_kinematics(model, values), forward_kinematics(model, {})
    frames = set(model.frame_names)
    verdicts = []

    def on_tf(msg):
        at_values, moved = True, False
        for t in msg.transforms:
            if not {t.header.frame_id, t.child_frame_id} <= frames:
                continue
            T = np.eye(4)
            r = t.transform.rotation
            T[:3, :3] = Rotation.from_quat([r.x, r.y, r.z, r.w]).as_matrix()
            T[:3, 3] = [t.transform.translation.x, t.transform.translation.y, t.transform.translation.z]
            rel = lambda k: np.linalg.inv(k.pose(t.header.frame_id)) @ k.pose(t.child_frame_id)
            at_values &= bool(np.allclose(T, rel(fk), atol=1e-6))
            moved |= not np.allclose(T, rel(home), atol=1e-6)
        verdicts.append((at_values, moved))
    configure_this_process(domain)
    ctx = CycloneContext(domain)
    node = CycloneNode("mm_docs_tf_listener", context=ctx)
    try:
        node.create_subscription("/tf", "tf2_msgs/msg/TFMessage", qos.DEFAULT, on_tf)
        yield verdicts
    finally:
        node.close()
        ctx.close()


@pytest.mark.parametrize("launch_file, controllers, mover", [
    ("rover.launch.py", CONTROLLERS, "/locomotor"),
    ("walker.launch.py", ["joint_state_broadcaster", "legs_controller"], "/legged"),
    ("arm.launch.py", ["joint_state_broadcaster", "arm_controller"], "/manipulator"),
])
def test_the_docs_rover_walker_and_arm_launches_bring_up_their_controllers_nodes_and_rviz(launch_file, controllers,
                                                                                        mover):
    """The docs' ``ros2 launch mechanism_model_ros rover.launch.py`` (Rocky 8: locomotor), ``walker.launch.py``
    (LEMUR: legged node) and ``arm.launch.py`` (MER IDD: manipulator node) as written, RViz included (under
    Xvfb): their controllers active, the node that moves them, the servers and rviz2 running."""
    rviz_shots.require_rviz()
    if not os.path.exists("/opt/ros/humble/lib/controller_manager/ros2_control_node"):
        pytest.skip("needs ros2_control (ROS 2 Humble)")
    d = ros_env.domain()
    command = f"ros2 launch mechanism_model_ros {launch_file}"
    assert command in doc_commands(command), doc_commands(command)
    proc = ros_env.start(["xvfb-run", "-a", "-s", "-screen 0 1280x800x24 +extension GLX", "bash", "-c",
                          "exec " + command], d, name=launch_file,
                         PYTHONPATH=collision_pythonpath(d), LIBGL_ALWAYS_SOFTWARE="1", QT_QPA_PLATFORM="xcb")
    try:
        state = {}
        assert wait_for(lambda: state.update(active_controllers(d)) or
                        all(state.get(c) == "active" for c in controllers) or not proc.running(), 120, 1.0), \
            (state, proc.output()[-6000:])
        assert all(state.get(c) == "active" for c in controllers), (state, proc.output()[-6000:])
        nodes = set()
        want = {mover, "/state_publisher", "/kinematics_server", "/statics_server", "/rviz2"}
        assert wait_for(lambda: nodes.update(ros_env.ros2("node", "list", domain_id=d, timeout=30).stdout.split())
                        or want <= nodes, 60, 1.0), (nodes, proc.output()[-4000:])
        running = proc.output()      # (at the end the test's SIGINT to the whole group also stops Xvfb)
        assert "Traceback" not in running and "process has died" not in running, running[-6000:]
    finally:
        proc.stop()
        ros_env.stop_daemon(d)


def _docs_block(heading: str) -> list[str]:
    """The commands of the first shell block after ``heading`` in docs/ros.md (continuations joined)."""
    with open(os.path.join(ros_env.TOP, "docs", "ros.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split(heading, 1)[1].split("```bash", 1)[1].split("```", 1)[0].replace("\\\n", " ")
    return [line.strip() for line in block.splitlines() if line.strip()]


def doc_commands(prefix: str) -> dict[str, list[str]]:
    """Every command line starting with ``prefix`` in README.md's and docs/ros.md's shell blocks (continuations
    joined, a trailing ``# comment`` dropped): ``{command: [documents that give it]}``."""
    found: dict[str, list[str]] = {}
    for doc in ("README.md", os.path.join("docs", "ros.md")):
        with open(os.path.join(ros_env.TOP, doc), encoding="utf-8") as fh:
            text = fh.read()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                line = line.split(" # ")[0].strip()
                if line.startswith(prefix):
                    found.setdefault(line, []).append(doc)
    return found


def test_the_docs_by_hand_commands_bring_up_the_rover(tmp_path):
    """docs/ros.md's "By hand" block run as written (its output folder moved to the test's): the export, the
    state publisher with the exported description, ros2_control_node reading it from the topic and the
    spawner: every controller active, and no deprecation notice of ours."""
    if not os.path.exists("/opt/ros/humble/lib/controller_manager/ros2_control_node"):
        ros_env.require("humble")
        pytest.skip("needs ros2_control (ROS 2 Humble)")
    commands = [c.replace("/tmp/rocky8", str(tmp_path)) for c in _docs_block("### By hand")]
    assert [c.split()[:3] for c in commands] == [["mechanism-model", "ros2-control", "rocky8/rocky8_rover.xml"],
                                                  ["ros2", "run", "mechanism_model_ros"],
                                                  ["ros2", "run", "controller_manager"],
                                                  ["ros2", "run", "controller_manager"]], commands
    d = ros_env.domain()
    export = ros_env.run(["bash", "-c", commands[0]], d, timeout=120)
    assert export.returncode == 0, export.stdout + export.stderr
    background = [ros_env.start(["bash", "-c", "exec " + c], d, name=f"by_hand_{k}") for k, c in
                  enumerate(commands[1:3])]
    try:
        spawn = ros_env.run(["bash", "-c", commands[3] + " --controller-manager-timeout 60"], d, timeout=180)
        assert spawn.returncode == 0, spawn.stdout[-3000:] + spawn.stderr[-3000:] + background[1].output()[-3000:]
        state = active_controllers(d)
        assert all(state.get(c) == "active" for c in CONTROLLERS), state
        control = background[1].output()
        assert "Received robot description" in control or "robot description" in control.lower(), control[-3000:]
        assert "[Deprecated] Passing the robot description parameter" not in control, control[-3000:]
    finally:
        for p in background:
            p.stop()
        ros_env.stop_daemon(d)


def test_a_launch_shutdown_stops_the_wheels_while_cmd_vel_still_drives_them(rover):
    """Ctrl-C on the launch while a planner still sends ``/cmd_vel`` at 20 Hz (so no cmd_vel watchdog can be
    what stops them): the controller manager outlives the locomotor (``shutdown_delay``), so the locomotor's
    stop command reaches the wheel controller; the first ``/joint_states`` stamped at least 0.5 s after the
    signal shows every wheel at rest. Judged by the controller manager's stamps (the same system clock as the
    signal's time), not by when this process happens to receive them. Runs last: it ends the launch."""
    import threading

    d, proc, node, joint_states, odom = rover
    core = WheeledLocomotorModel(load_model(model_path(MODEL)))
    drive = [w.drive_joint for w in core.wheels]
    stamped = []                                   # (header stamp in s, wheel rates in rad/s)

    def on_js(msg):
        rates = dict(zip(msg.name, list(msg.velocity) or [0.0] * len(msg.name)))
        if all(j in rates for j in drive):
            stamped.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, [rates[j] for j in drive]))
    from mechanism_model_ros import qos
    node.create_subscription("/joint_states", "sensor_msgs/msg/JointState", qos.DEFAULT, on_js)
    Twist = node.message_class("geometry_msgs/msg/Twist")
    pub = node.create_publisher("/cmd_vel", "geometry_msgs/msg/Twist", qos.DEFAULT)
    msg = Twist()
    msg.linear.x = 0.1
    done = threading.Event()

    def planner():
        while not done.wait(0.05):
            pub.publish(msg)
    thread = threading.Thread(target=planner, daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: stamped and all(abs(v) > 1e-3 for v in stamped[-1][1]), 60, 0.05), stamped[-3:]
        t_signal = time.time()
        os.killpg(proc.proc.pid, signal.SIGINT)    # Ctrl-C: the whole launch's process group
        # every joint_states the controller manager still publishes is judged; it must include one stamped
        # at least 0.5 s after the signal
        assert wait_for(lambda: stamped and stamped[-1][0] >= t_signal + 0.5 or not proc.running(), 30, 0.02)
        after = [(t - t_signal, rates) for t, rates in stamped if t >= t_signal]
        late = [(round(dt, 3), rates) for dt, rates in after if dt >= 0.5 and any(abs(v) > 1e-9 for v in rates)]
        assert after and after[-1][0] >= 0.5, ("no joint_states 0.5 s after the signal", after[-5:])
        assert not late, (late[:5], [(round(dt, 3), rates) for dt, rates in after[:40]],
                          proc.output()[-5000:])
        first_zero = next(dt for dt, rates in after if all(abs(v) <= 1e-9 for v in rates))
        print(f"launch shutdown: wheels at rest {first_zero * 1e3:.0f} ms after Ctrl-C (controller stamps)")
    finally:
        done.set()
        thread.join(5)
