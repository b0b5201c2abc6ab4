"""primer: the small library the trace book teaches.

Messages and tools, a model interface (a scripted mock and a live
OpenAI-compatible client), a service client with attempts and backoff, the
agent loop, and the recorder that writes every run into one typed trace. It
knows nothing of MkDocs: the book machinery lives in ``primer.book`` and
``hooks/``, and imports this, never the other way round.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Eager: the function shares its module's name, and the module, once imported,
# would otherwise take the name's place.
from primer.inert import inert

if TYPE_CHECKING:
    from primer.agent import Agent, message_for_model
    from primer.clock import Clock, RealClock, VirtualClock
    from primer.code_scenario import CodeScenario, Reach
    from primer.errors import (
        ArgumentsRejected,
        ConfigError,
        NotFound,
        PrimerError,
        ScriptExhausted,
        ServiceFailed,
        ToolFailed,
        quoted,
    )
    from primer.loop import until_answer, until_no_tool_calls
    from primer.mock_service import GroceryService
    from primer.models import MockModel, MockReply, Model, ask, call, cut, say
    from primer.redact import Redactor
    from primer.runner import run_chapter, run_scenario
    from primer.scenario import SYSTEM, Scenario
    from primer.service import RetryPolicy, ServiceClient, ServiceScript
    from primer.services import Service
    from primer.settings import Settings
    from primer.tools import Tool, ToolContext, tool
    from primer.trace import SCHEMA_VERSION, ChapterRun, ScenarioRun

# Each public name's module, imported when the name is first used (PEP 562):
# `import primer.settings` (a book build with traces off, say) then costs that
# module, not the whole library.
_MODULES = {
    "Agent": "primer.agent",
    "ArgumentsRejected": "primer.errors",
    "ask": "primer.models",
    "call": "primer.models",
    "ChapterRun": "primer.trace",
    "Clock": "primer.clock",
    "CodeScenario": "primer.code_scenario",
    "ConfigError": "primer.errors",
    "cut": "primer.models",
    "GroceryService": "primer.mock_service",
    "message_for_model": "primer.agent",
    "MockModel": "primer.models",
    "MockReply": "primer.models",
    "Model": "primer.models",
    "NotFound": "primer.errors",
    "PrimerError": "primer.errors",
    "quoted": "primer.errors",
    "Reach": "primer.code_scenario",
    "RealClock": "primer.clock",
    "Redactor": "primer.redact",
    "RetryPolicy": "primer.service",
    "run_chapter": "primer.runner",
    "run_scenario": "primer.runner",
    "say": "primer.models",
    "Scenario": "primer.scenario",
    "ScenarioRun": "primer.trace",
    "SCHEMA_VERSION": "primer.trace",
    "ScriptExhausted": "primer.errors",
    "Service": "primer.services",
    "ServiceClient": "primer.service",
    "ServiceFailed": "primer.errors",
    "ServiceScript": "primer.service",
    "Settings": "primer.settings",
    "SYSTEM": "primer.scenario",
    "Tool": "primer.tools",
    "tool": "primer.tools",
    "ToolContext": "primer.tools",
    "ToolFailed": "primer.errors",
    "until_answer": "primer.loop",
    "until_no_tool_calls": "primer.loop",
    "VirtualClock": "primer.clock",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'primer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups find it directly
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])


__all__ = [
    "SCHEMA_VERSION",
    "SYSTEM",
    "Agent",
    "ArgumentsRejected",
    "ChapterRun",
    "Clock",
    "CodeScenario",
    "ConfigError",
    "GroceryService",
    "MockModel",
    "MockReply",
    "Model",
    "NotFound",
    "PrimerError",
    "Reach",
    "RealClock",
    "Redactor",
    "RetryPolicy",
    "Scenario",
    "ScenarioRun",
    "ScriptExhausted",
    "Service",
    "ServiceClient",
    "ServiceFailed",
    "ServiceScript",
    "Settings",
    "Tool",
    "ToolContext",
    "ToolFailed",
    "VirtualClock",
    "ask",
    "call",
    "cut",
    "inert",
    "message_for_model",
    "quoted",
    "run_chapter",
    "run_scenario",
    "say",
    "tool",
    "until_answer",
    "until_no_tool_calls",
]
