"""The ``trace-book`` plugin's options: validated by MkDocs, an unknown one an error, the environment over them.

A book sets them as it sets any plugin's::

    plugins:
      - trace-book:
          chapters: mybook.chapters   # the chapters' package (PRIMER_CHAPTERS wins)
          live: "off"                 # PRIMER_LIVE wins
          cache: false                # PRIMER_CACHE wins

MkDocs checks each option's type and names a wrong one; it only warns about
a name no option reads, which ``unknown_as_errors`` makes an error naming it
(``chapter:`` for ``chapters:`` would otherwise quietly change nothing).

An option is one line of ``TraceBookConfig``. One that a ``PRIMER_*``
variable also sets is one more entry of ``SETTINGS``: the option is the
default, the variable wins (``environ``), as for every other setting.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.base import ValidationError

from primer.book._links import PUBLISHED_DIR
from primer.book._session import CACHE_DIR
from primer.variables import BOOK_VARIABLES, VARIABLES

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["SETTINGS", "TraceBookConfig", "defaults", "environ", "unknown_as_errors"]

# MkDocs' own words for a name no option reads.
_UNKNOWN = "Unrecognised configuration name"


# MkDocs' Config sets its options up in an untyped __init_subclass__.
class TraceBookConfig(base.Config):  # type: ignore[no-untyped-call]
    """The plugin's options, validated by MkDocs (an unknown one fails the configuration)."""

    #: False: each marker shows a placeholder, nothing runs (``PRIMER_TRACES`` wins).
    enabled = c.Type(bool, default=True)
    #: The chapters' package; unset: the extension's ``chapters`` option (``PRIMER_CHAPTERS`` wins).
    chapters = c.Optional(c.Type(str))
    #: The frozen live traces' folder, in the docs folder.
    traces_dir = c.Type(str, default=PUBLISHED_DIR)
    #: The machinery's cache, relative to the folder of ``mkdocs.yml``.
    cache_dir = c.Type(str, default=CACHE_DIR.as_posix())
    #: False: the one cache is off, every build runs and renders everything (``PRIMER_CACHE`` wins).
    cache = c.Type(bool, default=True)
    #: Live runs when a key is set: ``auto``, ``off`` or ``refresh`` (``PRIMER_LIVE`` wins).
    live = c.Optional(c.Choice(("auto", "off", "refresh")))
    #: False: the build does not check the book's rules (``primer.book._rules``); a hook book
    #: says so as the extension's ``rules`` option.
    rules = c.Type(bool, default=True)
    #: Prices per model (``primer.book._prices``), over the package's table and the extension's ``prices``.
    prices = c.Type(dict, default={})


#: The options a ``PRIMER_*`` variable also sets: option -> (the variable, the value the
#: option's stands for, None: the variable's own default).
SETTINGS: dict[str, tuple[str, Callable[[Any], str | None]]] = {
    "enabled": (VARIABLES["traces"], lambda enabled: None if enabled else "off"),
    "live": (VARIABLES["live"], lambda live: live),
    "cache": (BOOK_VARIABLES["cache"], lambda cache: None if cache else "off"),
}


def defaults(config: TraceBookConfig) -> dict[str, str]:
    """The ``PRIMER_*`` settings the options give, which the environment overrides."""
    given: dict[str, str] = {}
    for option, (variable, value) in SETTINGS.items():
        said = value(config[option])
        if said is not None:
            given[variable] = said
    return given


def environ(config: TraceBookConfig) -> Mapping[str, str]:
    """The ``PRIMER_*`` settings of a build: the options as defaults, the environment over them."""
    given = defaults(config)
    return {**given, **os.environ} if given else os.environ


def unknown_as_errors(
    options: list[str], errors: base.ConfigErrors, warnings: base.ConfigWarnings
) -> tuple[base.ConfigErrors, base.ConfigWarnings]:
    """MkDocs' warnings about names none of ``options`` reads, as errors naming the name and listing the options."""
    names = ", ".join(options)
    unknown = [(key, message) for key, message in warnings if isinstance(message, str) and message.startswith(_UNKNOWN)]
    for key, _message in unknown:
        errors.append((key, ValidationError(f"trace-book has no option {key!r}. Its options are: {names}.")))
    return errors, [warning for warning in warnings if warning not in unknown]
