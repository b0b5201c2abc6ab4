"""The live path of a real MkDocs build, with a stand-in for the network.

The build runs in this process (``mkdocs.commands.build.build``, the function
``mkdocs build`` calls) so a ``Book`` registered for the book's mkdocs.yml can
carry an injected live runner: one that succeeds, one that fails, one that is
slow. Everything else is real: config, hook, pages, files.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
from pydantic import SecretStr

from primer.book._book import Book
from primer.book._chapters import Chapters
from primer.runner import run_scenario
from primer.scenario import Scenario
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ScenarioRun
from tests.books import edit, hook_plugin, make_book

pytestmark = pytest.mark.slow

SECRET = "sk-live-test-0123456789"


class FakeLive:
    """Stands in for the provider: the mock run, labelled live, or a failure on demand."""

    def __init__(self) -> None:
        self.fail: dict[str, str] = {}
        self.slow: dict[str, float] = {}
        self.calls: list[str] = []
        self.finished: list[str] = []
        # A slow run waits for this (at most its seconds), so a test knows whether it was still going.
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, scenario: Scenario, settings: Settings) -> ScenarioRun:
        with self.lock:
            self.calls.append(scenario.name)
        try:
            return self._run(scenario, settings)
        finally:
            with self.lock:
                self.finished.append(scenario.name)

    def _run(self, scenario: Scenario, settings: Settings) -> ScenarioRun:
        if scenario.name in self.slow:
            self.release.wait(self.slow[scenario.name])
        how = self.fail.get(scenario.name)
        if how == "raise":
            raise ConnectionError(f"could not reach the provider with key {SECRET}")
        if how == "provider":
            return ScenarioRun(
                name=scenario.name,
                mode="live",
                ending=Ending(reason="provider_failure", detail="the provider answered 503 three times"),
            )
        run = run_scenario(scenario, "mock", settings)
        return run.model_copy(update={"mode": "live"})


@pytest.fixture
def live_book(tmp_path, monkeypatch, caplog):
    book = make_book(tmp_path)
    monkeypatch.syspath_prepend(str(book.root))
    for name in ("PRIMER_API_KEY", "PRIMER_LIVE", "PRIMER_TRACES", "PRIMER_CHAPTERS"):
        monkeypatch.delenv(name, raising=False)
    fake = FakeLive()
    settings = Settings(api_key=SecretStr(SECRET), model="fake-model")
    registered = Book(
        book.docs,
        book.root / ".cache" / "traces",
        chapters=Chapters(book.package),
        settings=settings,
        live_runner=fake,
        time_limit=5.0,
    )
    hook_plugin().book = registered
    caplog.set_level(logging.INFO, logger="mkdocs")
    yield book, registered, fake, caplog
    fake.release.set()  # a slow run left behind ends now
    hook_plugin().book = None


def _build(book, caplog, *, strict: bool = False) -> list[logging.LogRecord]:
    caplog.clear()
    config = load_config(str(book.root / "mkdocs.yml"), strict=strict)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    finally:
        config.plugins.on_shutdown()
    return [r for r in caplog.records if r.name.startswith("mkdocs")]


def _line(records, text: str) -> str:
    [found] = [r.getMessage() for r in records if r.getMessage().startswith(text)]
    return found


def _published(book, chapter: str) -> dict:
    return json.loads((book.root / "site" / "traces" / f"{chapter}.json").read_text())


def _everything(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_live_runs_are_frozen_refreshed_and_kept_when_a_refresh_fails(live_book):
    book, _registered, fake, caplog = live_book
    frozen = book.docs / "traces" / "ch_alpha.live.json"

    # First build: everything runs, live included; one slow scenario shows progress.
    fake.slow["asks_price"] = 1.3
    records = _build(book, caplog)
    assert _line(records, "traces: ran") == "traces: ran 6, reused 0, live: 3"
    assert any(
        r.getMessage().startswith("traces: live runs: ") and "ch_alpha/asks_price" in r.getMessage() for r in records
    )
    assert ChapterRun.model_validate_json(frozen.read_text()).model == "fake-model"
    published = _published(book, "ch_alpha")
    assert published["live_status"]["state"] == "current"
    assert [s["name"] for s in published["live"]["scenarios"]] == ["asks_price", "answers_at_once"]
    good = frozen.read_bytes()
    fake.slow.clear()

    # Nothing changed: nothing runs, nothing is written.
    stamp = frozen.stat().st_mtime_ns
    records = _build(book, caplog)
    assert _line(records, "traces: ran") == "traces: ran 0, reused 6, live: 0"
    assert frozen.stat().st_mtime_ns == stamp

    # The chapter changes and its live refresh fails: the frozen trace stands whole.
    edit(book.chapter("ch_alpha"), "Hello from alpha.", "Hello again from alpha.")
    fake.fail = {"asks_price": "raise", "answers_at_once": "provider"}
    fake.calls.clear()
    records = _build(book, caplog)
    assert sorted(fake.calls) == ["answers_at_once", "asks_price"], "only the changed chapter runs live"
    assert _line(records, "traces: ran") == "traces: ran 4, reused 2, live: 2"
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert any("ch_alpha / asks_price (live)" in w and "ConnectionError" in w for w in warnings), warnings
    assert any("ch_alpha / answers_at_once (live)" in w and "provider_failure" in w for w in warnings), warnings
    assert frozen.read_bytes() == good
    status = _published(book, "ch_alpha")["live_status"]
    assert status["state"] == "stale"
    assert "kept" in status["reason"]
    assert status["failure"] is not None
    assert _published(book, "ch_alpha")["live"]["scenarios"][0]["ending"]["reason"] != "scenario_error"
    # ... and with --strict the failure stops the publish.
    with pytest.raises(Abort):
        _build(book, caplog, strict=True)

    # The provider is back: the next build refreshes the chapter.
    fake.fail.clear()
    records = _build(book, caplog, strict=True)
    assert _line(records, "traces: ran") == "traces: ran 2, reused 4, live: 2"
    assert frozen.read_bytes() != good
    assert _published(book, "ch_alpha")["live_status"]["state"] == "current"

    # The key is in no trace, page, cache or log.
    for root in (book.docs, book.root / "site", book.root / ".cache"):
        assert SECRET not in _everything(root)
    assert SECRET not in caplog.text


def test_a_live_run_past_its_time_limit_is_given_up(live_book):
    book, registered, fake, caplog = live_book
    # Timed against the slow run itself, not the wall: on a loaded machine a build takes seconds.
    registered.time_limit = 1.0
    fake.slow["greets"] = 60.0
    records = _build(book, caplog)
    assert "greets" not in fake.finished, "the build must not wait for the slow run"
    fake.release.set()
    warnings = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert any("ch_beta / greets (live)" in w and "wall-clock limit" in w for w in warnings), warnings
    # No good trace existed, so the failed one is frozen and shown; the next build with a key retries it.
    assert _published(book, "ch_beta")["live"]["scenarios"][0]["ending"]["reason"] == "scenario_error"
    fake.slow.clear()
    records = _build(book, caplog)
    assert _line(records, "traces: ran") == "traces: ran 1, reused 5, live: 1"
    assert _published(book, "ch_beta")["live"]["scenarios"][0]["ending"]["reason"] != "scenario_error"


def test_refresh_reruns_current_live_traces(live_book, monkeypatch):
    book, registered, fake, caplog = live_book
    _build(book, caplog)
    registered.settings = Settings(api_key=SecretStr(SECRET), live="refresh")
    fake.calls.clear()
    records = _build(book, caplog)
    assert _line(records, "traces: ran") == "traces: ran 3, reused 3, live: 3"
    assert sorted(fake.calls) == ["answers_at_once", "asks_price", "greets"]
