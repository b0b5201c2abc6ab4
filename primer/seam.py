"""The HTTP seam for any code: every request the code sends, intercepted at the transport.

A scenario that is the author's own code (``primer.code_scenario``) builds
its own clients, or a framework builds them for it: the ``openai`` SDK's on
``httpx2``, a service's on ``httpx``. None of them can be handed a recorder.
So, as respx does, the seam takes the place of the transports themselves:
``httpx.HTTPTransport``, ``httpx2.HTTPTransport`` and their async twins have
their ``handle_request`` (``handle_async_request``) wrapped once, for the
whole process, and the wrapper asks which seam, if any, the calling code
runs under (a context variable, so asyncio tasks and ``asyncio.to_thread``
inherit it; a thread started bare does not, and finds the one seam open
when there is exactly one and it is a mock run's)::

    with Seam(route) as seam:          # route(request) -> who answers
        code(...)                      # every request of every client goes through seam
    seam.crossings                     # what went over, in order, recorded and redacted

Outside any seam the transports are untouched: the wrapper calls the real
method and nothing else happens. Under a seam each request is told apart by
its party (``PROVIDER``, a service's name, or none) and answered by the
seam's ``Answerer`` for that party: a scripted stand-in in mock mode, the
real transport live, the recording in a replay. A request no party owns is
never sent: the seam records ``UnmockedHost`` naming the URL and stops the
code with ``SeamStop``, a ``BaseException`` so that no ``except Exception``
on its way out (the SDK's retries, a framework's) swallows it.

Each crossing is recorded as the rest of the book records (``primer.http_record``:
one redaction path), the answer read whole before it is handed to the code,
and a stream of server-sent events is kept event by event with the time
each arrived (``primer.streaming``).
"""

from __future__ import annotations

import contextvars
import threading
import zlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import httpx2

from primer.clock import Clock, RealClock
from primer.errors import PrimerError, quoted
from primer.http_record import SetUp, record_request, record_response
from primer.redact import Redactor
from primer.streaming import EventParser, recorded_event, scrub_fragments
from primer.trace import Exchange, Failure, Note, Stream, StreamEvent, Timing, WireRequest, WireResponse

__all__ = [
    "PROVIDER",
    "Answer",
    "Answerer",
    "Crossing",
    "MockFailed",
    "Plain",
    "Seam",
    "SeamStop",
    "UnmockedHost",
    "install",
]

#: The party of a request to the model provider (a service's party is its name).
PROVIDER = "provider"


class UnmockedHost(PrimerError):
    """The code sent a request to a host that is neither the provider nor one of the scenario's services."""


class MockFailed(PrimerError):
    """A scenario's mock (the scripted provider, or a service's) raised instead of answering."""


class SeamStop(BaseException):
    """Stops the code under a seam: the seam has recorded why (``Seam.error``).

    A ``BaseException``: the SDK's retry loop and a framework's ``except
    Exception`` must let it through, or the code would go on, or retry
    with real sleeps, after the scenario already failed.
    """


@dataclass(frozen=True)
class Plain:
    """A request as the seam hands it to an answerer, whichever HTTP library sent it."""

    method: str
    url: str
    headers: list[tuple[str, str]]
    body: bytes
    #: The HTTP library that sent it (``httpx`` or ``httpx2``): a transport error raised back is of its kind.
    library: Any = None

    def json(self) -> Any:
        """The body as JSON (``ValueError`` if it is not)."""
        import json

        return json.loads(self.body or b"null")


@dataclass
class Answer:
    """What an answerer says back: status, headers, and the body in the chunks it came in.

    Each chunk comes with when it arrived, in milliseconds since the request
    was handed over: a live answer's as read off the wire, a scripted
    stream's as its pacing says. A stream's events are stamped with the
    arrival of the chunk that completed them. ``notes`` go on the model call.
    """

    status: int
    headers: list[tuple[str, str]]
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    first_byte_ms: float | None = None
    notes: list[Note] = field(default_factory=list)
    #: Seconds the answer took on the seam's clock beyond real time (a scripted stream's pacing).
    took: float = 0.0

    @property
    def body(self) -> bytes:
        """The whole body, as the code is handed it."""
        return b"".join(chunk for _, chunk in self.chunks)


class Answerer(Protocol):
    """Who answers one party's requests."""

    def answer(self, request: Plain) -> Answer:
        """The answer, synchronously."""
        ...

    async def answer_async(self, request: Plain) -> Answer:
        """The answer, from async code."""
        ...


#: Sends the request on the real transport (live): the method the seam wrapped.
Send = Callable[[], Any]


@dataclass
class Crossing:
    """One request under a seam, and its answer (or why there was none)."""

    party: str | None
    exchange: Exchange
    notes: list[Note] = field(default_factory=list)
    #: Why the seam stopped the code at this request, when it did.
    stopped: str | None = None

    @property
    def request(self) -> WireRequest:
        """The recorded request."""
        return self.exchange.request

    @property
    def response(self) -> WireResponse | None:
        """The recorded response, if one came."""
        return self.exchange.response


#: Routes a request to its party: ``PROVIDER``, a service's name, or None (nobody's).
Route = Callable[[str], str | None]

_CURRENT: contextvars.ContextVar[Seam | None] = contextvars.ContextVar("primer_seam", default=None)
_OPEN: list[Seam] = []
_OPEN_LOCK = threading.Lock()
_INSTALLED = False
_INSTALL_LOCK = threading.Lock()


def _seam() -> Seam | None:
    seam = _CURRENT.get()
    if seam is not None:
        return seam
    # A thread started without the caller's context (a framework's own pool): when one
    # seam is open and it is not live, it is that one's, so nothing leaves the machine.
    # A live seam takes no stranger: a live build's pool runs other scenarios beside it,
    # whose requests are their own.
    with _OPEN_LOCK:
        return _OPEN[0] if len(_OPEN) == 1 and not _OPEN[0].live else None


class Seam:
    """Intercepts every HTTP request the code under it sends, answers it, and records it."""

    def __init__(
        self,
        route: Route,
        answerers: dict[str, Answerer],
        *,
        live: bool = False,
        clock: Clock | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.route = route
        self.answerers = answerers
        #: Parties without an answerer are sent to the real transport when live.
        self.live = live
        self.clock = clock if clock is not None else RealClock()
        self.redactor = redactor if redactor is not None else Redactor()
        self.crossings: list[Crossing] = []
        #: Why the code was stopped, when it was.
        self.error: PrimerError | None = None
        self._lock = threading.Lock()
        self._token: contextvars.Token[Seam | None] | None = None

    def __enter__(self) -> Seam:
        install()
        self._token = _CURRENT.set(self)
        with _OPEN_LOCK:
            _OPEN.append(self)
        return self

    def __exit__(self, *_: object) -> None:
        with _OPEN_LOCK:
            _OPEN.remove(self)
        if self._token is not None:
            _CURRENT.reset(self._token)

    def stop(self, error: PrimerError) -> SeamStop:
        """Record why the code must stop (the first reason stands); the exception that stops it."""
        with self._lock:
            if self.error is None:
                self.error = error
        return SeamStop(str(error))

    # -- one request -----------------------------------------------------------------

    def _begin(self, library: Any, request: Any) -> tuple[Plain, str | None, WireRequest, Redactor]:
        plain = Plain(request.method, str(request.url), request.headers.multi_items(), request.read(), library)
        redactor = self.redactor.with_url_credentials(plain.url)
        record = record_request(plain.method, plain.url, plain.headers, plain.body, redactor=redactor)
        if self.error is not None:
            raise SeamStop(str(self.error))  # stopped already: nothing more goes out
        party = self.route(plain.url)
        if party is None or (party not in self.answerers and not self.live):
            stop = self.stop(
                UnmockedHost(
                    f"The code sent {plain.method} {record.url}, a host that is neither the provider nor a "
                    "service of this scenario: add a service for it to the scenario's services (it is then "
                    "mocked in mock runs), or send the request through the client the scenario was given."
                )
            )
            self._keep(Crossing(None, Exchange(attempt=1, request=record), stopped=str(stop)))
            raise stop
        return plain, party, record, redactor

    def handle(self, module: Any, request: Any, send: Send) -> Any:
        """Answer a synchronous request (``module`` is ``httpx`` or ``httpx2``)."""
        plain, party, record, redactor = self._begin(module, request)
        setup = SetUp(self.clock).watch(request.extensions)
        started = self.clock.now()
        answerer = self.answerers.get(party) if party is not None else None
        try:
            answer = answerer.answer(plain) if answerer is not None else _read_live(send(), self.clock, started)
        except SeamStop as stop:
            self._keep(Crossing(party, Exchange(attempt=1, request=record), stopped=str(stop)))
            raise
        except Exception as error:
            raise self._failed(party, record, (started, setup.ms), error) from error
        return self._finish(module, request, party, record, redactor, answer, (started, setup.ms))

    async def handle_async(self, module: Any, request: Any, send: Callable[[], Awaitable[Any]]) -> Any:
        """Answer an asynchronous request."""
        plain, party, record, redactor = self._begin(module, request)
        setup = SetUp(self.clock).watch(request.extensions, asynchronous=True)
        started = self.clock.now()
        answerer = self.answerers.get(party) if party is not None else None
        try:
            if answerer is not None:
                answer = await answerer.answer_async(plain)
            else:
                answer = await _read_live_async(await send(), self.clock, started)
        except SeamStop as stop:
            self._keep(Crossing(party, Exchange(attempt=1, request=record), stopped=str(stop)))
            raise
        except Exception as error:
            raise self._failed(party, record, (started, setup.ms), error) from error
        return self._finish(module, request, party, record, redactor, answer, (started, setup.ms))

    def _failed(
        self, party: str | None, record: WireRequest, began: tuple[float, float | None], error: Exception
    ) -> BaseException:
        """What to raise when no answer came: a transport error as it was (live), or a stop (a mock broke).

        ``began``: when the request was handed over, and how long opening its connection took.
        """
        started, setup_ms = began
        elapsed = (self.clock.now() - started) * 1000
        timing = Timing(start_ms=started * 1000, total_ms=elapsed, outside_ms=elapsed, setup_ms=setup_ms)
        failure = None
        if isinstance(error, httpx.TransportError | httpx2.TransportError):
            # Worded as the book's clients word them, so a replay raises the same error again.
            failure = Failure(
                message=_unanswered(record.url, error), retryable=False, idempotent=False, caller_can_fix=False
            )
        self._keep(Crossing(party, Exchange(attempt=1, request=record, failure=failure, timing=timing)))
        if failure is not None:
            return error
        who = "the scripted provider" if party == PROVIDER else f"the mock of service {party!r}"
        return self.stop(
            MockFailed(
                f"{who} raised {type(error).__name__} answering {record.method} {record.url}: "
                f"{self.redactor.text(str(error))}. Fix the mock so that it returns a response."
            )
        )

    def _finish(  # noqa: PLR0917 - one request's parts, passed on from the two handlers
        self,
        module: Any,
        request: Any,
        party: str | None,
        record: WireRequest,
        redactor: Redactor,
        answer: Answer,
        began: tuple[float, float | None],
    ) -> Any:
        started, setup_ms = began
        if answer.took:
            self.clock.sleep(answer.took)
        elapsed = (self.clock.now() - started) * 1000
        if _is_event_stream(answer.headers):
            response = record_response(answer.status, answer.headers, b"", redactor=redactor)
            response.stream = Stream(first_byte_ms=answer.first_byte_ms, events=_events(answer, redactor))
        else:
            decoded = module.Response(answer.status, headers=answer.headers, content=answer.body).content
            response = record_response(answer.status, answer.headers, decoded, redactor=redactor)
        timing = Timing(start_ms=started * 1000, total_ms=elapsed, outside_ms=elapsed, setup_ms=setup_ms)
        self._keep(Crossing(party, Exchange(attempt=1, request=record, response=response, timing=timing), answer.notes))
        # The bytes as they came, with the headers that describe them (content-encoding included).
        return module.Response(
            answer.status, headers=answer.headers, stream=module.ByteStream(answer.body), request=request
        )

    def _keep(self, crossing: Crossing) -> None:
        with self._lock:
            self.crossings.append(crossing)


def _unanswered(url: str, error: Exception) -> str:
    name = quoted(url)
    if isinstance(error, httpx.ConnectTimeout | httpx2.ConnectTimeout):
        return f"{name} could not be reached in time"
    if isinstance(error, httpx.TimeoutException | httpx2.TimeoutException):
        return f"{name} did not answer in time"
    if isinstance(error, httpx.ConnectError | httpx2.ConnectError):
        return f"{name} could not be reached"
    return f"{name} broke off the answer"


def _is_event_stream(headers: list[tuple[str, str]]) -> bool:
    content_type = next((value for name, value in headers if name.lower() == "content-type"), "")
    return content_type.split(";")[0].strip().lower() == "text/event-stream"


def _events(answer: Answer, redactor: Redactor) -> list[StreamEvent]:
    """A stream's events, each stamped with the arrival of the chunk that completed it; redacted."""
    decode = _decoder(next((v for k, v in answer.headers if k.lower() == "content-encoding"), ""))
    parser = EventParser()
    events = []
    for at_ms, chunk in answer.chunks:
        events += [recorded_event(event, at_ms, redactor) for event in parser.feed(decode(chunk))]
    scrub_fragments(events, redactor)
    return events


def _decoder(encoding: str) -> Callable[[bytes], bytes]:
    if encoding.strip().lower() in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(32 + zlib.MAX_WBITS).decompress
    return lambda chunk: chunk


def _read_live(response: Any, clock: Clock, started: float) -> Answer:
    """A live answer read to its last byte, each chunk timed (the code is handed the same bytes after)."""
    answer = Answer(response.status_code, response.headers.multi_items(), first_byte_ms=(clock.now() - started) * 1000)
    try:
        for chunk in response.iter_raw():
            answer.chunks.append(((clock.now() - started) * 1000, chunk))
    finally:
        response.close()
    return answer


async def _read_live_async(response: Any, clock: Clock, started: float) -> Answer:
    """``_read_live`` for an async transport's answer."""
    answer = Answer(response.status_code, response.headers.multi_items(), first_byte_ms=(clock.now() - started) * 1000)
    try:
        async for chunk in response.aiter_raw():
            answer.chunks.append(((clock.now() - started) * 1000, chunk))
    finally:
        await response.aclose()
    return answer


# -- the wrapped transports ------------------------------------------------------------


def install() -> None:
    """Wrap the transports of ``httpx`` and ``httpx2`` once; outside a seam they behave as before."""
    global _INSTALLED  # noqa: PLW0603 - the transports are process-wide, and so is their wrapping
    with _INSTALL_LOCK:
        if _INSTALLED:
            return
        for module in (httpx, httpx2):
            _wrap_sync(module)
            _wrap_async(module)
        _INSTALLED = True


def _wrap_sync(module: Any) -> None:
    transport = module.HTTPTransport
    real = transport.handle_request

    def handle_request(self: Any, request: Any) -> Any:
        seam = _seam()
        if seam is None:
            return real(self, request)
        return seam.handle(module, request, lambda: real(self, request))

    handle_request.__wrapped__ = real  # type: ignore[attr-defined]
    transport.handle_request = handle_request


def _wrap_async(module: Any) -> None:
    transport = module.AsyncHTTPTransport
    real = transport.handle_async_request

    async def handle_async_request(self: Any, request: Any) -> Any:
        seam = _seam()
        if seam is None:
            return await real(self, request)
        return await seam.handle_async(module, request, lambda: real(self, request))

    handle_async_request.__wrapped__ = real  # type: ignore[attr-defined]
    transport.handle_async_request = handle_async_request


@contextmanager
def no_seam() -> Iterator[None]:
    """Run a block outside any seam (the seam's own live sends, a test's setup)."""
    token = _CURRENT.set(None)
    try:
        yield
    finally:
        _CURRENT.reset(token)
