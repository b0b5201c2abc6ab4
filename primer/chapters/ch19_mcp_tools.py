"""Tools over MCP: a server lists the shop's tools, the agent discovers them and calls them.

The tools are not in the agent's code: a Model Context Protocol server
offers them, and the agent asks for the list (``initialize``, then
``tools/list``) before each model call and calls one with ``tools/call``.
Every message is one JSON-RPC request over HTTP, recorded as it went.
The server is the shop's, on the ``mcp`` SDK, started by the scenario and
served in its process.
Code: ``primer/mcp_tools.py`` (the client, ``McpTool``, ``with_mcp_tools``)
and ``primer/mcp_shop.py`` (the server).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from primer.mcp_tools import with_mcp_tools
from primer.models.mock import ask, call, say
from primer.scenario import Scenario


@contextmanager
def shop_on_mcp() -> Iterator[httpx.BaseTransport]:
    """A fresh shop (no orders yet), served in this process for one run."""
    # Imported when a run starts: the mcp SDK takes a second to load, and listing the chapters needs none of it.
    from primer.mcp_shop import ShopServer, serve_in_process

    with serve_in_process(ShopServer().app()) as transport:
        yield transport


tool_found_and_called = Scenario(
    name="tool_found_and_called",
    about="The agent lists the server's tools, declares them to the model, and calls price_of over tools/call.",
    prompt="How much is milk?",
    tools=[],
    loop=with_mcp_tools(shop_on_mcp),
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)

tool_list_changed = Scenario(
    name="tool_list_changed",
    about="After an order the server offers track_order: the list of turn 2 is not the list of turn 1.",
    prompt="Order 2 bottles of milk and tell me when they will arrive.",
    tools=[],
    loop=with_mcp_tools(shop_on_mcp),
    mock=[
        ask(call("place_order", item="milk", quantity=2)),
        ask(call("track_order", reference="ord-1")),
        say("I ordered 2 bottles of milk (ord-1). They arrive tomorrow between 8 and 10."),
    ],
)

tool_reports_an_error = Scenario(
    name="tool_reports_an_error",
    about="place_order refuses 20: HTTP 200, a JSON-RPC result, and isError: true; the model is told and orders 12.",
    prompt="Order 20 bottles of milk.",
    tools=[],
    loop=with_mcp_tools(shop_on_mcp),
    mock=[
        ask(call("place_order", item="milk", quantity=20)),
        ask(call("place_order", item="milk", quantity=12)),
        say("I ordered 12 bottles of milk, the most one order may hold."),
    ],
)
