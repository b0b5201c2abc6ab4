"""Verify a frozen live trace by replaying its own recording.

A live trace holds every request the code sent and every answer the provider
and the service gave. When the code changes, the trace need not be recorded
again (a key, money, minutes) to know whether it still tells the truth: run
each scenario with the code as it is now, in live mode, and answer every
request from the recording instead of the network. The ``openai`` SDK, the
service client, request building, redaction and response parsing all run
for real; only the transports under the recorders are stand-ins::

    check = verify_chapter(frozen, scenarios_of("ch09_who_retries"))
    for scenario in check.scenarios:
        print(scenario.line())   # "service_is_busy: verified (4 requests)"

Each request the code sends now is recorded the way a live run records it
(``primer.http_record``, so the same redaction) and compared with the next
one of the recording, in order: method, origin, path, query, JSON body (keys
in any order) and the headers that carry meaning. Headers that change from
run to run or machine to machine without changing what is asked (request
ids, dates, SDK version strings such as ``x-stainless-*``, retry counters,
``user-agent``, ``content-length``) are left out: ``VOLATILE_HEADERS``.

A run that sends the same requests must also show the same: when it ends,
every field the trace shows (each reply, tool result, message sent back,
the transcript and the ending; not timings, dates or headers) is compared
with what the replay made of the recorded responses, so a frozen trace
edited by hand (its reply, say, while its recorded response still says
otherwise) does not verify: ``shown`` names the field.

The replay redacts with the secrets the recording did: the environment's
``PRIMER_API_KEY`` and ``PRIMER_SERVICE_KEY`` when set (a tool that returns
one was recorded as ``[secret]``, and is replayed so), and every divergence
is redacted before it is reported.

The first request that differs ends the replay: its scenario, turn, which
request and a small diff of the field (``body messages[0].content``) are the
``Divergence``. So is a request past the end of the recording (the code now
makes more calls), a recorded request the code no longer makes, and a run
that now ends otherwise. A recorded answer that never came (the service
timing out) is replayed as the same transport error; backoffs wait on a
``VirtualClock``, so a replay takes milliseconds and never touches the
network. A recording that cannot be replayed (an exchange with neither an
answer nor a known failure) raises ``IncompleteRecording``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

import httpx
import httpx2
from pydantic import BaseModel, ConfigDict

from primer.clock import VirtualClock
from primer.code_scenario import CodeScenario
from primer.errors import PrimerError
from primer.http_record import record_request
from primer.redact import Redactor
from primer.runner import live_environment, run_scenario
from primer.scenario import Scenario
from primer.seam import PROVIDER, Answer, Answerer, Plain
from primer.settings import DEFAULT_SERVICE_KEY, Settings
from primer.streaming import sse_text
from primer.trace import (
    Attempt,
    Backoff,
    ChapterRun,
    ErrorInfo,
    Failure,
    ScenarioRun,
    Stream,
    StreamEvent,
    Timing,
    Turn,
    WireRequest,
    WireResponse,
)
from primer.trace_file import UnreadableTrace, read_trace  # where tests and scripts have read traces

__all__ = [
    "VOLATILE_HEADERS",
    "ChapterCheck",
    "Divergence",
    "IncompleteRecording",
    "ScenarioCheck",
    "UnreadableTrace",
    "first_difference",
    "read_trace",
    "replay_settings",
    "request_difference",
    "shown_difference",
    "verify_chapter",
    "verify_scenario",
]

#: Request headers that differ between two runs of the same code, or two
#: machines, without changing what is asked: not compared.
VOLATILE_HEADERS = frozenset(
    {
        "accept-encoding",  # which decoders happen to be installed (brotli, zstd)
        "connection",
        "content-length",  # the body is compared itself
        "date",
        "idempotency-key",
        "traceparent",
        "user-agent",
        "x-request-id",
    }
)
#: Header prefixes left out likewise: the SDK's platform and version report,
#: its retry counter and its timeout.
VOLATILE_PREFIXES = ("x-stainless-",)

#: Recorded response headers that describe the bytes as they came over the
#: wire; the replayed body is the decoded one, so they would lie about it.
_NOT_REPLAYED = frozenset({"content-encoding", "content-length", "transfer-encoding", "set-cookie"})

#: Stand-in credentials for a replay when the environment sets none: the
#: recorded ones were never kept, and whatever the code sends is recorded as
#: ``not recorded`` or ``[secret]`` all the same.
REPLAY_API_KEY = "replay-provider-key"
REPLAY_SERVICE_KEY = DEFAULT_SERVICE_KEY  # what a live run sends when PRIMER_SERVICE_KEY is unset

#: Fields of the trace that differ from run to run of the same code on the
#: same responses, and are not what the trace shows to be checked: when and
#: how long (timings are the provider's, a replay's clock is virtual), the
#: headers (request ids, dates, SDK versions; those that carry meaning are
#: compared as requests), and a traceback's file and line numbers.
_NOT_SHOWN: dict[type[BaseModel], frozenset[str]] = {
    ScenarioRun: frozenset({"started_at", "simulated_seconds"}),
    WireRequest: frozenset({"headers"}),
    WireResponse: frozenset({"headers"}),
    Stream: frozenset({"first_byte_ms"}),
    StreamEvent: frozenset({"at_ms"}),
    Backoff: frozenset({"start_ms"}),
    Turn: frozenset({"code_ms"}),
    ErrorInfo: frozenset({"traceback"}),
}

#: How long a value in a diff may be before it is cut around the change.
_SHOWN = 80

Kind = Literal["request", "ran_out", "left_over", "ending", "shown", "unrecorded", "not_in_code"]


class IncompleteRecording(PrimerError):
    """A live trace that cannot be replayed: the recording lacks what a replay needs."""


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Divergence(_Result):
    """Where a replay first parted from the recording."""

    scenario: str
    kind: Kind
    #: The recorded turn the divergence is in (or after, for ``ran_out``).
    turn: int | None = None
    #: Which request: ``model request, attempt 1`` or ``tool price_of, attempt 2``.
    request: str | None = None
    #: The field that differs: ``method``, ``path``, ``query item``,
    #: ``header x-name``, ``body messages[0].content``, ``text body``; for
    #: ``shown``, where in the scenario's trace: ``turns[1].model_call.reply.content``.
    field: str | None = None
    recorded: str | None = None
    now: str | None = None

    def line(self) -> str:  # noqa: PLR0911 - one sentence for each kind
        """One sentence: where, what, and the two values."""
        where = self.scenario + (f", turn {self.turn}" if self.turn else "")
        if self.kind == "request":
            return f"{where}, {self.request}: {self.field} was {self.recorded}, and is now {self.now}"
        if self.kind == "ran_out":
            return (
                f"{self.scenario}: the recording ran out after turn {self.turn or 0}: the code now sends "
                f"{self.now}, and the recording holds no more requests"
            )
        if self.kind == "left_over":
            return f"{where}: the code no longer sends the recorded {self.request} ({self.recorded})"
        if self.kind == "ending":
            return f"{self.scenario}: the run now ends {self.now}; the recording ended {self.recorded}"
        if self.kind == "shown":
            return (
                f"{where}: the trace shows {self.field} as {self.recorded}, but its recorded responses "
                f"replayed give {self.now}"
            )
        if self.kind == "unrecorded":
            return f"{self.scenario}: the live trace holds no run of this scenario"
        return f"{self.scenario}: the live trace holds this scenario, which the chapter no longer declares"


class ScenarioCheck(_Result):
    """One scenario's replay: verified, or where it diverged."""

    scenario: str
    #: Requests answered from the recording.
    requests: int = 0
    divergence: Divergence | None = None

    @property
    def verified(self) -> bool:
        """Whether every request matched the recording."""
        return self.divergence is None

    def line(self) -> str:
        """``NAME: verified (N requests)`` or ``NAME: diverged: ...``."""
        if self.divergence is None:
            return f"{self.scenario}: verified by replay ({self.requests} request{'s' * (self.requests != 1)})"
        return f"{self.scenario}: diverged: {self.divergence.line()}"


class ChapterCheck(_Result):
    """A chapter's replay, scenario by scenario."""

    chapter: str
    scenarios: list[ScenarioCheck]

    @property
    def verified(self) -> bool:
        """Whether every scenario was verified."""
        return all(check.verified for check in self.scenarios)

    @property
    def divergence(self) -> Divergence | None:
        """The first divergence, in the chapter's order, if any."""
        return next((c.divergence for c in self.scenarios if c.divergence is not None), None)


# -- comparing two requests ------------------------------------------------------


def _path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def first_difference(recorded: Any, now: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ: ``(path, recorded, now)``, or None.

    Objects are compared key by key in any order, arrays item by item; a
    value of another JSON type differs even where Python would call it
    equal (``1`` and ``1.0``, ``1`` and ``true``). A missing key or item is
    ``...`` on its side.

    >>> first_difference({"messages": [{"content": "a"}]}, {"messages": [{"content": "b"}]})
    ('messages[0].content', 'a', 'b')
    """
    if isinstance(recorded, dict) and isinstance(now, dict):
        keys: list[str | int] = [*recorded, *(k for k in now if k not in recorded)]
    elif isinstance(recorded, list) and isinstance(now, list):
        keys = list(range(max(len(recorded), len(now))))
    else:
        same = type(recorded) is type(now) and recorded == now
        return None if same else (path, recorded, now)
    for key in keys:
        old, new = _item(recorded, key), _item(now, key)
        found = (
            (_path(path, key), old, new) if old is ... or new is ... else first_difference(old, new, _path(path, key))
        )
        if found is not None:
            return found
    return None


def _item(container: Any, key: str | int) -> Any:
    if isinstance(container, dict):
        return container.get(key, ...)
    return container[key] if isinstance(key, int) and key < len(container) else ...


def _meaningful(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted(
        (name.lower(), value)
        for name, value in headers
        if name.lower() not in VOLATILE_HEADERS and not name.lower().startswith(VOLATILE_PREFIXES)
    )


def request_difference(recorded: WireRequest, now: WireRequest) -> tuple[str, Any, Any] | None:
    """The first meaningful difference between a recorded request and one sent now.

    ``(field, recorded, now)``: ``method``, ``origin``, ``path``, ``query``,
    ``header NAME``, ``body PATH`` or ``text body``; None when they ask the same.
    Both must have been recorded (redacted) the same way.
    """
    old_url, new_url = urlsplit(recorded.url), urlsplit(now.url)
    old_headers, new_headers = dict(_meaningful(recorded.headers)), dict(_meaningful(now.headers))
    # In the order a reader checks a request: what and where, then how, then the body.
    checks: list[tuple[str, Any, Any]] = [
        ("method", recorded.method, now.method),
        ("origin", f"{old_url.scheme}://{old_url.netloc}", f"{new_url.scheme}://{new_url.netloc}"),
        ("path", old_url.path, new_url.path),
    ]
    for field_name, old, new in checks:
        if old != new:
            return field_name, old, new
    if sorted(parse_qsl(old_url.query, keep_blank_values=True)) != sorted(
        parse_qsl(new_url.query, keep_blank_values=True)
    ):
        return "query", old_url.query, new_url.query
    for name in sorted(old_headers.keys() | new_headers.keys()):
        if old_headers.get(name) != new_headers.get(name):
            return f"header {name}", old_headers.get(name, ...), new_headers.get(name, ...)
    found = first_difference(
        {"json": recorded.json_body, "text": recorded.text_body}, {"json": now.json_body, "text": now.text_body}
    )
    if found is None:
        return None
    where, old, new = found
    if where == "text":
        return "text body", old, new
    return f"body {where.removeprefix('json').lstrip('.')}".rstrip(), old, new


def _what_is_shown(value: Any) -> Any:
    """A trace value as plain JSON, without the fields ``_NOT_SHOWN`` leaves out (and no timing)."""
    if isinstance(value, BaseModel):
        left_out = _NOT_SHOWN.get(type(value), frozenset())
        return {
            name: _what_is_shown(getattr(value, name))
            for name in type(value).model_fields
            if name not in left_out and not isinstance(getattr(value, name), Timing)
        }
    if isinstance(value, list | tuple):
        return [_what_is_shown(item) for item in value]
    if isinstance(value, dict):
        return {key: _what_is_shown(item) for key, item in value.items()}
    return value


def shown_difference(recorded: ScenarioRun, now: ScenarioRun) -> tuple[str, Any, Any] | None:
    """The first difference in what two runs of a scenario show: ``(field, recorded, now)``, or None.

    Every field counts but timings, dates, headers and tracebacks
    (``_NOT_SHOWN``): ``turns[1].model_call.reply.content``, ``transcript[3].content``, ``ending.detail``.
    """
    return first_difference(_what_is_shown(recorded), _what_is_shown(now))


def _shown_divergence(recorded: ScenarioRun, now: ScenarioRun) -> Divergence | None:
    """Where a replay shows other than the trace does, as a divergence; None if it shows the same."""
    found = shown_difference(recorded, now)
    if found is None:
        return None
    where, old, new = found
    index = re.match(r"turns\[(\d+)\]", where)
    turns = recorded.turns
    turn = turns[int(index.group(1))].number if index and int(index.group(1)) < len(turns) else None
    return Divergence(
        scenario=recorded.name, kind="shown", turn=turn, field=where, recorded=_shown(old, new), now=_shown(new, old)
    )


def _redacted(divergence: Divergence, redactor: Redactor) -> Divergence:
    """A divergence with every secret the replay knows scrubbed from what it quotes."""
    values = {
        name: redactor.text(value)
        for name in ("request", "field", "recorded", "now")
        if isinstance(value := getattr(divergence, name), str)
    }
    return divergence.model_copy(update=values)


def _shown(value: Any, other: Any) -> str:
    """A value for a diff line: JSON, cut to a window around where it parts from ``other``."""
    if value is ...:
        return "absent"
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= _SHOWN:
        return text
    versus = json.dumps(other, ensure_ascii=False) if other is not ... else ""
    common = next(
        (i for i, (a, b) in enumerate(zip(text, versus, strict=False)) if a != b), min(len(text), len(versus))
    )
    start = max(common - _SHOWN // 3, 0)
    end = start + _SHOWN
    return f"{'…' if start else ''}{text[start:end]}{'…' if end < len(text) else ''}"


# -- the recording, in the order it was made -----------------------------------------


Channel = Literal["model", "service"]


@dataclass(frozen=True)
class _Recorded:
    channel: Channel
    turn: int
    label: str
    request: WireRequest
    response: WireResponse | None
    failure: Failure | None


class _Stop(BaseException):
    """Ends a replay at its first divergence, through the SDK and the agent loop.

    A ``BaseException``, not an error: it must pass every ``except Exception``
    on its way out (the SDK's, the agent's, the runner's).
    """


def _tape(run: ScenarioRun) -> list[_Recorded]:
    """Every request a scenario's live run sent, model and service, in the order sent."""
    tape = []
    for turn in run.turns:
        if turn.model_call.kind != "live" or not turn.model_call.exchanges:
            raise IncompleteRecording(
                f"{run.name}, turn {turn.number}: the model call holds no recorded request "
                f"(it is a {turn.model_call.kind} call with {len(turn.model_call.exchanges)} exchanges), "
                "so there is nothing to replay."
            )
        for exchange in turn.model_call.exchanges:
            label = f"model request, attempt {exchange.attempt}"
            entry = _Recorded("model", turn.number, label, exchange.request, exchange.response, exchange.failure)
            tape.append(_checked(run.name, entry))
        for tool in turn.tools:
            for step in tool.steps:
                if not isinstance(step, Attempt) or step.request is None:
                    continue  # a backoff, or an attempt refused before anything was sent
                label = f"tool {tool.name}, attempt {step.number}"
                entry = _Recorded("service", turn.number, label, step.request, step.response, step.failure)
                tape.append(_checked(run.name, entry))
    return tape


def _checked(scenario: str, entry: _Recorded) -> _Recorded:
    if entry.response is None and _error_class(entry, httpx) is None:
        said = f" (it failed with: {entry.failure.message})" if entry.failure else ""
        raise IncompleteRecording(
            f"{scenario}, turn {entry.turn}: the {entry.label} has no recorded response and no failure "
            f"that says which transport error it was{said}, so it cannot be replayed."
        )
    return entry


def _error_class(entry: _Recorded, module: Any) -> Any:
    """The transport exception (of ``httpx`` or ``httpx2``) a recorded failure stands for."""
    message = entry.failure.message if entry.failure is not None else ""
    # The wordings of primer.service and primer.models.live; the longest first.
    if "could not be reached in time" in message:
        return module.ConnectTimeout
    if "did not answer" in message:
        return module.ReadTimeout
    if "could not be reached" in message:
        return module.ConnectError
    if "broke off" in message:
        return module.RemoteProtocolError
    return None


@dataclass
class _Player:
    """The recording of one scenario, played back request by request."""

    scenario: str
    tape: list[_Recorded]
    redactor: Redactor
    played: int = 0
    divergence: Divergence | None = None
    _sent: dict[Channel, int] = field(default_factory=lambda: {"model": 0, "service": 0})

    def answer(self, channel: Channel, method: str, url: str, headers: list[tuple[str, str]], body: bytes) -> _Recorded:
        """The recorded exchange for this request; raises ``_Stop`` where it diverges."""
        if self.divergence is not None:
            raise _Stop  # already parted: nothing more is compared
        now = record_request(method, url, headers, body, redactor=self.redactor)
        self._sent[channel] += 1
        if self.played >= len(self.tape):
            last = self.tape[-1].turn if self.tape else 0
            count = _ordinal(self._sent[channel])
            self._stop("ran_out", last, None, now=f"a {count} {channel} request ({method} {urlsplit(now.url).path})")
        entry = self.tape[self.played]
        if entry.channel != channel:
            self._stop(
                "request",
                entry.turn,
                entry.label,
                field="what is sent",
                recorded=f"the {entry.label}",
                now=f"a {channel} request ({method} {urlsplit(now.url).path})",
            )
        found = request_difference(entry.request, now)
        if found is not None:
            where, old, new = found
            self._stop("request", entry.turn, entry.label, field=where, recorded=_shown(old, new), now=_shown(new, old))
        self.played += 1
        return entry

    def _stop(self, kind: Kind, turn: int | None, request: str | None, **values: str | None) -> None:
        self.divergence = Divergence(scenario=self.scenario, kind=kind, turn=turn, request=request, **values)
        raise _Stop

    def left_over(self) -> Divergence | None:
        """The divergence of a run that stopped before the recording did."""
        if self.divergence is None and self.played < len(self.tape):
            entry = self.tape[self.played]
            remaining = len(self.tape) - self.played
            self.divergence = Divergence(
                scenario=self.scenario,
                kind="left_over",
                turn=entry.turn,
                request=entry.label,
                recorded=f"{remaining} recorded request{'s' * (remaining != 1)} not sent",
            )
        return self.divergence


def _ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def _replayed(player: _Player, channel: Channel, module: Any, request: httpx.Request | httpx2.Request) -> Any:
    """The recorded answer as a ``module`` (``httpx`` or ``httpx2``) response, or its transport error raised."""
    entry = player.answer(channel, request.method, str(request.url), request.headers.multi_items(), request.read())
    if entry.response is None:
        raise _error_class(entry, module)(
            f"replayed: {entry.failure.message if entry.failure else ''}", request=request
        )
    headers, content = _recorded_answer(entry.response)
    return module.Response(entry.response.status, headers=headers, content=content, request=request)


def _recorded_answer(response: WireResponse) -> tuple[list[tuple[str, str]], bytes]:
    """A recorded response's headers (those that still describe it) and body, as they are replayed."""
    headers = [(name, value) for name, value in response.headers if name not in _NOT_REPLAYED]
    body = response.json_body
    content = json.dumps(body, ensure_ascii=False) if body is not None else (response.text_body or "")
    if response.stream is not None:
        content = sse_text(response.stream)  # a streamed answer is replayed as the events it was
    return headers, content.encode()


class _ModelReplay(httpx2.BaseTransport):
    """Answers the ``openai`` SDK's requests (``httpx2``) from the recording."""

    def __init__(self, player: _Player) -> None:
        self.player = player

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """The recorded answer, or the recorded transport error."""
        response: httpx2.Response = _replayed(self.player, "model", httpx2, request)
        return response


class _ServiceReplay(httpx.BaseTransport):
    """Answers the service client's requests (``httpx``) from the recording."""

    def __init__(self, player: _Player) -> None:
        self.player = player

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """The recorded answer, or the recorded transport error."""
        response: httpx.Response = _replayed(self.player, "service", httpx, request)
        return response


# -- replaying -------------------------------------------------------------------


def replay_settings(run: ChapterRun, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings that point a live run where the recording was made.

    The provider's address and the model from the first recorded model
    request, the service's from the first tool that called one. The keys
    are the environment's (``environ``, by default ``os.environ``) when set,
    as the recording's were, so that the replay's redactor scrubs what the
    recording's did; else stand-ins.
    """
    environment_keys = Settings.keys_from_env(environ)
    values: dict[str, Any] = {"api_key": REPLAY_API_KEY, "service_key": REPLAY_SERVICE_KEY, **environment_keys}
    if run.model:
        values["model"] = run.model
    exchanges = [e for s in run.scenarios for t in s.turns for e in t.model_call.exchanges]
    if exchanges:
        url = exchanges[0].request.url
        base, found, _ = url.partition("/chat/completions")
        if not found:
            raise IncompleteRecording(
                f"The recorded model requests of {run.chapter} went to {url}, not to an OpenAI-compatible "
                ".../chat/completions: the replay cannot tell the provider's address."
            )
        values["base_url"] = base
        body = exchanges[0].request.json_body
        if isinstance(body, dict) and isinstance(body.get("model"), str):
            values["model"] = body["model"]
    service = next((tool.service for s in run.scenarios for t in s.turns for tool in t.tools if tool.service), None)
    if service:
        values["service_url"] = service
    try:
        return Settings(**values)
    except (PrimerError, ValueError) as error:
        raise IncompleteRecording(
            f"The recording of {run.chapter} names an address that cannot be used: {error}"
        ) from None


class _CodeReplay:
    """Answers a code scenario's requests to one party from the recording, at the seam."""

    def __init__(self, player: _Player, channel: Channel) -> None:
        self.player = player
        self.channel = channel

    def answer(self, request: Plain) -> Answer:
        """The recorded answer, or the recorded transport error raised."""
        entry = self.player.answer(self.channel, request.method, request.url, request.headers, request.body)
        if entry.response is None:
            # The seam hands a transport error to the code as it was raised: the SDK's own library's kind.
            raise _error_class(entry, request.library or httpx)(
                f"replayed: {entry.failure.message if entry.failure else ''}"
            )
        headers, content = _recorded_answer(entry.response)
        return Answer(entry.response.status, headers, [(0.0, content)])

    async def answer_async(self, request: Plain) -> Answer:
        """The same, to async code."""
        return self.answer(request)


def _code_tape(run: ScenarioRun) -> list[_Recorded]:
    """Every request a code scenario's live run sent, in the order sent (its start offsets say it).

    Rebuilt from the wire, a code scenario's service exchanges may come
    before its first model call, or after its answer: the tape is its
    crossings in time, not the turn-by-turn order of primer's own runs.
    """
    timed = []
    for turn in run.turns:
        for exchange in turn.model_call.exchanges:
            label = f"model request, attempt {exchange.attempt}"
            entry = _Recorded("model", turn.number, label, exchange.request, exchange.response, exchange.failure)
            timed.append((exchange.timing.start_ms or 0.0, entry))
        for tool in turn.tools:
            for step in tool.attempts:
                if step.request is not None:
                    label = f"tool {tool.name}, attempt {step.number}"
                    entry = _Recorded("service", turn.number, label, step.request, step.response, step.failure)
                    timed.append((step.timing.start_ms or 0.0, entry))
    timed.sort(key=lambda pair: pair[0])
    return [_checked(run.name, entry) for _, entry in timed]


def _run_code(scenario: CodeScenario, recorded: ScenarioRun, settings: Settings) -> tuple[_Player, ScenarioRun | None]:
    """Run a code scenario with every request answered from its recording."""
    from primer.code_runner import Wiring, run_code, services_of

    player = _Player(scenario.name, _code_tape(recorded), settings.redactor())
    services = dict(services_of(recorded))
    answerers: dict[str, Answerer] = {PROVIDER: _CodeReplay(player, "model")}
    answerers.update({name: _CodeReplay(player, "service") for name in services})
    wiring = Wiring(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value() if settings.api_key else REPLAY_API_KEY,
        model=settings.model,
        services=services,
        answerers=answerers,
        live=False,
        clock=VirtualClock(),
        redactor=settings.redactor(),
    )
    run: ScenarioRun | None = None
    with contextlib.suppress(_Stop):  # the player has the divergence
        run = run_code(scenario, "live", settings, wiring)
    return player, run


def verify_scenario(scenario: Scenario, recorded: ScenarioRun, settings: Settings) -> ScenarioCheck:
    """Run one scenario live against its recording; where it diverged, if it did.

    Raises ``IncompleteRecording`` if the recording cannot be replayed.
    """
    if isinstance(scenario, CodeScenario):
        player, run = _run_code(scenario, recorded, settings)
    else:
        player, run = _run_agent(scenario, recorded, settings)
    divergence = player.left_over()
    if divergence is None and run is not None:
        was, now = recorded.ending, run.ending
        if (was.reason, was.finish_reason) != (now.reason, now.finish_reason):
            detail = f" ({now.detail})" if now.detail and now.failed else ""
            divergence = Divergence(
                scenario=scenario.name, kind="ending", recorded=was.label, now=f"{now.label}{detail}"
            )
    if divergence is None and run is not None:
        divergence = _shown_divergence(recorded, run)
    if divergence is not None:
        divergence = _redacted(divergence, settings.redactor())
    return ScenarioCheck(scenario=scenario.name, requests=player.played, divergence=divergence)


def _run_agent(scenario: Scenario, recorded: ScenarioRun, settings: Settings) -> tuple[_Player, ScenarioRun | None]:
    """Run primer's own agent with its model and service transports answering from the recording."""
    player = _Player(scenario.name, _tape(recorded), settings.redactor())
    environment = live_environment(
        scenario,
        settings,
        clock=VirtualClock(),
        model_transport=_ModelReplay(player),
        service_transport=_ServiceReplay(player),
    )
    run: ScenarioRun | None = None
    with contextlib.suppress(_Stop):  # the player has the divergence
        run = run_scenario(scenario, "live", settings, environment=environment)
    return player, run


def verify_chapter(run: ChapterRun, scenarios: Sequence[Scenario]) -> ChapterCheck:
    """Replay a chapter's frozen live trace against its scenarios as the code has them now.

    Every scenario of the code is replayed against its recorded run; one the
    recording lacks, or a recorded one the code no longer declares, is a
    divergence. Raises ``IncompleteRecording`` (before anything runs) when
    the recording cannot be replayed.
    """
    if run.mode != "live":
        raise IncompleteRecording(f"The trace of {run.chapter} is a {run.mode} trace: only a live one can be replayed.")
    settings = replay_settings(run)
    recorded = {each.name: each for each in run.scenarios}
    code = {scenario.name for scenario in scenarios if isinstance(scenario, CodeScenario)}
    for each in run.scenarios:
        (_code_tape if each.name in code else _tape)(each)  # every recording checked before anything runs
    checks = []
    for scenario in scenarios:
        if scenario.name not in recorded:
            missing = Divergence(scenario=scenario.name, kind="unrecorded")
            checks.append(ScenarioCheck(scenario=scenario.name, divergence=missing))
        else:
            checks.append(verify_scenario(scenario, recorded[scenario.name], settings))
    declared = {scenario.name for scenario in scenarios}
    for name in recorded:
        if name not in declared:
            checks.append(ScenarioCheck(scenario=name, divergence=Divergence(scenario=name, kind="not_in_code")))
    return ChapterCheck(chapter=run.chapter, scenarios=checks)
