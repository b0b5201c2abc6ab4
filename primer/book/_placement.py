"""Where a marker's HTML goes in a page: found as a block, held as a token, put back whole.

``TraceProcessor`` finds the lines meant as markers among a page's blocks
(``primer.book._markers``), asks the extension (``primer.book.markdown``) for
each one's HTML and leaves a paragraph holding a token in its place;
``PutBack`` swaps each token's paragraph for its HTML once the page is
serialised, so Python-Markdown never parses a trace block. With traces off a
marker becomes the placeholder note, built as an element.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from typing import TYPE_CHECKING

from markdown.blockparser import BlockParser
from markdown.blockprocessors import BlockProcessor
from markdown.postprocessors import Postprocessor
from markdown.util import AtomicString

from primer.book._markers import Marker, NearMiss, parse_line
from primer.book._pages import OFF_CLASS, off_note
from primer.book._sources import assets_for_page

if TYPE_CHECKING:
    from markdown import Markdown

    from primer.book.markdown import TraceExtension

__all__ = ["PutBack", "TraceProcessor", "token"]


class TraceProcessor(BlockProcessor):
    """Replaces each marker line with its rendered traces (held as a token, put back whole: never re-parsed)."""

    def __init__(self, parser: BlockParser, extension: TraceExtension) -> None:
        super().__init__(parser)
        self.extension = extension
        # What test() found in the block it was asked about, for run(), which
        # Python-Markdown calls next with that block: each is parsed once.
        self._tested: tuple[str, tuple[int, Marker | NearMiss] | None] = ("", None)

    @staticmethod
    def _first(block: str) -> tuple[int, Marker | NearMiss] | None:
        # The first line of the block meant as a marker, valid or not.
        for index, line in enumerate(block.split("\n")):
            parsed = parse_line(line) if ":::" in line else None
            if parsed is not None:
                return index, parsed
        return None

    def test(self, parent: etree.Element, block: str) -> bool:
        """Whether the block holds a line meant as a marker (a near miss is shown as an error)."""
        if ":::" not in block:  # asked of nearly every block of every page: most hold none
            return False
        self._tested = (block, self._first(block))
        return self._tested[1] is not None

    def run(self, parent: etree.Element, blocks: list[str]) -> None:
        """Render the first marker of the block; the text around it is parsed as usual."""
        block = blocks.pop(0)
        tested, found = self._tested
        if tested is not block:
            found = self._first(block)
        if found is None:  # test() said yes; be safe if another processor changed it
            blocks.insert(0, block)
            return
        index, marker = found
        lines = block.split("\n")
        before, after = "\n".join(lines[:index]).rstrip("\n"), "\n".join(lines[index + 1 :]).lstrip("\n")
        if before:
            self.parser.parseBlocks(parent, [before])
        if isinstance(marker, Marker) and self.extension.off:
            assets_for_page(self.parser.md)
            _placeholder(parent, marker)
        else:
            if isinstance(marker, NearMiss):
                html = self.extension.html_for_near_miss(marker)
            else:
                html = self.extension.html_for(marker.chapter, marker.scenario)
            held = etree.SubElement(parent, "p")
            held.text = self.extension.hold(html)
        if after:
            blocks.insert(0, after)


class PutBack(Postprocessor):
    """Puts each marker's HTML where the paragraph holding its token is (``TraceExtension.hold``).

    Not Python-Markdown's HTML stash: its postprocessor searches every
    stashed block for placeholders nested in it, and a trace block is tens of
    kilobytes with none, on every page of a warm build. A token is found in
    the page's own HTML only, once.
    """

    def __init__(self, md: Markdown, extension: TraceExtension) -> None:
        super().__init__(md)
        self.extension = extension

    def run(self, text: str) -> str:
        """The document with each token, and the paragraph around it, replaced by its HTML."""
        held = self.extension.held
        if not held:
            return text

        def back(match: re.Match[str]) -> str:
            index = int(match[1] or match[2])
            return held[index] if index < len(held) else match[0]

        return _TOKEN.sub(back, text)


# A marker's token: STX and ETX around it, which the renderer never lets
# through from a model, a tool or a service (``render._clean``), so no trace
# can forge one; a word Python-Markdown's own placeholders do not use.
def token(index: str) -> str:
    """The token that stands for the held HTML number ``index`` until ``PutBack`` puts it back."""
    return f"\x02trace-book:{index}\x03"


_TOKEN = re.compile(f"<p>{token('([0-9]+)')}</p>|{token('([0-9]+)')}")


def _placeholder(parent: etree.Element, marker: Marker) -> None:
    # The note ``primer.book._pages.placeholder`` writes, built as an element
    # with atomic text: no inline pattern reads it, and Python-Markdown has no
    # stashed HTML to put back (which costs more than the element, on every page).
    note = etree.SubElement(parent, "p", {"class": OFF_CLASS})
    note.text = AtomicString(off_note(marker))
