"""The book machinery: plan, execute, store, render, and the front ends that drive them.

It imports ``primer``; ``primer`` never imports it. Only the front end for
MkDocs imports MkDocs: the ``trace-book`` plugin (``primer.book.plugin``),
its ProperDocs twin, and its hook form ``primer.book.mkdocs_hook`` (the
book's ``hooks/traces.py`` re-exports it); everything else also works under
a plain ``markdown.Markdown``, under Zensical (through the Markdown
extension), and as a command (``python -m primer.book build``).
"""
