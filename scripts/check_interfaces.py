"""Validate every .msg/.srv of mechanism_model_msgs with ROS 2's own IDL tools and with rosbags.

1. rosidl_adapter (ROS 2's .msg/.srv -> .idl translator) converts each file to IDL, as
   rosidl_generate_interfaces does at build time;
2. rosidl_parser parses each IDL file (the parser every rosidl generator uses) and the result is checked
   (message names, a Request/Response pair per service);
3. rosbags parses each .msg/.srv (mechanism_model_ros.interfaces_store) and each generated .idl
   (rosbags' IDL parser), and both must give the same field names and types.

Run with a Python that has rosidl_adapter and rosidl_parser (Debian: python3-rosidl) for steps 1-2 and
with rosbags for step 3; a step whose tools are missing fails unless --allow-missing names it.
"""

import argparse
import os
import pathlib
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
PKG_DIR = os.path.join(TOP, "mechanism_model_msgs")
PKG = "mechanism_model_msgs"


def files():
    out = []
    for kind in ("msg", "srv"):
        d = os.path.join(PKG_DIR, kind)
        for f in sorted(os.listdir(d)):
            if f.endswith("." + kind):
                out.append((kind, os.path.join(d, f)))
    return out


def rosidl_check(outdir):
    from rosidl_adapter.msg import convert_msg_to_idl
    from rosidl_adapter.srv import convert_srv_to_idl
    from rosidl_parser.definition import IdlLocator, Message, Service
    from rosidl_parser.parser import parse_idl_file

    idls = []
    for kind, path in files():
        rel = os.path.relpath(path, PKG_DIR)
        conv = convert_msg_to_idl if kind == "msg" else convert_srv_to_idl
        idl = conv(pathlib.Path(PKG_DIR), PKG, pathlib.PurePosixPath(rel), pathlib.Path(outdir) / kind)
        idl_rel = os.path.relpath(str(idl), outdir)
        content = parse_idl_file(IdlLocator(outdir, idl_rel))
        base = os.path.splitext(os.path.basename(path))[0]
        if kind == "msg":
            msgs = content.content.get_elements_of_type(Message)
            assert len(msgs) == 1 and msgs[0].structure.namespaced_type.name == base, path
            assert msgs[0].structure.members, f"{path}: no members"
        else:
            srvs = content.content.get_elements_of_type(Service)
            assert len(srvs) == 1 and srvs[0].namespaced_type.name == base, path
            assert srvs[0].request_message.structure.namespaced_type.name == base + "_Request"
            assert srvs[0].response_message.structure.namespaced_type.name == base + "_Response"
        idls.append((kind, base, str(idl)))
        print(f"rosidl: {rel} -> {idl_rel}: ok")
    return idls


def rosbags_check(idls):
    sys.path.insert(0, os.path.join(TOP, "mechanism_model_ros"))
    from rosbags.typesys import get_types_from_idl
    from mechanism_model_ros.interfaces_store import own_types

    from_msg = own_types(PKG_DIR)
    print(f"rosbags: parsed {len(from_msg)} message definitions from .msg/.srv")
    for kind, base, idl in idls or []:
        with open(idl, encoding="utf-8") as fh:
            # rosbags' IDL parser does not take #include lines (they only name dependencies)
            text = "".join(line for line in fh if not line.startswith("#include"))
            from_idl = get_types_from_idl(text)
        names = [f"{PKG}/msg/{base}"] if kind == "msg" else [f"{PKG}/srv/{base}_Request",
                                                             f"{PKG}/srv/{base}_Response"]
        for n in names:
            assert n in from_idl, f"{idl}: rosbags' IDL parser found no {n}"
            a = [(f, t) for f, t in from_msg[n][1]]
            b = [(f, t) for f, t in from_idl[n][1]]
            assert a == b, f"{n}: .msg and .idl disagree:\n{a}\n{b}"
            ca = {c[0]: c[2] for c in from_msg[n][0]}
            cb = {c[0]: c[2] for c in from_idl[n][0]}
            assert ca == cb, f"{n}: constants disagree: {ca} vs {cb}"
        print(f"rosbags: {base}: .{kind} and generated IDL agree")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--step", choices=("rosidl", "rosbags", "all"), default="all")
    ap.add_argument("--idl-dir", help="keep the generated IDL here (default: a temporary directory)")
    args = ap.parse_args()
    outdir = args.idl_dir or tempfile.mkdtemp(prefix="mm_idl_")
    idls = None
    if args.step in ("rosidl", "all"):
        idls = rosidl_check(outdir)
    if args.step == "rosbags":
        idls = [(k, os.path.splitext(os.path.basename(p))[0],
                 os.path.join(outdir, k, os.path.splitext(os.path.basename(p))[0] + ".idl"))
                for k, p in files()]
        idls = [i for i in idls if os.path.exists(i[2])]
    if args.step in ("rosbags", "all"):
        rosbags_check(idls)
    print("interfaces: ok")


if __name__ == "__main__":
    main()
