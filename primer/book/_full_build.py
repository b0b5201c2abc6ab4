"""The full way of ``Book.prepare``: reuse or run, verify, record, show, keep.

Taken for the chapters whose entry is not in the cache (``primer.book._cache``);
this module, and the engine it imports (pydantic, the trace models, the
runner), are loaded only then. For each such chapter, along the data's way
(``primer.book._build``'s docstring has the whole picture)::

    mock         the trace in the chapter's entry (or another of its entries)
                 if made by its code (``is_current``), else
                 run in this process, or in a new one when library code
                 changed under a long-lived process (``mkdocs serve``)
    live         verify, plan, record, settle (``primer.book._live_build``)
    show         what the page shows is handed to the store; every failed
                 scenario and every mock script not used up is a warning
    keep         what the page shows and the warnings, in the chapter's entry
                 under its key as it is now (a refresh rewrote the frozen file)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from primer.book import _live_build as live_build
from primer.book._execute import error_run, in_worker, run_mock_chapter
from primer.book._plan import is_current
from primer.book._report import Report, failed
from primer.book._source import ChapterTraces, Shown
from primer.book._state import ChapterState
from primer.script_check import unused_warnings
from primer.trace import ChapterRun

if TYPE_CHECKING:
    from primer.book._build import Book
    from primer.scenario import Scenario
    from primer.settings import Settings

__all__ = ["run"]


def run(book: Book, codes: dict[str, str], settings: Settings, report: Report) -> None:
    """Go through the chapters of ``codes`` (name -> fingerprint) the full way; hand what each shows to the store."""
    states = [ChapterState(name, code, book.key(name, code)) for name, code in codes.items()]
    states = [_mock(book, state, settings, report) for state in states]
    _fresh_mock(book, [s for s in states if s.stale_library], settings, report)
    jobs: list[tuple[ChapterState, Scenario]] = []
    for state in states:
        live_build.verify(book, state, settings, report)
        jobs += live_build.plan(book, state, settings, report)
    live_build.record(book, states, jobs, settings, report)
    for state in states:
        _show(book, state, report, retried=settings.live_enabled)


def _mock(book: Book, state: ChapterState, settings: Settings, report: Report) -> ChapterState:
    stored = book.stored(state.name, "mock", state.entry)
    if not is_current(stored, state.key):
        stored = book.store.earlier_mock(state.name, state.entry, state.key)
    if is_current(stored, state.key):
        state.mock = stored
        report.reused += len(stored.scenarios) if stored else 0
        return state
    state.stale_library = bool(book.chapters.stale_library(state.name))
    if not state.stale_library and state.load(book.chapters, settings):  # else: in a new interpreter, below
        _keep(book, state, run_mock_chapter(book.chapters, state.name, settings), report)
    return state


def _keep(book: Book, state: ChapterState, run: ChapterRun, report: Report) -> None:
    run.source_hash = state.key
    state.mock = run
    report.ran += len(run.scenarios)
    book.save(run, state.entry)


def _fresh_mock(book: Book, fresh: list[ChapterState], settings: Settings, report: Report) -> None:
    """Run chapters whose library code changed since this process imported it, in a new interpreter."""
    if not fresh:
        return
    book.log.info(f"traces: library code changed since this process started; running {len(fresh)} chapter(s) anew")
    output = in_worker(book.chapters.package, [s.name for s in fresh], book.time_limit)
    runs = {run.chapter: run for run in output.runs}
    for state in fresh:
        if state.name in runs:
            _keep(book, state, runs[state.name], report)
        else:
            why = output.errors.get(state.name, "the worker gave no trace for it")
            state.import_error = error_run("import", "mock", RuntimeError(why), settings.redactor())


def _show(book: Book, state: ChapterState, report: Report, *, retried: bool) -> None:
    mock = state.mock
    if mock is None and state.import_error is not None:
        # Not stored: the import is tried again next build, and the
        # trace must not outlive the broken file.
        mock = ChapterRun(chapter=state.name, mode="mock", model="mock", scenarios=[state.import_error])
    shown = mock.scenarios if mock else []
    name = state.name
    book.scenario_names[name] = None if state.import_error else [s.name for s in shown]
    for run in [*shown, *(state.live.scenarios if state.live else [])]:
        if failed(run) and (warning := report.failure(name, run)) is not None:
            book.warn(name, warning)
    for unused in [warning for run in shown for warning in unused_warnings(run)]:
        book.warn(name, f"traces: {name} / {unused}")  # a mock script the run did not use up
    # Kept under the key as it is now: a refresh may have rewritten the frozen file.
    key = book.key(name, state.key)
    store, live = book.store, state.live
    traces = ChapterTraces(name, mock, live, state.status, store.download_url(name), store.payloads_url(name))
    summary = Shown.of(traces, key)
    store.show(summary, traces)
    # A live run with a failed scenario is recorded again by the next build with a key
    # (``plan.plan_live``): with live runs on, it is not kept, so that build takes the full way.
    retry = retried and live is not None and any(failed(run) for run in live.scenarios)
    if state.import_error is None and mock is not None and not retry:
        if key != state.entry:
            book.save(mock, key)
        book.keep(store.entry(name, key), summary)
