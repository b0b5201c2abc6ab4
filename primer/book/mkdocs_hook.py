"""The ``trace-book`` plugin as a hook file's events (``primer.book._plugin``).

A book that names a hook file rather than the plugin keeps this one line in
it (this book's ``hooks/traces.py`` does)::

    from primer.book.mkdocs_hook import *  # noqa: F403

The events are those of one ``TraceBookPlugin`` made for the hook: one code
path for hook and plugin. MkDocs loads a hook file once per process, as it
keeps one plugin instance, so this instance lasts across ``mkdocs serve``
rebuilds as the plugin's does.
"""

from __future__ import annotations

from primer.book._plugin import TraceBookPlugin

__all__ = [
    "on_build_error",
    "on_config",
    "on_files",
    "on_page_content",
    "on_page_context",
    "on_page_markdown",
    "on_post_build",
    "on_serve",
    "on_startup",
]

_events = TraceBookPlugin.hook().events()
on_build_error = _events["on_build_error"]
on_config = _events["on_config"]
on_files = _events["on_files"]
on_page_content = _events["on_page_content"]
on_page_context = _events["on_page_context"]
on_page_markdown = _events["on_page_markdown"]
on_post_build = _events["on_post_build"]
on_serve = _events["on_serve"]
on_startup = _events["on_startup"]
