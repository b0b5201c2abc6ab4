"""Sending less than the whole history: trimming it, or summarising it.

Every turn resends the whole context (chapter 4), so a long run pays for its
early messages again and again, and a long enough one no longer fits the
model's context window. ``with_history`` is the loop of chapter 3 with one
change: before each turn, a ``History`` decides what of the conversation is
sent. The transcript still keeps everything; only what the model reads
shrinks, and each turn's *context sent* in the trace shows exactly what it
read.

* ``keep_last(n)`` sends the start (the system prompt and the question) and
  the last ``n`` messages. Cheap, and forgetful: what was cut is gone.
* ``summarise_over(characters, keep=n, summariser=step)``: when what would be
  sent passes ``characters``, one model call (the ``summariser`` step, its
  own turn in the trace) writes a summary of the messages between the start
  and the last ``n``, and that summary is sent in their place from then on.

Neither keeps a tool's answer without the call that asked for it: providers
refuse a ``tool`` message whose call they were not sent, so a cut that would
fall between them moves back to the call.

Both change the start of what is sent, which is the part a provider's prompt
cache can reuse (chapter 17): the savings of a shorter context are paid for,
in part, by cache misses.
"""

from __future__ import annotations

from collections.abc import Callable

from primer.agent import Agent
from primer.errors import ChapterError
from primer.loop import Loop
from primer.trace import Ending, Message
from primer.workflows import Step, run_step

__all__ = ["SUMMARY_PREFIX", "History", "head_of", "keep_last", "summarise_over", "with_history"]

#: What a summary message starts with, so the model (and a reader) knows what it is.
SUMMARY_PREFIX = "Earlier in this conversation, summarised:"

#: Given the agent, what would be sent and the turn limit: what is sent.
History = Callable[[Agent, list[Message], int], list[Message]]


def head_of(messages: list[Message]) -> int:
    """How many messages form the start that is always sent: leading system messages and the first question."""
    index = 0
    while index < len(messages) and messages[index].role == "system":
        index += 1
    return index + 1 if index < len(messages) and messages[index].role == "human" else index


def _cut(messages: list[Message], keep: int) -> int:
    """Where the kept tail starts: the last ``keep`` messages, moved back so no tool answer loses its call."""
    head = head_of(messages)
    start = max(len(messages) - keep, head)
    while start > head and messages[start].role == "tool":
        start -= 1
    return start


def keep_last(count: int) -> History:
    """Send the start and the last ``count`` messages."""
    if count < 1:
        raise ChapterError(f"keep_last({count}) must keep at least one message.")

    def history(agent: Agent, messages: list[Message], max_turns: int) -> list[Message]:
        head = head_of(messages)
        return messages[:head] + messages[_cut(messages, count) :]

    return history


def _characters(messages: list[Message]) -> int:
    return sum(len(message.written()) for message in messages)


def summarise_over(characters: int, *, keep: int, summariser: Step) -> History:
    """Past ``characters``, replace all but the start and the last ``keep`` messages by a summary."""
    if keep < 1 or characters < 1:
        raise ChapterError(f"summarise_over({characters}, keep={keep}) needs a positive budget and keep.")

    def history(agent: Agent, messages: list[Message], max_turns: int) -> list[Message]:
        if _characters(messages) <= characters:
            return messages
        head, start = head_of(messages), _cut(messages, keep)
        if start <= head:
            return messages  # nothing between the start and the kept tail to summarise
        written = "\n".join(f"{m.role}: {m.written()}" for m in messages[head:start])
        result = run_step(agent, summariser, written, max_turns, workflow="history")
        if result.stopped or not result.answer:
            return messages  # no summary: send it all, the turn shows what was sent
        summary = Message(role="system", content=f"{SUMMARY_PREFIX} {result.answer}")
        return [*messages[:head], summary, *messages[start:]]

    return history


def with_history(history: History) -> Loop:
    """The loop of chapter 3 (until no tool calls), sending what ``history`` keeps each turn."""

    def loop(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        sent = list(context)
        for _ in range(max_turns):
            sent = list(history(agent, sent, max_turns))
            turn = agent.ask(sent)  # the reply is appended to what was sent...
            call = turn.model_call
            if call.reply is None:
                detail = call.error.message if call.error else "the model returned nothing"
                return Ending(reason="scenario_error" if call.kind == "mock" else "provider_failure", detail=detail)
            context.append(call.reply)  # ...and to the transcript
            if not call.reply.tool_calls:
                return Ending(reason="no_tool_calls")
            answered = len(context)
            agent.run_tools(turn, context)
            sent.extend(context[answered:])
            for run in turn.tools:
                if run.error is not None:
                    return Ending(reason="scenario_error", detail=f"tool {run.name} raised {run.error.type}")
        return Ending(reason="turn_limit", detail=f"stopped after {max_turns} turns")

    return loop
