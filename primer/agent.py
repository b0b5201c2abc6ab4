"""What one turn of any loop does: ask the model, then run the tools it named.

The loops in ``loop`` decide *when to stop*; this module is the part every
loop shares: send the context, append the reply, run each tool call, append
each tool's message. It records as it goes, into ``turns``, so whatever
happens mid-run (an exception in a tool, a provider failure) the turns so far
are kept.

Two declarations on a tool change how its call is run (chapter 14): a tool
that ``needs_approval`` runs only if the ``approver`` says yes (otherwise
nothing is sent, and the model is told it was refused), and a tool with
``untrusted_output`` has its result sent back marked as data.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from primer.approval import NO_APPROVER, Approver, Decision, question_for, refusal_message
from primer.clock import Clock
from primer.errors import ServiceFailed, ToolFailed, quoted
from primer.models.base import Model
from primer.redact import Redactor
from primer.service import ServiceClient
from primer.tools import Tool, ToolContext
from primer.trace import (
    Approval,
    Attempt,
    Backoff,
    ErrorInfo,
    Failure,
    Message,
    Timing,
    ToolCall,
    ToolRun,
    Turn,
    setup_total,
)
from primer.untrusted import as_data

__all__ = ["Agent", "message_for_model"]


# --8<-- [start:message_for_model]
def message_for_model(tool: str, failure: Failure, *, may_have_taken_effect: bool = False, attempts: int = 1) -> str:
    """What the model is told after a failed tool call: what to do next."""
    name = quoted(tool)
    if failure.caller_can_fix:
        return f"{name} rejected the arguments: {failure.message}. Correct them and call it again."
    if may_have_taken_effect:
        return (
            f"{name} did not confirm: {failure.message}. It may have taken effect. "
            "Do not call it again; say what is uncertain."
        )
    if failure.retryable:
        times = f", {attempts} times" if attempts > 1 else ""
        return f"{name} failed: {failure.message}{times}. It may work later. Answer without it."
    return f"{name} failed: {failure.message}. It will not succeed. Answer without it."


# --8<-- [end:message_for_model]


@dataclass
class Agent:
    """A model, its tools and the service they use, with the record of a run."""

    model: Model
    tools: Sequence[Tool[Any]]
    clock: Clock
    service: ServiceClient | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    redactor: Redactor = field(default_factory=Redactor)
    turns: list[Turn] = field(default_factory=list)
    #: Who is asked before a tool that ``needs_approval`` runs; with none, such a call is refused.
    approver: Approver | None = None

    def ask(self, context: list[Message]) -> Turn:
        """Send the context; record the call; append the reply to the context."""
        started = self.clock.now()
        record = self.model.complete(context, self.tools, self.settings)
        turn = Turn(number=len(self.turns) + 1, model_call=record)
        self.turns.append(turn)
        if record.reply is not None:
            context.append(record.reply)
        turn.timing = Timing(start_ms=started * 1000, total_ms=(self.clock.now() - started) * 1000)
        return turn

    def run_tools(self, turn: Turn, context: list[Message]) -> None:
        """Run every tool call of the turn's reply, appending each answer."""
        reply = turn.model_call.reply
        if reply is None:
            return
        start_ms = turn.timing.start_ms
        started = start_ms / 1000 if start_ms is not None else self.clock.now() - turn.timing.total_ms / 1000
        for tool_call in reply.tool_calls:
            run = self.run_tool(tool_call)
            turn.tools.append(run)
            context.append(Message(role="tool", content=run.message, tool_call_id=tool_call.id))
        turn.timing = Timing(start_ms=started * 1000, total_ms=(self.clock.now() - started) * 1000)

    def run_tool(self, tool_call: ToolCall) -> ToolRun:
        """Run one tool call; a failure becomes a message for the model."""
        started = self.clock.now()
        run = ToolRun(call_id=tool_call.id, name=tool_call.name, arguments=tool_call.arguments, message="")
        session = self.service.session() if self.service is not None else None
        may_have_taken_effect = False
        try:
            tool = self._find(tool_call)
            if tool.needs_approval and not self._approved(tool, tool_call, run):
                run.timing = Timing(start_ms=started * 1000, total_ms=(self.clock.now() - started) * 1000)
                return run
            # The author's code may quote what it should not (an echoed header, a setting).
            run.result = self.redactor.text(tool(tool_call.arguments, ToolContext(service=session)))
            run.message = as_data(tool.name, run.result) if tool.untrusted_output else run.result
        except ToolFailed as error:
            run.failure = error.failure
            may_have_taken_effect = isinstance(error, ServiceFailed) and error.may_have_taken_effect
        except Exception as error:  # noqa: BLE001 - recorded here; the loop ends the run on it (a bug, not a refusal)
            run.failure = Failure(
                message=self.redactor.text(f"{type(error).__name__}: {error}"),
                retryable=False,
                idempotent=False,
                caller_can_fix=False,
            )
            run.error = ErrorInfo(
                type=type(error).__name__,
                message=self.redactor.text(str(error)),
                traceback=self.redactor.text(traceback.format_exc()),
            )
        if session is not None and session.steps:
            run.steps = list(session.steps)
            run.service = self.service.name if self.service else None
        if run.failure is not None:
            if not run.steps:
                # Refused before anything went out: still one attempt, classified.
                run.steps = [Attempt(number=1, failure=run.failure)]
            run.message = message_for_model(
                tool_call.name,
                run.failure,
                may_have_taken_effect=may_have_taken_effect,
                attempts=len(run.attempts),
            )
        elapsed = (self.clock.now() - started) * 1000
        outside = session.outside_ms if session is not None and session.steps else None
        waited = sum(step.seconds for step in run.steps if isinstance(step, Backoff)) * 1000
        setup = setup_total(step.timing for step in run.attempts)
        run.timing = Timing(
            start_ms=started * 1000, total_ms=elapsed, outside_ms=outside, waited_ms=waited or None, setup_ms=setup
        )
        return run

    def _approved(self, tool: Tool[Any], tool_call: ToolCall, run: ToolRun) -> bool:
        """Ask before a call with side effects; a refusal is recorded, with what the model is told."""
        # Arguments first: nobody should be asked about a call that cannot run.
        tool.parse(tool_call.arguments)
        request = question_for(tool, tool_call)
        if self.approver is None:
            decision, by = Decision(approved=False), NO_APPROVER
        else:
            decision, by = self.approver.decide(request), self.approver.name
        # The question quotes the model's arguments, and a person may type anything:
        # both are recorded (and the reason sent on) through the same redaction as the rest.
        if decision.reason:
            decision = Decision(approved=decision.approved, reason=self.redactor.text(decision.reason))
        question = self.redactor.text(request.question)
        run.approval = Approval(question=question, approved=decision.approved, by=by, reason=decision.reason)
        if decision.approved:
            return True
        run.failure = Failure(
            message=f"not approved ({by})" + (f": {quoted(decision.reason)}" if decision.reason else ""),
            retryable=False,
            idempotent=False,
            caller_can_fix=False,
        )
        run.message = refusal_message(tool.name, decision, by)
        return False

    def _find(self, tool_call: ToolCall) -> Tool[Any]:
        for tool in self.tools:
            if tool.name == tool_call.name:
                if tool_call.raw_arguments is not None:
                    raise ToolFailed(
                        Failure(
                            message=f"the arguments {quoted(tool_call.raw_arguments)} are not a JSON object",
                            retryable=False,
                            idempotent=False,
                            caller_can_fix=True,
                        )
                    )
                return tool
        names = ", ".join(t.name for t in self.tools)
        raise ToolFailed(
            Failure(
                message=f"there is no such tool; the tools are {quoted(names)}",
                retryable=False,
                idempotent=False,
                caller_can_fix=True,
            )
        )
