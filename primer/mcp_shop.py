"""The shop's tools served over the Model Context Protocol (chapter 19).

A small MCP server on the ``mcp`` SDK's low-level ``Server``, answering
over streamable HTTP: ``POST /mcp`` with one JSON-RPC message, answered with
one JSON body (``json_response=True``), and no session kept between requests
(``stateless_http=True``), so every request stands alone on the wire::

    server = ShopServer()
    with serve_in_process(server.app()) as transport:   # no socket: the app is called in process
        ...                                              # any httpx.Client(transport=transport)

Its tools are declared from the same pydantic models as the rest of the
book's (``primer.grocery``): the ``inputSchema`` a client lists is the schema
the other chapters declare. A tool's own failure (a quantity out of range)
is *reported in the result* with ``isError: true``, as the protocol asks,
so that the model can read it; a call to a tool the server does not have is
a JSON-RPC error. Once an order is placed the server offers one more tool,
``track_order``: its tool list changes while a client is using it.

``uvicorn.run(ShopServer().app(), host="127.0.0.1", port=8931)`` serves the
same app on a loopback socket (the tests do that).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from primer.errors import MissingExtra
from primer.grocery import MAX_ORDER, PRICES, PlaceOrder, PriceOf
from primer.tools import wire_parameters

try:
    import anyio.from_thread
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.shared.exceptions import MCPError
    from starlette.applications import Starlette
except ImportError as missing:  # pragma: no cover - the extra is part of the test install
    raise MissingExtra("The MCP server of chapter 19", "mcp", missing) from None

__all__ = ["Refused", "ShopServer", "TrackOrder", "serve_in_process"]


class Refused(Exception):
    """A tool's own refusal, in the server's words: reported in the result, ``isError: true``."""


class TrackOrder(BaseModel):
    """Where an order is: when it will arrive."""

    model_config = ConfigDict(title="track_order")
    reference: str


class ShopServer:
    """The shop on MCP: ``price_of``, ``place_order``, and ``track_order`` once there is an order.

    Each instance keeps its own orders, so a scenario that makes a fresh
    one starts with an empty shop.
    """

    def __init__(self) -> None:
        self.orders: list[str] = []
        self.server: Server[Any] = Server(
            "grocery-shop", version="1.0", on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )

    def tools(self) -> list[types.Tool]:
        """The tools offered now: ``track_order`` joins them after the first order."""
        offered = [
            _declared(PriceOf, read_only=True),
            _declared(PlaceOrder, read_only=False),
        ]
        if self.orders:
            offered.append(_declared(TrackOrder, read_only=True))
        return offered

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool; a refusal raises ``Refused``, a name the server does not offer ``MCPError``."""
        if name == "price_of":
            return PRICES[PriceOf.model_validate(arguments).item]
        if name == "place_order":
            order = PlaceOrder.model_validate(arguments)
            if not 1 <= order.quantity <= MAX_ORDER:
                raise Refused(f"quantity {order.quantity} must be between 1 and {MAX_ORDER}")
            self.orders.append(f"ord-{len(self.orders) + 1}")
            return f"ordered {order.quantity} x {order.item.value} (reference {self.orders[-1]})"
        if name == "track_order" and self.orders:
            reference = TrackOrder.model_validate(arguments).reference
            if reference not in self.orders:
                raise Refused(f"there is no order {reference}; the orders are {', '.join(self.orders)}")
            return f"{reference} arrives tomorrow between 8 and 10."
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")

    def app(self) -> Starlette:
        """The server as an ASGI app: ``POST /mcp``, one JSON answer per request, no sessions."""
        return self.server.streamable_http_app(
            json_response=True,
            stateless_http=True,
            # It answers whatever name it is reached by: in process, or a loopback port the tests pick.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools())

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            text = self.call(params.name, params.arguments or {})
        except Refused as refused:
            # The tool's own failure: in the result, for the model to read (not a protocol error).
            return types.CallToolResult(content=[types.TextContent(text=str(refused))], is_error=True)
        except ValidationError as invalid:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in invalid.errors())
            return types.CallToolResult(content=[types.TextContent(text=problems)], is_error=True)
        return types.CallToolResult(content=[types.TextContent(text=text)])


def _declared(args: type[BaseModel], *, read_only: bool) -> types.Tool:
    """A tool as ``tools/list`` declares it: the pydantic model's title, docstring and schema."""
    return types.Tool(
        name=str(args.model_config.get("title")),
        description=(args.__doc__ or "").strip(),
        input_schema=wire_parameters(args.model_json_schema()),
        # Hints a client may use to decide what is safe to repeat (chapter 9): a lookup is, an order is not.
        annotations=types.ToolAnnotations(read_only_hint=read_only, idempotent_hint=read_only),
    )


@contextmanager
def serve_in_process(app: Starlette) -> Iterator[httpx.BaseTransport]:
    """Serve an ASGI app to synchronous ``httpx`` clients, in this process: no socket, no port.

    The app runs on an event loop in a thread of its own (an ``anyio``
    blocking portal), its lifespan entered once for the whole ``with``
    block; each request is handed to it whole and its answer read whole.
    """
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(app.router.lifespan_context(app)),
    ):
        yield _InProcess(portal, httpx.ASGITransport(app))


class _InProcess(httpx.BaseTransport):
    def __init__(self, portal: anyio.from_thread.BlockingPortal, asgi: httpx.ASGITransport) -> None:
        self._portal = portal
        self._asgi = asgi

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()

        async def send() -> httpx.Response:
            sent = httpx.Request(request.method, request.url, headers=request.headers, content=content)
            answer = await self._asgi.handle_async_request(sent)
            return httpx.Response(answer.status_code, headers=answer.headers, content=await answer.aread())

        return self._portal.call(send)
