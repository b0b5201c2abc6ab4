"""What every export reads off a run: when each scenario began, and who the model was.

A live scenario keeps the moment it began (``ScenarioRun.started_at``); a
mock one has none (it is the same whenever it runs), so an export places the
mock scenarios of a chapter one after the other from a moment it is given
(the time of the export, unless told otherwise). A live run can be moved to
a moment too (``at``): a viewer that shows the last few days by default
would hide a run recorded months ago. Its scenarios keep their places
relative to the first, and each its recording moment (``Placed.recorded``).
Offsets a run lacks (a run made by hand) are derived on a copy, never on
the caller's run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from primer.offsets import derive
from primer.trace import Attempt, ChapterRun, ModelCall, ScenarioRun

#: What the mock model is, for tools that want a provider's name.
MOCK_PROVIDER = "primer.mock"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Placed:
    """A scenario's run, with every offset known and the moment it began."""

    chapter: ChapterRun
    run: ScenarioRun
    began: datetime
    #: When a live scenario was recorded (its ``started_at``); None for a mock one.
    recorded: datetime | None = None

    def moment(self, offset_ms: float | None) -> datetime:
        """The moment an offset of this scenario stands for."""
        return self.began + timedelta(milliseconds=offset_ms or 0.0)

    def nanoseconds(self, offset_ms: float | None) -> int:
        """The moment an offset stands for, in nanoseconds since the Unix epoch (OTLP's time)."""
        return unix_nanoseconds(self.began) + round((offset_ms or 0.0) * 1_000_000)


def unix_nanoseconds(moment: datetime) -> int:
    """A moment in nanoseconds since the Unix epoch, exactly (a float of seconds would round it)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def placed(
    runs: tuple[ChapterRun | None, ...], start: datetime | None = None, *, at: datetime | None = None
) -> Iterator[Placed]:
    """Every scenario of the runs, placed in time.

    A scenario with no ``started_at`` (a mock one) begins at ``at`` or
    ``start`` (now, unless given) or where the previous such scenario of its
    run ended. With ``at``, a live run is moved so that its first scenario
    begins then, the others as far after it as they were recorded.
    """
    origin = at or start or datetime.now(UTC)
    if origin.tzinfo is None:
        raise ValueError(f"The start of an export must say its time zone: {origin.isoformat()} does not.")
    for chapter in runs:
        if chapter is None:
            continue
        recorded = [run.started_at for run in chapter.scenarios if run.started_at is not None]
        moved = at - min(recorded) if at is not None and recorded else timedelta(0)
        cursor = origin
        for run in chapter.scenarios:
            complete = run if _complete(run) else derive(run.model_copy(deep=True))
            if complete.started_at is not None:
                yield Placed(chapter, complete, complete.started_at + moved, complete.started_at)
                continue
            yield Placed(chapter, complete, cursor)
            cursor += timedelta(milliseconds=complete.timing.total_ms)


def _complete(run: ScenarioRun) -> bool:
    """Whether every timed part of the run says when it began."""
    if run.timing.start_ms is None:
        return False
    for turn in run.turns:
        call = turn.model_call
        timings = [turn.timing, call.timing, *(exchange.timing for exchange in call.exchanges)]
        for tool in turn.tools:
            timings.append(tool.timing)
            timings += [step.timing for step in tool.steps if isinstance(step, Attempt)]
            if any(not isinstance(step, Attempt) and step.start_ms is None for step in tool.steps):
                return False
        if any(timing.start_ms is None for timing in timings):
            return False
    return True


def provider_name(call: ModelCall) -> str:
    """Who the model's provider is, as OpenTelemetry names providers (``deepseek``, ``openai``).

    Read from the address the requests went to; an endpoint of no known
    provider is named for the API it speaks, ``openai``.
    """
    if call.kind == "mock":
        return MOCK_PROVIDER
    host = server(call)[0] or ""
    labels = host.lower().split(".")
    for name in _KNOWN_PROVIDERS:
        if name.split("_")[0] in labels:
            return name
    return "openai"


#: Providers named by one word of their API's host (``api.deepseek.com``).
_KNOWN_PROVIDERS = ("openai", "anthropic", "cohere", "perplexity", "x_ai", "deepseek", "groq", "mistral_ai")


def server(call: ModelCall) -> tuple[str | None, int | None]:
    """The host and port a live model call's first request went to; ``(None, None)`` for a mock one."""
    if not call.exchanges:
        return None, None
    return address(call.exchanges[0].request.url)


def address(url: str) -> tuple[str | None, int | None]:
    """A URL's host and port (the scheme's default port when none is written)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.hostname, port
