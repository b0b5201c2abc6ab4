"""``python -m primer.book build [--strict]``: the book's run step (``primer.book._command``)."""

from primer.book._command import main

raise SystemExit(main())
