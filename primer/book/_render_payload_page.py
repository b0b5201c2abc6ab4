"""A chapter's payload page: every payload block of its traces, as a page of its own."""

from __future__ import annotations

import re

from primer.book._links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR, page_relative
from primer.book._render import render_traces
from primer.book._render_text import escape_text
from primer.book._source import ChapterTraces

__all__ = ["render_payloads"]


_INLINE_PAYLOAD = re.compile(
    r'<div class="tr-body" data-search-exclude id="(?P<id>[^"]+)">\n(?P<body>.*?)\n</div>', re.S
)

_IN_PAGE_LINK = re.compile(r'href="#([^"]+)"')
_ID = re.compile(r' id="([^"]+)"')
# What a payload block's id says: {scenario}-{mode}-turn-{n}-model, -tool-{k}, -transcript, -error; {scenario}-compare.
_BLOCK = re.compile(
    r"(?P<scenario>[A-Za-z0-9_]+)-(?:compare|(?P<mode>mock|live)-"
    r"(?:turn-(?P<turn>\d+)-(?:model|tool-(?P<tool>\d+))|(?P<what>transcript|error)))(?:-\d+)?"
)

_STYLE = (
    # Summaries at least 24 px tall (WCAG 2.2 target size). Light or dark as
    # the reader's system is, with every colour set (the browser's own dark
    # link colours fail contrast), each at least 7:1 against its background.
    "<style>:root{color-scheme:light dark}body{font-family:sans-serif;margin:1rem;background:#fff;color:#1a1a1a}"
    "a{color:#0645ad}a:visited{color:#5a3696}"
    "summary{padding:.2rem 0;min-height:24px;box-sizing:border-box}pre{white-space:pre-wrap;overflow-wrap:anywhere}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .4rem;vertical-align:top}"
    "h2{font-size:1.2rem;margin:1.5rem 0 .3rem;font-family:monospace}"
    ".tr-payload{border-top:2px solid #888;margin-top:1rem}"
    ".tr-payload-head{font-size:1rem;margin:.4rem 0;font-family:monospace}"
    ".tr-payload-head a{font-family:sans-serif;font-size:.85rem;font-weight:400;margin-left:.5rem}"
    "@media (prefers-color-scheme:dark){body{background:#1e2129;color:#e2e4e9}"
    "a{color:#8ab4f8}a:visited{color:#d7aefb}td,th{border-color:#555}}</style>"
)


def _heading(chapter: str, anchor: str) -> tuple[str | None, str]:
    """The scenario a payload block belongs to, and what it is, in words: ``mock run · turn 2 · model call``."""
    match = _BLOCK.fullmatch(anchor.removeprefix(f"{chapter}-").removesuffix("-body"))
    if match is None:
        return None, anchor
    if match["mode"] is None:
        return match["scenario"], "mock and live side by side"
    parts = [f"{match['mode']} run"]
    if match["turn"]:
        parts += [f"turn {match['turn']}", f"tool call {match['tool']}" if match["tool"] else "model call"]
    else:
        parts.append("transcript" if match["what"] == "transcript" else "scenario error")
    return match["scenario"], " · ".join(parts)


def _to_page(page: str | None, fragment: str) -> str:
    """A link to the chapter page (made relative to this one below), or to nothing here if it is not known."""
    if page is None:
        return f'href="#{fragment}"'
    # Marked twice: root-relative (made relative to this page), and the fragment
    # traces.js links to in place once the block is filled into the chapter page.
    return f'href="{page}#{fragment}" data-tr-page-link="#{fragment}" data-tr-root-relative="{page}"'


def render_payloads(traces: ChapterTraces, *, page_url: str | None = None) -> str:
    """The chapter's payload page: every payload block of its traces, by the block's id, as a page of its own.

    Published beside the trace JSON as ``traces/CHAPTER.payloads.html``
    (``TraceStore.payloads_url``): a page's payload block links to its
    element here, and traces.js fills the block in from it when opened. The
    ids are the ones the chapter's blocks have on a page that shows the
    chapter once. It stands alone, for a reader without JavaScript: a link
    back to the chapter's page (``page_url``, relative to the site root, as
    MkDocs gives a page's URL), a heading per scenario and per block
    (*mock run · turn 2 · model call*), and every link lands: a link to a
    call lands on that call's payload here, one to what only the chapter
    page has (a turn, an ending) goes there. Root-relative links are made
    relative to this page.
    """
    html = render_traces(traces, payloads=False)
    chapter = escape_text(traces.chapter)
    # The home page's URL is "": from traces/, the site root.
    page = None if page_url is None else page_url or "./"
    parts = [
        f"{PAYLOADS_HEAD}\n",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="robots" content="noindex">',
        # No icon of its own: declared empty, so a browser asks for none (a 404 otherwise).
        '<link rel="icon" href="data:,">',
        f"<title>Payloads of {chapter}</title>",
        _STYLE,
        "</head><body><main>\n",  # one landmark holding it all, for a screen reader's "skip to main"
        f"<h1>Payloads of {chapter}</h1>\n",
    ]
    if page is not None:
        parts.append(f'<p><a href="{page}" data-tr-root-relative="{page}">Back to the chapter page</a></p>\n')
    blocks = [(match["id"], match["body"]) for match in _INLINE_PAYLOAD.finditer(html)]
    here = {anchor for anchor, _ in blocks}
    # What else has an id here: what the blocks hold (a declared tool list, a body).
    inside = {found for _, body in blocks for found in _ID.findall(body)}

    def landing(link: re.Match[str]) -> str:
        # A link to a call on the page lands, here, on that call's payload (and, filled in, inside the call).
        target = f"{link[1]}-body"
        if target in here:
            return f'href="#{target}"'
        return link[0] if link[1] in inside else _to_page(page, link[1])

    scenario = None
    for anchor, body in blocks:
        name, what = _heading(traces.chapter, anchor)
        if name is not None and name != scenario:
            scenario = name
            parts.append(f"<h2>scenario {escape_text(name)}</h2>\n")
        linked = _IN_PAGE_LINK.sub(landing, body)
        back = f" <a {_to_page(page, anchor.removesuffix('-body'))}>on the chapter page</a>" if page else ""
        parts.append(
            f'<div class="tr-payload" id="{anchor}"><h3 class="tr-payload-head">{escape_text(what)}{back}</h3>\n'
            f"{linked}\n</div>\n"
        )
    parts.append("</main></body></html>\n")
    return page_relative("".join(parts), f"{PUBLISHED_DIR}/{traces.chapter}{PAYLOADS_SUFFIX}")
