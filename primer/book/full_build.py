"""The full way of ``Book.prepare``: fingerprint, reuse or run, verify, record, show.

Taken when the record of the last build (``primer.book.manifest``) does not
show that nothing changed; this module, and the engine it imports (pydantic,
the trace models, the runner), are loaded only then. For each chapter, along
the data's way (``primer.book.build``'s docstring has the whole picture)::

    fingerprint  the chapter's normalised code and the library code it uses
    mock         the cached trace if made by that code (``is_current``), else
                 run in this process, or in a new one when library code
                 changed under a long-lived process (``mkdocs serve``)
    live         verify, plan, record, settle (``primer.book.live_build``)
    show         what the page shows is handed to the store; every failed
                 scenario and every mock script not used up is a warning
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from primer.book import live_build
from primer.book.execute import error_run, in_worker, run_mock_chapter
from primer.book.plan import is_current
from primer.book.report import Report, failed
from primer.book.source import ChapterTraces
from primer.book.state import ChapterState
from primer.script_check import unused_warnings
from primer.trace import ChapterRun

if TYPE_CHECKING:
    from primer.book.build import Book
    from primer.scenario import Scenario
    from primer.settings import Settings

__all__ = ["run"]


def run(book: Book) -> Report:
    """Go through every chapter the full way (the module's docstring), hand what each shows to the store."""
    settings = book.settings_now()
    book.store.clear_shown()
    book.scenario_names = {}
    if settings.traces == "off":
        book.enabled = False
        report = Report(off=True)
        book.log.info(report.line())
        return report
    book.enabled = True
    report = Report(live=0 if settings.live_enabled else None)
    try:
        names = book.chapters.names()
    except Exception as error:  # noqa: BLE001 - a broken package is reported, not fatal
        why = settings.redactor().text(str(error))
        book.log.warning(f"traces: the chapters' package {book.chapters.package} could not be imported: {why}")
        return report
    with book.chapters.snapshot():
        keys = {name: book.chapters.fingerprint(name) for name in names}
    states = [_mock(book, ChapterState(name, keys[name]), settings, report) for name in names]
    _fresh_mock(book, [s for s in states if s.stale_library], settings, report)
    jobs: list[tuple[ChapterState, Scenario]] = []
    for state in states:
        live_build.verify(book, state, settings, report)
        jobs += live_build.plan(book, state, settings, report)
    live_build.record(book, states, jobs, settings, report)
    for state in states:
        _show(book, state, report)
    book.log.info(report.line())
    return report


def _mock(book: Book, state: ChapterState, settings: Settings, report: Report) -> ChapterState:
    stored = book.stored(state.name, "mock")
    if is_current(stored, state.key):
        state.mock = stored
        report.reused += len(stored.scenarios) if stored else 0
        return state
    book.store.forget(state.name)
    state.stale_library = bool(book.chapters.stale_library(state.name))
    if not state.stale_library and state.load(book.chapters, settings):  # else: in a new interpreter, below
        _keep(book, state, run_mock_chapter(book.chapters, state.name, settings), report)
    return state


def _keep(book: Book, state: ChapterState, run: ChapterRun, report: Report) -> None:
    run.source_hash = state.key
    state.mock = run
    report.ran += len(run.scenarios)
    book.save(run)


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


def _show(book: Book, state: ChapterState, report: Report) -> None:
    mock = state.mock
    if mock is None and state.import_error is not None:
        # Not stored: the import is tried again next build, and the
        # trace must not outlive the broken file.
        mock = ChapterRun(chapter=state.name, mode="mock", model="mock", scenarios=[state.import_error])
    shown = mock.scenarios if mock else []
    book.scenario_names[state.name] = None if state.import_error else [s.name for s in shown]
    for run in [*shown, *(state.live.scenarios if state.live else [])]:
        if failed(run) and (warning := report.failure(state.name, run)) is not None:
            book.log.warning(warning)
    for unused in [warning for run in shown for warning in unused_warnings(run)]:
        book.log.warning(f"traces: {state.name} / {unused}")  # a mock script the run did not use up
    store, name = book.store, state.name
    traces = ChapterTraces(name, mock, state.live, state.status, store.download_url(name), store.payloads_url(name))
    book.store.show(traces)
