"""Preparing the views: a chapter's traces as the templates draw them (``primer.book._render_views``).

Page weight grows with what happened, not with turns squared: each turn's
context shows the messages new since the turn before, a live request body
what is new (``Ref`` to the rest, ``Rebuild`` to put it back), and the
declared tools are drawn once per page and referred to after (``_Shared``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from primer import summary
from primer.book._render_compare import compare
from primer.book._render_text import Anchors
from primer.book._render_timeline import TurnTime, segments, totals
from primer.book._render_views import (
    BodyView,
    ContextView,
    ExchangeView,
    ModelView,
    NoteView,
    Rebuild,
    Ref,
    RunView,
    ScenarioView,
    StepView,
    ToolsView,
    ToolView,
    TrialView,
    TurnView,
)
from primer.book._source import ChapterTraces
from primer.errors import NotFound
from primer.trace import Backoff, ChapterRun, DeclaredTool, ModelCall, ScenarioRun, ToolRun

__all__ = ["scenarios"]


def _context(call: ModelCall, previous: TurnView | None, run: ScenarioRun) -> ContextView:
    context = call.context
    in_transcript = context == run.transcript[: len(context)]
    start, since, since_anchor = 0, None, None
    if previous is not None and in_transcript:
        before = previous.turn.model_call.context
        if len(before) <= len(context) and context[: len(before)] == before:
            start, since, since_anchor = len(before), previous.turn.number, previous.model.anchor
    return ContextView(
        total=len(context),
        start=start,
        messages=context[start:],
        since=since,
        since_anchor=since_anchor,
        in_transcript=in_transcript,
    )


def _span(count: int) -> str:
    return "[0]" if count == 1 else f"[0]\N{EN DASH}[{count - 1}]"


@dataclass
class _Previous:
    """The last model request of a run so far: the body the next one is compared with."""

    body: Any
    turn: int
    anchor: str


def _request_body(body: Any, previous: _Previous | None) -> tuple[Any, list[Ref], Rebuild | None]:
    """A model request body with what the previous request already carried taken out and referred to."""
    if previous is None or not (isinstance(body, dict) and isinstance(previous.body, dict)):
        return body, [], None
    shown, refs = dict(body), []
    taken, same = 0, []
    where = f"as sent in turn {previous.turn}"
    messages, before = body.get("messages"), previous.body.get("messages")
    if isinstance(messages, list) and isinstance(before, list) and before and messages[: len(before)] == before:
        shown["messages"] = messages[len(before) :]
        taken = len(before)
        refs.append(Ref(f"messages {_span(taken)}", where, previous.anchor))
    tools = body.get("tools")
    if isinstance(tools, list) and tools and tools == previous.body.get("tools"):
        del shown["tools"]
        same.append("tools")
        refs.append(Ref(f"tools ({len(tools)})", where, previous.anchor))
    if not refs:
        return body, [], None
    return shown, refs, Rebuild(previous.anchor, taken, same, list(body))


def _notes(call: ModelCall, previous: TurnView | None) -> list[NoteView]:
    # A mock's "context ignored" note lists every role sent: the part the
    # previous call's note listed is referred to, or the page would grow
    # with turns squared.
    before = {note.label: note.data for note in previous.turn.model_call.notes} if previous else {}
    views = []
    for note in call.notes:
        data, refs = dict(note.data), []
        earlier = before.get(note.label, {})
        for key, value in note.data.items():
            old = earlier.get(key)
            if (
                previous is not None
                and isinstance(value, list)
                and isinstance(old, list)
                and 1 < len(old) < len(value)
                and value[: len(old)] == old
            ):
                data[key] = value[len(old) :]
                where = f"as in turn {previous.turn.number}"
                refs.append(Ref(f"{key} {_span(len(old))}", where, previous.model.anchor))
        views.append(NoteView(note.label, data, refs))
    return views


def _tools_key(tools: list[DeclaredTool]) -> str:
    data = json.dumps([tool.model_dump() for tool in tools], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:10]


@dataclass
class _Shared:
    """What a page draws once and refers to after: the declared tools.

    The scenarios of a chapter mostly declare the same tools. The first run
    to declare a set draws it, under an id made of the scenario's name and a
    digest of the tools (``ch09_who_retries-service_is_busy-tools-3f2a9c1b0e``);
    later runs refer to it. The page's ``Anchors`` remember every id, so a
    trace taken from the HTML cache is referred to exactly as one rendered
    afresh, and a page's HTML is the same either way.
    """

    chapter: str
    scenario: str
    anchors: Anchors
    #: Drawn in this scenario: tools, anchor, mode, turn.
    here: list[tuple[list[DeclaredTool], str, str, int]] = field(default_factory=list)

    def find(self, tools: list[DeclaredTool], mode: str) -> tuple[str, str] | None:
        """Where these tools were drawn already, and how to say so; None if nowhere yet."""
        for drawn, anchor, drawn_mode, turn in self.here:
            if drawn == tools:
                return anchor, f"turn {turn}" if drawn_mode == mode else f"the {drawn_mode} run, turn {turn}"
        suffix = f"-tools-{_tools_key(tools)}"
        prefix = f"{self.chapter}-"
        for anchor in sorted(self.anchors.used):
            if anchor.startswith(prefix) and anchor.endswith(suffix):
                return anchor, f"scenario {anchor[len(prefix) : -len(suffix)]}"
        return None

    def draw(self, tools: list[DeclaredTool], mode: str, turn: int) -> str:
        """The id of a new drawing of these tools, noted for the runs after."""
        anchor = self.anchors.make(self.chapter, self.scenario, "tools", _tools_key(tools))
        self.here.append((tools, anchor, mode, turn))
        return anchor


def _body(anchor: str, json_body: Any, text_body: str | None, *, request: bool = False) -> BodyView:
    return BodyView(anchor, json_body, text_body, [], None, request)


def _tool_view(run: ToolRun, anchor: str, anchors: Anchors) -> ToolView:
    steps = []
    for step in run.steps:
        if isinstance(step, Backoff):
            steps.append(StepView(step, None, None))
            continue
        request = response = None
        if step.request is not None:
            request = _body(anchors.make(anchor, "req", step.number), step.request.json_body, step.request.text_body)
        if step.response is not None:
            body = step.response
            response = _body(anchors.make(anchor, "res", step.number), body.json_body, body.text_body)
        steps.append(StepView(step, request, response))
    return ToolView(run, anchor, steps, anchors.make(anchor, "error"))


def _run_view(run: ScenarioRun, chapter: str, anchors: Anchors, shared: _Shared) -> RunView:
    anchor = anchors.make(chapter, run.name, run.mode)
    turns: list[TurnView] = []
    timeline: list[TurnTime] = []
    previous_request: _Previous | None = None
    for turn in run.turns:
        turn_anchor = anchors.make(anchor, "turn", turn.number)
        model_anchor = anchors.make(turn_anchor, "model")
        call = turn.model_call
        tools: ToolsView | None = None
        if call.tools:
            found = shared.find(call.tools, run.mode)
            if found is not None:
                tools = ToolsView(call.tools, found[0], found[1], [])
            else:
                tools_anchor = shared.draw(call.tools, run.mode, turn.number)
                schemas = [anchors.make(tools_anchor, index) for index in range(1, len(call.tools) + 1)]
                tools = ToolsView(call.tools, tools_anchor, None, schemas)
        exchanges = []
        for exchange in call.exchanges:
            sent = exchange.request
            body, refs, rebuild = _request_body(sent.json_body, previous_request)
            request = BodyView(
                anchors.make(model_anchor, "req", exchange.attempt), body, sent.text_body, refs, rebuild, request=True
            )
            response = None
            if exchange.response is not None:
                got = exchange.response
                response = _body(anchors.make(model_anchor, "res", exchange.attempt), got.json_body, got.text_body)
            exchanges.append(ExchangeView(exchange, request, response))
        if call.exchanges:
            previous_request = _Previous(call.exchanges[-1].request.json_body, turn.number, model_anchor)
        model = ModelView(
            call=call,
            anchor=model_anchor,
            context=_context(call, turns[-1] if turns else None, run),
            tools=tools,
            exchanges=exchanges,
            notes=_notes(call, turns[-1] if turns else None),
            error_anchor=anchors.make(model_anchor, "error"),
        )
        tool_views = []
        for index, tool_run in enumerate(turn.tools, 1):
            tool_views.append(_tool_view(tool_run, anchors.make(turn_anchor, "tool", index), anchors))
        turns.append(TurnView(turn=turn, anchor=turn_anchor, model=model, tools=tool_views))
        timeline.append(TurnTime(turn.number, turn_anchor, turn.timing.total_ms, segments(turn)))
    return RunView(
        run=run,
        mode=run.mode,
        anchor=anchor,
        transcript_anchor=anchors.make(anchor, "transcript"),
        ended_anchor=anchors.make(anchor, "ended"),
        error_anchor=anchors.make(anchor, "error"),
        turns=turns,
        timeline=timeline,
        totals=totals(timeline),
        story=summary.scenario_story(run),
        trials=_trials(turns, anchor, anchors),
    )


# A repeated run notes each trial's verdict on its last model call: ``trial 2 of 5``.
_TRIAL = re.compile(r"trial (\d+) of (\d+)")


def _trials(turns: list[TurnView], anchor: str, anchors: Anchors) -> list[TrialView]:
    """The turns grouped by the trial each ends or belongs to; none unless every turn is in one."""
    groups: list[TrialView] = []
    start = 0
    for index, turn in enumerate(turns):
        for note in turn.turn.model_call.notes:
            found = _TRIAL.fullmatch(note.label)
            if found is None or not isinstance(note.data.get("passed"), bool):
                continue
            why = note.data.get("why")
            groups.append(
                TrialView(
                    number=int(found[1]),
                    total=int(found[2]),
                    passed=note.data["passed"],
                    why=why if isinstance(why, str) else None,
                    anchor=anchors.make(anchor, "trial", found[1]),
                    turns=turns[start : index + 1],
                )
            )
            start = index + 1
            break
    return groups if groups and start == len(turns) else []


def _find(run: ChapterRun | None, name: str) -> ScenarioRun | None:
    if run is None:
        return None
    return next((s for s in run.scenarios if s.name == name), None)


def _live_missing(traces: ChapterTraces, name: str) -> str:
    status = traces.live_status
    if traces.live is None:
        return f"no live run: {status.reason or 'none was recorded'}"
    return f"no live run of this scenario: the recorded live trace of {traces.chapter} does not hold it"


def _scenario_names(traces: ChapterTraces) -> list[str]:
    names: list[str] = []
    for run in (traces.mock, traces.live):
        for scenario in run.scenarios if run else []:
            if scenario.name not in names:
                names.append(scenario.name)
    return names


def scenarios(
    traces: ChapterTraces, only: str | None, anchors: Anchors, said: Callable[[str], str]
) -> Iterator[ScenarioView]:
    """Each scenario of the chapter (or ``only`` that one), prepared; ``NotFound`` names the ones there are."""
    names = _scenario_names(traces)
    if only is not None:
        if only not in names:
            raise NotFound(
                f"Chapter {traces.chapter} has no scenario {only!r}. Its scenarios are: {', '.join(names) or 'none'}."
            )
        names = [only]
    for name in names:
        anchor = anchors.make(traces.chapter, name)
        mock, live = _find(traces.mock, name), _find(traces.live, name)
        shared = _Shared(traces.chapter, name, anchors)
        mock_view = _run_view(mock, traces.chapter, anchors, shared) if mock else None
        live_view = _run_view(live, traces.chapter, anchors, shared) if live else None
        comparison = None
        if mock and live and mock_view and live_view:
            comparison = compare(mock, live, mock_view, live_view, said)
        either = mock or live
        yield ScenarioView(
            name=name,
            anchor=anchor,
            title=either.title if either else None,
            mock=mock_view,
            live=live_view,
            live_missing=None if live else _live_missing(traces, name),
            comparison=comparison,
            compare_anchor=anchors.make(anchor, "compare"),
        )
