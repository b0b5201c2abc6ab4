"""A scripted OpenAI-compatible provider, answering any code at the HTTP seam.

The mock model (``primer.models.mock``) replies to primer's own ``Agent``. Code
that is not primer's, the raw ``openai`` SDK or a framework on top of it,
talks HTTP to a chat-completions endpoint; this provider is that endpoint,
in process, behind ``primer.seam``. It answers ``POST .../chat/completions``
from the same script, ``ask(call(...))`` and ``say(...)``, one reply per
request, as a ``chat.completion`` body, or as server-sent
``chat.completion.chunk`` events when the request asks for a stream (paced
as the mock model paces them, on the run's virtual clock)::

    provider = ScriptedProvider([ask(call("weather_in", city="Paris")), say("Sunny.")], scenario="raw_sdk")

It reads nothing of what it is sent, and every exchange says so in its notes,
as the mock model's calls do. A request past the end of the script stops
the code (``ScriptExhausted``), and so does a request to any other path of
the provider: the book reads chat completions (the Responses API, the
OpenAI Agents SDK's default, is configured away in chapter 18).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from primer.errors import PrimerError, ScriptExhausted
from primer.models.mock import DEFAULT_PACING, MockReply, Pacing, stream_chunks, wire_usage
from primer.seam import Answer, Plain, Seam
from primer.streaming import DONE
from primer.trace import Note

__all__ = ["ScriptedProvider", "UnreadRequest"]

#: Where mock runs pretend the provider lives: a name that resolves nowhere.
MOCK_PROVIDER_URL = "https://provider.mock/v1"


class UnreadRequest(PrimerError):
    """The code asked the scripted provider for something other than a chat completion."""


@dataclass
class ScriptedProvider:
    """Answers chat-completions requests from a script, in order."""

    replies: Sequence[MockReply]
    #: Which scenario the script belongs to, for the errors that name it.
    scenario: str = "this scenario"
    pacing: Pacing = DEFAULT_PACING
    #: The seam it answers under (set by the runner): a fault stops the code through it.
    seam: Seam | None = None
    used: int = 0
    _stops: list[str] = field(default_factory=list)

    def answer(self, request: Plain) -> Answer:
        """The next scripted reply to one request."""
        if request.method != "POST" or not request.url.split("?")[0].rstrip("/").endswith("/chat/completions"):
            self._stop(
                UnreadRequest(
                    f"The code of {self.scenario} sent {request.method} {request.url.split('?')[0]} to the "
                    "scripted provider, which answers chat completions only (POST .../chat/completions): "
                    "configure the code for chat completions (the OpenAI Agents SDK: OpenAIChatCompletionsModel)."
                )
            )
        try:
            body = request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        if self.used >= len(self.replies):
            self._stop(
                ScriptExhausted(
                    f"The scripted provider of {self.scenario} was asked for reply {self.used + 1} "
                    f"but its script holds {len(self.replies)}: add a reply to the scenario's mock list, "
                    "or find why the code asks the model once more than the story does."
                )
            )
        scripted = self.replies[self.used]
        self.used += 1
        notes = _honest_notes(body)
        model = str(body.get("model") or "mock")
        reply_id = f"mock-{self.used}"
        if body.get("stream") is True:
            return self._streamed(scripted, reply_id, model, notes)
        message: dict[str, Any] = {"role": "assistant", "content": scripted.text}
        if scripted.reasoning:
            message["reasoning_content"] = scripted.reasoning
        if scripted.calls:
            message["tool_calls"] = [
                {
                    "id": f"mock_{self.used}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
                }
                for index, (name, arguments) in enumerate(scripted.calls)
            ]
        completion = {
            "id": reply_id,
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": scripted.finish_reason, "logprobs": None}],
        }
        if scripted.usage is not None:
            # Scripted counts (chapter 21), as a provider reports them.
            completion["usage"] = wire_usage(scripted.usage)
        content = json.dumps(completion, ensure_ascii=False).encode()
        return Answer(200, [("content-type", "application/json")], [(0.0, content)], notes=notes)

    async def answer_async(self, request: Plain) -> Answer:
        """The same, to async code."""
        return self.answer(request)

    def _streamed(self, scripted: MockReply, reply_id: str, model: str, notes: list[Note]) -> Answer:
        pacing = scripted.pacing or self.pacing
        chunks: list[tuple[float, bytes]] = []
        offset = 0.0
        for delay, chunk in zip(pacing.delays(), stream_chunks(scripted, self.used, reply_id, pacing), strict=False):
            offset += delay
            chunk["model"] = model
            chunks.append((offset * 1000, f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()))
        chunks.append((offset * 1000, f"data: {DONE}\n\n".encode()))
        notes.append(
            Note(
                label="stream simulated by the scripted provider",
                data={"events": len(chunks), "first_s": pacing.first, "every_s": pacing.every, "virtual_clock": True},
            )
        )
        headers = [("content-type", "text/event-stream")]
        return Answer(200, headers, chunks, first_byte_ms=0.0, notes=notes, took=offset)

    def _stop(self, error: PrimerError) -> None:
        if self.seam is None:
            raise error
        raise self.seam.stop(error)


def _honest_notes(body: dict[str, Any]) -> list[Note]:
    """What a mock owes the reader: it consulted neither the tools nor the context."""
    tools = _list(body.get("tools"))
    messages = _list(body.get("messages"))
    names = [
        tool["function"].get("name")
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]
    roles = [message.get("role") for message in messages if isinstance(message, dict)]
    return [
        Note(label="tools declared to the mock model", data={"names": names, "consulted": False}),
        Note(label="context ignored by the mock model", data={"messages": len(messages), "roles": roles}),
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
