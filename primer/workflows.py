"""Workflows: fixed paths through model calls, built from the same loop.

An agent decides its own path: the model picks the next tool, turn after
turn. A *workflow* is a path the programmer wrote: each ``Step`` is one model
with its own system prompt and tools, run by an ordinary loop, and plain code
decides which step comes next. Three shapes, each a ``Loop`` a scenario can
use like ``until_no_tool_calls``:

* ``chain(a, b)``: each step's answer is the next step's question.
* ``routing(routes, default=...)``: one model call sorts the question into
  a route (one word), then that route's step answers it.
* ``evaluator_optimizer(writer, evaluator)``: the writer drafts, the
  evaluator answers ``PASS`` or says what to fix, and the writer tries again,
  a set number of rounds at most.

Every step's model calls go into the same run, one turn after another, each
with a note naming its workflow and step, so the trace shows the whole path.
Each step starts a fresh context (its system prompt and its question); at
the end the run's transcript is the last step's context. The scenario's own
system prompt is not sent: each step has its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from primer.agent import Agent
from primer.errors import ChapterError, quoted
from primer.loop import Loop, until_no_tool_calls
from primer.tools import Tool
from primer.trace import Ending, Message, Note

__all__ = [
    "ACCEPT",
    "STEP_NOTE",
    "Step",
    "StepResult",
    "chain",
    "evaluator_optimizer",
    "router_prompt",
    "routing",
    "run_step",
]

#: The label of the note each step's model calls carry.
STEP_NOTE = "workflow step"

#: Endings after which a workflow cannot go on: the step gave no answer.
_STOPS = frozenset({"scenario_error", "provider_failure", "turn_limit", "tokens_exhausted", "refused"})


@dataclass(frozen=True)
class Step:
    """One model-backed step: a name, a system prompt, its tools and the loop that runs it."""

    name: str
    system: str
    tools: Sequence[Tool[Any]] = ()
    loop: Loop = until_no_tool_calls
    #: What the step is for, in a few words (a router lists it).
    about: str = ""


@dataclass(frozen=True)
class StepResult:
    """How a step ended, its answer, and its whole context."""

    step: str
    ending: Ending
    context: list[Message]

    @property
    def answer(self) -> str:
        """The step's last reply text ("" when it ended without one)."""
        last = self.context[-1]
        return (last.content or "").strip() if last.role == "ai" else ""

    @property
    def stopped(self) -> bool:
        """Whether the step ended without an answer to go on with."""
        return self.ending.reason in _STOPS


def run_step(
    agent: Agent,
    step: Step,
    prompt: str,
    max_turns: int,
    *,
    workflow: str,
    context: list[Message] | None = None,
) -> StepResult:
    """Run one step on ``prompt``: a fresh context, or ``context`` continued with it as a human message."""
    # Same model, clock, service and record as the run; only the tools differ.
    own = dataclasses.replace(agent, tools=list(step.tools))
    if context is None:
        context = [Message(role="system", content=step.system)]
    context.append(Message(role="human", content=prompt))
    first = len(agent.turns)
    ending = step.loop(own, context, max_turns)
    for turn in agent.turns[first:]:
        turn.model_call.notes.append(Note(label=STEP_NOTE, data={"workflow": workflow, "step": step.name}))
    return StepResult(step=step.name, ending=ending, context=context)


def _question(context: list[Message]) -> str:
    for message in reversed(context):
        if message.role == "human" and message.content:
            return message.content
    raise ChapterError("A workflow needs a question: the scenario's prompt is empty.")


def _stopped(result: StepResult, context: list[Message]) -> Ending:
    context[:] = result.context
    detail = f"step {result.step} ended {result.ending.label}" + (
        f": {result.ending.detail}" if result.ending.detail else ""
    )
    return Ending(reason=result.ending.reason, finish_reason=result.ending.finish_reason, detail=detail)


def _ended(result: StepResult, context: list[Message], detail: str) -> Ending:
    context[:] = result.context
    return Ending(reason=result.ending.reason, finish_reason=result.ending.finish_reason, detail=detail)


def chain(*steps: Step) -> Loop:
    """Each step answers the one before: the first gets the question, the last one's answer is the answer."""
    if not steps:
        raise ChapterError("chain() needs at least one step.")

    def chained(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        prompt = _question(context)
        result = None
        for step in steps:
            result = run_step(agent, step, prompt, max_turns, workflow="chain")
            if result.stopped:
                return _stopped(result, context)
            prompt = result.answer
        assert result is not None  # at least one step, checked above
        return _ended(result, context, f"chained {' → '.join(s.name for s in steps)}")

    return chained


def router_prompt(routes: Mapping[str, Step]) -> str:
    """The router's system prompt: answer with one word, the name of a route."""
    lines = "\n".join(f"- {name}: {step.about or step.name}" for name, step in routes.items())
    return (
        "You sort a customer's message for a grocery shop. Answer with one word, the name of the route "
        f"that should handle it, and nothing else. The routes:\n{lines}"
    )


def _route_named(answer: str, routes: Mapping[str, Step]) -> str | None:
    word = answer.strip().strip(".!\"'`*").lower()
    return word if word in routes else None


def routing(routes: Mapping[str, Step], *, default: str) -> Loop:
    """A model call picks a route by name; that route's step answers. An answer naming none takes ``default``."""
    if default not in routes:
        raise ChapterError(f"routing(default={default!r}) names no route. The routes are: {', '.join(routes)}.")
    router = Step(name="router", system=router_prompt(routes))

    def routed(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        question = _question(context)
        sorted_ = run_step(agent, router, question, max_turns, workflow="routing")
        if sorted_.stopped:
            return _stopped(sorted_, context)
        named = _route_named(sorted_.answer, routes)
        chosen = named or default
        result = run_step(agent, routes[chosen], question, max_turns, workflow="routing")
        if result.stopped:
            return _stopped(result, context)
        detail = f"routed to {chosen}"
        if named is None:
            detail += f": the router answered {quoted(sorted_.answer)}, which names no route, so the default"
        return _ended(result, context, detail)

    return routed


#: The evaluator's word for a draft that does what was asked.
ACCEPT = "PASS"


def evaluator_optimizer(writer: Step, evaluator: Step, *, rounds: int = 3) -> Loop:
    """The writer drafts, the evaluator answers ``PASS`` or what to fix, for ``rounds`` rounds at most.

    The writer keeps its context: each round's feedback arrives in it as a
    human message, after its last draft. The last draft stands when no
    round passed, and the ending's detail says so.
    """
    if rounds < 1:
        raise ChapterError(f"evaluator_optimizer(rounds={rounds}) needs at least one round.")

    def optimised(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        task = _question(context)
        prompt, drafting = task, None
        draft = None
        for number in range(1, rounds + 1):
            draft = run_step(agent, writer, prompt, max_turns, workflow="evaluator-optimizer", context=drafting)
            if draft.stopped:
                return _stopped(draft, context)
            drafting = draft.context
            verdict = run_step(
                agent,
                evaluator,
                f"The task:\n{task}\n\nThe draft:\n{draft.answer}",
                max_turns,
                workflow="evaluator-optimizer",
            )
            if verdict.stopped:
                return _stopped(verdict, context)
            if verdict.answer.upper().startswith(ACCEPT):
                return _ended(draft, context, f"accepted in round {number}")
            prompt = f"A reviewer read your draft and said:\n{verdict.answer}\n\nWrite it again."
        assert draft is not None  # at least one round, checked above
        return _ended(draft, context, f"not accepted in {rounds} rounds: the last draft stands")

    return optimised
