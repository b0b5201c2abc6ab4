"""``python -m primer.book build [--strict]``: the book's run step (``primer.book.command``)."""

from primer.book.command import main

raise SystemExit(main())
