"""The agent loop, in the two forms the book teaches.

Both take the same turn (``Agent.ask`` then ``Agent.run_tools``); they differ
only in what they take as the signal to stop, which is the point of chapter 5:

* ``until_no_tool_calls`` stops when a reply asks for no tool. Simple, and
  blind to *why* the model stopped: a reply cut off by the token limit looks
  like an answer.
* ``until_answer`` reads the finish reason: ``stop`` is an answer,
  ``length`` is tokens exhausted (not an answer), ``tool_calls`` goes round.
  But a reply's tool calls are run whatever its finish reason says:
  OpenAI-compatible servers answer ``stop`` *with* tool calls when
  ``tool_choice`` names a function (chapter 12), and a call left unanswered
  would leave the context one the provider rejects.

A ``tool_choice`` that forces a call (``required``, or a named function) is
relaxed to ``auto`` once a turn has made the calls it forced
(``primer.tool_choice.relaxed``): forced on every turn, the model could never
answer.

Both stop at a turn limit, when the model call itself failed, and when a
tool raised an exception it did not mean to (a bug in the scenario's code is
the author's to fix: it ends the run rather than being handed to the model).
"""

from __future__ import annotations

from collections.abc import Callable

from primer.agent import Agent
from primer.tool_choice import forced, relaxed
from primer.trace import Ending, Message, Turn

__all__ = ["DEFAULT_MAX_TURNS", "Loop", "one_turn", "until_answer", "until_no_tool_calls"]

#: Enough for every scenario in the book; a loop without a limit is a bug.
DEFAULT_MAX_TURNS = 8

Loop = Callable[[Agent, list[Message], int], Ending]


def _failed(agent: Agent) -> Ending | None:
    call = agent.turns[-1].model_call
    if call.reply is None:
        detail = call.error.message if call.error else "the model returned nothing"
        reason = "scenario_error" if call.kind == "mock" else "provider_failure"
        return Ending(reason=reason, detail=detail)
    return None


def _broken(turn: Turn) -> Ending | None:
    for run in turn.tools:
        if run.error is not None:
            detail = f"tool {run.name} raised {run.error.type}: {run.error.message}"
            return Ending(reason="scenario_error", detail=detail)
    return None


def _run_tools(agent: Agent, turn: Turn, context: list[Message]) -> Ending | None:
    """Run the turn's calls; a forced tool choice has had its call, so the model decides from now on."""
    agent.run_tools(turn, context)
    if forced(agent.settings):
        agent.settings = relaxed(agent.settings)
    return _broken(turn)


def until_no_tool_calls(agent: Agent, context: list[Message], max_turns: int = DEFAULT_MAX_TURNS) -> Ending:
    """Go round while the model asks for tools; stop when it asks for none."""
    for _ in range(max_turns):
        turn = agent.ask(context)
        if failed := _failed(agent):
            return failed
        if not context[-1].tool_calls:
            return Ending(reason="no_tool_calls")
        if broken := _run_tools(agent, turn, context):
            return broken
    return Ending(reason="turn_limit", detail=f"stopped after {max_turns} turns")


def until_answer(agent: Agent, context: list[Message], max_turns: int = DEFAULT_MAX_TURNS) -> Ending:
    """Go round until the finish reason says the model has answered; run any tool calls first."""
    for _ in range(max_turns):
        turn = agent.ask(context)
        if failed := _failed(agent):
            return failed
        finish = turn.model_call.finish_reason
        if finish == "length":
            return Ending(reason="tokens_exhausted", finish_reason=finish)
        if finish == "content_filter":
            return Ending(reason="refused", finish_reason=finish)
        # "stop" with tool calls is not an answer yet: the calls need theirs.
        if finish == "stop" and not context[-1].tool_calls:
            return Ending(reason="answer_received", finish_reason=finish)
        if broken := _run_tools(agent, turn, context):
            return broken
    return Ending(reason="turn_limit", detail=f"stopped after {max_turns} turns")


def one_turn(agent: Agent, context: list[Message]) -> Ending | None:
    """One turn of ``until_no_tool_calls``: how it ended, or None when it ran tools and the loop goes round.

    For loops that change something between turns: the tools an MCP server
    lists (chapter 19), the agent holding a handoff (20), the checks around
    each answer (22).
    """
    ending = until_no_tool_calls(agent, context, 1)
    return None if ending.reason == "turn_limit" else ending
