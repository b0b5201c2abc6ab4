"""What the build does to a page's Markdown before it is rendered.

* ``check``: a warning, naming page and line, for each line meant as a marker that is not a valid
  one and each marker naming a chapter or scenario that does not exist (fenced code left out:
  ``primer.book._markers.scan``).
* ``replace``: each marker's line swapped for HTML: ``listing``, the escaped summary lines shown
  when the extension that renders traces is not configured, or ``placeholder`` with traces off.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from primer.book import _prose as prose
from primer.book._markers import Marker, NearMiss, find_markers, find_near_misses, scan
from primer.locator import unknown

if TYPE_CHECKING:  # loaded with the listing: a build with traces off needs neither
    from primer.book._source import ChapterTraces
    from primer.trace import ChapterRun, ScenarioRun

__all__ = [
    "OFF_CLASS",
    "chapters_named",
    "check",
    "listing",
    "malformed",
    "off_note",
    "off_page",
    "placeholder",
    "replace",
]


def chapters_named(markdown: str) -> set[str]:
    """The chapters a page's markers and live blocks name (its traces depend on them)."""
    return {marker.chapter for marker in find_markers(markdown)} | {b.chapter for b in prose.blocks(markdown)}


def _near_miss(page: str, near: NearMiss) -> str:
    return f"{page} line {near.line}: {near.message}"


def malformed(page: str, markdown: str) -> list[str]:
    """Warnings for the page's lines meant as markers that are not valid ones, naming page and line."""
    return [_near_miss(page, each) for each in find_near_misses(markdown)]


def check(page: str, markdown: str, scenarios: Mapping[str, Sequence[str] | None]) -> list[str]:
    """Warnings for lines meant as markers that are not valid ones, and for markers naming what does not exist.

    ``scenarios`` maps each chapter to its scenario names (None: not known, the chapter has its own warning).
    """
    warnings = []
    for marker in scan(markdown):
        if isinstance(marker, NearMiss):
            warnings.append(_near_miss(page, marker))
            continue
        where = f"{page} line {marker.line}: the marker `::: trace {marker.chapter}"
        where += f" {marker.scenario}`" if marker.scenario else "`"
        missing = unknown(marker.chapter, marker.scenario, scenarios)
        if missing is not None:
            warnings.append(f"{where} {missing}")
    return warnings


def replace(markdown: str, render: Callable[[Marker], str]) -> str:
    """The page with each marker's line (outside fenced code) replaced by ``render(marker)``."""
    found = find_markers(markdown)
    if not found:
        return markdown
    # Lines as ``scan`` numbers them: split on "\n" only.
    lines = markdown.split("\n")
    for marker in found:
        # Blank lines around: the HTML must stand as a block of its own.
        lines[marker.line - 1] = f"\n{render(marker)}\n"
    return "\n".join(lines)


def off_page(page: str, markdown: str) -> tuple[str, list[str]]:
    """A page with traces off: each marker a placeholder, no mode block, and the malformed markers' warnings."""
    shown = replace(prose.select(markdown, lambda _chapter, _scenario: False, mock=False), placeholder)
    return shown, malformed(page, markdown)


#: The class of the note a marker becomes when traces are off.
OFF_CLASS = "primer-traces-off"


def off_note(marker: Marker) -> str:
    """The words of the note a marker becomes when traces are off."""
    what = f"{marker.chapter} {marker.scenario}" if marker.scenario else marker.chapter
    return f"Traces of {what} are not shown: this build ran with PRIMER_TRACES=off."


def placeholder(marker: Marker) -> str:
    """The note a marker becomes when traces are off, as HTML (the extension builds the same as an element).

    One paragraph of plain words: the search plugin parses every tag, and a note of three elements
    cost a build with traces off 5 ms more than one without the hook, at 100 chapters.
    """
    return f'<p class="{OFF_CLASS}">{html.escape(off_note(marker))}</p>'


def _scenario_lines(run: ScenarioRun) -> list[str]:
    from primer.summary import ending_line, model_line, scenario_line, tool_line, turn_line

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
    from primer.summary import chapter_line

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
