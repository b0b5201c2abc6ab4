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

Secrets are kept out as the record is made: credential headers are stored as
``not recorded`` and known secret values are scrubbed from URLs and bodies.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import httpx2

from primer.clock import Clock, RealClock
from primer.redact import Redactor
from primer.trace import Exchange, Timing, WireRequest, WireResponse

__all__ = ["RecordingClient", "WireRecorder", "Wired", "record_body"]


@dataclass
class Wired:
    """One trip through the transport: its record, and what went wrong on it.

    ``error`` is the transport exception when no response came (the SDK turns
    it into ``APIConnectionError`` or ``APITimeoutError`` and loses which one
    it was, so the model reads the cause from here).
    """

    exchange: Exchange
    error: httpx2.TransportError | None = None


def record_body(content: bytes, content_type: str, redactor: Redactor) -> tuple[Any, str | None]:
    """A body as a trace keeps it: ``(json, None)`` when it parses, else ``(None, text)``."""
    if not content:
        return None, None
    text = content.decode("utf-8", errors="replace")
    # Parse whatever claims JSON or looks like it: a provider that labels its
    # JSON badly is still easier to read as JSON.
    if "json" in content_type or text.lstrip()[:1] in ("{", "["):
        try:
            return redactor.json(json.loads(text)), None
        except ValueError:
            pass
    return None, redactor.text(text)


def _request(request: httpx2.Request, redactor: Redactor) -> WireRequest:
    json_body, text_body = record_body(request.read(), request.headers.get("content-type", ""), redactor)
    return WireRequest(
        method=request.method,
        url=redactor.url(str(request.url)),
        headers=redactor.headers(request.headers.multi_items()),
        json_body=json_body,
        text_body=text_body,
    )


def _response(status: int, headers: httpx2.Headers, content: bytes, redactor: Redactor) -> WireResponse:
    json_body, text_body = record_body(content, headers.get("content-type", ""), redactor)
    return WireResponse(
        status=status,
        headers=redactor.headers(headers.multi_items()),
        json_body=json_body,
        text_body=text_body,
    )


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
        record = _request(request, self.redactor)
        started = self.clock.now()
        try:
            response = self.inner.handle_request(request)
            # Read to the last byte here, so the provider's time ends where
            # its answer does; the SDK then parses from memory (library time).
            try:
                raw = _raw(response)
            finally:
                response.close()
        except httpx2.TransportError as error:
            elapsed = (self.clock.now() - started) * 1000
            self._keep(Wired(Exchange(attempt=0, request=record, timing=_timing(elapsed)), error))
            raise
        elapsed = (self.clock.now() - started) * 1000
        # Decoding (gzip, ...) is done on a copy: the SDK gets the raw bytes
        # and the headers that describe them, exactly as they came.
        decoded = httpx2.Response(response.status_code, headers=response.headers, content=raw).content
        exchange = Exchange(
            attempt=0,
            request=record,
            response=_response(response.status_code, response.headers, decoded, self.redactor),
            timing=_timing(elapsed),
        )
        self._keep(Wired(exchange))
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx2.ByteStream(raw),
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

    def _keep(self, wired: Wired) -> None:
        with self._lock:
            self._taken.append(wired)


def _raw(response: httpx2.Response) -> bytes:
    """The body's bytes as they came, before any content-encoding is undone."""
    if response.is_stream_consumed and isinstance(response.stream, httpx2.ByteStream):
        # A transport that built its response in memory (MockTransport) has
        # read it already; the raw bytes are still in the stream.
        return b"".join(response.stream)
    return b"".join(response.iter_raw())


def _timing(elapsed_ms: float) -> Timing:
    # One trip is all wire: the provider's time, first byte out to last byte in.
    return Timing(total_ms=elapsed_ms, outside_ms=elapsed_ms)


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
