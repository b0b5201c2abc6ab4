"""Prose about one mode's runs, shown only where those runs are, and marked as theirs.

It goes in a *mode block*::

    ::: live ch09_who_retries
    In the live run, open turn 2: the real model split the order in two.
    ::: end live

Any Markdown goes between the two lines, which never show (``::: mock CHAPTER [SCENARIO]`` likewise);
in fenced code they are examples. A live block shows when its chapter (or scenario) has a live run on
the page, a stale one too; a mock block whenever the chapter's traces show. A shown block sits in an
element labelled with its mode (``wrap``), which the ``show:`` switch hides with that mode's runs.
``select`` keeps or drops each block; ``problems`` says what is wrong with a page's blocks, by line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from markdown import Markdown
from markdown.preprocessors import Preprocessor

from primer.book._markers import _lines_outside_code
from primer.locator import unknown

__all__ = ["MODES", "LiveProse", "ModeBlock", "blocks", "near_misses", "opening_html", "problems", "select"]

#: The modes a block can be about.
MODES = ("live", "mock")

_NAME = r"[A-Za-z0-9_]+"
_OPEN = re.compile(
    rf" {{0,3}}:::[ \t]+(?P<mode>live|mock)[ \t]+(?P<chapter>{_NAME})(?:[ \t]+(?P<scenario>{_NAME}))?[ \t]*"
)
_CLOSE = re.compile(r" {0,3}:::[ \t]+end[ \t]+(?P<mode>live|mock)[ \t]*")
# A line meant as a block's opening or closing line: ":::" (indented, or
# not), then "live", "mock" or "end live"/"end mock" in any case and
# spacing, ending the line or followed by a space ("::: lively" is not ours).
_MEANT = re.compile(r"[ \t]*:::[ \t]*(?:end[ \t]*)?(?:live|mock)(?:[ \t]|$)", re.IGNORECASE)
# Where any of them could start a line: a page without one is not read line by line.
_EITHER = re.compile(r"^[ \t]*:::[ \t]*(?i:live|mock|end)", re.MULTILINE)


# A NamedTuple, not a frozen dataclass: made as every build imports this
# module, traces off too, in a sixth of the time (primer.book._markers).
class ModeBlock(NamedTuple):
    """One ``::: live`` or ``::: mock`` block: what it waits for, and its lines (numbered from 1)."""

    chapter: str
    scenario: str | None
    start: int
    #: The ``::: end MODE`` line; None when the block is never closed.
    end: int | None
    #: The line of a block opened inside this one, if any (not allowed).
    nested: int | None = None
    mode: str = "live"
    #: The line of an ``::: end`` naming the other mode, which closed it all the same.
    mismatched: int | None = None

    @property
    def opening(self) -> str:
        """The opening line as written in its valid form."""
        return f"::: {self.mode} {self.chapter}{f' {self.scenario}' if self.scenario else ''}"


def _lines(markdown: str) -> list[tuple[int, str]]:
    return [(number, line.rstrip("\r")) for number, line in _lines_outside_code(markdown) if ":::" in line]


def blocks(markdown: str) -> list[ModeBlock]:
    """Every mode block of a page, in order, fenced code left out."""
    if _EITHER.search(markdown) is None:  # most pages: every page is asked, traces off too
        return []
    found: list[ModeBlock] = []
    current: ModeBlock | None = None
    for number, line in _lines(markdown):
        opened, closed = _OPEN.fullmatch(line), _CLOSE.fullmatch(line)
        if opened and current is None:
            current = ModeBlock(opened["chapter"], opened["scenario"], number, None, mode=opened["mode"])
        elif opened and current is not None and current.nested is None:
            current = current._replace(nested=number)
        elif closed and current is not None:
            other = number if closed["mode"] != current.mode else None
            found.append(current._replace(end=number, mismatched=other))
            current = None
    if current is not None:
        found.append(current)
    return found


def near_misses(markdown: str) -> list[tuple[int, str]]:
    """Lines meant as a block's opening or closing line that are not valid ones: (line, text)."""
    if _EITHER.search(markdown) is None:
        return []
    return [
        (number, line.strip())
        for number, line in _lines(markdown)
        if _MEANT.match(line) and not (_OPEN.fullmatch(line) or _CLOSE.fullmatch(line))
    ]


def opening_html(block: ModeBlock) -> str:
    """The element a shown block's content sits in, opened, with its label: ``</div>`` closes it."""
    scenario = f' data-tr-scenario="{html.escape(block.scenario)}"' if block.scenario else ""
    about = f"the {block.mode} run" + (f" of {block.scenario}" if block.scenario else "")
    return (
        f'<div class="tr-prose" data-mode="{block.mode}" data-tr-chapter="{html.escape(block.chapter)}"{scenario}>'
        f'<p class="tr-prose-mode"><span class="tr-badge">{block.mode}</span> about {html.escape(about)}</p>'
    )


def select(
    markdown: str,
    has_live: Callable[[str, str | None], bool],
    *,
    mock: bool = True,
    wrap: Callable[[ModeBlock], tuple[str, str]] | None = None,
) -> str:
    """The page with each closed block's content kept or dropped, its two lines gone.

    A live block is kept when ``has_live(chapter, scenario)``, a mock block
    when ``mock`` (False: no traces show). ``wrap`` gives what a kept
    block's two lines become (each stands as a paragraph of its own); by
    default, nothing. A block never closed is left as written: what it
    would hide is unclear, and ``problems`` reports it.
    """
    found = [block for block in blocks(markdown) if block.end is not None]
    if not found:
        return markdown
    lines = markdown.split("\n")
    replaced: dict[int, str] = {}
    for block in found:
        end = block.end or block.start
        if mock if block.mode == "mock" else has_live(block.chapter, block.scenario):
            opening, closing = wrap(block) if wrap is not None else ("", "")
            # Blank lines around: each stands as a paragraph, apart from the prose.
            replaced[block.start] = f"\n{opening}\n" if opening else ""
            replaced[end] = f"\n{closing}\n" if closing else ""
        else:
            replaced.update(dict.fromkeys(range(block.start, end + 1), ""))
    # A dropped line leaves an empty one: the Markdown around keeps its paragraphs apart.
    return "\n".join(replaced.get(number, line) for number, line in enumerate(lines, start=1))


def problems(page: str, markdown: str, scenarios: Mapping[str, Sequence[str] | None]) -> list[str]:
    """What is wrong with a page's mode blocks, one sentence each, naming page and line.

    ``scenarios`` maps each chapter to its scenario names (None when unknown).
    """
    found = [
        f"{page} line {number}: `{text}` looks like the line of a mode block but is not one. The valid forms are "
        "`::: live CHAPTER [SCENARIO]` (or `::: mock ...`) and `::: end live` (or `::: end mock`), "
        "at the start of the line, a space after `:::`, the names made of letters, digits and underscores."
        for number, text in near_misses(markdown)
    ]
    for block in blocks(markdown):
        where = f"{page} line {block.start}: the {block.mode} block `{block.opening}`"
        if block.end is None:
            found.append(f"{where} is not closed: end it with a line `::: end {block.mode}`.")
        if block.mismatched is not None:
            found.append(
                f"{where} is closed on line {block.mismatched} by the other mode's line: write `::: end {block.mode}`."
            )
        if block.nested is not None:
            found.append(f"{where} holds another one (line {block.nested}): {block.mode} blocks do not nest.")
        missing = unknown(block.chapter, block.scenario, scenarios)
        if missing is not None:
            found.append(f"{where} {missing}")
    return sorted(found, key=lambda message: int(message.split(" line ", 1)[1].split(":", 1)[0]))


class LiveProse(Preprocessor):
    """The Markdown preprocessor that applies ``select`` to a page before it is parsed.

    ``wrap`` (as ``select`` takes it) puts a kept block into its labelled element.
    """

    def __init__(
        self,
        md: Markdown,
        has_live: Callable[[str, str | None], bool],
        wrap: Callable[[ModeBlock], tuple[str, str]] | None = None,
        shows: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(md)
        self.has_live = has_live
        self.wrap = wrap
        self.shows = shows

    def run(self, lines: list[str]) -> list[str]:
        """The page's lines, each block kept or dropped."""
        text = "\n".join(lines)
        mock = self.shows() if self.shows is not None else True
        shown = select(text, self.has_live, mock=mock, wrap=self.wrap if mock else None)
        return lines if shown is text else shown.split("\n")
