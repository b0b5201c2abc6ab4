"""Every form a secret can take in an output, for the tests that look for leaks.

``forms`` are the encodings a provider or a service could echo a key in, each
as it would stand in a longer text: plain, percent-encoded, escaped in JSON,
hex, and base64 with the key at each of the three byte alignments, in both
alphabets, padded or not, as a ``Basic`` credential, in a URL and in JSON.

``probes`` are what must never be found in any output: the plain, URL and
JSON forms, the hex forms and, for each base64 alignment, the characters
that depend on the key alone. They are computed here independently of
``primer.redact``: by encoding the key between all-zero and all-one
neighbours and keeping the characters that come out the same.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

__all__ = ["HEADS", "TAILS", "base64_cores", "echo", "forms", "leaks", "probes"]

#: Put before a key, these start it at byte 0, 1 and 2 of a 3-byte base64 group.
HEADS = ("", "a", "ab")
#: Put after it, these end the encoded text at each alignment (so with and without padding).
TAILS = ("", "z", "yz")


def base64_cores(secret: str) -> list[str]:
    """For each alignment (0, 1, 2), the standard base64 characters made of the secret's bits alone."""
    raw = secret.encode()
    cores = []
    for offset in range(3):
        low = base64.b64encode(b"\x00" * offset + raw + b"\x00" * 3).decode()
        high = base64.b64encode(b"\xff" * offset + raw + b"\xff" * 3).decode()
        same = [i for i, (a, b) in enumerate(zip(low, high, strict=True)) if a == b and a != "="]
        assert same == list(range(same[0], same[-1] + 1)), "the unchanged characters are one run"
        cores.append(low[same[0] : same[-1] + 1])
    return cores


def forms(secret: str) -> dict[str, str]:
    """Every encoding of ``secret`` a provider or service might echo, by name."""
    escaped = json.dumps(secret)[1:-1]
    found = {
        "plain": secret,
        "quote": quote(secret, safe=""),
        "quote_plus": quote_plus(secret),
        "JSON": escaped,
        "JSON with \\/": escaped.replace("/", "\\/"),
        "hex": secret.encode().hex(),
        "HEX": secret.encode().hex().upper(),
        "hex of user:key": f"user:{secret}".encode().hex(),
    }
    for offset, head in enumerate(HEADS):
        for tail in TAILS:
            raw = f"{head}{secret}{tail}".encode()
            standard = base64.b64encode(raw).decode()
            urlsafe = base64.urlsafe_b64encode(raw).decode()
            where = f"at {offset}, {len(tail)} after"
            found[f"base64 {where}"] = standard
            found[f"base64 {where}, unpadded"] = standard.rstrip("=")
            found[f"base64url {where}"] = urlsafe
            found[f"base64url {where}, unpadded"] = urlsafe.rstrip("=")
            found[f"base64 {where}, in a URL"] = quote(standard, safe="")
            found[f"base64 {where}, in JSON with \\/"] = standard.replace("/", "\\/")
    for credential in (f"user:{secret}", f"{secret}:x", f"Aladdin:{secret}"):
        found[f"Basic {credential.replace(secret, 'KEY')}"] = "Basic " + base64.b64encode(credential.encode()).decode()
    return found


def probes(secret: str) -> dict[str, str]:
    """What no output may contain, by name: a hit on any of these is a leak."""
    escaped = json.dumps(secret)[1:-1]
    found = {
        "plain": secret,
        "quote": quote(secret, safe=""),
        "quote_plus": quote_plus(secret),
        "JSON": escaped,
        "JSON with \\/": escaped.replace("/", "\\/"),
        "hex": secret.encode().hex(),
        "HEX": secret.encode().hex().upper(),
    }
    for offset, core in enumerate(base64_cores(secret)):
        found[f"base64 core at {offset}"] = core
        found[f"base64url core at {offset}"] = core.replace("+", "-").replace("/", "_")
        found[f"base64 core at {offset}, in a URL"] = quote(core, safe="")
        found[f"base64 core at {offset}, in JSON with \\/"] = core.replace("/", "\\/")
    return found


def echo(secrets: Iterable[str]) -> str:
    """One text holding every form of every secret, as a debugging echo would."""
    return " ".join(f"{name}={form}" for secret in secrets for name, form in forms(secret).items())


def leaks(text: str, secrets: Iterable[str]) -> list[str]:
    """The names of the probes of ``secrets`` found in ``text`` (none, when nothing leaked)."""
    return sorted(
        f"{name} of key {number}"
        for number, secret in enumerate(secrets, start=1)
        for name, probe in probes(secret).items()
        if probe in text
    )
