"""Guardrails: plain code that checks what goes to the model and what comes back (chapter 22).

An *input check* reads the customer's message before any model call; one
that says no stops the run there, and nothing is sent. An *output check*
reads the model's answer before the customer does; one that says no sends
the reply back to the model with the reason, and asks again (once, by
default; then the run stops). A check may also let a message through with
a note, for a case near its line: the trace keeps the note, so a person can
look at the borderline cases later::

    loop=guarded(input_checks=[no_card_numbers], output_checks=[no_discount_promises])

Every verdict is a note on the model call it concerns (the first call for
an input check, the answering call for an output check), and a stopped run
ends ``guardrail_tripped`` with the check's reason. Checks are functions
from text to a ``Verdict``; the ones here are the shop's, and plain code on
purpose: a check that is itself a model call costs a call and can be talked
round, as any model can.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from primer.agent import Agent
from primer.errors import ChapterError, quoted
from primer.loop import Loop, one_turn
from primer.trace import Ending, Message, Note

__all__ = [
    "INPUT_NOTE",
    "OUTPUT_NOTE",
    "Check",
    "Verdict",
    "guarded",
    "luhn_valid",
    "no_card_numbers",
    "no_discount_promises",
]

#: The labels of the notes the verdicts are recorded in.
INPUT_NOTE = "input check"
OUTPUT_NOTE = "output check"


@dataclass(frozen=True)
class Verdict:
    """What a check decided: allowed or not, and why (a note, when it let something near its line through)."""

    allowed: bool
    why: str | None = None

    def data(self, check: str) -> dict[str, object]:
        """The verdict as a trace note holds it."""
        verdict = ("let through" if self.why else "passed") if self.allowed else "stopped"
        return {"check": check, "verdict": verdict, **({"why": self.why} if self.why else {})}


Check = Callable[[str], Verdict]

# Thirteen to nineteen digits, in groups or not: the length of a payment card's number.
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")


def luhn_valid(digits: str) -> bool:
    """Whether a number passes the Luhn check every payment card number passes."""
    total = 0
    for index, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if index % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def no_card_numbers(text: str) -> Verdict:
    """A card number must never reach the model's provider: stop a message that holds one.

    A long number that fails the Luhn check is no card (a loyalty number, an
    order reference): it goes through, with a note.
    """
    for found in _CARD.finditer(text):
        digits = re.sub(r"\D", "", found.group())
        if luhn_valid(digits):
            return Verdict(allowed=False, why=f"the message holds a payment card number ({len(digits)} digits)")
        return Verdict(allowed=True, why=f"{len(digits)} digits that fail the Luhn check: not a payment card number")
    return Verdict(allowed=True)


_PROMISE = re.compile(r"\b(discount|\d+ ?% off|for free|refund)", re.IGNORECASE)


def no_discount_promises(text: str) -> Verdict:
    """The shop gives no discounts and no refunds by chat: an answer that promises one is not sent."""
    found = _PROMISE.search(text)
    if found:
        return Verdict(allowed=False, why=f"it promises {quoted(found.group())}, which the shop does not give")
    return Verdict(allowed=True)


def _checked(checks: Sequence[Check], text: str, label: str) -> tuple[list[Note], str | None]:
    """Run the checks in order up to the first that stops: a note for each, and the reason it stopped."""
    notes = []
    for check in checks:
        verdict = check(text)
        notes.append(Note(label=label, data=verdict.data(check.__name__)))
        if not verdict.allowed:
            return notes, verdict.why or f"{check.__name__} said no"
    return notes, None


def _stopped(notes: list[Note], why: str, after: str) -> Ending:
    return Ending(reason="guardrail_tripped", detail=f"{notes[-1].label} {notes[-1].data['check']}: {why}; {after}")


def guarded(
    *,
    input_checks: Sequence[Check] = (),
    output_checks: Sequence[Check] = (),
    then: Sequence[str] = (),
    asks_again: int = 1,
) -> Loop:
    """Chapter 3's loop, one turn at a time, with the checks around it.

    The input checks read each customer message before it is sent: the
    scenario's prompt, and each of ``then``, the messages the customer
    sends after each answer. The output checks read each answer (a reply
    that asks for no tool). A rejected answer stays in the context,
    followed by a human message saying why it was not sent; after
    ``asks_again`` rejections of one answer the run stops.
    """
    if asks_again < 0:
        raise ChapterError(f"guarded(asks_again={asks_again}) needs 0 or more.")

    def guarding(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        waiting = list(then)
        question: Message | None = context.pop() if context and context[-1].role == "human" else None
        rejected = total = 0
        pending: list[Note] = []
        for _ in range(max_turns):
            if question is not None:
                # Checked before it is sent: a message stopped here reaches no model, and no context.
                pending, stopped = _checked(input_checks, question.content or "", INPUT_NOTE)
                if stopped is not None:
                    return _stopped(pending, stopped, "nothing was sent to the model")
                context.append(question)
                question, rejected = None, 0
            ending = one_turn(agent, context)
            turn = agent.turns[-1]
            turn.model_call.notes[:0], pending = pending, []
            if ending is None:
                continue  # the turn ran tools: go round
            if ending.reason != "no_tool_calls":
                return ending
            notes, stopped = _checked(output_checks, context[-1].content or "", OUTPUT_NOTE)
            turn.model_call.notes.extend(notes)
            if stopped is not None:
                if rejected == asks_again:
                    return _stopped(notes, stopped, "not sent to the customer")
                rejected, total = rejected + 1, total + 1
                context.append(
                    Message(role="human", content=f"Your reply was not sent to the customer: {stopped}. Answer again.")
                )
            elif waiting:
                question = Message(role="human", content=waiting.pop(0))
            elif total:
                replies = "1 reply" if total == 1 else f"{total} replies"
                return ending.model_copy(update={"detail": f"answered after {replies} rejected by the output checks"})
            else:
                return ending
        return Ending(reason="turn_limit", detail=f"stopped after {max_turns} turns")

    return guarding
