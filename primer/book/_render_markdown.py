"""A model's reply as a reader expects it: its Markdown rendered, safely, the raw text one click away.

A reply is untrusted text, so it is rendered by Python-Markdown with nothing
that could reach the page as markup it did not make itself:

* no raw HTML: the readers of HTML blocks and inline tags are taken out, so
  ``<script>`` or ``<img onerror=...>`` in a reply is text, escaped as any text is;
* links only to ``http``, ``https`` or a plain path (``render_text.safe_url``,
  on the address as a browser reads it, character references decoded), each
  with ``rel="noopener nofollow"``; any other link is its text alone;
* no image is loaded: an image is a link to its address, named by its alt text;
* headings become bold paragraphs (a reply's ``# Title`` is not the page's),
  and every element keeps only the attributes named below.

::

    shown = ReplyMarkdown()
    shown("The **butter** is [here](https://shop.example/).", "reply-raw")
    # <p>The <strong>butter</strong> is <a href="https://shop.example/" rel="noopener nofollow">here</a>.</p>
    shown("Milk is 1.20.", "reply-raw")  # None: rendering changes nothing, the text is shown as it is
"""

from __future__ import annotations

import html
import itertools
import re
import xml.etree.ElementTree as etree

from markdown import Markdown
from markdown.treeprocessors import Treeprocessor
from markupsafe import Markup

from primer.book._render_text import clean, escape_text, safe_url

__all__ = ["ReplyMarkdown"]

# What Python-Markdown (with fenced code and tables) makes, and the attributes each may keep.
_PLAIN = (
    "em",
    "strong",
    "pre",
    "blockquote",
    "ul",
    "li",
    "hr",
    "br",
    "span",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
)
_KEPT: dict[str, frozenset[str]] = {
    **dict.fromkeys(_PLAIN, frozenset()),
    "a": frozenset({"href", "rel", "title"}),
    "ol": frozenset({"start"}),
    "p": frozenset({"class"}),
    "code": frozenset({"class"}),  # language-python, from a fenced block's info string
}
_HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
_REL = "noopener nofollow"
# A code block's <pre>: only the renderer makes one (a reply's own "<pre>" is escaped text).
_PRE = re.compile("<pre>")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _address(url: str | None) -> str | None:
    """The address as a browser follows it (references decoded), if following it runs no script."""
    decoded = safe_url(html.unescape(url or ""))
    # Serialised with every & as &amp;: the browser reads back exactly what was checked.
    return None if decoded is None else decoded.replace("&", "&amp;")


class _Inert(Treeprocessor):
    """Makes the tree safe to show: safe links, no images, no headings, only the attributes kept."""

    def run(self, root: etree.Element) -> None:
        for element in root.iter():
            if element is root:  # the document's own div, which Python-Markdown takes off
                continue
            if element.tag == "img":
                self._image(element)
            elif element.tag in _HEADINGS:
                element.tag = "p"
                element.attrib = {"class": "tr-md-h"}
            if element.tag == "a":
                href = _address(element.get("href"))
                title = element.get("title")
                element.attrib = {}
                if href is None:
                    element.tag = "span"
                    continue
                element.attrib = {"href": href, "rel": _REL, **({"title": title} if title else {})}
            kept = _KEPT.get(str(element.tag))
            if kept is None:  # nothing here makes another element; should a new one appear, it is a span
                element.tag, kept = "span", frozenset()
            for name in [name for name in element.attrib if name not in kept]:
                del element.attrib[name]

    @staticmethod
    def _image(element: etree.Element) -> None:
        alt = element.get("alt") or ""
        href = _address(element.get("src"))
        element.attrib = {}
        element.tag = "a" if href is not None else "span"
        if href is not None:
            element.attrib = {"href": href, "rel": _REL}
        element.text = f"image: {alt}" if alt else "image"


class ReplyMarkdown:
    """Renders replies, one Python-Markdown instance per renderer call (it holds state while it converts)."""

    def __init__(self) -> None:
        self._md: Markdown | None = None

    def _markdown(self) -> Markdown:
        if self._md is None:
            md = Markdown(extensions=["fenced_code", "tables", "sane_lists"])
            # No raw HTML: an HTML block or tag in a reply is text.
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")
            # <someone@example.com> as a mailto: link, its address hidden in character references.
            md.inlinePatterns.deregister("automail")
            # Last, after the inline patterns made the links and images.
            md.treeprocessors.register(_Inert(md), "primer_inert", 0)
            self._md = md
        return self._md

    def __call__(self, text: str | None, anchor: str) -> Markup | None:
        """The reply's Markdown as safe HTML; None when there is none or it renders as the text itself.

        Its code blocks get ids from ``anchor`` (``ANCHOR-code-1``): Material's
        copy button names the block it copies after the closest id.
        """
        if not text or not text.strip():
            return None
        # Python-Markdown marks its own placeholders with STX and ETX: a reply must not forge one.
        source = clean(text)
        md = self._markdown()
        try:
            rendered = md.reset().convert(source)
        finally:
            md.reset()
        paragraphs = [part.strip() for part in _BLANK_LINE.split(source.strip())]
        if rendered == "\n".join(f"<p>{escape_text(part)}</p>" for part in paragraphs if part):
            return None  # plain paragraphs: the text as it is says the same
        number = itertools.count(1)
        rendered = _PRE.sub(lambda _: f'<pre id="{anchor}-code-{next(number)}">', rendered)
        return Markup(rendered)  # noqa: S704 - made of escaped text and the elements _Inert keeps
