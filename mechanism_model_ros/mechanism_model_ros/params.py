"""ROS 2 parameter files (``ros__parameters`` YAML) for the Cyclone transport, read as rcl/rclpy read them.

A section applies to a node when its key, with a leading ``/`` added, matches the node's fully qualified
name, ``/*`` standing for one namespace level and ``/**`` for any number (``/**``, ``/**/state_publisher``,
``/rover1/state_publisher``, a bare ``state_publisher`` = ``/state_publisher`` only, i.e. the node in the root
namespace). Keys may also be nested maps (``rover1: {state_publisher: {ros__parameters: ...}}``). Every
matching section applies, in file order: later sections override earlier ones.
"""

from __future__ import annotations

import re

import yaml
from mechanism_model_core.io.yaml_lines import bounded_loader

from .param_values import coerce_parameter, float_from_text, parse_override  # noqa: F401 (public here too)


def _sections(data: dict, path: str = ""):
    """``(node key, parameters)`` of every ``ros__parameters`` section, in file order."""
    for key, value in data.items():
        if key == "ros__parameters":
            if isinstance(value, dict):
                yield path, value
        elif isinstance(value, dict):
            yield from _sections(value, f"{path}/{key}" if path else str(key))


def section_matches(key: str, node_fqn: str) -> bool:
    """Whether parameter-file section ``key`` applies to the node named ``node_fqn`` (rclpy's rule:
    ``/*`` -> one level ``(/\\w+)``, ``/**`` -> any number of levels ``(/\\w+)*``)."""
    key = key if key.startswith("/") else "/" + key
    pattern = ""
    for part in re.split(r"(/\*)", key):
        if part == "/*":
            pattern += r"(/\w+)"
        elif part.startswith("*") and pattern.endswith(r"(/\w+)"):     # the second star of "/**"
            pattern += "*" + re.escape(part[1:])
        else:
            pattern += re.escape(part)
    return re.fullmatch(pattern, node_fqn) is not None


def node_fqn(node_name: str, namespace: str = "/") -> str:
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    return f"{ns}/{node_name}"


class ParameterFileError(ValueError):
    """A parameter file that cannot be read or is not a ROS 2 parameter file; the message names the file
    (and the line, for YAML syntax errors)."""


def read_parameter_file(path: str) -> dict:
    """The YAML mapping of a ROS 2 parameter file; :class:`ParameterFileError` when it is missing,
    unreadable, not YAML or not a mapping."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=bounded_loader(yaml))  # noqa: S506 -- SafeLoader, depth/alias bounds
    except FileNotFoundError:
        raise ParameterFileError(f"parameter file {path!r} does not exist") from None
    except IsADirectoryError:
        raise ParameterFileError(f"parameter file {path!r} is a directory") from None
    except OSError as exc:
        raise ParameterFileError(f"cannot read parameter file {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ParameterFileError(f"parameter file {path!r} is not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParameterFileError(f"parameter file {path!r}{where}: not valid YAML ({problem})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ParameterFileError(f"parameter file {path!r}: a ROS parameter file is a mapping of node names "
                                 f"to {{ros__parameters: ...}}, got a {type(data).__name__}")
    return data


def load_parameter_file(path: str, node_name: str, namespace: str = "/") -> dict:
    """``{parameter: value}`` for ``node_name`` in ``namespace`` from a ROS 2 parameter file; nested keys are
    joined with dots as in ROS (``ik.timeout``). :class:`ParameterFileError` for a file that cannot be
    used."""
    data = read_parameter_file(path)
    fqn = node_fqn(node_name, namespace)
    out: dict = {}
    for key, params in _sections(data):
        if section_matches(key, fqn):
            out.update(_flatten(params))
    return out


def _flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out
