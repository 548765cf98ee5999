"""``python -m tnpx.cli ...``: the ``tnpx`` command (what the long runs and ``torchrun`` call)."""

import sys

from .commands import main

sys.exit(main())
