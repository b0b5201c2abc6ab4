"""The one marker parser: where a chapter page asks for traces.

A chapter page marks where traces go with one line of its own::

    ::: trace ch09_who_retries                    every scenario of the chapter
    ::: trace ch09_who_retries service_is_busy    one scenario

Every front end reads markers through ``parse_line`` (one line) or ``scan``
(a page, fenced code left out), which sort each line three ways:

* a ``Marker``: ``:::``, a space, ``trace``, a chapter and at most one
  scenario, names of letters, digits and underscores, at the start of the line;
* a ``NearMiss``: a line that was meant as a marker but is not a valid one.
  *Meant* is decided by the first word after ``:::``: ``trace`` or
  ``traces``, in any case, whatever the spacing (``:::trace x``,
  ``::: Traces x``, ``::: trace``, ``  ::: trace x``). The book reserves that
  word, so ``::: trace`` alone is a near miss rather than mkdocstrings'
  documentation of the standard library's ``trace`` module;
* anything else, mkdocstrings' ``::: package.module`` identifiers included
  (``::: tracemalloc``, ``::: trace.x``: the first word is not ``trace``).

A near miss is reported with the reason and the valid form, so a typo in a
marker fails ``mkdocs build --strict`` instead of showing the line as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["MARKER_FORM", "Marker", "NearMiss", "find_markers", "find_near_misses", "parse_line", "scan"]

#: The valid form of a marker, as messages quote it.
MARKER_FORM = "::: trace CHAPTER [SCENARIO]"

# A line meant as a marker: at most three spaces (four make indented code),
# ":::", and a first word "trace" or "traces" ending the line or followed by
# a space (so "::: trace.module" and "::: tracemalloc" are not ours).
_MEANT = re.compile(r"(?P<indent> {0,3}):::(?P<gap>[ \t]*)(?P<word>traces?)(?P<rest>[ \t].*)?", re.IGNORECASE)
# A valid marker, as parse_line reads one.
_VALID = r":::[ \t]+trace[ \t]+[A-Za-z0-9_]+(?:[ \t]+[A-Za-z0-9_]+)?[ \t]*"
# The start of a line meant as a marker (as _MEANT reads it; parse_line strips
# the "\r" that ends a line) that is not a valid one, fenced code or not:
# found by one search of the whole page.
_NEAR_MISS = re.compile(rf"^(?!{_VALID}\r*$) {{0,3}}:::[ \t]*(?i:traces?)(?:[ \t]|\r*$)", re.MULTILINE)
_NAME = re.compile(r"[A-Za-z0-9_]+")
_SPACES = re.compile(r"[ \t]+")

# An opening fence: three or more backticks or tildes, indented or not (fences
# nest in lists and admonitions). It closes on a run of the same character at
# least as long.
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")


# Records as NamedTuples, not frozen dataclasses: both are made as this module
# is imported, which every build does, traces off too, and a dataclass takes
# about six times as long to make (a quarter of a millisecond each).
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
    # Numbered as an editor numbers them: only "\n" ends a line (MkDocs reads
    # pages with universal newlines, so "\r\n" arrives as "\n").
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


def scan(markdown: str) -> list[Marker | NearMiss]:
    """Every marker and near miss of a page, in order, leaving out fenced code.

    A page that *documents* the marker shows it in a code block: that is an
    example, not a request, and not a mistake either.
    """
    found = []
    for number, line in _lines_outside_code(markdown):
        if ":::" in line:  # cheap: most lines are prose
            parsed = parse_line(line, number)
            if parsed is not None:
                found.append(parsed)
    return found


def find_markers(markdown: str) -> list[Marker]:
    """Every valid marker of a page outside fenced code, with its line number (from 1)."""
    return [each for each in scan(markdown) if isinstance(each, Marker)]


def find_near_misses(markdown: str) -> list[NearMiss]:
    """Every line of a page outside fenced code meant as a marker but not a valid one."""
    # Asked of every page, traces off too: a page with no such line anywhere
    # (fenced or not) need not be read line by line.
    if ":::" not in markdown or _NEAR_MISS.search(markdown) is None:
        return []
    return [each for each in scan(markdown) if isinstance(each, NearMiss)]
