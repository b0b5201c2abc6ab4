"""The plan decides from what is stored: what is current, what to verify, what to record live, what to keep."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import SecretStr

from primer.book._book import Book, Stopwatch
from primer.book._chapters import Chapters
from primer.book._steps import LIBRARY_CHANGED, NEVER_RECORDED, Run, Work
from primer.replay import ChapterCheck, Divergence, ScenarioCheck
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ScenarioRun

KEY = "k" * 20
OLD = "o" * 20
NO_KEY = Settings()
KEYED = Settings(api_key=SecretStr("sk-plan-0123456789"))
Make = Callable[[Settings], Run]


def chapter(source_hash: str | None, *endings: str, mode: str = "live") -> ChapterRun:
    reasons = endings or ("no_tool_calls",)
    runs = [ScenarioRun(name=f"s{i}", mode=mode, ending=Ending(reason=e)) for i, e in enumerate(reasons)]
    return ChapterRun(
        chapter="ch", mode=mode, source_hash=source_hash, recorded_at="2026-01-02T03:04:05+00:00", scenarios=runs
    )


def check(*, verified: bool) -> ChapterCheck:
    divergence = None
    if not verified:
        where = {"turn": 1, "request": "model request, attempt 1", "field": "body"}
        divergence = Divergence(scenario="s0", kind="request", recorded="a", now="b", **where)
    return ChapterCheck(chapter="ch", scenarios=[ScenarioCheck(scenario="s0", requests=1, divergence=divergence)])


@pytest.fixture
def make(tmp_path: Path) -> Make:
    """A run of the full way in a book of its own (its own cache), with these settings."""
    books = itertools.count()

    def made(settings: Settings) -> Run:
        root = tmp_path / str(next(books))
        book = Book(root / "docs", root / "cache", settings=settings)
        return Run(book, settings, lambda chapter, code: "key", Stopwatch())

    return made


def plan(
    make: Make, frozen: ChapterRun | None, settings: Settings, found: ChapterCheck | None = None, **more: bool
) -> Work:
    work = Work("ch", KEY, frozen=frozen, check=found, scenarios=(), **more)  # type: ignore[arg-type]
    make(settings).plan(work)
    return work


def test_a_frozen_trace_is_verified_only_when_its_code_changed_and_it_is_not_recorded_anyway(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    replayed: list[str] = []

    def replay(self: Run, work: Work, frozen: ChapterRun, scenarios: object) -> ChapterCheck:
        replayed.append(work.name)
        return check(verified=True)

    monkeypatch.setattr(Run, "replay", replay)

    def verifies(frozen: ChapterRun | None, settings: Settings) -> bool:
        run, work = make(settings), Work("ch", KEY, scenarios=())
        if frozen is not None:
            run.book.save(frozen)
        replayed.clear()
        run.verify(work)
        return bool(replayed)

    assert not verifies(None, NO_KEY)
    assert not verifies(chapter(KEY), NO_KEY)
    assert verifies(chapter(OLD), NO_KEY)
    assert verifies(chapter(OLD), KEYED), "with a key too: a verified trace need not be recorded"
    assert not verifies(chapter(OLD), KEYED.model_copy(update={"live": "refresh"}))
    assert not verifies(chapter(OLD, "provider_failure"), KEYED), "a failed one is recorded again"
    assert verifies(chapter(OLD, "provider_failure"), NO_KEY)


def test_a_verdict_is_kept_by_its_inputs_and_a_verified_trace_is_shown_stamped(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts = [check(verified=False), check(verified=True)]
    monkeypatch.setattr(Run, "replay", lambda self, work, frozen, scenarios: verdicts.pop(0))
    run = make(NO_KEY)
    run.book.save(chapter(OLD))
    first, again = Work("ch", KEY, scenarios=()), Work("ch", KEY, scenarios=())
    run.verify(first)
    run.verify(again)  # the same frozen file and code: its verdict, kept, is not replayed
    assert (first.verified, again.verified, len(verdicts)) == (0, None, 1)
    assert again.check is not None
    assert again.check.divergence is not None
    run.book.save(chapter(OLD, "no_tool_calls", "no_tool_calls"))  # another frozen file: replayed
    stamped = Work("ch", KEY, scenarios=())
    run.verify(stamped)
    assert (stamped.verified, verdicts) == (1, [])
    assert stamped.frozen is not None
    assert (stamped.frozen.source_hash, stamped.frozen.verified_at) == (KEY, stamped.verified_at)
    assert stamped.verified_at is not None


def test_without_a_key_nothing_is_recorded_and_the_status_says_why(make: Make) -> None:
    missing = plan(make, None, NO_KEY)
    assert (missing.status.state, missing.status.reason, missing.record, missing.reused) == (
        "missing",
        NEVER_RECORDED,
        False,
        0,
    )
    # With live runs off, a key alone would record nothing: the status says that too.
    off = plan(make, None, KEYED.model_copy(update={"live": "off"}))
    assert (off.status.state, off.status.reason, off.record) == ("missing", NEVER_RECORDED, False)
    assert "live runs on" in NEVER_RECORDED
    current = plan(make, chapter(KEY, "no_tool_calls", "turn_limit"), NO_KEY)
    assert (current.status.state, current.record, current.reused) == ("current", False, 2)
    stale = plan(make, chapter(OLD), NO_KEY)
    assert stale.status.state == "stale"
    assert "recorded from earlier code (recorded 2026-01-02T03:04:05+00:00)" in stale.status.reason


def test_a_verified_trace_counts_as_verified_not_reused(make: Make) -> None:
    decided = plan(make, chapter(KEY), NO_KEY, check(verified=True))
    assert (decided.status.state, decided.reused, decided.warnings) == ("current", 0, [])


def test_a_divergence_is_said_as_a_warning_without_a_key_and_recorded_again_with_one(
    make: Make, caplog: pytest.LogCaptureFixture
) -> None:
    shown = plan(make, chapter(OLD), NO_KEY, check(verified=False))
    assert shown.status.state == "stale"
    assert "it diverged" in shown.status.reason
    [warning] = shown.warnings
    assert warning.endswith("it is shown stale")
    assert "ch.live.json no longer matches the code" in warning
    with caplog.at_level(logging.INFO):
        again = plan(make, chapter(OLD), KEYED, check(verified=False))
    assert again.record
    assert again.warnings == [], "recorded again now: a note, not a warning"
    assert any(r.getMessage().endswith("it is recorded again now") for r in caplog.records)


def test_with_a_key_what_changed_or_failed_is_recorded_unless_the_library_is_stale(make: Make) -> None:
    assert plan(make, None, KEYED).record
    assert not plan(make, chapter(KEY), KEYED).record
    assert plan(make, chapter(KEY, "scenario_error"), KEYED).record
    refresh = KEYED.model_copy(update={"live": "refresh"})
    assert plan(make, chapter(KEY), refresh).record
    waits = plan(make, chapter(OLD), KEYED, stale_library=True)
    assert (waits.record, waits.status.reason) == (False, LIBRARY_CHANGED)
    off = plan(make, chapter(OLD), KEYED.model_copy(update={"live": "off"}))
    assert not off.record
    assert off.status.reason.endswith("; PRIMER_LIVE=off")


def test_no_live_run_is_recorded_with_library_code_older_than_the_files_though_the_mock_was_current(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The mock trace of the code now was made by another process (reused here, so nothing imported it
    # again): this one's library is still the old code, and a live run would be stamped with the new.
    asked: list[str] = []

    def stale(self: object, chapter: str) -> list[Path]:
        asked.append(chapter)
        return [Path("primer/loop.py")]

    monkeypatch.setattr(Chapters, "stale_library", stale)
    waits = plan(make, chapter(OLD), KEYED)
    assert (waits.record, waits.status.reason, asked) == (False, LIBRARY_CHANGED, ["ch"])
    asked.clear()
    assert not plan(make, chapter(KEY), KEYED).record
    assert asked == [], "nothing to record: the library is not looked at"


def test_a_refresh_is_all_or_nothing(make: Make) -> None:
    def settle(frozen: ChapterRun | None, new: ChapterRun) -> tuple[Work, bool]:
        run = make(KEYED)
        work = Work("ch", KEY, frozen=frozen)
        run.settle(work, new.scenarios, "2026-02-03T04:05:06+00:00")
        return work, run.book.cache.path("ch").is_file()

    frozen = chapter(OLD)
    replaced, saved = settle(frozen, chapter(KEY, "no_tool_calls", "no_tool_calls"))
    assert (replaced.frozen is not None and replaced.frozen.source_hash, saved, replaced.status.state) == (
        KEY,
        True,
        "current",
    )
    kept, saved = settle(frozen, chapter(KEY, "no_tool_calls", "provider_failure"))
    assert (kept.frozen, saved, kept.status.state) == (frozen, False, "stale")
    assert "failed (s1), so it was kept" in kept.status.reason
    assert kept.status.failure is not None
    # Nothing better to keep: the failure is shown.
    assert settle(None, chapter(KEY, "no_tool_calls", "provider_failure"))[1]
    assert settle(chapter(OLD, "provider_failure"), chapter(KEY, "no_tool_calls", "provider_failure"))[1]
