"""``python -m primer.book build [--strict]`` or ``new DIR``: the book's commands (``primer.book._configuration``)."""

from primer.book._configuration import main

raise SystemExit(main())
