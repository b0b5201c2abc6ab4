"""A grocery service played by an ``httpx.MockTransport``, as httpbin answers.

Mock runs use it instead of the network. It answers the httpbin endpoints the
scenarios use, the way httpbin does, with grocery data in the bodies:

* ``GET /get?item=milk`` → 200 ``{"args": {...}, "price": "1.20"}``; with a
  ``quantity`` it is an order: ``{"args": {...}, "reference": "ord-8812"}``
* ``POST /post`` with ``{"item": "milk", "quantity": 2}`` → 200
  ``{"args": {}, "json": {...}, "reference": "ord-8812"}``: an order. Each
  order gets the next reference (``ord-8812``, ``ord-8813``, ...). ``/get``
  answers only GET and ``/post`` only POST; another method is a 405.
* ``/status/N`` → status N, empty body; a 429 or 503 carries ``Retry-After``
  (``1``, or what the ``retry_after`` query parameter says: ``/status/429?retry_after=30``)
* ``/delay/N`` → answers after N seconds, on the injected clock: when N is
  longer than the client's read timeout, the clock advances by the timeout
  and the transport raises ``httpx.ReadTimeout``, exactly what a slow real
  service does to the client, with no real waiting. An order sent there is
  placed when it arrives, whether or not its answer gets back.
* ``/drip?duration=D&numbytes=N`` → N bytes of ``*``, one every D/N
  seconds, as httpbin drips them: each wait is shorter than a read timeout,
  so only a deadline on the whole attempt stops it.

Two ways it is kinder than httpbin, so the chapters can show what a real
shop's service does: the ``Retry-After`` on a busy answer, and
``Idempotency-Key``: a POST with a key it has seen is answered with the first
answer (and ``idempotent-replayed: true``), not acted on again; the same key
with a different body is a 422.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from primer.clock import Clock
from primer.grocery import PRICES, GroceryItem

__all__ = ["ORDER_REFERENCE", "GroceryService"]

#: The first order's reference; each further order gets the next number.
ORDER_REFERENCE = "ord-8812"

#: The header a service that keeps idempotency keys adds to a repeated answer (Stripe's name).
REPLAYED = "idempotent-replayed"

_JSON = {"content-type": "application/json"}


class GroceryService:
    """The fake service; ``transport()`` gives the ``httpx`` transport."""

    def __init__(self, clock: Clock, *, retry_after: str = "1") -> None:
        self.clock = clock
        self.retry_after = retry_after
        #: Every request the service received, in order (for tests and notes).
        self.received: list[httpx.Request] = []
        #: The orders placed, by reference: what really happened at the shop.
        self.orders: dict[str, dict[str, Any]] = {}
        #: Idempotency key -> (the request body it came with, the answer given).
        self._keys: dict[str, tuple[bytes, httpx.Response]] = {}

    def transport(self) -> httpx.MockTransport:
        """An ``httpx`` transport that routes to this service."""
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one request as httpbin would."""
        self.received.append(request)
        parts = request.url.path.strip("/").split("/")
        if parts[0] == "delay" and len(parts) == 2 and parts[1].isdigit():
            # The service acts on arrival; only then is the answer slow.
            answer = self._keyed(request, self._echo)
            self._wait(int(parts[1]), request)
            return answer
        if parts[0] == "status" and len(parts) == 2 and parts[1].isdigit():
            return self._status(int(parts[1]), request)
        if parts == ["drip"]:
            return self._drip(request)
        if parts in (["get"], ["post"]):
            if request.method != parts[0].upper():
                return _text(405, "Method Not Allowed")
            return self._keyed(request, self._echo)
        return _text(404, "Not Found")

    def _status(self, status: int, request: httpx.Request) -> httpx.Response:
        # httpbin sends an empty body with an explicit length, as the seeds show.
        headers = {"content-length": "0", "content-type": "text/plain; charset=utf-8"}
        if status in (429, 503):
            headers["retry-after"] = request.url.params.get("retry_after", self.retry_after)
        return httpx.Response(status, headers=headers)

    def _wait(self, seconds: float, request: httpx.Request) -> None:
        timeout = request.extensions.get("timeout", {}).get("read")
        if timeout is not None and seconds > timeout:
            self.clock.sleep(timeout)
            # The request did reach the service: that is why it is uncertain.
            raise httpx.ReadTimeout("timed out", request=request)
        self.clock.sleep(seconds)

    def _keyed(self, request: httpx.Request, answer: Any) -> httpx.Response:
        """Answer once per idempotency key: a repeat gets the first answer, marked as replayed."""
        key = request.headers.get("idempotency-key")
        if key is None or request.method != "POST":
            response: httpx.Response = answer(request)
            return response
        if key in self._keys:
            body, first = self._keys[key]
            if body != request.content:
                return httpx.Response(
                    422, headers=_JSON, json={"error": "this idempotency key was used with a different request"}
                )
            return httpx.Response(first.status_code, headers={**first.headers, REPLAYED: "true"}, content=first.content)
        response = answer(request)
        self._keys[key] = (request.content, response)
        return response

    def _echo(self, request: httpx.Request) -> httpx.Response:
        args = dict(request.url.params)
        body: dict[str, object] = {"args": args}
        fields: dict[str, Any] = args
        if request.method == "POST":
            try:
                sent = json.loads(request.content or b"null")
            except ValueError:
                sent = None
            body["json"] = sent
            fields = sent if isinstance(sent, dict) else {}
        item = fields.get("item")
        if "quantity" in fields:
            body["reference"] = self._place(fields)
        elif item is not None and item in GroceryItem.__members__:
            body["price"] = PRICES[GroceryItem(item)]
        # Compact, as the seeds' content-length (39 for a price) shows.
        content = json.dumps(body, separators=(",", ":")).encode()
        return httpx.Response(200, headers=_JSON, content=content)

    def _place(self, order: dict[str, Any]) -> str:
        number = int(ORDER_REFERENCE.removeprefix("ord-")) + len(self.orders)
        reference = f"ord-{number}"
        self.orders[reference] = dict(order)
        return reference

    def _drip(self, request: httpx.Request) -> httpx.Response:
        params = request.url.params
        try:
            duration, count = float(params.get("duration", "2")), int(params.get("numbytes", "10"))
            status = int(params.get("code", "200"))
        except ValueError:
            return _text(400, "Bad Request")
        if count <= 0:
            return _text(400, "number of bytes must be positive")
        headers = {"content-type": "application/octet-stream", "content-length": str(count)}
        return httpx.Response(status, headers=headers, stream=_Drip(self, request, count, duration / count))


class _Drip(httpx.SyncByteStream):
    """httpbin's drip: a byte at once, then one every ``pause`` seconds, on the service's clock."""

    def __init__(self, service: GroceryService, request: httpx.Request, count: int, pause: float) -> None:
        self.service, self.request, self.count, self.pause = service, request, count, pause

    def __iter__(self) -> Iterator[bytes]:
        for index in range(self.count):
            if index:
                # Each wait for a byte is held to the client's read timeout, as a socket read is.
                self.service._wait(self.pause, self.request)
            yield b"*"


def _text(status: int, text: str) -> httpx.Response:
    return httpx.Response(status, headers={"content-type": "text/html; charset=utf-8"}, content=text.encode())
