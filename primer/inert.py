r"""Make untrusted text safe to print in a terminal or a log.

A model's reply, a tool's result, a service's answer and an exception's
message are untrusted: printed raw, an escape sequence retitles the
terminal or clears it, a carriage return hides what came before, and a
newline starts a line that looks like the program's own log::

    >>> inert("fine\x1b]0;pwned\x07\nINFO    -  Documentation built")
    'fine\\x1b]0;pwned\\x07\\nINFO    -  Documentation built'

``inert`` shows each such character as a visible escape instead, so the
text stays on its line and drives nothing. Printable text, accents, CJK and
emoji included, is left as it is.
"""

from __future__ import annotations

import functools
import re

__all__ = ["INVISIBLE", "clean", "inert", "invisible_characters", "visible_escape"]

#: Characters a reader cannot see, though they are there: Unicode's format
#: characters (category Cf: zero-width spaces and joiners, the soft hyphen,
#: the bidirectional marks, embeddings, overrides and isolates, the
#: byte-order mark, the tag characters). A key with them between its
#: characters reads as the key; text with them can say what it hides. As a
#: character class's body, for ``primer.redact`` too.
INVISIBLE = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)


def invisible_characters() -> list[str]:
    """Every character of ``INVISIBLE``, one by one (for a translation table)."""
    found: list[str] = []
    index = 0
    while index < len(INVISIBLE):
        first = INVISIBLE[index]
        if INVISIBLE[index + 1 : index + 2] == "-":
            found += map(chr, range(ord(first), ord(INVISIBLE[index + 2]) + 1))
            index += 3
        else:
            found.append(first)
            index += 1
    return found


# What a terminal or a log reader would act on rather than show, or would
# show as nothing:
# - C0 controls (ESC starts every escape sequence; BEL ends an OSC one; \n and
#   \r make lines), DEL, and C1 controls (0x9b is a one-byte CSI);
# - what Python's splitlines, and so MkDocs' log formatter, treats as a line
#   break besides \n: \v, \f, \x1c-\x1e, \x85, U+2028, U+2029 (the ranges
#   above cover all but the last two);
# - the invisible characters above, the bidirectional controls among them,
#   which reorder what is shown ("Trojan Source"); but the zero-width
#   joiner and non-joiner between two characters that are not ASCII, where
#   they are writing (an emoji family, a Persian word), not a disguise;
# - lone surrogates, which cannot even be encoded to print.
_JOINERS = "\u200c\u200d"
_UNSAFE = (
    f"(?![{_JOINERS}])[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{INVISIBLE}]"
    f"|(?<![^\x00-\x7f])[{_JOINERS}]|[{_JOINERS}](?![^\x00-\x7f])"
)

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    # C0 as C and Python spell it; the rest as JSON spells it (visible_escape).
    return f"\\x{code:02x}" if code < 0x20 else visible_escape(char)


def visible_escape(char: str) -> str:
    r"""One character as JSON escapes it: ``\u202e``; past U+FFFF, as its two surrogates.

    Such characters never appear raw in JSON outside a string, so JSON text
    with them escaped is still JSON, and decodes to the same data.
    """
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def inert(text: str) -> str:
    r"""``text`` with every control, line-breaking or reordering character shown as an escape.

    The result holds no control character at all, so it prints as one line
    that changes nothing in the terminal: ``\x1b`` for ESC, ``\n``,
    ``\r`` and ``\t`` by name, ``\u2028`` and ``\u202e`` for the Unicode
    line separator and the right-to-left override. Backslashes are kept as
    they are, so ``inert(inert(text)) == inert(text)``: the escapes are for
    reading, not for decoding.

    To print several lines of one's own, make each line inert on its own::

        print("\n".join(inert(line) for line in lines))
    """
    if text.isprintable():  # the most of what is logged: no pattern needed, nor compiled
        return text
    return _unsafe().sub(_escape, text)


@functools.cache
def _unsafe() -> re.Pattern[str]:
    # Compiled on first use: about a quarter of a millisecond, which every
    # build would pay as it imports the library, traces off too.
    return re.compile(_UNSAFE)


# -- text for a page: lines and tabs are the page's to show; what hides or forges something is not --


# C0 controls (but tab, newline, carriage return) mean nothing on a page, and Python-Markdown
# uses STX/ETX to delimit its own placeholders: untrusted text must not forge one. C1 controls
# (0x9b is a one-byte CSI) and the invisible and bidirectional format characters hide or reorder
# what a reader sees: shown as the escapes a terminal shows (\u202e). The zero-width joiners stay:
# they join emoji and the letters of some scripts, and the redactor sees through them.
@functools.cache
def _page_controls() -> tuple[dict[int, str], re.Pattern[str]]:
    controls: dict[int, str] = dict.fromkeys([*range(0, 9), 11, 12, *range(14, 32), 127], "\ufffd")
    controls |= {
        ord(char): visible_escape(char)
        for char in [*map(chr, range(0x80, 0xA0)), *invisible_characters()]
        if char not in "\u200c\u200d"
    }
    # translate() looks each character of a text beyond ASCII up in the table, four times slower than a
    # search of the characters as a class of ranges (26 of them for the 230); on ASCII it is the fastest.
    spans: list[list[int]] = []
    for code in sorted(controls):
        if spans and spans[-1][1] == code - 1:
            spans[-1][1] = code
        else:
            spans.append([code, code])
    ranges = "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in spans)
    return controls, re.compile(f"[{ranges}]")


def clean(text: str) -> str:
    """``text`` for a page: C0 controls (not tab, newline, carriage return) as U+FFFD, C1 and invisible as escapes."""
    controls, pattern = _page_controls()
    if text.isascii():
        return text.translate(controls)
    return pattern.sub(lambda found: controls[ord(found[0])], text)
