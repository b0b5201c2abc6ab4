"""What went over the wire to the model provider, attempt by attempt.

The ``openai`` SDK builds and sends the requests; this module watches them go
by. ``RecordingClient`` is an ``httpx2.Client`` (what the SDK takes as its
``http_client``) whose transport is a ``WireRecorder`` around the real one.
The recorder writes down every request that leaves and every response that
comes back, including the ones that never came (a refused connection, a read
timeout), and times each from the moment the request is handed over to the
last byte of the answer: that is the provider's share of the time, and
everything else a model call spends is the library's::

    client = RecordingClient(clock=RealClock(), redactor=Redactor(["sk-..."]))
    sdk = openai.OpenAI(api_key="sk-...", http_client=client, max_retries=0)
    ...
    for wire in client.recorder.take():
        print(wire.exchange.request.url, wire.exchange.response)

Secrets are kept out as the record is made, by ``primer.http_record`` (the
service records through it too): credential headers are stored as ``not
recorded``, and URLs and bodies lose credentials and known secret values.

A streamed answer (``content-type: text/event-stream``) is not read whole:
that would hold the stream back from the SDK until its end. The SDK gets a
body that passes each chunk on the moment it arrives, and notes on the way
every server-sent event it completes, with the time it arrived (``at_ms``,
since the request was handed over) and redacted as it is recorded. When the
SDK closes the body, the exchange is kept: the events, when the answer
began (``first_byte_ms``), and the time to its last byte. A secret that came
split across events is scrubbed then, from the pieces it is in
(``primer.streaming.scrub_fragments``).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2

from primer.clock import Clock, RealClock
from primer.http_record import SetUp, record_request, record_response
from primer.redact import Redactor
from primer.streaming import DONE, EventParser, recorded_event, scrub_fragments
from primer.trace import Exchange, Stream, StreamEvent, Timing, WireRequest
from primer.trace_file import MAX_EVENTS

__all__ = ["RecordingClient", "WireRecorder", "Wired", "is_event_stream"]


@dataclass
class Wired:
    """One trip through the transport: its record, and what went wrong on it.

    ``error`` is the transport exception when no response came (the SDK turns
    it into ``APIConnectionError`` or ``APITimeoutError`` and loses which one
    it was, so the model reads the cause from here).
    """

    exchange: Exchange
    error: httpx2.TransportError | None = None


class WireRecorder(httpx2.BaseTransport):
    """A transport that passes every request on and records the round trip."""

    def __init__(self, inner: httpx2.BaseTransport, clock: Clock, redactor: Redactor) -> None:
        self.inner = inner
        self.clock = clock
        self.redactor = redactor
        self._lock = threading.Lock()
        self._taken: list[Wired] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send through the inner transport, read the answer whole, record both."""
        url = str(request.url)
        # Credentials in this URL stay out of the answer's record too (an echo repeats them).
        redactor = self.redactor.with_url_credentials(url)
        record = record_request(request.method, url, request.headers.multi_items(), request.read(), redactor=redactor)
        setup = SetUp(self.clock).watch(request.extensions)
        started = self.clock.now()
        try:
            response = self.inner.handle_request(request)
            if is_event_stream(response.headers):
                return self._streamed(request, response, record, redactor, (started, setup.ms))
            # Read to the last byte here, so the provider's time ends where
            # its answer does; the SDK then parses from memory (library time).
            try:
                raw = _raw(response)
            finally:
                response.close()
        except httpx2.TransportError as error:
            elapsed = (self.clock.now() - started) * 1000
            self.keep(Wired(Exchange(attempt=0, request=record, timing=_timing(started, elapsed, setup.ms)), error))
            raise
        elapsed = (self.clock.now() - started) * 1000
        # Decoding (gzip, ...) is done on a copy: the SDK gets the raw bytes
        # and the headers that describe them, exactly as they came.
        decoded = httpx2.Response(response.status_code, headers=response.headers, content=raw).content
        exchange = Exchange(
            attempt=0,
            request=record,
            response=record_response(response.status_code, response.headers.multi_items(), decoded, redactor=redactor),
            timing=_timing(started, elapsed, setup.ms),
        )
        self.keep(Wired(exchange))
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx2.ByteStream(raw),
            extensions=response.extensions,
            request=request,
        )

    def _streamed(
        self,
        request: httpx2.Request,
        response: httpx2.Response,
        record: WireRequest,
        redactor: Redactor,
        began: tuple[float, float | None],
    ) -> httpx2.Response:
        """The response with a body that records its events as the SDK reads them.

        ``began`` is when the request was handed over and how long opening its
        connection took (over before the answer began).
        """
        body = _RecordingStream(self, response, record, redactor, began)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=body,
            extensions=response.extensions,
            request=request,
        )

    def take(self) -> list[Wired]:
        """Everything recorded since the last ``take``, oldest first."""
        with self._lock:
            taken, self._taken = self._taken, []
        return taken

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()

    def keep(self, wired: Wired) -> None:
        """Add one trip to the record."""
        with self._lock:
            self._taken.append(wired)


def is_event_stream(headers: httpx2.Headers) -> bool:
    """Whether a response's body is server-sent events."""
    return headers.get("content-type", "").split(";")[0].strip().lower() == "text/event-stream"


class _RecordingStream(httpx2.SyncByteStream):
    """A streamed body passed on chunk by chunk, its events recorded as they complete."""

    def __init__(
        self,
        recorder: WireRecorder,
        response: httpx2.Response,
        record: WireRequest,
        redactor: Redactor,
        began: tuple[float, float | None],
    ) -> None:
        self.recorder = recorder
        self.response = response
        self.request = record
        self.redactor = redactor
        self.started, self.setup_ms = began
        self.first_byte_ms = (recorder.clock.now() - self.started) * 1000
        self.events: list[StreamEvent] = []
        self.parser = EventParser()
        self.decode = _decoder(response.headers.get("content-encoding", ""))
        self.error: httpx2.TransportError | None = None
        self.kept = False
        #: Events past the most a trace keeps (``MAX_EVENTS``), counted but not recorded, and where they began.
        self.dropped = 0
        self.cut_at = 0
        # One iterator for the SDK's reading and the drain after it: a body
        # held in memory would start again from its first byte.
        stream = response.stream
        if not isinstance(stream, httpx2.SyncByteStream):
            raise TypeError("A RecordingClient is synchronous: its transport must give a SyncByteStream.")
        self.chunks = iter(stream)

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self.chunks:
                self._note(chunk)
                yield chunk
        except httpx2.TransportError as error:
            # Dropped, or stalled past the read timeout: what came is kept with why it stopped.
            self.error = error
            self._keep()
            raise
        self._keep()

    def close(self) -> None:
        """Close the body; anything sent after ``[DONE]`` is read first, so the record has it."""
        if not self.kept and self.error is None and any(event.done for event in self.events):
            # The SDK stops reading at [DONE]. A provider that sends more
            # is misbehaving, and the record must show it: read to the end,
            # which a provider that behaves reaches at once.
            try:
                for chunk in self.chunks:
                    self._note(chunk)
            except httpx2.TransportError as error:
                self.error = error
        self._keep()
        self.response.close()

    def _note(self, chunk: bytes) -> None:
        if self.decode is None:
            return
        found = self.parser.feed(self.decode(chunk))
        if found:
            at_ms = (self.recorder.clock.now() - self.started) * 1000
            for event in found:
                # A trace holds no more events than a reader reads (primer.trace_file):
                # past that, each is counted, not kept; [DONE] is kept, with a place for the count.
                done = event.data.strip() == DONE
                if len(self.events) < MAX_EVENTS - 2 or (done and len(self.events) < MAX_EVENTS - 1):
                    self.events.append(recorded_event(event, at_ms, self.redactor))
                else:
                    self.cut_at = len(self.events) if self.dropped == 0 else self.cut_at
                    self.dropped += 1

    def _keep(self) -> None:
        if self.kept:
            return
        self.kept = True
        elapsed = (self.recorder.clock.now() - self.started) * 1000
        self.parser.finish()
        if self.decode is None:
            encoding = self.response.headers.get("content-encoding", "")
            note = f"the events came in content-encoding {encoding!r}, which is not recorded event by event"
            self.events = [StreamEvent(at_ms=self.first_byte_ms, text=self.redactor.text(note))]
        if self.dropped:
            # Where the events stopped being kept; the SDK had them all. As data, not text:
            # it is the recorder's word, not an event that failed to parse.
            count = {"not_recorded": {"events": self.dropped, "past": MAX_EVENTS - 2}}
            self.events.insert(self.cut_at, StreamEvent(at_ms=self.events[self.cut_at - 1].at_ms, data=count))
        scrub_fragments(self.events, self.redactor)
        recorded = record_response(
            self.response.status_code, self.response.headers.multi_items(), b"", redactor=self.redactor
        )
        recorded.stream = Stream(first_byte_ms=self.first_byte_ms, events=self.events)
        exchange = Exchange(
            attempt=0, request=self.request, response=recorded, timing=_timing(self.started, elapsed, self.setup_ms)
        )
        self.recorder.keep(Wired(exchange, self.error))


def _decoder(encoding: str) -> Callable[[bytes], bytes] | None:
    """Undoes a content-encoding chunk by chunk, for the record only (the SDK gets the bytes as they came)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return lambda chunk: chunk
    if encoding in ("gzip", "x-gzip", "deflate"):
        # 32 + MAX_WBITS reads a gzip or zlib header, whichever comes.
        decompressor = zlib.decompressobj(32 + zlib.MAX_WBITS)
        return decompressor.decompress
    return None


def _raw(response: httpx2.Response) -> bytes:
    """The body's bytes as they came, before any content-encoding is undone."""
    if response.is_stream_consumed and isinstance(response.stream, httpx2.ByteStream):
        # A transport that built its response in memory (MockTransport) has
        # read it already; the raw bytes are still in the stream.
        return b"".join(response.stream)
    return b"".join(response.iter_raw())


def _timing(started: float, elapsed_ms: float, setup_ms: float | None) -> Timing:
    # One trip is all wire: the provider's time, first byte out to last byte in,
    # opening the connection included (``setup_ms`` says how much of it that was).
    # It starts at the clock's reading; the runner makes that an offset in its scenario.
    return Timing(start_ms=started * 1000, total_ms=elapsed_ms, outside_ms=elapsed_ms, setup_ms=setup_ms)


class RecordingClient(httpx2.Client):
    """An ``httpx2.Client`` for the SDK whose every attempt is recorded.

    ``transport`` is the real transport to wrap (``httpx2.HTTPTransport()``
    by default; a test may give a ``MockTransport``); ``recorder`` holds the
    record.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        redactor: Redactor | None = None,
        transport: httpx2.BaseTransport | None = None,
        **options: Any,
    ) -> None:
        self.recorder = WireRecorder(
            transport if transport is not None else httpx2.HTTPTransport(),
            clock if clock is not None else RealClock(),
            redactor if redactor is not None else Redactor(),
        )
        super().__init__(transport=self.recorder, **options)
