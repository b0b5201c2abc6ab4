"""Prose about a live run, shown only when there is a live run to look at.

A chapter's prose often sends the reader into the live run ("in the live
run, open turn 2"). Until a chapter's live trace is recorded, that sentence
points at nothing. Wrapped in a *live block*, it appears only when the
chapter (or one scenario of it) has a live trace on the page::

    ::: live ch09_who_retries
    In the live run, open turn 2: the real model split the order in two.
    ::: end live

    ::: live ch09_who_retries arguments_are_wrong
    Only if that scenario has a live run.
    ::: end live

Between the two lines goes any Markdown (paragraphs, admonitions, lists);
the two lines themselves never show. Like a trace marker, each starts its
line (at most three spaces in), and lines in fenced code are examples, not
blocks. A stale live trace counts: it is on the page, marked stale.

``select`` keeps or drops each block's content; ``problems`` says what is
wrong with a page's blocks (an unknown chapter or scenario, a block never
closed, a block inside another), naming the line. The Markdown extension
(``primer.book.markdown``) applies it to every page; the book's hook does
for a page the extension does not render.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from markdown import Markdown
from markdown.preprocessors import Preprocessor

from primer.locator import unknown

__all__ = ["LiveBlock", "LiveProse", "blocks", "problems", "select"]

_OPEN = re.compile(r" {0,3}:::[ \t]+live[ \t]+(?P<chapter>[A-Za-z0-9_]+)(?:[ \t]+(?P<scenario>[A-Za-z0-9_]+))?[ \t]*")
_CLOSE = re.compile(r" {0,3}:::[ \t]+end[ \t]+live[ \t]*")
# Where either could start a line: a page without one is not read line by line.
_EITHER = re.compile(r"^ {0,3}:::[ \t]+(?:live|end)[ \t]", re.MULTILINE)
# An opening fence: three or more backticks or tildes, indented or not.
_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")


# A NamedTuple, not a frozen dataclass: made as every build imports this
# module, traces off too, in a sixth of the time (primer.book.markers).
class LiveBlock(NamedTuple):
    """One ``::: live`` block: what it waits for, and its lines (numbered from 1)."""

    chapter: str
    scenario: str | None
    start: int
    #: The ``::: end live`` line; None when the block is never closed.
    end: int | None
    #: The line of a block opened inside this one, if any (not allowed).
    nested: int | None = None

    @property
    def opening(self) -> str:
        """The opening line as written in its valid form."""
        return f"::: live {self.chapter}{f' {self.scenario}' if self.scenario else ''}"


def _outside_code(lines: Sequence[str]) -> list[bool]:
    outside, inside = [], None
    for line in lines:
        match = _FENCE.match(line)
        if inside is None:
            outside.append(match is None)
            if match:
                inside = match["fence"]
        else:
            outside.append(False)
            if match and match["fence"][0] == inside[0] and len(match["fence"]) >= len(inside):
                inside = None
    return outside


def blocks(markdown: str) -> list[LiveBlock]:
    """Every live block of a page, in order, fenced code left out."""
    if _EITHER.search(markdown) is None:  # most pages: every page is asked, traces off too
        return []
    lines = markdown.split("\n")
    found: list[LiveBlock] = []
    current: LiveBlock | None = None
    for number, (line, outside) in enumerate(zip(lines, _outside_code(lines), strict=True), start=1):
        if not outside or ":::" not in line:
            continue
        opened, closed = _OPEN.fullmatch(line.rstrip("\r")), _CLOSE.fullmatch(line.rstrip("\r"))
        if opened and current is None:
            current = LiveBlock(opened["chapter"], opened["scenario"], number, None)
        elif opened and current is not None and current.nested is None:
            current = LiveBlock(current.chapter, current.scenario, current.start, None, nested=number)
        elif closed and current is not None:
            found.append(LiveBlock(current.chapter, current.scenario, current.start, number, current.nested))
            current = None
    if current is not None:
        found.append(current)
    return found


def select(markdown: str, has_live: Callable[[str, str | None], bool]) -> str:
    """The page with each closed block's content kept (``has_live``) or dropped, its two lines gone.

    A block never closed is left as written: what it would hide is unclear,
    and ``problems`` reports it.
    """
    found = [block for block in blocks(markdown) if block.end is not None]
    if not found:
        return markdown
    lines = markdown.split("\n")
    dropped: set[int] = set()
    for block in found:
        end = block.end or block.start
        if has_live(block.chapter, block.scenario):
            dropped.update((block.start, end))
        else:
            dropped.update(range(block.start, end + 1))
    # A dropped line leaves an empty one: the Markdown around keeps its paragraphs apart.
    return "\n".join("" if number in dropped else line for number, line in enumerate(lines, start=1))


def problems(page: str, markdown: str, scenarios: Mapping[str, Sequence[str] | None]) -> list[str]:
    """What is wrong with a page's live blocks, one sentence each, naming page and line.

    ``scenarios`` maps each chapter to its scenario names (None when unknown).
    """
    found = []
    for block in blocks(markdown):
        where = f"{page} line {block.start}: the live block `{block.opening}`"
        if block.end is None:
            found.append(f"{where} is not closed: end it with a line `::: end live`.")
        if block.nested is not None:
            found.append(f"{where} holds another one (line {block.nested}): live blocks do not nest.")
        missing = unknown(block.chapter, block.scenario, scenarios)
        if missing is not None:
            found.append(f"{where} {missing}")
    return found


class LiveProse(Preprocessor):
    """The Markdown preprocessor that applies ``select`` to a page before it is parsed."""

    def __init__(self, md: Markdown, has_live: Callable[[str, str | None], bool]) -> None:
        super().__init__(md)
        self.has_live = has_live

    def run(self, lines: list[str]) -> list[str]:
        """The page's lines, each block kept or dropped."""
        text = "\n".join(lines)
        shown = select(text, self.has_live)
        return lines if shown is text else shown.split("\n")
