"""Preparing a book's traces: from each chapter's key to one immutable value of what every page shows.

``prepare(chapters, store, setup)`` goes through every chapter along the data's way::

    key      the chapter's one key (primer.book._cache); a chapter whose entry is in the
             cache is shown from it, its warnings said again; the others go the full way:
    mock     the cached mock trace made by the code now (``is_current``), or run (primer.book._run)
    verify   a frozen live trace whose code changed is replayed (``wants_verify``), unless its
             verdict is kept
    plan     the live status the page shows, and whether to record live now (``plan_live``)
    record   the live runs, with a key, through the bounded pool (primer.book._run)
    settle   all or nothing per chapter (``settle_live``)
    show     what the page shows, kept in the chapter's entry with its warnings

Each step (``primer.book._steps``) takes a chapter's ``Work`` and returns a new one; the plan's
decisions (``primer.book._plan``) read nothing and run nothing. It logs ``traces: ran N, reused M``
(``, verified K`` when a replay was tried, ``, live: L`` when live runs are on), counting scenarios.
Every failed scenario shown is a warning through the ``mkdocs.plugins.primer`` logger on every
build, so ``--strict`` fails while it stays broken; nothing a scenario does stops the build.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from primer.book._cache import chapter_key, environ_options, renderer_version, settings_options
from primer.book._source import ChapterTraces, Shown
from primer.book._steps import Chapter, Run, Work
from primer.variables import VARIABLES, traces_off, unknown_variables

if TYPE_CHECKING:  # the engine (pydantic, the trace models) only on the full way
    from primer.book._chapters import Chapters
    from primer.book._run import LiveRunner
    from primer.book._store import TraceStore
    from primer.settings import Settings

__all__ = ["Chapter", "Prepared", "Report", "Setup", "prepare"]


@dataclass(frozen=True)
class Report:
    """What one build did, counted in scenarios."""

    ran: int = 0
    reused: int = 0
    #: Live scenarios verified by replay, or None when no replay was tried.
    verified: int | None = None
    #: Live scenario runs, or None when live runs are off.
    live: int | None = None
    off: bool = False

    def line(self) -> str:
        """``traces: ran 2, reused 4`` (``, verified 4`` after a replay, ``, live: 2`` when live runs are on)."""
        if self.off:
            return "traces: off (PRIMER_TRACES=off), nothing ran"
        verified = f", verified {self.verified}" if self.verified is not None else ""
        live = f", live: {self.live}" if self.live is not None else ""
        return f"traces: ran {self.ran}, reused {self.reused}{verified}{live}"


@dataclass(frozen=True)
class Prepared:
    """What every page of one build shows, each chapter's; the renderer's, the checks' and publishing's source."""

    report: Report
    by_chapter: Mapping[str, Chapter] = field(default_factory=dict)
    #: Where the runs of a chapter shown from its entry are read, when first asked for.
    store: TraceStore | None = None
    _read: dict[str, ChapterTraces] = field(default_factory=dict, compare=False, repr=False)

    @property
    def enabled(self) -> bool:
        """Whether traces are on for this build (``PRIMER_TRACES`` not ``off``)."""
        return not self.report.off

    def chapters(self) -> list[str]:
        """The chapters shown, sorted."""
        return sorted(self.by_chapter)

    def summary(self, chapter: str) -> Shown | None:
        """What the pages show of a chapter, without reading a run (None: it shows none)."""
        found = self.by_chapter.get(chapter)
        return found.shown if found is not None else None

    def traces(self, chapter: str) -> ChapterTraces:
        """A chapter's runs (read from its entry on first use); raises ``NotFound`` naming what exists."""
        found = self.by_chapter.get(chapter)
        if found is not None and found.traces is not None:
            return found.traces
        if found is None or self.store is None:
            from primer.errors import NotFound

            chapters = ", ".join(self.chapters()) or "none"
            raise NotFound(f"There are no traces for chapter {chapter!r}. The chapters are: {chapters}.")
        if chapter not in self._read:
            self._read[chapter] = self.store.read(found.shown)
        return self._read[chapter]


@dataclass(frozen=True)
class Setup:
    """How a book's traces are prepared, besides its chapters and store."""

    #: None: the ``PRIMER_*`` settings of ``environ`` (by default the process's), read at every build.
    settings: Settings | None = None
    environ: Mapping[str, str] | None = None
    #: Inputs of the renderer besides the traces and its files (the prices), part of every key.
    options: Mapping[str, str] = field(default_factory=dict)
    #: None runs live scenarios over one shared SDK client (``primer.book._shared_live``).
    live_runner: LiveRunner | None = None
    workers: int = 4
    #: Seconds one live scenario may take, from its start.
    time_limit: float = 300.0
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("mkdocs.plugins.primer"))

    def settings_now(self) -> Settings:
        """The given settings, else the environment's (warning about what is wrong)."""
        from primer.errors import ConfigError
        from primer.settings import Settings

        if self.settings is not None:
            return self.settings
        try:
            return Settings.from_env(self.environ, warn=lambda message: self.log.warning(f"traces: {message}"))
        except ConfigError as error:
            self.log.warning(f"traces: {error} Live runs are off for this build.")
            return Settings.without_live(self.environ)


def prepare(chapters: Chapters, store: TraceStore, setup: Setup) -> Prepared:
    """What every page shows: each chapter from its entry in the cache, or made the full way and kept."""
    environ = setup.environ if setup.environ is not None else os.environ
    log = setup.log
    # Settings (and pydantic) only when they decide more than the key: a given one, or a secret to validate.
    secrets = (VARIABLES["api_key"], VARIABLES["service_key"])
    settings = setup.settings_now() if setup.settings is not None or any(environ.get(s) for s in secrets) else None
    if (settings.traces == "off") if settings is not None else traces_off(environ):
        log.info(Report(off=True).line())
        return Prepared(Report(off=True))
    if settings is None:
        for message in unknown_variables(environ):
            log.warning(f"traces: {message}")
    live = 0 if settings is not None and settings.live_enabled else None
    try:
        names = chapters.names()
    except Exception as error:  # noqa: BLE001 - a broken package is reported, not fatal
        why = (settings or setup.settings_now()).redactor().text(str(error))
        log.warning(f"traces: the chapters' package {chapters.package} could not be imported: {why}")
        return Prepared(Report(live=live), store=store)
    renderer = renderer_version()
    options = {
        **(settings_options(setup.settings) if setup.settings is not None else environ_options(environ)),
        **setup.options,
    }

    def key(chapter: str, code: str) -> str:
        return chapter_key(chapter, code, store.frozen_bytes(chapter), options, renderer)

    codes = chapters.fingerprints(names)
    keys = {name: key(name, codes[name]) for name in names}
    found: dict[str, Chapter] = {}
    reused = 0
    for name in names:
        if (kept := Shown.read(store.cache.entry(name, keys[name]))) is not None:
            shown, warnings, count = kept
            for warning in warnings:
                log.warning(warning)
            found[name] = Chapter(shown, None, shown.mock, tuple(warnings))
            reused += count
    works = [Work(name, codes[name], keys[name]) for name in names if name not in found]
    if works:
        run = Run(chapters, store, settings or setup.settings_now(), setup, key)
        works = run.full_way(works)
        found |= {work.name: run.show(work) for work in works}
    verified = [work.verified for work in works if work.verified is not None]
    report = Report(
        ran=sum(work.ran for work in works),
        reused=reused + sum(work.reused for work in works),
        verified=sum(verified) if verified else None,
        live=None if live is None else sum(work.live_runs for work in works),
    )
    log.info(report.line())
    return Prepared(report, {name: found[name] for name in names}, store)
