"""The one marker parser: where a chapter page asks for traces, and the warnings its markers give.

A chapter page marks where traces go with one line of its own::

    ::: trace ch09_who_retries                    every scenario of the chapter
    ::: trace ch09_who_retries service_is_busy    one scenario

``parse_line`` sorts a line three ways: a ``Marker`` (``:::``, a space, ``trace``, a chapter and
at most one scenario, names of letters, digits and underscores, at the start of the line); a
``NearMiss``, a line meant as a marker that is not a valid one (*meant*: the first word after
``:::`` is ``trace`` or ``traces``, in any case and spacing, so ``::: trace`` alone is ours and
not mkdocstrings' ``trace`` module); or None (``::: tracemalloc``, ``::: trace.x``).

``scan`` parses a page once (fenced code left out: an example, not a request); ``check`` and
``malformed`` word its warnings, naming page and line, so a typo fails ``--strict``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from primer.locator import unknown

__all__ = [
    "MARKER_FORM",
    "OFF_CLASS",
    "Marker",
    "NearMiss",
    "check",
    "find_markers",
    "find_near_misses",
    "malformed",
    "off_note",
    "parse_line",
    "scan",
]

#: The valid form of a marker, as messages quote it.
MARKER_FORM = "::: trace CHAPTER [SCENARIO]"
#: The class of the note a marker becomes when traces are off.
OFF_CLASS = "primer-traces-off"

# A line meant as a marker: at most three spaces (four make indented code), ":::", and a first
# word "trace" or "traces" ending the line or followed by a space.
_MEANT = re.compile(r"(?P<indent> {0,3}):::(?P<gap>[ \t]*)(?P<word>traces?)(?P<rest>[ \t].*)?", re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z0-9_]+")
_SPACES = re.compile(r"[ \t]+")
# An opening fence, indented or not (fences nest in lists and admonitions); it closes on a run
# of the same character at least as long.
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")


# NamedTuples, not dataclasses: made as every build imports this, traces off too, and cheaper.
class Marker(NamedTuple):
    """One marker found in a page."""

    chapter: str
    scenario: str | None
    line: int


class NearMiss(NamedTuple):
    """A line meant as a marker that is not a valid one, and what is wrong with it."""

    text: str
    problems: tuple[str, ...]
    line: int

    @property
    def message(self) -> str:
        """What is wrong and the valid form, in full sentences (without the page and line)."""
        return (
            f"`{self.text}` looks like a trace marker but is not one: {'; '.join(self.problems)}. "
            f"The valid form is `{MARKER_FORM}`, alone at the start of its line, "
            "the names made of letters, digits and underscores."
        )


def parse_line(line: str, number: int = 1) -> Marker | NearMiss | None:
    """One line of Markdown as a ``Marker``, a ``NearMiss``, or None (not meant as a marker)."""
    line = line.rstrip("\r")
    meant = _MEANT.fullmatch(line)
    if meant is None:
        return None
    words = [word for word in _SPACES.split(meant["rest"] or "") if word]
    problems = []
    if meant["indent"]:
        problems.append("it is indented, and a marker starts at the beginning of its line")
    if not meant["gap"]:
        problems.append("a space must follow `:::`")
    if meant["word"] != "trace":
        problems.append(f"the word is `trace`, not `{meant['word']}`")
    if not words:
        problems.append("it names no chapter")
    elif len(words) > 2:  # a chapter and a scenario
        problems.append(f"it has {len(words)} words after `trace`, and a marker takes two at most")
    problems += [f"`{word}` is not a name" for word in words if not _NAME.fullmatch(word)]
    if problems:
        return NearMiss(line.strip(), tuple(problems), number)
    return Marker(words[0], words[1] if len(words) > 1 else None, number)


def _lines_outside_code(markdown: str) -> Iterator[tuple[int, str]]:
    # Numbered as an editor numbers them: only "\n" ends a line (MkDocs reads pages with
    # universal newlines, so "\r\n" arrives as "\n").
    inside: str | None = None
    for number, line in enumerate(markdown.split("\n"), start=1):
        match = _FENCE.match(line)
        if inside is None:
            if match:
                inside = match["fence"]
            else:
                yield number, line
        elif match and match["fence"][0] == inside[0] and len(match["fence"]) >= len(inside):
            inside = None


# A page is asked for its markers by the plugin, the book's checks and the payload links: parsed once.
@lru_cache(maxsize=16)
def scan(markdown: str) -> tuple[Marker | NearMiss, ...]:
    """Every marker and near miss of a page, in order, leaving out fenced code."""
    if ":::" not in markdown:
        return ()
    found = (parse_line(line, n) for n, line in _lines_outside_code(markdown) if ":::" in line)
    return tuple(each for each in found if each is not None)


def find_markers(markdown: str) -> list[Marker]:
    """Every valid marker of a page outside fenced code, with its line number (from 1)."""
    return [each for each in scan(markdown) if isinstance(each, Marker)]


def find_near_misses(markdown: str) -> list[NearMiss]:
    """Every line of a page outside fenced code meant as a marker but not a valid one."""
    return [each for each in scan(markdown) if isinstance(each, NearMiss)]


def malformed(page: str, markdown: str) -> list[str]:
    """Warnings for the page's lines meant as markers that are not valid ones, naming page and line."""
    return [f"{page} line {near.line}: {near.message}" for near in find_near_misses(markdown)]


def check(page: str, markdown: str, scenarios: Mapping[str, Sequence[str] | None]) -> list[str]:
    """Warnings for near misses and for markers naming what does not exist, naming page and line.

    ``scenarios`` maps each chapter to its scenario names (None: not known, the chapter has its own warning).
    """
    warnings = []
    for marker in scan(markdown):
        if isinstance(marker, NearMiss):
            warnings.append(f"{page} line {marker.line}: {marker.message}")
            continue
        missing = unknown(marker.chapter, marker.scenario, scenarios)
        if missing is not None:
            named = f"{marker.chapter} {marker.scenario}" if marker.scenario else marker.chapter
            warnings.append(f"{page} line {marker.line}: the marker `::: trace {named}` {missing}")
    return warnings


def off_note(marker: Marker) -> str:
    """The words of the note a marker becomes when traces are off."""
    what = f"{marker.chapter} {marker.scenario}" if marker.scenario else marker.chapter
    return f"Traces of {what} are not shown: this build ran with PRIMER_TRACES=off."
