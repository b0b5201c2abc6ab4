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
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from primer.book._build import Book
    from primer.book._cache import BuildLock, TraceCache
    from primer.book._chapters import Chapters
    from primer.book._configuration import BookConfig, TraceBookConfig, read_config
    from primer.book._plugin import TraceBookPlugin
    from primer.book._prepare import Report
    from primer.book._render import render_payloads, render_traces
    from primer.book._source import ChapterTraces, LiveStatus, TraceSource
    from primer.book._sources import MockRunSource
    from primer.book._store import TraceStore
    from primer.book.markdown import TraceExtension
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
    "quiet_theme",
    "read_config",
    "render_payloads",
    "render_traces",
]

# Each public name's module.
_HOMES = {
    "Book": "primer.book._build",
    "BookConfig": "primer.book._configuration",
    "BuildLock": "primer.book._cache",
    "ChapterTraces": "primer.book._source",
    "Chapters": "primer.book._chapters",
    "LiveStatus": "primer.book._source",
    "MockRunSource": "primer.book._sources",
    "Report": "primer.book._prepare",
    "TraceBookConfig": "primer.book._configuration",
    "TraceBookPlugin": "primer.book._plugin",
    "TraceCache": "primer.book._cache",
    "TraceExtension": "primer.book.markdown",
    "TraceSource": "primer.book._source",
    "TraceStore": "primer.book._store",
    "UnreadableTrace": "primer.trace_file",
    "read_config": "primer.book._configuration",
    "render_payloads": "primer.book._render",
    "render_traces": "primer.book._render",
}


def quiet_theme() -> str:
    """Turn Material's end-of-life notice off for this process (``NO_MKDOCS_2_WARNING``), unless it is set.

    Material prints its nine lines as MkDocs loads the theme, before any plugin or hook runs, so
    neither can; MkDocs reads ``mkdocs.yml`` before that, and a book calls this from there::

        extra:
          theme_notice: !!python/object/apply:primer.book.quiet_theme []
    """
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    return "off"


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'primer.book' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
