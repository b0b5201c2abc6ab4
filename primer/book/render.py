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
tools are shown once per run and referred to after, each turn's context shows
the messages new since the turn before (the whole context is one click away,
built from the run's transcript), and a live request body refers to the
messages and tools the previous request already carried.
"""

from __future__ import annotations

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
from primer.book.source import ChapterTraces, LiveStatus
from primer.errors import NotFound
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
    "render_traces",
]

Mode = Literal["mock", "live"]

# C0 controls (but tab, newline, carriage return) mean nothing on a page, and
# Python-Markdown uses STX/ETX to delimit its own placeholders: untrusted text
# must not be able to forge one.
_CONTROLS = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127], "�")


def _clean(html: str) -> str:
    return html.translate(_CONTROLS)


# -- JSON, pretty-printed and highlighted ------------------------------------

# One token of json.dumps output: a string (maybe a key, when a colon follows),
# a number, or a literal. Everything between tokens is punctuation and space.
_JSON_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*")(?P<key>\s*:)?'
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)"
    r"|(?P<literal>\btrue\b|\bfalse\b|\bnull\b)"
)


def _text(text: str) -> str:
    # Escaping for element content only (never an attribute): quotes may stay,
    # which keeps JSON bodies a third lighter than markupsafe's &#34;.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _highlight(text: str) -> Markup:
    """JSON text as escaped HTML with Pygments' class names, which Material colours."""
    out: list[str] = []
    position = 0
    for match in _JSON_TOKEN.finditer(text):
        out.append(_text(text[position : match.start()]))
        if match["string"] is not None:
            css = "nt" if match["key"] else "s2"
            out.append(f'<span class="{css}">{_text(match["string"])}</span>{match["key"] or ""}')
        elif match["number"] is not None:
            out.append(f'<span class="m">{match["number"]}</span>')
        else:
            out.append(f'<span class="kc">{match["literal"]}</span>')
        position = match.end()
    out.append(_text(text[position:]))
    return Markup("".join(out))  # noqa: S704 - every piece above is escaped for element content


def json_block(value: Any) -> Markup:
    """A JSON value pretty-printed (indent 2) and highlighted, for a ``<pre>``."""
    return _highlight(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def json_inline(value: Any) -> Markup:
    """A JSON value on one line, as the seeds print ``attempt {"number": 1}``."""
    return _highlight(json.dumps(value, ensure_ascii=False, default=str))


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
    """One stretch of a run's timeline: who the time went to, and how long."""

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
    """The declared tools of a model call: a table, or a reference to one."""

    tools: list[DeclaredTool]
    anchor: str
    #: The turn whose table this refers to, or None when the table is here.
    same_as: int | None


@dataclass(frozen=True)
class ExchangeView:
    """One wire exchange with the body it is drawn with."""

    exchange: Exchange
    body: Any
    elided: bool


@dataclass(frozen=True)
class NoteView:
    """A note, with lists the previous call's note already showed referred to."""

    label: str
    data: dict[str, Any]


@dataclass(frozen=True)
class ModelView:
    """A model call, prepared."""

    call: ModelCall
    anchor: str
    context: ContextView
    tools: ToolsView | None
    exchanges: list[ExchangeView]
    notes: list[NoteView]


@dataclass(frozen=True)
class ToolView:
    """A tool call, prepared."""

    run: ToolRun
    anchor: str


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
    turns: list[TurnView]
    timeline: list[TurnTime]
    totals: dict[str, float]


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
            return f"mock and live side by side · same tools asked in each of {turns} turns · same ending"
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
    call, label = turn.model_call, f"turn {turn.number}"
    segments = []
    if call.timing.outside_ms:
        segments.append(Segment("provider", call.timing.outside_ms, f"{label} · model provider"))
    segments.append(Segment("library", call.timing.library_ms, f"{label} · model call, library"))
    for run in turn.tools:
        for step in run.steps:
            if isinstance(step, Backoff):
                what = f"{label} · {run.name} backoff before attempt {step.before_attempt}"
                segments.append(Segment("waited", step.seconds * 1000, what))
            else:
                segments.append(
                    Segment(
                        "service",
                        step.timing.outside_ms or 0.0,
                        f"{label} · {run.name} attempt {step.number} at the service",
                    )
                )
        # A trace may know the tool's service time but not each attempt's (an
        # imported recording): the timeline still agrees with the tool's line.
        unattributed = (run.timing.outside_ms or 0.0) - sum(a.timing.outside_ms or 0.0 for a in run.attempts)
        if unattributed >= 0.05:
            segments.append(Segment("service", unattributed, f"{label} · {run.name} at the service"))
        segments.append(Segment("library", run.timing.library_ms, f"{label} · {run.name}, library"))
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


def _elide(body: Any, previous: Any, turn: int) -> tuple[Any, bool]:
    """A request body with what the previous request already carried referred to."""
    if not (isinstance(body, dict) and isinstance(previous, dict)):
        return body, False
    out, elided = dict(body), False
    messages, before = body.get("messages"), previous.get("messages")
    if isinstance(messages, list) and isinstance(before, list) and before and messages[: len(before)] == before:
        out["messages"] = [
            f"... [0]-[{len(before) - 1}]: the {len(before)} messages of turn {turn}'s request",
            *messages[len(before) :],
        ]
        elided = True
    tools = body.get("tools")
    if isinstance(tools, list) and tools and tools == previous.get("tools"):
        out["tools"] = f"... the same {len(tools)} tools as turn {turn}'s request"
        elided = True
    return out, elided


def _notes(call: ModelCall, previous: ModelCall | None, turn: int | None) -> list[NoteView]:
    # A mock's "context ignored" note lists every role sent: the part the
    # previous call's note listed is referred to, or the page would grow
    # with turns squared.
    before = {note.label: note.data for note in previous.notes} if previous else {}
    views = []
    for note in call.notes:
        data = dict(note.data)
        earlier = before.get(note.label, {})
        for key, value in note.data.items():
            old = earlier.get(key)
            if isinstance(value, list) and isinstance(old, list) and len(old) > 1 and value[: len(old)] == old:
                data[key] = [f"... the {len(old)} of turn {turn}", *value[len(old) :]]
        views.append(NoteView(note.label, data))
    return views


def _run_view(run: ScenarioRun, chapter: str, anchors: Anchors) -> RunView:
    anchor = anchors.make(chapter, run.name, run.mode)
    turns: list[TurnView] = []
    timeline: list[TurnTime] = []
    shown_tools: tuple[list[DeclaredTool], str, int] | None = None  # tools, anchor, turn drawn in
    last_body: tuple[Any, int] | None = None
    for turn in run.turns:
        turn_anchor = anchors.make(anchor, "turn", turn.number)
        call = turn.model_call
        tools: ToolsView | None = None
        if call.tools:
            if shown_tools is not None and call.tools == shown_tools[0]:
                tools = ToolsView(call.tools, shown_tools[1], shown_tools[2])
            else:
                tools = ToolsView(call.tools, anchors.make(turn_anchor, "tools"), None)
                shown_tools = (call.tools, tools.anchor, turn.number)
        exchanges = []
        for exchange in call.exchanges:
            body, elided = exchange.request.json_body, False
            if last_body is not None:
                body, elided = _elide(body, last_body[0], last_body[1])
            exchanges.append(ExchangeView(exchange, body, elided))
        if call.exchanges:
            last_body = (call.exchanges[-1].request.json_body, turn.number)
        model = ModelView(
            call=call,
            anchor=anchors.make(turn_anchor, "model"),
            context=_context(call, turns[-1] if turns else None, run),
            tools=tools,
            exchanges=exchanges,
            notes=_notes(call, turns[-1].turn.model_call if turns else None, turns[-1].turn.number if turns else None),
        )
        turns.append(
            TurnView(
                turn=turn,
                anchor=turn_anchor,
                model=model,
                tools=[ToolView(t, anchors.make(turn_anchor, "tool", i)) for i, t in enumerate(turn.tools, 1)],
            )
        )
        timeline.append(TurnTime(turn.number, turn_anchor, turn.timing.total_ms, _segments(turn)))
    return RunView(
        run=run,
        mode=run.mode,
        anchor=anchor,
        transcript_anchor=anchors.make(anchor, "transcript"),
        turns=turns,
        timeline=timeline,
        totals=_totals(timeline),
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
        differences.append(f"{len(mock.turns)} turns (mock) but {len(live.turns)} (live)")
    ended = mock.ending.reason != live.ending.reason
    if ended:
        differences.append(f"ended {mock.ending.label} (mock) but {live.ending.label} (live)")
    rows.append(
        CompareRow(
            label="ended",
            mock=summary.ending_line(mock.ending),
            mock_anchor=f"{mock_view.anchor}-ended",
            live=summary.ending_line(live.ending),
            live_anchor=f"{live_view.anchor}-ended",
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
        mock_view = _run_view(mock, traces.chapter, anchors) if mock else None
        live_view = _run_view(live, traces.chapter, anchors) if live else None
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
            compare_anchor=f"{anchor}-compare",
        )


# -- the renderer ------------------------------------------------------------


def _exchange_json(run: ToolRun, step: Attempt) -> dict[str, Any]:
    data: dict[str, Any] = {"number": step.number}
    if step.failure is not None:
        data.update(step.failure.model_dump())
    return data


def _grow(ms: float) -> int:
    # flex-grow in microseconds, at least 1: factors summing below 1 would
    # leave part of the bar empty.
    return max(1, round(ms * 1000))


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
    traces: ChapterTraces, scenario: str | None = None, *, anchors: Anchors | None = None, head: bool = True
) -> str:
    """The HTML of a chapter's traces, or of one scenario's.

    Raises ``NotFound`` (naming the scenarios there are) for an unknown
    scenario; ``anchors`` keeps ids unique across several traces on a page;
    ``head=False`` leaves out the chapter's switch, totals, live status and
    download link, for a page's second marker of the same chapter.
    """
    anchors = anchors if anchors is not None else Anchors()
    anchor = anchors.make(traces.chapter, *([scenario] if scenario else []), "traces")
    scenarios = list(_scenarios(traces, scenario, anchors))
    status: LiveStatus = traces.live_status
    html = (
        _environment()
        .get_template("chapter.html.j2")
        .render(
            traces=traces,
            anchor=anchor,
            scenarios=scenarios,
            status=status,
            download_url=_safe_url(traces.download_url),
            head=head,
        )
    )
    return _clean(html)


def render_error(message: str, *, marker: str | None = None) -> str:
    """A visible, escaped error block in place of a trace that could not be shown."""
    html = _environment().get_template("error.html.j2").render(message=message, marker=marker)
    return _clean(html)
