"""Start offsets: every timed part of a trace says when it began, and they agree with the durations.

A run stamps them as it goes (virtual clock in mock mode, measured live); a trace written
before version 3 of the schema gets them from its recorded order and durations. The frozen
live traces of ch05 and ch09 were migrated that way: the version-2 files they were are kept in
``tests/fixtures/traces_v2``, and migrating them must give the committed files, every recorded
value unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from primer.agent import Agent
from primer.chapters import scenarios_of
from primer.clock import VirtualClock
from primer.offsets import derive, model_waits, place
from primer.replay import verify_chapter
from primer.runner import run_chapter
from primer.tools import Tool
from primer.trace import SCHEMA_VERSION, Attempt, Backoff, ChapterRun, Ending, Message, ModelCall, ScenarioRun
from primer.trace_file import parse, read_trace
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider
from tests.servers.service import LocalHttpbin

ROOT = Path(__file__).resolve().parent.parent
V2 = ROOT / "tests" / "fixtures" / "traces_v2"
COMMITTED = ROOT / "docs" / "traces"
FROZEN = ["ch05_loop_endings", "ch09_who_retries"]
#: Offsets and durations are kept to the microsecond; a sum of two may be one off.
ROUNDING = 0.002


@dataclass
class Span:
    """A timed part of a run: where it is, when it began and ended, and what it holds."""

    label: str
    start: float
    end: float
    children: list[Span] = field(default_factory=list)


def timeline(run: ScenarioRun) -> Span:
    """A run as nested spans, every part in the order recorded."""
    assert run.timing.start_ms == 0.0
    root = Span(run.name, 0.0, run.timing.total_ms)
    for turn in run.turns:
        assert turn.timing.start_ms is not None
        assert turn.timing.end_ms is not None
        node = Span(f"turn {turn.number}", turn.timing.start_ms, turn.timing.end_ms)
        call = turn.model_call
        assert call.timing.start_ms is not None
        assert call.timing.end_ms is not None
        model = Span("model", call.timing.start_ms, call.timing.end_ms)
        waits = model_waits(call)
        for exchange in call.exchanges:
            wait = waits.get(exchange.attempt)
            if wait is not None and model.children and model.children[-1].label != f"exchange {exchange.attempt}":
                # The wait before this attempt sits between the two exchanges.
                last = model.children[-1]
                model.children.append(Span("wait", last.end, last.end + wait.seconds * 1000))
            assert exchange.timing.start_ms is not None
            assert exchange.timing.end_ms is not None
            model.children.append(
                Span(f"exchange {exchange.attempt}", exchange.timing.start_ms, exchange.timing.end_ms)
            )
        node.children.append(model)
        for tool in turn.tools:
            assert tool.timing.start_ms is not None
            assert tool.timing.end_ms is not None
            child = Span(f"tool {tool.name}", tool.timing.start_ms, tool.timing.end_ms)
            for step in tool.steps:
                if isinstance(step, Attempt):
                    assert step.timing.start_ms is not None
                    assert step.timing.end_ms is not None
                    child.children.append(Span(f"attempt {step.number}", step.timing.start_ms, step.timing.end_ms))
                else:
                    assert step.start_ms is not None
                    child.children.append(Span("backoff", step.start_ms, step.start_ms + step.seconds * 1000))
            node.children.append(child)
        root.children.append(node)
    return root


def problems(span: Span) -> Iterator[str]:
    """Where children leave their parent or siblings overlap or go back in time."""
    if span.end < span.start:
        yield f"{span.label} ends before it begins"
    previous: Span | None = None
    for child in span.children:
        if child.start < span.start - ROUNDING or child.end > span.end + ROUNDING:
            yield f"{child.label} [{child.start}, {child.end}] is not inside {span.label} [{span.start}, {span.end}]"
        if previous is not None and child.start < previous.end - ROUNDING:
            yield f"{child.label} begins at {child.start}, before {previous.label} ended at {previous.end}"
        previous = child
        yield from problems(child)


def check(run: ChapterRun) -> None:
    for scenario in run.scenarios:
        found = list(problems(timeline(scenario)))
        assert not found, f"{run.chapter} {run.mode} {scenario.name}: {found}"


# -- migration of the frozen live traces ------------------------------------------


def v2_data(chapter: str) -> dict[str, Any]:
    return json.loads((V2 / f"{chapter}.live.json").read_text())


def migrated_v2(chapter: str) -> ChapterRun:
    """A version-2 file as the one reader reads it: migrated."""
    return read_trace(V2 / f"{chapter}.live.json")


def recorded_values(old: Any, new: Any, path: str = "") -> Iterator[str]:
    """Where a value of the old file is not the same in the new one (new fields are left out)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), path
        for key, value in old.items():
            if key == "schema_version":
                continue
            yield from recorded_values(value, new.get(key, ...), f"{path}.{key}")
    elif isinstance(old, list):
        if not isinstance(new, list) or len(new) != len(old):
            yield f"{path}: {len(old)} items became {new!r:.40}"
            return
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from recorded_values(a, b, f"{path}[{index}]")
    elif type(old) is not type(new) or old != new:
        yield f"{path}: {old!r} became {new!r}"


@pytest.mark.parametrize("chapter", FROZEN)
def test_migrating_a_frozen_trace_keeps_every_recorded_value_and_the_order(chapter: str) -> None:
    old = v2_data(chapter)
    assert old["schema_version"] == 2
    assert ChapterRun.model_validate(old).schema_version == 2, "the models validate; only the reader migrates"
    run = migrated_v2(chapter)
    assert run.schema_version == SCHEMA_VERSION == 3
    new = run.model_dump(mode="json")
    # Every duration, every turn, tool, attempt and backoff where and as it was.
    assert list(recorded_values(old, new)) == []
    check(run)


@pytest.mark.parametrize("chapter", FROZEN)
def test_the_offsets_follow_the_recorded_order_and_durations(chapter: str) -> None:
    run = migrated_v2(chapter)
    for scenario in run.scenarios:
        cursor = 0.0
        for turn in scenario.turns:
            assert turn.timing.start_ms == pytest.approx(cursor, abs=ROUNDING)
            call = turn.model_call
            assert call.timing.start_ms == turn.timing.start_ms
            inner = call.timing.start_ms
            for exchange in call.exchanges:
                assert exchange.timing.start_ms == pytest.approx(inner, abs=ROUNDING)
                inner = exchange.timing.end_ms
            after = call.timing.end_ms
            for tool in turn.tools:
                assert tool.timing.start_ms == pytest.approx(after, abs=ROUNDING)
                inner = tool.timing.start_ms
                for step in tool.steps:
                    if isinstance(step, Attempt):
                        assert step.timing.start_ms == pytest.approx(inner, abs=ROUNDING)
                        inner = step.timing.end_ms
                    else:
                        assert step.start_ms == pytest.approx(inner, abs=ROUNDING)
                        inner = step.start_ms + step.seconds * 1000
                after = tool.timing.end_ms
            cursor = turn.timing.end_ms


@pytest.mark.parametrize("chapter", FROZEN)
def test_the_scenarios_began_one_after_the_other_from_the_recorded_date(chapter: str) -> None:
    run = migrated_v2(chapter)
    began = datetime.fromisoformat(v2_data(chapter)["recorded_at"])
    for scenario in run.scenarios:
        assert scenario.started_at == began
        began += timedelta(milliseconds=scenario.timing.total_ms)


def test_the_ch09_backoff_waits_its_50ms_between_the_two_attempts() -> None:
    run = migrated_v2("ch09_who_retries")
    tool = run.scenario("service_is_busy").turns[0].tools[0]
    first, wait, second = tool.steps
    assert isinstance(first, Attempt)
    assert isinstance(wait, Backoff)
    assert isinstance(second, Attempt)
    assert (first.timing.start_ms, wait.start_ms, second.timing.start_ms) == (1198.074, 1198.074, 1248.074)


@pytest.mark.parametrize("chapter", FROZEN)
def test_the_committed_trace_is_the_migrated_one_and_reads_back_unchanged(chapter: str) -> None:
    migrated = migrated_v2(chapter)
    committed = read_trace(COMMITTED / f"{chapter}.live.json")
    stamps = {"source_hash", "verified_at"}  # a later verification re-stamps, and only that
    assert committed.model_dump(exclude=stamps) == migrated.model_dump(exclude=stamps)
    # Written at version 3 and read again, nothing moves: a migration runs once.
    again = ChapterRun.model_validate_json(migrated.model_dump_json())
    assert again == migrated


@pytest.mark.parametrize("chapter", FROZEN)
def test_a_migrated_trace_still_verifies_by_replay(chapter: str) -> None:
    migrated = migrated_v2(chapter)
    check_ = verify_chapter(migrated, scenarios_of(chapter))
    assert check_.verified, [c.line() for c in check_.scenarios]


def test_a_version_1_mock_trace_is_migrated_without_a_moment() -> None:
    data = run_chapter("ch09_who_retries").model_dump(mode="json")

    def without_offsets(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_offsets(v) for k, v in value.items() if k not in ("start_ms", "started_at")}
        if isinstance(value, list):
            return [without_offsets(v) for v in value]
        return value

    run = parse(json.dumps({**without_offsets(data), "schema_version": 1}).encode(), Path("ch09_who_retries.mock.json"))
    assert all(scenario.started_at is None for scenario in run.scenarios)
    check(run)


def test_derive_fills_only_what_is_missing() -> None:
    run = run_chapter("ch09_who_retries").scenario("service_is_busy")
    before = run.model_dump()
    assert derive(run).model_dump() == before, "a run that says when everything began is left as it is"


# -- what a run records ------------------------------------------------------------


def test_a_mock_run_stamps_every_part_on_the_virtual_clock() -> None:
    run = run_chapter("ch09_who_retries")
    check(run)
    assert all(scenario.started_at is None for scenario in run.scenarios), "a mock run has no moment"
    busy = run.scenario("service_is_busy").turns[0].tools[0]
    first, wait, second = busy.steps
    assert isinstance(first, Attempt)
    assert isinstance(wait, Backoff)
    assert isinstance(second, Attempt)
    assert first.timing.end_ms is not None
    assert wait.start_ms is not None
    assert wait.start_ms >= first.timing.end_ms - ROUNDING
    # Simulated time: the second attempt starts after the whole wait, though none was slept.
    assert second.timing.start_ms is not None
    assert second.timing.start_ms - wait.start_ms >= wait.seconds * 1000


def test_a_streamed_mock_reply_is_placed_in_its_turn() -> None:
    run = run_chapter("ch11_streaming")
    check(run)
    for scenario in run.scenarios:
        for turn in scenario.turns:
            stream = turn.model_call.streamed
            if stream is not None and stream.events:
                assert stream.events[-1].at_ms <= turn.model_call.timing.total_ms + ROUNDING


@pytest.mark.slow
def test_a_live_run_stamps_every_part_and_its_moment(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    for scenario in scenarios_of("ch09_who_retries"):
        replay_provider.load(f"ch09_who_retries.{scenario.name}")
    before = datetime.now(UTC)
    settings = live_settings(replay_provider, httpbin, api_key="sk-offsets", service_key="svc-offsets")
    run = run_chapter("ch09_who_retries", "live", settings=settings)
    after = datetime.now(UTC)
    check(run)
    moments = [scenario.started_at for scenario in run.scenarios]
    assert all(moment is not None and before <= moment <= after for moment in moments)
    assert moments == sorted(moments)  # type: ignore[type-var]
    # The wire's time is inside the model call's: the exchange began after the call did.
    call = run.scenarios[0].turns[0].model_call
    assert call.exchanges
    assert call.exchanges[0].timing.start_ms is not None
    assert call.exchanges[0].timing.start_ms >= call.timing.start_ms  # type: ignore[operator]


@dataclass
class UntimedModel:
    """A model written for a test that records no time at all."""

    replies: list[Message]

    def complete(
        self, context: Sequence[Message], tools: Sequence[Tool[Any]], settings: Mapping[str, Any]
    ) -> ModelCall:
        return ModelCall(kind="mock", context=list(context), reply=self.replies.pop(0), finish_reason="stop")


def test_a_model_that_does_not_time_itself_is_placed_from_the_order() -> None:
    clock = VirtualClock()
    agent = Agent(model=UntimedModel([Message(role="ai", content="hi")]), tools=[], clock=clock)
    origin = clock.now() * 1000
    clock.sleep(0.25)
    agent.ask([Message(role="human", content="hello")])
    run = ScenarioRun(name="s", mode="mock", turns=agent.turns, ending=Ending(reason="no_tool_calls"))
    place(run, origin)
    turn = run.turns[0]
    assert turn.timing.start_ms == pytest.approx(250.0, abs=1.0)
    # The agent stamped the turn; the call, which the model did not time, starts with it.
    assert turn.model_call.timing.start_ms == turn.timing.start_ms
