"""One book (its chapters, cache and settings), and the immutable ``Prepared`` each build makes.

A front end holds its ``Book`` (the plugin on its instance; the Markdown extension under Zensical
through ``open_book``), prepares once a build, checks each page (``check``), renders from the
``Prepared`` through the extension and ``publish``es the files it shows. It knows nothing of MkDocs.
"""

from __future__ import annotations

import glob
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

from primer.book import _assets as assets
from primer.book import _cache
from primer.book import _prose as prose
from primer.book._chapters import Chapters
from primer.book._links import CACHE_DIR, PUBLISHED_DIR
from primer.book._logs import book_logger
from primer.book._markers import broken_rules, check, scan
from primer.book._source import SHOWN, Shown
from primer.errors import ConfigError, NotFound
from primer.prices import PriceTable, default_prices
from primer.variables import VARIABLES, book_chapters, chapters_package, traces_off, unknown_variables

if TYPE_CHECKING:
    from primer.book._source import ChapterTraces
    from primer.book._steps import Work
    from primer.live_pool import LiveRunner
    from primer.settings import Settings
    from primer.trace import ChapterRun

__all__ = ["LOGGER_NAME", "Book", "Prepared", "Report", "Stopwatch", "open_book"]

#: The logger MkDocs counts in ``--strict`` (any ``mkdocs.*`` logger is).
LOGGER_NAME = "mkdocs.plugins.primer"


class Stopwatch(dict[str, float]):
    """Seconds per named part of a build (``with clock("prepare"): ...``); ``run`` is the chapters' own code."""

    @contextmanager
    def __call__(self, part: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(part, time.perf_counter() - started)

    def add(self, part: str, seconds: float) -> None:
        self[part] = self.get(part, 0.0) + seconds


class Report(NamedTuple):  # not a dataclass: made at every import, and a dataclass takes 6x the instructions
    """What one build did, counted in scenarios."""

    ran: int = 0
    reused: int = 0
    #: Live scenarios verified by replay, or None when no replay was tried.
    verified: int | None = None
    #: Live scenario runs, or None when live runs are off.
    live: int | None = None
    off: bool = False

    def line(self) -> str:  # ``traces: ran 2, reused 4``, then ``, verified 4`` and ``, live: 2`` when so
        if self.off:
            return "traces: off (PRIMER_TRACES=off), nothing ran"
        verified = f", verified {self.verified}" if self.verified is not None else ""
        live = f", live: {self.live}" if self.live is not None else ""
        return f"traces: ran {self.ran}, reused {self.reused}{verified}{live}"


class _Prepared(NamedTuple):
    report: Report
    by_chapter: Mapping[str, Shown]
    cache: _cache.TraceCache | None
    prices: PriceTable | None
    clock: Stopwatch
    runs: dict[str, ChapterTraces]
    scenario_names: dict[str, list[str] | None]


class Prepared(_Prepared):
    """What every page of one build shows, each chapter's: the renderer's, the checks' and publishing's source.

    ``cache``: the one cache (None with traces off), which the runs of a chapter shown from its entry are read
    from on first use (``traces``); ``runs``: those, and the ones this build made. ``prices``: what the pages'
    costs are worked out from (part of every key). ``scenario_names``: chapter -> the names markers may name
    (None: the chapter cannot be imported).
    """

    __slots__ = ()

    def __new__(
        cls,
        report: Report,
        by_chapter: Mapping[str, Shown] | None = None,
        cache: _cache.TraceCache | None = None,
        prices: PriceTable | None = None,
        *,
        clock: Stopwatch | None = None,
        runs: dict[str, ChapterTraces] | None = None,
    ) -> Prepared:
        by_chapter = by_chapter or {}
        names = {name: list(c.mock) if c.importable else None for name, c in by_chapter.items()}
        return super().__new__(cls, report, by_chapter, cache, prices, clock or Stopwatch(), runs or {}, names)

    @property
    def enabled(self) -> bool:
        return not self.report.off

    def chapters(self) -> list[str]:
        return sorted(self.by_chapter)

    def summary(self, chapter: str) -> Shown | None:
        return self.by_chapter.get(chapter)

    def changed(self, before: Prepared | None) -> set[str]:
        if before is None:
            return set(self.by_chapter)
        return {c for c in {*before.by_chapter, *self.by_chapter} if before.summary(c) != self.summary(c)}

    def traces(self, chapter: str) -> ChapterTraces:
        """A chapter's runs (read from its entry on first use); raises ``NotFound`` naming what exists."""
        if (runs := self.runs.get(chapter)) is not None:
            return runs
        found = self.by_chapter.get(chapter)
        if found is None or self.cache is None:
            chapters = ", ".join(self.chapters()) or "none"
            raise NotFound(f"There are no traces for chapter {chapter!r}. The chapters are: {chapters}.")
        self.runs[chapter] = runs = self.cache.read(found)
        return runs

    def share(self) -> str:
        """The line logged at DEBUG at the end of a build (benchmarks/build.py reads it)."""
        if self.cache is not None:
            self.clock.add("render", self.cache.seconds)
            self.cache.seconds = 0.0
        own = {part: seconds for part, seconds in self.clock.items() if part != "run"}
        parts = ", ".join(f"{part} {seconds * 1000:.1f}" for part, seconds in own.items())
        counted = f"; markers rendered {self.cache.rendered}, reused {self.cache.reused}" if self.cache else ""
        ran = f"; the chapters' own code {self.clock['run'] * 1000:.1f} ms" if "run" in self.clock else ""
        return f"traces: the machinery's share of this build: {sum(own.values()) * 1000:.1f} ms ({parts}){counted}{ran}"


class Book:
    """One book: its chapters, its cache, and how its runs go.

    ``settings`` None reads ``environ`` (by default the process's) at every ``prepare``; ``live_runner``
    None runs live scenarios over one shared SDK client (tests stand in for the network).
    """

    def __init__(
        self,
        docs_dir: Path,
        cache_dir: Path,
        *,
        chapters: Chapters | None = None,
        settings: Settings | None = None,
        live_runner: LiveRunner | None = None,
        time_limit: float = 300.0,
        logger: logging.Logger | None = None,
        live_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        # Parsed imports are kept in the cache folder: a new process parses only the modules edited since.
        package = settings.chapters_package() if settings is not None else chapters_package(None, environ)
        self.chapters = chapters or Chapters(package, imports_cache=cache_dir / "imports.json")
        self.docs_dir = docs_dir
        self.cache = _cache.TraceCache(cache_dir / "entries", live_dir or docs_dir / PUBLISHED_DIR)
        self.environ, self.settings, self.live_runner, self.time_limit = environ, settings, live_runner, time_limit
        self.log = book_logger(logger or LOGGER_NAME)
        self._lock = threading.Lock()
        self._built: tuple[object, Prepared] | None = None  # ``prepared_for``'s build and what it made
        self._first_files: dict[str, str] = {}  # the renderer's files as this process's first build found them

    def settings_now(self) -> Settings:
        from primer.settings import Settings

        if self.settings is not None:
            return self.settings
        try:
            return Settings.from_env(self.environ, warn=lambda message: self.log.warning(f"traces: {message}"))
        except ConfigError as error:
            self.log.warning(f"traces: {error} Live runs are off for this build.")
            return Settings.without_live(self.environ)

    def prepare(self, prices: PriceTable | None = None, *, freeze: bool = False) -> Prepared:
        """What every page shows: each chapter from its entry in the cache, or made the full way and kept."""
        clock, log = Stopwatch(), self.log
        with clock("prepare"):
            environ = self.environ if self.environ is not None else os.environ
            self.cache.enabled = environ.get(_cache.CACHE_VARIABLE, "").strip().lower() != "off"
            self.cache.reset()
            prices = default_prices() if prices is None else prices
            # Settings (and pydantic) only when they decide more than the key: a given one, or a secret to validate.
            given = self.settings is not None or any(environ.get(VARIABLES[s]) for s in ("api_key", "service_key"))
            settings = self.settings_now() if given else None
            if (settings.traces == "off") if settings is not None else traces_off(environ):
                log.info(Report(off=True).line())
                return Prepared(Report(off=True), clock=clock)
            for message in unknown_variables(environ) if settings is None else ():
                log.warning(f"traces: {message}")
            live = 0 if settings is not None and settings.live_enabled else None
            try:
                names = self.chapters.names()
            except Exception as error:  # noqa: BLE001 - a broken package is reported, not fatal
                log.warning(f"traces: {(settings or self.settings_now()).redactor().text(str(error))}")  # names it
                names = []
            files = _cache.renderer_files()
            self._first_files = self._first_files or files
            if changed := _cache.changed_code(self._first_files, files):
                log.warning(
                    f"traces: library code this process runs changed since it started ({', '.join(changed)}), and "
                    "it cannot import it again: what it draws now is kept nowhere (a later build draws it anew); "
                    "restart the server to see every change"
                )
            self.cache.keeps_drawn = not changed
            mine = _cache.settings_options(self.settings) if self.settings else _cache.environ_options(environ)
            build = _cache.build_key({**mine, "prices": prices.key}, _cache.renderer_version(files))

            def key(chapter: str, code: str) -> str:
                return _cache.chapter_key(chapter, code, self.cache.frozen_bytes(chapter), build)

            codes = self.chapters.fingerprints(names)
            found: dict[str, Shown] = {}
            made: dict[str, ChapterTraces] = {}  # the runs of the chapters made the full way
            works: list[Work] = []
            for name in names:
                if (shown := Shown.read(self.cache.entry(name, key(name, codes[name])))) is None:
                    from primer.book._steps import Work  # the full way: not for a warm build

                    works.append(Work(name, codes[name]))
                    continue
                for warning in shown.warnings:
                    log.warning(warning)
                self.cache.entry(name, self.cache.mock_name(shown.code))  # used: read when a page misses its HTML
                found[name] = shown
            if works:
                from primer.book._steps import Run

                run = Run(self, settings or self.settings_now(), key, clock, freeze)
                run.full_way(works)
                for work in works:
                    found[work.name], made[work.name] = run.show(work)
            verified = [work.verified for work in works if work.verified is not None]
            report = Report(
                ran=sum(work.ran for work in works),
                reused=sum(len(s.mock) + len(s.live or ()) for n, s in found.items() if n not in made)
                + sum(work.reused for work in works),
                verified=sum(verified) if verified else None,
                live=None if live is None else sum(work.live_runs for work in works),
            )
            log.info(report.line())
        clock["prepare"] -= clock.get("run", 0.0)  # the chapters' own code ran inside it
        self.cache.made = bool(works)
        found = {name: found[name] for name in names}
        self.cache.key_of = lambda chapter: found[chapter].key if chapter in found else None
        return Prepared(report, found, self.cache, prices, clock=clock, runs=made)

    @contextmanager
    def recording(self) -> Iterator[list[logging.LogRecord]]:
        """Within the block, what the book's logger says is kept in the list given (``again`` says it again)."""
        said: list[logging.LogRecord] = []

        def kept(record: logging.LogRecord) -> bool:
            said.append(record)
            return True

        self.log.addFilter(kept)
        try:
            yield said
        finally:
            self.log.removeFilter(kept)

    def again(self, prepared: Prepared, said: list[logging.LogRecord]) -> Prepared | None:
        """``prepared`` once more, saying what it said, if its entries are there and no ``inputs`` changed since."""
        for chapter, shown in prepared.by_chapter.items():
            if not os.path.isfile(os.path.join(self.cache.folder, chapter, shown.key, SHOWN)):
                return None  # the cache was cleared: prepared afresh
        for record in said:
            self.log.handle(record)
        self.cache.recount()
        self.log.debug("traces: nothing a prepare reads changed since the last build: what it made is shown")
        return prepared._replace(clock=Stopwatch())

    def inputs(self) -> tuple[list[Path], list[Path]]:
        """The folders a prepare reads: those whose files change pages (the code, templates, assets), the rest."""
        pages = [*self.chapters.watched_dirs(), *assets.PAGE_FOLDERS]
        # Where distributions are installed (a pip install), not any folder on the path (the book's own).
        installed = [Path(folder) for folder in sys.path if folder and glob.glob("*.dist-info", root_dir=folder)]
        return [f for f in pages if f.is_dir()], [f for f in (Path(__file__).parent, *installed) if f.is_dir()]

    def prepared_for(self, build: object, prices: PriceTable, site_dir: Path) -> Prepared:
        """The ``Prepared`` of ``build`` (Zensical's), made by its first page; pages of other threads wait.

        The files go into the site too: Zensical lists the docs' files before its first page, and would miss them.
        """
        with self._lock:
            if self._built is None or self._built[0] is not build:
                prepared = self.prepare(prices)
                for root in (self.docs_dir, site_dir):
                    self.publish(root, prepared)
                    if prepared.enabled:
                        assets.install(root)
                self._built = (build, prepared)
            return self._built[1]

    def save(self, run: ChapterRun) -> None:
        try:
            self.cache.save(run)
        except OSError as error:
            self.log.warning(f"traces: the {run.mode} trace of {run.chapter} could not be written: {error}")

    def check(
        self, prepared: Prepared, name: str, markdown: str, urls: dict[str, str] | None = None, url: str = ""
    ) -> None:
        """Warn about a page's markers and prose; note in ``urls`` the page a chapter's payload page links back to.

        That is the chapter's own page (named after it), else the first showing it.
        """
        with prepared.clock("pages"):
            if not prepared.enabled:
                said = check(name, markdown)
            else:
                stem, urls = PurePosixPath(name).stem, {} if urls is None else urls
                for marker in scan(markdown).markers:
                    urls[marker.chapter] = url if stem == marker.chapter else urls.get(marker.chapter, url)
                said = check(name, markdown, prepared.scenario_names)
                said += prose.problems(
                    name, markdown, lambda chapter: prose.kept_corpora(prepared, chapter, prepared.prices)
                )
            for warning in said:
                self.log.warning(f"traces: {warning}")

    def check_rules(self, prepared: Prepared, pages: Mapping[str, str], *, rules: bool = True) -> None:
        """Warn about each of the book's rules broken (``broken_rules``), once a build: ``pages`` are all read."""
        if prepared.enabled and rules:
            with prepared.clock("pages"):
                for problem in broken_rules(self.chapters.package, prepared.scenario_names, pages):
                    self.log.warning(f"traces: {problem}")

    def publish(self, root: Path, prepared: Prepared, urls: Mapping[str, str] | None = None) -> list[Path]:
        """Write the published files into ``root/traces/``; a payload page links to its ``urls`` page (or ``ch09/``)."""
        from primer.book._publish import publish

        with prepared.clock("publish"):
            pages = dict(urls or {})
            if any(chapter not in pages for chapter in prepared.chapters()):
                own = {path.stem: path for path in sorted(self.docs_dir.rglob("*.md"), reverse=True)}  # first wins
                for chapter, path in own.items():
                    pages.setdefault(chapter, f"{path.relative_to(self.docs_dir).with_suffix('').as_posix()}/")
            return publish(root, prepared, pages)

    def prune(self, prepared: Prepared) -> None:
        """Drop the cache's entries this build did not use (but the last few of each chapter), if it made one."""
        if self.cache.made:  # else it is as the build that made the last one left it
            self.cache.prune(prepared.chapters())


_BOOKS: dict[str, Book] = {}
_OPENING = threading.Lock()


def open_book(
    root: Path,
    docs_dir: Path,
    *,
    chapters: str | None = None,
    cache: Path | None = None,
    live_dir: Path | None = None,
    environ: Mapping[str, str] | None = None,
    keep: bool = True,
) -> Book:
    """The book of ``docs_dir`` with its caches under ``root``; ``keep``: one per docs folder for the process.

    ``chapters`` is the package the configuration names (``PRIMER_CHAPTERS`` wins).
    """
    with _OPENING:
        if (book := _BOOKS.get(str(docs_dir.resolve())) if keep else None) is None:
            # The chapters package beside mkdocs.yml: `mkdocs` and `zensical`, run as commands,
            # do not put that folder on the import path. Last: nothing installed is shadowed.
            if str(root.resolve()) not in sys.path:
                sys.path.append(str(root.resolve()))
            cache = cache or root / CACHE_DIR
            package = Chapters(book_chapters(chapters, environ), imports_cache=cache / "imports.json")
            book = Book(docs_dir, cache, chapters=package, live_dir=live_dir, environ=environ)
            _BOOKS.update({str(docs_dir.resolve()): book} if keep else {})
        return book
