"""A mock run that left part of its script unused: a note in the trace, and a warning.

A scenario's mock script is written for one story. When the run ends before
the script does (a reply was added to the wrong scenario, a loop stops a turn
earlier than the author thought), the replies left over were never seen by
anyone, and the trace tells a shorter story than the script. Nothing fails,
so it is easy to miss.

After a mock run, ``note_unused`` compares the script with the trace: every
mock model call that got a reply used one, and every approval a scripted
approver gave used one of the scenario's ``approvals``. What is left over is
noted on the run's last model call, where the mock model's other honest
notes are::

    scripted replies never used {"scripted": 3, "used": 2, "unused": 1, "next": "say('Milk is 1.20.')"}

A scripted reply that calls a tool the request did not declare (``weather_in``
for a tool named ``WeatherIn``: a primer tool's name is its arguments model's
``title``, else the model's class name) is noted on that model call::

    scripted call to an undeclared tool {"called": "weather_in", "declared": ["WeatherIn"]}

``unused_warnings`` turns those notes back into sentences; the command line
prints them on stderr and the book logs them as warnings naming chapter and
scenario (so ``mkdocs build --strict`` fails until the script is fixed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from primer.approval import NO_APPROVER, Decision
from primer.summary import cut
from primer.trace import Note, ScenarioRun

if TYPE_CHECKING:  # the book's machinery imports this module, and never the models (tests/test_layering.py)
    from primer.models.mock import MockReply

__all__ = ["UNDECLARED", "UNUSED_APPROVALS", "UNUSED_REPLIES", "describe", "note_unused", "unused_warnings"]

#: The note's label when the mock model's script has replies left over.
UNUSED_REPLIES = "scripted replies never used"
#: The note's label when a scripted reply calls a tool the request did not declare.
UNDECLARED = "scripted call to an undeclared tool"
#: The note's label when the scripted approver has answers left over.
UNUSED_APPROVALS = "scripted approvals never asked for"


def describe(reply: MockReply | Decision) -> str:
    """A scripted reply or answer as it was written: ``say('Milk is 1.20.')``, ``ask(price_of)``."""
    if isinstance(reply, Decision):
        return "approve()" if reply.approved else f"refuse({cut(reply.reason or '', 40)!r})"
    if reply.calls:
        return f"ask({', '.join(name for name, _ in reply.calls)})"
    helper = "cut" if reply.finish_reason == "length" else "say"
    return f"{helper}({cut(reply.text, 40)!r})" if reply.text else f"{helper}()"


def note_unused(
    run: ScenarioRun,
    replies: Sequence[MockReply],
    approvals: Sequence[Decision] = (),
    undeclared: Sequence[str] = (),
) -> None:
    """Note on the run's last model call what its script held that the run never used.

    Only a mock run that ended as a story ends is checked: a broken run
    stopped early, and says so already. Every mock run is checked for
    scripted calls to tools its requests did not declare, but for the
    ``undeclared`` names, which the script calls so on purpose.
    """
    if run.mode == "mock":
        _note_undeclared(run, undeclared)
    if run.mode != "mock" or run.ending.failed or not run.turns:
        return
    used = sum(1 for turn in run.turns if turn.model_call.kind == "mock" and turn.model_call.reply is not None)
    asked = sum(
        1 for turn in run.turns for tool in turn.tools if tool.approval is not None and tool.approval.by != NO_APPROVER
    )
    notes = run.turns[-1].model_call.notes
    for label, script, done in ((UNUSED_REPLIES, replies, used), (UNUSED_APPROVALS, approvals, asked)):
        if len(script) > done:
            data = {"scripted": len(script), "used": done, "unused": len(script) - done, "next": describe(script[done])}
            notes.append(Note(label=label, data=data))


def _note_undeclared(run: ScenarioRun, on_purpose: Sequence[str]) -> None:
    for turn in run.turns:
        call = turn.model_call
        if call.kind != "mock" or call.reply is None:
            continue
        declared = [tool.name for tool in call.tools]
        for tool_call in call.reply.tool_calls:
            if tool_call.name not in declared and tool_call.name not in on_purpose:
                call.notes.append(Note(label=UNDECLARED, data={"called": tool_call.name, "declared": declared}))


def _undeclared_warnings(run: ScenarioRun) -> list[str]:
    found = []
    for turn in run.turns:
        for note in turn.model_call.notes:
            if note.label == UNDECLARED:
                declared = ", ".join(note.data["declared"]) or "none"
                found.append(
                    f"{run.name}: the mock script calls {note.data['called']!r} in turn {turn.number}, which is "
                    f"not a declared tool; the declared tools are: {declared}. Call the tool by its name (a "
                    "primer tool's name is its arguments model's title, else the model's class name)."
                )
    return found


def unused_warnings(run: ScenarioRun) -> list[str]:
    """One sentence per unused part of the run's script, or call to an undeclared tool, naming the scenario."""
    if not run.turns:
        return []
    found = _undeclared_warnings(run)
    for note in run.turns[-1].model_call.notes:
        data = note.data
        if note.label == UNUSED_REPLIES:
            what, where = "mock script", "replies"
        elif note.label == UNUSED_APPROVALS:
            what, where = "scripted approver", "approvals"
        else:
            continue
        found.append(
            f"{run.name}: the {what} holds {data['scripted']} {where} and the run used {data['used']}; "
            f"{data['unused']} never ran, from {data['next']} on. Remove them from the scenario's "
            f"{'mock list' if where == 'replies' else 'approvals'}, or change the scenario so the run reaches them."
        )
    return found
