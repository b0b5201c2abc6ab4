"""What resending the context costs: messages, characters and tokens per turn.

A model keeps nothing between calls, so every turn sends the whole context
again. Count what a run sent, turn by turn, from its trace::

    >>> from primer.chapters.ch04_context_grows import one_price_per_turn
    >>> from primer.runner import run_scenario
    >>> cost = context_cost(run_scenario(one_price_per_turn))
    >>> [turn.messages for turn in cost.turns]
    [2, 4, 6, 8]
    >>> cost.messages_sent, cost.transcript_messages
    (20, 9)

Characters are a rough stand-in for tokens that a mock run can count too;
a live run also has the provider's own count of input tokens per turn.

A provider's prompt cache reuses the *start* of a context it was sent
before. ``repeated_characters`` counts, per turn, the characters at the start
of the context that an earlier turn of the run began with too, message for
message: what a cache could reuse. A live run also has the provider's own count of cached
input tokens (``cached_tokens``); chapter 17 compares the two.
"""

from __future__ import annotations

from dataclasses import dataclass

from primer.trace import Message, ScenarioRun

__all__ = ["ContextCost", "TurnCost", "context_cost"]


@dataclass(frozen=True)
class TurnCost:
    """What one turn sent to the model."""

    turn: int
    #: Messages in the context sent.
    messages: int
    #: Of those, how many were not sent the turn before.
    new_messages: int
    #: Characters of message text sent (content and tool calls as written).
    characters: int
    #: Input tokens as the provider counted them; None for a mock run.
    input_tokens: int | None
    #: Characters at the start of the context that an earlier turn began with too, in the same order.
    repeated_characters: int = 0
    #: Input tokens the provider read from its cache; None when it did not say (and for a mock run).
    cached_tokens: int | None = None


@dataclass(frozen=True)
class ContextCost:
    """Every turn's cost, and the totals over the run."""

    turns: list[TurnCost]
    #: Messages in the run's final transcript, the final reply included.
    transcript_messages: int

    @property
    def messages_sent(self) -> int:
        """Messages sent over the whole run, counting each resend."""
        return sum(turn.messages for turn in self.turns)

    @property
    def characters_sent(self) -> int:
        """Characters sent over the whole run, counting each resend."""
        return sum(turn.characters for turn in self.turns)

    @property
    def repeated_characters(self) -> int:
        """Characters each turn repeated from the start of an earlier turn's context, over the run."""
        return sum(turn.repeated_characters for turn in self.turns)

    @property
    def input_tokens(self) -> int | None:
        """Input tokens over the run, when the provider counted every turn."""
        counts = [turn.input_tokens for turn in self.turns]
        if not counts or any(count is None for count in counts):
            return None
        return sum(count for count in counts if count is not None)


def context_cost(run: ScenarioRun) -> ContextCost:
    """Count what each turn of a scenario run sent to the model."""
    turns: list[TurnCost] = []
    previous = 0
    earlier: list[list[Message]] = []
    for turn in run.turns:
        call = turn.model_call
        sent = len(call.context)
        turns.append(
            TurnCost(
                turn=turn.number,
                messages=sent,
                new_messages=sent - previous,
                characters=sum(len(message.written()) for message in call.context),
                input_tokens=call.usage.input_tokens if call.usage is not None else None,
                repeated_characters=max((_repeated(old, call.context) for old in earlier), default=0),
                cached_tokens=call.usage.cached_tokens if call.usage is not None else None,
            )
        )
        previous = sent
        earlier.append(call.context)
    return ContextCost(turns=turns, transcript_messages=len(run.transcript))


def _repeated(before: list[Message], now: list[Message]) -> int:
    """Characters of the messages ``now`` starts with that ``before`` started with too."""
    same = 0
    for old, new in zip(before, now, strict=False):
        if old != new:
            break
        same += len(new.written())
    return same
