"""``python -m benchmarks.network``: the command line is in ``cli``."""

import sys

from benchmarks.network.cli import main

sys.exit(main())
