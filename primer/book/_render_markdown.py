"""A model's reply rendered as its Markdown, safely (the raw text one click away), and the page's text helpers.

A reply is untrusted: no raw HTML, links only to http(s) or a plain path, no image loaded, headings
as bold lines, only the attributes ``_KEPT`` names. Nor may rendering show what recording kept out
(``sk-12**34**`` reads ``sk-1234``): the text a reader sees is redacted as the raw text was, and
markup inside a word or a character reference, which could join a key this build does not know,
shows the raw text instead.
"""

from __future__ import annotations

import functools
import html
import itertools
import re
import threading
import xml.etree.ElementTree as etree
from urllib.parse import urlsplit

from markdown import Markdown
from markdown.treeprocessors import Treeprocessor
from markupsafe import Markup

from primer.inert import clean
from primer.redact import Redactor
from primer.settings import Settings


def escape_text(text: str) -> str:
    """``text`` escaped for element content (never an attribute): quotes stay, which keeps JSON a third lighter."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_url(url: str | None) -> str | None:
    """``url`` if following it runs no script (http, https or a plain path), else None."""
    # Browsers drop leading spaces and controls before reading the scheme, so must we.
    candidate = (url or "").strip("".join(map(chr, range(0x21))))
    if not candidate:
        return None
    return candidate if urlsplit(candidate).scheme.lower() in ("", "http", "https") else None


_PLAIN = ["em", "strong", "pre", "blockquote", "ul", "li", "hr", "br", "span"]
_TABLE = ["table", "thead", "tbody", "tr", "th", "td"]
_KEPT: dict[str, frozenset[str]] = {
    **dict.fromkeys([*_PLAIN, *_TABLE], frozenset()),
    "a": frozenset({"href", "rel", "title"}),
    "ol": frozenset({"start"}),
    "p": frozenset({"class"}),
    "code": frozenset({"class"}),  # language-python, from a fenced block's info string
}
_HEADINGS = frozenset(f"h{level}" for level in range(1, 7))
_PRE = re.compile("<pre>")  # only the renderer makes one: a reply's own "<pre>" is escaped text
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_TAG = re.compile(r"<[^>]*>")
# Tags between two characters of one word, or a reference the reader sees as its character.
_JOINS = re.compile(r"[\w+/=-](?:</?[a-z][^>]*>)+[\w+/=-]|&(?!(?:amp|lt|gt|quot);)")


def _address(url: str | None) -> str | None:
    # The address as a browser follows it (references decoded), if following it runs no script.
    decoded = safe_url(html.unescape(url or ""))
    # Serialised with every & as &amp;: the browser reads back exactly what was checked.
    return None if decoded is None else decoded.replace("&", "&amp;")


class _Inert(Treeprocessor):
    """Makes the tree safe to show: safe links, no images, no headings, only the attributes kept."""

    def run(self, root: etree.Element) -> None:
        for element in root.iter():
            if element is root:  # the document's own div, which Python-Markdown takes off
                continue
            if element.tag in ("a", "img"):
                href = _address(element.get("href" if element.tag == "a" else "src"))
                title, alt = element.get("title"), element.get("alt")
                if element.tag == "img":
                    element.text, title = f"image: {alt}" if alt else "image", None
                element.tag = "a" if href else "span"
                element.attrib = (
                    {"href": href, "rel": "noopener nofollow", **({"title": title} if title else {})} if href else {}
                )
            elif element.tag in _HEADINGS:
                element.tag, element.attrib = "p", {"class": "tr-md-h"}
            kept = _KEPT.get(str(element.tag))
            if kept is None:  # nothing here makes another element; should a new one appear, it is a span
                element.tag, kept = "span", frozenset()
            for name in [name for name in element.attrib if name not in kept]:
                del element.attrib[name]


# One Python-Markdown instance a thread: it holds state while it converts (Zensical renders pages in threads).
_THREAD = threading.local()


def _markdown() -> Markdown:
    md: Markdown | None = getattr(_THREAD, "md", None)
    if md is None:
        md = _THREAD.md = Markdown(extensions=["fenced_code", "tables", "sane_lists"])
        md.preprocessors.deregister("html_block")  # no raw HTML: an HTML block or tag is text
        md.inlinePatterns.deregister("html")
        md.inlinePatterns.deregister("automail")  # a mailto: link hidden in character references
        md.treeprocessors.register(_Inert(md), "primer_inert", 0)  # after the links are made
    return md


# By text and the keys a reader must not see: a reply is worded in its folded lines, its payload,
# the payload page and the prose check (made a Markdown instance and converted each, 0.2 s of a cold build).
@functools.lru_cache(maxsize=4096)
def _convert(text: str, keys: tuple[str, ...]) -> str | None:
    # The reply's safe HTML; None when a reader would see a key, or markup could join one.
    md = _markdown()
    try:
        # Python-Markdown marks its own placeholders with STX and ETX: clean, so a reply cannot forge one.
        rendered = md.reset().convert(clean(text))
    finally:
        md.reset()
    if _JOINS.search(rendered):
        return None
    seen = html.unescape(_TAG.sub("", rendered))
    return None if Redactor(keys).text(seen) != seen else rendered


class ReplyMarkdown:
    """Renders replies, redacting the keys the environment sets as it is made."""

    def __init__(self) -> None:
        self._keys = tuple(Settings.keys_from_env().values())

    def _convert(self, text: str) -> str | None:
        return _convert(text, self._keys)

    def __call__(self, text: str | None, anchor: str) -> Markup | None:
        """The reply's Markdown as safe HTML; None when there is none, it renders as the text itself, or it is unsafe.

        Its code blocks get ids ``ANCHOR-code-1``...: Material's copy button names a block after the closest id.
        """
        if not text or not text.strip():
            return None
        rendered = self._convert(text)
        paragraphs = [part.strip() for part in _BLANK_LINE.split(clean(text).strip())]
        if rendered is None or rendered == "\n".join(f"<p>{escape_text(part)}</p>" for part in paragraphs if part):
            return None  # plain paragraphs: the text as it is says the same
        number = itertools.count(1)
        rendered = _PRE.sub(lambda _: f'<pre id="{anchor}-code-{next(number)}">', rendered)
        return Markup(rendered)  # noqa: S704 - made of escaped text and the elements _Inert keeps

    def plain(self, text: str) -> str:
        """What a reader sees of the reply, markup gone (``**butter**`` as ``butter``); the raw text if unsafe."""
        rendered = self._convert(text)
        return text if rendered is None else html.unescape(_TAG.sub("", rendered))
