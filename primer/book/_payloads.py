"""Give a search plugin a page's trace blocks as their summary lines only.

Material's search walks every tag of a ``data-search-exclude`` block before it
leaves it out (the largest cost traces added to a build; MkDocs' own search
ignores the attribute). So the renderer marks each trace block with two
comments, and the hook swaps each block for a paragraph of its text outside its
payloads before search reads the page (``PayloadStash.take``) and puts it back
after (``give_back``); if a plugin changed the blocks in between, the page keeps
its HTML from before, and a warning says so.
"""

from __future__ import annotations

import html as htmllib
import re

from primer.book._logs import book_logger

__all__ = ["BLOCK_END", "BLOCK_START", "PAYLOAD", "PayloadStash", "search_text"]

log = book_logger("mkdocs.plugins.primer")

#: The comments around every trace block the renderer writes.
BLOCK_START = "<!--trace-book-->"
BLOCK_END = "<!--/trace-book-->"
#: One payload block (it holds no ``div``, the templates promise it): opening tag, content, closing tag.
PAYLOAD = re.compile(r'(<div class="tr-(?:body|timeline)" data-search-exclude[^>]*>)(.*?)(</div>)', re.S)
_INERT = re.compile(r"<(script|template|style)\b.*?</\1\s*>", re.S | re.I)  # what no reader of the index needs
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")
_BLOCK = re.compile(f"{re.escape(BLOCK_START)}.*?{re.escape(BLOCK_END)}", re.S)


def search_text(block: str) -> str:
    """A trace block's text outside its payloads, escaped, on one line: what search indexes of it."""
    text = _TAG.sub(" ", _INERT.sub(" ", PAYLOAD.sub("", block)))
    # Unescaped and escaped again: what search reads is exactly the text a reader sees.
    return htmllib.escape(_SPACE.sub(" ", htmllib.unescape(text)).strip(), quote=False)


class PayloadStash:
    """Trace blocks set aside, by page, between ``take`` and ``give_back``."""

    def __init__(self) -> None:
        self._pages: dict[str, tuple[str, list[str]]] = {}  # page -> (the HTML before, the blocks in order)

    def take(self, page: str, html: str) -> str:
        """The page's HTML with every trace block swapped for its summary text; the blocks are kept."""
        kept = _BLOCK.findall(html)
        if not kept:
            return html
        self._pages[page] = (html, kept)
        return _BLOCK.sub(lambda block: f"{BLOCK_START}<p>{search_text(block[0])}</p>{BLOCK_END}", html)

    def give_back(self, page: str, html: str) -> str:
        """The page's HTML with its trace blocks put back (unchanged if none were taken)."""
        taken = self._pages.pop(page, None)
        if taken is None:
            return html
        original, kept = taken
        found = len(_BLOCK.findall(html))
        if found != len(kept):
            log.warning(
                f"traces: {page}: a plugin changed the page while its trace blocks were set aside for search "
                f"({found} found, {len(kept)} kept); the page keeps its HTML from before."
            )
            return original
        blocks = iter(kept)
        return _BLOCK.sub(lambda _: next(blocks), html)

    def clear(self) -> None:
        """Forget blocks never given back (a build that stopped half way)."""
        self._pages.clear()
