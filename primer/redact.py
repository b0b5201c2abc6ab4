r"""Keep secrets out of traces: redaction happens when recording.

Two rules. Credentials are stored as ``not recorded`` whatever their value:
headers that carry them (``authorization``, ``api-key``, cookies, ...), the
same names as keys of a JSON body (httpbin echoes the request headers back in
its body), query parameters such as ``api_key`` and the user and password of
a URL. And the values of the secrets the run knows (the provider key, the
service key) are scrubbed from every other string that is recorded: URLs,
bodies, error messages and tracebacks, in every form a secret takes there::

    >>> Redactor(["k-123456"]).text("Bearer k-123456")
    'Bearer [secret]'
    >>> Redactor(["k-123456"]).text("Basic dXNlcjprLTEyMzQ1Ng==")  # base64("user:k-123456")
    'Basic dXNlcj[secret]=='

The forms: as is; percent-encoded (``quote`` and ``quote_plus``); escaped
inside a JSON string (also with ``/`` as ``\/``); hex, lower and upper case;
and base64, standard and URL-safe, padded or not, wherever the secret starts.
And disguised, as a model that read a key may write it: with zero-width or
other invisible characters between its characters, in full-width or other
compatibility forms, spaced out, or reversed::

    >>> Redactor(["k-123456"]).text("it is k\u200b-1 2 3 4 5 6, or 654321-k")
    'it is [secret], or [secret]'

or split by the Markdown a page renders a reply from, which a reader sees joined
(``k-12**3456**``, a backtick, a character reference such as ``&#51;``, a link's
text against the word after it)::

    >>> Redactor(["k-123456"]).text("it is k-12**34**56, or k-12&#51;456")
    'it is [secret], or [secret]'

Base64 is the one that needs thought. It turns each 3 bytes into 4
characters, so a secret inside a longer encoded string (``user:secret`` in a
``Basic`` credential, a debugging echo of a header) starts at byte 0, 1 or 2
of a 3-byte group, and each of those *alignments* encodes it differently. For
each, the redactor encodes the secret behind that many filler bytes and keeps
the *core*: the characters made only of the secret's own bits, the same
whatever bytes surround it. Any occurrence of a core is scrubbed together
with the one character on either side that mixes the secret's first or last
bits with its neighbours', so no bit of the secret is left; what goes with it
is a few bits of the neighbours, which is the price of leaking none.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

from primer.inert import INVISIBLE

__all__ = [
    "MIN_SECRET_LENGTH",
    "NOT_RECORDED",
    "SCRUBBED",
    "SENSITIVE_FIELDS",
    "SENSITIVE_HEADERS",
    "SENSITIVE_PARAMETERS",
    "Redactor",
]

NOT_RECORDED = "not recorded"
SCRUBBED = "[secret]"

#: Shorter values are not scrubbed: replacing every "ab" in a trace would
#: destroy it, so settings refuse secrets this short instead. The encoded
#: forms need no higher limit: a secret's base64 core is never shorter than
#: the secret (4 bytes give at least 4 characters, each from a 64-letter
#: alphabet) and its hex twice as long, so an encoded form is no likelier
#: than the plain one to turn up in ordinary text by chance.
MIN_SECRET_LENGTH = 4

#: Header names (lower case) whose values are never recorded.
SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "x-auth-token",
        "x-amz-security-token",
        "ocp-apim-subscription-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
    }
)

#: Keys of a JSON body (lower case) whose string values are never recorded:
#: the header names (echoed back) and the usual names of credentials.
SENSITIVE_FIELDS = SENSITIVE_HEADERS | {
    "api_key",
    "apikey",
    "access_token",
    "refresh_token",
    "client_secret",
    "password",
}

#: Query (and fragment) parameters (lower case) whose values are never recorded.
SENSITIVE_PARAMETERS = frozenset(
    {
        "api_key",
        "api-key",
        "apikey",
        "key",
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "client_secret",
        "password",
        "secret",
        "sig",
        "signature",
        "x-amz-signature",
        "x-amz-security-token",
    }
)

# How each character of a standard base64 core may appear in recorded text:
# itself, its URL-safe twin, percent-encoded in a URL, "\/" in some JSON.
_BASE64_CHAR = {"+": r"(?:\+|-|%2[Bb])", "/": r"(?:/|_|%2[Ff]|\\/)"}
# The character that holds the secret's first or last bits and a neighbour's.
_PARTIAL = r"(?:[A-Za-z0-9+/_-]|%2[BbFf]|\\/)?"
#: Secrets shorter than this are not looked for disguised: with the spaces
#: dropped, ordinary text holds short strings by chance ("ab cd" is "abcd").
#: A real key is far longer.
MIN_DISGUISED_LENGTH = 8
# What a disguised secret hides behind: white space, invisible characters,
# and the marks that change nothing a key is made of (the combining
# grapheme joiner, the variation selectors) or stand for nothing (the
# Hangul fillers).
_HIDING = re.compile(f"[\\s{INVISIBLE}\u034f\u115f\u1160\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef]")
# Inline Markdown a reader does not see once a page renders a reply: emphasis, code, strike, escapes, brackets.
_MARKS = "*_`~\\[]"
# The same for ASCII text, as a table for str.translate (what \s is in ASCII, and the marks).
_ASCII_SPACES = str.maketrans("", "", " \t\n\r\v\f\x1c\x1d\x1e\x1f" + _MARKS)
# What else a page reads out of a reply's Markdown: a character reference (read as its character),
# a link's target and a tag (not shown: the words on either side meet). Any other character is one token.
_SPAN = re.compile(r"\]\([^)\s]*\)|<[^<>\s]{1,64}>")
_REFERENCE = r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
_TOKEN = re.compile(f"({_REFERENCE})|({_SPAN.pattern})|.", re.S)
# A URL inside a longer text (an error message, an echoed body), up to a space or a quote.
_URL_IN_TEXT = re.compile(r"https?://[^\s\"'<>`\\]+", re.IGNORECASE)


@functools.cache
def _literal_forms(secret: str) -> frozenset[str]:
    """The secret as it appears in a URL, a JSON string, or as hex."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret)}
    for ascii_only in (True, False):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        # Some encoders (PHP's among them) also escape "/" as "\/".
        forms |= {escaped, escaped.replace("/", "\\/")}
    hexed = secret.encode().hex()
    return frozenset({*forms, hexed, hexed.upper()})


def _base64_cores(secret: str) -> Iterator[tuple[str, bool, bool]]:
    """For each alignment: the core, and whether a mixed character precedes or follows it."""
    raw = secret.encode()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode()
        start, end = 8 * offset, 8 * (offset + len(raw))  # the secret's bits
        # Characters wholly inside the secret's bits: 6-bit groups from ceil(start/6).
        first, last = -(-start // 6), end // 6
        yield encoded[first:last], start % 6 != 0, end % 6 != 0


class _Encoded:
    """One base64 alignment of one secret: a pattern, and a literal every match contains."""

    def __init__(self, core: str, before: bool, after: bool) -> None:
        body = "".join(_BASE64_CHAR.get(c, re.escape(c)) for c in core)
        self.pattern = re.compile(f"{_PARTIAL if before else ''}{body}{_PARTIAL if after else ''}")
        # Letters and digits are the same in every variant: the longest run of
        # them is a cheap test that lets most strings skip the pattern.
        self.anchor = max(re.split(r"[+/]", core), key=len)
        self.length = len(core)


# Both cached: a run makes a redactor per scenario and service, all for the same few keys.
@functools.cache
def _base64_forms(secret: str) -> tuple[_Encoded, ...]:
    return tuple(_Encoded(*core) for core in _base64_cores(secret))


def _folded(text: str) -> str:
    """``text`` as a reader takes it in: markup and hiding characters dropped, compatibility forms folded (NFKC).

    The quick form, tested on every string: a secret found in it is then looked for token by token.
    """
    if "](" in text or "<" in text:
        text = _SPAN.sub("", text)
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        return text.translate(_ASCII_SPACES)
    return _HIDING.sub("", unicodedata.normalize("NFKC", text)).translate(_ASCII_SPACES)


def _folded_with_origins(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``_folded(text)``, with the span of ``text`` each of its characters came from."""
    folded: list[str] = []
    origins: list[tuple[int, int]] = []
    for token in _TOKEN.finditer(text):
        if token[2]:
            continue
        read = html.unescape(token[1]) if token[1] else token[0]
        for char in read:
            if _HIDING.match(char) or char in _MARKS:
                continue
            for part in unicodedata.normalize("NFKC", char):
                folded.append(part)
                origins.append(token.span())
    return "".join(folded), origins


class Redactor:
    """Scrubs known secret values and credentials from what is recorded."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is scrubbed whole.
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        forms = {form for s in self.secrets for form in _literal_forms(s)}
        self._forms = sorted(forms, key=len, reverse=True)
        self._encoded = [encoded for s in self.secrets for encoded in _base64_forms(s)]
        # Nothing shorter than this can hold a secret in any form.
        self._shortest = min([*map(len, self._forms), *(e.length for e in self._encoded)], default=0)
        # The secrets as a disguise would leave them once folded, and reversed.
        disguised = {_folded(s) for s in self.secrets if len(s) >= MIN_DISGUISED_LENGTH}
        self._disguised = sorted(disguised | {s[::-1] for s in disguised}, key=len, reverse=True)

    def with_secrets(self, *more: str | None) -> Redactor:
        """A redactor that also scrubs ``more``."""
        return Redactor([*self.secrets, *more])

    def with_url_credentials(self, url: str) -> Redactor:
        """A redactor that also scrubs the password and credential parameters ``url`` carries.

        They are ``not recorded`` in the URL itself; this keeps them out of
        whatever repeats them (httpbin echoes the URL and its arguments).
        """
        try:
            parts = urlsplit(url)
            password = parts.password
            pairs = [*parse_qsl(parts.query), *parse_qsl(parts.fragment)]
        except ValueError:
            return self
        found = [v for n, v in pairs if n.lower() in SENSITIVE_PARAMETERS]
        if password:
            found += [password, unquote(password)]
        found = [v for v in found if len(v) >= MIN_SECRET_LENGTH and v not in self.secrets]
        return Redactor([*self.secrets, *found]) if found else self

    def text(self, value: str) -> str:
        """A string with every known secret replaced, and each URL in it as ``url`` keeps it."""
        if "://" in value:
            value = _URL_IN_TEXT.sub(lambda found: self._credentials(found.group()), value)
        return self._scrub(value)

    def url(self, value: str) -> str:
        """A URL with its user, password and credential parameters not recorded, secrets scrubbed."""
        return self._scrub(self._credentials(value))

    def headers(self, headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Headers, lower-cased and sorted, credentials not recorded."""
        return sorted(
            (name.lower(), NOT_RECORDED if name.lower() in SENSITIVE_HEADERS else self.text(value))
            for name, value in headers
        )

    def json(self, value: Any) -> Any:
        """A JSON value with credential keys not recorded and secrets scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                self.text(str(key)): (
                    NOT_RECORDED if str(key).lower() in SENSITIVE_FIELDS and isinstance(item, str) else self.json(item)
                )
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.json(item) for item in value]
        return value

    def _scrub(self, value: str) -> str:
        if not self.secrets or len(value) < self._shortest:
            return value
        for form in self._forms:
            if form in value:
                value = value.replace(form, SCRUBBED)
        for encoded in self._encoded:
            if encoded.anchor in value:
                value = encoded.pattern.sub(SCRUBBED, value)
        return self._undisguised(value)

    def _undisguised(self, value: str) -> str:
        """``value`` with each disguised or reversed secret scrubbed, with whatever it hid behind."""
        if not self._disguised:
            return value
        folded = _folded(value)
        if not any(secret in folded for secret in self._disguised):
            return value  # the cheap test, made on every string: most hold nothing
        folded, origins = _folded_with_origins(value)
        spans: list[tuple[int, int]] = []
        for secret in self._disguised:
            start = folded.find(secret)
            while start >= 0:
                end = start + len(secret)
                spans.append((origins[start][0], origins[end - 1][1]))
                start = folded.find(secret, end)
        merged: list[list[int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)  # overlapping (a secret and its reversal): one
            else:
                merged.append([start, end])
        parts, last = [], 0
        for start, end in merged:
            parts += [value[last:start], SCRUBBED]
            last = end
        return "".join([*parts, value[last:]])

    def _credentials(self, url: str) -> str:
        """The URL without user, password or credential parameters; as it was when it had none."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return url  # not a URL after all: the secret values are still scrubbed
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{NOT_RECORDED.replace(' ', '-')}@{netloc.rsplit('@', 1)[1]}"
        query, fragment = self._parameters(parts.query), self._parameters(parts.fragment)
        if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
            return url
        return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))

    def _parameters(self, query: str) -> str:
        """A query (or fragment) with credentials not recorded and secrets scrubbed from its decoded values."""
        if "=" not in query:
            return query  # "#token" is as likely an anchor on the page as a credential
        pairs = parse_qsl(query, keep_blank_values=True)
        # Decoded, so a secret percent-encoded twice over is found too.
        kept = [(n, NOT_RECORDED if v and n.lower() in SENSITIVE_PARAMETERS else self._scrub(v)) for n, v in pairs]
        return query if kept == pairs else urlencode(kept, safe="[]")
