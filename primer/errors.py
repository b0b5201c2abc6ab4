"""Errors the library raises, each saying who is at fault and what to do.

The tree::

    PrimerError
    ├── ConfigError            a setting is malformed (names the variable)
    ├── NotFound               no such chapter or scenario (lists what exists)
    ├── ChapterError           a chapter module declares its scenarios wrongly
    ├── ToolFailed             a tool call did not succeed; carries a Failure
    │   ├── ArgumentsRejected  the model's arguments were wrong: it can fix them
    │   └── ServiceFailed      the service answered badly or not at all
    ├── ScriptExhausted        a mock model ran out of scripted replies
    ├── ScriptDisobeys         a scripted reply breaks what the request asked for
    ├── MissingExtra           an optional part needs packages not installed (names the extra)
    └── ExportFailed           an export's receiver did not take the traces
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # at run time only where one is made: a build with traces off loads no trace model
    from primer.trace import Failure

__all__ = [
    "ArgumentsRejected",
    "ChapterError",
    "ConfigError",
    "ExportFailed",
    "MissingExtra",
    "NotFound",
    "PrimerError",
    "ScriptDisobeys",
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


class ScriptDisobeys(PrimerError):
    """A mock model's scripted reply does what the request forbade (``primer.tool_choice.disobeyed``)."""


class MissingExtra(PrimerError, ImportError):
    """An optional part of the library needs packages that are not installed: names the extra to install."""

    def __init__(self, part: str, extra: str, cause: ImportError) -> None:
        # By the names pip installs them by (protobuf), not the module that failed to import (google); trace-book
        # is on no package index, so the command is for those, or for the extra in a checkout.
        checkout = f"pip install -e '.[{extra}]' in a checkout of trace-book"
        if missing := _missing_distributions(extra):
            what = f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed"
            how = f"pip install {' '.join(missing)} (or {checkout})"
        else:  # installed, yet it does not import (or trace-book is not installed as a distribution)
            what, how = f"{cause.name or 'one of them'} could not be imported", checkout
        super().__init__(f"{part} needs the optional packages of trace-book[{extra}], and {what}: {how}.")
        self.extra = extra


def _missing_distributions(extra: str) -> list[str]:
    """The packages trace-book's ``extra`` requires that are not installed, by their install names."""
    import re
    from importlib import metadata

    try:
        required = metadata.requires("trace-book") or []
    except metadata.PackageNotFoundError:
        return []
    missing = []
    for requirement in required:
        name, _, marker = requirement.partition(";")
        if re.search(rf"""extra\s*==\s*['"]{re.escape(extra)}['"]""", marker) is None:
            continue
        distribution = re.split(r"[\s<>=!~\[(]", name.strip(), maxsplit=1)[0]
        try:
            metadata.version(distribution)
        except metadata.PackageNotFoundError:
            missing.append(distribution)
    return missing


class ExportFailed(PrimerError):
    """The receiver of an export (an OTLP endpoint) did not take the traces."""


class ToolFailed(PrimerError):
    """A tool call did not succeed. ``failure`` says whether to retry."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class ArgumentsRejected(ToolFailed):
    """The tool refused the arguments; the caller (the model) can fix them."""

    def __init__(self, message: str) -> None:
        from primer.trace import Failure

        super().__init__(Failure(message=message, retryable=False, idempotent=False, caller_can_fix=True))


class ServiceFailed(ToolFailed):
    """The service behind a tool failed, after every attempt allowed.

    ``may_have_taken_effect`` is set when the service may have acted on the
    call even though no answer confirmed it (a timeout after sending).
    """

    def __init__(self, failure: Failure, *, may_have_taken_effect: bool = False) -> None:
        super().__init__(failure)
        self.may_have_taken_effect = may_have_taken_effect
