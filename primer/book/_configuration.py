"""A book's configuration: the ``trace-book`` plugin's options, and ``mkdocs.yml`` read as MkDocs reads it.

The options are ``TraceBookConfig``'s, validated by MkDocs; a name no option reads is an error
naming it (``unknown_as_errors``: MkDocs only warns, and ``chapter:`` for ``chapters:`` would
quietly change nothing). An option a ``PRIMER_*`` variable also sets is an entry of ``SETTINGS``:
the option is the default, the variable wins (``environ``).

``read_config`` is what ``python -m primer.book build`` and ``python -m primer``, run in a book's
folder, know of it: read through MkDocs' own loader (``INHERIT``, ``!ENV``, every option checked).
The chapters' package is the plugin's ``chapters`` option, else the trace extension's;
``PRIMER_CHAPTERS`` wins over both.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.base import ValidationError

from primer.book._links import CACHE_DIR, PUBLISHED_DIR
from primer.errors import ConfigError
from primer.variables import BOOK_VARIABLES, VARIABLES

__all__ = ["SETTINGS", "BookConfig", "TraceBookConfig", "defaults", "environ", "read_config", "unknown_as_errors"]

#: The trace extension's name in ``markdown_extensions``.
EXTENSION = "primer.book.markdown"


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
    cache_dir = c.Type(str, default=CACHE_DIR)
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
    given = {variable: value(config[option]) for option, (variable, value) in SETTINGS.items()}
    return {variable: said for variable, said in given.items() if said is not None}


def environ(config: TraceBookConfig) -> Mapping[str, str]:
    """The ``PRIMER_*`` settings of a build: the options as defaults, the environment over them."""
    given = defaults(config)
    return {**given, **os.environ} if given else os.environ


def unknown_as_errors(
    options: list[str], errors: base.ConfigErrors, warnings: base.ConfigWarnings
) -> tuple[base.ConfigErrors, base.ConfigWarnings]:
    """MkDocs' warnings about names none of ``options`` reads, as errors naming the name and listing the options."""
    names = ", ".join(options)
    unknown = [(key, said) for key, said in warnings if str(said).startswith("Unrecognised configuration name")]
    for key, _said in unknown:
        errors.append((key, ValidationError(f"trace-book has no option {key!r}. Its options are: {names}.")))
    return errors, [warning for warning in warnings if warning not in unknown]


@dataclass(frozen=True)
class BookConfig:
    """What the commands need of a book's configuration."""

    #: The configuration file, resolved, and the book's root: its folder.
    path: Path
    root: Path
    docs_dir: Path
    #: The chapters' package the configuration names (the plugin's option, else the extension's), if it does.
    chapters: str | None
    traces_dir: Path
    cache_dir: Path
    #: The plugin's options as defaults for the ``PRIMER_*`` settings (the environment wins over them).
    defaults: dict[str, str]
    #: Whether the build checks the book's rules (the plugin's ``rules`` option, else the extension's).
    rules: bool = True
    #: Whether the configuration turns the machinery on at all: the plugin, a hook file, or the extension.
    enabled: bool = True


def read_config(path: Path) -> BookConfig:
    """Read a book's configuration through MkDocs' loader; ``ConfigError`` naming the file if it cannot be."""
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from primer.book._plugin import TraceBookPlugin

    if not path.is_file():
        raise ConfigError(f"The book's configuration {path} is not there: run this from the book's folder, or give -f.")
    # MkDocs logs what is wrong with each option, as an error, before it gives up.
    said = _Said()
    logging.getLogger("mkdocs").addHandler(said)
    try:
        config = load_config(config_file=str(path))
    except MkDocsException as error:
        why = "; ".join(said.messages) or str(error)
        raise ConfigError(f"The book's configuration {path} is not valid: {why}") from None
    finally:
        logging.getLogger("mkdocs").removeHandler(said)
    root = path.resolve().parent
    docs = Path(config.docs_dir)
    plugin = next((p for p in config.plugins.values() if isinstance(p, TraceBookPlugin)), None)
    extension = config.mdx_configs.get(EXTENSION, {})
    chapters = (plugin.config.chapters if plugin is not None else None) or extension.get("chapters")
    rules = extension.get("rules", True) is not False
    if plugin is None:
        named = EXTENSION in config.markdown_extensions or bool(config.hooks)
        return BookConfig(path.resolve(), root, docs, chapters, docs / "traces", root / CACHE_DIR, {}, rules, named)
    options = plugin.config
    traces, cache = docs / options.traces_dir, root / options.cache_dir
    return BookConfig(path.resolve(), root, docs, chapters, traces, cache, defaults(options), rules and options.rules)


class _Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
