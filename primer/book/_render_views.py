"""A chapter's traces as the templates draw them: a view per scenario, run and turn, with their ids.

Page weight grows with what happened, not with turns squared: a turn's context shows the messages
new since the turn before, a live request body what is new (a ``_Ref`` to the rest, and how traces.js
puts it back), and the declared tools are drawn once a page and referred to after (``_Shared``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from markupsafe import Markup

from primer import summary
from primer.book._render_markdown import escape_text
from primer.book._source import IMPORT_RUN, ChapterTraces
from primer.errors import NotFound
from primer.spent import Segment, segments
from primer.streaming import sse_text, stream_line, stream_timeline
from primer.trace import DeclaredTool, Exchange, ModelCall, ScenarioRun, Turn

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass
class Anchors:
    """Stable ``id`` values, unique on one page: a turn is ``ch09_who_retries-service_is_busy-mock-turn-2`` on
    every build, and a second trace of the same run on the page gets ``-2``."""  # noqa: D205, D209 - one sentence

    used: set[str] = field(default_factory=set)

    def make(self, *parts: object) -> str:
        base = "-".join(_UNSAFE_ID.sub("-", str(part)) for part in parts)
        anchor, count = base, 1
        while anchor in self.used:
            count += 1
            anchor = f"{base}-{count}"
        self.used.add(anchor)
        return anchor


_Ref = tuple[str, str, str]  # what a payload repeats from an earlier one, where, its id: ``messages [0]-[1]``...


class RequestView(NamedTuple):  # a request body as shown: what is new, what it refers to, how traces.js rebuilds it
    json: Any
    refs: tuple[_Ref, ...] = ()
    base: str = ""  # the body this one is rebuilt from: its first ``messages`` and the ``same`` keys
    messages: int = 0
    same: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


class ToolsView(NamedTuple):  # a call's declared tools: drawn here (``schema_anchors``), or ``same_as`` one before
    tools: list[DeclaredTool]
    anchor: str
    same_as: str | None
    schema_anchors: list[str]


class TurnView(NamedTuple):  # a turn: its ids, the turn its context is new since, its tools, bodies, notes, time
    turn: Turn
    anchor: str
    model_anchor: str
    since: TurnView | None  # None: the context is shown from its first message
    in_transcript: bool  # False: the context is not a prefix of the transcript, so it is shown whole
    tools: ToolsView | None
    exchanges: list[tuple[Exchange, RequestView]]
    notes: list[tuple[str, dict[str, Any], list[_Ref]]]  # label, what is new, what it refers to
    segments: list[Segment]


_Trial = tuple[str, str, list[TurnView]]  # of a repeated run: its line (``summary.trials``), id and turns


class RunView(NamedTuple):
    run: ScenarioRun
    anchor: str
    transcript_anchor: str
    ended_anchor: str
    error_anchor: str
    turns: list[TurnView]
    trials: list[_Trial]


_Cell = tuple[str, str] | None


class Comparison(NamedTuple):  # mock and live of one scenario aligned turn by turn
    differences: list[str]
    rows: list[tuple[str, list[_Cell], bool]]  # label, each run's line and id (None: no such turn), whether they part


class ScenarioView(NamedTuple):
    name: str
    anchor: str
    mock: RunView | None
    live: RunView | None
    comparison: Comparison | None
    compare_anchor: str


class StreamView(NamedTuple):  # its events one a line and as SSE, escaped
    line: str
    timeline: Markup
    sse: Markup


def stream_view(call: ModelCall) -> StreamView | None:
    """What the page draws of a model call's stream (None: not streamed)."""
    line = stream_line(call)
    if line is None or call.streamed is None:
        return None
    texts = (stream_timeline(call.streamed), sse_text(call.streamed))
    timeline, sse = (Markup(escape_text(text)) for text in texts)  # noqa: S704 - escaped
    return StreamView(line, timeline, sse)


def _span(count: int) -> str:
    return "[0]" if count == 1 else f"[0]\N{EN DASH}[{count - 1}]"


def _request(body: Any, previous: tuple[Any, int, str] | None) -> RequestView:
    # A model request body with what the previous request (body, turn, anchor) carried taken out and referred to.
    if previous is None or not (isinstance(body, dict) and isinstance(previous[0], dict)):
        return RequestView(body)
    before, turn, base = previous
    shown, refs, taken, same = dict(body), [], 0, []
    messages, sent = body.get("messages"), before.get("messages")
    if isinstance(messages, list) and isinstance(sent, list) and sent and messages[: len(sent)] == sent:
        shown["messages"], taken = messages[len(sent) :], len(sent)
        refs.append((f"messages {_span(taken)}", f"as sent in turn {turn}", base))
    tools = body.get("tools")
    if isinstance(tools, list) and tools and tools == before.get("tools"):
        del shown["tools"]
        same.append("tools")
        refs.append((f"tools ({len(tools)})", f"as sent in turn {turn}", base))
    return RequestView(shown, tuple(refs), base, taken, tuple(same), tuple(body)) if refs else RequestView(body)


def _notes(call: ModelCall, previous: TurnView | None) -> list[tuple[str, dict[str, Any], list[_Ref]]]:
    # A mock's "context ignored" note lists every role sent: the part the previous
    # call's note listed is referred to, or the page would grow with turns squared.
    before = {note.label: note.data for note in previous.turn.model_call.notes} if previous else {}
    views = []
    for note in call.notes:
        data, refs, earlier = dict(note.data), [], before.get(note.label, {})
        for key, value in note.data.items():
            old = earlier.get(key)
            if not (previous and isinstance(value, list) and isinstance(old, list) and 1 < len(old) < len(value)):
                continue
            if value[: len(old)] == old:
                data[key] = value[len(old) :]
                where = f"as in turn {previous.turn.number}"
                refs.append((f"{key} {_span(len(old))}", where, previous.model_anchor))
        views.append((note.label, data, refs))
    return views


@dataclass
class _Shared:
    """The declared tools, drawn once a page: by the first run to declare them, under an id with their digest."""

    chapter: str
    scenario: str
    anchors: Anchors  # every id of the page: a trace from the HTML cache is referred to as one rendered afresh
    here: list[tuple[list[DeclaredTool], str, str, int]] = field(default_factory=list)  # tools, anchor, mode, turn

    def view(self, tools: list[DeclaredTool], mode: str, turn: int) -> ToolsView:
        """The tools as drawn here, or as a reference to where they were drawn before."""
        for drawn, anchor, drawn_mode, drawn_turn in self.here:
            if drawn == tools:
                where = f"turn {drawn_turn}" if drawn_mode == mode else f"the {drawn_mode} run, turn {drawn_turn}"
                return ToolsView(tools, anchor, where, [])
        data = json.dumps([tool.model_dump() for tool in tools], sort_keys=True, ensure_ascii=False)
        prefix, key = f"{self.chapter}-", hashlib.sha256(data.encode()).hexdigest()[:10]
        for anchor in sorted(self.anchors.used):
            if anchor.startswith(prefix) and anchor.endswith(suffix := f"-tools-{key}"):
                return ToolsView(tools, anchor, f"scenario {anchor[len(prefix) : -len(suffix)]}", [])
        anchor = self.anchors.make(self.chapter, self.scenario, "tools", key)
        self.here.append((tools, anchor, mode, turn))
        return ToolsView(tools, anchor, None, [self.anchors.make(anchor, index) for index in range(1, len(tools) + 1)])


def _run(run: ScenarioRun, chapter: str, anchors: Anchors, shared: _Shared) -> RunView:
    anchor = anchors.make(chapter, run.name, run.mode)
    turns: list[TurnView] = []
    previous: tuple[Any, int, str] | None = None  # the last request body so far, its turn and model call's anchor
    for turn in run.turns:
        turn_anchor = anchors.make(anchor, "turn", turn.number)
        model_anchor, call, context = anchors.make(turn_anchor, "model"), turn.model_call, turn.model_call.context
        before, in_transcript = turns[-1] if turns else None, context == run.transcript[: len(context)]
        sent = before.turn.model_call.context if before and in_transcript else None
        since = before if sent is not None and context[: len(sent)] == sent else None
        exchanges = [(x, _request(x.request.json_body, previous)) for x in call.exchanges]
        tools = shared.view(call.tools, run.mode, turn.number) if call.tools else None
        shown = since, in_transcript, tools, exchanges, _notes(call, before), segments(turn)
        turns.append(TurnView(turn, turn_anchor, model_anchor, *shown))
        if call.exchanges:
            previous = (call.exchanges[-1].request.json_body, turn.number, model_anchor)
    transcript, ended, error = (anchors.make(anchor, what) for what in ("transcript", "ended", "error"))
    return RunView(run, anchor, transcript, ended, error, turns, _trials(run, turns, anchor, anchors))


def _trials(run: ScenarioRun, turns: list[TurnView], anchor: str, anchors: Anchors) -> list[_Trial]:
    # The turns' views grouped as the run's turns are, trial by trial (none unless every turn is in one).
    groups, start = [], 0
    for line, number, trial in summary.trials(run):
        groups.append((line, anchors.make(anchor, "trial", str(number)), turns[start : start + len(trial)]))
        start += len(trial)
    return groups


def _asked(turn: Turn | None) -> list[str]:
    reply = turn.model_call.reply if turn else None
    return [c.name for c in reply.tool_calls] if reply else []


def _compare(mock: RunView, live: RunView, said: Callable[[str], str]) -> Comparison:
    rows, differences = [], []
    for index in range(max(len(mock.turns), len(live.turns))):
        left, right = (v.turns[index] if index < len(v.turns) else None for v in (mock, live))
        diverges = left is None or right is None or _asked(left.turn) != _asked(right.turn)
        if diverges and left is not None and right is not None:
            was, got = (", ".join(_asked(t.turn)) or "no tool" for t in (left, right))
            differences.append(f"turn {index + 1} asked for {was} (mock) but {got} (live)")
        cells: list[_Cell] = [(summary.turn_line(t.turn, said), t.anchor) if t else None for t in (left, right)]
        rows.append((f"turn {index + 1}", cells, diverges))
    if len(mock.turns) != len(live.turns):
        differences.append(f"{summary.count(len(mock.turns), 'turn')} (mock) but {len(live.turns)} (live)")
    first, then = mock.run.ending, live.run.ending
    if first.reason != then.reason:
        differences.append(f"ended {first.label} (mock) but {then.label} (live)")
    ended: list[_Cell] = [(summary.ending_line(v.run.ending), v.ended_anchor) for v in (mock, live)]
    rows.append(("ended", ended, first.reason != then.reason))
    return Comparison(differences, rows)


def prepare(
    traces: ChapterTraces, only: str | None, anchors: Anchors, said: Callable[[str], str]
) -> list[ScenarioView]:
    """Each scenario of the chapter (or ``only``), replies worded as ``said``; ``NotFound`` names the ones there are."""
    runs = {(s.name, run.mode): s for run in (traces.mock, traces.live) if run for s in run.scenarios}
    names = list(dict.fromkeys(name for name, _ in runs))
    only = IMPORT_RUN if only and (IMPORT_RUN, "mock") in runs else only  # not imported: each marker shows why
    if only is not None and only not in names:
        raise NotFound(
            f"Chapter {traces.chapter} has no scenario {only!r}. Its scenarios are: {', '.join(names) or 'none'}."
        )
    views = []
    for name in [only] if only is not None else names:
        shared = _Shared(traces.chapter, name, anchors)
        anchor = anchors.make(traces.chapter, name)
        mock, live = (runs.get((name, mode)) for mode in ("mock", "live"))
        mock_view, live_view = (_run(r, traces.chapter, anchors, shared) if r else None for r in (mock, live))
        comparison = _compare(mock_view, live_view, said) if mock_view and live_view else None
        views.append(ScenarioView(name, anchor, mock_view, live_view, comparison, anchors.make(anchor, "compare")))
    return views
