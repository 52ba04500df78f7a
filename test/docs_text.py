"""The commands a README or docs page shows, read from its text, so that tests run them as written and a doc
edit that breaks one fails its test. Shared by the tests that execute documented commands."""

from __future__ import annotations

import os
import shlex
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def doc_lines(doc: str, prefix: str, heading: str | None = None) -> list[str]:
    """The command lines starting with ``prefix`` in the fenced shell blocks (```bash or a bare ```) of ``doc``
    (a path from the checkout's top), only between ``heading`` and the next ``## `` heading when given;
    backslash continuations joined, a trailing ``# comment`` dropped."""
    with open(os.path.join(TOP, doc), encoding="utf-8") as fh:
        text = fh.read()
    if heading is not None:
        assert heading in text, f"{doc} has no heading {heading!r}"
        text = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks, block, lang = [], None, None
    for line in text.splitlines(keepends=True):      # fences in order: an opening one carries the language
        if line.startswith("```"):
            if block is None:
                block, lang = [], line[3:].strip()
            else:
                if lang in ("", "bash", "sh"):
                    blocks.append("".join(block))
                block = None
        elif block is not None:
            block.append(line)
    return [line.split(" # ")[0].strip() for block in blocks
            for line in block.replace("\\\n", " ").splitlines() if line.strip().startswith(prefix)]


def venv_argv(line: str) -> list[str]:
    """A documented line as its argv, its first word the console script this interpreter's environment
    installed (``mechanism-model``, ``mechanism-model-serve``)."""
    argv = shlex.split(line)
    script = os.path.join(os.path.dirname(sys.executable), argv[0])
    assert os.path.exists(script), f"{argv[0]} is not installed beside {sys.executable}"
    return [script, *argv[1:]]
