"""Give a search plugin a page's trace blocks as their summary lines only.

A trace block is mostly payload (context tables, schemas, wire exchanges,
timelines), each in a ``data-search-exclude`` block that Material's search
plugin leaves out of the index, but only after its HTML parser has walked
every tag inside. That walk was the largest cost traces added to a build, and
MkDocs' own search plugin does not honour the attribute at all.

So the renderer marks each trace block with two comments (``BLOCK_START``,
``BLOCK_END``), and the hook swaps every marked block for a plain paragraph
of what search should index, the block's text outside its payloads, just
before the search plugin reads the page, and puts the blocks back just
after::

    stash = PayloadStash()
    page.content = stash.take("ch09.md", page.content)       # before search
    ...                                                       # search indexes
    page.content = stash.give_back("ch09.md", page.content)  # after search

The index holds the same words as before (the summary lines, never a
payload); the page's final HTML is the same, every payload block included
(in a book's page, a payload block is a link to the chapter's payload page).

A block's text is made at every build (some milliseconds for a whole
book's blocks).

Blocks come back in order, one per marked paragraph. If another plugin
changed the number of marked paragraphs in between, the page gets its HTML
as it was before (losing that plugin's change, never a payload), and a
warning says so.
"""

from __future__ import annotations

import html as htmllib
import re

from primer.book._logs import book_logger

__all__ = ["BLOCK_END", "BLOCK_START", "OPENINGS", "PAYLOAD", "PayloadStash", "search_text"]

log = book_logger("mkdocs.plugins.primer")

#: The comments around every trace block the renderer writes.
BLOCK_START = "<!--trace-book-->"
BLOCK_END = "<!--/trace-book-->"

#: How the opening tags of payload blocks begin (a ``tr-body`` has an id, and
#: may be only a link to the chapter's payload page). A block holds no ``div``
#: (the templates promise it), so the first ``</div>`` after one closes it.
OPENINGS = ('<div class="tr-body" data-search-exclude', '<div class="tr-timeline" data-search-exclude')
#: One payload block: its opening tag, its content, its closing tag.
PAYLOAD = re.compile(r'(<div class="tr-(?:body|timeline)" data-search-exclude[^>]*>)(.*?)(</div>)', re.S)
# What no reader of the index needs: scripts, templates, styles, whole.
_INERT = re.compile(r"<(script|template|style)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def search_text(block: str) -> str:
    """A trace block's text outside its payloads, escaped, on one line: what search indexes of it."""
    text = PAYLOAD.sub("", block)
    text = _TAG.sub(" ", _INERT.sub(" ", text))
    # The block's text is escaped HTML already: unescape and escape again, so
    # what search reads is exactly the text a reader sees.
    return htmllib.escape(_SPACE.sub(" ", htmllib.unescape(text)).strip(), quote=False)


def _blocks(page: str) -> list[tuple[int, int]]:
    """(start, end) of every marked trace block, comments included, in order."""
    found = []
    start = page.find(BLOCK_START)
    while start >= 0:
        end = page.find(BLOCK_END, start)
        if end < 0:
            break
        end += len(BLOCK_END)
        found.append((start, end))
        start = page.find(BLOCK_START, end)
    return found


class PayloadStash:
    """Trace blocks set aside, by page, between ``take`` and ``give_back``."""

    def __init__(self) -> None:
        # page -> (the HTML before, the blocks in order)
        self._pages: dict[str, tuple[str, list[str]]] = {}

    def take(self, page: str, html: str) -> str:
        """The page's HTML with every trace block swapped for its summary text; the blocks are kept."""
        blocks = _blocks(html)
        if not blocks:
            return html
        pieces, kept, position = [], [], 0
        for start, end in blocks:
            block = html[start:end]
            pieces += [html[position:start], f"{BLOCK_START}<p>{search_text(block)}</p>{BLOCK_END}"]
            kept.append(block)
            position = end
        pieces.append(html[position:])
        self._pages[page] = (html, kept)
        return "".join(pieces)

    def give_back(self, page: str, html: str) -> str:
        """The page's HTML with its trace blocks put back (unchanged if none were taken)."""
        taken = self._pages.pop(page, None)
        if taken is None:
            return html
        original, kept = taken
        blocks = _blocks(html)
        if len(blocks) != len(kept):
            log.warning(
                f"traces: {page}: a plugin changed the page while its trace blocks were set aside for search "
                f"({len(blocks)} found, {len(kept)} kept); the page keeps its HTML from before."
            )
            return original
        pieces, position = [], 0
        for (start, end), block in zip(blocks, kept, strict=True):
            pieces += [html[position:start], block]
            position = end
        pieces.append(html[position:])
        return "".join(pieces)

    def clear(self) -> None:
        """Forget blocks never given back (a build that stopped half way)."""
        self._pages.clear()
