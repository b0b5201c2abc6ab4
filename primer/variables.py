"""The ``PRIMER_*`` variables: their names, and the one switch read before anything else.

``primer.settings.Settings`` reads and validates every variable; this module
holds their names (``VARIABLES``), so that the names live in one place, and
what must be known before the rest of the library is loaded:

* ``traces_off``: whether ``PRIMER_TRACES`` turns the trace machinery off.
  A book build asks it first: with traces off, nothing else of the engine
  (nor pydantic) is imported, and the build costs what it costs without the
  machinery. A value that is neither ``on`` nor ``off`` counts as on here:
  ``Settings`` then reports it, naming the variable.
* ``unknown_variables``: a sentence for each ``PRIMER_*`` name no setting
  reads, with the closest known one (a typo would otherwise quietly leave a
  setting at its default).
* ``chapters_package``: which package a book's chapters are, as
  ``Settings.without_live().chapters_package`` says it: a book is opened
  before anything tells whether the engine is needed at all
  (``primer.book._cache``), and ``package_name``, the check both use.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from primer.errors import ConfigError
from primer.locator import DEFAULT_PACKAGE

__all__ = [
    "BOOK_VARIABLES",
    "VARIABLES",
    "book_chapters",
    "chapters_package",
    "enable_with",
    "package_name",
    "traces_off",
    "unknown_variables",
]

_PACKAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")

#: The environment variable behind each setting, for messages.
VARIABLES = {
    "api_key": "PRIMER_API_KEY",
    "base_url": "PRIMER_BASE_URL",
    "model": "PRIMER_MODEL",
    "service_url": "PRIMER_SERVICE_URL",
    "service_key": "PRIMER_SERVICE_KEY",
    "live": "PRIMER_LIVE",
    "traces": "PRIMER_TRACES",
    "model_timeout": "PRIMER_MODEL_TIMEOUT",
    "service_timeout": "PRIMER_SERVICE_TIMEOUT",
    "chapters": "PRIMER_CHAPTERS",
    "services": "PRIMER_SERVICES",
}


#: Variables the book machinery reads besides the settings: ``PRIMER_CACHE=off`` turns its cache off.
BOOK_VARIABLES = {"cache": "PRIMER_CACHE"}


def traces_off(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``PRIMER_TRACES`` is ``off`` (as ``Settings.traces`` reads it: spaces and case aside)."""
    env = os.environ if environ is None else environ
    return env.get(VARIABLES["traces"], "").strip().lower() == "off"


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One sentence for each ``PRIMER_*`` name in ``environ`` that no setting reads, with the closest known one."""
    known = sorted([*VARIABLES.values(), *BOOK_VARIABLES.values()])
    messages: list[str] = []
    if not any(name.startswith("PRIMER_") and name not in known for name in environ):
        return messages
    import difflib  # only for a name to correct: every build asks, traces off included

    for name in sorted(environ):
        if name.startswith("PRIMER_") and name not in known:
            # Compared without the prefix every name shares, which would make any two look alike.
            close = difflib.get_close_matches(name[7:], [k[7:] for k in known], n=1, cutoff=0.6)
            hint = f" Did you mean PRIMER_{close[0]}?" if close else f" The variables are: {', '.join(known)}."
            # The name only, never the value: it may be a key set under a misspelt name.
            messages.append(f"{name} is set, but no setting reads it, so it changes nothing.{hint}")
    return messages


#: A value short and plain enough to quote back in a message: no key looks like this.
_QUOTABLE = re.compile(r"[A-Za-z]{1,12}|[-+0-9.eE]{1,12}")


def quoted(value: str) -> str:
    """``, not 'sometimes'`` for a value that is a short word or number; nothing for any other.

    A message may be printed or logged, and a value that is not a word may
    be a key pasted into the wrong variable: it is described, never quoted.
    """
    return f", not {value!r}" if _QUOTABLE.fullmatch(value) else ""


def package_name(where: str, value: object) -> str:
    """``value`` as a package name, or a ``ConfigError`` naming ``where`` it came from."""
    name = str(value).strip()
    if not _PACKAGE.fullmatch(name):
        raise ConfigError(
            f"{where} must name a Python package such as primer.chapters or mybook.chapters{quoted(name)}."
        )
    return name


def chapters_package(configured: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The chapters' package: ``PRIMER_CHAPTERS`` if set to a package name, else ``configured``, else the default.

    The same answer as ``Settings.without_live(environ).chapters_package(configured)``
    (a ``PRIMER_CHAPTERS`` that is not a package name is left out there too,
    and ``Settings.from_env`` reports it), without loading pydantic.
    """
    env = os.environ if environ is None else environ
    value = env.get(VARIABLES["chapters"], "").strip()
    if value and _PACKAGE.fullmatch(value):
        return value
    if not configured:
        return DEFAULT_PACKAGE
    return package_name("The trace extension's chapters option", configured)


def enable_with(chapters: str | None) -> str:
    """How to turn the trace machinery on in ``mkdocs.yml``, for messages: the ``plugins:`` entry, on one line."""
    return (
        f"add the plugin to the `plugins:` list of mkdocs.yml, after `- search`: "
        f"`- trace-book: {{chapters: {chapters or 'mybook'}}}`"
    )


def book_chapters(configured: str | None, environ: Mapping[str, str] | None = None) -> str:
    """A book's chapters' package, as ``chapters_package`` says, but never a default one.

    A book is another author's as often as this one's: one whose
    configuration names no package, and no ``PRIMER_CHAPTERS``, is a
    ``ConfigError`` saying what to write, not a build of this book's chapters.
    """
    env = os.environ if environ is None else environ
    if not configured and not env.get(VARIABLES["chapters"], "").strip():
        raise ConfigError(
            "The book names no chapters package, so it has no chapters to show. Name its package (a folder "
            "beside mkdocs.yml, or an installed package) as the plugin's `chapters` option: "
            f"{enable_with(None)} (or set PRIMER_CHAPTERS for one build)."
        )
    return chapters_package(configured, env)
