"""Render traces as collapsible HTML: ``ChapterTraces`` in, one HTML string out.

This is the *render* half of the Markdown extension (the *load* half asks a
``TraceSource``, in ``primer.book.markdown``). It never runs a scenario and
never reads a file but its templates, so the same traces always give the same
page::

    html = render_traces(traces)                       # every scenario of the chapter
    html = render_traces(traces, "service_is_busy")    # one scenario

The page is nested ``<details>``: summary lines (worded by ``primer.summary``)
tell the story closed, payloads are one click deeper. Everything that came
from a model, a tool or a service goes through Jinja2's autoescaping. Payloads
sit in ``data-search-exclude`` blocks so only the summary lines reach
Material's search index; such a block never holds a ``div``, because
Material's indexer ends an exclusion at the first closing tag of the same name.

Page weight grows with what happened, not with turns squared: the declared
tools are shown once per page and referred to after, each turn's context
shows the messages new since the turn before (the whole context is one click
away, built from the run's transcript), and a live request body shows what
is new and refers to the messages and tools the previous request already
carried. What is referred to is a ``Ref``, drawn beside the payload and never
as a value inside its JSON; the whole body as sent is rebuilt by traces.js
(``Rebuild``), and the trace JSON holds it without JavaScript.

Payloads are plain escaped text (traces.js colours JSON when it is opened),
and every ``<pre>`` has an id of its own, which Material's copy button uses
to name the block it copies.

A book's page does not carry the payloads: when the traces name a
``payloads_url``, each payload block (``div.tr-body``, by an id of its own) is
a link to its element in the chapter's payload page (``render_payloads``,
published beside the trace JSON), which a reader without JavaScript lands
on and traces.js fills the block in from when it is first opened. The
timelines stay on the page: they are shown unopened.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from primer import summary
from primer.book.links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR, page_relative
from primer.book.payloads import BLOCK_END, BLOCK_START
from primer.book.source import ChapterTraces, LiveStatus
from primer.book.stream_view import stream_view
from primer.errors import NotFound
from primer.export import otlp_available
from primer.inert import invisible_characters, visible_escape
from primer.trace import (
    Attempt,
    Backoff,
    ChapterRun,
    DeclaredTool,
    Exchange,
    Message,
    ModelCall,
    ScenarioRun,
    ToolRun,
    Turn,
)

__all__ = [
    "Anchors",
    "Comparison",
    "Segment",
    "json_block",
    "json_inline",
    "render_error",
    "render_payloads",
    "render_traces",
]

Mode = Literal["mock", "live"]

# C0 controls (but tab, newline, carriage return) mean nothing on a page, and
# Python-Markdown uses STX/ETX to delimit its own placeholders: untrusted text
# must not be able to forge one.
_CONTROLS: dict[int, str] = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127], "�")
# C1 controls (0x9b is a one-byte CSI), and the invisible and bidirectional
# format characters (U+200B, U+202E, ...: primer.inert.INVISIBLE), hide or
# reorder what a reader sees: shown as the escapes a terminal shows, \u202e,
# which JSON reads too. The zero-width joiners stay: they join emoji and the
# letters of some scripts, and the redactor sees through them.
_CONTROLS |= {
    ord(char): visible_escape(char)
    for char in [*map(chr, range(0x80, 0xA0)), *invisible_characters()]
    if char not in "\u200c\u200d"
}


def _clean(html: str) -> str:
    return html.translate(_CONTROLS)


# -- JSON, pretty-printed as plain text --------------------------------------

# Payloads are plain escaped text: traces.js colours a block's JSON when the
# <details> around it is first opened. Highlighting here put a <span> around
# every token, and that markup was most of a page's weight.


def _text(text: str) -> str:
    # Escaping for element content only (never an attribute): quotes may stay,
    # which keeps JSON bodies a third lighter than markupsafe's &#34;.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def json_block(value: Any) -> Markup:
    """A JSON value pretty-printed (indent 2) and escaped, for a ``<pre>``."""
    return Markup(_text(json.dumps(value, indent=2, ensure_ascii=False, default=str)))  # noqa: S704 - escaped above


def json_inline(value: Any) -> Markup:
    """A JSON value on one line, as the seeds print ``attempt {"number": 1}``, escaped."""
    return Markup(_text(json.dumps(value, ensure_ascii=False, default=str)))  # noqa: S704 - escaped above


# -- anchors -----------------------------------------------------------------

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass
class Anchors:
    """Stable, unique ``id`` values for one page.

    ``ch09_who_retries-service_is_busy-mock-turn-2`` names the same turn on
    every build; a second trace of the same run on one page gets ``-2``.
    """

    used: set[str] = field(default_factory=set)

    def make(self, *parts: object) -> str:
        """An id from its parts, unique on this page."""
        base = "-".join(_UNSAFE_ID.sub("-", str(part)) for part in parts)
        anchor, count = base, 1
        while anchor in self.used:
            count += 1
            anchor = f"{base}-{count}"
        self.used.add(anchor)
        return anchor


# -- the views the templates draw --------------------------------------------


@dataclass(frozen=True)
class Segment:
    """One stretch of a turn on a run's timeline: who the time went to, how long, and what it was."""

    kind: Literal["provider", "service", "waited", "library"]
    ms: float
    label: str


@dataclass(frozen=True)
class TurnTime:
    """A turn on the timeline: its segments and where it links to."""

    number: int
    anchor: str
    total_ms: float
    segments: list[Segment]

    @property
    def split(self) -> list[tuple[str, float]]:
        """The turn's time by who spent it, in the legend's order, for the turn's tooltip."""
        totals = _totals([self])
        return [(kind, ms) for kind, ms in totals.items() if ms]


@dataclass(frozen=True)
class Ref:
    """Something a payload repeats from an earlier one: drawn as a pointer beside it, never inside its JSON."""

    #: What is not repeated: ``messages [0]-[1]``, ``tools (2)``, ``roles [0]-[2]`` (an en dash on the page).
    what: str
    #: Where it was shown: ``as sent in turn 1``.
    where: str
    anchor: str


@dataclass(frozen=True)
class Rebuild:
    """How traces.js puts a request body back together, whole, as it was sent.

    The body shown holds what is new; the rest is the previous request's
    (``base``, a model call's anchor): its first ``messages`` messages, and
    the keys in ``same`` whole. ``keys`` is the order the body had.
    """

    base: str
    messages: int
    same: list[str]
    keys: list[str]


@dataclass(frozen=True)
class BodyView:
    """A request or response body: its ``<pre>``'s id, what it shows, what it refers to."""

    anchor: str
    json: Any
    text: str | None
    refs: list[Ref]
    rebuild: Rebuild | None
    #: The request body of a model call (``tr-req``): what a later request is rebuilt from.
    request: bool = False


@dataclass(frozen=True)
class ContextView:
    """What a model call's context table shows: only what is new."""

    total: int
    #: Index of the first message shown; the ones before it were shown earlier.
    start: int
    messages: list[Message]
    #: The turn whose context the earlier messages were sent in, if any, and its model call's anchor.
    since: int | None
    since_anchor: str | None
    #: False when the context is not a prefix of the transcript: then it is shown whole.
    in_transcript: bool


@dataclass(frozen=True)
class ToolsView:
    """The declared tools of a model call: a list, or a reference to one shown before."""

    tools: list[DeclaredTool]
    anchor: str
    #: Where the list this refers to is (``turn 1``, ``the mock run's turn 1``), or None when it is here.
    same_as: str | None
    #: The ids of the schemas' ``<pre>`` blocks, one per tool (when the list is here).
    schema_anchors: list[str]


@dataclass(frozen=True)
class ExchangeView:
    """One wire exchange with its bodies as drawn."""

    exchange: Exchange
    request: BodyView
    response: BodyView | None


@dataclass(frozen=True)
class NoteView:
    """A note; lists the previous call's note already showed are referred to, not repeated."""

    label: str
    data: dict[str, Any]
    refs: list[Ref]


@dataclass(frozen=True)
class ModelView:
    """A model call, prepared."""

    call: ModelCall
    anchor: str
    context: ContextView
    tools: ToolsView | None
    exchanges: list[ExchangeView]
    notes: list[NoteView]
    error_anchor: str


@dataclass(frozen=True)
class StepView:
    """A tool's attempt (with its bodies) or backoff."""

    step: Attempt | Backoff
    request: BodyView | None
    response: BodyView | None


@dataclass(frozen=True)
class ToolView:
    """A tool call, prepared."""

    run: ToolRun
    anchor: str
    steps: list[StepView]
    error_anchor: str


@dataclass(frozen=True)
class TurnView:
    """A turn, prepared."""

    turn: Turn
    anchor: str
    model: ModelView
    tools: list[ToolView]


@dataclass(frozen=True)
class RunView:
    """One scenario's run in one mode, prepared for the template."""

    run: ScenarioRun
    mode: Mode
    anchor: str
    transcript_anchor: str
    ended_anchor: str
    error_anchor: str
    turns: list[TurnView]
    timeline: list[TurnTime]
    totals: dict[str, float]
    #: What sets the run apart, for its folded summary (``primer.summary.scenario_story``).
    story: str


@dataclass(frozen=True)
class CompareRow:
    """One turn of the side-by-side view."""

    label: str
    mock: str | None
    mock_anchor: str | None
    live: str | None
    live_anchor: str | None
    diverges: bool


@dataclass(frozen=True)
class Comparison:
    """Mock and live of one scenario aligned turn by turn, and where they part."""

    rows: list[CompareRow]
    differences: list[str]

    @property
    def line(self) -> str:
        """The summary line of the side-by-side view."""
        if not self.differences:
            turns = len(self.rows) - 1
            asked = "in its one turn" if turns == 1 else f"in each of {turns} turns"
            return f"mock and live side by side · same tools asked {asked} · same ending"
        return "mock and live side by side · diverge: " + "; ".join(self.differences)


@dataclass(frozen=True)
class ScenarioView:
    """A scenario: its mock run, its live run (or why there is none), the comparison."""

    name: str
    anchor: str
    title: str | None
    mock: RunView | None
    live: RunView | None
    live_missing: str | None
    comparison: Comparison | None
    compare_anchor: str


# -- preparing the views -----------------------------------------------------


def _asked(call: ModelCall) -> list[str]:
    return [c.name for c in call.reply.tool_calls] if call.reply else []


def _segments(turn: Turn) -> list[Segment]:
    call = turn.model_call
    segments = []
    if call.timing.outside_ms:
        segments.append(Segment("provider", call.timing.outside_ms, "model provider"))
    segments.append(Segment("library", call.timing.library_ms, "model call, library"))
    for run in turn.tools:
        for step in run.steps:
            if isinstance(step, Backoff):
                what = f"{run.name} backoff before attempt {step.before_attempt}"
                segments.append(Segment("waited", step.seconds * 1000, what))
            else:
                what = f"{run.name} attempt {step.number} at the service"
                segments.append(Segment("service", step.timing.outside_ms or 0.0, what))
        timing, library = run.timing, run.timing.library_ms
        sent = [a for a in run.attempts if a.request is not None]
        if timing.outside_ms is None and sent and not any(a.response for a in sent):
            # A recording that did not split the tool's time (an imported
            # one), of a service that never answered: the time went to
            # waiting for the service, as the mock's virtual clock counts it.
            segments.append(Segment("service", library, f"{run.name} waiting for the service, no answer"))
            continue
        # A trace may know the tool's service time but not each attempt's (an
        # imported recording): the timeline still agrees with the tool's line.
        unattributed = (timing.outside_ms or 0.0) - sum(a.timing.outside_ms or 0.0 for a in run.attempts)
        if unattributed >= 0.05:
            segments.append(Segment("service", unattributed, f"{run.name} at the service"))
        segments.append(Segment("library", library, f"{run.name}, library"))
    return [s for s in segments if s.ms > 0]


def _totals(timeline: Sequence[TurnTime]) -> dict[str, float]:
    totals = {"provider": 0.0, "service": 0.0, "waited": 0.0, "library": 0.0}
    for turn in timeline:
        for segment in turn.segments:
            totals[segment.kind] += segment.ms
    return totals


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
        timeline.append(TurnTime(turn.number, turn_anchor, turn.timing.total_ms, _segments(turn)))
    return RunView(
        run=run,
        mode=run.mode,
        anchor=anchor,
        transcript_anchor=anchors.make(anchor, "transcript"),
        ended_anchor=anchors.make(anchor, "ended"),
        error_anchor=anchors.make(anchor, "error"),
        turns=turns,
        timeline=timeline,
        totals=_totals(timeline),
        story=summary.scenario_story(run),
    )


def compare(mock: ScenarioRun, live: ScenarioRun, mock_view: RunView, live_view: RunView) -> Comparison:
    """Align two runs of one scenario turn by turn and say where they diverge."""
    rows: list[CompareRow] = []
    differences: list[str] = []
    for index in range(max(len(mock.turns), len(live.turns))):
        left = mock.turns[index] if index < len(mock.turns) else None
        right = live.turns[index] if index < len(live.turns) else None
        diverges = left is None or right is None or _asked(left.model_call) != _asked(right.model_call)
        if diverges and left is not None and right is not None:
            asked_mock = ", ".join(_asked(left.model_call)) or "no tool"
            asked_live = ", ".join(_asked(right.model_call)) or "no tool"
            differences.append(f"turn {index + 1} asked for {asked_mock} (mock) but {asked_live} (live)")
        rows.append(
            CompareRow(
                label=f"turn {index + 1}",
                mock=summary.turn_line(left) if left else None,
                mock_anchor=mock_view.turns[index].anchor if left else None,
                live=summary.turn_line(right) if right else None,
                live_anchor=live_view.turns[index].anchor if right else None,
                diverges=diverges,
            )
        )
    if len(mock.turns) != len(live.turns):
        differences.append(f"{summary.count(len(mock.turns), 'turn')} (mock) but {len(live.turns)} (live)")
    ended = mock.ending.reason != live.ending.reason
    if ended:
        differences.append(f"ended {mock.ending.label} (mock) but {live.ending.label} (live)")
    rows.append(
        CompareRow(
            label="ended",
            mock=summary.ending_line(mock.ending),
            mock_anchor=mock_view.ended_anchor,
            live=summary.ending_line(live.ending),
            live_anchor=live_view.ended_anchor,
            diverges=ended,
        )
    )
    return Comparison(rows, differences)


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


def _scenarios(traces: ChapterTraces, only: str | None, anchors: Anchors) -> Iterator[ScenarioView]:
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
            comparison = compare(mock, live, mock_view, live_view)
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


# -- the renderer ------------------------------------------------------------


def _exchange_json(run: ToolRun, step: Attempt) -> dict[str, Any]:
    data: dict[str, Any] = {"number": step.number}
    if step.failure is not None:
        data.update(step.failure.model_dump())
    return data


def _grow(ms: float) -> int:
    # flex-grow in tenths of a millisecond, as the figures are printed; at
    # least 1: factors summing below 1 would leave part of the bar empty.
    return max(1, round(ms * 10))


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("primer.book", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        summary=summary,
        json_block=json_block,
        json_inline=json_inline,
        attempt_json=_exchange_json,
        is_backoff=lambda step: isinstance(step, Backoff),
        grow=_grow,
        count=summary.count,
        stream_view=stream_view,
    )
    return env


def _safe_url(url: str | None) -> str | None:
    # A link the page offers must not run script: only http(s) and plain paths.
    # Browsers drop leading spaces and controls before reading the scheme, so must we.
    candidate = (url or "").strip("".join(map(chr, range(0x21))))
    if not candidate:
        return None
    return candidate if urlsplit(candidate).scheme.lower() in ("", "http", "https") else None


def render_traces(
    traces: ChapterTraces,
    scenario: str | None = None,
    *,
    anchors: Anchors | None = None,
    head: bool = True,
    payloads: bool = True,
) -> str:
    """The HTML of a chapter's traces, or of one scenario's.

    Raises ``NotFound`` (naming the scenarios there are) for an unknown
    scenario; ``anchors`` keeps ids unique across several traces on a page;
    ``head=False`` leaves out the chapter's switch, totals, live status and
    download link, for a page's second marker of the same chapter. When the
    traces name a ``payloads_url``, each payload block is a link into the
    chapter's payload page (``render_payloads``) unless ``payloads=False``.
    """
    anchors = anchors if anchors is not None else Anchors()
    anchor = anchors.make(traces.chapter, *([scenario] if scenario else []), "traces")
    failure_anchor = anchors.make(anchor, "failure") if head and traces.live_status.failure else ""
    scenarios = list(_scenarios(traces, scenario, anchors))
    status: LiveStatus = traces.live_status
    html = (
        _environment()
        .get_template("chapter.html.j2")
        .render(
            traces=traces,
            anchor=anchor,
            failure_anchor=failure_anchor,
            scenarios=scenarios,
            status=status,
            download_url=_safe_url(traces.download_url),
            payloads_url=_safe_url(traces.payloads_url) if payloads else None,
            # Only where the book publishes it: the export needs the optional otel extra.
            otlp=otlp_available(),
            head=head,
        )
    )
    # Marked, so a search plugin can be given the block's summary lines alone
    # (primer.book.payloads); comments are inert on the page.
    return f"{BLOCK_START}{_clean(html)}{BLOCK_END}"


# A payload block as render_traces draws it inline: it holds no div, so the first </div> closes it.
_INLINE_PAYLOAD = re.compile(
    r'<div class="tr-body" data-search-exclude id="(?P<id>[^"]+)">\n(?P<body>.*?)\n</div>', re.S
)

_IN_PAGE_LINK = re.compile(r'href="#([^"]+)"')


def render_payloads(traces: ChapterTraces) -> str:
    """The chapter's payload page: every payload block of its traces, by the block's id, as a plain page.

    Published beside the trace JSON as ``traces/CHAPTER.payloads.html``
    (``TraceStore.payloads_url``): a page's payload block links to its
    element here, and traces.js fills the block in from it when opened. The
    ids are the ones the chapter's blocks have on a page that shows the
    chapter once. A link inside a payload to a call on the page points at
    that call's payload instead, which is here too; links to what only the
    page has (a turn, an ending) work once filled in. Root-relative links are
    made relative to this page.
    """
    html = render_traces(traces, payloads=False)
    parts = [
        f"{PAYLOADS_HEAD}\n",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="robots" content="noindex">',
        f"<title>Payloads of {_text(traces.chapter)}</title>",
        # Summaries at least 24 px tall (WCAG 2.2 target size). Light or dark as
        # the reader's system is, with every colour set (the browser's own dark
        # link colours fail contrast), each at least 7:1 against its background.
        "<style>:root{color-scheme:light dark}body{font-family:sans-serif;margin:1rem;background:#fff;color:#1a1a1a}"
        "a{color:#0645ad}a:visited{color:#5a3696}"
        "summary{padding:.2rem 0;min-height:24px;box-sizing:border-box}pre{white-space:pre-wrap;overflow-wrap:anywhere}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .4rem;vertical-align:top}"
        ".tr-payload{border-top:2px solid #888;margin-top:1rem}.tr-payload-id{font-family:monospace}"
        "@media (prefers-color-scheme:dark){body{background:#1e2129;color:#e2e4e9}"
        "a{color:#8ab4f8}a:visited{color:#d7aefb}td,th{border-color:#555}}</style>",
        "</head><body><main>\n",  # one landmark holding it all, for a screen reader's "skip to main"
        f"<h1>Payloads of {_text(traces.chapter)}</h1>\n",
    ]
    blocks = [(match["id"], match["body"]) for match in _INLINE_PAYLOAD.finditer(html)]
    here = {anchor for anchor, _ in blocks}

    def landing(link: re.Match[str]) -> str:
        # A link to a call on the page lands, here, on that call's payload (and, filled in, inside the call).
        target = f"{link[1]}-body"
        return f'href="#{target}"' if target in here else link[0]

    for anchor, body in blocks:
        linked = _IN_PAGE_LINK.sub(landing, body)
        parts.append(f'<div class="tr-payload" id="{anchor}"><p class="tr-payload-id">{anchor}</p>\n{linked}\n</div>\n')
    parts.append("</main></body></html>\n")
    return page_relative("".join(parts), f"{PUBLISHED_DIR}/{traces.chapter}{PAYLOADS_SUFFIX}")


def render_error(message: str, *, marker: str | None = None) -> str:
    """A visible, escaped error block in place of a trace that could not be shown."""
    html = _environment().get_template("error.html.j2").render(message=message, marker=marker)
    return _clean(html)
