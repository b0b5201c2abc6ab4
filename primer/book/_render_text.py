"""The renderer's text: escaping, JSON as plain text, ids, links that run no script."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from markupsafe import Markup

from primer.inert import invisible_characters, visible_escape

__all__ = ["Anchors", "clean", "escape_text", "json_block", "json_inline", "safe_url"]

# C0 controls (but tab, newline, carriage return) mean nothing on a page, and Python-Markdown
# uses STX/ETX to delimit its own placeholders: untrusted text must not forge one. C1 controls
# (0x9b is a one-byte CSI) and the invisible and bidirectional format characters hide or reorder
# what a reader sees: shown as the escapes a terminal shows (\u202e). The zero-width joiners stay:
# they join emoji and the letters of some scripts, and the redactor sees through them.
_CONTROLS: dict[int, str] = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127], "\ufffd")
_CONTROLS |= {
    ord(char): visible_escape(char)
    for char in [*map(chr, range(0x80, 0xA0)), *invisible_characters()]
    if char not in "\u200c\u200d"
}
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]+")


def clean(html: str) -> str:
    """``html`` with C0 controls (but tab, newline, carriage return) as U+FFFD, C1 and invisible ones as escapes."""
    return html.translate(_CONTROLS)


def escape_text(text: str) -> str:
    """``text`` escaped for element content (never an attribute): quotes stay, which keeps JSON a third lighter."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def json_block(value: Any) -> Markup:
    """A JSON value pretty-printed (indent 2) and escaped, for a ``<pre>`` (traces.js colours it when opened)."""
    return Markup(escape_text(json.dumps(value, indent=2, ensure_ascii=False, default=str)))  # noqa: S704 - escaped above


def json_inline(value: Any) -> Markup:
    """A JSON value on one line, as the seeds print ``attempt {"number": 1}``, escaped."""
    return Markup(escape_text(json.dumps(value, ensure_ascii=False, default=str)))  # noqa: S704 - escaped above


@dataclass
class Anchors:
    """Stable ``id`` values, unique on one page.

    The same turn is ``ch09_who_retries-service_is_busy-mock-turn-2`` on every
    build; a second trace of the same run on the page gets ``-2``.
    """

    used: set[str] = field(default_factory=set)

    def make(self, *parts: object) -> str:
        """An id from its parts, unique on this page."""
        base = "-".join(_UNSAFE_ID.sub("-", str(part)) for part in parts)
        anchor, count = base, 1
        while anchor in self.used:
            count += 1
            anchor = f"{base}-{count}"
        self.used.add(anchor)
        return anchor


def safe_url(url: str | None) -> str | None:
    """``url`` if following it runs no script (http, https or a plain path), else None."""
    # Browsers drop leading spaces and controls before reading the scheme, so must we.
    candidate = (url or "").strip("".join(map(chr, range(0x21))))
    if not candidate:
        return None
    return candidate if urlsplit(candidate).scheme.lower() in ("", "http", "https") else None
