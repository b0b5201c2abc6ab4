"""Chapter 19: the shop's tools on an MCP server, listed and called over JSON-RPC.

The mock runs serve the server in process; the live-path tests serve the same
app on a loopback socket with uvicorn, and reach it with this book's client
and with the ``mcp`` SDK's own client.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn

from primer.chapters.ch19_mcp_tools import tool_found_and_called, tool_list_changed, tool_reports_an_error
from primer.clock import VirtualClock
from primer.errors import ToolFailed
from primer.mcp_shop import ShopServer, serve_in_process
from primer.mcp_tools import IN_PROCESS_URL, MCP_HEADERS, PROTOCOL_VERSION, McpClient, with_mcp_tools
from primer.runner import run_scenario
from primer.scenario import Scenario
from primer.service import ServiceClient, ServiceScript
from primer.trace import Attempt, Note, ScenarioRun

ROOT = Path(__file__).resolve().parent.parent
PAGE = " ".join((ROOT / "docs" / "ch19_mcp_tools.md").read_text(encoding="utf-8").split())


def _notes(run: ScenarioRun, turn: int) -> dict[str, Note]:
    return {n.label: n for n in run.turns[turn - 1].model_call.notes if n.label.startswith("MCP ")}


def _declared(run: ScenarioRun, turn: int) -> list[str]:
    return [t.name for t in run.turns[turn - 1].model_call.tools]


def _rpc(note: Note, side: str) -> Any:
    return note.data["sent" if side == "request" else "answered"]


def test_the_handshake_and_the_list_come_before_the_first_model_call() -> None:
    run = run_scenario(tool_found_and_called)
    notes = _notes(run, 1)
    assert list(notes) == ["MCP initialize", "MCP notifications/initialized", "MCP tools/list"]
    hello = notes["MCP initialize"]
    assert _rpc(hello, "request")["params"]["protocolVersion"] == PROTOCOL_VERSION == "2025-11-25"
    answer = _rpc(hello, "response")["result"]
    assert answer["serverInfo"]["name"] == "grocery-shop"
    assert answer["capabilities"]["tools"] == {"listChanged": False}
    initialized = notes["MCP notifications/initialized"].data
    assert initialized["POST"] == "http://mcp.shop.test/mcp"
    assert "id" not in initialized["sent"]
    assert initialized["status"] == 202
    assert initialized["answered"] is None
    listed = _rpc(notes["MCP tools/list"], "response")["result"]["tools"]
    assert [t["name"] for t in listed] == _declared(run, 1) == ["price_of", "place_order"]
    # What the model is declared is the server's listing, schema and all.
    assert run.turns[0].model_call.tools[0].parameters == listed[0]["inputSchema"]
    assert listed[0]["annotations"] == {"idempotentHint": True, "readOnlyHint": True}
    assert listed[1]["annotations"] == {"idempotentHint": False, "readOnlyHint": False}
    # Turn 2 lists again, and only lists.
    assert list(_notes(run, 2)) == ["MCP tools/list"]


def test_a_tool_call_is_one_json_rpc_exchange_on_the_tool_line() -> None:
    run = run_scenario(tool_found_and_called)
    (price_of,) = run.turns[0].tools
    (attempt,) = price_of.attempts
    assert attempt.request is not None
    assert attempt.response is not None
    assert (attempt.request.method, attempt.request.url) == ("POST", "http://mcp.shop.test/mcp")
    headers = dict(attempt.request.headers)
    assert headers["accept"] == "application/json, text/event-stream"
    assert headers["mcp-protocol-version"] == "2025-11-25"
    assert "idempotency-key" not in headers, "price_of is listed idempotent"
    body = attempt.request.json_body
    assert body["method"] == "tools/call"
    assert body["params"] == {"name": "price_of", "arguments": {"item": "milk"}}
    assert attempt.response.json_body["result"] == {"content": [{"text": "1.20", "type": "text"}], "isError": False}
    assert price_of.service == "http://mcp.shop.test"
    assert price_of.message == "1.20"
    for quoted in ('"protocolVersion": "2025-11-25"', '"listChanged": false', '"isError": false', "`1.20`"):
        assert quoted in PAGE


def test_the_list_changes_after_an_order_and_the_next_turn_declares_it() -> None:
    run = run_scenario(tool_list_changed)
    assert _declared(run, 1) == ["price_of", "place_order"]
    assert _declared(run, 2) == ["price_of", "place_order", "track_order"]
    listed = _rpc(_notes(run, 2)["MCP tools/list"], "response")["result"]["tools"]
    assert [t["name"] for t in listed] == ["price_of", "place_order", "track_order"]
    order, track = run.turns[0].tools[0], run.turns[1].tools[0]
    assert "idempotency-key" in dict(order.attempts[0].request.headers)  # type: ignore[union-attr]
    assert order.result == "ordered 2 x milk (reference ord-1)"
    assert track.result == "ord-1 arrives tomorrow between 8 and 10."
    assert f"`{order.result}`" in PAGE
    assert f"`{track.result}`" in PAGE


def test_a_tools_failure_is_a_result_with_is_error_and_the_model_is_told() -> None:
    run = run_scenario(tool_reports_an_error)
    refused = run.turns[0].tools[0]
    (attempt,) = refused.attempts
    assert attempt.response is not None
    assert attempt.response.status == 200
    answer = attempt.response.json_body
    assert "error" not in answer
    assert answer["result"]["isError"] is True
    assert answer["result"]["content"][0]["text"] == "quantity 20 must be between 1 and 12"
    assert attempt.failure is None, "the exchange itself worked"
    assert refused.failure is not None
    assert (
        refused.failure.message == "['http://mcp.shop.test'] answered isError: ['quantity 20 must be between 1 and 12']"
    )
    assert refused.message == (
        "['place_order'] rejected the arguments: ['http://mcp.shop.test'] answered isError: "
        "['quantity 20 must be between 1 and 12']. Correct them and call it again."
    )
    assert f"`{refused.message}`" in PAGE
    assert f"`raised: {refused.failure.message}`" in PAGE
    assert run.turns[1].tools[0].result == "ordered 12 x milk (reference ord-1)"
    assert "track_order" in _declared(run, 3)


def test_a_tool_the_server_does_not_have_is_a_json_rpc_error() -> None:
    # track_order before any order: not a result with isError, but a JSON-RPC error, on a 200.
    with serve_in_process(ShopServer().app()) as transport:
        service = ServiceClient(
            base_url=IN_PROCESS_URL,
            clock=VirtualClock(),
            transport=transport,
            script=ServiceScript(["/mcp"]),
            headers=MCP_HEADERS,
        )
        client = McpClient(service)
        client.initialize()
        session = service.session()
        with pytest.raises(ToolFailed) as failed:
            client.call_tool(session, "track_order", {"reference": "ord-1"}, idempotent=True)
        service.close()
    (attempt,) = session.steps
    assert isinstance(attempt, Attempt)
    assert attempt.response is not None
    assert attempt.response.status == 200
    assert attempt.response.json_body["error"]["code"] == -32602
    failure = failed.value.failure
    assert failure.message == "['http://mcp.shop.test'] answered JSON-RPC error -32602: ['Unknown tool: track_order']"
    assert failure.caller_can_fix


# --- the live path: a real server on a loopback socket ---------------------------------------


@contextmanager
def _on_loopback() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(ShopServer().app(), host="127.0.0.1", port=port, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.mark.slow
def test_the_client_lists_and_calls_a_real_server_on_loopback() -> None:
    with _on_loopback() as url:
        scenario = Scenario(
            name="on_loopback",
            prompt="Order 20 bottles of milk.",
            tools=[],
            loop=with_mcp_tools(lambda: nullcontext(httpx.HTTPTransport()), url=url),
            mock=list(tool_reports_an_error.mock),
        )
        run = run_scenario(scenario)
    assert run.ending.reason == "no_tool_calls", run.ending
    assert _declared(run, 1) == ["price_of", "place_order"]
    refused, placed = run.turns[0].tools[0], run.turns[1].tools[0]
    assert refused.attempts[0].request.url == f"{url}/mcp"  # type: ignore[union-attr]
    assert refused.message.endswith(
        "answered isError: ['quantity 20 must be between 1 and 12']. Correct them and call it again."
    )
    assert placed.result == "ordered 12 x milk (reference ord-1)"
    assert _declared(run, 3) == ["price_of", "place_order", "track_order"]


@pytest.mark.slow
def test_the_sdks_own_client_finds_the_same_tools_on_loopback() -> None:
    from mcp import Client

    async def ask(url: str) -> tuple[list[str], str, bool]:
        async with Client(f"{url}/mcp") as client:
            listed = await client.list_tools()
            result = await client.call_tool("place_order", {"item": "milk", "quantity": 20})
            text = result.content[0].text  # type: ignore[union-attr]
            return [t.name for t in listed.tools], text, result.is_error

    with _on_loopback() as url:
        names, text, is_error = anyio.run(ask, url)
    assert names == ["price_of", "place_order"]
    assert (text, is_error) == ("quantity 20 must be between 1 and 12", True)
