"""The live model: any OpenAI-compatible endpoint through the ``openai`` SDK.

The SDK builds and sends each request; the library keeps three jobs for
itself, because they are what the book is about:

* **Recording.** The SDK is given a ``RecordingClient`` (``primer.wire``), so
  every attempt's request and response land in the trace, byte for byte as
  JSON, with the credentials not recorded.
* **Retrying.** The SDK's own retries are off (``max_retries=0``): hidden
  retries would be invisible in the trace. The library retries what is safe
  to repeat: a 429 or 503 (the provider did nothing), a connection that never
  opened, a 5xx. Asking for a completion twice changes nothing, so even a read
  timeout may be retried, but only once: each costs the whole timeout. A 400,
  401, 403 or 404 would fail the same way again, so it is not retried.
* **Failing well.** A failed call does not raise: it is a ``ModelCall`` with
  ``error`` set and no reply, and the loop ends with ``provider_failure``.
  The error says who is at fault and what to do::

      The provider at http://127.0.0.1:8000/v1 refused the key (401): check PRIMER_API_KEY.

* **Streaming**, when the settings say ``"stream": True``. The SDK reads the
  server-sent events and hands over each chunk; ``primer.streaming``
  assembles them into the body a whole answer would have had, so the reply
  is read by the same code either way. The wire keeps every event with its
  arrival time. A stream that breaks (cut off, an event that is not JSON,
  no ``[DONE]`` at its end, an event after it) ends the call with an error
  naming what broke, and a note keeps what had arrived. It is not retried
  once part of the reply has come: a caller showing the words as they come
  has shown them already.

Messages go on the wire as the chat-completions API has them: ``human`` is
``user``, ``ai`` is ``assistant`` (with ``content: null`` when it only asks
for tools, and its ``reasoning_content`` sent back when the provider gave
one), ``tool`` answers a ``tool_call_id``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai

from primer.clock import Clock, RealClock
from primer.errors import ConfigError, quoted
from primer.models.base import REQUEST_OPTIONS, SAMPLING_PARAMETERS, STREAM
from primer.redact import Redactor
from primer.service import RetryPolicy, classify_status, retry_delay
from primer.settings import Settings
from primer.streaming import Assembler, InvalidChunk, reassembled
from primer.tools import Tool, wire_parameters
from primer.trace import (
    ErrorInfo,
    Exchange,
    Failure,
    Message,
    ModelCall,
    Note,
    Stream,
    Timing,
    ToolCall,
    Usage,
    setup_total,
)
from primer.wire import RecordingClient, Wired, is_event_stream

__all__ = [
    "MAX_TIMEOUTS",
    "MODEL_RETRY_POLICY",
    "InvalidReply",
    "LiveModel",
    "check_completion",
    "read_completion",
    "wire_message",
    "wire_tool",
]

#: Retries of a model call: three attempts, one then two seconds apart unless
#: the provider's ``Retry-After`` says otherwise (honoured up to ten seconds;
#: asked to wait longer, the call gives up rather than ask again early).
MODEL_RETRY_POLICY = RetryPolicy(max_attempts=3, backoff=1.0, max_retry_after=10.0, timeout=60.0)

#: Attempts that may end in a read timeout before the call gives up: each one
#: costs the whole timeout, so one retry is all a timeout gets.
MAX_TIMEOUTS = 2

#: How many characters of a provider's own error message an error quotes.
_SAID_LIMIT = 200

_NOT_JSON = "with a body that is not JSON"

#: What each refusal means and what to do about it; ``{times}`` says how
#: many attempts there were when there was more than one.
_STATUS_ADVICE = {
    400: "rejected the request (400): check the scenario's settings and that PRIMER_MODEL supports tools.",
    401: "refused the key (401): check PRIMER_API_KEY.",
    403: "refused the key access to the model {model!r} (403): check what PRIMER_API_KEY may use.",
    404: (
        "does not know the model {model!r} (404): check PRIMER_MODEL, and that PRIMER_BASE_URL is the root "
        "of the API (it often ends in /v1)."
    ),
    422: "rejected the request (422): check the scenario's settings and that PRIMER_MODEL supports tools.",
    429: (
        "kept limiting the rate (429){times}: wait a while and run again, or check the limits of the account "
        "behind PRIMER_API_KEY."
    ),
    503: "was overloaded (503){times}: the fault is the provider's; run again later.",
}

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def wire_message(message: Message) -> dict[str, Any]:
    """One context message as the chat-completions API takes it."""
    role = _ROLES[message.role]
    if message.role == "ai" and message.tool_calls:
        wire: dict[str, Any] = {
            # An empty text beside tool calls is sent as null, as providers expect.
            "content": message.content or None,
            "role": role,
            "tool_calls": [
                {
                    "type": "function",
                    "id": call.id,
                    "function": {"name": call.name, "arguments": _arguments(call)},
                }
                for call in message.tool_calls
            ],
        }
    else:
        wire = {"content": message.content or "", "role": role}
    if message.role == "tool":
        wire["tool_call_id"] = message.tool_call_id
    if message.role == "ai" and message.reasoning:
        # Reasoning models (DeepSeek's) want their reasoning back with the turn.
        wire["reasoning_content"] = message.reasoning
    return wire


def _arguments(call: ToolCall) -> str:
    # What the model sent when it was not a JSON object: it must see its own mistake.
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def wire_tool(tool: Tool[Any]) -> dict[str, Any]:
    """One tool as the chat-completions API declares it (``strict`` when the tool is)."""
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": wire_parameters(tool.schema()),
    }
    if tool.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


class InvalidReply(Exception):
    """A 2xx answer the library cannot read a reply from.

    ``said`` is the provider's own error message when it sent one in place of
    a reply (some gateways answer 200 with ``{"error": ...}``).
    """

    def __init__(self, problem: str, said: str | None = None) -> None:
        super().__init__(problem)
        self.said = said


@dataclass
class _Outcome:
    """One attempt: the reply's JSON, or why there is none."""

    wired: list[Wired] = field(default_factory=list)
    data: dict[str, Any] | None = None
    failure: Failure | None = None
    #: The exception behind the failure, named in ``ErrorInfo.type``.
    error_type: str = ""
    status: int | None = None
    retry_after: str | None = None
    timed_out: bool = False
    #: The provider's own words about the error, if it sent any.
    said: str | None = None
    #: What was wrong with a 2xx answer, and what it said it was.
    invalid: str | None = None
    content_type: str | None = None
    #: What broke in a stream after part of the reply had come.
    broken: str | None = None
    #: The reply as far as a broken stream had brought it.
    partial: dict[str, Any] | None = None


class LiveModel:
    """A model behind an OpenAI-compatible endpoint, recorded attempt by attempt.

    Everything it depends on is given to it: the endpoint and key, the model's
    name, the clock that times and waits, the redactor that keeps secrets out
    of the record, and the ``RecordingClient`` the SDK sends through::

        model = LiveModel(base_url="https://api.deepseek.com/v1", api_key=key, model="deepseek-flash")
        call = model.complete(context, tools, {"max_tokens": 24})
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        clock: Clock | None = None,
        redactor: Redactor | None = None,
        http_client: RecordingClient | None = None,
        policy: RetryPolicy = MODEL_RETRY_POLICY,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.clock = clock if clock is not None else RealClock()
        self.redactor = (redactor if redactor is not None else Redactor()).with_secrets(api_key)
        #: How messages name the provider: its URL without any user, password or key in it.
        self.shown_url = self.redactor.url(self.base_url)
        self.policy = policy
        if http_client is None:
            http_client = RecordingClient(clock=self.clock, redactor=self.redactor)
        else:
            # Whoever built the client, the key it will carry is kept out of its record.
            http_client.recorder.redactor = http_client.recorder.redactor.with_secrets(api_key)
        self.http_client = http_client
        self._sdk = openai.OpenAI(
            api_key=api_key,
            base_url=self.base_url,
            # The library retries, visibly; the SDK's retries would be hidden.
            max_retries=0,
            timeout=httpx2.Timeout(policy.timeout, connect=min(policy.timeout, 10.0)),
            http_client=self.http_client,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        clock: Clock | None = None,
        redactor: Redactor | None = None,
        http_client: RecordingClient | None = None,
        policy: RetryPolicy | None = None,
    ) -> LiveModel:
        """The model the ``PRIMER_*`` settings describe."""
        if settings.api_key is None:
            raise ConfigError("Live mode needs PRIMER_API_KEY: set it to your provider's key and run again.")
        redactor = (redactor if redactor is not None else Redactor()).with_secrets(*settings.secrets())
        return cls(
            base_url=settings.base_url,
            api_key=settings.api_key.get_secret_value(),
            model=settings.model,
            clock=clock,
            redactor=redactor,
            http_client=http_client,
            policy=dataclasses.replace(policy or MODEL_RETRY_POLICY, timeout=settings.model_timeout),
        )

    def close(self) -> None:
        """Close the SDK client and its connections."""
        self._sdk.close()

    def complete(
        self,
        context: Sequence[Message],
        tools: Sequence[Tool[Any]],
        settings: Mapping[str, Any],
    ) -> ModelCall:
        """Send the context and tools, retrying what is safe; the record of it all."""
        started = self.clock.now()
        record = ModelCall(
            kind="live",
            model=self.model,
            context=list(context),
            tools=[t.declared() for t in tools],
            settings=dict(settings),
        )
        options = self._options(context, tools, settings)
        defaulted = [name for name in SAMPLING_PARAMETERS if name not in settings]
        waited = 0.0
        timeouts = 0
        attempt = 0
        while True:
            attempt += 1
            outcome = self._attempt(options)
            record.exchanges += self._exchanges(outcome, attempt, defaulted)
            if outcome.failure is None and outcome.data is not None:
                self._read(outcome.data, record)
                break
            timeouts += outcome.timed_out
            failure = outcome.failure
            # None when the provider asks for a longer wait than the policy gives: it is not asked again early.
            backoff = retry_delay(self.policy, attempt + 1, outcome.retry_after)
            if (
                failure is None
                or backoff is None
                or not (failure.retryable and attempt < self.policy.max_attempts and timeouts < MAX_TIMEOUTS)
            ):
                explained = self._explain(outcome, attempt)
                if backoff is None and failure is not None and failure.retryable:
                    explained += (
                        f" It asked for a wait of {quoted(outcome.retry_after)} seconds, longer than the "
                        f"{self.policy.max_retry_after:g} s the library waits."
                    )
                record.error = ErrorInfo(type=outcome.error_type, message=self.redactor.text(explained))
                if outcome.partial is not None:
                    record.notes.append(self._partial(outcome.partial))
                break
            # A model call has no steps of its own: the wait is noted instead.
            record.notes.append(Note(label="backoff", data=backoff.model_dump(exclude={"kind", "start_ms"})))
            self.clock.sleep(backoff.seconds)
            waited += backoff.seconds
        outside = sum(exchange.timing.outside_ms or 0.0 for exchange in record.exchanges)
        record.timing = Timing(
            start_ms=started * 1000,
            total_ms=(self.clock.now() - started) * 1000,
            outside_ms=outside,
            waited_ms=waited * 1000 or None,
            setup_ms=setup_total(exchange.timing for exchange in record.exchanges),
        )
        return record

    # -- one attempt -----------------------------------------------------------------

    def _options(
        self, context: Sequence[Message], tools: Sequence[Tool[Any]], settings: Mapping[str, Any]
    ) -> dict[str, Any]:
        stream = bool(settings.get(STREAM, False))
        options: dict[str, Any] = {
            "messages": [wire_message(m) for m in context],
            "model": self.model,
            "stream": stream,
        }
        if stream:
            # Without it a stream carries no token counts at all.
            options["stream_options"] = {"include_usage": True}
        if tools:
            options["tools"] = [wire_tool(t) for t in tools]
        named = (*SAMPLING_PARAMETERS, *REQUEST_OPTIONS)
        extra = {key: value for key, value in settings.items() if key not in named and key != STREAM}
        options.update({key: value for key, value in settings.items() if key in named})
        if extra:
            # Provider-specific settings go in the body as they are.
            options["extra_body"] = extra
        return options

    def _attempt(self, options: Mapping[str, Any]) -> _Outcome:
        try:
            raw = self._sdk.chat.completions.with_raw_response.create(**options)
        except openai.APIStatusError as error:
            return self._refused(error)
        except openai.APIConnectionError as error:
            return self._unanswered(error, self.http_client.recorder.take())
        response = raw.http_response
        if options.get("stream") and is_event_stream(response.headers):
            return self._streamed(raw)
        # Not a stream (not asked for, or the provider answered whole anyway): one body.
        response.read()
        return self._whole(response, self.http_client.recorder.take())

    def _refused(self, error: openai.APIStatusError) -> _Outcome:
        status = error.status_code
        return _Outcome(
            wired=self.http_client.recorder.take(),
            failure=classify_status(self.shown_url, status, idempotent=True),
            error_type=f"openai.{type(error).__name__}",
            status=status,
            retry_after=_retry_after(error.response.headers),
            said=_said(error.body),
        )

    def _unanswered(self, error: openai.APIConnectionError, wired: list[Wired]) -> _Outcome:
        name = quoted(self.shown_url)
        cause = next((w.error for w in reversed(wired) if w.error is not None), None)
        timed_out = isinstance(cause, (httpx2.ReadTimeout, httpx2.WriteTimeout, httpx2.PoolTimeout))
        if isinstance(cause, (httpx2.ConnectError, httpx2.ConnectTimeout)):
            message = f"{name} could not be reached"
        elif timed_out:
            message = f"{name} did not answer within {self.policy.timeout:g}s"
        else:
            message = f"{name} broke off the answer"
        return _Outcome(
            wired=wired,
            # A completion changes nothing at the provider: safe to ask again.
            failure=Failure(message=message, retryable=True, idempotent=True, caller_can_fix=False),
            error_type=f"openai.{type(error).__name__}",
            timed_out=timed_out,
            said=type(cause).__name__ if cause is not None else None,
        )

    def _streamed(self, raw: Any) -> _Outcome:
        """Read a stream chunk by chunk through the SDK; the reply it assembles, or what broke."""
        assembler = Assembler()
        broke: Exception | None = None
        # Plain dicts, not the SDK's chunk models: the library reads loosely,
        # and says what it could not read instead of failing on it.
        chunks: openai.Stream[dict[str, Any]] = raw.parse(to=openai.Stream[dict[str, Any]])
        try:
            for chunk in chunks:
                assembler.add(chunk)
        except (openai.APIError, ValueError, InvalidChunk) as error:
            # APIConnectionError (cut off, stalled), APIError (an error event),
            # a JSONDecodeError (an event that is not JSON), InvalidChunk.
            broke = error
        finally:
            chunks.close()  # the wire keeps the exchange when its body closes
        wired = self.http_client.recorder.take()
        stream = _stream_of(wired)
        arrived = len(stream.events) if stream is not None else 0
        if stream is not None:
            again = reassembled(stream, assembler.chunks)  # secrets split across events scrubbed
            if again.chunks == assembler.chunks:  # else the record kept fewer events than came
                assembler = again
        if isinstance(broke, openai.APIConnectionError) and not assembler.chunks:
            # Nothing of the reply came: as for a whole answer, safe to ask again.
            return self._unanswered(broke, wired)
        problem = _stream_problem(broke, stream, self.policy.timeout) if stream is not None else None
        if problem is None:
            try:
                return _Outcome(wired=wired, data=_checked(assembler.completion()))
            except InvalidReply as invalid:
                problem, broke = f"sent chunks that make up no reply: {invalid}", invalid
        name = quoted(self.shown_url)
        said = _said(broke.body) if isinstance(broke, openai.APIError) else None
        return _Outcome(
            wired=wired,
            failure=Failure(message=f"{name} {problem}", retryable=False, idempotent=True, caller_can_fix=False),
            error_type=type(broke).__name__ if broke is not None else "InvalidStream",
            status=wired[-1].exchange.response.status if wired and wired[-1].exchange.response else None,
            said=said,
            broken=problem,
            partial={**assembler.completion(), "events": arrived} if assembler.chunks else None,
        )

    def _partial(self, partial: dict[str, Any]) -> Note:
        """What a broken stream had brought: the reply so far, redacted like a reply."""
        message = partial["choices"][0]["message"]
        data: dict[str, Any] = {"events": partial["events"]}
        for key in ("content", "reasoning_content"):
            if message.get(key):
                data[key] = self.redactor.text(message[key])
        if message.get("tool_calls"):
            data["tool_calls"] = [
                {"name": self.redactor.text(call["function"]["name"]), "arguments": call["function"]["arguments"]}
                for call in message["tool_calls"]
            ]
        return Note(label="received before the stream failed", data=self.redactor.json(data))

    def _whole(self, response: httpx2.Response, wired: list[Wired]) -> _Outcome:
        name = quoted(self.shown_url)
        try:
            data = _completion(response.content)
        except InvalidReply as problem:
            return _Outcome(
                wired=wired,
                failure=Failure(
                    message=f"{name} answered {quoted(response.status_code)} {problem}",
                    retryable=False,
                    idempotent=True,
                    caller_can_fix=False,
                ),
                error_type=type(problem).__name__,
                status=response.status_code,
                invalid=str(problem),
                said=problem.said,
                content_type=response.headers.get("content-type", "no content-type"),
            )
        return _Outcome(wired=wired, data=data)

    def _exchanges(self, outcome: _Outcome, attempt: int, defaulted: list[str]) -> list[Exchange]:
        exchanges = [wired.exchange for wired in outcome.wired]
        for exchange in exchanges:
            exchange.attempt = attempt
            exchange.request.defaulted = defaulted
        if exchanges and outcome.failure is not None:
            exchanges[-1].failure = outcome.failure
        return exchanges

    def _read(self, data: dict[str, Any], record: ModelCall) -> None:
        record.reply, record.finish_reason, record.usage = read_completion(data, self.redactor)

    # -- what went wrong, in a sentence ----------------------------------------------

    def _explain(self, outcome: _Outcome, attempts: int) -> str:
        at = f"The provider at {self.shown_url}"
        times = f" over {attempts} attempts" if attempts > 1 else ""
        status = outcome.status
        if outcome.broken is not None:
            text = (
                f"{at} {outcome.broken}: the fault is the provider's, and what had arrived is kept in the "
                "trace; run again later, or try another PRIMER_MODEL."
            )
            if outcome.said:
                text += f" It said: {quoted(outcome.said)}."
            return text
        if outcome.invalid is not None:
            answered = f"{at} answered {status} {outcome.invalid}"
            if outcome.invalid == _NOT_JSON:
                text = (
                    f"{answered} ({outcome.content_type}): check that PRIMER_BASE_URL is the root of an "
                    "OpenAI-compatible API (it often ends in /v1)."
                )
            else:
                text = f"{answered}: the fault is the provider's; run again later, or try another PRIMER_MODEL."
            if outcome.said:
                text += f" It said: {quoted(outcome.said)}."
            return text
        if status is None:
            return self._explain_connection(outcome, at, times)
        if status in _STATUS_ADVICE:
            advice = _STATUS_ADVICE[status]
        elif status >= 500:
            advice = "failed ({status}){times}: the fault is the provider's; run again later."
        else:
            advice = "answered {status}{times}, which the library cannot use; check PRIMER_BASE_URL."
        text = f"{at} " + advice.format(status=status, times=times, model=self.model)
        if outcome.said and status is not None:
            text += f" It said: {quoted(outcome.said)}."
        return text

    def _explain_connection(self, outcome: _Outcome, at: str, times: str) -> str:
        failure = outcome.failure
        message = failure.message if failure is not None else ""
        if outcome.timed_out:
            return (
                f"{at} did not answer within {self.policy.timeout:g}s{times}: run again later, or give it "
                "longer with PRIMER_MODEL_TIMEOUT."
            )
        if "could not be reached" in message:
            return f"{at} could not be reached{times}: check PRIMER_BASE_URL and the network."
        return f"{at} closed the connection before a whole answer{times}: run again later."


def read_completion(data: Mapping[str, Any], redactor: Redactor) -> tuple[Message, str | None, Usage | None]:
    """The reply, finish reason and usage of a checked chat completion (``check_completion``)."""
    choice = data["choices"][0]
    message = choice["message"]
    calls = [
        _redacted_call(_tool_call(index, call), redactor) for index, call in enumerate(message.get("tool_calls") or [])
    ]
    content = message.get("content")
    reasoning = message.get("reasoning_content")
    # The reply joins the context and the trace: a secret the model
    # repeats (it may have read one in a tool's answer) is scrubbed too.
    reply = Message(
        role="ai",
        # Providers send "" beside tool calls; the book shows that as no text.
        content=redactor.text(content) if isinstance(content, str) and (content or not calls) else None,
        tool_calls=calls,
        reasoning=redactor.text(reasoning) if isinstance(reasoning, str) and reasoning else None,
    )
    finish = choice.get("finish_reason")
    return reply, finish if isinstance(finish, str) else None, _usage(data.get("usage"))


def _redacted_call(parsed: ToolCall, redactor: Redactor) -> ToolCall:
    # The id and name go back to the provider and into the trace like the rest.
    return parsed.model_copy(
        update={
            "id": redactor.text(parsed.id),
            "name": redactor.text(parsed.name),
            "arguments": redactor.json(parsed.arguments),
            "raw_arguments": None if parsed.raw_arguments is None else redactor.text(parsed.raw_arguments),
        }
    )


def _stream_of(wired: list[Wired]) -> Stream | None:
    response = wired[-1].exchange.response if wired else None
    return response.stream if response is not None else None


def _stream_problem(broke: Exception | None, stream: Stream, timeout: float) -> str | None:  # noqa: PLR0911 - one sentence per way a stream breaks
    """What broke in a stream, in words that name it; None when nothing did."""
    events = stream.events
    count = f"{len(events)} event{'s' * (len(events) != 1)}"
    if isinstance(broke, openai.APITimeoutError):
        return f"stopped sending events for {timeout:g}s after {count}"
    if isinstance(broke, openai.APIConnectionError):
        return f"broke off the stream after {count}"
    if isinstance(broke, openai.APIError):
        return f"sent an error in the stream (event {len(events)})"
    if isinstance(broke, ValueError):
        number = next((n for n, e in enumerate(events, 1) if e.text is not None and not e.done), len(events))
        return f"sent an event that is not JSON (event {number} of {len(events)})"
    if isinstance(broke, InvalidChunk):
        return f"sent an event that is not a chat completion chunk: it {broke}"
    done = next((n for n, e in enumerate(events, 1) if e.done), None)
    if done is None:
        return f"ended the stream after {count} without [DONE], so the reply may be cut short"
    if done < len(events):
        return f"sent an event after [DONE] (event {done + 1} of {len(events)})"
    return None


def _retry_after(headers: httpx2.Headers) -> str | None:
    # OpenAI also sends milliseconds; either way it is the provider's wish.
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return str(float(millis) / 1000)
        except ValueError:
            pass
    return headers.get("retry-after")


def _said(body: object) -> str | None:
    # The SDK unwraps {"error": {...}} into body; a provider may send less.
    if isinstance(body, Mapping):
        message = body.get("message")
        if isinstance(message, str) and message.strip():
            text = " ".join(message.split())
            return text if len(text) <= _SAID_LIMIT else text[:_SAID_LIMIT] + "..."
    return None


def _completion(content: bytes) -> dict[str, Any]:
    """The chat completion's JSON, checked as far as the library reads it."""
    try:
        data = json.loads(content)
    except ValueError:
        raise InvalidReply(_NOT_JSON) from None
    return _checked(data)


def check_completion(data: Any) -> dict[str, Any]:
    """A chat completion (whole, or assembled from a stream), checked as far as the library reads it.

    Raises ``InvalidReply`` saying what is missing.
    """
    return _checked(data)


def _checked(data: Any) -> dict[str, Any]:
    """A chat completion (whole, or assembled from a stream), checked as far as the library reads it."""
    if not isinstance(data, dict):
        raise InvalidReply("with JSON that is not a chat completion")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        said = _said(data.get("error", data))
        raise InvalidReply("without any choice to read a reply from", said)
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message"), dict):
        raise InvalidReply("with a choice that holds no message")
    calls = choice["message"].get("tool_calls") or []
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("function"), dict) and isinstance(c["function"].get("name"), str)
        for c in calls
    ):
        raise InvalidReply("with tool calls that name no function")
    return data


def _tool_call(index: int, call: Mapping[str, Any]) -> ToolCall:
    function = call["function"]
    arguments = function.get("arguments")
    call_id = call.get("id") if isinstance(call.get("id"), str) else f"call_{index}"
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, name=function["name"], arguments=arguments)
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        parsed = json.loads(text) if text.strip() else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return ToolCall(id=call_id, name=function["name"], arguments=parsed)
    # Not a JSON object: kept as sent, so the model is told and sees its own text.
    return ToolCall(id=call_id, name=function["name"], raw_arguments=text)


def _usage(usage: Any) -> Usage | None:
    if not isinstance(usage, Mapping):
        return None

    def count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    return Usage(
        input_tokens=count(usage.get("prompt_tokens")) or 0,
        output_tokens=count(usage.get("completion_tokens")) or 0,
        cached_tokens=count(prompt.get("cached_tokens")) if isinstance(prompt, Mapping) else None,
        reasoning_tokens=count(completion.get("reasoning_tokens")) if isinstance(completion, Mapping) else None,
    )
