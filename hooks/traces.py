"""MkDocs hook: the book's traces in its pages (``primer.book.mkdocs_hook``, shipped in the package).

MkDocs names a hook by its file, so the book keeps this one line; another
book that uses the package keeps the same line in a file of its own.
"""

from primer.book.mkdocs_hook import *  # noqa: F403
