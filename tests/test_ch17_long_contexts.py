"""Chapter 17: sending less of the history (``primer.history``), what a cache could reuse, and the page's figures.

Every figure the page quotes is computed here from the runs with
``context_cost``; the live figures it quotes from chapter 9 are read from
that chapter's frozen live trace, so a refresh that changes them fails here
until the page is updated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from primer.agent import Agent
from primer.chapters.ch17_long_contexts import last_messages_only, summarised_history, whole_history
from primer.clock import VirtualClock
from primer.context_cost import context_cost
from primer.errors import ChapterError
from primer.history import SUMMARY_PREFIX, head_of, keep_last, summarise_over, with_history
from primer.models.mock import MockModel, ask, call, say
from primer.runner import run_scenario
from primer.shop import shelf_price_of
from primer.trace import Message, ToolCall
from primer.workflows import Step

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch17_long_contexts.md").read_text(encoding="utf-8").split())
CH09_LIVE = ROOT / "docs" / "traces" / "ch09_who_retries.live.json"


def _m(role: str, text: str = "", calls: int = 0) -> Message:
    tool_calls = [ToolCall(id=f"c{i}", name="price_of") for i in range(calls)]
    return Message(role=role, content=text, tool_calls=tool_calls)  # type: ignore[arg-type]


def _agent() -> Agent:
    clock = VirtualClock()
    return Agent(model=MockModel([], clock), tools=[], clock=clock)


# --- the library ----------------------------------------------------------------------------


def test_the_start_is_the_system_prompts_and_the_question() -> None:
    assert head_of([_m("system"), _m("system"), _m("human"), _m("ai")]) == 3
    assert head_of([_m("human"), _m("ai")]) == 1
    assert head_of([_m("system")]) == 1


def test_keep_last_never_keeps_a_tool_answer_without_its_call() -> None:
    messages = [_m("system"), _m("human"), _m("ai", calls=2), _m("tool", "a"), _m("tool", "b")]
    kept = keep_last(1)(_agent(), messages, 8)
    assert [m.role for m in kept] == ["system", "human", "ai", "tool", "tool"], "the cut moved back to the call"
    longer = [*messages, _m("ai", calls=1), _m("tool", "c")]
    assert keep_last(2)(_agent(), longer, 8) == [*messages[:2], *longer[-2:]]
    with pytest.raises(ChapterError, match="at least one message"):
        keep_last(0)


def test_a_summary_replaces_the_middle_only_past_the_budget() -> None:
    clock = VirtualClock()
    agent = Agent(model=MockModel([say("bread 1.45")], clock), tools=[], clock=clock)
    history = summarise_over(50, keep=2, summariser=Step(name="summariser", system="Summarise."))
    short = [_m("system", "s"), _m("human", "q")]
    assert history(agent, short, 8) == short
    long = [*short, _m("ai", calls=1), _m("tool", "x" * 40), _m("ai", calls=1), _m("tool", "y" * 40)]
    sent = history(agent, long, 8)
    assert [m.role for m in sent] == ["system", "human", "system", "ai", "tool"]
    assert sent[2].content == f"{SUMMARY_PREFIX} bread 1.45"
    (summariser,) = agent.turns
    assert summariser.model_call.context[1].content == "ai: price_of({})\ntool: " + "x" * 40
    with pytest.raises(ChapterError, match="positive budget"):
        summarise_over(0, keep=1, summariser=Step(name="s", system="s"))


def test_the_loop_keeps_the_whole_transcript_while_sending_less() -> None:
    clock = VirtualClock()
    script = [ask(call("price_of", item=i)) for i in ("bread", "milk")] + [say("Done.")]
    agent = Agent(model=MockModel(script, clock), tools=[shelf_price_of], clock=clock)
    context = [_m("system", "s"), _m("human", "q")]
    ending = with_history(keep_last(2))(agent, context, 8)
    assert ending.reason == "no_tool_calls"
    assert [len(t.model_call.context) for t in agent.turns] == [2, 4, 4]
    assert [m.role for m in context] == ["system", "human", "ai", "tool", "ai", "tool", "ai"]
    capped = with_history(keep_last(2))(agent, [_m("system", "s"), _m("human", "q")], 0)
    assert capped.reason == "turn_limit"


# --- the chapter's stories ------------------------------------------------------------------


def test_the_whole_history_resends_every_card_and_starts_with_the_last_context() -> None:
    run = run_scenario(whole_history)
    cost = context_cost(run)
    chars = [t.characters for t in cost.turns]
    assert [t.messages for t in cost.turns] == [2, 4, 6, 8, 10]
    assert ", ".join(f"{c:,}" for c in chars[:-1]) + f" and {chars[-1]:,} characters" in PAGE
    assert f"{cost.characters_sent:,} in all" in PAGE
    assert [t.repeated_characters for t in cost.turns[1:]] == chars[:-1]
    assert f"{cost.repeated_characters:,} repeat the start of an earlier request" in PAGE
    cards = [t.result or "" for turn in run.turns for t in turn.tools]
    assert min(len(card) for card in cards) > 200
    fifth = run.turns[4].model_call.context
    assert fifth[:8] == run.turns[3].model_call.context


def test_keeping_the_last_messages_forgets_the_first_cards() -> None:
    run, everything = run_scenario(last_messages_only), run_scenario(whole_history)
    cost, whole = context_cost(run), context_cost(everything)
    fifth = run.turns[4].model_call.context
    assert [m.role for m in fifth] == ["system", "human", "ai", "tool"]
    assert "Shelf card: milk." in (fifth[-1].content or "")
    assert not any("bread" in (m.content or "") for m in fifth[2:])
    assert "Bread is 1.45" in (run.transcript[-1].content or ""), "the script says it anyway"
    assert run.transcript == everything.transcript, "the transcript keeps everything"
    assert f"{cost.characters_sent:,} characters, little more than half of {whole.characters_sent:,}" in PAGE
    assert 0.5 < cost.characters_sent / whole.characters_sent < 0.6
    head = cost.turns[0].characters
    assert [t.repeated_characters for t in cost.turns[1:]] == [head] * 4
    assert f"only {head} characters of each repeat, {cost.repeated_characters} over the run" in PAGE


def test_a_summary_is_its_own_turn_and_is_sent_instead_of_the_older_cards() -> None:
    run = run_scenario(summarised_history)
    cost, whole = context_cost(run), context_cost(run_scenario(whole_history))
    summariser = run.turns[3].model_call
    assert [n.data for n in summariser.notes if n.label == "workflow step"] == [
        {"workflow": "history", "step": "summariser"}
    ]
    assert summariser.reply is not None
    assert f"`{summariser.reply.content}`" in PAGE
    assert f"Turn 3 sent {cost.turns[2].characters} characters" in PAGE
    assert (
        cost.turns[2].characters < 900 < cost.turns[2].characters + sum(len(m.written()) for m in run.transcript[6:8])
    ), "the next card would pass the budget"
    fifth = run.turns[4].model_call.context
    assert [m.role for m in fifth] == ["system", "human", "system", "ai", "tool"]
    assert (fifth[2].content or "").startswith(f"{SUMMARY_PREFIX} {summariser.reply.content}")
    assert "Shelf card: chips." in (fifth[-1].content or "")
    totals = f"sent {cost.characters_sent:,} characters in all, against the whole history's {whole.characters_sent:,}"
    assert totals in PAGE
    assert f"own call ({cost.turns[3].characters} characters)" in PAGE
    assert f"turn 6 repeats turn 5's {cost.turns[5].repeated_characters} characters" in PAGE
    assert cost.turns[5].repeated_characters == cost.turns[4].characters


def test_the_cached_tokens_the_page_quotes_are_chapter_9s_live_ones() -> None:
    trace = json.loads(CH09_LIVE.read_text(encoding="utf-8"))
    (scenario,) = [s for s in trace["scenarios"] if s["name"] == "arguments_are_wrong"]
    usages = [turn["model_call"]["usage"] for turn in scenario["turns"]]
    ins = ", ".join(f"`{u['input_tokens']} in`" for u in usages[:-1]) + f" and `{usages[-1]['input_tokens']} in`"
    assert ins in PAGE
    cached = [u["cached_tokens"] for u in usages]
    assert f"is {cached[0]}, then {cached[1]}, then {cached[2]}" in PAGE
    assert all(c % 128 == 0 for c in cached), "the page says they are multiples of 128"
    for turn in scenario["turns"]:
        body = turn["model_call"]["exchanges"][-1]["response"]["json_body"]
        assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == turn["model_call"]["usage"]["cached_tokens"]
