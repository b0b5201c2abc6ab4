"""The views the templates draw: a chapter's runs, prepared (``primer.book._render_prepare``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from primer.book._render_timeline import TurnTime
from primer.trace import (
    Attempt,
    Backoff,
    DeclaredTool,
    Exchange,
    Message,
    ModelCall,
    ScenarioRun,
    ToolRun,
    Turn,
)

Mode = Literal["mock", "live"]


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
        return f"trial {self.number} of {self.total} · {verdict} · {len(self.turns)} turn{'s' * (len(self.turns) != 1)}"


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
    #: Its turns grouped by trial, when it is a repeated run whose every turn belongs to one.
    trials: list[TrialView]


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
