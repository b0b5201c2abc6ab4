"""Time where it was spent: a turn's time by who spent it, as the page's timeline and the terminal show it.

A mock run's provider is the mock model (a stream it simulates is its time, on the virtual clock), a live
one's is the model provider; opening a connection is its own part (``setup``), and so is waiting between
attempts. What is left of a call is the library's own code; in a live run recorded before set-up was timed
(``untimed``), the library's and the set-up's together, and so named (``UNTIMED``). In a run rebuilt from the
wire (a framework's, or the author's own loop), the time between the calls is that agent's code (``code``), and
so is the time before its first call (``before``: building the agent, a framework's first import among it).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, NamedTuple

from primer.trace import Backoff, Mode, ScenarioRun, Timing, Turn

__all__ = ["KINDS", "UNTIMED", "Segment", "before", "names", "not_timed", "segments", "spent_line", "totals", "untimed"]

Kind = Literal["provider", "service", "setup", "waited", "library", "code"]
#: The parties, in the legend's order.
KINDS: tuple[Kind, ...] = ("provider", "service", "setup", "waited", "library", "code")
#: The library's part of a live trip whose set-up was not timed: the connection's opening is in it.
UNTIMED = "library and set-up"


class Segment(NamedTuple):
    """A stretch of a turn's time: who it went to, how long."""

    kind: Kind
    ms: float


def names(mode: Mode, untimed: bool = False) -> dict[str, str]:
    """Each party as a reader reads it in a run of ``mode`` (``untimed``: its set-up is in the library's time)."""
    provider = "mock model" if mode == "mock" else "model provider"
    library = UNTIMED if untimed else "library"
    return dict(zip(KINDS, (provider, "service", "connection set-up", "waited", library, "agent code"), strict=True))


def not_timed(trip: Timing) -> bool:
    """Whether a trip over a wire has no set-up time: in a live run, one recorded before set-up was timed.

    A trip over a reused connection has a set-up of 0.0; a mock's trips have None too, so ask of live ones only.
    """
    return trip.outside_ms is not None and trip.setup_ms is None


def untimed(run: ScenarioRun) -> bool:
    """Whether a live run went over a wire without timing the connections' set-up (recorded before it was timed)."""
    trips = [timing for turn in run.turns for timing in (turn.model_call.timing, *(t.timing for t in turn.tools))]
    return run.mode == "live" and any(map(not_timed, trips))


def segments(turn: Turn) -> list[Segment]:
    """The stretches of a turn, in order, by who spent them (none of zero length)."""
    call, found, simulated = turn.model_call, [], 0.0
    if call.kind == "mock" and call.stream is not None and call.stream.events:
        # The mock model's simulated stream took time on the virtual clock: the model's, not the library's.
        simulated = min(max(event.at_ms for event in call.stream.events), call.timing.library_ms)
    if call.timing.outside_ms:  # the connection is opened before the request goes: its set-up comes first
        found += [Segment("setup", call.timing.setup_ms or 0.0), Segment("provider", call.timing.answering_ms or 0.0)]
    elif simulated:
        found.append(Segment("provider", simulated))
    found.append(Segment("library", call.timing.library_ms - simulated))
    for run in turn.tools:
        for step in run.steps:
            if isinstance(step, Backoff):
                found.append(Segment("waited", step.seconds * 1000))
            else:
                spent = step.timing
                found += [Segment("setup", spent.setup_ms or 0.0), Segment("service", spent.answering_ms or 0.0)]
        timing, sent = run.timing, [a for a in run.attempts if a.request is not None]
        if timing.outside_ms is None and sent and not any(a.response for a in sent):
            # A recording that did not split the tool's time, of a service that never answered:
            # the time went to waiting for the service, as the mock's virtual clock counts it.
            found.append(Segment("service", timing.library_ms))
            continue
        # A trace may know the tool's service time but not each attempt's (an imported recording).
        unattributed = (timing.outside_ms or 0.0) - sum(a.timing.outside_ms or 0.0 for a in run.attempts)
        if unattributed >= 0.05:
            found.append(Segment("service", unattributed))
        found.append(Segment("library", timing.library_ms))
    if turn.code_ms:  # after the tools: the code turning their results into the next request
        found.append(Segment("code", turn.code_ms))
    return [s for s in found if s.ms > 0]


def before(run: ScenarioRun) -> Segment | None:
    """The time before the run's first turn, if a millisecond or more: its agent's code, else the library's.

    primer's loop calls the model at once (microseconds); a framework's agent is built first, and the first run
    in a process imports the framework: a second and more that the turns alone would leave unaccounted for.
    """
    start = run.turns[0].timing.start_ms if run.turns else None
    if start is None or start < 1.0:
        return None
    return Segment("code" if any(turn.code_ms is not None for turn in run.turns) else "library", start)


def totals(spans: Iterable[Segment]) -> dict[str, float]:
    """Time by party, in the legend's order."""
    spent: dict[str, float] = dict.fromkeys(KINDS, 0.0)
    for segment in spans:
        spent[segment.kind] += segment.ms
    return spent


def spent_line(run: ScenarioRun) -> str | None:
    """``time: mock model 1150.0ms · library 0.4ms``: the run's time by party, as its timeline's legend says."""
    named = names(run.mode, untimed(run))
    spent = totals([*filter(None, [before(run)]), *(segment for turn in run.turns for segment in segments(turn))])
    parts = [f"{named[kind]} {ms:.1f}ms" for kind, ms in spent.items() if ms]
    return "time: " + " · ".join(parts) if parts else None  # None: no time recorded
