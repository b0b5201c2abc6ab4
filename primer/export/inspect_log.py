"""A chapter as an Inspect AI eval log: a sample per scenario, a model or tool event per step.

Inspect (``inspect view``, ``read_eval_log``) reads what the book ran as it
reads its own evaluations::

    EvalLog              the chapter in one mode: the task is the chapter
      EvalSample         one scenario: its prompt, transcript, final output,
                         how it ended (metadata), token usage, times
        ModelEvent       each model call: context, tools, settings, output,
                         and the wire's last request and response (live)
        ToolEvent        each tool call: arguments, what the model was sent
                         back, and an error when the call failed

A scenario has no target and nothing is scored: the log records what
happened, as the trace does. The events carry the moments the trace
recorded (``started_at`` and each part's ``start_ms``; mock runs are placed
from the moment of the export). Needs the ``inspect`` extra:
``pip install 'trace-book[inspect]'``::

    write(run_chapter("ch09_who_retries"), Path("ch09.json"))
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from primer.errors import MissingExtra
from primer.export._runs import Placed, placed, provider_name
from primer.trace import ChapterRun, Failure, Message, ModelCall, ToolRun, Turn, Usage

try:
    from inspect_ai.event import Event, ModelEvent, ToolEvent
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalError,
        EvalLog,
        EvalPlan,
        EvalSample,
        EvalSpec,
        EvalStats,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessage,
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
        ContentReasoning,
        ContentText,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.model import ModelCall as WireCall
    from inspect_ai.tool import ToolCall, ToolCallError, ToolInfo, ToolParams
except ImportError as missing:
    raise MissingExtra("The Inspect AI export", "inspect", missing) from None

__all__ = ["eval_log", "model_name", "write"]

StopReason = Literal["stop", "max_tokens", "model_length", "tool_calls", "content_filter", "unknown"]
_STOP: dict[str, StopReason] = {
    "stop": "stop",
    "length": "max_tokens",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
}


def model_name(call: ModelCall | None) -> str:
    """The model as Inspect names models: ``provider/model`` (``mockllm/model`` for the mock, or no call)."""
    if call is None or call.kind == "mock":
        return "mockllm/model"
    provider = provider_name(call)
    return f"openai/{call.model}" if provider == "openai" else f"openai-api/{provider}/{call.model}"


def eval_log(run: ChapterRun, *, start: datetime | None = None) -> EvalLog:
    """The chapter run as an eval log: the chapter is the task, each scenario a sample."""
    scenarios = list(placed((run,), start))
    first = next((turn.model_call for scenario in scenarios for turn in scenario.run.turns), None)
    model = model_name(first)
    samples = [_sample(scenario, model) for scenario in scenarios]
    began = min((scenario.began for scenario in scenarios), default=start or datetime.now(UTC))
    ended = max((scenario.moment(scenario.run.timing.total_ms) for scenario in scenarios), default=began)
    names = [scenario.run.name for scenario in scenarios]
    # The same run gives the same ids: a function of the chapter, the mode and the moment.
    digest = hashlib.sha256(f"{run.chapter}\x1f{run.mode}\x1f{began.isoformat()}".encode()).hexdigest()
    return EvalLog(
        version=2,
        status="error" if any(scenario.run.ending.failed for scenario in scenarios) else "success",
        eval=EvalSpec(
            eval_id=digest[:22],
            run_id=digest[22:44],
            created=_iso(began),
            task=run.chapter,
            task_id=run.chapter,
            task_description=f"The {run.mode} runs of the scenarios of {run.chapter}, exported from the trace book.",
            dataset=EvalDataset(name=run.chapter, samples=len(samples), sample_ids=names),
            model=model,
            config=EvalConfig(epochs=1),
            metadata={"mode": run.mode, "recorded_at": run.recorded_at, "source_hash": run.source_hash},
        ),
        plan=EvalPlan(name="trace book loop"),
        stats=EvalStats(started_at=_iso(began), completed_at=_iso(ended), model_usage=_usage_by_model(samples)),
        samples=samples,
    )


def write(run: ChapterRun, path: Path, *, start: datetime | None = None) -> Path:
    """Write the run's eval log to ``path`` (``.json`` or Inspect's zipped ``.eval``, by the name)."""
    write_eval_log(eval_log(run, start=start), path, format="json" if path.suffix == ".json" else "eval")
    return path


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _usage_by_model(samples: Sequence[EvalSample]) -> dict[str, ModelUsage]:
    totals: dict[str, ModelUsage] = {}
    for sample in samples:
        for name, usage in sample.model_usage.items():
            totals[name] = totals[name] + usage if name in totals else usage
    return totals


def _sample(scenario: Placed, model: str) -> EvalSample:
    run = scenario.run
    events: list[Event] = []
    usage: ModelUsage | None = None
    for turn in run.turns:
        event = _model_event(scenario, turn, model)
        events.append(event)
        if event.output.usage is not None:
            usage = event.output.usage if usage is None else usage + event.output.usage
        events += [_tool_event(scenario, tool) for tool in turn.tools]
    last = next((turn.model_call for turn in reversed(run.turns) if turn.model_call.reply is not None), None)
    output = _output(last, model) if last is not None else ModelOutput(model=model)
    ended = scenario.moment(run.timing.total_ms)
    error = None
    if run.ending.failed:
        detail = run.ending.detail or run.ending.label
        trace = run.error.traceback if run.error is not None and run.error.traceback else detail
        error = EvalError(message=detail, traceback=trace, traceback_ansi=trace)
    return EvalSample(
        id=run.name,
        epoch=1,
        input=[_message(m, model) for m in run.transcript[: _first_reply(run.transcript)]],
        target="",
        description=run.title,
        messages=[_message(m, model) for m in run.transcript],
        output=output,
        events=events,
        model_usage={model: usage} if usage is not None else {},
        started_at=_iso(scenario.began),
        completed_at=_iso(ended),
        total_time=round(run.timing.total_ms / 1000, 6),
        working_time=round(run.timing.total_ms / 1000 - run.simulated_seconds, 6),
        metadata={
            "mode": run.mode,
            "tools": run.tools,
            "settings": run.settings,
            "ending": run.ending.model_dump(),
            "simulated_seconds": run.simulated_seconds,
        },
        error=error,
        turn_count=len(run.turns),
    )


def _first_reply(transcript: Sequence[Message]) -> int:
    return next((index for index, message in enumerate(transcript) if message.role == "ai"), len(transcript))


def _message(message: Message, model: str) -> ChatMessage:
    if message.role == "system":
        return ChatMessageSystem(content=message.content or "")
    if message.role == "human":
        return ChatMessageUser(content=message.content or "")
    if message.role == "tool":
        return ChatMessageTool(content=message.content or "", tool_call_id=message.tool_call_id)
    content: list[ContentText | ContentReasoning] = []
    if message.reasoning:
        content.append(ContentReasoning(reasoning=message.reasoning))
    if message.content:
        content.append(ContentText(text=message.content))
    calls = [
        ToolCall(
            id=call.id,
            function=call.name,
            arguments=call.arguments,
            parse_error=f"not a JSON object: {call.raw_arguments}" if call.raw_arguments is not None else None,
        )
        for call in message.tool_calls
    ]
    return ChatMessageAssistant(
        content=content if message.reasoning else (message.content or ""),
        tool_calls=calls or None,
        model=model,
    )


def _usage(usage: Usage | None) -> ModelUsage | None:
    if usage is None:
        return None
    return ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        input_tokens_cache_read=usage.cached_tokens,
        reasoning_tokens=usage.reasoning_tokens,
    )


def _output(call: ModelCall, model: str) -> ModelOutput:
    choices = []
    if call.reply is not None:
        message = _message(call.reply, model)
        if isinstance(message, ChatMessageAssistant):
            choices.append(
                ChatCompletionChoice(message=message, stop_reason=_STOP.get(call.finish_reason or "", "unknown"))
            )
    return ModelOutput(
        model=model,
        choices=choices,
        usage=_usage(call.usage),
        time=round(call.timing.total_ms / 1000, 6),
        error=call.error.message if call.error is not None else None,
    )


def _config(settings: dict[str, Any]) -> GenerateConfig:
    known = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "seed": "seed"}
    values = {field: settings[key] for key, field in known.items() if key in settings}
    if isinstance(settings.get("stop"), str):
        values["stop_seqs"] = [settings["stop"]]
    elif isinstance(settings.get("stop"), list):
        values["stop_seqs"] = settings["stop"]
    return GenerateConfig.model_validate(values)


def _model_event(scenario: Placed, turn: Turn, model: str) -> ModelEvent:
    call = turn.model_call
    wire = None
    if call.exchanges:
        last = call.exchanges[-1]
        response = last.response
        wire = WireCall(
            request=last.request.json_body if isinstance(last.request.json_body, dict) else {},
            response=response.json_body if response is not None and isinstance(response.json_body, dict) else None,
            error=last.failure is not None or None,
            time=round(last.timing.total_ms / 1000, 6),
        )
    tool_choice = call.settings.get("tool_choice")
    return ModelEvent(
        timestamp=scenario.moment(call.timing.start_ms),
        completed=scenario.moment(call.timing.end_ms),
        working_start=round((call.timing.start_ms or 0.0) / 1000, 6),
        working_time=round(call.timing.total_ms / 1000, 6),
        model=model,
        input=[_message(m, model) for m in call.context],
        tools=[
            ToolInfo(name=tool.name, description=tool.description, parameters=_parameters(tool.parameters))
            for tool in call.tools
        ],
        tool_choice=tool_choice if tool_choice in ("auto", "none") else "auto",
        config=_config(call.settings),
        output=_output(call, model),
        retries=max(len({exchange.attempt for exchange in call.exchanges}) - 1, 0) or None,
        error=call.error.message if call.error is not None else None,
        call=wire,
        metadata={"turn": turn.number, "notes": [note.model_dump() for note in call.notes]} if call.notes else None,
    )


def _parameters(schema: dict[str, Any]) -> ToolParams:
    try:
        return ToolParams.model_validate(schema)
    except ValueError:
        # A schema Inspect cannot hold (a $ref into $defs, say) keeps its shape loosely.
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return ToolParams.model_validate({"properties": {name: {} for name in properties or {}}})


def _tool_event(scenario: Placed, run: ToolRun) -> ToolEvent:
    start = scenario.moment(run.timing.start_ms)
    return ToolEvent(
        timestamp=start,
        completed=start + timedelta(milliseconds=run.timing.total_ms),
        working_start=round((run.timing.start_ms or 0.0) / 1000, 6),
        working_time=round(run.timing.total_ms / 1000, 6),
        id=run.call_id,
        function=run.name,
        arguments=run.arguments,
        result=run.message,
        error=_tool_error(run.failure) if run.failure is not None else None,
        failed=run.failure is not None or None,
        metadata={"service": run.service, "attempts": len(run.attempts)} if run.service else None,
    )


def _tool_error(failure: Failure) -> ToolCallError:
    if failure.caller_can_fix:
        return ToolCallError(type="parsing", message=failure.message)
    if "in time" in failure.message or "deadline" in failure.message:
        return ToolCallError(type="timeout", message=failure.message)
    if failure.message.startswith("not approved"):
        return ToolCallError(type="approval", message=failure.message)
    return ToolCallError(type="unknown", message=failure.message)
