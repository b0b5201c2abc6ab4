"""The book build: read the store, plan, execute, keep, and say what happened.

Before the pages render, ``Book.prepare`` goes through every chapter, along
the data's way::

    store    the cached mock trace and the frozen live trace (primer.book.store)
    plan     what is current, what to run, what to verify (primer.book.plan, pure)
    execute  mock in this process, or in a new one when library code changed
             under a long-lived process; a replay of a frozen live trace whose
             code changed (primer.replay, no network, milliseconds); live runs
             when a key is set, through a bounded pool, each with a wall-clock
             limit (primer.book.execute)
    store    what ran is written (atomically, only when it changed); what each
             chapter shows is handed to the renderer as its trace source

and logs one line, ``traces: ran N, reused M`` (``, verified K`` when a
replay was tried, ``, live: L`` when live runs are on), counting scenarios.

A live refresh is all or nothing per chapter (``primer.book.plan.settle_live``):
if any scenario failed, the earlier frozen file stands whole, the page says
why, and a warning names chapter and scenario. Every failed scenario of the
traces a build shows is a warning through the ``mkdocs.plugins.primer``
logger, on every build (so ``mkdocs build --strict`` fails, and so does
``python -m primer.book build --strict``, for as long as it stays broken);
nothing a scenario does stops the build.

``Book`` knows nothing of MkDocs: the front ends (the MkDocs hook in
``primer.book.mkdocs_hook``, the Markdown extension under Zensical, the
``python -m primer.book build`` command) open one through
``primer.book.session`` and drive it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from primer.book import live_prose, manifest, prose_check
from primer.book.chapters import Chapters
from primer.book.html_cache import HtmlCache
from primer.book.logs import book_logger
from primer.book.markers import find_markers
from primer.book.pages import check, listing, off_page, replace
from primer.book.prices import PriceTable, default_prices
from primer.book.report import Report, anomalies, failed
from primer.book.source import ChapterTraces, TraceSummary
from primer.book.stopwatch import Stopwatch
from primer.book.store import PUBLISHED_DIR, CorruptTrace, TraceStore
from primer.variables import chapters_package

# The engine proper (pydantic, the trace models, the runner) is imported by
# the methods that run or read traces: a warm build that finds everything
# current (``primer.book.manifest``) loads none of it.
if TYPE_CHECKING:
    from primer.book.execute import LiveRunner
    from primer.settings import Settings
    from primer.trace import ChapterRun, Mode

__all__ = ["DEFAULT_TIME_LIMIT", "DEFAULT_WORKERS", "LOGGER_NAME", "Book", "Report", "anomalies", "failed"]

#: The logger MkDocs counts in ``--strict`` (any ``mkdocs.*`` logger is).
LOGGER_NAME = "mkdocs.plugins.primer"
#: Live runs at a time.
DEFAULT_WORKERS = 4
#: Seconds one live scenario may take, from its start.
DEFAULT_TIME_LIMIT = 300.0


def _differ(before: ChapterTraces | TraceSummary | None, after: ChapterTraces | TraceSummary | None) -> bool:
    # The store hands out one object per version of a trace, so identity
    # says "unchanged" cheaply; a false "changed" only rebuilds a page more.
    if isinstance(before, TraceSummary) or isinstance(after, TraceSummary):
        return not (isinstance(before, TraceSummary) and isinstance(after, TraceSummary) and before.html == after.html)
    if before is None or after is None:
        return before is not after
    return before.mock is not after.mock or before.live is not after.live or before.live_status != after.live_status


class Book:
    """One book: its chapters, its trace store, and how its runs go.

    ``settings`` None reads ``environ`` (by default the process's
    environment) at every ``prepare``;
    ``live_runner`` None runs live scenarios over one shared SDK client
    (``primer.book.shared_live``); tests give one that stands in for the network.
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
        html_dir: Path | None = None,
        live_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        # Parsed imports are kept beside the mock traces, so a new process
        # parses only the modules edited since.
        package = settings.chapters_package() if settings is not None else chapters_package()
        self.chapters = chapters or Chapters(package, imports_cache=cache_dir / "imports.json")
        self.docs_dir = docs_dir
        self.store = TraceStore(live_dir or docs_dir / PUBLISHED_DIR, cache_dir)
        #: The ``PRIMER_*`` settings read at every ``prepare`` (None: the process's environment).
        self.environ = environ
        #: Rendered markers, for the Markdown extension (on disk in ``html_dir``, if given).
        self.rendered = HtmlCache(html_dir, fingerprint_file=cache_dir / "renderer.json", run_digest=self.store.digest)
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
        self._unknown = 0
        #: Chapter -> scenario names (None if the chapter cannot be imported).
        self.scenario_names: dict[str, list[str] | None] = {}
        #: Page -> its Markdown, as this build read it (for ``check_rules``).
        self.pages: dict[str, str] = {}
        #: Page name (stem) -> its path in the docs folder, found once a build (``_own_pages``).
        self._pages_found: dict[str, PurePosixPath] | None = None
        #: Whether ``check_rules`` checks (the configuration's ``rules`` option).
        self.rules = True
        #: The prices the pages' costs are worked out from (the front end sets the configuration's).
        self.prices: PriceTable = default_prices()

    # -- the build ---------------------------------------------------------

    def settings_now(self) -> Settings:
        """The settings of this build: the given ones, else the environment's (warning about what is wrong)."""
        from primer.errors import ConfigError
        from primer.settings import Settings

        if self.settings is not None:
            return self.settings
        try:
            return Settings.from_env(self.environ, warn=self._unknown_variable)
        except ConfigError as error:
            self.log.warning(f"traces: {error} Live runs are off for this build.")
            return Settings.without_live(self.environ)

    def _unknown_variable(self, message: str) -> None:
        self.log.warning(f"traces: {message}")
        self._unknown += 1  # said by every build alike: it does not make this one unclean

    def prepare(self) -> Report:
        """Run what is needed and hand every chapter's traces to the store.

        When the record of the last build shows nothing changed since, it
        hands them over as they were (``primer.book.manifest``), and
        nothing is run, read or imported.
        """
        self.clock.reset()
        self.rendered.reset()
        self.pages = {}
        self._pages_found = None
        with self.clock("prepare"):
            before = {chapter: self.store.shown(chapter) for chapter in self.store.chapters()}
            report = manifest.reuse(self) if self.settings is None else None
            if report is None:
                report = self._run_and_show()
            after = {chapter: self.store.shown(chapter) for chapter in self.store.chapters()}
        self.changed = {c for c in before.keys() | after.keys() if _differ(before.get(c), after.get(c))}
        return report

    def _run_and_show(self) -> Report:
        # The inputs as they are before anything reads them: a file saved
        # during the build makes the record stale, never wrong.
        inputs = manifest.code_inputs(self) if self.settings is None else None
        self.rendered.fingerprint = None  # computed from the code this process runs, as it always was
        warnings = manifest.Warnings()
        self._unknown = 0
        self.log.addFilter(warnings)
        try:
            from primer.book import full_build  # the engine: only on the full way

            report = full_build.run(self)
        finally:
            self.log.removeFilter(warnings)
        manifest.record(self, inputs if warnings.count == self._unknown else None)
        return report

    def stored(self, chapter: str, mode: Mode) -> ChapterRun | None:
        """The stored run of a chapter, or None (a corrupt file is warned about and replaced later)."""
        try:
            return self.store.load(chapter, mode)
        except CorruptTrace as error:
            if mode == "mock":  # the build's own cache: what to do about it is the build's to say
                self.log.warning(
                    f"traces: {error.problem} The mock trace of {chapter} runs again and the file is replaced."
                )
            else:
                self.log.warning(f"traces: {error} The live trace of {chapter} is refreshed when a key is set.")
            return None

    def save(self, run: ChapterRun) -> None:
        """Write a run to the store; one that cannot be written is warned about, and still shown."""
        try:
            self.store.save(run)
        except OSError as error:
            # The run still shows: the store kept it in memory.
            self.log.warning(f"traces: the {run.mode} trace of {run.chapter} could not be written: {error}")

    # -- pages and the site -------------------------------------------------

    def page(self, name: str, markdown: str, *, renderer: bool, url: str | None = None) -> str:
        """A page's Markdown as it goes to the renderer, its markers and live blocks checked.

        Markers naming what does not exist, and lines meant as markers that
        are not valid ones, are warned about (naming page and line). With traces off
        they become a placeholder; without the renderer (``renderer=False``)
        a plain listing of summary lines. ``url``, the page's URL relative to
        the site root, is where the payload page of each chapter it shows first
        links back to.
        """
        with self.clock("pages"):
            self.pages[name] = markdown
            if not self.enabled:
                placed, warnings = off_page(name, markdown)
                for warning in warnings:
                    self.log.warning(f"traces: {warning}")
                return placed
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
            if renderer:
                return markdown  # the extension keeps or drops the live blocks
            shown = set(self.store.chapters())
            markdown = live_prose.select(markdown, self.has_live)
            return replace(markdown, lambda m: listing(self.store.traces(m.chapter) if m.chapter in shown else None, m))

    def check_rules(self) -> None:
        """Warn about each of the book's rules its chapters and the pages read so far break (``primer.book.rules``).

        Asked once a build, after every page was read: a build that read only
        some (``mkdocs serve --dirty``) cannot tell a scenario placed nowhere.
        """
        if not (self.enabled and self.rules):
            return
        from primer.book.rules import check

        with self.clock("pages"):
            for problem in check(self.chapters.package, self.scenario_names, self.pages):
                self.log.warning(f"traces: {problem}")

    def has_live(self, chapter: str, scenario: str | None) -> bool:
        """Whether the chapter (or that scenario of it) has a live run on the page."""
        if chapter not in self.store.chapters():
            return False
        live = self.store.traces(chapter).live
        return live is not None and (scenario is None or any(s.name == scenario for s in live.scenarios))

    def publish(self, root: Path) -> list[Path]:
        """Write each chapter's trace JSON (both modes) to ``root/traces/CHAPTER.json``, for download.

        ``root`` is the built site (the MkDocs hook, after the build), or the
        docs folder (the command, and the extension under Zensical), from
        which every front end copies it as a static file.
        """
        with self.clock("publish"):
            return self.store.publish(root, self._payloads) if self.enabled else []

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
        # The chapter's payload page: its key (a chapter shown by its summary
        # is not read for it), and how to make it, which publishing asks only
        # when no copy of that key is kept. Rendered only when its traces (or
        # the renderer) changed.
        summary = self.store.summary(chapter)
        traces_key = summary.html if summary is not None else self.rendered.traces_key(self.store.traces(chapter))
        # The page it links back to is part of what it shows.
        page = self._chapter_page(chapter)
        on = f" page={page}"

        def make() -> str:
            if summary is not None and (kept := self.rendered.cached_payloads(chapter, summary.html + on)) is not None:
                return kept
            from primer.book.render import render_payloads

            traces = self.store.traces(chapter)
            return self.rendered.payloads(traces, lambda: render_payloads(traces, page_url=page), key=on)

        return self.rendered.payloads_key(chapter, traces_key + on), make

    def log_share(self) -> None:
        """Log this build's own share of the time, per part, at DEBUG."""
        self.clock.add("render", self.rendered.seconds)
        self.rendered.seconds = 0.0
        counted = f"; markers rendered {self.rendered.rendered}, reused {self.rendered.reused}"
        self.log.debug(self.clock.line() + counted)

    def watched_dirs(self) -> Iterable[Path]:
        """The folders of code a serving front end should watch."""
        return self.chapters.watched_dirs()
