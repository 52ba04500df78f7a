"""``mechanism-model ros2-control MODEL``: the ``<ros2_control>`` URDF block and the controller_manager YAML
from the model's motor groups (:mod:`mechanism_model_core.io.ros2_control`)."""

from __future__ import annotations

import os
import re

from ..io.ros2_control import COMMAND_TIMEOUT
from .common import CommandError, load, model_arg
from ..io.motor_groups import load_motor_groups
from ..io.ros2_control import controllers_yaml, ros2_control_element, timed, urdf_with_ros2_control
from ..locomotion import MotorGroups


def add_parser(subparsers):
    sp = subparsers.add_parser(
        "ros2-control", help="write the ros2_control URDF and controller YAML from the motor groups",
        description="Write the <ros2_control> block (mock_components/GenericSystem unless --hardware names "
                    "another plugin) and the controller_manager YAML (joint_state_broadcaster, one "
                    "forward_command_controller or joint_trajectory_controller per motor group) from the "
                    "model's <Motor_Group>s or a motor-group YAML file. Start ros2_control_node with "
                    "robot_description = the URDF and --params-file = the YAML. Without output options both "
                    "are printed.")
    model_arg(sp)
    sp.add_argument("--motors", metavar="FILE",
                    help="motor-group file (.yaml or CLARAty .xml); default: the model's own <Motor_Group>s")
    sp.add_argument("-o", "--output-dir", metavar="DIR",
                    help="write DIR/<robot>.urdf (the model's URDF with the block) and "
                         "DIR/<robot>_controllers.yaml")
    sp.add_argument("--urdf", metavar="FILE", help="write the model's URDF with the <ros2_control> block")
    sp.add_argument("--block", metavar="FILE", help="write only the <ros2_control> element (to paste into a "
                                                    "URDF or xacro of your own)")
    sp.add_argument("--controllers", metavar="FILE", help="write the controller_manager YAML")
    sp.add_argument("--hardware", metavar="PLUGIN",
                    help="hardware plugin (default: the definition's, else mock_components/GenericSystem)")
    sp.add_argument("--hardware-param", metavar="NAME=VALUE", action="append", default=[],
                    help="a <param> of the hardware (repeatable)")
    sp.add_argument("--update-rate", type=int, metavar="HZ", help="controller_manager update rate")
    sp.add_argument("--no-passive", action="store_true",
                    help="leave passive joints (rockers, bogies) out of the block (default: state interfaces)")
    sp.add_argument("--goal-tolerance", type=float, default=0.05, metavar="RAD",
                    help="joint_trajectory_controller goal position tolerance per joint (default 0.05)")
    sp.add_argument("--command-timeout", type=float, default=COMMAND_TIMEOUT, metavar="S",
                    help="seconds a velocity or effort group's last command applies before its controller "
                         "(mechanism_model_controllers/TimedForwardCommandController) writes zero "
                         f"(default {COMMAND_TIMEOUT}); 0: plain forward_command_controller, which never "
                         "stops by itself")
    return sp


def file_stem(robot_name: str) -> str:
    """A file name stem from a robot's name: characters other than letters, digits, ``_``, ``-`` and ``.``
    become ``_`` and leading dots go, so ``<robot name="../x">`` is ``_x``, never a path."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", robot_name or "").lstrip(".")
    return stem or "robot"


def inside(folder: str, name: str) -> str:
    """``folder/name``, refused (CommandError) unless it resolves to a file directly inside ``folder``."""
    path = os.path.join(folder, name)
    real_folder = os.path.realpath(folder)
    if os.path.dirname(os.path.realpath(path)) != real_folder:
        raise CommandError(f"{name!r} would be written outside {folder!r}; refused")
    return path


def run(args) -> int:
    mech = load(args.model)
    motors = load_motor_groups(mech, args.motors)
    if not len(motors):
        raise CommandError(f"{args.model}: the model defines no motor groups; add <Motor_Group> elements "
                           f"(models/README.md) or give --motors FILE.yaml")
    params = dict(motors.hardware_parameters)
    for item in args.hardware_param:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise CommandError(f"--hardware-param {item!r} is not NAME=VALUE")
        params[k.strip()] = v
    if args.hardware or args.hardware_param or args.update_rate:
        motors = MotorGroups(motors.groups, args.hardware or motors.hardware, params,
                             args.update_rate or motors.update_rate, motors.source)
    passive = not args.no_passive
    if args.command_timeout < 0 or args.command_timeout != args.command_timeout:
        raise CommandError(f"--command-timeout must be a number of seconds >= 0, got {args.command_timeout}")
    yaml_text = controllers_yaml(motors, goal_tolerance=args.goal_tolerance,
                                 command_timeout=args.command_timeout or None)
    outputs = []
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
        stem = file_stem(mech.name)
        for name, kind in ((f"{stem}.urdf", "urdf"), (f"{stem}_controllers.yaml", "yaml")):
            outputs.append((inside(args.output_dir, name), kind))
    if args.urdf:
        outputs.append((args.urdf, "urdf"))
    if args.block:
        outputs.append((args.block, "block"))
    if args.controllers:
        outputs.append((args.controllers, "yaml"))
    texts = {}

    def text(kind):
        if kind not in texts:
            if kind == "urdf":
                texts[kind] = urdf_with_ros2_control(mech, motors, passive_joints=passive)
            elif kind == "block":
                texts[kind] = ros2_control_element(mech, motors, passive_joints=passive)
            else:
                texts[kind] = yaml_text
        return texts[kind]

    if not outputs:
        print(text("block"), end="")
        print("---")
        print(text("yaml"), end="")
        return 0
    for path, kind in outputs:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text(kind))
        print(f"wrote {path}")
    groups = ", ".join(f"{g.name} ({g.controller.value}{' with command timeout' if timed(g, args.command_timeout or None) else ''}"
                       f", {g.interface.value}, {len(g)} joints)" for g in motors.groups)
    print(f"{mech.name}: {motors.hardware}; joint_state_broadcaster, {groups}")
    return 0
