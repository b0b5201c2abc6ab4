"""Give a search plugin a page's trace blocks as their summary text only.

Material's search walks every tag of a ``data-search-exclude`` block before it leaves it out (the
largest cost traces added to a build; MkDocs' own search ignores the attribute). So the plugin swaps
each block for a paragraph of its text outside its payloads while search reads the page (``take``),
then puts it back (``give_back``); the text is made as the block is rendered, and kept with it.
"""

from __future__ import annotations

import html as htmllib
import re

__all__ = ["PAYLOAD", "give_back", "search_text", "take"]

#: One payload block (it holds no ``div``, the templates promise it): opening tag, content, closing tag.
PAYLOAD = re.compile(r'(<div class="tr-(?:body|timeline)" data-search-exclude[^>]*>)(.*?)(</div>)', re.S)
_INERT = re.compile(r"<(script|template|style)\b.*?</\1\s*>", re.S | re.I)  # what no reader of the index needs
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


def search_text(block: str) -> str:
    """A trace block's text outside its payloads, escaped, on one line: what search indexes of it."""
    text = _TAG.sub(" ", _INERT.sub(" ", PAYLOAD.sub("", block)))
    # Unescaped and escaped again: what search reads is exactly the text a reader sees.
    return htmllib.escape(_SPACE.sub(" ", htmllib.unescape(text)).strip(), quote=False)


def take(html: str, blocks: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]]:
    """``html`` with each of ``blocks`` (search text, HTML) found in it swapped for a stand-in; each pair swapped.

    A block another plugin changed is not found, and search reads it whole.
    """
    taken: list[tuple[str, str]] = []
    pieces, done = [], 0
    for search, block in blocks:
        found = html.find(block, done)
        if found >= 0:
            stand_in = f"<!--trace-book:{len(taken)}--><p>{search}</p>"
            pieces += [html[done:found], stand_in]
            taken.append((stand_in, block))
            done = found + len(block)
    return "".join([*pieces, html[done:]]), taken


def give_back(html: str, taken: list[tuple[str, str]]) -> str | None:
    """``html`` with each stand-in ``take`` made swapped back for its block; None if one is not there."""
    for stand_in, block in taken:
        found = html.find(stand_in)
        if found < 0:
            return None
        html = f"{html[:found]}{block}{html[found + len(stand_in) :]}"
    return html
