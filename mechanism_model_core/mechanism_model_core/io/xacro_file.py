"""xacro files, expanded with the real ``xacro`` package (PyPI ``xacro``, the optional extra ``xacro``) and read
as URDF: ``load_model("robot.urdf.xacro", xacro_args={"prefix": "r1_"})``.

* ``xacro_args`` are the ``name:=value`` arguments of ``xacro`` (``<xacro:arg>`` defaults apply to the
  others);
* ``$(find pkg)`` resolves through :mod:`.packages` (``--package-path``/``MM_PACKAGE_PATH``,
  ``ROS_PACKAGE_PATH``, the ament index, folders beside the file), so it works in pip-only installs; a
  package that is not found is an error naming it, the file that asked for it and where it was looked for;
* every file xacro opens (the top file and each ``<xacro:include>``) is read through the same size limit
  and refusal of entity declarations as every model file (:mod:`.safe_xml`); the expansion is then read by
  the URDF reader like any URDF (its size limit, urdfdom's semantics, errors with lines).

Line numbers of errors found after the expansion are lines of the expanded text (xacro keeps no map back
to its sources): such errors name the file as ``robot.urdf.xacro (xacro expansion)``; ``mechanism-model
convert robot.urdf.xacro robot.urdf`` writes an expansion whose lines they are. Errors of xacro itself
(an undefined property, a missing argument, a bad include) name the file xacro was reading.
"""

from __future__ import annotations

import os
import threading

from ..errors import ModelFileError
from ..package_paths import find_package
from .safe_xml import _refuse_entity_declarations, read_limited
from .urdf import loads_urdf
from ..extras import install_hint

_lock = threading.Lock()     # xacro keeps its state in module globals


def _xacro():
    try:
        import xacro
        import xacro.substitution_args
    except ImportError:
        raise ModelFileError(f"reading xacro files needs the xacro package: {install_hint('xacro')}") from None
    return xacro


def expand_xacro(path, xacro_args: dict | None = None) -> str:
    """The URDF text that ``xacro path name:=value ...`` prints (see the module docstring)."""
    path = os.path.abspath(os.fspath(path))
    xacro = _xacro()
    subst = xacro.substitution_args
    _refuse_entity_declarations(read_limited(path), path)
    mappings = {str(k): str(v) for k, v in (xacro_args or {}).items()}
    with _lock:
        original_find, original_parse = subst._eval_find, xacro.parse

        def current_file():
            stack = [f for f in (getattr(xacro, "filestack", None) or []) if f]
            return os.path.abspath(stack[-1]) if stack else path

        def find(pkg):
            return find_package(pkg, current_file())

        def parse(inp, filename=None):
            if inp is None and filename is not None:
                full = os.path.join(getattr(xacro, "root_dir", ""), filename)
                data = read_limited(full)
                _refuse_entity_declarations(data, full)
                inp = data.decode("utf-8")
            return original_parse(inp, filename)

        subst._eval_find, xacro.parse = find, parse
        try:
            doc = xacro.process_file(path, mappings=mappings)
            return doc.toxml()
        except ModelFileError:
            raise
        except Exception as exc:    # xacro raises XacroException, ExpatError, NameError, ... for bad input
            inner = exc
            while inner is not None and not isinstance(inner, ModelFileError):
                inner = getattr(inner, "exc", None)       # XacroException wraps the cause
            if inner is not None:                         # ours (a package not found, an unsafe include)
                raise inner from None
            where = current_file()
            raise ModelFileError(f"xacro: {type(exc).__name__ if not str(exc) else ''}{exc}", where) from None
        finally:
            subst._eval_find, xacro.parse = original_find, original_parse
            xacro.init_stacks(None)


def load_xacro(path, *, xacro_args: dict | None = None, **options):
    """Expand ``path`` with xacro (``xacro_args``) and read the result as URDF (``options`` as
    :func:`~mechanism_model_core.io.urdf.load_urdf`); the mechanism's ``source`` is ``path``."""
    path = os.fspath(path)
    text = expand_xacro(path, xacro_args)
    return loads_urdf(text, name=f"{path} (xacro expansion)", model_file=path, **options)
