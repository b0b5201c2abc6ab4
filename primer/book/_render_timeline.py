"""A run's timeline: each turn's time, split by who spent it.

``segments`` splits a turn into stretches of the model provider (or, in a
mock run, the mock model, whose simulated stream is its own time), the
service, opening a connection to either (a live trace's ``setup_ms``),
waiting on purpose (backoff) and the library's own code;
``totals`` adds a timeline up by kind, for its legend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from primer.trace import Backoff, Turn

__all__ = ["Segment", "TurnTime", "segments", "totals"]


@dataclass(frozen=True)
class Segment:
    """One stretch of a turn on a run's timeline: who the time went to, how long, and what it was."""

    kind: Literal["provider", "service", "setup", "waited", "library"]
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
        return [(kind, ms) for kind, ms in totals([self]).items() if ms]


def segments(turn: Turn) -> list[Segment]:
    """The stretches of a turn, in order, by who spent them (none of zero length)."""
    call = turn.model_call
    segments = []
    simulated = _simulated_ms(turn)
    if call.timing.outside_ms:
        # The connection is opened before the request goes: its set-up comes first.
        segments.append(Segment("setup", call.timing.setup_ms or 0.0, "model call, connection set-up"))
        segments.append(Segment("provider", call.timing.answering_ms or 0.0, "model provider"))
    elif simulated:
        # Time the mock model's stream took on the virtual clock is the model's, not the library's.
        segments.append(Segment("provider", simulated, "mock model, its stream simulated"))
    segments.append(Segment("library", call.timing.library_ms - simulated, "model call, library"))
    for run in turn.tools:
        for step in run.steps:
            if isinstance(step, Backoff):
                what = f"{run.name} backoff before attempt {step.before_attempt}"
                segments.append(Segment("waited", step.seconds * 1000, what))
            else:
                what = f"{run.name} attempt {step.number}"
                segments.append(Segment("setup", step.timing.setup_ms or 0.0, f"{what}, connection set-up"))
                segments.append(Segment("service", step.timing.answering_ms or 0.0, f"{what} at the service"))
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


def _simulated_ms(turn: Turn) -> float:
    """How long the mock model's simulated stream took: its last event's arrival (none for a live call)."""
    call = turn.model_call
    if call.kind != "mock" or call.stream is None or not call.stream.events:
        return 0.0
    return min(max(event.at_ms for event in call.stream.events), call.timing.library_ms)


def totals(timeline: Sequence[TurnTime]) -> dict[str, float]:
    """A timeline's time by kind, in the legend's order."""
    totals = {"provider": 0.0, "service": 0.0, "setup": 0.0, "waited": 0.0, "library": 0.0}
    for turn in timeline:
        for segment in turn.segments:
            totals[segment.kind] += segment.ms
    return totals
