"""Asking a human before a tool with side effects runs.

A tool that changes something outside the conversation (an order, a
payment, an email) can be declared ``needs_approval=True``. Before such a
call runs, the agent asks its *approver* a question, and the answer decides:

* approved: the call runs as usual;
* refused: nothing is run and nothing is sent to the service; the model is
  told the call was refused, and why, and not to call it again.

With no approver at all, a call that needs approval is refused: an agent
that cannot ask must not act. The trace records the question, the answer and
who gave it (``primer.trace.Approval``), next to the message the model was
sent. In the book's runs, mock and live alike, the human is played by a
script (``ScriptedApprover``) written in the scenario, in order::

    order_approved = Scenario(
        ...,
        tools=[replace(place_order, needs_approval=True)],
        approvals=[approve()],
    )
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from primer.errors import ScriptExhausted, quoted

if TYPE_CHECKING:
    from primer.tools import Tool
    from primer.trace import ToolCall

__all__ = [
    "NO_APPROVER",
    "ApprovalRequest",
    "Approver",
    "Decision",
    "ScriptedApprover",
    "approve",
    "question_for",
    "refusal_message",
    "refuse",
]

#: Who "answered" when nobody could be asked.
NO_APPROVER = "nobody (the agent has no approver)"


@dataclass(frozen=True)
class ApprovalRequest:
    """What the approver is asked about: one tool call, in words and as data."""

    tool: str
    arguments: dict[str, Any]
    question: str


@dataclass(frozen=True)
class Decision:
    """An approver's answer: yes or no, and why (shown to the model when it is no)."""

    approved: bool
    reason: str | None = None


def approve(reason: str | None = None) -> Decision:
    """A yes: the call may run."""
    return Decision(approved=True, reason=reason)


def refuse(reason: str) -> Decision:
    """A no, with the reason the model will be told."""
    return Decision(approved=False, reason=reason)


class Approver(Protocol):
    """Anything that answers approval requests; ``name`` says who, for the trace."""

    @property
    def name(self) -> str:
        """Who answers (``scripted approver``, a person's name)."""
        ...

    def decide(self, request: ApprovalRequest) -> Decision:
        """Approve or refuse one call."""
        ...


@dataclass
class ScriptedApprover:
    """Answers from a script, in order: the human of a scenario, mock or live.

    Asked more often than its script allows, it raises ``ScriptExhausted``:
    the scenario is missing an answer, which is the author's to add.
    """

    answers: Sequence[Decision]
    scenario: str = "this scenario"
    _used: int = 0

    @property
    def name(self) -> str:
        """Who answers: a script, and the trace says so."""
        return "scripted approver"

    @property
    def used(self) -> int:
        """How many answers were given so far."""
        return self._used

    def decide(self, request: ApprovalRequest) -> Decision:
        """The next scripted answer."""
        if self._used >= len(self.answers):
            raise ScriptExhausted(
                f"The approver of {self.scenario} was asked about {request.tool} (approval {self._used + 1}) "
                f"but its script holds {len(self.answers)}: add an answer to the scenario's approvals."
            )
        decision = self.answers[self._used]
        self._used += 1
        return decision


def question_for(tool: Tool[Any], call: ToolCall) -> ApprovalRequest:
    """The question put to the approver: the call as the model wrote it, and what the tool does."""
    question = f"Run {call.written()}? {tool.description}".strip()
    return ApprovalRequest(tool=call.name, arguments=dict(call.arguments), question=question)


def refusal_message(tool: str, decision: Decision, by: str) -> str:
    """What the model is told when a call was refused: not run, why, and what to do instead."""
    if by == NO_APPROVER:
        why = "it needs a person's approval and there is nobody to ask"
    else:
        why = "the user refused it" + (f": {quoted(decision.reason)}" if decision.reason else "")
    return f"{quoted(tool)} was not run: {why}. Do not call it again; tell the user it was not done."
