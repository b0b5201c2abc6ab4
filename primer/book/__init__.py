"""The book machinery: plan, execute, store, render, and the front ends that drive them.

It imports ``primer``'s trace core; ``primer`` never imports it. Only the MkDocs front end imports
MkDocs: the ``trace-book`` plugin, its ProperDocs twin and its hook form; the rest works under a
plain ``markdown.Markdown``, Zensical (through the extension) and ``python -m primer.book build``.
The public names are ``__all__``, each imported on first use (a build with traces off imports this
package and none of the engine); the modules are the implementation::

    from primer.book import Book, TraceExtension, TraceBookPlugin
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from primer.book.build import Book
    from primer.book.cache import TraceCache
    from primer.book.chapters import Chapters
    from primer.book.configuration import BookConfig, read_config
    from primer.book.lock import BuildLock
    from primer.book.markdown import TraceExtension
    from primer.book.options import TraceBookConfig
    from primer.book.plugin import TraceBookPlugin
    from primer.book.render import render_payloads, render_traces
    from primer.book.report import Report
    from primer.book.source import ChapterTraces, LiveStatus, TraceSource
    from primer.book.sources import MockRunSource
    from primer.book.store import TraceStore
    from primer.trace_file import UnreadableTrace

__all__ = [
    "Book",
    "BookConfig",
    "BuildLock",
    "ChapterTraces",
    "Chapters",
    "LiveStatus",
    "MockRunSource",
    "Report",
    "TraceBookConfig",
    "TraceBookPlugin",
    "TraceCache",
    "TraceExtension",
    "TraceSource",
    "TraceStore",
    "UnreadableTrace",
    "read_config",
    "render_payloads",
    "render_traces",
]

# Each public name's module.
_HOMES = {
    "Book": "primer.book.build",
    "BookConfig": "primer.book.configuration",
    "BuildLock": "primer.book.lock",
    "ChapterTraces": "primer.book.source",
    "Chapters": "primer.book.chapters",
    "LiveStatus": "primer.book.source",
    "MockRunSource": "primer.book.sources",
    "Report": "primer.book.report",
    "TraceBookConfig": "primer.book.options",
    "TraceBookPlugin": "primer.book.plugin",
    "TraceCache": "primer.book.cache",
    "TraceExtension": "primer.book.markdown",
    "TraceSource": "primer.book.source",
    "TraceStore": "primer.book.store",
    "UnreadableTrace": "primer.trace_file",
    "read_config": "primer.book.configuration",
    "render_payloads": "primer.book.render",
    "render_traces": "primer.book.render",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'primer.book' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
