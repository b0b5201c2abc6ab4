"""Keep secrets out of traces: redaction happens when recording.

Two rules. Headers that carry credentials are stored as ``not recorded``
whatever their value. And the values of the secrets the run knows (the
provider key, the service key) are scrubbed from every other string that is
recorded: URLs, bodies (httpbin echoes the request headers back in its body),
error messages and tracebacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["NOT_RECORDED", "SCRUBBED", "SENSITIVE_HEADERS", "Redactor"]

NOT_RECORDED = "not recorded"
SCRUBBED = "[secret]"

#: Header names (lower case) whose values are never recorded.
SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-auth-token",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
    }
)


class Redactor:
    """Scrubs known secret values and credential headers from what is recorded."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is scrubbed whole.
        self.secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)

    def text(self, value: str) -> str:
        """A string with every known secret replaced."""
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, SCRUBBED)
        return value

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
                    NOT_RECORDED if str(key).lower() in SENSITIVE_HEADERS and isinstance(item, str) else self.json(item)
                )
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [self.json(item) for item in value]
        return value
