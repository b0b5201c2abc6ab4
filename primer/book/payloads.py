"""Set a page's trace payloads aside while a search plugin indexes it.

The renderer puts every payload (context tables, schemas, wire exchanges,
timelines) in a ``<div class="tr-body" data-search-exclude>`` or
``<div class="tr-timeline" data-search-exclude>`` that holds no other ``div``
(``primer/book/templates/parts.html.j2``). Material's search plugin honours
the attribute, but only after its HTML parser has walked every tag inside:
payloads are four fifths of a trace's HTML, so that walk was the largest cost
traces added to a build. MkDocs' own search plugin does not honour the
attribute at all, and indexed the payloads.

So the hook empties those blocks just before the search plugin reads the
page, and fills them again just after::

    stash = PayloadStash()
    page.content = stash.take("ch09.md", page.content)       # before search
    ...                                                       # search indexes
    page.content = stash.give_back("ch09.md", page.content)  # after search

The index is the same as before (the blocks' text was never indexed); the
page's final HTML is the same, payloads included.

Payloads come back in order, one per emptied block. If another plugin
changed the number of blocks in between, the page gets its HTML as it was
before it was emptied (losing that plugin's change, never a payload), and a
warning says so.
"""

from __future__ import annotations

import re

from primer.book.logs import book_logger

__all__ = ["OPENINGS", "PAYLOAD", "PayloadStash"]

log = book_logger("mkdocs.plugins.primer")

#: The opening tags of payload blocks. A block holds no ``div`` (the
#: templates promise it), so the first ``</div>`` after one closes it.
OPENINGS = ('<div class="tr-body" data-search-exclude>', '<div class="tr-timeline" data-search-exclude>')
_CLOSING = "</div>"
#: One payload block: its opening tag, its content, its closing tag.
PAYLOAD = re.compile(r'(<div class="tr-(?:body|timeline)" data-search-exclude>)(.*?)(</div>)', re.S)


def _blocks(html: str) -> list[tuple[int, int]]:
    """(start, end) of the content of every payload block, in order."""
    # str.find rather than PAYLOAD: a page is hundreds of kilobytes, and
    # this runs on every page of every build.
    found = []
    for opening in OPENINGS:
        start = html.find(opening)
        while start >= 0:
            content = start + len(opening)
            end = html.find(_CLOSING, content)
            if end < 0:
                break
            found.append((content, end))
            start = html.find(opening, end)
    return sorted(found)


class PayloadStash:
    """Payloads set aside, by page, between ``take`` and ``give_back``."""

    def __init__(self) -> None:
        # page -> (the HTML before it was emptied, the payloads in order)
        self._pages: dict[str, tuple[str, list[str]]] = {}

    def take(self, page: str, html: str) -> str:
        """The page's HTML with every payload block emptied; the payloads are kept."""
        blocks = _blocks(html)
        if not blocks:
            return html
        pieces, payloads, position = [], [], 0
        for start, end in blocks:
            pieces.append(html[position:start])
            payloads.append(html[start:end])
            position = end
        pieces.append(html[position:])
        self._pages[page] = (html, payloads)
        return "".join(pieces)

    def give_back(self, page: str, html: str) -> str:
        """The page's HTML with its payloads put back (unchanged if none were taken)."""
        kept = self._pages.pop(page, None)
        if kept is None:
            return html
        original, payloads = kept
        blocks = _blocks(html)
        if len(blocks) != len(payloads) or any(start != end for start, end in blocks):
            log.warning(
                f"traces: {page}: a plugin changed the page while its trace payloads were set aside for search "
                f"({len(blocks)} blocks, {len(payloads)} payloads); the page keeps its HTML from before."
            )
            return original
        pieces, position = [], 0
        for (start, _), payload in zip(blocks, payloads, strict=True):
            pieces += [html[position:start], payload]
            position = start
        pieces.append(html[position:])
        return "".join(pieces)

    def clear(self) -> None:
        """Forget payloads never given back (a build that stopped half way)."""
        self._pages.clear()
