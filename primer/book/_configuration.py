"""The ``trace-book`` plugin's options, and a book's ``mkdocs.yml`` read through MkDocs' own loader.

A name no option reads fails the configuration, naming it (MkDocs only warns: ``chapter:`` would quietly change
nothing). An option a ``PRIMER_*`` variable also sets is in ``SETTINGS``: the variable wins. ``read_config`` is
what the commands, run in a book's folder, know of it (``INHERIT``, ``!ENV``, every option checked).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from logging.handlers import BufferingHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.base import ValidationError

from primer.book._links import CACHE_DIR, PUBLISHED_DIR
from primer.errors import ConfigError
from primer.variables import BOOK_VARIABLES, VARIABLES

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig

    from primer.book._plugin import TraceBookPlugin

__all__ = ["SETTINGS", "TraceBookConfig", "environ", "read_config", "start", "unknown_as_errors"]

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
    #: False: the build does not check the book's rules (``primer.book._rules``), nor with the extension's ``rules``.
    rules = c.Type(bool, default=True)
    #: Prices per model (``primer.book._prices``), over the package's table and the extension's ``prices``.
    prices = c.Type(dict, default={})


#: The options a ``PRIMER_*`` variable also sets: option -> (the variable, the value the option's stands for,
#: None: the variable's own default).
SETTINGS: dict[str, tuple[str, Callable[[Any], str | None]]] = {
    "enabled": (VARIABLES["traces"], lambda enabled: None if enabled else "off"),
    "live": (VARIABLES["live"], lambda live: live),
    "cache": (BOOK_VARIABLES["cache"], lambda cache: None if cache else "off"),
}


def environ(config: TraceBookConfig) -> Mapping[str, str]:
    """The ``PRIMER_*`` settings of a build: the options as defaults, the environment over them."""
    given = {variable: value(config[option]) for option, (variable, value) in SETTINGS.items()}
    defaults = {variable: said for variable, said in given.items() if said is not None}
    return {**defaults, **os.environ} if defaults else os.environ


def unknown_as_errors(
    options: list[str], errors: base.ConfigErrors, warnings: base.ConfigWarnings
) -> tuple[base.ConfigErrors, base.ConfigWarnings]:
    """MkDocs' warnings about names none of ``options`` reads, as errors naming the name and listing the options."""
    unknown = [(key, said) for key, said in warnings if str(said).startswith("Unrecognised configuration name")]
    for key, _said in unknown:
        errors.append(
            (key, ValidationError(f"trace-book has no option {key!r}. Its options are: {', '.join(options)}."))
        )
    return errors, [warning for warning in warnings if warning not in unknown]


def read_config(path: Path) -> tuple[MkDocsConfig, TraceBookPlugin | None]:
    """A book's configuration through MkDocs' loader, and its plugin (None: it enables no traces).

    The plugin is a hook file's too, or one of default options for the extension alone; its ``chapters`` is
    the extension's if it names none. ``ConfigError`` naming the file if the configuration cannot be read.
    """
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from primer.book._plugin import TraceBookPlugin

    if not path.is_file():
        raise ConfigError(f"The book's configuration {path} is not there: run this from the book's folder, or give -f.")
    said = BufferingHandler(capacity=1000)  # MkDocs logs what is wrong with each option, before it gives up
    said.setLevel(logging.ERROR)
    logging.getLogger("mkdocs").addHandler(said)
    try:
        config = load_config(config_file=str(path))
    except MkDocsException as error:
        why = "; ".join(record.getMessage() for record in said.buffer) or error
        raise ConfigError(f"The book's configuration {path} is not valid: {why}") from None
    finally:
        logging.getLogger("mkdocs").removeHandler(said)
    # A hook file's events are the methods of one plugin instance (primer.book.mkdocs_hook).
    found = (getattr(getattr(each, "on_config", None), "__self__", each) for each in config.plugins.values())
    plugin = next((each for each in found if isinstance(each, TraceBookPlugin)), None)
    if plugin is None and EXTENSION in config.markdown_extensions:
        plugin = TraceBookPlugin()
    if plugin is not None:
        plugin.config.chapters = plugin.config.chapters or config.mdx_configs.get(EXTENSION, {}).get("chapters")
    return config, plugin


def start(plugin: TraceBookPlugin, config: MkDocsConfig) -> None:
    """Prepare a build the commands run as MkDocs would (``on_config``); ``ConfigError`` if the book is not valid."""
    from mkdocs.exceptions import PluginError

    plugin.on_startup(command="build", dirty=False)
    try:
        plugin.on_config(config)
    except PluginError as error:
        raise ConfigError(str(error)) from None
