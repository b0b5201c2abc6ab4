"""The book machinery: plan, execute, store, render, and the front ends that drive them.

It imports ``primer``; ``primer`` never imports it. Only the front end for
MkDocs imports MkDocs: the ``trace-book`` plugin (``primer.book.plugin``),
its ProperDocs twin, and its hook form ``primer.book.mkdocs_hook`` (the
book's ``hooks/traces.py`` re-exports it); everything else also works under
a plain ``markdown.Markdown``, under Zensical (through the Markdown
extension), and as a command (``python -m primer.book build``).

The public names are these (``__all__``); the modules are the
implementation. Each is imported on first use, so a build with traces off,
which imports the plugin and so this package, loads none of the engine::

    from primer.book import Book, TraceExtension, TraceBookPlugin
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from primer.book.build import Book
    from primer.book.chapters import Chapters
    from primer.book.configuration import BookConfig, read_config
    from primer.book.html_cache import HtmlCache
    from primer.book.lock import BuildLock
    from primer.book.markdown import TraceExtension
    from primer.book.options import TraceBookConfig
    from primer.book.plugin import TraceBookPlugin
    from primer.book.render import render_payloads, render_traces
    from primer.book.report import Report
    from primer.book.source import ChapterTraces, LiveStatus, TraceSource
    from primer.book.sources import MockRunSource
    from primer.book.store import TraceStore
    from primer.book.trace_file import CorruptTrace

__all__ = [
    "Book",
    "BookConfig",
    "BuildLock",
    "ChapterTraces",
    "Chapters",
    "CorruptTrace",
    "HtmlCache",
    "LiveStatus",
    "MockRunSource",
    "Report",
    "TraceBookConfig",
    "TraceBookPlugin",
    "TraceExtension",
    "TraceSource",
    "TraceStore",
    "read_config",
    "render_payloads",
    "render_traces",
]

# Each public name's module.
_HOMES = {
    "Book": "build",
    "BookConfig": "configuration",
    "BuildLock": "lock",
    "ChapterTraces": "source",
    "Chapters": "chapters",
    "CorruptTrace": "trace_file",
    "HtmlCache": "html_cache",
    "LiveStatus": "source",
    "MockRunSource": "sources",
    "Report": "report",
    "TraceBookConfig": "options",
    "TraceBookPlugin": "plugin",
    "TraceExtension": "markdown",
    "TraceSource": "source",
    "TraceStore": "store",
    "read_config": "configuration",
    "render_payloads": "render",
    "render_traces": "render",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'primer.book' has no attribute {name!r}")
    return getattr(importlib.import_module(f"primer.book.{home}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
