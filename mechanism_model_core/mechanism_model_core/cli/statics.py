"""``mechanism-model statics MODEL``: gravity torques, centre of mass and, for a mechanism standing on
contacts, the contact loads and the tip-over margin."""

from __future__ import annotations

import json
import math

import numpy as np

from .. import statics as st
from ..locomotion.wheeled import WheeledLocomotorModel
from ..terrain import Plane
from .common import CommandError, configuration, fmt, load, model_arg, q_args


def add_parser(subparsers):
    sp = subparsers.add_parser(
        "statics", help="gravity torques, centre of mass, wheel/foot loads, tip-over margin",
        description="Joint torques that hold the mechanism against gravity (and a payload), its mass and centre "
                    "of mass; with --contacts, the contact forces (passive joints carry nothing), slip and "
                    "lift-off flags, the actuated joints' torques and the force-angle stability margin.")
    model_arg(sp)
    q_args(sp)
    sp.add_argument("--gravity", nargs=3, type=float, default=(0.0, 0.0, -9.81), metavar=("GX", "GY", "GZ"),
                    help="m/s^2 in the root frame (default 0 0 -9.81)")
    sp.add_argument("--payload", action="append", default=[], metavar="FRAME=KG",
                    help="a point mass at a frame's origin (repeatable)")
    sp.add_argument("--contacts", metavar="FRAMES",
                    help="comma-separated contact frames, or 'wheels' for every <wheel>_contact frame")
    sp.add_argument("--friction", type=float, default=0.6, help="friction coefficient (default 0.6)")
    sp.add_argument("--slope", type=float, default=0.0,
                    help="a plane rising at this angle (rad, or deg with --degrees) towards --direction: a wheeled "
                         "model (one with a mobility description) with --contacts wheels is settled on it with "
                         "lift-off (loads at the rim contacts, the margin of the wheels in contact); any other "
                         "mechanism is not moved, only the contact normals tilt (about the root frame's y axis). "
                         "A slope of 0 without --sweep settles nothing: the loads are those of --q as given")
    sp.add_argument("--direction", type=float, default=0.0,
                    help="direction the slope rises towards (rad, or deg with --degrees, from the root frame's x "
                         "about z; default 0: uphill ahead)")
    sp.add_argument("--sweep", type=float, metavar="MAX",
                    help="wheeled models: settle on slopes from 0 to MAX towards --direction and report the first "
                         "slope where a wheel lifts and the slope where the rover tips")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    return sp


def run(args) -> int:

    mech = load(args.model)
    q = configuration(mech, args.q, args.degrees)
    g = np.array(args.gravity, dtype=float)
    if not np.all(np.isfinite(g)):
        raise CommandError("--gravity needs three finite numbers")
    payloads = []
    for item in args.payload:
        frame, _, kg = item.partition("=")
        try:
            payloads.append(st.Payload(frame, float(kg)))
        except ValueError:
            raise CommandError(f"--payload {item!r}: expected FRAME=KG") from None
    tau = st.gravity_torques(mech, q, g, payloads)
    M = st.total_mass(mech) + sum(p.mass for p in payloads)
    out = {"model": mech.name, "mass": M, "gravity_torques": dict(zip(mech.independent_coordinates, tau.tolist()))}
    if M > 0:
        out["center_of_mass"] = st.center_of_mass(mech, q, payloads=payloads).tolist()
    # settling applies when a slope or a sweep is asked for; on level ground the loads are those of the
    # configuration given (the same answer as contact_loads at --q)
    settle = args.contacts == "wheels" and (args.slope != 0.0 or args.sweep is not None)
    wheeled = _wheeled(mech) if settle else None
    if wheeled is not None:
        return _run_wheeled(args, mech, q, g, wheeled, out)
    if args.contacts:
        slope = math.radians(args.slope) if args.degrees else args.slope
        normal = (-math.sin(slope), 0.0, math.cos(slope))       # rot_y(slope) applied to +z
        if args.contacts == "wheels":
            contacts = st.wheel_contacts(mech, normal, args.friction)
            if not contacts:
                raise CommandError(f"model {mech.name!r} has no <wheel>_contact frames")
        else:
            contacts = [st.Contact(f.strip(), normal, args.friction) for f in args.contacts.split(",") if f.strip()]
        loads = st.contact_loads(mech, q, contacts, g, payloads=payloads)
        stab = st.mechanism_stability(mech, q, contacts, g, payloads=payloads)
        out["contacts"] = [{"frame": c.frame, "force": f.tolist(), "normal_force": float(n), "slip": bool(s),
                            "lift": bool(li)} for c, f, n, s, li in zip(loads.contacts, loads.forces,
                                                                      loads.normal_forces, loads.slip, loads.lift)]
        out["equilibrium"] = loads.equilibrium
        out["actuated_torques"] = loads.actuated_torques
        out["force_angle_margin"] = stab.margin
        out["tipover_direction"] = stab.tipover_direction.tolist()
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{mech.name}: mass {M:.3f} kg" + (f", centre of mass {np.round(out['center_of_mass'], 4).tolist()} m"
                                              if "center_of_mass" in out else ""))
    print("gravity torques (N m or N) that hold it:")
    for c, v in out["gravity_torques"].items():
        print(f"  {c:30s} {fmt(v)}")
    if args.contacts:
        print("contact loads (terrain on mechanism, N):" + ("" if loads.equilibrium else
                                                            "  NOT in equilibrium: it cannot stand there"))
        for item in out["contacts"]:
            flags = " ".join(w for w, on in (("SLIP", item["slip"]), ("LIFT", item["lift"])) if on)
            print(f"  {item['frame']:30s} normal {fmt(item['normal_force'])}  force "
                  + " ".join(fmt(v) for v in item["force"]) + (f"  {flags}" if flags else ""))
        print("actuated joint torques with these contacts:")
        for c, v in loads.actuated_torques.items():
            print(f"  {c:30s} {fmt(v)}")
        print(f"force-angle margin {stab.margin:.4g} N rad (angle {stab.angle:.4g} rad), tips towards "
              f"{np.round(stab.tipover_direction, 3).tolist()} about {[contacts[i].frame for i in stab.edge]}")
    return 0


def _wheeled(mech):
    """The model's wheeled locomotor when it has a mobility description in its files (the model file's
    ``<Mobility>`` or a mobility YAML beside it, both read into its metadata by ``load_model``), else None."""
    if not (mech.metadata or {}).get("mobility"):
        return None
    try:
        return WheeledLocomotorModel(mech)
    except Exception:
        return None


def _run_wheeled(args, mech, q, g, W, out) -> int:
    """``--contacts wheels`` on a wheeled model: settle with lift-off on the slope (and sweep)."""

    angle = (lambda v: math.radians(v)) if args.degrees else float
    slope, direction = angle(args.slope), angle(args.direction)
    if not abs(slope) < math.pi / 2:
        raise CommandError("--slope must be below 90 degrees")
    plane = Plane.from_slope(slope, direction)
    r = W.settle_with_lift_off(plane, 0.0, 0.0, 0.0, q0=q, gravity=g)
    if r.loads is None:
        raise CommandError(f"{mech.name}: cannot settle on the slope: {r.reason}")
    margin = W.tipover_margin(plane, r.q, method="support_polygon", gravity=g) if not r.tips else None
    out["slope"] = {"slope": slope, "direction": direction, "tips": r.tips, "reason": r.reason,
                    "lifted": [W.names[i] for i in r.lifted],
                    "support_polygon_margin": None if margin is None else margin.margin}
    out["wheels"] = [{"wheel": n, "normal_force": float(f), "force": F.tolist(), "in_contact": bool(c)}
                     for n, f, F, c in zip(W.names, r.loads.normal, r.loads.forces, r.in_contact)]
    if args.sweep is not None:
        top = angle(args.sweep)
        if not 0 < top < math.pi / 2:
            raise CommandError("--sweep MAX must be between 0 and 90 degrees")
        sw = W.slope_sweep(np.linspace(0.0, top, 13), direction, gravity=g, tol=1e-4)
        out["sweep"] = {"first_lift": sw.first_lift, "first_lift_wheels": sw.first_lift_wheels, "tip": sw.tip}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    unit = (lambda v: f"{math.degrees(v):.3f} deg") if args.degrees else (lambda v: f"{v:.5f} rad")
    print(f"{mech.name}: mass {out['mass']:.3f} kg, settled on a {unit(slope)} slope rising towards {unit(direction)}")
    print("wheel loads at the rim contacts (terrain on the wheel, N):")
    for w in out["wheels"]:
        print(f"  {w['wheel']:24s} normal {fmt(w['normal_force'])}" + ("" if w["in_contact"] else "  LIFTED"))
    if r.tips:
        print(f"TIPS OVER: {r.reason}")
    else:
        print(f"support polygon margin {margin.margin:.4g} m (wheels in contact)")
    if "sweep" in out:
        sw = out["sweep"]
        print("slope sweep: first lift " + ("none" if sw["first_lift"] is None else
                                           f"{unit(sw['first_lift'])} ({', '.join(sw['first_lift_wheels']) or 'no wheel leaves the ground before the tip'})")
              + ", tip " + ("none" if sw["tip"] is None else unit(sw["tip"])))
    return 0
