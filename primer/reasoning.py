"""Reasoning models: how hard they think, what it costs, and a limit spent thinking (chapter 21).

A reasoning model writes reasoning before it answers. Three things follow
for an agent, and each shows in a trace:

* ``reasoning_effort`` (``minimal``, ``low``, ``medium``, ``high``) asks for
  less or more of it: ``effort("high")`` is the setting, checked.
* The provider counts the reasoning in ``usage``:
  ``completion_tokens_details.reasoning_tokens`` is a part of
  ``completion_tokens``, billed as output though the answer never shows it
  (some providers send its text, as ``reasoning_content``; others keep it).
  ``thinking(usage)`` splits the output into reasoning and answer.
* A token limit (``max_completion_tokens``) counts the reasoning too. A model
  that spends all of it thinking stops with ``finish_reason = length`` and an
  empty reply. ``until_answer_or_thought_out`` is chapter 5's
  ``until_answer`` whose ending then says so, from the counts.

Streamed, the reasoning arrives first, in ``reasoning_content`` deltas, and
the library assembles it beside the answer (``primer.streaming``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from primer.agent import Agent
from primer.errors import ChapterError
from primer.loop import DEFAULT_MAX_TURNS, until_answer
from primer.trace import Ending, Message, Usage

__all__ = ["EFFORTS", "Thinking", "effort", "thinking", "until_answer_or_thought_out"]

#: The efforts the chat-completions API accepts for ``reasoning_effort``.
EFFORTS = ("minimal", "low", "medium", "high")


def effort(level: str, **settings: Any) -> dict[str, Any]:
    """The settings that ask for ``level`` of reasoning, with any others: ``effort("low", stream=True)``."""
    if level not in EFFORTS:
        raise ChapterError(f"reasoning_effort {level!r} is none the API accepts: use one of {', '.join(EFFORTS)}.")
    return {"reasoning_effort": level, **settings}


@dataclass(frozen=True)
class Thinking:
    """A reply's output tokens, split: the reasoning, and the answer the reader sees."""

    reasoning: int
    answer: int

    @property
    def share(self) -> float:
        """The part of the output that was reasoning, from 0 to 1."""
        total = self.reasoning + self.answer
        return self.reasoning / total if total else 0.0


def thinking(usage: Usage | None) -> Thinking | None:
    """The split of a call's output, or None when the provider did not count reasoning."""
    if usage is None or usage.reasoning_tokens is None:
        return None
    return Thinking(reasoning=usage.reasoning_tokens, answer=max(usage.output_tokens - usage.reasoning_tokens, 0))


def until_answer_or_thought_out(agent: Agent, context: list[Message], max_turns: int = DEFAULT_MAX_TURNS) -> Ending:
    """``until_answer``; when the limit was spent on reasoning alone, the ending says so."""
    ending = until_answer(agent, context, max_turns)
    if ending.reason != "tokens_exhausted":
        return ending
    call = agent.turns[-1].model_call
    split = thinking(call.usage)
    empty = call.reply is None or not (call.reply.content or "").strip()
    if split is not None and empty and split.answer == 0:
        detail = f"all {split.reasoning} output tokens went to reasoning: the reply is empty"
        return ending.model_copy(update={"detail": detail})
    return ending
