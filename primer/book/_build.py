"""The book: its chapters, its store and cache, and what lasts from one build to the next.

``Book.prepare`` has ``primer.book._prepare.prepare`` make this build's ``Prepared``, the
immutable value of what every page shows; the front ends (the plugin, the Markdown extension
under Zensical, ``python -m primer.book build``) check each page (``page``), render it from that
value through the extension, and ``publish`` the files it shows. ``Book`` knows nothing of MkDocs.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from primer.book import _prose as prose
from primer.book._cache import CACHE_VARIABLE, TraceCache
from primer.book._chapters import Chapters
from primer.book._logs import book_logger
from primer.book._markers import check, find_markers
from primer.book._prepare import Prepared, Report, Setup, prepare
from primer.book._prices import PriceTable, default_prices
from primer.book._store import PUBLISHED_DIR, TraceStore
from primer.variables import chapters_package

if TYPE_CHECKING:
    from primer.book._run import LiveRunner
    from primer.settings import Settings
    from primer.trace import ChapterRun

__all__ = ["LOGGER_NAME", "Book", "Stopwatch"]

#: The logger MkDocs counts in ``--strict`` (any ``mkdocs.*`` logger is).
LOGGER_NAME = "mkdocs.plugins.primer"


class Stopwatch:
    """Seconds the machinery spends per named part of a build: ``with clock("prepare"): ...``."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}

    @contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        """Time the ``with`` block and add it to ``part``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, time.perf_counter() - started)

    def add(self, part: str, seconds: float) -> None:
        """Add seconds timed elsewhere to ``part``."""
        self.parts[part] = self.parts.get(part, 0.0) + seconds

    def line(self) -> str:
        """The line logged at DEBUG at the end of a build (benchmarks/build.py reads it)."""
        parts = ", ".join(f"{part} {seconds * 1000:.1f}" for part, seconds in self.parts.items())
        return f"traces: the machinery's share of this build: {sum(self.parts.values()) * 1000:.1f} ms ({parts})"


class Book:
    """One book: its chapters, its store and cache, and how its runs go.

    ``settings`` None reads ``environ`` (by default the process's) at every ``prepare``;
    ``live_runner`` None runs live scenarios over one shared SDK client (tests stand in for the
    network); ``workers`` live runs at a time, each within ``time_limit`` seconds. ``cache_dir``
    holds the one cache; ``use_cache`` False turns it off (None: on unless ``PRIMER_CACHE=off``).
    """

    def __init__(
        self,
        docs_dir: Path,
        cache_dir: Path,
        *,
        chapters: Chapters | None = None,
        settings: Settings | None = None,
        live_runner: LiveRunner | None = None,
        workers: int = 4,
        time_limit: float = 300.0,
        logger: logging.Logger | None = None,
        live_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        use_cache: bool | None = None,
    ) -> None:
        # Parsed imports are kept in the cache folder: a new process parses only the modules edited since.
        package = settings.chapters_package() if settings is not None else chapters_package()
        self.chapters = chapters or Chapters(package, imports_cache=cache_dir / "imports.json")
        self.docs_dir = docs_dir
        #: The one cache, with the markers' HTML the Markdown extension keeps in each chapter's entry.
        self.cache = TraceCache(cache_dir / "entries", key_of=self._key_of)
        self.use_cache = use_cache
        self.store = TraceStore(live_dir or docs_dir / PUBLISHED_DIR, self.cache)
        #: The ``PRIMER_*`` settings read at every ``prepare`` (None: the process's environment).
        self.environ = environ
        #: The page each chapter is first shown on (its URL), which its payload page links back to.
        self.chapter_pages: dict[str, str] = {}
        #: This build's own time, per part.
        self.clock = Stopwatch()
        #: Chapters whose traces shown changed in the last ``prepare``.
        self.changed: set[str] = set()
        self.settings = settings
        self.live_runner = live_runner
        self.workers = workers
        self.time_limit = time_limit
        self.log = book_logger(logger or LOGGER_NAME)
        #: What every page shows, as the last ``prepare`` made it: the renderer's source.
        self.prepared = Prepared(Report())
        #: Page -> its Markdown, as this build read it (for ``check_rules``).
        self.pages: dict[str, str] = {}
        #: Page name (stem) -> its path in the docs folder, found once a build (``_own_pages``).
        self._pages_found: dict[str, PurePosixPath] | None = None
        #: Whether ``check_rules`` checks (the configuration's ``rules`` option).
        self.rules = True
        #: The prices the pages' costs are worked out from (the front end sets the configuration's); in every key.
        self.prices: PriceTable = default_prices()

    def prepare(self) -> Prepared:
        """Make this build's ``Prepared`` (``primer.book._prepare``): what every page shows."""
        self.clock.parts = {}
        self.cache.reset()
        self.pages = {}
        self._pages_found = None
        environ = self.environ if self.environ is not None else os.environ
        off = environ.get(CACHE_VARIABLE, "").strip().lower() == "off"
        self.cache.enabled = self.use_cache if self.use_cache is not None else not off
        setup = Setup(
            self.settings,
            self.environ,
            {"prices": self.prices.key},
            self.live_runner,
            self.workers,
            self.time_limit,
            self.log,
        )
        before = self.prepared
        with self.clock("prepare"):
            self.prepared = prepare(self.chapters, self.store, setup)
        chapters = {*before.chapters(), *self.prepared.chapters()}
        self.changed = {c for c in chapters if before.summary(c) != self.prepared.summary(c)}
        return self.prepared

    def _key_of(self, chapter: str) -> str | None:
        shown = self.prepared.summary(chapter)
        return shown.key if shown is not None else None

    @property
    def enabled(self) -> bool:
        """Whether traces are on in the last build prepared."""
        return self.prepared.enabled

    @property
    def scenario_names(self) -> dict[str, list[str] | None]:
        """Chapter -> its scenario names (None if the chapter cannot be imported), as last prepared."""
        chapters = self.prepared.by_chapter.items()
        return {name: list(c.names) if c.names is not None else None for name, c in chapters}

    def save(self, run: ChapterRun) -> None:
        """Write a frozen live run; one not written is warned about."""
        try:
            self.store.save(run)
        except OSError as error:
            self.log.warning(f"traces: the {run.mode} trace of {run.chapter} could not be written: {error}")

    # -- pages and the site -------------------------------------------------

    def page(self, name: str, markdown: str, *, url: str | None = None) -> str:
        """A page's Markdown as it goes to the renderer, its markers and live blocks checked.

        Markers naming what does not exist, and lines meant as markers that
        are not valid ones, are warned about (naming page and line); the
        extension renders them. ``url``, the page's URL relative to the site
        root, is where the payload page of each chapter it shows first links back to.
        """
        with self.clock("pages"):
            self.pages[name] = markdown
            if not self.enabled:
                for warning in check(name, markdown):
                    self.log.warning(f"traces: {warning}")
                return markdown
            names = self.scenario_names
            if url is not None:
                for marker in find_markers(markdown):
                    # The chapter's own page wins over one that shows it first (see _chapter_page).
                    if PurePosixPath(name).stem == marker.chapter:
                        self.chapter_pages[marker.chapter] = url
                    else:
                        self.chapter_pages.setdefault(marker.chapter, url)
            said = prose.problems(
                name, markdown, lambda chapter: prose.kept_corpora(self.prepared, chapter, self.prices)
            )
            for warning in check(name, markdown, names) + said:
                self.log.warning(f"traces: {warning}")
            return markdown  # the extension keeps or drops the live blocks

    def check_rules(self) -> None:
        """Warn about each of the book's rules broken (``primer.book._rules``): once a build, every page read."""
        if not (self.enabled and self.rules):
            return
        from primer.book._rules import check

        with self.clock("pages"):
            for problem in check(self.chapters.package, self.scenario_names, self.pages):
                self.log.warning(f"traces: {problem}")

    def publish(self, root: Path) -> list[Path]:
        """Write each chapter's published files into ``root/traces/``: the site, or the docs folder."""
        with self.clock("publish"):
            return self.store.publish(root, self.prepared, self._payloads) if self.enabled else []

    def prune(self) -> None:
        """Drop the cache's entries this build did not use (but the last few of each chapter): after a full build."""
        self.cache.prune(self.prepared.chapters())
        shutil.rmtree(self.cache.folder.parent / "prose", ignore_errors=True)  # an older version's, unused

    def _chapter_page(self, chapter: str) -> str | None:
        """The URL a chapter's payload page links back to: its own page (named after it), else the first showing it.

        MkDocs says which as it renders; the other front ends publish before, and get the own page
        found in the docs folder in MkDocs' default form (``ch09/``), so every front end links the same.
        """
        if chapter in self.chapter_pages:
            return self.chapter_pages[chapter]
        own = self._own_pages().get(chapter)
        return None if own is None else f"{own.with_suffix('').as_posix()}/"

    def _own_pages(self) -> dict[str, PurePosixPath]:
        # Read once a build (``prepare`` forgets it): pages are added and removed under serve.
        if self._pages_found is None:
            found = sorted(self.docs_dir.rglob("*.md")) if self.docs_dir.is_dir() else []
            self._pages_found = {}
            for path in found:
                self._pages_found.setdefault(path.stem, PurePosixPath(path.relative_to(self.docs_dir).as_posix()))
        return self._pages_found

    def _payloads(self, chapter: str) -> tuple[str, Callable[[], str]]:
        # Its name in the chapter's entry (the page it links back to is part of it), and how to make it.
        page = self._chapter_page(chapter)
        name = f"payloads-{hashlib.sha256(str(page).encode()).hexdigest()[:12]}.html"

        def make() -> str:
            from primer.book._render import render_payloads

            return render_payloads(self.prepared.traces(chapter), page_url=page)

        return name, make

    def log_share(self) -> None:
        """Log this build's own share of the time, per part, at DEBUG."""
        self.clock.add("render", self.cache.seconds)
        self.cache.seconds = 0.0
        counted = f"; markers rendered {self.cache.rendered}, reused {self.cache.reused}"
        self.log.debug(self.clock.line() + counted)

    def watched_dirs(self) -> Iterable[Path]:
        """The folders of code a serving front end should watch."""
        return self.chapters.watched_dirs()
