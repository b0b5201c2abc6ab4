"""Links a trace block makes relative to the site root, made relative to the page.

The renderer does not know which page a trace lands on, so it writes the trace JSON link
root-relative and marks it ``data-tr-root-relative``; the hook, which knows the page, rewrites each
such ``href`` against the page's URL, so the link works without JavaScript::

    html = page_relative(html, "ch09_who_retries/")
    # href="../traces/ch09_who_retries.json"

The attribute stays: ``traces.js`` resolves it against the site root after instant navigation.
"""

from __future__ import annotations

import posixpath
import re
from functools import lru_cache

__all__ = ["CACHE_DIR", "PAYLOADS_HEAD", "PAYLOADS_SUFFIX", "PUBLISHED_DIR", "page_relative"]

#: The machinery's cache, relative to the book's root (the folder of mkdocs.yml).
CACHE_DIR = ".cache/trace-book"
#: Folder of the site (and of the docs, for frozen live traces) holding trace JSON.
PUBLISHED_DIR = "traces"
#: How a chapter's payload page is named after the chapter, in ``PUBLISHED_DIR``.
PAYLOADS_SUFFIX = ".payloads.html"
#: How a payload page the book wrote begins (an author's own HTML there stays).
PAYLOADS_HEAD = "<!doctype html>\n<!-- trace-book payloads -->"

# An href (maybe with a fragment) and, later in the same tag, the same path marked root-relative.
_LINK = re.compile(
    r'href="(?P<path>[^"#?:]*)(?P<fragment>#[^"]*)?"(?P<between>[^<>]*?) data-tr-root-relative="(?P=path)"'
)


def page_relative(html: str, page_url: str) -> str:
    """``html`` with each root-relative trace link made relative to the page at ``page_url``.

    ``page_url`` is as MkDocs gives it (``ch09_who_retries/``, ``a/b.html``, ``""`` for the home
    page). Absolute paths and URLs (no ``:`` matches) are left alone.
    """
    marker = " data-tr-root-relative="
    found = html.find(marker)
    if found < 0:
        return html
    folder = posixpath.dirname(page_url) or "."

    def relative(match: re.Match[str]) -> str:
        path = match["path"]
        if path.startswith("/"):
            return match[0]
        fragment = match["fragment"] or ""
        return f'href="{_relpath(path, folder)}{fragment}"{match["between"]} data-tr-root-relative="{path}"'

    # Only the tags that carry the attribute (two per chapter on a page of
    # tens of kilobytes): matching the pattern at every href of the page,
    # the theme's navigation included, cost more than the rest of the hook.
    pieces, done = [], 0
    while found >= 0:
        start = html.rfind("<", done, found)
        end = html.find(">", found)
        if start < 0 or end < 0:
            break
        pieces += [html[done:start], _LINK.sub(relative, html[start:end])]
        done = end
        found = html.find(marker, end)
    pieces.append(html[done:])
    return "".join(pieces)


@lru_cache(maxsize=4096)
def _relpath(path: str, folder: str) -> str:
    # A page links to its chapter's two files a score of times (the JSON, the
    # payload page with a fragment per block), and posixpath.relpath asks the
    # working directory twice each time. Both are relative to the site root,
    # so the answer does not depend on that directory, only on the two paths.
    # A folder's URL keeps its final slash (relpath drops it): no redirect to follow.
    relative = posixpath.relpath(path, folder)
    return f"{relative}/" if path.endswith("/") and not relative.endswith("/") else relative
