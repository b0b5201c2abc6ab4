"""A chapter's traces as the templates draw them: one view per scenario, run, turn and call.

Page weight grows with what happened, not with turns squared: each turn's
context shows the messages new since the turn before, a live request body
what is new (``Ref`` to the rest, ``Rebuild`` to put it back), and the
declared tools are drawn once per page and referred to after (``_Shared``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from primer import summary
from primer.book._render_text import Anchors
from primer.book._render_timeline import TurnTime, segments, totals
from primer.book._source import ChapterTraces
from primer.errors import NotFound
from primer.trace import DeclaredTool, Exchange, Message, ModelCall, ScenarioRun, Turn

__all__ = ["Comparison", "ScenarioView", "prepare"]


@dataclass(frozen=True)
class Ref:
    """Something a payload repeats from an earlier one (``messages [0]-[1]``, ``as sent in turn 1``): a pointer."""

    what: str
    where: str
    anchor: str


@dataclass(frozen=True)
class Rebuild:
    """How traces.js puts a request body back whole: the first ``messages`` and the ``same`` keys of ``base``'s."""

    base: str
    messages: int
    same: list[str]
    keys: list[str]


@dataclass(frozen=True)
class RequestView:
    """A model request's body as shown: what is new, what it refers to, how to rebuild it."""

    json: Any
    refs: list[Ref] = field(default_factory=list)
    rebuild: Rebuild | None = None


@dataclass(frozen=True)
class ContextView:
    """What a model call's context table shows: from ``start``, the messages new since turn ``since``."""

    total: int
    start: int
    messages: list[Message]
    since: int | None
    since_anchor: str | None
    in_transcript: bool  # False: the context is not a prefix of the transcript, so it is shown whole


@dataclass(frozen=True)
class ToolsView:
    """The declared tools of a model call: drawn here (``schema_anchors``), or ``same_as`` a list drawn before."""

    tools: list[DeclaredTool]
    anchor: str
    same_as: str | None
    schema_anchors: list[str]


@dataclass(frozen=True)
class NoteView:
    """A note; lists the previous call's note already showed are referred to, not repeated."""

    label: str
    data: dict[str, Any]
    refs: list[Ref]


@dataclass(frozen=True)
class TurnView:
    """A turn and its model call, prepared (its tool calls' ids are its own and ``-tool-1``, ``-tool-2``...)."""

    turn: Turn
    anchor: str
    model_anchor: str
    context: ContextView
    tools: ToolsView | None
    exchanges: list[tuple[Exchange, RequestView]]
    notes: list[NoteView]

    @property
    def call(self) -> ModelCall:
        """The turn's model call."""
        return self.turn.model_call


@dataclass(frozen=True)
class TrialView:
    """The turns of one trial of a repeated run (chapter 16), and its verdict."""

    number: int
    total: int
    passed: bool
    why: str | None
    anchor: str
    turns: list[TurnView]

    @property
    def line(self) -> str:
        """``trial 2 of 5 · failed: price_of was not called · 1 turn``."""
        verdict = "passed" if self.passed else "failed" + (f": {self.why}" if self.why else "")
        return f"trial {self.number} of {self.total} · {verdict} · {summary.count(len(self.turns), 'turn')}"


@dataclass(frozen=True)
class RunView:
    """One scenario's run in one mode: its turns (by trial, for a repeated run), timeline and story."""

    run: ScenarioRun
    mode: Literal["mock", "live"]
    anchor: str
    transcript_anchor: str
    ended_anchor: str
    error_anchor: str
    turns: list[TurnView]
    timeline: list[TurnTime]
    totals: dict[str, float]
    story: str
    trials: list[TrialView]


@dataclass(frozen=True)
class CompareRow:
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


# -- what is new since the turn before ---------------------------------------------


def _span(count: int) -> str:
    return "[0]" if count == 1 else f"[0]\N{EN DASH}[{count - 1}]"


def _context(call: ModelCall, previous: TurnView | None, run: ScenarioRun) -> ContextView:
    context = call.context
    in_transcript = context == run.transcript[: len(context)]
    start, since, since_anchor = 0, None, None
    if previous is not None and in_transcript:
        before = previous.turn.model_call.context
        if len(before) <= len(context) and context[: len(before)] == before:
            start, since, since_anchor = len(before), previous.turn.number, previous.model_anchor
    return ContextView(len(context), start, context[start:], since, since_anchor, in_transcript)


def _request(body: Any, previous: tuple[Any, int, str] | None) -> RequestView:
    """A model request body with what the previous request (body, turn, anchor) carried taken out and referred to."""
    if previous is None or not (isinstance(body, dict) and isinstance(previous[0], dict)):
        return RequestView(body)
    before, turn, base = previous
    shown, refs, taken, same = dict(body), [], 0, []
    messages, sent = body.get("messages"), before.get("messages")
    if isinstance(messages, list) and isinstance(sent, list) and sent and messages[: len(sent)] == sent:
        shown["messages"], taken = messages[len(sent) :], len(sent)
        refs.append(Ref(f"messages {_span(taken)}", f"as sent in turn {turn}", base))
    tools = body.get("tools")
    if isinstance(tools, list) and tools and tools == before.get("tools"):
        del shown["tools"]
        same.append("tools")
        refs.append(Ref(f"tools ({len(tools)})", f"as sent in turn {turn}", base))
    return RequestView(shown, refs, Rebuild(base, taken, same, list(body))) if refs else RequestView(body)


def _notes(call: ModelCall, previous: TurnView | None) -> list[NoteView]:
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
                refs.append(Ref(f"{key} {_span(len(old))}", where, previous.model_anchor))
        views.append(NoteView(note.label, data, refs))
    return views


@dataclass
class _Shared:
    """The declared tools, drawn once a page: by the first run to declare them, under an id with their digest.

    Later runs refer to the drawing; the page's ``Anchors`` remember every id, so
    a trace taken from the HTML cache is referred to exactly as one rendered afresh.
    """

    chapter: str
    scenario: str
    anchors: Anchors
    here: list[tuple[list[DeclaredTool], str, str, int]] = field(default_factory=list)  # tools, anchor, mode, turn

    @staticmethod
    def _key(tools: list[DeclaredTool]) -> str:
        data = json.dumps([tool.model_dump() for tool in tools], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(data.encode()).hexdigest()[:10]

    def view(self, tools: list[DeclaredTool], mode: str, turn: int) -> ToolsView:
        """The tools as drawn here, or as a reference to where they were drawn before."""
        for drawn, anchor, drawn_mode, drawn_turn in self.here:
            if drawn == tools:
                where = f"turn {drawn_turn}" if drawn_mode == mode else f"the {drawn_mode} run, turn {drawn_turn}"
                return ToolsView(tools, anchor, where, [])
        prefix, suffix = f"{self.chapter}-", f"-tools-{self._key(tools)}"
        for anchor in sorted(self.anchors.used):
            if anchor.startswith(prefix) and anchor.endswith(suffix):
                return ToolsView(tools, anchor, f"scenario {anchor[len(prefix) : -len(suffix)]}", [])
        anchor = self.anchors.make(self.chapter, self.scenario, "tools", self._key(tools))
        self.here.append((tools, anchor, mode, turn))
        return ToolsView(tools, anchor, None, [self.anchors.make(anchor, index) for index in range(1, len(tools) + 1)])


# -- preparing ------------------------------------------------------------------------


def _run(run: ScenarioRun, chapter: str, anchors: Anchors, shared: _Shared) -> RunView:
    anchor = anchors.make(chapter, run.name, run.mode)
    turns: list[TurnView] = []
    previous: tuple[Any, int, str] | None = None  # the last request body so far, its turn and model call's anchor
    for turn in run.turns:
        turn_anchor = anchors.make(anchor, "turn", turn.number)
        model_anchor, call = anchors.make(turn_anchor, "model"), turn.model_call
        exchanges = []
        for x in call.exchanges:
            exchanges.append((x, _request(x.request.json_body, previous)))
        if call.exchanges:
            previous = (call.exchanges[-1].request.json_body, turn.number, model_anchor)
        before = turns[-1] if turns else None
        tools = shared.view(call.tools, run.mode, turn.number) if call.tools else None
        turns.append(
            TurnView(
                turn, turn_anchor, model_anchor, _context(call, before, run), tools, exchanges, _notes(call, before)
            )
        )
    timeline = [TurnTime(t.turn.number, t.anchor, t.turn.timing.total_ms, segments(t.turn)) for t in turns]
    transcript, ended, error = (anchors.make(anchor, what) for what in ("transcript", "ended", "error"))
    story, trials = summary.scenario_story(run), _trials(turns, anchor, anchors)
    return RunView(run, run.mode, anchor, transcript, ended, error, turns, timeline, totals(timeline), story, trials)


_TRIAL = re.compile(r"trial (\d+) of (\d+)")  # a repeated run notes each trial's verdict on its last model call


def _trials(turns: list[TurnView], anchor: str, anchors: Anchors) -> list[TrialView]:
    """The turns grouped by the trial each ends or belongs to; none unless every turn is in one."""
    groups: list[TrialView] = []
    start = 0
    for index, turn in enumerate(turns):
        for note in turn.turn.model_call.notes:
            found = _TRIAL.fullmatch(note.label)
            if found and isinstance(passed := note.data.get("passed"), bool):
                why = note.data.get("why") if isinstance(note.data.get("why"), str) else None
                trial = anchors.make(anchor, "trial", found[1])
                groups.append(TrialView(int(found[1]), int(found[2]), passed, why, trial, turns[start : index + 1]))
                start = index + 1
                break
    return groups if groups and start == len(turns) else []


def _asked(turn: Turn) -> list[str]:
    reply = turn.model_call.reply
    return [c.name for c in reply.tool_calls] if reply else []


def _compare(mock: RunView, live: RunView, said: Callable[[str], str]) -> Comparison:
    """Two runs of one scenario aligned turn by turn, and where they diverge."""
    rows, differences = [], []
    left_turns, right_turns = mock.run.turns, live.run.turns
    for index in range(max(len(left_turns), len(right_turns))):
        left = left_turns[index] if index < len(left_turns) else None
        right = right_turns[index] if index < len(right_turns) else None
        diverges = left is None or right is None or _asked(left) != _asked(right)
        if diverges and left is not None and right is not None:
            was, got = ", ".join(_asked(left)) or "no tool", ", ".join(_asked(right)) or "no tool"
            differences.append(f"turn {index + 1} asked for {was} (mock) but {got} (live)")
        rows.append(
            CompareRow(
                f"turn {index + 1}",
                summary.turn_line(left, said) if left else None,
                mock.turns[index].anchor if left else None,
                summary.turn_line(right, said) if right else None,
                live.turns[index].anchor if right else None,
                diverges,
            )
        )
    if len(left_turns) != len(right_turns):
        differences.append(f"{summary.count(len(left_turns), 'turn')} (mock) but {len(right_turns)} (live)")
    first, then = mock.run.ending, live.run.ending
    if first.reason != then.reason:
        differences.append(f"ended {first.label} (mock) but {then.label} (live)")
    ending = (summary.ending_line(first), mock.ended_anchor, summary.ending_line(then), live.ended_anchor)
    rows.append(CompareRow("ended", *ending, first.reason != then.reason))
    return Comparison(rows, differences)


def prepare(
    traces: ChapterTraces, only: str | None, anchors: Anchors, said: Callable[[str], str]
) -> list[ScenarioView]:
    """Each scenario of the chapter (or ``only`` that one), prepared; ``NotFound`` names the ones there are.

    ``said`` words a reply in a folded line, as the page shows it.
    """
    runs = {
        (s.name, mode): s
        for mode, run in (("mock", traces.mock), ("live", traces.live))
        for s in (run.scenarios if run else [])
    }
    names = list(dict.fromkeys(name for name, _ in runs))
    if only is not None:
        if only not in names:
            there = ", ".join(names) or "none"
            raise NotFound(f"Chapter {traces.chapter} has no scenario {only!r}. Its scenarios are: {there}.")
        names = [only]
    views = []
    for name in names:
        shared = _Shared(traces.chapter, name, anchors)
        anchor = anchors.make(traces.chapter, name)
        mock, live = runs.get((name, "mock")), runs.get((name, "live"))
        mock_view = _run(mock, traces.chapter, anchors, shared) if mock else None
        live_view = _run(live, traces.chapter, anchors, shared) if live else None
        missing = None
        if live is None:
            reason = traces.live_status.reason or "none was recorded"
            missing = (
                f"no live run: {reason}"
                if traces.live is None
                else (f"no live run of this scenario: the recorded live trace of {traces.chapter} does not hold it")
            )
        comparison = _compare(mock_view, live_view, said) if mock_view and live_view else None
        either = mock or live
        title = either.title if either else None
        views.append(
            ScenarioView(
                name, anchor, title, mock_view, live_view, missing, comparison, anchors.make(anchor, "compare")
            )
        )
    return views
