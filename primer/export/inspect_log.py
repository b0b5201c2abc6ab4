"""A chapter as an Inspect AI eval log: a sample per scenario, a model or tool event per step.

Inspect (``inspect view``, ``read_eval_log``) reads what the book ran as it
reads its own evaluations::

    eval log             the chapter in one mode: the task is the chapter
      sample             one scenario: its question (the input), transcript,
                         answer (the output), how it ended, token usage, times
        model event      each model call: context, tools, settings, output,
                         and the wire's last request and response (live)
        tool event       each tool call: arguments, what the model was sent
                         back, and an error when the call failed

A scenario of an evaluation (``primer.evaluate.repeated``: trials, each
checked) is a sample with an epoch per trial, scored: ``C`` when the trial
passed, ``I`` with the check that failed it as the explanation, the trial's
answer as the score's answer. The log's results carry the pass rate as the
``accuracy`` metric, and each scenario's own rate as its reduction. Other
scenarios have no score: the log records what happened, as the trace does.

The log is written from Inspect's published log schema (version 2), with the
standard library: a ``.json`` file, or Inspect's zipped ``.eval`` (a
``header.json``, a file per sample, their summaries and reductions). It
needs no extra: inspect-ai, with its 79 packages, is for reading the log,
not for writing it (the tests read every log back with ``read_eval_log``).
The events carry the moments the trace recorded (``started_at`` and each
part's ``start_ms``; mock runs are placed from the moment of the export)::

    write(run_chapter("ch16_evaluation"), Path("ch16.eval"))
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from primer.evaluate import TRIAL_NOTE, TrialResult, evaluation_of
from primer.export._runs import Placed, placed, provider_name
from primer.files import write_output
from primer.trace import ChapterRun, Failure, Message, ModelCall, ScenarioRun, ToolRun, Turn, Usage

__all__ = ["SCORER", "eval_log", "model_name", "write"]

#: The name of the score each trial of an evaluation gets (``sample.scores["check"]``).
SCORER = "check"

Json = dict[str, Any]

#: A provider's finish reason as Inspect's stop reasons name it.
_STOP = {"stop": "stop", "length": "max_tokens", "tool_calls": "tool_calls", "content_filter": "content_filter"}
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
#: The sampling settings Inspect's generate config names, by the name a scenario sets.
_CONFIG = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p", "seed": "seed"}


def model_name(call: ModelCall | None) -> str:
    """The model as Inspect names models: ``provider/model`` (``mockllm/model`` for the mock, or no call)."""
    if call is None or call.kind == "mock":
        return "mockllm/model"
    provider = provider_name(call)
    return f"openai/{call.model}" if provider == "openai" else f"openai-api/{provider}/{call.model}"


def eval_log(run: ChapterRun, *, start: datetime | None = None) -> Json:
    """The chapter run as an eval log (Inspect's JSON): the chapter is the task, each scenario a sample."""
    scenarios = list(placed((run,), start))
    first = next((turn.model_call for scenario in scenarios for turn in scenario.run.turns), None)
    model = model_name(first)
    samples = [sample for scenario in scenarios for sample in _samples(scenario, model)]
    began = min((scenario.began for scenario in scenarios), default=start or datetime.now(UTC))
    ended = max((scenario.moment(scenario.run.timing.total_ms) for scenario in scenarios), default=began)
    names = [scenario.run.name for scenario in scenarios]
    # The same run gives the same ids: a function of the chapter, the mode and the moment.
    digest = hashlib.sha256(f"{run.chapter}\x1f{run.mode}\x1f{began.isoformat()}".encode()).hexdigest()
    log: Json = {
        "version": 2,
        "status": "error" if any(scenario.run.ending.failed for scenario in scenarios) else "success",
        "eval": {
            "eval_id": digest[:22],
            "run_id": digest[22:44],
            "created": _iso(began),
            "task": run.chapter,
            "task_id": run.chapter,
            "task_version": 0,
            "task_description": f"The {run.mode} runs of the scenarios of {run.chapter}, exported from the trace book.",
            "dataset": {"name": run.chapter, "samples": len(names), "sample_ids": names},
            "model": model,
            "config": {"epochs": max((sample["epoch"] for sample in samples), default=1)},
            "metadata": {"mode": run.mode, "recorded_at": run.recorded_at, "source_hash": run.source_hash},
        },
        "plan": {"name": "trace book loop", "steps": [], "config": {}},
        "stats": {"started_at": _iso(began), "completed_at": _iso(ended), "model_usage": _usage_by_model(samples)},
        "samples": samples,
    }
    scored = [sample for sample in samples if SCORER in sample.get("scores", {})]
    if scored:
        log["results"] = _results(samples, scored)
        log["reductions"] = [{"scorer": SCORER, "reducer": "mean", "samples": _reductions(scored)}]
    return log


def write(run: ChapterRun, path: Path, *, start: datetime | None = None) -> Path:
    """Write the run's eval log to ``path``: Inspect's ``.json``, or its zipped ``.eval``, by the name.

    Written atomically (``primer.files.write_output``): a reader never finds half a log.
    """
    if path.suffix not in (".json", ".eval"):  # Inspect reads a log by its name's ending
        raise ValueError(
            f"An Inspect log is written as .json or .eval, not {path.name!r}: give -o NAME.json or NAME.eval."
        )
    log = eval_log(run, start=start)
    if path.suffix == ".json":
        data = _dumps(log, indent=2)
    else:
        zipped = io.BytesIO()
        _zipped(log, zipped)
        data = zipped.getvalue()
    write_output(path, data)
    return path


def _dumps(value: Any, indent: int | None = None) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=indent).encode()


def _zipped(log: Json, out: Any) -> None:
    """The ``.eval`` layout Inspect reads: the header (the log without samples), each sample, their summaries."""
    samples: list[Json] = log["samples"]
    header = {key: value for key, value in log.items() if key not in ("samples", "reductions")}
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for sample in samples:
            archive.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", _dumps(sample))
        archive.writestr("summaries.json", _dumps([_summary(sample) for sample in samples]))
        if "reductions" in log:
            archive.writestr("reductions.json", _dumps(log["reductions"]))
        archive.writestr("header.json", _dumps(header))


#: What a sample's summary (the list ``inspect view`` shows) keeps of the sample.
_SUMMARY = (
    "id",
    "epoch",
    "input",
    "target",
    "description",
    "metadata",
    "scores",
    "model_usage",
    "started_at",
    "completed_at",
    "total_time",
    "working_time",
    "error",
    "turn_count",
)


def _summary(sample: Json) -> Json:
    summary = {key: sample[key] for key in _SUMMARY if key in sample}
    error = sample.get("error")
    return summary | {
        "error": error["message"] if error else None,
        "completed": True,
        "message_count": len(sample["messages"]),
    }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _seconds(ms: float) -> float:
    return round(ms / 1000, 6)


# -- samples -------------------------------------------------------------------------------


def _samples(scenario: Placed, model: str) -> Iterator[Json]:
    """The scenario's sample: one, or one epoch per trial when it is an evaluation."""
    run = scenario.run
    trials = _trials(run)
    if not trials:
        yield _sample(scenario, model, run.turns, run.transcript, epoch=1)
        return
    for result, turns in trials:
        last = turns[-1].model_call
        transcript = [*last.context, *([last.reply] if last.reply is not None else [])]
        yield _sample(scenario, model, turns, transcript, epoch=result.number, result=result)


def _trials(run: ScenarioRun) -> list[tuple[TrialResult, list[Turn]]]:
    """An evaluation's trials, each with its turns: a trial ends at the turn whose model call carries its note."""
    results = evaluation_of(run).trials
    if not results:
        return []
    groups: list[list[Turn]] = [[]]
    for turn in run.turns:
        groups[-1].append(turn)
        if any(note.label.startswith(f"{TRIAL_NOTE} ") for note in turn.model_call.notes):
            groups.append([])
    return list(zip(results, groups, strict=False))


def _sample(
    scenario: Placed,
    model: str,
    turns: Sequence[Turn],
    transcript: Sequence[Message],
    *,
    epoch: int,
    result: TrialResult | None = None,
) -> Json:
    run = scenario.run
    tools = {tool.call_id: tool for turn in run.turns for tool in turn.tools}
    events: list[Json] = []
    usage: Json | None = None
    for turn in turns:
        events.append(_model_event(scenario, turn, model, tools))
        usage = _add(usage, _usage(turn.model_call.usage))
        events += [_tool_event(scenario, tool) for tool in turn.tools]
    last = next((turn.model_call for turn in reversed(turns) if turn.model_call.reply is not None), None)
    # A trial is the part of the scenario its turns took; a sample of a whole scenario, all of it.
    begins = (turns[0].timing.start_ms or 0.0) if result is not None else 0.0
    ends = (turns[-1].timing.end_ms or 0.0) if result is not None else run.timing.total_ms
    total_ms = ends - begins
    simulated = run.simulated_seconds if result is None else 0.0
    sample: Json = {
        "id": run.name,
        "epoch": epoch,
        "input": _input(transcript, model, tools),
        "target": "",
        "description": run.title,
        "messages": [_message(m, model, tools) for m in transcript],
        "output": _output(last, model) if last is not None else {"model": model, "choices": [], "completion": ""},
        "events": events,
        "model_usage": {model: usage} if usage is not None else {},
        "started_at": _iso(scenario.moment(begins)),
        "completed_at": _iso(scenario.moment(ends)),
        "total_time": _seconds(total_ms),
        "working_time": round(_seconds(total_ms) - simulated, 6),
        "metadata": {
            "mode": run.mode,
            "tools": run.tools,
            "settings": run.settings,
            "ending": run.ending.model_dump(),
            "simulated_seconds": run.simulated_seconds,
        },
        "turn_count": len(turns),
    }
    if result is not None:
        answer = transcript[-1].content or "" if transcript and transcript[-1].role == "ai" else ""
        sample["scores"] = {SCORER: _score(result, answer)}
    if run.ending.failed:
        detail = run.ending.detail or run.ending.label
        trace = run.error.traceback if run.error is not None and run.error.traceback else detail
        sample["error"] = {"message": detail, "traceback": trace, "traceback_ansi": trace}
    return sample


def _score(result: TrialResult, answer: str) -> Json:
    """A trial's verdict as an Inspect score: ``C`` or ``I``, and the check that decided it."""
    metadata: Json = {"turns": result.turns, "characters_sent": result.characters_sent}
    if result.input_tokens is not None:
        metadata |= {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens}
    return {
        "value": "C" if result.passed else "I",
        "answer": answer,
        "explanation": "every check passed" if result.passed else result.why,
        "metadata": metadata,
    }


def _results(samples: Sequence[Json], scored: Sequence[Json]) -> Json:
    """The run's metrics: the share of trials that passed, as Inspect's ``accuracy``."""
    passed = sum(sample["scores"][SCORER]["value"] == "C" for sample in scored)
    accuracy = {"name": "accuracy", "value": passed / len(scored), "params": {}}
    return {
        "total_samples": len(samples),
        "completed_samples": len(samples),
        "scores": [
            {
                "name": SCORER,
                "scorer": SCORER,
                "reducer": "mean",
                "scored_samples": len(scored),
                "unscored_samples": len(samples) - len(scored),
                "params": {},
                "metrics": {"accuracy": accuracy},
            }
        ],
    }


def _reductions(scored: Sequence[Json]) -> list[Json]:
    """Each scenario's pass rate over its trials (Inspect's ``mean`` reducer of ``C`` = 1, ``I`` = 0)."""
    rates: dict[str, list[int]] = {}
    for sample in scored:
        rates.setdefault(sample["id"], []).append(sample["scores"][SCORER]["value"] == "C")
    return [
        {"value": sum(marks) / len(marks), "sample_id": name, "explanation": f"{sum(marks)} of {len(marks)} passed"}
        for name, marks in rates.items()
    ]


def _input(transcript: Sequence[Message], model: str, tools: dict[str, ToolRun]) -> str | list[Json]:
    """What the sample was asked: the question, without the system prompt (Inspect's Input column)."""
    first = next((index for index, m in enumerate(transcript) if m.role == "ai"), len(transcript))
    asked = [m for m in transcript[:first] if m.role != "system"]
    if len(asked) == 1 and asked[0].role == "human":
        return asked[0].content or ""
    return [_message(m, model, tools) for m in asked]


# -- messages ---------------------------------------------------------------------------------


def _message(message: Message, model: str, tools: dict[str, ToolRun]) -> Json:
    role = _ROLES[message.role]
    if message.role == "tool":
        ran = tools.get(message.tool_call_id or "")
        return {
            "role": role,
            "content": message.content or "",
            "tool_call_id": message.tool_call_id,
            "function": ran.name if ran is not None else None,
            "error": _tool_error(ran.failure) if ran is not None and ran.failure is not None else None,
        }
    if message.role != "ai":
        return {"role": role, "content": message.content or ""}
    content: str | list[Json] = message.content or ""
    if message.reasoning:
        content = [{"type": "reasoning", "reasoning": message.reasoning}]
        if message.content:
            content.append({"type": "text", "text": message.content})
    calls = [
        {
            "id": call.id,
            "function": call.name,
            "arguments": call.arguments,
            "type": "function",
            "parse_error": f"not a JSON object: {call.raw_arguments}" if call.raw_arguments is not None else None,
        }
        for call in message.tool_calls
    ]
    return {"role": role, "content": content, "tool_calls": calls or None, "model": model}


def _usage(usage: Usage | None) -> Json | None:
    if usage is None:
        return None
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "input_tokens_cache_read": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
    }


def _add(total: Json | None, more: Json | None) -> Json | None:
    """Two usages added, field by field (a field one of them lacks counts as nothing)."""
    if total is None or more is None:
        return total or more
    return {key: (total.get(key) or 0) + (more.get(key) or 0) for key in {**total, **more}}


def _usage_by_model(samples: Sequence[Json]) -> Json:
    totals: Json = {}
    for sample in samples:
        for name, usage in sample["model_usage"].items():
            totals[name] = _add(totals.get(name), usage)
    return totals


def _output(call: ModelCall, model: str) -> Json:
    choices = []
    if call.reply is not None:
        stop = _STOP.get(call.finish_reason or "", "unknown")
        choices.append({"message": _message(call.reply, model, {}), "stop_reason": stop})
    return {
        "model": model,
        "choices": choices,
        "completion": (call.reply.content or "") if call.reply is not None else "",
        "usage": _usage(call.usage),
        "time": _seconds(call.timing.total_ms),
        "error": call.error.message if call.error is not None else None,
    }


def _config(settings: dict[str, Any]) -> Json:
    values = {field: settings[key] for key, field in _CONFIG.items() if key in settings}
    stop = settings.get("stop")
    if isinstance(stop, str):
        values["stop_seqs"] = [stop]
    elif isinstance(stop, list):
        values["stop_seqs"] = stop
    return values


# -- events -----------------------------------------------------------------------------------


def _model_event(scenario: Placed, turn: Turn, model: str, tools: dict[str, ToolRun]) -> Json:
    call = turn.model_call
    wire = None
    if call.exchanges:
        last = call.exchanges[-1]
        response = last.response
        wire = {
            "request": last.request.json_body if isinstance(last.request.json_body, dict) else {},
            "response": response.json_body if response is not None and isinstance(response.json_body, dict) else None,
            "error": last.failure is not None or None,
            "time": _seconds(last.timing.total_ms),
        }
    tool_choice = call.settings.get("tool_choice")
    retries = max(len({exchange.attempt for exchange in call.exchanges}) - 1, 0)
    return {
        "event": "model",
        "timestamp": _iso(scenario.moment(call.timing.start_ms)),
        "completed": _iso(scenario.moment(call.timing.end_ms)),
        "working_start": _seconds(call.timing.start_ms or 0.0),
        "working_time": _seconds(call.timing.total_ms),
        "model": model,
        "input": [_message(m, model, tools) for m in call.context],
        "tools": [
            {"name": tool.name, "description": tool.description, "parameters": _parameters(tool.parameters)}
            for tool in call.tools
        ],
        "tool_choice": tool_choice if tool_choice in ("auto", "none") else "auto",
        "config": _config(call.settings),
        "output": _output(call, model),
        "retries": retries or None,
        "error": call.error.message if call.error is not None else None,
        "call": wire,
        "metadata": {"turn": turn.number, "notes": [note.model_dump() for note in call.notes]} if call.notes else None,
    }


def _parameters(schema: dict[str, Any]) -> Json:
    """A tool's JSON schema as Inspect's tool parameters hold it: an object's properties, each a schema.

    Inspect's parameters have no ``$defs``: a property that refers into them
    (an enum pydantic wrote as a model of its own) gets the definition itself.
    """
    definitions = schema.get("$defs") if isinstance(schema.get("$defs"), dict) else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    return {
        "type": "object",
        "properties": {name: _inlined(value, definitions or {}) for name, value in (properties or {}).items()},
        "required": schema.get("required", []),
        "additionalProperties": schema.get("additionalProperties", False),
    }


def _inlined(value: Any, definitions: dict[str, Any], depth: int = 0) -> Any:
    """``value`` with each ``{"$ref": "#/$defs/NAME"}`` replaced by that definition (a recursive one, once)."""
    if isinstance(value, list):
        return [_inlined(item, definitions, depth) for item in value]
    if not isinstance(value, dict):
        return value
    reference = value.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        found = definitions.get(reference.removeprefix("#/$defs/"))
        rest = {key: item for key, item in value.items() if key != "$ref"}
        return _inlined({**found, **rest}, definitions, depth + 1) if isinstance(found, dict) and depth < 4 else rest
    return {key: _inlined(item, definitions, depth) for key, item in value.items()}


def _tool_event(scenario: Placed, run: ToolRun) -> Json:
    return {
        "event": "tool",
        "timestamp": _iso(scenario.moment(run.timing.start_ms)),
        "completed": _iso(scenario.moment((run.timing.start_ms or 0.0) + run.timing.total_ms)),
        "working_start": _seconds(run.timing.start_ms or 0.0),
        "working_time": _seconds(run.timing.total_ms),
        "type": "function",
        "id": run.call_id,
        "function": run.name,
        "arguments": run.arguments,
        "result": run.message,
        "events": [],
        "error": _tool_error(run.failure) if run.failure is not None else None,
        "failed": run.failure is not None or None,
        "metadata": {"service": run.service, "attempts": len(run.attempts)} if run.service else None,
    }


def _tool_error(failure: Failure) -> Json:
    """A failed call as Inspect's tool error: its type, from how it failed, and the message."""
    if failure.caller_can_fix:
        kind = "parsing"
    elif "in time" in failure.message or "deadline" in failure.message:
        kind = "timeout"
    elif failure.message.startswith("not approved"):
        kind = "approval"
    else:
        kind = "unknown"
    return {"type": kind, "message": failure.message}
