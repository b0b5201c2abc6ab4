"""The trace schema: JSON out and back in is the same object, and mock runs repeat exactly.

A mock run is meant to give the same trace every time, apart from the
durations it measured: that is what lets the store cache it by the hash of
its code and what makes a page diff mean something.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from primer.chapters import chapter_names
from primer.runner import run_chapter
from primer.trace import (
    SCHEMA_VERSION,
    Attempt,
    Backoff,
    ChapterRun,
    Ending,
    Failure,
    Message,
    ModelCall,
    ScenarioRun,
    Timing,
    ToolRun,
    Turn,
)


def without_durations(value: Any) -> Any:
    """The JSON data with every measured duration (``*_ms``) taken out."""
    if isinstance(value, dict):
        return {k: without_durations(v) for k, v in value.items() if not k.endswith("_ms")}
    if isinstance(value, list):
        return [without_durations(v) for v in value]
    return value


@pytest.fixture(scope="module")
def chapters() -> dict[str, ChapterRun]:
    return {name: run_chapter(name) for name in chapter_names()}


def test_every_chapter_survives_a_json_round_trip(chapters: dict[str, ChapterRun]) -> None:
    assert set(chapters) >= {"ch05_loop_endings", "ch09_who_retries"}
    for run in chapters.values():
        again = ChapterRun.model_validate_json(run.model_dump_json())
        assert again == run
        # Steps keep their kind: a backoff does not come back as an attempt.
        assert [type(step) for s in again.scenarios for t in s.turns for tool in t.tools for step in tool.steps] == [
            type(step) for s in run.scenarios for t in s.turns for tool in t.tools for step in tool.steps
        ]
        assert again.turns == run.turns
        assert again.messages == run.messages


def test_the_round_trip_keeps_backoffs_as_backoffs(chapters: dict[str, ChapterRun]) -> None:
    again = ChapterRun.model_validate_json(chapters["ch09_who_retries"].model_dump_json())
    steps = again.scenario("service_is_busy").turns[0].tools[0].steps
    assert [type(step) for step in steps] == [Attempt, Backoff, Attempt]


def test_two_mock_runs_are_equal_apart_from_measured_durations(chapters: dict[str, ChapterRun]) -> None:
    for name, first in chapters.items():
        second = run_chapter(name)
        assert without_durations(second.model_dump(mode="json")) == without_durations(first.model_dump(mode="json"))


def test_durations_are_the_only_difference_the_comparison_ignores(chapters: dict[str, ChapterRun]) -> None:
    # Guard for the test above: stripping *_ms must not hide a content change.
    data = chapters["ch09_who_retries"].model_dump(mode="json")
    changed = json.loads(json.dumps(data))
    changed["scenarios"][0]["turns"][0]["tools"][0]["result"] = "9.99"
    assert without_durations(changed) != without_durations(data)
    stripped = json.dumps(without_durations(data))
    assert "_ms" not in stripped
    assert '"simulated_seconds": 1.0' in stripped


def test_a_mock_trace_is_undated_and_versioned(chapters: dict[str, ChapterRun]) -> None:
    for run in chapters.values():
        data = json.loads(run.model_dump_json())
        assert data["schema_version"] == SCHEMA_VERSION
        assert data["recorded_at"] is None
        assert data["mode"] == "mock"
        assert data["model"] == "mock"


def test_an_unknown_field_fails_loudly_rather_than_rendering_half(chapters: dict[str, ChapterRun]) -> None:
    data = json.loads(chapters["ch05_loop_endings"].model_dump_json())
    data["scenarios"][0]["turns"][0]["surprise"] = True
    with pytest.raises(ValidationError, match="surprise"):
        ChapterRun.model_validate(data)


def test_a_step_of_an_unknown_kind_is_refused() -> None:
    data = {"call_id": "c", "name": "t", "message": "m", "steps": [{"kind": "nap", "seconds": 1}]}
    with pytest.raises(ValidationError):
        ToolRun.model_validate(data)


def test_timing_derives_the_librarys_share_and_keeps_microseconds() -> None:
    timing = Timing(total_ms=1002.4996, outside_ms=1.0004, waited_ms=1000.0)
    assert timing.total_ms == 1002.5
    assert timing.outside_ms == 1.0
    assert timing.library_ms == pytest.approx(1.5)
    assert Timing(total_ms=5.0).library_ms == 5.0
    # Clock jitter must not give a negative share.
    assert Timing(total_ms=1.0, outside_ms=1.2).library_ms == 0.0
    assert "library_ms" not in Timing(total_ms=1.0).model_dump()


def test_totals_count_turns_and_final_messages() -> None:
    def scenario(name: str, turns: int, messages: int) -> ScenarioRun:
        call = ModelCall(kind="mock", context=[])
        return ScenarioRun(
            name=name,
            mode="mock",
            turns=[Turn(number=n + 1, model_call=call) for n in range(turns)],
            transcript=[Message(role="human", content=str(n)) for n in range(messages)],
            ending=Ending(reason="no_tool_calls"),
        )

    run = ChapterRun(chapter="c", mode="mock", scenarios=[scenario("a", 2, 5), scenario("b", 3, 7)])
    assert (run.turns, run.messages) == (5, 12)
    assert run.scenario("b").name == "b"
    with pytest.raises(KeyError):
        run.scenario("z")


@pytest.mark.parametrize(
    ("ending", "label"),
    [
        (Ending(reason="no_tool_calls"), "no_tool_calls"),
        (Ending(reason="answer_received", finish_reason="stop"), "answer_received (finish_reason = stop)"),
        (Ending(reason="tokens_exhausted", finish_reason="length"), "tokens_exhausted (finish_reason = length)"),
        (Ending(reason="turn_limit", detail="stopped after 8 turns"), "turn_limit"),
    ],
)
def test_ending_labels_are_the_seeds(ending: Ending, label: str) -> None:
    assert ending.label == label


def test_a_tool_runs_attempts_skip_its_backoffs() -> None:
    failure = Failure(message="busy", retryable=True, idempotent=True, caller_can_fix=False)
    run = ToolRun(
        call_id="c",
        name="t",
        message="ok",
        steps=[Attempt(number=1, failure=failure), Backoff(seconds=1.0, before_attempt=2), Attempt(number=2)],
    )
    assert [a.number for a in run.attempts] == [1, 2]
    assert ToolRun.model_validate_json(run.model_dump_json()) == run
