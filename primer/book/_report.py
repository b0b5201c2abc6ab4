"""What one build did, and what it has to say about the runs it shows.

``Report`` counts scenarios and gives the one line every build logs::

    traces: ran 2, reused 4                  # mock runs, and traces reused as they were
    traces: ran 0, reused 6, verified 4      # a frozen live trace was verified by replay
    traces: ran 6, reused 0, live: 3         # live runs are on (a key is set)

``failed`` and ``anomalies`` read a run: whether it failed (an error in the
scenario, or at its provider), and what the model did in it that no tool
could act on (arguments that are not a JSON object, a tool it was not given).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from primer.errors import quoted

if TYPE_CHECKING:  # a warm build with nothing to do reports without the trace models
    from primer.trace import ScenarioRun

__all__ = ["Report", "anomalies", "failed"]


@dataclass
class Report:
    """What one build did, counted in scenarios."""

    ran: int = 0
    reused: int = 0
    #: Live scenarios verified by replay, or None when no replay was tried.
    verified: int | None = None
    #: Live scenario runs, or None when live runs are off.
    live: int | None = None
    #: ``chapter / scenario (mode) failed: ending`` of every failed scenario shown.
    failures: list[str] = field(default_factory=list)
    off: bool = False

    def failure(self, chapter: str, run: ScenarioRun) -> str | None:
        """The warning for a failed run, the first time it is noted in this build; None after that."""
        line = f"{chapter} / {run.name} ({run.mode}) failed: {run.ending.label}"
        if line in self.failures:
            return None
        self.failures.append(line)
        detail = f": {run.ending.detail}" if run.ending.detail else ""
        return f"traces: {line}{detail}"

    def line(self) -> str:
        """``traces: ran 2, reused 4`` (``, verified 4`` after a replay, ``, live: 2`` when live runs are on)."""
        if self.off:
            return "traces: off (PRIMER_TRACES=off), nothing ran"
        verified = f", verified {self.verified}" if self.verified is not None else ""
        live = f", live: {self.live}" if self.live is not None else ""
        return f"traces: ran {self.ran}, reused {self.reused}{verified}{live}"


def failed(run: ScenarioRun) -> bool:
    """Whether a scenario run failed (an error in it, or at its provider)."""
    return run.ending.failed


def anomalies(run: ScenarioRun) -> list[str]:
    """What the model did that no tool could act on (arguments not a JSON object, a tool not given), one phrase each."""
    found: list[str] = []
    for turn in run.turns:
        call = turn.model_call
        declared = {tool.name for tool in call.tools} | set(run.tools)
        for tool_call in call.reply.tool_calls if call.reply is not None else []:
            # quoted(): the name is the model's text, shown inert in the log.
            name = quoted(tool_call.name)
            if tool_call.name not in declared:
                found.append(f"asked for {name}, a tool it was not given")
            if tool_call.raw_arguments is not None:
                found.append(f"sent {name} arguments that are not a JSON object")
    return list(dict.fromkeys(found))
