"""The trace of any code, rebuilt from what crossed the wire.

Everything an agent does that a reader wants to see crosses HTTP, so the
seam's crossings (``primer.seam``), in the order they were sent, are enough
to tell the story in the book's schema:

* each chat-completions exchange with the provider is a model call: the
  context it sent, the tools it declared, the settings it set (and the
  sampling parameters it left to the provider), the reply, its
  ``finish_reason``, the usage, the streamed events; a request sent again
  after a failed answer, unchanged, is the same call's next attempt;
* turns follow the model calls;
* the tool calls a reply asks for, and the results the next request carries
  back (``role: tool`` with the same ``tool_call_id``), are the turn's tool
  lines; the service exchanges made between the two are the tool's attempts
  (under the one tool that ran; when several ran, the wire cannot say which
  sent what, so they are kept under the first and a note says so);
* a service exchange made outside any tool call (before the first model
  call, or after an answer) is kept under a line of its own,
  ``(outside a tool call)``, so nothing that crossed is hidden;
* the ending comes from the last reply.

Nothing the wire does not say is invented: an attempt has no retry
classification (only primer's service client knows why it would retry),
a tool no error (the wire shows what the code sent back, not what it
raised). What the rebuild finds wrong, a tool result whose ``tool_call_id``
matches no call, is a ``WireStory`` problem that ends the run as a scenario
error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from primer.models.base import SAMPLING_PARAMETERS
from primer.models.live import InvalidReply, check_completion, read_completion
from primer.redact import Redactor
from primer.seam import PROVIDER, Crossing
from primer.streaming import Assembler, InvalidChunk
from primer.trace import (
    Attempt,
    DeclaredTool,
    Ending,
    ErrorInfo,
    Message,
    Mode,
    ModelCall,
    Note,
    Role,
    Timing,
    ToolCall,
    ToolRun,
    Turn,
    setup_total,
)

__all__ = ["OUTSIDE", "WireStory", "rebuild"]

#: The line service exchanges made outside any tool call are kept under.
OUTSIDE = "(outside a tool call)"

#: Request fields that are the context and the tools, not settings.
_NOT_SETTINGS = frozenset({"messages", "tools", "model"})

_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "human",
    "assistant": "ai",
    "tool": "tool",
}


@dataclass
class WireStory:
    """The turns rebuilt from the wire, and what in it was wrong."""

    turns: list[Turn] = field(default_factory=list)
    #: The final transcript: the last request's context and the last reply.
    transcript: list[Message] = field(default_factory=list)
    #: The declared tools' names, as the first request declared them.
    tools: list[str] = field(default_factory=list)
    #: The first request's settings.
    settings: dict[str, Any] = field(default_factory=dict)
    #: A fault the rebuild found (a tool result that answers no call).
    problem: str | None = None

    def ending(self) -> Ending:
        """How the story ended, from the last reply."""
        if self.problem is not None:
            return Ending(reason="scenario_error", detail=self.problem)
        call = self.turns[-1].model_call
        if call.reply is None:
            detail = call.error.message if call.error else "the last model call got no reply"
            return Ending(reason="scenario_error" if call.kind == "mock" else "provider_failure", detail=detail)
        finish = call.finish_reason
        if finish == "length":
            return Ending(reason="tokens_exhausted", finish_reason=finish)
        if finish == "content_filter":
            return Ending(reason="refused", finish_reason=finish)
        if not call.reply.tool_calls:
            return Ending(reason="answer_received", finish_reason=finish)
        return Ending(
            reason="answer_received",
            finish_reason=finish,
            detail="the code returned after running the tools, without sending their results back",
        )


def rebuild(crossings: Sequence[Crossing], mode: Mode, redactor: Redactor) -> WireStory:
    """The story the crossings tell, in the trace's schema."""
    story = WireStory()
    pending: list[Crossing] = []
    asked: set[str] = set()
    for crossing in crossings:
        if crossing.party != PROVIDER:
            pending.append(crossing)
            continue
        last = story.turns[-1].model_call if story.turns else None
        if last is not None and _again(last, crossing):
            crossing.exchange.attempt = len(last.exchanges) + 1
            last.exchanges.append(crossing.exchange)
            _read_answer(last, crossing, redactor)
            continue
        body = crossing.request.json_body if isinstance(crossing.request.json_body, dict) else {}
        context = [_message(m) for m in body.get("messages") or [] if isinstance(m, dict)]
        call = _model_call(crossing, body, context, mode, redactor)
        turn = Turn(number=len(story.turns) + 1, model_call=call)
        if story.turns:
            story.problem = story.problem or _answered(story.turns[-1], context, pending, asked)
        else:
            story.tools = [tool.name for tool in call.tools]
            story.settings = dict(call.settings)
            if pending:
                turn.tools.append(_outside(pending))
        pending = []
        story.turns.append(turn)
        if call.reply is not None:
            asked |= {tool_call.id for tool_call in call.reply.tool_calls}
        story.transcript = [*context, *([call.reply] if call.reply is not None else [])]
    if story.turns:
        _tools_of(story.turns[-1], {}, pending)
    _time_turns(story.turns)
    return story


def _again(last: ModelCall, crossing: Crossing) -> bool:
    """Whether a request repeats the last model call's after its answer failed: a retry."""
    previous = last.exchanges[-1]
    failed = previous.response is None or previous.response.status >= 400
    return failed and previous.request.json_body == crossing.request.json_body


def _message(wire: dict[str, Any]) -> Message:
    role = _ROLES.get(str(wire.get("role")), "human")
    calls = []
    for index, call in enumerate(wire.get("tool_calls") or []):
        if isinstance(call, dict) and isinstance(call.get("function"), dict):
            calls.append(_call(index, call))
    tool_call_id = wire.get("tool_call_id")
    return Message(
        role=role,
        content=_text(wire.get("content")),
        tool_calls=calls,
        tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
    )


def _call(index: int, call: dict[str, Any]) -> ToolCall:
    function = call["function"]
    arguments = function.get("arguments")
    call_id = call.get("id") if isinstance(call.get("id"), str) else f"call_{index}"
    name = str(function.get("name"))
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        parsed = json.loads(text) if text.strip() else {}
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return ToolCall(id=call_id, name=name, arguments=parsed)
    return ToolCall(id=call_id, name=name, raw_arguments=text)


def _text(content: Any) -> str | None:
    """A message's content as text: a string, or the text of its parts."""
    if content is None or isinstance(content, str):
        return content or None
    if isinstance(content, list):
        parts = [part.get("text") for part in content if isinstance(part, dict)]
        return "".join(part for part in parts if isinstance(part, str)) or None
    return json.dumps(content, ensure_ascii=False)


def _declared(tools: Any) -> list[DeclaredTool]:
    declared = []
    for tool in tools if isinstance(tools, list) else []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict):
            parameters = function.get("parameters")
            declared.append(
                DeclaredTool(
                    name=str(function.get("name")),
                    description=str(function.get("description") or ""),
                    parameters=parameters if isinstance(parameters, dict) else {},
                )
            )
    return declared


def _model_call(
    crossing: Crossing, body: dict[str, Any], context: list[Message], mode: Mode, redactor: Redactor
) -> ModelCall:
    exchange = crossing.exchange
    exchange.request.defaulted = [name for name in SAMPLING_PARAMETERS if name not in body]
    model = body.get("model")
    call = ModelCall(
        kind=mode,
        model=model if mode == "live" and isinstance(model, str) else "mock",
        context=context,
        tools=_declared(body.get("tools")),
        settings={key: value for key, value in body.items() if key not in _NOT_SETTINGS},
        exchanges=[exchange],
        notes=list(crossing.notes),
        timing=exchange.timing.model_copy(),
    )
    _read_answer(call, crossing, redactor)
    return call


def _read_answer(call: ModelCall, crossing: Crossing, redactor: Redactor) -> None:
    response = crossing.response
    call.timing = Timing(
        start_ms=call.exchanges[0].timing.start_ms,
        total_ms=sum(e.timing.total_ms for e in call.exchanges),
        outside_ms=sum(e.timing.outside_ms or 0.0 for e in call.exchanges),
        setup_ms=setup_total(e.timing for e in call.exchanges),
    )
    if response is None:
        failure = crossing.exchange.failure
        said = crossing.stopped or (failure.message if failure else "no answer came")
        call.error = ErrorInfo(type="TransportError", message=said)
        return
    if response.status >= 400:
        said = json.dumps(response.json_body, ensure_ascii=False) if response.json_body is not None else ""
        call.error = ErrorInfo(type=f"HTTP {response.status}", message=(said or response.text_body or "")[:400])
        return
    try:
        if response.stream is not None:
            assembler = Assembler()
            for event in response.stream.events:
                if event.data is not None:
                    assembler.add(event.data)
            data = check_completion(assembler.completion())
        else:
            data = check_completion(response.json_body)
    except (InvalidReply, InvalidChunk) as problem:
        call.error = ErrorInfo(type=type(problem).__name__, message=f"the answer holds no reply: {problem}")
        return
    call.error = None
    call.reply, call.finish_reason, call.usage = read_completion(data, redactor)


def _answered(turn: Turn, context: list[Message], pending: list[Crossing], asked: set[str]) -> str | None:
    """Give ``turn`` its tool lines from the results ``context`` carries; a result that answers no call."""
    results = {m.tool_call_id: m for m in context if m.role == "tool" and m.tool_call_id is not None}
    for call_id in results:
        if call_id not in asked:
            return (
                f"turn {turn.number + 1}'s request carries a tool result for tool_call_id {call_id!r}, "
                f"which no reply asked for (the calls asked for: {', '.join(sorted(asked)) or 'none'}): "
                "a provider rejects such a request; send each result with the id of the call it answers."
            )
    _tools_of(turn, results, pending)
    return None


def _tools_of(turn: Turn, results: dict[str, Message], pending: list[Crossing]) -> None:
    reply = turn.model_call.reply
    calls = reply.tool_calls if reply is not None else []
    if not calls:
        if pending:
            turn.tools.append(_outside(pending))
        return
    for index, call in enumerate(calls):
        result = results.get(call.id)
        run = ToolRun(
            call_id=call.id,
            name=call.name,
            arguments=call.arguments,
            result=result.content if result is not None else None,
            message=(result.content or "") if result is not None else "",
        )
        if index == 0 and pending:
            _attempts(run, pending)
            if len(calls) > 1:
                names = [c.name for c in calls]
                turn.model_call.notes.append(
                    Note(
                        label="service exchanges not told apart",
                        data={"calls": names, "exchanges": len(pending), "shown_under": names[0]},
                    )
                )
        turn.tools.append(run)


def _outside(pending: list[Crossing]) -> ToolRun:
    run = ToolRun(call_id="", name=OUTSIDE, message="")
    _attempts(run, pending)
    return run


def _attempts(run: ToolRun, crossings: list[Crossing]) -> None:
    for number, crossing in enumerate(crossings, 1):
        exchange = crossing.exchange
        run.steps.append(
            Attempt(
                number=number,
                request=exchange.request,
                response=exchange.response,
                failure=exchange.failure,
                timing=exchange.timing,
            )
        )
    first = urlsplit(crossings[0].request.url)
    run.service = f"{first.scheme}://{first.netloc}"
    start = crossings[0].exchange.timing.start_ms or 0.0
    end = max((c.exchange.timing.end_ms or start) for c in crossings)
    outside = sum(c.exchange.timing.outside_ms or 0.0 for c in crossings)
    setup = setup_total(c.exchange.timing for c in crossings)
    run.timing = Timing(start_ms=start, total_ms=end - start, outside_ms=outside, setup_ms=setup)


def _time_turns(turns: list[Turn]) -> None:
    """A turn lasts from its model call to the next one's (its tools between)."""
    for turn, after in zip(turns, [*turns[1:], None], strict=False):
        start = turn.model_call.timing.start_ms or 0.0
        ends = [turn.model_call.timing.end_ms or start, *(tool.timing.end_ms or start for tool in turn.tools)]
        end = max(ends)
        if after is not None and after.model_call.timing.start_ms is not None:
            end = max(end, after.model_call.timing.start_ms)
        turn.timing = Timing(start_ms=start, total_ms=end - start)
        # What the calls and tools leave of the turn is the code's that made them (microseconds: as Timing keeps).
        inside = turn.model_call.timing.total_ms + sum(tool.timing.total_ms for tool in turn.tools)
        turn.code_ms = round(max(turn.timing.total_ms - inside, 0.0), 3)
