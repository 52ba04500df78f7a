"""The optional extras of ``mechanism_model_core`` (setup.py's ``extras_require``) and the install line an
error names when one is missing.

The packages are not on PyPI, so installing an extra by the package's name fails ("No matching
distribution"); what always works is installing the third-party package itself, or the extra from a source
checkout by folder (``pip install './mechanism_model_core[collision]'``).
"""

from __future__ import annotations

#: extra -> the PyPI distributions it installs (setup.py ``extras_require``, without version bounds)
EXTRAS: dict[str, tuple[str, ...]] = {
    "kindsl": ("lark",),
    "render": ("matplotlib",),
    "yaml": ("PyYAML",),
    "trajectory": ("toppra",),
    "mesh": ("trimesh", "pycollada"),
    "collision": ("coal",),
    "eaik": ("eaik",),
    "reach": ("h5py", "tqdm"),
    "dask": ("distributed",),
    "xacro": ("xacro",),
}


def install_hint(extra: str) -> str:
    """How to install ``extra``: ``"pip install coal (the 'collision' extra; from a source checkout: pip
    install './mechanism_model_core[collision]')"``."""
    return (f"pip install {' '.join(EXTRAS[extra])} (the {extra!r} extra; from a source checkout: "
            f"pip install './mechanism_model_core[{extra}]')")
