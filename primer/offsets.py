"""When each part of a run began: start offsets, placed or derived.

Every timed record of a trace says when it began, in milliseconds since its
scenario began (``Timing.start_ms``, ``Backoff.start_ms``). The parts that
time themselves (the models, the wire recorder, the service client, the
agent) stamp their start as a reading of the run's clock; when the scenario
is over, the runner ``place``-s the run: every reading becomes an offset from
the scenario's own start. On a ``VirtualClock`` that is simulated time, so a
mock backoff of a second starts the next attempt a second later.

A record nobody stamped (a trace written before version 3 of the schema, or
a model written for a test that does not time itself) gets an offset from
the recorded order and durations instead, as a run has them: a turn starts
where the one before it ended, its model call at the turn's start, its first
tool where the model call ended, each next one where the one before ended;
a model call's exchanges and a tool's attempts one after the other from the
start of their parent, with the recorded backoffs between them::

    turn 1          0.0 ─────────────────────────────── 1772.4
      model call    0.0 ─────────── 1198.074
        exchange    0.0 ──── 970.025
      tool          1198.074 ──────────────────────── 1772.274
        attempt 1   1198.074 (0.0)
        backoff     1198.074 ── 1248.074 (0.05 s)
        attempt 2   1248.074 (0.0)

That is ``migrate``: the durations and the order stay exactly as recorded,
and a live run's moment of start follows from the chapter's
``recorded_at`` and the durations of the scenarios before it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from primer.trace import Attempt, Backoff, ChapterRun, ModelCall, ScenarioRun, Timing

__all__ = ["derive", "migrate", "model_waits", "place"]


def _at(timing: Timing, start: float) -> Timing:
    """The timing, starting at ``start`` unless it already says when it started."""
    if timing.start_ms is not None:
        return timing
    return timing.model_copy(update={"start_ms": round(start, 3)})


def _end(timing: Timing) -> float:
    return round((timing.start_ms or 0.0) + timing.total_ms, 3)


def _shifted(timing: Timing, origin_ms: float) -> Timing:
    if timing.start_ms is None:
        return timing
    return timing.model_copy(update={"start_ms": round(timing.start_ms - origin_ms, 3)})


def place(run: ScenarioRun, origin_ms: float) -> ScenarioRun:
    """Turn the clock readings a run was stamped with into offsets from its start, in place.

    ``origin_ms`` is the clock's reading when the scenario began, in
    milliseconds. What was not stamped is then ``derive``-d.
    """
    run.timing = run.timing.model_copy(update={"start_ms": 0.0})
    for turn in run.turns:
        turn.timing = _shifted(turn.timing, origin_ms)
        call = turn.model_call
        call.timing = _shifted(call.timing, origin_ms)
        for exchange in call.exchanges:
            exchange.timing = _shifted(exchange.timing, origin_ms)
        for tool in turn.tools:
            tool.timing = _shifted(tool.timing, origin_ms)
            for step in tool.steps:
                if isinstance(step, Attempt):
                    step.timing = _shifted(step.timing, origin_ms)
                elif step.start_ms is not None:
                    step.start_ms = round(step.start_ms - origin_ms, 3)
    return derive(run)


def derive(run: ScenarioRun) -> ScenarioRun:
    """Give every record that says nothing of its start one, from the recorded order and durations; in place."""
    run.timing = _at(run.timing, 0.0)
    cursor = run.timing.start_ms or 0.0
    for turn in run.turns:
        turn.timing = _at(turn.timing, cursor)
        call = turn.model_call
        call.timing = _at(call.timing, turn.timing.start_ms or 0.0)
        _derive_exchanges(call)
        after = _end(call.timing)
        for tool in turn.tools:
            tool.timing = _at(tool.timing, after)
            inner = tool.timing.start_ms or 0.0
            for step in tool.steps:
                if isinstance(step, Attempt):
                    step.timing = _at(step.timing, inner)
                    inner = _end(step.timing)
                else:
                    if step.start_ms is None:
                        step.start_ms = round(inner, 3)
                    inner = round(step.start_ms + step.seconds * 1000, 3)
            after = _end(tool.timing)
        cursor = _end(turn.timing)
    return run


def model_waits(call: ModelCall) -> dict[int, Backoff]:
    """A model call's waits between attempts, by the attempt they came before.

    A model call has no steps of its own: its waits are noted (``backoff``
    notes, as ``primer.models.live`` writes them).
    """
    waits = {}
    for note in call.notes:
        if note.label == "backoff":
            try:
                wait = Backoff.model_validate(note.data)
            except ValueError:
                continue  # a note of another shape says nothing about time
            waits[wait.before_attempt] = wait
    return waits


def _derive_exchanges(call: ModelCall) -> None:
    waits = model_waits(call)
    inner = call.timing.start_ms or 0.0
    attempt = None
    for exchange in call.exchanges:
        if attempt is not None and exchange.attempt != attempt and exchange.attempt in waits:
            inner = round(inner + waits[exchange.attempt].seconds * 1000, 3)
        attempt = exchange.attempt
        exchange.timing = _at(exchange.timing, inner)
        inner = _end(exchange.timing)


def migrate(run: ChapterRun) -> ChapterRun:
    """A run read from a file older than the start offsets, given them; in place.

    The offsets are ``derive``-d; a live run's scenarios, which ran one after
    the other, began at the chapter's ``recorded_at`` and then each where
    the one before it ended.
    """
    began = _moment(run.recorded_at) if run.mode == "live" else None
    for scenario in run.scenarios:
        derive(scenario)
        if began is not None:
            if scenario.started_at is None:
                scenario.started_at = began
            began = scenario.started_at + timedelta(milliseconds=scenario.timing.total_ms)
    return run


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None  # a date that cannot be read places nothing: the offsets stand alone
    return moment if moment.tzinfo is not None else None
