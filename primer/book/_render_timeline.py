"""A run's timeline: each turn's time, split by who spent it (``segments``), added up by kind (``totals``).

The kinds: the model provider (in a mock run, the mock model, whose simulated
stream is its own time), the service, connection set-up (a live trace's
``setup_ms``), waiting on purpose (backoff) and the library's own code.
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
    call, found = turn.model_call, []
    simulated = 0.0
    if call.kind == "mock" and call.stream is not None and call.stream.events:
        # The mock model's simulated stream took time on the virtual clock: the model's, not the library's.
        simulated = min(max(event.at_ms for event in call.stream.events), call.timing.library_ms)
    if call.timing.outside_ms:  # the connection is opened before the request goes: its set-up comes first
        found.append(Segment("setup", call.timing.setup_ms or 0.0, "model call, connection set-up"))
        found.append(Segment("provider", call.timing.answering_ms or 0.0, "model provider"))
    elif simulated:
        found.append(Segment("provider", simulated, "mock model, its stream simulated"))
    found.append(Segment("library", call.timing.library_ms - simulated, "model call, library"))
    for run in turn.tools:
        for step in run.steps:
            if isinstance(step, Backoff):
                found.append(
                    Segment("waited", step.seconds * 1000, f"{run.name} backoff before attempt {step.before_attempt}")
                )
            else:
                what = f"{run.name} attempt {step.number}"
                found.append(Segment("setup", step.timing.setup_ms or 0.0, f"{what}, connection set-up"))
                found.append(Segment("service", step.timing.answering_ms or 0.0, f"{what} at the service"))
        timing, sent = run.timing, [a for a in run.attempts if a.request is not None]
        if timing.outside_ms is None and sent and not any(a.response for a in sent):
            # A recording that did not split the tool's time, of a service that never answered:
            # the time went to waiting for the service, as the mock's virtual clock counts it.
            found.append(Segment("service", timing.library_ms, f"{run.name} waiting for the service, no answer"))
            continue
        # A trace may know the tool's service time but not each attempt's (an imported recording).
        unattributed = (timing.outside_ms or 0.0) - sum(a.timing.outside_ms or 0.0 for a in run.attempts)
        if unattributed >= 0.05:
            found.append(Segment("service", unattributed, f"{run.name} at the service"))
        found.append(Segment("library", timing.library_ms, f"{run.name}, library"))
    return [s for s in found if s.ms > 0]


def totals(timeline: Sequence[TurnTime]) -> dict[str, float]:
    """A timeline's time by kind, in the legend's order."""
    spent = {"provider": 0.0, "service": 0.0, "setup": 0.0, "waited": 0.0, "library": 0.0}
    for turn in timeline:
        for segment in turn.segments:
            spent[segment.kind] += segment.ms
    return spent
