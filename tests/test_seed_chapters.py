"""Each seed scenario's mock run against the facts of its seed page.

The expectations are transcribed from the seed pages' mock runs
(``000_2d77bb1255f4c77c.txt`` for ch09, ``001_2bcddd2a1b9639e3.txt`` for ch05):
scenario names, prompts, what each turn asked for and was given, what came
back, the failures and the messages sent back to the model, the context
tables, the endings and the totals. Where the seed page has a known defect
(the mock backoff that ignored ``retry-after: 1``), the test says so and
asserts the fixed behaviour.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from primer.runner import run_chapter
from primer.scenario import SYSTEM
from primer.settings import DEFAULT_SERVICE_KEY
from primer.summary import ending_line
from primer.trace import Attempt, Backoff, ChapterRun, ScenarioRun
from tests.test_tools import SEED_SCHEMAS

CH05_PROMPT = "Whatever we are lowest on -- what does one of them cost, and why is it low?"
MAY_HAVE_TAKEN_EFFECT = (
    "['place_order'] did not confirm: ['https://httpbin.org'] did not answer in time, and the call may have been "
    "received. It may have taken effect. Do not call it again; say what is uncertain."
)
CALLER_CAN_FIX = (
    "['place_order'] rejected the arguments: quantity ['20'] must be between 1 and 12. Correct them and call it again."
)
NOT_RETRYABLE = "['price_of'] failed: ['https://httpbin.org'] answered ['404']. It will not succeed. Answer without it."
TIMED_OUT = "['https://httpbin.org'] did not answer in time, and the call may have been received"

# The final context table of each scenario, row by row as the seed prints it: (role, content).
TRANSCRIPTS: dict[str, list[tuple[str, str]]] = {
    "service_is_busy": [
        ("system", SYSTEM),
        ("human", "How much is milk?"),
        ("ai", 'price_of({"item": "milk"})'),
        ("tool", "1.20"),
        ("ai", "Milk is 1.20."),
    ],
    "order_may_have_landed": [
        ("system", SYSTEM),
        ("human", "Order 2 bottles of milk."),
        ("ai", 'place_order({"item": "milk", "quantity": 2})'),
        ("tool", MAY_HAVE_TAKEN_EFFECT),
        ("ai", "The order may or may not have been placed. Please check before ordering again."),
    ],
    "arguments_are_wrong": [
        ("system", SYSTEM),
        ("human", "Order 20 bottles of milk."),
        ("ai", 'place_order({"item": "milk", "quantity": 20})'),
        ("tool", CALLER_CAN_FIX),
        ("ai", 'place_order({"item": "milk", "quantity": 12})'),
        ("tool", "ordered 12 x milk"),
        ("ai", "I ordered 12, the most allowed in one order."),
    ],
    "service_says_no": [
        ("system", SYSTEM),
        ("human", "How much is milk?"),
        ("ai", 'price_of({"item": "milk"})'),
        ("tool", NOT_RETRYABLE),
        ("ai", "I could not get the price of milk."),
    ],
    "within_token_limit": [
        ("system", SYSTEM),
        ("human", CH05_PROMPT),
        ("ai", "lowest_stock_item({})"),
        ("tool", "butter"),
        ("ai", 'price_of({"item": "butter"})'),
        ("tool", "3.10"),
        ("ai", "Butter, at 3.10 -- there is only one left, so it is the lowest we hold."),
    ],
    "tokens_exhausted": [
        ("system", SYSTEM),
        ("human", CH05_PROMPT),
        ("ai", ""),
    ],
}

# Per turn: (asked for, finish reason, the tools run: (name, given, returned or None, raised or None)).
Tool = tuple[str, dict[str, Any], str | None, str | None]
TURNS: dict[str, list[tuple[list[str], str, list[Tool]]]] = {
    "service_is_busy": [
        (["price_of"], "tool_calls", [("price_of", {"item": "milk"}, "1.20", None)]),
        ([], "stop", []),
    ],
    "order_may_have_landed": [
        (["place_order"], "tool_calls", [("place_order", {"item": "milk", "quantity": 2}, None, TIMED_OUT)]),
        ([], "stop", []),
    ],
    "arguments_are_wrong": [
        (
            ["place_order"],
            "tool_calls",
            [("place_order", {"item": "milk", "quantity": 20}, None, "quantity ['20'] must be between 1 and 12")],
        ),
        (["place_order"], "tool_calls", [("place_order", {"item": "milk", "quantity": 12}, "ordered 12 x milk", None)]),
        ([], "stop", []),
    ],
    "service_says_no": [
        (
            ["price_of"],
            "tool_calls",
            [("price_of", {"item": "milk"}, None, "['https://httpbin.org'] answered ['404']")],
        ),
        ([], "stop", []),
    ],
    "within_token_limit": [
        (["lowest_stock_item"], "tool_calls", [("lowest_stock_item", {}, "butter", None)]),
        (["price_of"], "tool_calls", [("price_of", {"item": "butter"}, "3.10", None)]),
        ([], "stop", []),
    ],
    "tokens_exhausted": [([], "length", [])],
}

ENDINGS = {
    "service_is_busy": 'ended {"reason": "no_tool_calls"}',
    "order_may_have_landed": 'ended {"reason": "no_tool_calls"}',
    "arguments_are_wrong": 'ended {"reason": "no_tool_calls"}',
    "service_says_no": 'ended {"reason": "no_tool_calls"}',
    "within_token_limit": 'ended {"reason": "answer_received (finish_reason = stop)"}',
    "tokens_exhausted": 'ended {"reason": "tokens_exhausted (finish_reason = length)"}',
}

# What the seed shows of each attempt a tool made: the attempt line's JSON, the URL, the status.
ATTEMPTS: dict[str, list[list[tuple[dict[str, Any], str | None, int | None]]]] = {
    "service_is_busy": [
        [
            (
                {
                    "number": 1,
                    "message": "['https://httpbin.org'] answered ['429']",
                    "retryable": True,
                    "idempotent": True,
                    "caller_can_fix": False,
                },
                "https://httpbin.org/status/429?item=milk",
                429,
            ),
            ({"number": 2}, "https://httpbin.org/get?item=milk", 200),
        ]
    ],
    "order_may_have_landed": [
        [
            (
                {
                    "number": 1,
                    "message": TIMED_OUT,
                    "retryable": True,
                    "idempotent": False,
                    "caller_can_fix": False,
                },
                "https://httpbin.org/delay/10?item=milk&quantity=2",
                None,
            )
        ]
    ],
    "arguments_are_wrong": [
        [
            (
                {
                    "number": 1,
                    "message": "quantity ['20'] must be between 1 and 12",
                    "retryable": False,
                    "idempotent": False,
                    "caller_can_fix": True,
                },
                None,
                None,
            )
        ],
        [({"number": 1}, "https://httpbin.org/get?item=milk&quantity=12", 200)],
    ],
    "service_says_no": [
        [
            (
                {
                    "number": 1,
                    "message": "['https://httpbin.org'] answered ['404']",
                    "retryable": False,
                    "idempotent": True,
                    "caller_can_fix": False,
                },
                "https://httpbin.org/status/404?item=milk",
                404,
            )
        ]
    ],
    "within_token_limit": [[], []],
    "tokens_exhausted": [],
}

CHAPTERS = {
    "ch09_who_retries": ["service_is_busy", "order_may_have_landed", "arguments_are_wrong", "service_says_no"],
    "ch05_loop_endings": ["within_token_limit", "tokens_exhausted"],
}
CHAPTER_OF = {scenario: chapter for chapter, names in CHAPTERS.items() for scenario in names}
ALL_SCENARIOS = [name for names in CHAPTERS.values() for name in names]


@pytest.fixture(scope="module")
def runs() -> dict[str, ChapterRun]:
    return {chapter: run_chapter(chapter) for chapter in CHAPTERS}


def scenario(runs: dict[str, ChapterRun], name: str) -> ScenarioRun:
    return runs[CHAPTER_OF[name]].scenario(name)


def rows(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.role, m.written()) for m in messages]


def test_chapters_hold_the_seed_scenarios_in_the_seed_order(runs: dict[str, ChapterRun]) -> None:
    for chapter, names in CHAPTERS.items():
        run = runs[chapter]
        assert (run.chapter, run.mode) == (chapter, "mock")
        assert [s.name for s in run.scenarios] == names
        assert all(s.mode == "mock" for s in run.scenarios)


@pytest.mark.parametrize(("chapter", "turns", "messages"), [("ch09_who_retries", 9, 22), ("ch05_loop_endings", 4, 10)])
def test_totals_are_the_seeds(runs: dict[str, ChapterRun], chapter: str, turns: int, messages: int) -> None:
    assert (runs[chapter].turns, runs[chapter].messages) == (turns, messages)


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_the_final_context_table_is_the_seeds(runs: dict[str, ChapterRun], name: str) -> None:
    assert rows(scenario(runs, name).transcript) == TRANSCRIPTS[name]


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_each_turn_sent_the_context_so_far_and_got_the_seeds_reply(runs: dict[str, ChapterRun], name: str) -> None:
    run = scenario(runs, name)
    transcript = TRANSCRIPTS[name]
    assert len(run.turns) == len(TURNS[name])
    sent = 2
    for turn, (asked_for, finish, tools) in zip(run.turns, TURNS[name], strict=True):
        call = turn.model_call
        # The seed's "context sent — N message(s)" table is the transcript so far.
        assert rows(call.context) == transcript[:sent]
        assert call.reply is not None
        assert rows([call.reply]) == [transcript[sent]]
        assert [c.name for c in call.reply.tool_calls] == asked_for
        assert call.finish_reason == finish
        assert call.kind == "mock"
        assert call.usage is None
        sent += 1 + len(tools)


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_each_tool_was_given_and_returned_or_raised_what_the_seed_shows(runs: dict[str, ChapterRun], name: str) -> None:
    run = scenario(runs, name)
    for turn, (_, _, tools) in zip(run.turns, TURNS[name], strict=True):
        actual = [(t.name, t.arguments, t.result, t.failure.message if t.failure else None) for t in turn.tools]
        assert actual == tools
        assert all(t.error is None for t in turn.tools)
    # The tool messages in the context are the ones the tool runs recorded, in order.
    sent_back = [t.message for turn in run.turns for t in turn.tools]
    assert sent_back == [content for role, content in TRANSCRIPTS[name] if role == "tool"]


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_each_attempt_is_classified_and_sent_as_the_seed_shows(runs: dict[str, ChapterRun], name: str) -> None:
    run = scenario(runs, name)
    tool_runs = [t for turn in run.turns for t in turn.tools]
    assert len(tool_runs) == len(ATTEMPTS[name])
    for tool_run, expected in zip(tool_runs, ATTEMPTS[name], strict=True):
        attempts = tool_run.attempts
        assert len(attempts) == len(expected)
        for attempt, (line, url, status) in zip(attempts, expected, strict=True):
            # The seed's `attempt {...}` line: the number, and the classification when it failed.
            shown: dict[str, Any] = {"number": attempt.number}
            if attempt.failure is not None:
                shown |= attempt.failure.model_dump()
            assert shown == line
            assert (attempt.request.url if attempt.request else None) == url
            assert (attempt.response.status if attempt.response else None) == status
            if attempt.request is not None:
                assert attempt.request.method == "GET"
                assert ("authorization", "not recorded") in attempt.request.headers
                # A GET to a service has no sampling parameters (a seed defect listed them).
                assert attempt.request.defaulted is None


def test_the_busy_service_waited_as_its_retry_after_said(runs: dict[str, ChapterRun]) -> None:
    run = scenario(runs, "service_is_busy")
    (tool_run,) = run.turns[0].tools
    assert [step.kind for step in tool_run.steps] == ["attempt", "backoff", "attempt"]
    backoff = tool_run.steps[1]
    assert isinstance(backoff, Backoff)
    # The seed page shows {"seconds": 0.05, "before_attempt": 2}: its mock ignored `retry-after: 1` (a known defect).
    assert (backoff.seconds, backoff.before_attempt, backoff.source) == (1.0, 2, "retry-after")
    assert tool_run.timing.waited_ms == 1000.0
    assert run.simulated_seconds == 1.0
    busy = tool_run.attempts[0].response
    assert busy is not None
    assert busy.headers == [
        ("content-length", "0"),
        ("content-type", "text/plain; charset=utf-8"),
        ("retry-after", "1"),
    ]
    answer = tool_run.attempts[1].response
    assert answer is not None
    assert answer.json_body == {"args": {"item": "milk"}, "price": "1.20"}
    assert answer.headers == [("content-length", "39"), ("content-type", "application/json")]


def test_the_order_that_went_through_has_the_seeds_reference(runs: dict[str, ChapterRun]) -> None:
    second = scenario(runs, "arguments_are_wrong").turns[1].tools[0]
    (attempt,) = second.attempts
    assert attempt.response is not None
    assert attempt.response.json_body["reference"] == "ord-8812"
    assert attempt.response.json_body["args"]["item"] == "milk"
    assert second.service == "https://httpbin.org"


def test_the_refused_order_never_reached_the_service(runs: dict[str, ChapterRun]) -> None:
    first = scenario(runs, "arguments_are_wrong").turns[0].tools[0]
    (attempt,) = first.steps
    # Refused before any request was built: no wire, no time spent, only when it happened.
    assert isinstance(attempt, Attempt)
    assert (attempt.number, attempt.request, attempt.response) == (1, None, None)
    assert attempt.failure == first.failure
    assert attempt.timing.total_ms == 0.0
    assert attempt.timing.outside_ms is None
    assert first.service is None
    assert first.timing.outside_ms is None


def test_the_not_found_answer_is_the_seeds(runs: dict[str, ChapterRun]) -> None:
    (attempt,) = scenario(runs, "service_says_no").turns[0].tools[0].attempts
    assert attempt.response is not None
    assert attempt.response.headers == [("content-length", "0"), ("content-type", "text/plain; charset=utf-8")]
    assert attempt.response.json_body is None
    assert attempt.response.text_body is None


def test_ch05_tools_are_local_and_make_no_attempts(runs: dict[str, ChapterRun]) -> None:
    for turn in scenario(runs, "within_token_limit").turns:
        for tool_run in turn.tools:
            assert tool_run.steps == []
            assert tool_run.service is None
            assert tool_run.timing.outside_ms is None


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_the_ending_is_the_seeds(runs: dict[str, ChapterRun], name: str) -> None:
    run = scenario(runs, name)
    assert ending_line(run.ending) == ENDINGS[name]
    assert run.error is None


@pytest.mark.parametrize("name", ALL_SCENARIOS)
def test_declared_tools_and_notes_are_the_seeds_on_every_model_call(runs: dict[str, ChapterRun], name: str) -> None:
    run = scenario(runs, name)
    names = ["place_order", "price_of"] if CHAPTER_OF[name] == "ch09_who_retries" else ["lowest_stock_item", "price_of"]
    assert run.tools == names
    for turn in run.turns:
        call = turn.model_call
        assert [(t.name, json.dumps(t.parameters, sort_keys=True)) for t in call.tools] == [
            (n, SEED_SCHEMAS[n]) for n in names
        ]
        roles = json.dumps([m.role for m in call.context])
        # The seed prints each note as `label {json}`.
        assert [f"{note.label} {json.dumps(note.data)}" for note in call.notes] == [
            f'tools declared to the mock model {{"names": {json.dumps(names)}, "consulted": false}}',
            f'context ignored by the mock model {{"messages": {len(call.context)}, "roles": {roles}}}',
        ]


def test_only_tokens_exhausted_sets_max_tokens(runs: dict[str, ChapterRun]) -> None:
    settings = {name: scenario(runs, name).settings for name in ALL_SCENARIOS}
    assert settings == {name: ({"max_tokens": 24} if name == "tokens_exhausted" else {}) for name in ALL_SCENARIOS}
    (turn,) = scenario(runs, "tokens_exhausted").turns
    assert turn.model_call.settings == {"max_tokens": 24}


def test_the_service_token_is_not_recorded_anywhere(runs: dict[str, ChapterRun]) -> None:
    for run in runs.values():
        text = run.model_dump_json()
        assert DEFAULT_SERVICE_KEY not in text
        assert "Bearer" not in text
    attempts = [
        a
        for run in runs.values()
        for s in run.scenarios
        for turn in s.turns
        for t in turn.tools
        for a in t.attempts
        if a.request is not None
    ]
    assert len(attempts) == 5
    assert all(("authorization", "not recorded") in a.request.headers for a in attempts if a.request)
