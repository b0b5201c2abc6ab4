"""Tools from an MCP server: discovered at run time, called over JSON-RPC (chapter 19).

A Model Context Protocol server offers tools to any client that asks. Over
streamable HTTP, every message is one ``POST`` of one JSON-RPC message to
the server's endpoint (``/mcp``), and the answer is one JSON-RPC message::

    initialize                  -> the server's name, version and capabilities
    notifications/initialized   a notification (no id): answered 202, no body
    tools/list                  -> each tool's name, description, inputSchema, annotations
    tools/call                  -> the result's content, and isError

This client sends each through primer's ``ServiceClient``, so each is an
attempt like any service call's: recorded at the wire, classified, retried
only when safe (a tool's ``idempotentHint`` says whether a call may be
repeated; without one it is not). ``tools/call`` is the tool's own attempt
on its ``tool`` line; the messages that come before a model call
(``initialize``, ``tools/list``) are recorded as notes on that call, since
no tool call of the model's caused them.

``with_mcp_tools(serve)`` is a loop: it starts the server, lists the tools
before every model call (the list may change between turns), declares
them to the model as they were listed, and runs chapter 3's loop one turn
at a time::

    Scenario(..., tools=[], loop=with_mcp_tools(shop_on_mcp), ...)

A tool's failure comes back as a *result* with ``isError: true``: the
exchange succeeded (200) and so did the JSON-RPC call. This client reads it
and sends the model the server's words as a failed call it can act on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from primer.agent import Agent
from primer.errors import ToolFailed, quoted
from primer.loop import Loop, one_turn
from primer.service import ServiceCall, ServiceClient, ServiceScript
from primer.tools import Tool, ToolContext
from primer.trace import Attempt, Backoff, Ending, Failure, Message, Note

__all__ = [
    "IN_PROCESS_URL",
    "MCP_HEADERS",
    "PROTOCOL_VERSION",
    "McpArguments",
    "McpClient",
    "McpTool",
    "with_mcp_tools",
]

#: The protocol version this client asks for: the newest one that begins with ``initialize``.
PROTOCOL_VERSION = "2025-11-25"

#: What a streamable-HTTP client sends with every request: it reads a JSON
#: answer or a stream of events, and says which protocol version it speaks.
MCP_HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": PROTOCOL_VERSION}

#: Where a server served in process is reached: a name reserved for testing, no real host.
IN_PROCESS_URL = "http://mcp.shop.test"

#: The JSON-RPC error code for parameters the server will not take (an unknown tool, among others).
INVALID_PARAMS = -32602


class McpArguments(BaseModel):
    """Arguments for a tool that lives on a server: kept as sent; the server validates them."""

    model_config = ConfigDict(extra="allow")


@dataclass
class McpClient:
    """One MCP server, reached through a ``ServiceClient`` whose every request is a JSON-RPC message."""

    service: ServiceClient
    _ids: int = 0

    def request(self, session: ServiceCall, method: str, params: Mapping[str, Any] | None, *, idempotent: bool) -> Any:
        """Send one JSON-RPC request; its ``result``, or ``ToolFailed`` for a JSON-RPC error."""
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = dict(params)
        answer = session.post(message, idempotent=idempotent)
        error = answer.get("error") if isinstance(answer, dict) else None
        if isinstance(error, dict):
            code, said = error.get("code"), quoted(error.get("message"))
            raise ToolFailed(
                Failure(
                    message=f"{quoted(self.service.name)} answered JSON-RPC error {code}: {said}",
                    retryable=False,
                    idempotent=idempotent,
                    caller_can_fix=code == INVALID_PARAMS,
                )
            )
        if not isinstance(answer, dict) or "result" not in answer:
            raise ToolFailed(
                Failure(
                    message=f"{quoted(self.service.name)} answered {method} without a JSON-RPC result",
                    retryable=False,
                    idempotent=idempotent,
                    caller_can_fix=False,
                )
            )
        return answer["result"]

    def initialize(self) -> list[Attempt | Backoff]:
        """The handshake: ``initialize``, then ``notifications/initialized``; the attempts made."""
        session = self.service.session()
        hello = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "primer", "version": "0.1"},
        }
        self.request(session, "initialize", hello, idempotent=True)
        # A notification has no id and gets no answer but the 202.
        session.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, idempotent=True)
        return session.steps

    def list_tools(self) -> tuple[list[McpTool], list[Attempt | Backoff]]:
        """``tools/list``: the tools as the server declares them now, and the attempts made."""
        session = self.service.session()
        result = self.request(session, "tools/list", None, idempotent=True)
        listed = result.get("tools", []) if isinstance(result, dict) else []
        return [McpTool.listed_by(self, tool) for tool in listed if isinstance(tool, dict)], session.steps

    def call_tool(self, session: ServiceCall, name: str, arguments: dict[str, Any], *, idempotent: bool) -> str:
        """``tools/call``: the result's text, or ``ToolFailed`` when the result says ``isError``."""
        result = self.request(session, "tools/call", {"name": name, "arguments": arguments}, idempotent=idempotent)
        content = result.get("content", []) if isinstance(result, dict) else []
        text = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        if isinstance(result, dict) and result.get("isError") is True:
            # The call went through and the tool said no: the server's words are the model's to act on.
            raise ToolFailed(
                Failure(
                    message=f"{quoted(self.service.name)} answered isError: {quoted(text)}",
                    retryable=False,
                    idempotent=idempotent,
                    caller_can_fix=True,
                )
            )
        return text


@dataclass(frozen=True)
class McpTool(Tool[McpArguments]):
    """A tool as an MCP server listed it: its name, description and schema are the server's."""

    #: The tool as ``tools/list`` declared it.
    listing: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def listed_by(cls, client: McpClient, listing: Mapping[str, Any]) -> McpTool:
        """The tool from its listing, calling the server through ``client``."""
        name = str(listing.get("name", ""))
        hints = listing.get("annotations")
        # Only a server's word makes a call safe to repeat; the protocol's default is that it is not.
        idempotent = isinstance(hints, dict) and hints.get("idempotentHint") is True

        def remote(args: McpArguments, ctx: ToolContext) -> str:
            return client.call_tool(ctx.require_service(), name, args.model_dump(), idempotent=idempotent)

        return cls(args=McpArguments, function=remote, listing=dict(listing))

    @property
    def name(self) -> str:
        """The name the server lists."""
        return str(self.listing.get("name", ""))

    @property
    def description(self) -> str:
        """The description the server lists."""
        return str(self.listing.get("description") or "")

    def schema(self) -> dict[str, Any]:
        """The server's ``inputSchema``, as it listed it."""
        schema = self.listing.get("inputSchema")
        return dict(schema) if isinstance(schema, dict) else {"type": "object", "properties": {}}


def _exchanges(label: str, steps: list[Attempt | Backoff]) -> list[Note]:
    """Each attempt of a message sent before a model call, as a note on that call.

    The note holds what was sent and what came back, as JSON-RPC on the wire:
    the URL, the body sent, the status and the body answered. The headers are
    the ones every message carries, shown whole on each ``tools/call`` attempt.
    """
    notes = []
    for step in steps:
        if isinstance(step, Attempt) and step.request is not None:
            sent = step.request.json_body
            method = sent.get("method") if isinstance(sent, dict) else label
            data: dict[str, Any] = {step.request.method: step.request.url, "sent": sent}
            if step.response is not None:
                data["status"] = step.response.status
                data["answered"] = step.response.json_body
            if step.failure is not None:
                data["failure"] = step.failure.model_dump()
            notes.append(Note(label=f"MCP {method}", data=data))
    return notes


def with_mcp_tools(
    serve: Callable[[], AbstractContextManager[httpx.BaseTransport]], *, url: str = IN_PROCESS_URL
) -> Loop:
    """A loop whose tools are an MCP server's: listed before every model call, called over ``tools/call``.

    ``serve`` starts the server and gives the transport that reaches it
    (``primer.mcp_shop.serve_in_process``, or ``httpx.HTTPTransport()`` for
    one already listening at ``url``). Each turn is chapter 3's: it ends when
    the model asks for no tool, or at the turn limit.
    """

    def mcp_loop(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        with serve() as transport:
            service = _service_for(agent, url, transport)
            client = McpClient(service)
            try:
                before = _exchanges("initialize", client.initialize())
                for _ in range(max_turns):
                    tools, steps = client.list_tools()
                    before += _exchanges("tools/list", steps)
                    # The same record and model; the tools and the service are the server's.
                    own = dataclasses.replace(agent, tools=tools, service=service)
                    ending = one_turn(own, context)
                    agent.settings = own.settings
                    agent.turns[-1].model_call.notes[:0] = before
                    before = []
                    if ending is not None:
                        return ending
            finally:
                service.close()
        return Ending(reason="turn_limit", detail=f"stopped after {max_turns} turns")

    return mcp_loop


def _service_for(agent: Agent, url: str, transport: httpx.BaseTransport) -> ServiceClient:
    """A client for the server with the run's clock, redaction, keys and retry policy."""
    like = agent.service
    extra: dict[str, Any] = {"policy": like.policy, "new_key": like.new_key} if like is not None else {}
    return ServiceClient(
        base_url=url,
        clock=agent.clock,
        transport=transport,
        script=ServiceScript(["/mcp"]),
        redactor=agent.redactor,
        headers=MCP_HEADERS,
        **extra,
    )
