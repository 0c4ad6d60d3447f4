"""``python -m autotune.cli ...``: the ``autotune`` command."""

import sys

from autotune.cli import main

sys.exit(main())
