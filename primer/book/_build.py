"""The book build: read the store, plan, execute, keep, and say what happened.

Before the pages render, ``Book.prepare`` goes through every chapter, along
the data's way::

    key      the chapter's one key (primer.book._cache): its code's fingerprint,
             its frozen live trace's bytes, the options, the renderer's
             version. A chapter whose entry is in the cache is shown from it;
             the others go on (primer.book._full_build)
    store    the cached mock trace and the frozen live trace (primer.book._store)
    plan     what is current, what to run, what to verify (primer.book._plan, pure)
    execute  mock in this process, or in a new one when library code changed
             under a long-lived process; a replay of a frozen live trace whose
             code changed (primer.replay, no network, milliseconds); live runs
             when a key is set, through a bounded pool, each with a wall-clock
             limit (primer.book._execute)
    store    what ran is written (atomically, only when it changed); what each
             chapter shows is handed to the renderer as its trace source

and logs one line, ``traces: ran N, reused M`` (``, verified K`` when a
replay was tried, ``, live: L`` when live runs are on), counting scenarios.

A live refresh is all or nothing per chapter (``primer.book._plan.settle_live``):
if any scenario failed, the earlier frozen file stands whole, the page says
why, and a warning names chapter and scenario. Every failed scenario of the
traces a build shows is a warning through the ``mkdocs.plugins.primer``
logger, on every build (so ``mkdocs build --strict`` fails, and so does
``python -m primer.book build --strict``, for as long as it stays broken);
nothing a scenario does stops the build.

``Book`` knows nothing of MkDocs: the front ends (the MkDocs hook in
``primer.book.mkdocs_hook``, the Markdown extension under Zensical, the
``python -m primer.book build`` command) open one through
``primer.book._session`` and drive it.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from primer.book import _live_prose as live_prose
from primer.book import _prose_check as prose_check
from primer.book._cache import (
    CACHE_VARIABLE,
    Entry,
    TraceCache,
    chapter_key,
    environ_options,
    renderer_version,
    settings_options,
)
from primer.book._chapters import Chapters
from primer.book._logs import book_logger
from primer.book._markers import check, find_markers, malformed
from primer.book._prices import PriceTable, default_prices
from primer.book._publish import Publisher
from primer.book._rendered import Rendered
from primer.book._report import Report, anomalies, failed
from primer.book._source import Shown
from primer.book._stopwatch import Stopwatch
from primer.book._store import PUBLISHED_DIR, CorruptTrace, TraceStore
from primer.variables import VARIABLES, chapters_package, traces_off, unknown_variables

# The engine proper (pydantic, the trace models, the runner) is imported by
# the methods that run or read traces: a warm build that finds every chapter's
# entry in the cache (``primer.book._cache``) loads none of it.
if TYPE_CHECKING:
    from primer.book._execute import LiveRunner
    from primer.settings import Settings
    from primer.trace import ChapterRun, Mode

__all__ = ["DEFAULT_TIME_LIMIT", "DEFAULT_WORKERS", "LOGGER_NAME", "Book", "Report", "anomalies", "failed"]

#: The logger MkDocs counts in ``--strict`` (any ``mkdocs.*`` logger is).
LOGGER_NAME = "mkdocs.plugins.primer"
#: Live runs at a time.
DEFAULT_WORKERS = 4
#: Seconds one live scenario may take, from its start.
DEFAULT_TIME_LIMIT = 300.0


class Book:
    """One book: its chapters, its trace store, and how its runs go.

    ``settings`` None reads ``environ`` (by default the process's
    environment) at every ``prepare``;
    ``live_runner`` None runs live scenarios over one shared SDK client
    (``primer.book._shared_live``); tests give one that stands in for the network.
    ``cache_dir`` holds the one cache (``primer.book._cache``); ``use_cache``
    False turns it off (None: on unless ``PRIMER_CACHE=off``).
    """

    def __init__(
        self,
        docs_dir: Path,
        cache_dir: Path,
        *,
        chapters: Chapters | None = None,
        settings: Settings | None = None,
        live_runner: LiveRunner | None = None,
        workers: int = DEFAULT_WORKERS,
        time_limit: float = DEFAULT_TIME_LIMIT,
        logger: logging.Logger | None = None,
        live_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
        use_cache: bool | None = None,
    ) -> None:
        # Parsed imports are kept in the cache folder, so a new process
        # parses only the modules edited since.
        package = settings.chapters_package() if settings is not None else chapters_package()
        self.chapters = chapters or Chapters(package, imports_cache=cache_dir / "imports.json")
        self.docs_dir = docs_dir
        self.cache = TraceCache(cache_dir / "entries")
        self.use_cache = use_cache
        self.store = TraceStore(live_dir or docs_dir / PUBLISHED_DIR, self.cache)
        self.publisher = Publisher(self.store)
        #: The ``PRIMER_*`` settings read at every ``prepare`` (None: the process's environment).
        self.environ = environ
        #: Inputs of the renderer besides the traces and its own files (a front end's), part of every key.
        self.render_options: dict[str, str] = {}
        #: Rendered markers, for the Markdown extension, in each chapter's entry.
        self.rendered = Rendered(self.cache, self._key_of)
        #: The page each chapter is first shown on (its URL), which its payload page links back to.
        self.chapter_pages: dict[str, str] = {}
        #: The check of every page's quoted trace facts, its answers kept by what they depend on.
        self.prose = prose_check.ProseChecks(cache_dir / "prose")
        #: This build's own time, per part.
        self.clock = Stopwatch()
        #: Chapters whose traces shown changed in the last ``prepare``.
        self.changed: set[str] = set()
        self.settings = settings
        self.live_runner = live_runner
        self.workers = workers
        self.time_limit = time_limit
        self.log = book_logger(logger or LOGGER_NAME)
        self.enabled = True
        #: Chapter -> scenario names (None if the chapter cannot be imported).
        self.scenario_names: dict[str, list[str] | None] = {}
        #: Page -> its Markdown, as this build read it (for ``check_rules``).
        self.pages: dict[str, str] = {}
        #: Page name (stem) -> its path in the docs folder, found once a build (``_own_pages``).
        self._pages_found: dict[str, PurePosixPath] | None = None
        #: Whether ``check_rules`` checks (the configuration's ``rules`` option).
        self.rules = True
        # This build's: the renderer's version, the options in every key, each chapter's warnings.
        self._renderer = ""
        self._options: dict[str, str] = {}
        self._warnings: dict[str, list[str]] = {}
        #: The prices the pages' costs are worked out from (the front end sets the configuration's); in every key.
        self.prices: PriceTable = default_prices()

    # -- the build ---------------------------------------------------------

    def settings_now(self) -> Settings:
        """The settings of this build: the given ones, else the environment's (warning about what is wrong)."""
        from primer.errors import ConfigError
        from primer.settings import Settings

        if self.settings is not None:
            return self.settings
        try:
            return Settings.from_env(self.environ, warn=lambda message: self.log.warning(f"traces: {message}"))
        except ConfigError as error:
            self.log.warning(f"traces: {error} Live runs are off for this build.")
            return Settings.without_live(self.environ)

    def prepare(self) -> Report:
        """Find every chapter's entry in the cache by its key; make those not found; hand what each shows to the store.

        A chapter whose entry is found is shown from it: nothing is run,
        read or imported for it, and the warnings its build gave are said
        again. The others take the full way (``primer.book._full_build``).
        """
        self.clock.reset()
        self.rendered.reset()
        self.cache.reset()
        self.pages = {}
        self._pages_found = None
        with self.clock("prepare"):
            before = {chapter: self.store.summary(chapter) for chapter in self.store.chapters()}
            report = self._prepare()
            after = {chapter: self.store.summary(chapter) for chapter in self.store.chapters()}
        self.changed = {c for c in before.keys() | after.keys() if before.get(c) != after.get(c)}
        return report

    def _prepare(self) -> Report:
        environ = self.environ if self.environ is not None else os.environ
        off = environ.get(CACHE_VARIABLE, "").strip().lower() == "off"
        self.cache.enabled = self.use_cache if self.use_cache is not None else not off
        self.store.clear_shown()
        self.scenario_names = {}
        self._warnings = {}
        # Settings (and pydantic) only when they decide more than the key: a given one, or a secret to validate.
        secrets = (VARIABLES["api_key"], VARIABLES["service_key"])
        settings = self.settings_now() if self.settings is not None or any(environ.get(s) for s in secrets) else None
        if (settings.traces == "off") if settings is not None else traces_off(environ):
            self.enabled = False
            report = Report(off=True)
            self.log.info(report.line())
            return report
        self.enabled = True
        if settings is None:
            for message in unknown_variables(environ):
                self.log.warning(f"traces: {message}")
        report = Report(live=0 if settings is not None and settings.live_enabled else None)
        try:
            names = self.chapters.names()
        except Exception as error:  # noqa: BLE001 - a broken package is reported, not fatal
            why = (settings or self.settings_now()).redactor().text(str(error))
            self.log.warning(f"traces: the chapters' package {self.chapters.package} could not be imported: {why}")
            return report
        self._renderer = renderer_version()
        self._options = {
            **(settings_options(self.settings) if self.settings is not None else environ_options(environ)),
            **self.render_options,
            "prices": self.prices.key,
        }
        with self.chapters.snapshot():
            codes = {name: self.chapters.fingerprint(name) for name in names}
        todo = [name for name in names if not self._from_entry(name, codes[name], report)]
        if todo:
            from primer.book import _full_build as full_build  # the engine: only on the full way

            full_build.run(self, {name: codes[name] for name in todo}, settings or self.settings_now(), report)
        self.log.info(report.line())
        return report

    def key(self, chapter: str, code: str) -> str:
        """The chapter's key in the cache now, for the code of fingerprint ``code`` (``primer.book._cache``)."""
        return chapter_key(chapter, code, self.store.frozen_bytes(chapter), self._options, self._renderer)

    def _key_of(self, chapter: str) -> str | None:
        shown = self.store.summary(chapter)
        return shown.key if shown is not None else None

    def _from_entry(self, chapter: str, code: str, report: Report) -> bool:
        """Show a chapter from its entry, saying its warnings again; False if it has none."""
        entry = self.cache.entry(chapter, self.key(chapter, code))
        kept = Shown.read(entry)
        if kept is None:
            return False
        shown, warnings, reused = kept
        for warning in warnings:
            self.log.warning(warning)
        self.store.show(shown)
        self.scenario_names[chapter] = list(shown.mock)
        report.reused += reused
        return True

    def warn(self, chapter: str, message: str) -> None:
        """Say a warning about a chapter; its entry keeps it, to be said again by every build that reuses it."""
        self._warnings.setdefault(chapter, []).append(message)
        self.log.warning(message)

    def keep(self, entry: Entry, shown: Shown) -> None:
        """Keep what a chapter shows in its entry, with this build's warnings about it (``_from_entry``)."""
        shown.write(entry, self._warnings.get(shown.chapter, []))

    def stored(self, chapter: str, mode: Mode, key: str) -> ChapterRun | None:
        """The stored run of a chapter, or None (a corrupt file is warned about and replaced later)."""
        try:
            return self.store.load(chapter, mode, key)
        except CorruptTrace as error:
            if mode == "mock":  # the build's own cache: what to do about it is the build's to say
                self.log.warning(
                    f"traces: {error.problem} The mock trace of {chapter} runs again and the file is replaced."
                )
            else:  # said again by every build that reuses the entry, for as long as the file stays so
                self.warn(chapter, f"traces: {error} The live trace of {chapter} is refreshed when a key is set.")
            return None

    def save(self, run: ChapterRun, key: str = "") -> None:
        """Write a run to the store (a mock one under ``key``); one not written is warned about, and still shown."""
        try:
            self.store.save(run, key)
        except OSError as error:
            # The run still shows: the store kept it in memory.
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
                for warning in malformed(name, markdown):
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
            found = check(name, markdown, names) + live_prose.problems(name, markdown, names)
            for warning in found + self.prose.problems(name, markdown, self.store, self.prices):
                self.log.warning(f"traces: {warning}")
            return markdown  # the extension keeps or drops the live blocks

    def check_rules(self) -> None:
        """Warn about each of the book's rules its chapters and the pages read so far break (``primer.book._rules``).

        Asked once a build, after every page was read: a build that read only
        some (``mkdocs serve --dirty``) cannot tell a scenario placed nowhere.
        """
        if not (self.enabled and self.rules):
            return
        from primer.book._rules import check

        with self.clock("pages"):
            for problem in check(self.chapters.package, self.scenario_names, self.pages):
                self.log.warning(f"traces: {problem}")

    def has_live(self, chapter: str, scenario: str | None) -> bool:
        """Whether the chapter (or that scenario of it) has a live run on the page."""
        shown = self.store.summary(chapter)
        return shown is not None and shown.live is not None and (scenario is None or scenario in shown.live)

    def publish(self, root: Path) -> list[Path]:
        """Write each chapter's trace JSON (both modes) to ``root/traces/CHAPTER.json``, for download.

        ``root`` is the built site (the MkDocs hook, after the build), or the
        docs folder (the command, and the extension under Zensical), from
        which every front end copies it as a static file.
        """
        with self.clock("publish"):
            return self.publisher.publish(root, self._payloads) if self.enabled else []

    def prune(self) -> None:
        """Drop the cache's entries this build did not use (but the last few of each chapter): after a full build."""
        self.cache.prune(self.store.chapters())

    def _chapter_page(self, chapter: str) -> str | None:
        """The URL a chapter's payload page links back to: its own page (named after it), else the first showing it.

        A front end that renders pages with their URLs before it publishes
        (MkDocs) says which; the others (Zensical publishes at its first
        marker, the run-step command before any page renders) get the own page
        found in the docs folder, in MkDocs' default form (``ch09/``), so every
        front end links the same.
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
        # The chapter's payload page: its name in the chapter's entry (the
        # page it links back to is part of what it shows), and how to make it,
        # which publishing asks only when the entry does not have it.
        page = self._chapter_page(chapter)
        name = f"payloads-{hashlib.sha256(str(page).encode()).hexdigest()[:12]}.html"

        def make() -> str:
            from primer.book._render import render_payloads

            return render_payloads(self.store.traces(chapter), page_url=page)

        return name, make

    def log_share(self) -> None:
        """Log this build's own share of the time, per part, at DEBUG."""
        self.clock.add("render", self.rendered.seconds)
        self.rendered.seconds = 0.0
        counted = f"; markers rendered {self.rendered.rendered}, reused {self.rendered.reused}"
        self.log.debug(self.clock.line() + counted)

    def watched_dirs(self) -> Iterable[Path]:
        """The folders of code a serving front end should watch."""
        return self.chapters.watched_dirs()
