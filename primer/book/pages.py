"""What the build does to a page's Markdown before it is rendered.

* ``markers``: the trace markers of a page, leaving out those inside fenced
  code (a page that *documents* the marker shows it in a code block, and that
  is an example, not a request).
* ``check``: a warning for each marker naming a chapter or scenario that
  does not exist, naming the page and listing what does exist.
* ``replace``: each marker's line swapped for some HTML; with ``listing`` it
  gives the plain, escaped listing of a trace's summary lines the book shows
  when the Markdown extension that renders traces is not configured, and
  with ``placeholder`` the short note shown when ``PRIMER_TRACES=off``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence

from primer.book.source import MARKER, ChapterTraces, Marker
from primer.summary import chapter_line, ending_line, model_line, scenario_line, tool_line, turn_line
from primer.trace import ChapterRun, ScenarioRun

__all__ = ["check", "listing", "markers", "placeholder", "replace"]

# An opening fence: three or more backticks or tildes, indented or not (fences
# nest in lists and admonitions). It closes on a run of the same character at
# least as long.
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")


def _code_lines(markdown: str) -> set[int]:
    inside: str | None = None
    lines = set()
    for number, line in enumerate(markdown.splitlines(), start=1):
        match = _FENCE.match(line)
        if inside is None:
            if match:
                inside = match["fence"]
                lines.add(number)
        else:
            lines.add(number)
            if match and match["fence"][0] == inside[0] and len(match["fence"]) >= len(inside):
                inside = None
    return lines


def markers(markdown: str) -> list[Marker]:
    """The page's trace markers outside fenced code, with their line numbers."""
    code = _code_lines(markdown)
    found = []
    for match in MARKER.finditer(markdown):
        line = markdown.count("\n", 0, match.start()) + 1
        if line not in code:
            found.append(Marker(match["chapter"], match["scenario"], line))
    return found


def check(page: str, markdown: str, scenarios: Mapping[str, Sequence[str] | None]) -> list[str]:
    """Warnings for markers naming what does not exist.

    ``scenarios`` maps each chapter to its scenario names (None when they are
    not known, because the chapter could not be imported: its own warning says so).
    """
    warnings = []
    for marker in markers(markdown):
        where = f"{page} line {marker.line}: the marker `::: trace {marker.chapter}"
        where += f" {marker.scenario}`" if marker.scenario else "`"
        if marker.chapter not in scenarios:
            known = ", ".join(sorted(scenarios)) or "none"
            warnings.append(f"{where} names no chapter. The chapters are: {known}.")
            continue
        names = scenarios[marker.chapter]
        if marker.scenario and names is not None and marker.scenario not in names:
            warnings.append(
                f"{where} names no scenario of {marker.chapter}. Its scenarios are: {', '.join(names) or 'none'}."
            )
    return warnings


def replace(markdown: str, render: Callable[[Marker], str]) -> str:
    """The page with each marker's line (outside fenced code) replaced by ``render(marker)``."""
    found = {marker.line: marker for marker in markers(markdown)}
    if not found:
        return markdown
    lines = markdown.splitlines(keepends=True)
    for number, marker in found.items():
        ending = "\n" if lines[number - 1].endswith("\n") else ""
        # Blank lines around: the HTML must stand as a block of its own.
        lines[number - 1] = f"\n{render(marker)}\n{ending}"
    return "".join(lines)


def placeholder(marker: Marker) -> str:
    """The note a marker becomes when traces are off."""
    what = f"{marker.chapter} {marker.scenario}" if marker.scenario else marker.chapter
    return (
        f'<p class="primer-traces-off"><em>Traces of {html.escape(what)} are not shown: '
        "this build ran with <code>PRIMER_TRACES=off</code>.</em></p>"
    )


def _scenario_lines(run: ScenarioRun) -> list[str]:
    lines = [scenario_line(run)]
    for turn in run.turns:
        lines.append("  " + turn_line(turn))
        lines.append("    " + model_line(turn.model_call))
        lines += ["    " + tool_line(tool) for tool in turn.tools]
    lines.append("  " + ending_line(run.ending))
    if run.error is not None:
        lines.append(f"  error {run.error.type}: {run.error.message}")
    return lines


def _run_lines(run: ChapterRun, scenario: str | None) -> list[str]:
    lines = [chapter_line(run)]
    for each in run.scenarios:
        if scenario is None or each.name == scenario:
            lines += _scenario_lines(each)
    return lines


def listing(traces: ChapterTraces | None, marker: Marker) -> str:
    """A trace's summary lines as escaped, preformatted HTML (no renderer needed)."""
    if traces is None:
        return f'<p class="primer-trace-missing">There are no traces of {html.escape(marker.chapter)}.</p>'
    lines = []
    for run in (traces.mock, traces.live):
        if run is not None:
            lines += _run_lines(run, marker.scenario)
    status = traces.live_status
    if status.state != "current" or status.reason:
        lines.append(f"live trace {status.state}: {status.reason}".rstrip(": "))
    if status.failure is not None:
        lines.append(f"  last live refresh failed: {status.failure.message}")
    # No blank line may appear inside: Markdown would end the HTML block there.
    text = [line for each in lines for line in each.splitlines() if line.strip()]
    body = "\n".join(html.escape(line) for line in text)
    return f'<pre class="primer-trace-listing" data-chapter="{html.escape(marker.chapter)}">{body}</pre>'
