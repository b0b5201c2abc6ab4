"""The one-line summaries of a trace, worded as the book prints them.

The terminal (``python -m primer run``) and the rendered page both use these,
so a line reads the same wherever it is seen::

    scenario service_is_busy · tools=place_order, price_of · 4.1ms (1.0s simulated) · 2 turns · ended: no_tool_calls
    turn 1 · 3.6ms · asked for: price_of
    model live · 1198.1ms (model provider 970.0 · library and set-up 228.0) · 416 in / 39 out · asked for: price_of
    tool price_of · 2.9ms (service 1.1 · library 1.8) · given: item=milk · attempts: 2 · returned: 1.20

A scenario's *story* says, folded, what sets the run apart (``scenario_story``)::

    price_of: 429 (retryable) → waited 1s → 200
    place_order: rejected (not retryable, caller can fix) · corrected in turn 2
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from primer.errors import quoted
from primer.spent import UNTIMED, not_timed
from primer.trace import (
    Attempt,
    Backoff,
    ChapterRun,
    Ending,
    Failure,
    ModelCall,
    ScenarioRun,
    Timing,
    ToolRun,
    Turn,
    Usage,
)

__all__ = [
    "SUMMARY_LIMIT",
    "anomalies",
    "chapter_line",
    "count",
    "cut",
    "ending_line",
    "model_line",
    "scenario_line",
    "scenario_story",
    "timing_text",
    "tokens_text",
    "tool_line",
    "trial_verdicts",
    "trials",
    "turn_line",
]

#: Characters of free text a summary line shows before cutting.
SUMMARY_LIMIT = 90
#: Uneventful tool calls a story lists one by one; past that, it counts them.
_LISTED = 3


def cut(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Whitespace folded, then cut: ``text... (N more characters)``."""
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    return f"{folded[:limit]}... ({count(len(folded) - limit, 'more character', 'more characters')})"


def count(number: int, word: str, plural: str | None = None) -> str:
    """``1 turn``, ``2 turns``: a number with its noun in the right form."""
    return f"{number} {word if number == 1 else plural or word + 's'}"


def timing_text(timing: Timing, outside: str | None = None, *, live: bool = False) -> str:
    """``59.5ms``, or with the split: ``1198.1ms (model provider 970.0 · library 2.0)``.

    A live trip that opened its connection says how long that took, apart
    from the outside party's own time: ``(service 80.2 · connection set-up 41.7 · library 2.0)``;
    one recorded before set-up was timed says it is in the library's time:
    ``(model provider 970.0 · library and set-up 228.0)``.
    """
    text = f"{timing.total_ms:.1f}ms"
    answering = timing.answering_ms
    if outside is not None and answering is not None:
        setup = f" · connection set-up {timing.setup_ms:.1f}" if timing.setup_ms else ""
        waited = f" · waited {timing.waited_ms:.1f}" if timing.waited_ms else ""
        library = UNTIMED if live and not_timed(timing) else "library"
        text += f" ({outside} {answering:.1f}{setup}{waited} · {library} {timing.library_ms:.1f})"
    return text


def tokens_text(usages: Iterable[Usage | None]) -> str | None:
    """Tokens added up as the provider counted them: ``1,204 in (768 cached) / 141 out (83 reasoning)``.

    Cached and reasoning tokens only where the provider reported them; None
    when no call reported any usage (a mock run).
    """
    reported = [usage for usage in usages if usage is not None]
    if not reported:
        return None
    tokens_in = f"{sum(u.input_tokens for u in reported):,} in"
    cached = [u.cached_tokens for u in reported if u.cached_tokens is not None]
    if cached:
        tokens_in += f" ({sum(cached):,} cached)"
    tokens_out = f"{sum(u.output_tokens for u in reported):,} out"
    reasoning = [u.reasoning_tokens for u in reported if u.reasoning_tokens is not None]
    if reasoning:
        tokens_out += f" ({sum(reasoning):,} reasoning)"
    return f"{tokens_in} / {tokens_out}"


def _run_tokens(runs: Iterable[ScenarioRun]) -> list[str]:
    found = tokens_text(turn.model_call.usage for run in runs for turn in run.turns)
    return [found] if found else []


#: How an evaluation notes each trial on its last model call (chapter 16): ``trial 2 of 5 {"passed": false, ...}``.
_TRIAL = re.compile(r"trial (\d+) of (\d+)")


def _trial_notes(run: ScenarioRun) -> Iterator[tuple[int, re.Match[str], dict[str, Any]]]:
    # Each trial's verdict note (``trial 2 of 5``, with ``passed``), by the index of the turn whose model call has it.
    for index, turn in enumerate(run.turns):
        for note in turn.model_call.notes:
            found = _TRIAL.fullmatch(note.label)
            if found and isinstance(note.data.get("passed"), bool):
                yield index, found, note.data


def trial_verdicts(run: ScenarioRun) -> list[tuple[int, bool]]:
    """Each trial of a repeated run, in order, with whether it passed (from its notes; none for one run)."""
    return [(int(found[1]), bool(data["passed"])) for _, found, data in _trial_notes(run)]


def trials(run: ScenarioRun) -> list[tuple[str, int, list[Turn]]]:
    """A repeated run's turns trial by trial: each trial's line, number and turns; none unless every turn is in one.

    ``trial 2 of 5 · failed: the answer does not say 1.20 · 1 turn``: the verdict from the note on the trial's
    last model call (``primer.evaluate``), as the page heads the trial and the terminal prints it.
    """
    groups, start = [], 0
    for index, found, data in _trial_notes(run):
        if index < start:  # a turn ends one trial at most
            continue
        why = data.get("why")
        verdict = "passed" if data["passed"] else "failed" + (f": {why}" if isinstance(why, str) and why else "")
        turns = run.turns[start : index + 1]
        line = f"trial {int(found[1])} of {int(found[2])} · {verdict} · {count(len(turns), 'turn')}"
        groups.append((line, int(found[1]), turns))
        start = index + 1
    return groups if groups and start == len(run.turns) else []


def _pass_rate(run: ScenarioRun) -> list[str]:
    verdicts = trial_verdicts(run)
    if not verdicts:
        return []
    passed = sum(1 for _, ok in verdicts if ok)
    return [f"{passed} of {len(verdicts)} trials passed ({passed / len(verdicts):.0%})"]


def _usage(usage: Usage | None) -> list[str]:
    return [f"{usage.input_tokens} in / {usage.output_tokens} out"] if usage else []


def _outcome(call: ModelCall, said: Callable[[str], str] | None = None) -> list[str]:
    reply = call.reply
    if reply is None:
        return [f"failed: {cut(call.error.message)}" if call.error else "failed"]
    parts = []
    if reply.tool_calls:
        parts.append("asked for: " + ", ".join(c.name for c in reply.tool_calls))
    if reply.content and reply.content.strip():
        parts.append(f"responded with: {cut(said(reply.content) if said else reply.content)}")
    elif not reply.tool_calls:
        parts.append("responded with: nothing")
    return parts


def _settings(settings: dict[str, Any]) -> list[str]:
    return [f"{key}={_setting(value)}" for key, value in settings.items()]


def _setting(value: Any) -> str:
    """A setting as a summary line shows it: a named function or a response format by type and name."""
    if isinstance(value, dict):
        # tool_choice=function:price_of, response_format=json_schema:price_answer (chapter 12).
        named = value.get(str(value.get("type")))
        if isinstance(named, dict) and isinstance(named.get("name"), str):
            return f"{value['type']}:{named['name']}"
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)


def chapter_line(run: ChapterRun, *, cost: str | None = None) -> str:
    """``mock turns=9 · messages=22``, and the tokens where the provider counted them (and ``cost``, if given)."""
    tokens = _run_tokens(run.scenarios)
    return " · ".join([f"{run.mode} turns={run.turns}", f"messages={run.messages}", *tokens, *_cost(tokens, cost)])


def _cost(tokens: list[str], cost: str | None) -> list[str]:
    # A cost says what the tokens cost: only beside them.
    return [cost] if cost and tokens else []


def scenario_line(run: ScenarioRun, *, cost: str | None = None) -> str:
    """The scenario's story in one line; ``cost`` (``$0.0012``, worked out by the caller) after its tokens."""
    duration = timing_text(run.timing)
    if run.simulated_seconds:
        duration += f" ({run.simulated_seconds:g}s simulated)"
    turns = len(run.turns)
    parts = [
        f"scenario {run.name}",
        *([f"tools={', '.join(run.tools)}"] if run.tools else []),
        *_settings(run.settings),
        duration,
        count(turns, "turn"),
        *(tokens := _run_tokens([run])),
        *_cost(tokens, cost),
        *_pass_rate(run),
        f"ended: {run.ending.label}",
    ]
    return " · ".join(parts)


def turn_line(turn: Turn, said: Callable[[str], str] | None = None) -> str:
    """``turn 1 · 58.8ms · 416 in / 39 out · asked for: price_of``; ``said`` words the reply (as the page shows it)."""
    call = turn.model_call
    return " · ".join([f"turn {turn.number}", timing_text(turn.timing), *_usage(call.usage), *_outcome(call, said)])


def model_line(call: ModelCall, said: Callable[[str], str] | None = None) -> str:
    """``model live · 1198.1ms (model provider 970.0 · library and set-up 228.0) · ...``; ``said`` as in turn_line."""
    live = call.kind == "live"
    timing = timing_text(call.timing, "model provider" if live else None, live=live)
    return " · ".join([f"model {call.kind}", timing, *_usage(call.usage), *_outcome(call, said)])


def tool_line(run: ToolRun, *, live: bool = False) -> str:
    """``tool price_of · 55.6ms (service 0.1 · library 55.5) · given: item=milk · ...`` (``live``: of a live run)."""
    parts = [f"tool {run.name}", timing_text(run.timing, "service", live=live)]
    if run.arguments:
        parts.append("given: " + ", ".join(f"{k}={_plain(v)}" for k, v in run.arguments.items()))
    if run.approval is not None:
        # Asked before it ran (chapter 14): the answer decides whether anything was sent.
        parts.append(f"approval: {'approved' if run.approval.approved else 'refused'}")
    attempts = len(run.attempts)
    if attempts > 1:
        parts.append(f"attempts: {attempts}")
    if run.failure is not None:
        parts.append(f"raised: {cut(run.failure.message)}")
    else:
        # None: nothing went back to the model (the scenario ended first), which "returned: " would not say.
        parts.append("no result sent back" if run.result is None else f"returned: {cut(run.result)}")
    return " · ".join(parts)


def ending_line(ending: Ending) -> str:
    """``ended {"reason": "no_tool_calls"}`` (with the detail when there is one)."""
    data: dict[str, str] = {"reason": ending.label}
    if ending.detail:
        data["detail"] = ending.detail
    return f"ended {json.dumps(data, ensure_ascii=False)}"


def _seconds(seconds: float) -> str:
    return f"{seconds:g}s" if seconds >= 1 else f"{seconds * 1000:g}ms"


def _classified(failure: Failure) -> str:
    # The answers that decide who acts next (chapter 9): retry or not, and why not.
    words = ["retryable" if failure.retryable else "not retryable"]
    if failure.retryable and not failure.idempotent:
        words.append("not idempotent")
    if failure.caller_can_fix:
        words.append("caller can fix")
    return ", ".join(words)


def _attempt(step: Attempt) -> str:
    if step.request is None:
        what = "rejected"  # refused before anything went out
    elif step.response is None:
        what = "no answer"
    else:
        what = str(step.response.status)
    return what if step.failure is None else f"{what} ({_classified(step.failure)})"


def _eventful(run: ToolRun) -> bool:
    return run.failure is not None or len(run.steps) > 1


def _tool_story(run: ToolRun) -> str:
    steps = [f"waited {_seconds(step.seconds)}" if isinstance(step, Backoff) else _attempt(step) for step in run.steps]
    if not steps and run.approval is not None and not run.approval.approved:
        steps = ["not approved, not run"]
    elif not steps and run.failure is not None:
        steps = [f"raised ({_classified(run.failure)})"]
    last = run.attempts[-1] if run.attempts else None
    if last is not None and last.failure is not None and last.failure.retryable:
        steps.append("not retried")
    return f"{run.name}: {' → '.join(steps)}"


def scenario_story(run: ScenarioRun) -> str:
    """What sets a run apart, for its folded summary: attempts, waits, failures, corrections.

    Every tool call that failed, or needed more than one attempt, in order:
    each attempt's answer (status, ``no answer``, ``rejected``) with how a
    failure was classified, each wait, and a later call of the same tool
    after the caller could fix its arguments (``corrected in turn 2``).
    Without such a call, the tools called and what they returned (or how
    often each was called, past three calls); ``""`` when no tool was called.
    """
    runs = [(turn.number, tool) for turn in run.turns for tool in turn.tools]
    parts: list[str] = []
    for index, (number, tool) in enumerate(runs):
        if not _eventful(tool):
            continue
        story = _tool_story(tool)
        if tool.failure is not None and tool.failure.caller_can_fix:
            again = next(((n, t) for n, t in runs[index + 1 :] if t.name == tool.name and n > number), None)
            if again is not None:
                fixed = "corrected" if again[1].failure is None else "called again"
                story += f" · {fixed} in turn {again[0]}"
        parts.append(story)
    if not parts and len(runs) <= _LISTED:
        parts = [f"{tool.name} → {'no result' if tool.result is None else cut(tool.result, 30)}" for _, tool in runs]
    elif not parts:
        called = Counter(tool.name for _, tool in runs)
        parts = [f"{len(runs)} tool calls: " + ", ".join(f"{name} ({n})" for name, n in called.items())]
    return " · ".join(parts)


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def anomalies(run: ScenarioRun) -> list[str]:
    """What the model did that no tool could act on (arguments not a JSON object, a tool not given), one phrase each."""
    found: list[str] = []
    for turn in run.turns:
        call = turn.model_call
        declared = {tool.name for tool in call.tools} | set(run.tools)
        for tool_call in call.reply.tool_calls if call.reply is not None else []:
            name = quoted(tool_call.name)  # the model's text, shown inert in the log
            if tool_call.name not in declared:
                found.append(f"asked for {name}, a tool it was not given")
            if tool_call.raw_arguments is not None:
                found.append(f"sent {name} arguments that are not a JSON object")
    return list(dict.fromkeys(found))
