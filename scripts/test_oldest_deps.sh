#!/usr/bin/env bash
# The core's test suite against the oldest numpy / scipy / lxml it supports (requirements-oldest.txt), in a
# separate virtual environment (.venv-oldest). Tests that need Pinocchio or matplotlib skip there.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV_OLDEST:-.venv-oldest}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r requirements-oldest.txt ./mechanism_model_core \
  2> >(grep -v 'is ignored: it is neither' >&2)
"$VENV/bin/python" -c "import numpy, scipy, lxml.etree as e; print('oldest deps: numpy', numpy.__version__, 'scipy', scipy.__version__, 'lxml', '.'.join(map(str, e.LXML_VERSION[:3])))"
export MM_OLDEST_DEPS=1   # optional extras are absent here: their tests skip (they fail if absent in the main run)
exec "$VENV/bin/pytest" test/core "$@"
