"""Mock and live of one scenario side by side: aligned turn by turn, and where they part."""

from __future__ import annotations

from collections.abc import Callable

from primer import summary
from primer.book._render_views import CompareRow, Comparison, RunView
from primer.trace import ModelCall, ScenarioRun

__all__ = ["asked", "compare"]


def asked(call: ModelCall) -> list[str]:
    """The tools a model call's reply asked for, in order."""
    return [c.name for c in call.reply.tool_calls] if call.reply else []


def compare(
    mock: ScenarioRun, live: ScenarioRun, mock_view: RunView, live_view: RunView, said: Callable[[str], str]
) -> Comparison:
    """Align two runs of one scenario turn by turn and say where they diverge."""
    rows: list[CompareRow] = []
    differences: list[str] = []
    for index in range(max(len(mock.turns), len(live.turns))):
        left = mock.turns[index] if index < len(mock.turns) else None
        right = live.turns[index] if index < len(live.turns) else None
        diverges = left is None or right is None or asked(left.model_call) != asked(right.model_call)
        if diverges and left is not None and right is not None:
            asked_mock = ", ".join(asked(left.model_call)) or "no tool"
            asked_live = ", ".join(asked(right.model_call)) or "no tool"
            differences.append(f"turn {index + 1} asked for {asked_mock} (mock) but {asked_live} (live)")
        rows.append(
            CompareRow(
                label=f"turn {index + 1}",
                mock=summary.turn_line(left, said) if left else None,
                mock_anchor=mock_view.turns[index].anchor if left else None,
                live=summary.turn_line(right, said) if right else None,
                live_anchor=live_view.turns[index].anchor if right else None,
                diverges=diverges,
            )
        )
    if len(mock.turns) != len(live.turns):
        differences.append(f"{summary.count(len(mock.turns), 'turn')} (mock) but {len(live.turns)} (live)")
    ended = mock.ending.reason != live.ending.reason
    if ended:
        differences.append(f"ended {mock.ending.label} (mock) but {live.ending.label} (live)")
    rows.append(
        CompareRow(
            label="ended",
            mock=summary.ending_line(mock.ending),
            mock_anchor=mock_view.ended_anchor,
            live=summary.ending_line(live.ending),
            live_anchor=live_view.ended_anchor,
            diverges=ended,
        )
    )
    return Comparison(rows, differences)
