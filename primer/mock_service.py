"""A grocery service played by an ``httpx.MockTransport``, as httpbin answers.

Mock runs use it instead of the network. It answers the httpbin endpoints the
scenarios use, the way httpbin does, with grocery data in the bodies:

* ``/get?item=milk`` → 200 ``{"args": {...}, "price": "1.20"}``; with a
  ``quantity`` it is an order: ``{"args": {...}, "reference": "ord-8812"}``
* ``/status/N`` → status N, empty body; a 429 or 503 carries ``Retry-After: 1``
* ``/delay/N`` → answers after N seconds, on the injected clock: when N is
  longer than the client's read timeout, the clock advances by the timeout
  and the transport raises ``httpx.ReadTimeout``, exactly what a slow real
  service does to the client, with no real waiting.
"""

from __future__ import annotations

import json

import httpx

from primer.clock import Clock
from primer.grocery import PRICES, GroceryItem

__all__ = ["ORDER_REFERENCE", "GroceryService"]

ORDER_REFERENCE = "ord-8812"


class GroceryService:
    """The fake service; ``transport()`` gives the ``httpx`` transport."""

    def __init__(self, clock: Clock, *, retry_after: str = "1") -> None:
        self.clock = clock
        self.retry_after = retry_after
        #: Every request the service received, in order (for tests and notes).
        self.received: list[httpx.Request] = []

    def transport(self) -> httpx.MockTransport:
        """An ``httpx`` transport that routes to this service."""
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one request as httpbin would."""
        path = request.url.path
        parts = path.strip("/").split("/")
        if parts[0] == "delay" and len(parts) == 2 and parts[1].isdigit():
            self._wait(int(parts[1]), request)
            self.received.append(request)
            return self._get(request)
        self.received.append(request)
        if parts[0] == "status" and len(parts) == 2 and parts[1].isdigit():
            status = int(parts[1])
            # httpbin sends an empty body with an explicit length, as the seeds show.
            headers = {"content-length": "0", "content-type": "text/plain; charset=utf-8"}
            if status in (429, 503):
                headers["retry-after"] = self.retry_after
            return httpx.Response(status, headers=headers)
        if path == "/get":
            return self._get(request)
        return httpx.Response(404, headers={"content-type": "text/html; charset=utf-8"}, content=b"Not Found")

    def _wait(self, seconds: int, request: httpx.Request) -> None:
        timeout = request.extensions.get("timeout", {}).get("read")
        if timeout is not None and seconds > timeout:
            self.clock.sleep(timeout)
            # The request did reach the service: that is why it is uncertain.
            self.received.append(request)
            raise httpx.ReadTimeout("timed out", request=request)
        self.clock.sleep(seconds)

    def _get(self, request: httpx.Request) -> httpx.Response:
        args = dict(request.url.params)
        body: dict[str, object] = {"args": args}
        item = args.get("item")
        if "quantity" in args:
            body["reference"] = ORDER_REFERENCE
        elif item is not None and item in GroceryItem.__members__:
            body["price"] = PRICES[GroceryItem(item)]
        # Compact, as the seeds' content-length (39 for a price) shows.
        content = json.dumps(body, separators=(",", ":")).encode()
        return httpx.Response(200, headers={"content-type": "application/json"}, content=content)
