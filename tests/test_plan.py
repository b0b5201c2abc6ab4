"""The plan decides from data alone: what is current, what to verify, what to record live, what to keep."""

from __future__ import annotations

from pydantic import SecretStr

from primer.book._steps import LIBRARY_CHANGED, NEVER_RECORDED, is_current, plan_live, settle_live, wants_verify
from primer.replay import ChapterCheck, Divergence, ScenarioCheck
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ScenarioRun

KEY = "k" * 20
OLD = "o" * 20
NO_KEY = Settings()
KEYED = Settings(api_key=SecretStr("sk-plan-0123456789"))
PATH = "docs/traces/ch.live.json"


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


def test_a_run_is_current_when_made_by_the_code_now() -> None:
    assert is_current(chapter(KEY, mode="mock"), KEY)
    assert not is_current(chapter(OLD, mode="mock"), KEY)
    assert not is_current(None, KEY)


def test_a_frozen_trace_is_verified_only_when_its_code_changed_and_it_is_not_recorded_anyway() -> None:
    assert not wants_verify(None, KEY, NO_KEY)
    assert not wants_verify(chapter(KEY), KEY, NO_KEY)
    assert wants_verify(chapter(OLD), KEY, NO_KEY)
    assert wants_verify(chapter(OLD), KEY, KEYED), "with a key too: a verified trace need not be recorded"
    assert not wants_verify(chapter(OLD), KEY, KEYED.model_copy(update={"live": "refresh"}))
    assert not wants_verify(chapter(OLD, "provider_failure"), KEY, KEYED), "a failed one is recorded again"
    assert wants_verify(chapter(OLD, "provider_failure"), KEY, NO_KEY)


def test_without_a_key_nothing_is_recorded_and_the_status_says_why() -> None:
    missing = plan_live(None, KEY, None, NO_KEY, stale_library=False, path=PATH)
    assert (missing.status.state, missing.status.reason, missing.record, missing.reused) == (
        "missing",
        NEVER_RECORDED,
        False,
        0,
    )
    current = plan_live(chapter(KEY, "no_tool_calls", "turn_limit"), KEY, None, NO_KEY, stale_library=False, path=PATH)
    assert (current.status.state, current.record, current.reused) == ("current", False, 2)
    stale = plan_live(chapter(OLD), KEY, None, NO_KEY, stale_library=False, path=PATH)
    assert stale.status.state == "stale"
    assert "recorded from earlier code (recorded 2026-01-02T03:04:05+00:00)" in stale.status.reason


def test_a_verified_trace_counts_as_verified_not_reused() -> None:
    restamped = chapter(KEY)
    decided = plan_live(restamped, KEY, check(verified=True), NO_KEY, stale_library=False, path=PATH)
    assert (decided.status.state, decided.reused, decided.divergence) == ("current", 0, None)


def test_a_divergence_is_said_as_a_warning_without_a_key_and_recorded_again_with_one() -> None:
    shown = plan_live(chapter(OLD), KEY, check(verified=False), NO_KEY, stale_library=False, path=PATH)
    assert shown.status.state == "stale"
    assert "it diverged" in shown.status.reason
    assert shown.divergence is not None
    assert shown.divergence.endswith("it is shown stale")
    assert PATH in shown.divergence
    again = plan_live(chapter(OLD), KEY, check(verified=False), KEYED, stale_library=False, path=PATH)
    assert again.record
    assert again.divergence is not None
    assert again.divergence.endswith("it is recorded again now")


def test_with_a_key_what_changed_or_failed_is_recorded_unless_the_library_is_stale() -> None:
    assert plan_live(None, KEY, None, KEYED, stale_library=False, path=PATH).record
    assert not plan_live(chapter(KEY), KEY, None, KEYED, stale_library=False, path=PATH).record
    assert plan_live(chapter(KEY, "scenario_error"), KEY, None, KEYED, stale_library=False, path=PATH).record
    refresh = KEYED.model_copy(update={"live": "refresh"})
    assert plan_live(chapter(KEY), KEY, None, refresh, stale_library=False, path=PATH).record
    waits = plan_live(chapter(OLD), KEY, None, KEYED, stale_library=True, path=PATH)
    assert (waits.record, waits.status.reason) == (False, LIBRARY_CHANGED)
    off = plan_live(chapter(OLD), KEY, None, KEYED.model_copy(update={"live": "off"}), stale_library=False, path=PATH)
    assert not off.record
    assert off.status.reason.endswith("; PRIMER_LIVE=off")


def test_a_refresh_is_all_or_nothing() -> None:
    frozen = chapter(OLD)
    good = chapter(KEY, "no_tool_calls", "no_tool_calls")
    replaced = settle_live(frozen, good)
    assert (replaced.shown, replaced.save, replaced.status.state) == (good, True, "current")
    half = chapter(KEY, "no_tool_calls", "provider_failure")
    kept = settle_live(frozen, half)
    assert (kept.shown, kept.save, kept.status.state) == (frozen, False, "stale")
    assert "failed (s1), so it was kept" in kept.status.reason
    assert kept.status.failure is not None
    # Nothing better to keep: the failure is shown.
    assert settle_live(None, half).save
    assert settle_live(chapter(OLD, "provider_failure"), half).save
