"""The one-line summaries of a trace, worded as the book prints them.

The terminal (``python -m primer run``) and the rendered page both use these,
so a line reads the same wherever it is seen::

    scenario service_is_busy · tools=place_order, price_of · 4.1ms (1.0s simulated) · 2 turns · ended: no_tool_calls
    turn 1 · 3.6ms · asked for: price_of
    model live · 1198.1ms (model provider 970.0 · library 228.0) · 416 in / 39 out · asked for: price_of
    tool price_of · 2.9ms (service 1.1 · library 1.8) · given: item=milk · attempts: 2 · returned: 1.20
"""

from __future__ import annotations

import json
from typing import Any

from primer.trace import ChapterRun, Ending, ModelCall, ScenarioRun, Timing, ToolRun, Turn, Usage

__all__ = [
    "SUMMARY_LIMIT",
    "chapter_line",
    "cut",
    "ending_line",
    "model_line",
    "scenario_line",
    "timing_text",
    "tool_line",
    "turn_line",
]

#: Characters of free text a summary line shows before cutting.
SUMMARY_LIMIT = 90


def cut(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Whitespace folded, then cut: ``text... (N more characters)``."""
    folded = " ".join(text.split())
    if len(folded) <= limit:
        return folded
    return f"{folded[:limit]}... ({len(folded) - limit} more characters)"


def timing_text(timing: Timing, outside: str | None = None) -> str:
    """``59.5ms``, or with the split: ``1198.1ms (model provider 970.0 · library 228.0)``."""
    text = f"{timing.total_ms:.1f}ms"
    if outside is not None and timing.outside_ms is not None:
        waited = f" · waited {timing.waited_ms:.1f}" if timing.waited_ms else ""
        text += f" ({outside} {timing.outside_ms:.1f}{waited} · library {timing.library_ms:.1f})"
    return text


def _usage(usage: Usage | None) -> list[str]:
    return [f"{usage.input_tokens} in / {usage.output_tokens} out"] if usage else []


def _outcome(call: ModelCall) -> list[str]:
    reply = call.reply
    if reply is None:
        return [f"failed: {cut(call.error.message)}" if call.error else "failed"]
    parts = []
    if reply.tool_calls:
        parts.append("asked for: " + ", ".join(c.name for c in reply.tool_calls))
    if reply.content and reply.content.strip():
        parts.append(f"responded with: {cut(reply.content)}")
    elif not reply.tool_calls:
        parts.append("responded with: nothing")
    return parts


def _settings(settings: dict[str, Any]) -> list[str]:
    return [f"{key}={value}" for key, value in settings.items()]


def chapter_line(run: ChapterRun) -> str:
    """``mock turns=9 · messages=22``."""
    return f"{run.mode} turns={run.turns} · messages={run.messages}"


def scenario_line(run: ScenarioRun) -> str:
    """The scenario's story in one line."""
    duration = timing_text(run.timing)
    if run.simulated_seconds:
        duration += f" ({run.simulated_seconds:g}s simulated)"
    turns = len(run.turns)
    parts = [
        f"scenario {run.name}",
        *([f"tools={', '.join(run.tools)}"] if run.tools else []),
        *_settings(run.settings),
        duration,
        f"{turns} turn{'s' if turns != 1 else ''}",
        f"ended: {run.ending.label}",
    ]
    return " · ".join(parts)


def turn_line(turn: Turn) -> str:
    """``turn 1 · 58.8ms · 416 in / 39 out · asked for: price_of``."""
    call = turn.model_call
    return " · ".join([f"turn {turn.number}", timing_text(turn.timing), *_usage(call.usage), *_outcome(call)])


def model_line(call: ModelCall) -> str:
    """``model live · 1198.1ms (model provider 970.0 · library 228.0) · ...``."""
    timing = timing_text(call.timing, "model provider" if call.kind == "live" else None)
    return " · ".join([f"model {call.kind}", timing, *_usage(call.usage), *_outcome(call)])


def tool_line(run: ToolRun) -> str:
    """``tool price_of · 55.6ms (service 0.1 · library 55.5) · given: item=milk · ...``."""
    parts = [f"tool {run.name}", timing_text(run.timing, "service")]
    if run.arguments:
        parts.append("given: " + ", ".join(f"{k}={_plain(v)}" for k, v in run.arguments.items()))
    attempts = len(run.attempts)
    if attempts > 1:
        parts.append(f"attempts: {attempts}")
    if run.failure is not None:
        parts.append(f"raised: {cut(run.failure.message)}")
    else:
        parts.append(f"returned: {cut(run.result or '')}")
    return " · ".join(parts)


def ending_line(ending: Ending) -> str:
    """``ended {"reason": "no_tool_calls"}`` (with the detail when there is one)."""
    data: dict[str, str] = {"reason": ending.label}
    if ending.detail:
        data["detail"] = ending.detail
    return f"ended {json.dumps(data, ensure_ascii=False)}"


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
