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
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from primer.redact import Redactor
from primer.trace import WireRequest, WireResponse

__all__ = ["record_body", "record_request", "record_response"]


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
