"""A scenario's own named services: a mock for mock runs, a base URL for live ones.

Code that is not primer's calls its own services, not the book's grocery
shop. A scenario names each one, with what answers it in mock runs (an ASGI
app, such as a Starlette or FastAPI app, or a plain function from an
``httpx.Request`` to an ``httpx.Response``) and where it lives::

    def weather(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"city": request.url.params["city"], "sky": "sunny"})

    Service("weather", mock=weather, url="https://weather.example")

Mock runs answer every request to ``url`` from the mock, in process, and the
trace shows ``url``. Live runs send them to the service itself: ``url``, or
what ``PRIMER_SERVICES`` names for it (``weather=http://127.0.0.1:8001``),
so a build can point a scenario at a local server without editing the
chapter. A service without a ``url`` is given ``https://NAME.mock`` in mock
runs, and must be named in ``PRIMER_SERVICES`` to run live.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from primer.errors import ChapterError, ConfigError
from primer.seam import Answer, Plain

__all__ = ["Service", "ServiceAnswerer"]

#: A service's name: what the code looks it up by, and what a trace shows.
_NAME = re.compile(r"[a-z][a-z0-9_-]*")

#: A mock that is a function: one request in, one response out.
Handler = Callable[[httpx.Request], httpx.Response]


@dataclass(frozen=True)
class Service:
    """One named service a scenario's code calls."""

    name: str
    #: What answers in mock runs: an ASGI app, or a function request -> response.
    mock: Any
    #: Where it lives (and what mock runs show); ``PRIMER_SERVICES`` may say otherwise for live runs.
    url: str | None = None

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ChapterError(
                f"A service is named {self.name!r}: use lower-case letters, digits, '-' and '_', "
                "starting with a letter (weather, shop_api)."
            )
        if not callable(self.mock):
            raise ChapterError(
                f"The mock of service {self.name!r} is {type(self.mock).__name__}: give an ASGI app or a "
                "function that takes an httpx.Request and returns an httpx.Response."
            )

    def mock_url(self) -> str:
        """Where mock runs say the service is."""
        return (self.url or f"https://{self.name}.mock").rstrip("/")

    def live_url(self, configured: dict[str, str]) -> str:
        """Where the service is for a live run: ``PRIMER_SERVICES`` first, then ``url``."""
        url = configured.get(self.name) or self.url
        if url is None:
            raise ConfigError(
                f"The service {self.name!r} has no URL to run live against: name it in PRIMER_SERVICES "
                f"({self.name}=https://...), or give the Service a url."
            )
        return url.rstrip("/")

    @property
    def is_asgi(self) -> bool:
        """Whether the mock is an ASGI app (``async def app(scope, receive, send)``) rather than a function."""
        call = self.mock if inspect.isfunction(self.mock) else getattr(self.mock, "__call__", None)  # noqa: B004
        try:
            return len(inspect.signature(call).parameters) == 3 if call is not None else False
        except (TypeError, ValueError):
            return False


class ServiceAnswerer:
    """Answers a service's requests from its mock, at the seam."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def _request(self, request: Plain) -> httpx.Request:
        return httpx.Request(request.method, request.url, headers=request.headers, content=request.body)

    def answer(self, request: Plain) -> Answer:
        """The mock's answer to a request from synchronous code."""
        if self.service.is_asgi:
            # An ASGI app is async: it runs on a loop of its own, whatever the caller's thread has.
            found: list[Answer] = []
            failed: list[BaseException] = []

            def run() -> None:
                try:
                    found.append(asyncio.run(self.answer_async(request)))
                except BaseException as error:  # noqa: BLE001 - handed back to the caller's thread
                    failed.append(error)

            thread = threading.Thread(target=run, name=f"mock-{self.service.name}")
            thread.start()
            thread.join()
            if failed:
                raise failed[0]
            return found[0]
        response = self.service.mock(self._request(request))
        return _answer(self.service, response)

    async def answer_async(self, request: Plain) -> Answer:
        """The mock's answer to a request from async code."""
        if not self.service.is_asgi:
            response = self.service.mock(self._request(request))
            if inspect.isawaitable(response):
                response = await _awaited(response)
            return _answer(self.service, response)
        transport = httpx.ASGITransport(app=self.service.mock)
        response = await transport.handle_async_request(self._request(request))
        body = await response.aread()
        return Answer(response.status_code, response.headers.multi_items(), [(0.0, body)])


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _answer(service: Service, response: Any) -> Answer:
    if not isinstance(response, httpx.Response):
        raise ChapterError(
            f"The mock of service {service.name!r} returned {type(response).__name__}, not an httpx.Response."
        )
    return Answer(response.status_code, response.headers.multi_items(), [(0.0, response.read())])
