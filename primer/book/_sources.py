"""Where the extension's traces come from besides a given source: the book Zensical names, or mock runs."""

from __future__ import annotations

import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markdown import Markdown

from primer.book import _assets as assets
from primer.errors import ConfigError
from primer.locator import ChapterLocator, no_scenario
from primer.variables import chapters_package

if TYPE_CHECKING:
    from primer.book._book import Prepared
    from primer.book._source import ChapterTraces, TraceSource
    from primer.prices import PriceTable

#: Why a standalone page has no live run.
NO_KEY = "no key yet: live runs are recorded by the book build when PRIMER_API_KEY is set"


class MockRunSource:
    """A ``TraceSource`` running a chapter's mock scenarios in-process, once each (by default ``PRIMER_CHAPTERS``')."""

    def __init__(self, chapters: ChapterLocator | None = None) -> None:
        self.chapters = chapters or ChapterLocator(chapters_package())
        self._runs: dict[str, ChapterTraces] = {}

    def traces(self, chapter: str) -> ChapterTraces:
        """The chapter's mock run (raises ``NotFound`` for an unknown chapter)."""
        if chapter not in self._runs:
            from primer.book._source import ChapterTraces, LiveStatus
            from primer.runner import run_chapter  # the library: only when a chapter runs

            mock = run_chapter(chapter, "mock", chapters=self.chapters)
            self._runs[chapter] = ChapterTraces(chapter, mock, None, LiveStatus(state="missing", reason=NO_KEY))
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
        try:
            source = pkgutil.resolve_name(source)
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
    context = md.preprocessors["rendering_context"] if md and "rendering_context" in md.preprocessors else None
    return context if isinstance(getattr(context, "config", None), dict) else None


def book_for_page(md: Markdown | None, chapters: str, prices: Callable[[], PriceTable]) -> Prepared | None:
    """What this build shows of the book whose docs folder Zensical names for the page; None if there is none."""
    if (context := _context(md)) is None:
        return None
    from primer.book._book import open_book  # the engine: only for a book

    root = Path(context.config["root_dir"])
    book = open_book(root, root / context.config["docs_dir"], chapters=chapters)
    # A new configuration object is a new build (Zensical makes one when a watched file changes).
    return book.prepared_for(context.config, prices(), root / context.config["site_dir"])


def assets_for_page(md: Markdown | None) -> None:
    """With traces off under Zensical: write the assets (which style the placeholder) into the docs and site."""
    if (context := _context(md)) is not None:  # each marker's: a file that holds them already is not written
        for folder in (context.config["docs_dir"], context.config["site_dir"]):
            assets.install(Path(context.config["root_dir"]) / folder)


def page_source(md: Markdown | None) -> str | None:
    """The Markdown file being rendered, relative to the docs, when the generator says (Zensical does)."""
    path = getattr(getattr(_context(md), "page", None), "path", None)
    return path if isinstance(path, str) else None
