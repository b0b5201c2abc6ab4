"""Verifying a frozen live trace by replaying its own recording (``primer.replay``).

The committed live traces of ch05 and ch09 are real DeepSeek and httpbin
traffic. Replayed against the code now, every request they hold must be what
the code sends; a change to the code (or to the recording) must be named
where it first shows, and nothing here may touch the network or sleep.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from pydantic import BaseModel, ConfigDict, Field

from primer.chapters import scenarios_of
from primer.cli import main
from primer.grocery import GroceryItem
from primer.loop import until_no_tool_calls
from primer.replay import (
    IncompleteRecording,
    UnreadableTrace,
    first_difference,
    read_trace,
    request_difference,
    verify_chapter,
)
from primer.scenario import Scenario
from primer.shop import place_order
from primer.tools import tool
from primer.trace import Attempt, ChapterRun, Message, WireRequest

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "docs" / "traces"
CH09 = "ch09_who_retries"
CH05 = "ch05_loop_endings"


def frozen(chapter: str) -> ChapterRun:
    return read_trace(TRACES / f"{chapter}.live.json")


def scenario(chapter: str, name: str) -> Scenario:
    return next(s for s in scenarios_of(chapter) if s.name == name)


def requests(run: ChapterRun, name: str) -> int:
    recorded = run.scenario(name)
    model = sum(len(turn.model_call.exchanges) for turn in recorded.turns)
    service = sum(
        1
        for turn in recorded.turns
        for tool_run in turn.tools
        for step in tool_run.steps
        if isinstance(step, Attempt) and step.request is not None
    )
    return model + service


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay answers from the recording: a real transport asked to send fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a replay reached for the network")

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", refuse)
    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", refuse)


# -- the committed traces verify ----------------------------------------------------


@pytest.mark.parametrize("chapter", [CH09, CH05])
def test_the_committed_live_traces_verify_against_the_code_now(chapter: str) -> None:
    run = frozen(chapter)
    check = verify_chapter(run, scenarios_of(chapter))
    assert check.verified, [c.line() for c in check.scenarios]
    assert [c.scenario for c in check.scenarios] == [s.name for s in run.scenarios]
    # Every recorded request was sent again and answered from the recording.
    assert [c.requests for c in check.scenarios] == [requests(run, s.name) for s in run.scenarios]
    assert check.scenarios[0].line().endswith(f"verified by replay ({check.scenarios[0].requests} requests)")


def test_a_recorded_timeout_is_replayed_as_one_and_backoffs_do_not_sleep() -> None:
    run = frozen(CH09)
    # The order that timed out: no answer was recorded, only the failure.
    [attempt] = run.scenario("order_may_have_landed").turns[0].tools[0].attempts
    assert attempt.response is None
    assert attempt.failure is not None
    assert "did not answer in time" in attempt.failure.message
    started = time.perf_counter()
    check = verify_chapter(run, scenarios_of(CH09))
    assert check.verified
    # The recording waited 0.05 s of backoff and 2 s for the timeout; a replay neither.
    assert time.perf_counter() - started < 2.0


# -- what the code sends changed ------------------------------------------------------


def test_a_changed_system_prompt_is_named_with_a_small_diff() -> None:
    run = frozen(CH09)
    changed = [dataclasses.replace(s, system=s.system + " Be terse.") for s in scenarios_of(CH09)]
    check = verify_chapter(run, changed)
    assert not check.verified
    divergence = check.divergence
    assert divergence is not None
    assert (divergence.scenario, divergence.turn, divergence.kind) == ("service_is_busy", 1, "request")
    assert divergence.request == "model request, attempt 1"
    assert divergence.field == "body messages[0].content"
    assert divergence.recorded == json.dumps(scenario(CH09, "service_is_busy").system)
    assert divergence.now is not None
    assert divergence.now.endswith('Be terse."')
    assert "service_is_busy, turn 1, model request, attempt 1: body messages[0].content was" in divergence.line()


class Order(BaseModel):
    """Order a quantity of an item. Placing an order twice orders it twice."""

    model_config = ConfigDict(title="place_order")
    item: GroceryItem
    quantity: int = Field(description="How many, from 1 to 12.")


def test_a_changed_field_description_of_a_tool_is_named() -> None:
    described = tool(Order)(place_order.function)  # the same tool, its field now described
    changed = [
        dataclasses.replace(s, tools=[described if t.name == "place_order" else t for t in s.tools])
        for s in scenarios_of(CH09)
    ]
    divergence = verify_chapter(frozen(CH09), changed).divergence
    assert divergence is not None
    assert divergence.field == "body tools[0].function.parameters.properties.quantity.description"
    assert (divergence.recorded, divergence.now) == ("absent", '"How many, from 1 to 12."')


def test_a_changed_service_path_is_named_at_its_attempt() -> None:
    busy = scenario(CH09, "service_is_busy")
    check = verify_chapter(frozen(CH09), [dataclasses.replace(busy, service=["/status/503", "/get"])])
    first = check.scenarios[0]
    assert first.divergence is not None
    assert (first.divergence.turn, first.divergence.request) == (1, "tool price_of, attempt 1")
    assert (first.divergence.field, first.divergence.recorded, first.divergence.now) == (
        "path",
        '"/status/429"',
        '"/status/503"',
    )


def ask_once_more(agent: Any, context: list[Message], max_turns: int) -> Any:
    """The usual loop, then one more question: a call the recording never saw."""
    ending = until_no_tool_calls(agent, context, max_turns)
    agent.ask(context)
    return ending


def test_a_recording_shorter_than_the_new_run_is_named_as_such() -> None:
    no = scenario(CH09, "service_says_no")
    check = verify_chapter(frozen(CH09), [dataclasses.replace(no, loop=ask_once_more)])
    divergence = check.scenarios[0].divergence
    assert divergence is not None
    assert divergence.kind == "ran_out"
    assert divergence.line() == (
        "service_says_no: the recording ran out after turn 2: the code now sends a 3rd model request "
        "(POST /v1/chat/completions), and the recording holds no more requests"
    )


def test_a_run_that_now_stops_early_leaves_requests_unsent() -> None:
    no = scenario(CH09, "service_says_no")
    divergence = verify_chapter(frozen(CH09), [dataclasses.replace(no, max_turns=1)]).scenarios[0].divergence
    assert divergence is not None
    assert divergence.kind == "left_over"
    assert divergence.line() == (
        "service_says_no, turn 2: the code no longer sends the recorded model request, attempt 1 "
        "(1 recorded request not sent)"
    )


def test_scenarios_added_and_removed_since_the_recording_are_divergences() -> None:
    first, *rest = scenarios_of(CH09)
    check = verify_chapter(frozen(CH09), [dataclasses.replace(first, name="brand_new"), *rest])
    lines = [c.line() for c in check.scenarios if not c.verified]
    assert lines == [
        "brand_new: diverged: brand_new: the live trace holds no run of this scenario",
        "service_is_busy: diverged: service_is_busy: the live trace holds this scenario, "
        "which the chapter no longer declares",
    ]


# -- comparing requests ---------------------------------------------------------------


def test_json_bodies_are_compared_in_any_key_order_but_by_type() -> None:
    assert first_difference({"a": 1, "b": [1, {"c": None}]}, {"b": [1, {"c": None}], "a": 1}) is None
    assert first_difference({"n": 1}, {"n": 1.0}) == ("n", 1, 1.0)
    assert first_difference({"n": 1}, {"n": True}) == ("n", 1, True)
    assert first_difference({"x": [1]}, {"x": [1, 2]}) == ("x[1]", ..., 2)
    assert first_difference({"a b": 1}, {}) == ('["a b"]', 1, ...)


def wire(**changes: Any) -> WireRequest:
    base = WireRequest(
        method="POST",
        url="https://api.example.test/v1/chat/completions?b=2&a=1",
        headers=[
            ("accept", "application/json"),
            ("authorization", "not recorded"),
            ("content-length", "12"),
            ("user-agent", "OpenAI/Python 3.6.0"),
            ("x-stainless-package-version", "3.6.0"),
            ("x-stainless-retry-count", "0"),
        ],
        json_body={"model": "m", "messages": []},
    )
    return base.model_copy(update=changes)


def test_volatile_headers_are_not_compared_and_meaningful_ones_are() -> None:
    newer_sdk = wire(
        url="https://api.example.test/v1/chat/completions?a=1&b=2",
        headers=[
            ("accept", "application/json"),
            ("authorization", "not recorded"),
            ("content-length", "13"),
            ("user-agent", "OpenAI/Python 4.0.0"),
            ("x-stainless-package-version", "4.0.0"),
            ("x-stainless-retry-count", "1"),
            ("x-request-id", "abc"),
        ],
    )
    assert request_difference(wire(), newer_sdk) is None
    assert request_difference(wire(), wire(headers=[("accept", "text/plain")])) == (
        "header accept",
        "application/json",
        "text/plain",
    )
    assert request_difference(wire(), wire(method="PUT"))[0] == "method"  # type: ignore[index]
    assert request_difference(wire(), wire(url="https://other.test/v1/chat/completions?a=1&b=2"))[0] == "origin"  # type: ignore[index]
    assert request_difference(wire(), wire(url="https://api.example.test/v1/chat/completions?a=2&b=2"))[0] == "query"  # type: ignore[index]
    assert request_difference(wire(), wire(json_body=None, text_body="hi")) == (
        "body",
        {"model": "m", "messages": []},
        None,
    )


# -- recordings that cannot be replayed ------------------------------------------------


def test_an_answer_that_never_came_without_a_known_failure_is_an_incomplete_recording() -> None:
    run = frozen(CH09)
    [attempt] = run.scenario("order_may_have_landed").turns[0].tools[0].attempts
    assert attempt.failure is not None
    attempt.failure = attempt.failure.model_copy(update={"message": "something happened"})
    with pytest.raises(IncompleteRecording, match=r"order_may_have_landed, turn 1: the tool place_order, attempt 1"):
        verify_chapter(run, scenarios_of(CH09))


def test_a_model_call_without_its_wire_is_an_incomplete_recording() -> None:
    run = frozen(CH05)
    run.scenarios[1].turns[0].model_call.exchanges = []
    with pytest.raises(IncompleteRecording, match="tokens_exhausted, turn 1: the model call holds no recorded request"):
        verify_chapter(run, scenarios_of(CH05))


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "could not be read"),
        (b'{"schema_version": 99, "chapter": "x", "mode": "live"}', "its schema version is 99"),
        (b'{"schema_version": 1, "chapter": "x"}', "1 field does not fit the trace schema, at mode"),
    ],
)
def test_a_trace_file_that_cannot_be_read_is_named(tmp_path: Path, content: bytes, said: str) -> None:
    path = tmp_path / "x.live.json"
    path.write_bytes(content)
    with pytest.raises(UnreadableTrace, match=said) as caught:
        read_trace(path)
    assert str(path) in str(caught.value)


# -- python -m primer verify -------------------------------------------------------------


def test_the_committed_live_traces_are_stamped_for_the_code_as_committed() -> None:
    """A fresh clone's first build shows them as they are, replaying nothing.

    A trace stamped for earlier code is replayed by every cold build (about 60 ms of this book's, in its chapters' code,
    and the SDK imported) and, with a key, every publish verifies it again: a change to the code a live trace
    depends on is committed with the stamps ``python -m primer.book build --stamp`` writes once it verified.
    """
    from primer.book._chapters import Chapters

    chapters, frozen = Chapters("primer.chapters"), sorted(TRACES.glob("*.live.json"))
    stale = [
        path.name
        for path in frozen
        if json.loads(path.read_bytes())["source_hash"] != chapters.fingerprint(path.name.removesuffix(".live.json"))
    ]
    assert frozen, "no frozen live trace found in docs/traces"
    assert not stale, f"{stale}: run `python -m primer.book build --stamp` and commit what it stamps"


def test_verify_prints_one_line_per_scenario_and_exits_0_when_all_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from primer.book._chapters import Chapters
    from primer.fingerprint import RUNNER, CodeGraph

    # Recorded from the code as it is: its fingerprint is the chapter's now, as the build makes it.
    data = json.loads((TRACES / f"{CH09}.live.json").read_text())
    data["source_hash"] = now = CodeGraph(["primer.chapters", "primer"]).fingerprint(f"primer.chapters.{CH09}", RUNNER)
    assert now == Chapters("primer.chapters").fingerprint(CH09)
    (tmp_path / f"{CH09}.live.json").write_text(json.dumps(data))
    assert main(["verify", CH09, "--traces", str(tmp_path)]) == 0
    *lines, last = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"{CH09} {s.name}" for s in scenarios_of(CH09)]
    assert all(": verified by replay (" in line for line in lines)
    assert last == f"verified {len(lines)} scenarios"
    # Recorded from earlier code: verified still, and the summary says what the page says of it.
    data["source_hash"] = "recorded-earlier"
    (tmp_path / f"{CH09}.live.json").write_text(json.dumps(data))
    assert main(["verify", CH09, "--traces", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"verified {len(lines)} scenarios · 1 chapter recorded from earlier code "
        "(python -m primer.book build --stamp marks what verified as current)"
    )
    # A chapter without a live trace is counted, and listed with --all only.
    ch01 = scenarios_of("ch01_one_call")
    assert main(["verify", "ch01_one_call", "--traces", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"verified 0 scenarios · {len(ch01)} without a live trace (--all lists them)"
    ]
    assert main(["verify", "ch01_one_call", "--traces", str(tmp_path), "--all"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        *(f"ch01_one_call {s.name}: no live trace" for s in ch01),
        f"verified 0 scenarios · {len(ch01)} without a live trace",
    ]


def test_verify_exits_1_naming_the_field_when_the_recording_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The recorded request edited is the same, for the comparison, as the code edited.
    data = json.loads((TRACES / f"{CH09}.live.json").read_text())
    request = data["scenarios"][3]["turns"][0]["model_call"]["exchanges"][0]["request"]
    request["json_body"]["messages"][1]["content"] = "How much is bread?"
    path = tmp_path / f"{CH09}.live.json"
    path.write_text(json.dumps(data, indent=2))
    before = path.read_bytes()
    assert main(["verify", CH09, "--traces", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == (
        f"{CH09} service_says_no: diverged: service_says_no, turn 1, model request, attempt 1: "
        'body messages[1].content was "How much is bread?", and is now "How much is milk?"'
    )
    assert all("verified by replay" in line for line in lines[:3])
    assert lines[-1].startswith("verified 3 scenarios · 1 diverged")
    assert path.read_bytes() == before, "verify writes nothing"


def test_verify_says_what_is_wrong_with_a_broken_file_and_a_wrong_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / f"{CH05}.live.json").write_text("{broken")
    assert main(["verify", CH05, "--traces", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{CH05}: not verified: The trace file {tmp_path / f'{CH05}.live.json'} could not be read")
    assert main(["verify", CH05, "--traces", str(tmp_path / "nowhere")]) == 2
    assert "give --traces FOLDER" in capsys.readouterr().err
    assert main(["verify", "ch99_nothing", "--traces", str(tmp_path)]) == 2
    assert "There is no chapter 'ch99_nothing'" in capsys.readouterr().err
