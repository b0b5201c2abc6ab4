"""Where the extension's traces come from besides a given source: the book under Zensical, or mock runs.

``book_for_page`` is the book whose docs folder Zensical names in the page's rendering context,
prepared once per build (``primer.book._book.open_book``); ``MockRunSource`` runs a chapter's mock
scenarios in this process. ``collect`` loads a marker's traces, checking its scenario exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markdown import Markdown

from primer.errors import ConfigError
from primer.locator import ChapterLocator, no_scenario

if TYPE_CHECKING:
    from primer.book._book import Prepared
    from primer.book._prices import PriceTable
    from primer.book._source import ChapterTraces, TraceSource

__all__ = [
    "NO_KEY",
    "MockRunSource",
    "assets_for_page",
    "book_for_page",
    "collect",
    "page_source",
    "require_scenario",
    "resolve_source",
]

# The configuration of the Zensical build the assets were last written for with traces off.
_STYLED: dict[str, object] = {}

#: Why a standalone page has no live run.
NO_KEY = "no key yet: live runs are recorded by the book build when PRIMER_API_KEY is set"


class MockRunSource:
    """A ``TraceSource`` that runs a chapter's mock scenarios in-process, once each (milliseconds, virtual clock).

    The chapters are ``chapters``' (by default those ``PRIMER_CHAPTERS`` names, else ``primer.chapters``).
    """

    def __init__(self, chapters: ChapterLocator | None = None) -> None:
        from primer.settings import Settings

        self.chapters = chapters or ChapterLocator(Settings.without_live().chapters_package())
        self._runs: dict[str, ChapterTraces] = {}

    def traces(self, chapter: str) -> ChapterTraces:
        """The chapter's mock run (raises ``NotFound`` for an unknown chapter)."""
        if chapter not in self._runs:
            from primer.book._source import ChapterTraces, LiveStatus
            from primer.runner import run_chapter  # the library: only when a chapter runs

            self._runs[chapter] = ChapterTraces(
                chapter=chapter,
                mock=run_chapter(chapter, "mock", chapters=self.chapters),
                live=None,
                live_status=LiveStatus(state="missing", reason=NO_KEY),
            )
        return self._runs[chapter]


def collect(source: TraceSource, chapter: str, scenario: str | None = None) -> ChapterTraces:
    """Load a marker's traces: the chapter's, checked to hold the scenario asked for."""
    traces = source.traces(chapter)
    require_scenario(chapter, scenario, [s.name for run in (traces.mock, traces.live) if run for s in run.scenarios])
    return traces


def require_scenario(chapter: str, scenario: str | None, names: list[str]) -> None:
    """Raise ``NotFound`` naming what exists if ``scenario`` is given and not among ``names`` (mock's, then live's)."""
    if scenario is not None and scenario not in names:
        raise no_scenario(chapter, scenario, list(dict.fromkeys(names)))


def resolve_source(source: Any) -> TraceSource:
    """The source given: an object, or from YAML ``package.module:name`` (an object, or a class or factory to call)."""
    if isinstance(source, str):
        module, _, name = source.partition(":")
        try:
            source = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as error:
            raise ConfigError(
                f"The trace source {source!r} could not be imported ({error}). Give it as 'package.module:name'."
            ) from error
        if isinstance(source, type) or (callable(source) and not hasattr(source, "traces")):
            source = source()
    if not callable(getattr(source, "traces", None)):
        raise ConfigError(
            f"The trace extension's source must have a traces(chapter) method, not {type(source).__name__}."
        )
    return source  # type: ignore[no-any-return]


def _context(md: Markdown | None) -> Any:
    # Zensical's rendering context: the page and the configuration (as its ContextPreprocessor finds it).
    if md is None or "rendering_context" not in md.preprocessors:
        return None
    context = md.preprocessors["rendering_context"]
    return context if isinstance(getattr(context, "config", None), dict) else None


def book_for_page(md: Markdown | None, chapters: str, prices: Callable[[], PriceTable]) -> Prepared | None:
    """What this build shows of the book whose docs folder Zensical names for the page; None if there is none."""
    context = _context(md)
    if context is None:
        return None
    from primer.book._book import open_book  # the engine: only for a book

    config = context.config
    root = Path(config["root_dir"])
    book = open_book(root, root / config["docs_dir"], chapters=chapters)
    # A new configuration object is a new build (Zensical makes one when a watched file changes).
    return book.prepared_for(config, prices(), root / config["site_dir"])


def assets_for_page(md: Markdown | None) -> None:
    """With traces off under Zensical: write the stylesheet and script into the docs and the site, once a build.

    Its pages link them (``mkdocs.yml`` names them), traces off too, and they style the
    placeholder; with traces on, preparing the book writes them (``Book.prepared_for``).
    """
    context = _context(md)
    if context is None or _STYLED.get("build") is context.config:
        return
    from primer.book import _assets as assets

    root = Path(context.config["root_dir"])
    for folder in (context.config["docs_dir"], context.config["site_dir"]):
        assets.install(root / folder)
    _STYLED["build"] = context.config


def page_source(md: Markdown | None) -> str | None:
    """The Markdown file being rendered, relative to the docs, when the generator says (Zensical does)."""
    path = getattr(getattr(_context(md), "page", None), "path", None)
    return path if isinstance(path, str) else None
