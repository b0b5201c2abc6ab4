"""A fake OpenAI-compatible chat-completions provider on 127.0.0.1 for tests.

Tests must never reach the internet, yet the live path has to be exercised with the real
``openai`` SDK over real HTTP. ``ReplayProvider`` is that other end: a stdlib HTTP server
in a background thread that replays the provider traffic recorded in the seed pages
(``tests/fixtures/provider/*.json``) and injects the faults a real provider produces.

Each POST /v1/chat/completions is answered by, in this order:

1. a 401 when no ``Authorization: Bearer <key>`` header came (nothing is consumed);
2. a pending ``delay`` (slows the answer; if the client hangs up meanwhile, nothing
   else is consumed, so the client's retry still gets the answer it was owed);
3. a pending answer directive: ``fail``, ``not_json``, ``drop``, ``reply`` or ``events``, first in first out;
4. the next loaded recorded exchange for the same conversation, else strictly the next one.

A request with ``"stream": true`` gets its answer (a recorded exchange or a ``reply``) as
server-sent events, the way OpenAI streams: text, reasoning and each tool call's arguments
split into fragments (``stream_pacing`` sets their size, the waits before and between events,
and whether several tool calls' fragments interleave), the usage in a last chunk when
``stream_options.include_usage`` asks for it, then ``data: [DONE]``. ``break_stream`` makes
the next stream misbehave: no ``[DONE]``, a malformed event, an event after ``[DONE]``, or the
connection dropped mid-stream. Error answers (``fail``, ``not_json``, ``drop``) are not streamed.

Every request is recorded in ``requests`` without its API key: only whether one was sent.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "provider"
CHAT_PATH = "/v1/chat/completions"

# Recorded headers describing the recorded transport, not the payload: the replay sends a
# plain, length-delimited body, and http.server writes its own date and server lines.
TRANSPORT_HEADERS = frozenset(
    {"content-encoding", "transfer-encoding", "content-length", "connection", "date", "server"}
)
BEARER = re.compile(r"^Bearer\s+(\S+)\s*$", re.IGNORECASE)
REDACTED = "[redacted]"

# Default OpenAI-style error details per status, so ``fail(429)`` reads like the real thing.
ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    403: ("You are not allowed to use this model.", "permission_error", None),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}

DEFAULT_USAGE: Mapping[str, Any] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
ToolCallSpec = tuple[str, str | Mapping[str, Any]]

#: How a stream misbehaves: it ends without ``[DONE]``; event ``after`` (counted from 0) is not
#: JSON; an event follows ``[DONE]``; the connection drops after ``after`` events.
StreamFault = Literal["no_done", "malformed", "after_done", "drop"]
#: What a malformed event carries: JSON cut off mid-object.
MALFORMED_EVENT = '{"choices": [{"index": 0, "delta": {"content": "cut of'


@dataclass(frozen=True)
class StreamPacing:
    """How streamed answers are served: waits in seconds, fragment size in characters."""

    first: float = 0.0
    every: float = 0.0
    fragment: int = 4
    #: Send several tool calls' fragments in turn (call 0, call 1, call 0, ...) instead of one call after another.
    interleave: bool = False


@dataclass
class _StreamBreak:
    fault: StreamFault
    after: int
    times: int


def _pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def completion_chunks(
    body: Mapping[str, Any], *, fragment: int = 4, interleave: bool = False, include_usage: bool = False
) -> list[dict[str, Any]]:
    """A ``chat.completion`` body as the ``chat.completion.chunk`` events a provider streams it in.

    A first chunk gives the role; reasoning, then text, in ``fragment``-character pieces; each
    tool call named in one chunk (index, id, name) and its arguments in pieces after it (with
    ``interleave``, the calls take turns); a chunk with the finish reason; with
    ``include_usage``, a last chunk with no choices and the usage.
    """
    base = {
        "id": body.get("id", "replay-completion"),
        "object": "chat.completion.chunk",
        "created": body.get("created", 0),
        "model": body.get("model", ""),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    choice = body["choices"][0]
    message = choice.get("message") or {}
    chunks = [chunk({"role": "assistant", "content": ""})]
    for key in ("reasoning_content", "content"):
        if isinstance(message.get(key), str):
            chunks += [chunk({key: piece}) for piece in _pieces(message[key], fragment)]
    sequences = []
    for index, tool_call in enumerate(message.get("tool_calls") or []):
        function = tool_call["function"]
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        head = {"index": index, "id": tool_call.get("id"), "type": "function"}
        sequence = [chunk({"tool_calls": [{**head, "function": {"name": function["name"], "arguments": ""}}]})]
        sequence += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _pieces(arguments, fragment)
        ]
        sequences.append(sequence)
    if interleave:
        for step in range(max((len(sequence) for sequence in sequences), default=0)):
            chunks += [sequence[step] for sequence in sequences if step < len(sequence)]
    else:
        chunks += [item for sequence in sequences for item in sequence]
    chunks.append(chunk({}, choice.get("finish_reason")))
    if include_usage and body.get("usage") is not None:
        chunks.append({**base, "choices": [], "usage": body["usage"]})
    return chunks


def stream_events(
    answer: bytes, request: Any, pacing: StreamPacing, fault: _StreamBreak | None
) -> tuple[list[str], bool]:
    """The data of each event for one streamed answer, and whether to drop the connection after them."""
    try:
        body = json.loads(answer)
    except ValueError:
        body = None
    options = request.get("stream_options") if isinstance(request, Mapping) else None
    include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
    if isinstance(body, Mapping) and isinstance(body.get("choices"), list) and body["choices"]:
        chunks = completion_chunks(
            body, fragment=pacing.fragment, interleave=pacing.interleave, include_usage=include_usage
        )
        events = [json.dumps(item, ensure_ascii=False) for item in chunks]
    else:
        # Not a completion (an error, say): one event carrying it, as gateways send errors mid-stream.
        events = [answer.decode("utf-8", errors="replace")]
    events.append("[DONE]")
    if fault is None:
        return events, False
    if fault.fault == "no_done":
        return events[:-1], False
    if fault.fault == "malformed":
        events[min(fault.after, len(events) - 2)] = MALFORMED_EVENT
        return events, False
    if fault.fault == "after_done":
        return [*events, events[-2]], False
    return events[: fault.after], True


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it, minus the API key."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names; ``authorization`` left out
    body: Any  # parsed JSON; the raw text if it was not JSON; None if empty
    has_api_key: bool
    outcome: str  # how it was answered, e.g. "replay ch09_who_retries.service_is_busy#0", "fail 429"


@dataclass
class _Exchange:
    """A queued recorded answer and the conversation it belongs to."""

    label: str
    key: tuple[Any, ...]
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class _Directive:
    """A queued fault or canned answer; ``times=None`` means it never runs out."""

    kind: Literal["fail", "not_json", "drop", "reply", "delay", "events"]
    times: int | None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    seconds: float = 0.0


def conversation_key(body: Any) -> tuple[Any, ...]:
    """Identify a conversation turn: its opening system/user messages and its turn index.

    The turn index is the number of assistant messages, so the n-th model call of a loop
    matches the n-th recorded exchange whatever ids or wording the tool results carry.
    """
    messages = body.get("messages") if isinstance(body, Mapping) else None
    if not isinstance(messages, list):
        return ((), -1)
    prefix: list[tuple[str, str]] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") not in ("system", "user"):
            break
        prefix.append((str(message["role"]), json.dumps(message.get("content"), sort_keys=True)))
    turn = sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")
    return (tuple(prefix), turn)


def error_body(message: str, type: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """An error body shaped like OpenAI's, which the SDK unwraps into ``exc.body``."""
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


def scenario_file(chapter: str, scenario: str) -> Path:
    """Path of the recorded fixture for one seed scenario."""
    return FIXTURE_DIR / f"{chapter}.{scenario}.json"


def closed_port() -> str:
    """A base URL on 127.0.0.1 where nothing listens, to provoke "connection refused".

    The port is taken from the OS and released at once; another process grabbing it in
    between is possible but vanishingly unlikely on a test machine.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _encode(body: Any) -> bytes:
    """Bytes for a body: JSON for structured values, as-is for text the caller wrote."""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _times(times: int | None) -> int | None:
    if times is not None and times < 1:
        raise ValueError("times must be at least 1, or None for a persistent directive")
    return times


class ReplayProvider:
    """A local OpenAI-compatible provider replaying recorded traffic, with fault injection.

    Use as a context manager (``with ReplayProvider() as provider:``) or through
    ``provider_fixture`` in a pytest fixture; point the SDK at ``base_url``.
    """

    def __init__(self, *, require_api_key: bool = True) -> None:
        self.require_api_key = require_api_key
        self._lock = threading.Lock()
        self._exchanges: list[_Exchange] = []
        self._directives: list[_Directive] = []
        self._delays: list[_Directive] = []
        self._breaks: list[_StreamBreak] = []
        self.pacing = StreamPacing()
        self._requests: list[RecordedRequest] = []
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> ReplayProvider:
        """Listen on an ephemeral port of 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, hang up on kept-alive connections and wait for handler threads."""
        if self._server is None:
            return
        self._stopping.set()  # ends pending delays early
        self._server.shutdown()
        with self._lock:
            # A pooled SDK connection would otherwise keep its handler thread waiting.
            for conn in list(self._connections):
                with contextlib.suppress(OSError):  # already closed by the client
                    conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()  # joins the handler threads (see _Server)
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> ReplayProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """Where to point ``openai.OpenAI(base_url=...)``, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("ReplayProvider is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # -- what the server saw ---------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many loaded recorded exchanges have not been replayed yet."""
        with self._lock:
            return len(self._exchanges)

    def reset(self) -> None:
        """Forget queued replays, directives and recorded requests."""
        with self._lock:
            self._exchanges.clear()
            self._directives.clear()
            self._delays.clear()
            self._breaks.clear()
            self._requests.clear()

    # -- what the server will answer -------------------------------------------------

    def load(self, source: str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Queue recorded exchanges for replay and return them.

        ``source`` is a fixture file (path, or a name like ``"ch09_who_retries.service_is_busy"``
        found in ``FIXTURE_DIR``), a parsed fixture document, or its list of exchanges.
        """
        if isinstance(source, (str, Path)):
            path = Path(source)
            if not path.exists():
                path = FIXTURE_DIR / f"{source}.json"
            document: Any = json.loads(path.read_text(encoding="utf-8"))
        else:
            document = source
        if isinstance(document, Mapping):
            name = f"{document.get('chapter')}.{document.get('scenario')}"
            exchanges = list(document["exchanges"])
        else:
            name, exchanges = "exchanges", list(document)
        queued = [
            _Exchange(
                label=f"{name}#{index}",
                key=conversation_key(exchange["request"]),
                status=int(exchange.get("status", 200)),
                headers={k: v for k, v in exchange.get("headers", {}).items() if k.lower() not in TRANSPORT_HEADERS},
                body=_encode(exchange["response"]),
            )
            for index, exchange in enumerate(exchanges)
        ]
        with self._lock:
            self._exchanges.extend(queued)
        return [dict(exchange) for exchange in exchanges]

    def fail(
        self, status: int, body: Any = None, headers: Mapping[str, str] | None = None, times: int | None = 1
    ) -> None:
        """Answer the next ``times`` calls with ``status`` and an OpenAI-style error body.

        ``body`` defaults to a realistic error for the status; pass a dict for other JSON, or
        str/bytes for a raw body. ``headers`` e.g. ``{"retry-after": "1"}`` for a 429.
        """
        if body is None:
            message, kind, code = ERRORS.get(status, (f"Error {status}.", "server_error", None))
            body = error_body(message, kind, code)
        self._queue(_Directive("fail", _times(times), status, _headers(headers), _encode(body)))

    def not_json(
        self,
        times: int | None = 1,
        body: str = "<html><body><h1>502 Bad Gateway</h1></body></html>",
        content_type: str = "text/html; charset=utf-8",
    ) -> None:
        """Answer 200 with a body that is not JSON, as a misbehaving gateway does."""
        self._queue(_Directive("not_json", _times(times), 200, {"content-type": content_type}, _encode(body)))

    def drop(self, times: int | None = 1) -> None:
        """Close the connection without sending any response."""
        self._queue(_Directive("drop", _times(times)))

    def reply(
        self, body: Any, status: int = 200, headers: Mapping[str, str] | None = None, times: int | None = 1
    ) -> None:
        """Answer with an arbitrary body, ahead of the replays (see ``completion``)."""
        self._queue(_Directive("reply", _times(times), status, _headers(headers), _encode(body)))

    def events(self, events: Sequence[tuple[str | None, str]], times: int | None = 1) -> None:
        """Answer the next ``times`` calls with exactly these server-sent events, ``(name, data)``, as a
        hostile provider would: any ``event:`` name, any data (JSON or not), nothing added, no ``[DONE]``."""
        blocks = [
            (f"event: {name}\n" if name is not None else "") + "".join(f"data: {line}\n" for line in data.split("\n"))
            for name, data in events
        ]
        self._queue(_Directive("events", _times(times), body="\n".join(blocks).encode() + b"\n"))

    def delay(self, seconds: float, times: int | None = 1) -> None:
        """Wait ``seconds`` before answering the next ``times`` calls, to trip client timeouts."""
        directive = _Directive("delay", _times(times), seconds=seconds)
        with self._lock:
            self._delays.append(directive)

    def stream_pacing(
        self, *, first: float = 0.0, every: float = 0.0, fragment: int = 4, interleave: bool = False
    ) -> None:
        """How streamed answers are served from now on (see ``StreamPacing``)."""
        if first < 0 or every < 0 or fragment < 1:
            raise ValueError("waits must be zero or more seconds, and fragments at least one character")
        self.pacing = StreamPacing(first, every, fragment, interleave)

    def break_stream(self, fault: StreamFault, *, after: int = 2, times: int = 1) -> None:
        """Make the next ``times`` streamed answers misbehave (see ``StreamFault``)."""
        if times < 1 or after < 0:
            raise ValueError("times must be at least 1 and after at least 0")
        with self._lock:
            self._breaks.append(_StreamBreak(fault, after, times))

    def _take_break(self) -> _StreamBreak | None:
        with self._lock:
            if not self._breaks:
                return None
            head = self._breaks[0]
            head.times -= 1
            if head.times == 0:
                self._breaks.pop(0)
            return head

    @staticmethod
    def completion(
        content: str | None = None,
        tool_calls: Sequence[ToolCallSpec] | None = None,
        finish_reason: str | None = None,
        reasoning_content: str | None = None,
        usage: Mapping[str, Any] | None = DEFAULT_USAGE,
        model: str = "deepseek-flash",
    ) -> dict[str, Any]:
        """Build a chat.completion body shaped like the recorded DeepSeek ones.

        ``tool_calls`` are ``(name, arguments)`` pairs; a str ``arguments`` is sent verbatim,
        so it can be invalid JSON on purpose. ``finish_reason`` defaults to ``"tool_calls"``
        when there are tool calls, else ``"stop"``. ``usage=None`` leaves usage out.
        """
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if reasoning_content is not None:
            message["reasoning_content"] = reasoning_content
        if tool_calls:
            message["tool_calls"] = [
                {
                    "index": index,
                    "id": f"call_{index:02d}_replay",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
                for index, (name, arguments) in enumerate(tool_calls)
            ]
        body: dict[str, Any] = {
            "id": "replay-completion",
            "object": "chat.completion",
            "created": 1789336287,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                }
            ],
        }
        if usage is not None:
            body["usage"] = dict(usage)
        return body

    # -- internals used by the handler ------------------------------------------------

    def _queue(self, directive: _Directive) -> None:
        with self._lock:
            self._directives.append(directive)

    def _take(self, queue: list[_Directive]) -> _Directive | None:
        """Use the head directive once; drop it when it runs out. Caller holds the lock."""
        if not queue:
            return None
        head = queue[0]
        if head.times is not None:
            head.times -= 1
            if head.times == 0:
                queue.pop(0)
        return head

    def _take_delay(self) -> float:
        with self._lock:
            directive = self._take(self._delays)
        return directive.seconds if directive else 0.0

    def _take_answer(self, body: Any) -> tuple[_Directive | _Exchange | None, str]:
        """The answer for a chat call: a directive, else the matching (or next) replay."""
        with self._lock:
            directive = self._take(self._directives)
            if directive is not None:
                return directive, directive.kind if directive.kind != "fail" else f"fail {directive.status}"
            if not self._exchanges:
                return None, "no replay queued"
            key = conversation_key(body)
            for index, exchange in enumerate(self._exchanges):
                if exchange.key == key:
                    return self._exchanges.pop(index), f"replay {exchange.label}"
            # Nothing matches this conversation: keep strict order rather than fail, so a
            # test whose prompts drift from the recording still gets the recorded answers.
            exchange = self._exchanges.pop(0)
            return exchange, f"replay {exchange.label} (by order)"

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)


def _headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers or {}).items()}


def provider_fixture() -> Iterator[ReplayProvider]:
    """Generator for a pytest fixture: ``replay_provider = pytest.fixture(provider_fixture)``."""
    with ReplayProvider() as provider:
        yield provider


class _Server(ThreadingHTTPServer):
    """Joins handler threads on close, so a test ends with nothing left running."""

    daemon_threads = False
    block_on_close = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up (timeouts, drops, stop()) are expected here, not errors to print.
        pass


def _make_handler(provider: ReplayProvider) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to one provider (http.server instantiates it per connection)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

        def setup(self) -> None:
            super().setup()
            with provider._lock:
                provider._connections.add(self.connection)

        def finish(self) -> None:
            with provider._lock:
                provider._connections.discard(self.connection)
            with contextlib.suppress(OSError):  # flushing to a client that hung up
                super().finish()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output quiet

        def do_POST(self) -> None:
            self._handle()

        do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

        def _handle(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length).decode("utf-8", errors="replace") if length else ""
            match = BEARER.match(self.headers.get("authorization", ""))
            key = match.group(1) if match else None
            body = self._parse(_scrub(raw, key))
            path = urlsplit(self.path).path

            if provider.require_api_key and key is None:
                message = "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'."
                self._log(path, body, key, "unauthorized")
                self._answer(401, {}, _encode(error_body(message, code="invalid_api_key")))
                return
            if self.command != "POST" or path != CHAT_PATH:
                message = f"Unknown request URL: {self.command} {path}."
                self._log(path, body, key, "unknown url")
                self._answer(404, {}, _encode(error_body(message, code="unknown_url")))
                return

            seconds = provider._take_delay()
            if seconds and not self._wait(seconds):
                # The client gave up (its timeout): answer nothing and consume nothing
                # more, so its retry gets the reply this attempt would have had.
                self.close_connection = True
                self._log(path, body, key, f"abandoned after delay {seconds}")
                return

            answer, outcome = provider._take_answer(body)
            self._log(path, body, key, outcome)
            if answer is None:
                message = "ReplayProvider has no replay queued for this request."
                self._answer(500, {}, _encode(error_body(message, "server_error")))
            elif isinstance(answer, _Directive) and answer.kind == "drop":
                self.close_connection = True  # http.server then closes the socket unanswered
            elif isinstance(answer, _Directive) and answer.kind == "events":
                self._answer(200, {"content-type": "text/event-stream; charset=utf-8"}, answer.body)
            elif (
                answer.status == 200
                and isinstance(body, Mapping)
                and body.get("stream") is True
                and (not isinstance(answer, _Directive) or answer.kind == "reply")
            ):
                self._stream(answer.headers, answer.body, body)
            else:
                self._answer(answer.status, answer.headers, answer.body)

        def _parse(self, raw: str) -> Any:
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw

        def _wait(self, seconds: float) -> bool:
            """Sleep up to ``seconds``; False as soon as the client hangs up or we stop."""
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                if provider._stopping.is_set():
                    return False
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.02))
                if readable:
                    try:
                        if not self.connection.recv(1, socket.MSG_PEEK):
                            return False  # orderly close by the client
                    except OSError:
                        return False
                    time.sleep(min(left, 0.02))  # unexpected pipelined bytes: don't spin
            return True

        def _stream(self, headers: Mapping[str, str], answer: bytes, request: Any) -> None:
            """Send the answer as server-sent events, one HTTP chunk each, paced."""
            fault = provider._take_break()
            events, drop = stream_events(answer, request, provider.pacing, fault)
            try:
                self.send_response(200)
                for name, value in headers.items():
                    if name.lower() not in ("content-type", "content-length"):
                        self.send_header(name, value)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for number, data in enumerate(events):
                    wait = provider.pacing.first if number == 0 else provider.pacing.every
                    if wait and provider._stopping.wait(wait):
                        break  # stopping: hang up
                    payload = f"data: {data}\n\n".encode()
                    self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                    self.wfile.flush()
                if drop:
                    # No last chunk: the client sees the connection end mid-body.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                self.close_connection = True  # the client is gone; nothing to tell it

        def _answer(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
            try:
                self.send_response(status)
                sent = {name.lower() for name in headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                if "content-type" not in sent:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                self.close_connection = True  # the client is gone; nothing to tell it

        def _log(self, path: str, body: Any, key: str | None, outcome: str) -> None:
            headers = {
                name.lower(): _scrub(value, key)
                for name, value in self.headers.items()
                if name.lower() != "authorization"
            }
            provider._record(RecordedRequest(self.command, path, headers, body, key is not None, outcome))

    return Handler


def _scrub(text: str, key: str | None) -> str:
    """Remove the API key wherever it was echoed; a secret stays out of every record."""
    return text.replace(key, REDACTED) if key else text
