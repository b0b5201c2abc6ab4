"""An HTTP request or response as a trace keeps it: one way, for every recorder.

The model wire (``primer.wire``, under the ``openai`` SDK's ``httpx2``) and the
service (``primer.service``, on ``httpx``) both record through here, so a URL,
a header or a body is redacted the same way whichever of them saw it::

    record_request("GET", "https://u:pw@example.test/get?api_key=abc", [], b"", redactor=Redactor())
    # WireRequest(method="GET", url="https://not-recorded@example.test/get?api_key=not+recorded", ...)

The URL loses its user, password and credential parameters; credential
headers are ``not recorded``; the body is kept as JSON when it says or looks
like JSON (credential fields ``not recorded``), else as text, and known
secrets are scrubbed from all of it in every form they take.

A live request that opens a connection is also timed at it: ``SetUp`` listens
to httpcore's ``trace`` extension (the events ``connection.connect_tcp.*``
and ``connection.start_tls.*``) and gives how long opening the connection
took, which the recorders keep as ``Timing.setup_ms``::

    setup = SetUp(RealClock()).watch(request.extensions)
    response = transport.handle_request(request)
    setup.ms  # 41.7 for a new TLS connection; 0.0 for a reused one; None for a mock transport's answer
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterable, MutableMapping
from typing import Any, Self

from primer.clock import Clock
from primer.redact import Redactor
from primer.trace import WireRequest, WireResponse

__all__ = ["SetUp", "record_body", "record_request", "record_response"]

#: The phases of opening a connection, as httpcore's ``trace`` extension names
#: them (``connection.connect_tcp.started``, then ``.complete`` or ``.failed``):
#: the TCP connect (DNS lookup included), the TLS handshake, a SOCKS proxy's
#: greeting, and the pause before a connect is retried.
_SETUP_PHASES = frozenset({"connect_tcp", "connect_unix_socket", "start_tls", "setup_socks5_connection", "retry"})


class SetUp:
    """How long one request spent opening its connection, from httpcore's ``trace`` events.

    ``watch`` hooks it into the request's extensions, passing every event on
    to a ``trace`` callback that was there before (the service's deadline
    listens too). ``ms`` runs from the first set-up phase's start to the
    last one's end; 0.0 when httpcore sent the request over a pooled
    connection; None when no httpcore transport sent it (a mock transport
    reports nothing, so mock runs have no set-up). A live trip's None thus
    means *not timed*: in a trace, one recorded before set-up was timed.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._began: float | None = None
        self._ended: float | None = None
        self._heard = False  # any event: httpcore sent the request

    def watch(self, extensions: MutableMapping[str, Any], *, asynchronous: bool = False) -> Self:
        """Listen to the ``trace`` events of the request whose ``extensions`` these are.

        An async transport awaits its callback (httpcore refuses a plain
        function there), hence ``asynchronous``.
        """
        before = extensions.get("trace")

        def trace(event: str, info: dict[str, Any]) -> None:
            self.note(event)
            if before is not None:
                before(event, info)

        async def trace_async(event: str, info: dict[str, Any]) -> None:
            self.note(event)
            if before is not None:
                called = before(event, info)
                if inspect.isawaitable(called):
                    await called

        extensions["trace"] = trace_async if asynchronous else trace
        return self

    def note(self, event: str) -> None:
        """Note the time of one ``trace`` event, if it begins or ends a set-up phase."""
        self._heard = True
        phase, _, stage = event.partition(".")[2].rpartition(".")
        if phase not in _SETUP_PHASES:
            return
        now = self.clock.now()
        if stage == "started":
            self._began = now if self._began is None else self._began
        else:  # complete, or failed: the time was spent either way
            self._ended = now

    @property
    def ms(self) -> float | None:
        """Milliseconds from the first set-up phase's start to the last one's end; 0.0 if none ran; None: not heard."""
        if self._began is None or self._ended is None:
            return 0.0 if self._heard else None
        return (self._ended - self._began) * 1000


def record_body(content: bytes, content_type: str, redactor: Redactor) -> tuple[Any, str | None]:
    """A body as a trace keeps it: ``(json, None)`` when it parses, else ``(None, text)``."""
    if not content:
        return None, None
    text = content.decode("utf-8", errors="replace")
    # Parse whatever claims JSON or looks like it: a service or provider that
    # labels its JSON badly is still easier to read as JSON.
    if "json" in content_type.lower() or text.lstrip()[:1] in ("{", "["):
        try:
            return redactor.json(json.loads(text)), None
        except ValueError:
            pass
    return None, redactor.text(text)


def record_request(
    method: str, url: str, headers: Iterable[tuple[str, str]], content: bytes, *, redactor: Redactor
) -> WireRequest:
    """A request as the trace keeps it.

    Credentials in ``url`` are scrubbed from its headers and body too; to keep
    them out of the response's record, pass ``redactor.with_url_credentials(url)``
    to ``record_response``.
    """
    headers = list(headers)
    redactor = redactor.with_url_credentials(url)
    json_body, text_body = record_body(content, _content_type(headers), redactor)
    return WireRequest(
        method=method,
        url=redactor.url(url),
        headers=redactor.headers(headers),
        json_body=json_body,
        text_body=text_body,
    )


def record_response(
    status: int, headers: Iterable[tuple[str, str]], content: bytes, *, redactor: Redactor
) -> WireResponse:
    """A response as the trace keeps it (``content`` already decoded from gzip and the like)."""
    headers = list(headers)
    json_body, text_body = record_body(content, _content_type(headers), redactor)
    return WireResponse(
        status=status,
        headers=redactor.headers(headers),
        json_body=json_body,
        text_body=text_body,
    )


def _content_type(headers: list[tuple[str, str]]) -> str:
    return next((value for name, value in headers if name.lower() == "content-type"), "")
