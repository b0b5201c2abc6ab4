"""Keep secrets out of traces: redaction happens when recording.

Two rules. Credentials are stored as ``not recorded`` whatever their value:
headers that carry them (``authorization``, ``api-key``, cookies, ...), the
same names as keys of a JSON body (httpbin echoes the request headers back in
its body), query parameters such as ``api_key`` and the user and password of
a URL. And the values of the secrets the run knows (the provider key, the
service key) are scrubbed from every other string that is recorded: URLs,
bodies, error messages and tracebacks, in the forms they take there (as is,
percent-encoded in a URL, escaped inside a JSON string)::

    >>> Redactor(["k-123456"]).text("Bearer k-123456")
    'Bearer [secret]'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

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
#: destroy it, so settings refuse secrets this short instead.
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

#: Query parameters (lower case) whose values are never recorded.
SENSITIVE_PARAMETERS = frozenset({"api_key", "api-key", "apikey", "key", "access_token", "token", "sig", "signature"})


class Redactor:
    """Scrubs known secret values and credentials from what is recorded."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is scrubbed whole.
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        # Each secret as it appears in a URL or inside a JSON string, too
        # (some encoders, PHP's among them, also escape "/" as "\/").
        forms = {
            form
            for s in self.secrets
            for form in (
                s,
                quote(s, safe=""),
                quote_plus(s),
                json.dumps(s)[1:-1],
                json.dumps(s)[1:-1].replace("/", "\\/"),
            )
        }
        self._forms = sorted(forms, key=len, reverse=True)

    def with_secrets(self, *more: str | None) -> Redactor:
        """A redactor that also scrubs ``more``."""
        return Redactor([*self.secrets, *more])

    def text(self, value: str) -> str:
        """A string with every known secret replaced, in any of its forms."""
        for form in self._forms:
            if form in value:
                value = value.replace(form, SCRUBBED)
        return value

    def url(self, value: str) -> str:
        """A URL with its user, password and credential parameters not recorded."""
        try:
            parts = urlsplit(value)
            netloc = parts.netloc
            if "@" in netloc:
                netloc = f"{NOT_RECORDED.replace(' ', '-')}@{netloc.rsplit('@', 1)[1]}"
            query = parts.query
            if query:
                pairs = parse_qsl(query, keep_blank_values=True)
                if any(name.lower() in SENSITIVE_PARAMETERS for name, _ in pairs):
                    query = urlencode([(n, NOT_RECORDED if n.lower() in SENSITIVE_PARAMETERS else v) for n, v in pairs])
            value = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
        except ValueError:
            pass  # not a URL after all: the secret values are still scrubbed below
        return self.text(value)

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
