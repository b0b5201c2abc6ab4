"""The book machinery: plan, execute, store, render, and the front ends that drive them.

It imports ``primer``'s trace core; ``primer`` never imports it; only the plugin's modules import MkDocs.
The public names are ``__all__``, each imported on first use (a build with traces off imports none of the
engine); the modules are the implementation: ``from primer.book import Book, TraceExtension, TraceBookPlugin``.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from primer.book._book import Book as Book
    from primer.book._configuration import TraceBookConfig as TraceBookConfig
    from primer.book._configuration import read_config as read_config
    from primer.book._plugin import TraceBookPlugin as TraceBookPlugin
    from primer.book._source import ChapterTraces as ChapterTraces
    from primer.book._source import LiveStatus as LiveStatus
    from primer.book._source import TraceSource as TraceSource
    from primer.book._sources import MockRunSource as MockRunSource
    from primer.book.markdown import TraceExtension as TraceExtension
    from primer.trace_file import UnreadableTrace as UnreadableTrace

# Each public name's module (as imported above, for type checkers).
_HOMES = {
    "primer.book._book": "Book",
    "primer.book._configuration": "TraceBookConfig read_config",
    "primer.book._plugin": "TraceBookPlugin",
    "primer.book._source": "ChapterTraces LiveStatus TraceSource",
    "primer.book._sources": "MockRunSource",
    "primer.book.markdown": "TraceExtension",
    "primer.trace_file": "UnreadableTrace",
}
_HOME = {name: module for module, names in _HOMES.items() for name in names.split()}
# One list of the names, _HOMES: the imports above (`X as X`) are what type checkers read.
__all__ = sorted([*_HOME, "quiet_theme"])  # noqa: PLE0605


def quiet_theme() -> str:
    """Turn Material's end-of-life notice off for this process (``NO_MKDOCS_2_WARNING``), unless it is set.

    Material prints its boxed notice as MkDocs loads the theme, before any plugin or hook runs, so
    neither can; MkDocs reads ``mkdocs.yml`` before that, and a book calls this from there::

        extra:
          theme_notice: !!python/object/apply:primer.book.quiet_theme []
    """
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    return "off"


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name not in _HOME:
        raise AttributeError(f"module 'primer.book' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
