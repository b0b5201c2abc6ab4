"""The book machinery: plan, execute, store, render, and the front ends that drive them.

It imports ``primer``; ``primer`` never imports it. One module imports
MkDocs, the hook's adapter ``primer.book.mkdocs_hook`` (MkDocs and ProperDocs
run it; the book's ``hooks/traces.py`` re-exports it); everything else also
works under a plain ``markdown.Markdown``, under Zensical (through the
Markdown extension), and as a command (``python -m primer.book build``).
"""
