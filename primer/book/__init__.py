"""The book machinery: finding markers, storing traces, rendering them.

It imports ``primer``; ``primer`` never imports it. Only ``hooks/`` imports
MkDocs: everything here also works under a plain ``markdown.Markdown``.
"""
