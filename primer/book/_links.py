"""Links a trace block makes relative to the site root, made relative to the page it is on.

The renderer writes each link to the trace JSON root-relative, marked ``data-tr-root-relative``
(``traces.js`` resolves it so after instant navigation); ``page_relative`` makes it work without
JavaScript: ``page_relative(html, "ch09_who_retries/")`` gives ``href="../traces/ch09_who_retries.json"``.
"""

from __future__ import annotations

import posixpath
import re

#: The machinery's cache, relative to the book's root (the folder of mkdocs.yml).
CACHE_DIR = ".cache/trace-book"
#: Folder of the site (and of the docs, for frozen live traces) holding trace JSON.
PUBLISHED_DIR = "traces"
#: How a chapter's payload page is named after the chapter, in ``PUBLISHED_DIR``.
PAYLOADS_SUFFIX = ".payloads.html"
#: How a payload page the book wrote begins (an author's own HTML there stays).
PAYLOADS_HEAD = "<!doctype html>\n<!-- trace-book payloads -->"

# A payload block's or a timeline turn's link (its page named by its chapter's div, ``data-tr-payloads``), or a
# relative href, maybe with a fragment, and the same path marked root-relative later in the tag: both after `href="`,
# found first (7x faster).
_LINK = re.compile(
    r'href="(?:(?:(?<=<a class="tr-load" data-search-exclude href=")|(?<=<a class="tr-tl-turn" href="))'
    r'(?P<stub>[^"#?:/][^"#?:]*)'
    r'|(?P<path>[^"#?:/][^"#?:]*)(?P<fragment>#[^"]*)?"(?P<between>[^<>]*?) data-tr-root-relative="(?P=path)")'
)


def page_relative(html: str, page_url: str) -> str:
    """``html``'s root-relative trace links made relative to ``page_url`` (MkDocs': ``""`` is the home page)."""
    folder = posixpath.dirname(page_url) or "."

    def relative(match: re.Match[str]) -> str:
        path = match["path"] or match["stub"]
        # A folder's URL keeps its final slash (relpath drops it): no redirect to follow.
        href = posixpath.relpath(path, folder) + ("/" if path.endswith("/") else "")
        if match["stub"]:
            return f'href="{href}'
        return f'href="{href}{match["fragment"] or ""}"{match["between"]} data-tr-root-relative="{path}"'

    return _LINK.sub(relative, html)
