"""``python -m mechanism_model_core``: the ``mechanism-model`` command."""

import sys

from .cli import main

sys.exit(main())
