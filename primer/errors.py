"""Errors the library raises, each saying who is at fault and what to do.

The tree::

    PrimerError
    ├── ConfigError            a setting is malformed (names the variable)
    ├── NotFound               no such chapter or scenario (lists what exists)
    ├── ChapterError           a chapter module declares its scenarios wrongly
    ├── ToolFailed             a tool call did not succeed; carries a Failure
    │   ├── ArgumentsRejected  the model's arguments were wrong: it can fix them
    │   └── ServiceFailed      the service answered badly or not at all
    └── ScriptExhausted        a mock model ran out of scripted replies
"""

from __future__ import annotations

from primer.trace import Failure

__all__ = [
    "ArgumentsRejected",
    "ChapterError",
    "ConfigError",
    "NotFound",
    "PrimerError",
    "ScriptExhausted",
    "ServiceFailed",
    "ToolFailed",
    "quoted",
]


def quoted(value: object) -> str:
    """Quote a value the way every message of the book does: ``['404']``.

    The brackets make the boundary of untrusted text visible in a message
    that is itself sent to a model.
    """
    return str([str(value)])


class PrimerError(Exception):
    """Base of every error the library raises on purpose."""


class ConfigError(PrimerError):
    """A setting from the environment or a file is malformed."""


class NotFound(PrimerError, LookupError):
    """A chapter or scenario that does not exist was asked for."""


class ChapterError(PrimerError):
    """A chapter module declares its scenarios wrongly (two with one name); names the definitions."""


class ScriptExhausted(PrimerError):
    """A mock model was asked for more replies than its script holds."""


class ToolFailed(PrimerError):
    """A tool call did not succeed. ``failure`` says whether to retry."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class ArgumentsRejected(ToolFailed):
    """The tool refused the arguments; the caller (the model) can fix them."""

    def __init__(self, message: str) -> None:
        super().__init__(Failure(message=message, retryable=False, idempotent=False, caller_can_fix=True))


class ServiceFailed(ToolFailed):
    """The service behind a tool failed, after every attempt allowed.

    ``may_have_taken_effect`` is set when the service may have acted on the
    call even though no answer confirmed it (a timeout after sending).
    """

    def __init__(self, failure: Failure, *, may_have_taken_effect: bool = False) -> None:
        super().__init__(failure)
        self.may_have_taken_effect = may_have_taken_effect
