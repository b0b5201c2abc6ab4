"""``python -m primer``: see ``primer.cli``."""

import sys

from primer.cli import main

sys.exit(main())
