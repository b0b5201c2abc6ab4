"""Handing the conversation to another agent (chapter 20).

A triage agent does not answer everything itself: it may hand the
conversation to a specialist, which has its own instructions and tools, and
from then on the specialist answers. The model decides when, by calling a
tool: each handoff is declared to it as one, ``transfer_to_orders``, as the
OpenAI Agents SDK declares its handoffs. Code decides what the specialist is
given, and that is the question this module makes visible:

* ``carries="history"``: the whole conversation so far (the customer's words,
  the handoff call and its answer), under the specialist's own system
  prompt. The Agents SDK's default.
* ``carries="brief"``: only what the triage agent wrote in the handoff's
  ``brief`` argument, as the specialist's question. Cheaper, and the
  specialist never sees the customer's own words.

``with_handoffs(triage, [Handoff(orders), Handoff(prices, carries="brief")])``
is a loop: chapter 3's, one turn at a time, with the tools of whichever
agent holds the conversation. Every model call carries a note naming that
agent; the first call after a handoff also notes who handed over and what
crossed. The run ends when the agent holding the conversation answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from primer.agent import Agent
from primer.errors import ChapterError
from primer.loop import Loop, one_turn
from primer.tools import Tool, ToolContext
from primer.trace import Ending, Message, Note
from primer.workflows import Step

__all__ = ["AGENT_NOTE", "HANDOFF_NOTE", "Handoff", "handoff_tool", "with_handoffs"]

#: The label of the note naming the agent that made a model call.
AGENT_NOTE = "agent"
#: The label of the note on the first call after a handoff: who handed over, and what crossed.
HANDOFF_NOTE = "handed over"


@dataclass(frozen=True)
class Handoff:
    """A specialist the triage agent may hand the conversation to, and what it is given."""

    to: Step
    carries: Literal["history", "brief"] = "history"

    @property
    def tool_name(self) -> str:
        """The tool the model calls to hand over: ``transfer_to_orders``."""
        return f"transfer_to_{self.to.name}"


def handoff_tool(handoff: Handoff) -> Tool[Any]:
    """The handoff as the model sees it: a tool named for the specialist, described by what it is for."""
    description = f"Hand the conversation to the {handoff.to.name} agent: {handoff.to.about or handoff.to.name}."
    fields: dict[str, Any] = {}
    if handoff.carries == "brief":
        description += " It sees only your brief, not the conversation."
        fields["brief"] = (str, Field(description=f"What the {handoff.to.name} agent needs to know, in full."))
    args: type[BaseModel] = create_model(
        handoff.tool_name,
        __config__=ConfigDict(title=handoff.tool_name, extra="forbid"),
        __doc__=description,
        **fields,
    )

    def hand_over(arguments: BaseModel, ctx: ToolContext) -> str:
        return f"transferred to {handoff.to.name}"

    return Tool(args=args, function=hand_over)


def _crossing(handoff: Handoff, context: list[Message], brief: str | None) -> list[Message]:
    """The specialist's context: its own system prompt, then what the handoff carries."""
    system = Message(role="system", content=handoff.to.system)
    if handoff.carries == "brief":
        return [system, Message(role="human", content=brief or "")]
    return [system, *(m for m in context if m.role != "system")]


def with_handoffs(triage: Step, handoffs: Sequence[Handoff]) -> Loop:
    """Triage holds the conversation until its model calls a handoff; then that specialist does."""
    names = [h.to.name for h in handoffs]
    if len(set(names)) != len(names) or triage.name in names:
        raise ChapterError(f"with_handoffs() needs agents with names of their own, not {[triage.name, *names]}.")
    tools = {h.tool_name: (h, handoff_tool(h)) for h in handoffs}

    def handing_off(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        current, held = triage, [Message(role="system", content=triage.system), *context[1:]]
        crossed: Note | None = None
        for _ in range(max_turns):
            offered = [*current.tools, *(t for _, t in tools.values())] if current is triage else [*current.tools]
            own = dataclasses.replace(agent, tools=offered)
            ending = one_turn(own, held)
            agent.settings = own.settings
            turn = agent.turns[-1]
            turn.model_call.notes.insert(0, Note(label=AGENT_NOTE, data={"agent": current.name}))
            if crossed is not None:
                turn.model_call.notes.insert(1, crossed)
                crossed = None
            taken = next((run for run in turn.tools if run.name in tools and run.failure is None), None)
            if taken is not None:
                handoff, _ = tools[taken.name]
                brief = taken.arguments.get("brief")
                held = _crossing(handoff, held, brief if isinstance(brief, str) else None)
                crossed = Note(
                    label=HANDOFF_NOTE,
                    data={"from": current.name, "carries": handoff.carries, "messages": len(held) - 1},
                )
                current = handoff.to
                continue
            if ending is not None:
                context[:] = held
                return ending.model_copy(update={"detail": f"answered by {current.name}"})
        context[:] = held
        return Ending(reason="turn_limit", detail=f"stopped after {max_turns} turns, held by {current.name}")

    return handing_off
