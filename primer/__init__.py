"""primer: the small library the trace book teaches.

Messages and tools, a model interface (a scripted mock and a live
OpenAI-compatible client), a service client with attempts and backoff, the
agent loop, and the recorder that writes every run into one typed trace. It
knows nothing of MkDocs: the book machinery lives in ``primer.book`` and
``hooks/``, and imports this, never the other way round.
"""

from primer.agent import Agent, message_for_model
from primer.clock import Clock, RealClock, VirtualClock
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
from primer.inert import inert
from primer.loop import until_answer, until_no_tool_calls
from primer.mock_service import GroceryService
from primer.models import MockModel, MockReply, Model, ask, call, cut, say
from primer.redact import Redactor
from primer.runner import run_chapter, run_scenario
from primer.scenario import SYSTEM, Scenario
from primer.service import RetryPolicy, ServiceClient, ServiceScript
from primer.settings import Settings
from primer.tools import Tool, ToolContext, tool
from primer.trace import SCHEMA_VERSION, ChapterRun, ScenarioRun

__all__ = [
    "SCHEMA_VERSION",
    "SYSTEM",
    "Agent",
    "ArgumentsRejected",
    "ChapterRun",
    "Clock",
    "ConfigError",
    "GroceryService",
    "MockModel",
    "MockReply",
    "Model",
    "NotFound",
    "PrimerError",
    "RealClock",
    "Redactor",
    "RetryPolicy",
    "Scenario",
    "ScenarioRun",
    "ScriptExhausted",
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
