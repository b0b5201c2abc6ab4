"""The ``trace-book`` plugin's options, a book's ``mkdocs.yml`` read through MkDocs' own loader, and the commands.

A name no option reads fails the configuration, naming it (MkDocs only warns: ``chapter:`` would quietly change
nothing). An option a ``PRIMER_*`` variable also sets is in ``SETTINGS``: the variable wins. ``read_config`` is
what the commands, run in a book's folder, know of it (``INHERIT``, ``!ENV``, every option checked).

``python -m primer.book build`` does what the plugin does before MkDocs writes the site: prepares, checks every
page, and publishes ``traces/`` and the assets into the docs folder, from where every front end copies them
(``python -m primer.book build --strict && zensical build``); ``new DIR`` writes a new book. Exit status: 0 done,
1 warnings under ``--strict``, 2 a usage or configuration error.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from logging.handlers import BufferingHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.base import ValidationError
from mkdocs.exceptions import PluginError

from primer.book import _assets as assets
from primer.book._links import CACHE_DIR, PUBLISHED_DIR
from primer.book._logs import book_logger
from primer.book._markers import check
from primer.errors import ConfigError
from primer.inert import inert
from primer.variables import BOOK_VARIABLES, VARIABLES, enable_with

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig

    from primer.book._plugin import TraceBookPlugin
    from primer.prices import PriceTable

T = TypeVar("T")

#: The trace extension's name in ``markdown_extensions``.
EXTENSION = "primer.book.markdown"


#: What an option of each type is written as in ``mkdocs.yml``.
_WRITTEN = {
    bool: "true or false",
    str: "text (in quotes, if YAML would read it as something else)",
    dict: "a mapping (`name: value` lines, indented under the option)",
}
#: What YAML made of a value, in the same words.
_READ = {bool: "true or false", str: "text", int: "a number", float: "a number", list: "a list", dict: "a mapping"}


class _Written(c.Type[T]):
    """MkDocs' type check, saying what to write (``true or false``) where MkDocs says ``<class 'bool'>``."""

    def run_validation(self, value: object) -> T:
        if isinstance(value, self._type):
            return value  # type: ignore[no-any-return]  # MkDocs' _type is untyped
        read = _READ.get(type(value), type(value).__name__)  # never None: MkDocs gives the default for it
        raise ValidationError(f"write {_WRITTEN[self._type]}; it is {value!r}, read as {read}.")


# MkDocs' Config sets its options up in an untyped __init_subclass__.
class TraceBookConfig(base.Config):  # type: ignore[no-untyped-call]
    """The plugin's options, validated by MkDocs (an unknown one fails the configuration)."""

    #: False: each marker shows a placeholder, nothing runs (``PRIMER_TRACES`` wins).
    enabled = _Written(bool, default=True)
    #: The chapters' package; unset: the extension's ``chapters`` option (``PRIMER_CHAPTERS`` wins).
    chapters = c.Optional(_Written(str))
    #: The frozen live traces' folder, in the docs folder.
    traces_dir = _Written(str, default=PUBLISHED_DIR)
    #: The machinery's cache, relative to the folder of ``mkdocs.yml``.
    cache_dir = _Written(str, default=CACHE_DIR)
    #: False: the one cache is off, every build runs and renders everything (``PRIMER_CACHE`` wins).
    cache = _Written(bool, default=True)
    #: Live runs when a key is set: ``auto``, ``off`` or ``refresh`` (``PRIMER_LIVE`` wins).
    live = c.Optional(c.Choice(("auto", "off", "refresh")))
    #: False: the build does not check the book's rules (``primer.book._markers``), nor with the extension's ``rules``.
    rules = _Written(bool, default=True)
    #: Prices per model (``primer.prices``), over the package's table and the extension's ``prices``.
    prices = _Written(dict, default={})


#: The options a ``PRIMER_*`` variable also sets: option -> (the variable, the value the option's stands for,
#: None: the variable's own default).
SETTINGS: dict[str, tuple[str, Callable[[Any], str | None]]] = {
    "enabled": (VARIABLES["traces"], lambda enabled: None if enabled else "off"),
    "live": (VARIABLES["live"], lambda live: live),
    "cache": (BOOK_VARIABLES["cache"], lambda cache: None if cache else "off"),
}


def environ(config: TraceBookConfig) -> Mapping[str, str]:
    """The ``PRIMER_*`` settings of a build: the options as defaults, the environment over them."""
    given = ((variable, value(config[option])) for option, (variable, value) in SETTINGS.items())
    return {**{variable: said for variable, said in given if said is not None}, **os.environ}


def book_prices(config: MkDocsConfig, plugin: TraceBookConfig) -> PriceTable:
    """The book's price table: the package's, the extension's ``prices`` over it, the plugin's over those."""
    from primer.book.markdown import render_options

    name = Path(config.config_file_path or "mkdocs.yml").name
    prices = render_options(config.mdx_configs.get(EXTENSION, {}).get("prices") or {}, f"{EXTENSION} in {name}")
    return prices.extended(plugin.prices, where=f"{name}, the trace-book plugin's prices")


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


def _build(path: Path, *, stamp: bool) -> None:
    from primer.book._book import LOGGER_NAME

    config, plugin = read_config(path)
    if plugin is None:
        raise ConfigError(
            f"{path.resolve()} does not enable the trace machinery: it names neither the trace-book plugin "
            f"nor the trace extension, so its markers stay text: {enable_with(None)}."
        )
    plugin.on_startup(command="build", dirty=False)
    try:  # the cache's lock is held from here to on_shutdown: one build at a time
        plugin.on_config(config)
    except PluginError as error:
        raise ConfigError(str(error)) from None
    book, prepared, docs = plugin.book, plugin.prepared, Path(config.docs_dir)
    # Named as the plugin names a page (docs/ch05_loop_endings.md); warnings only.
    pages = {f"{docs.name}/{p.relative_to(docs).as_posix()}": p.read_text(encoding="utf-8") for p in docs.rglob("*.md")}
    try:
        if book is None or prepared is None:  # traces off
            for name, text in sorted(pages.items()):
                for warning in check(name, text):
                    book_logger(LOGGER_NAME).warning(f"traces: {warning}")
            return
        for chapter in prepared.chapters() if stamp else ():
            run = prepared.traces(chapter).live
            if run is not None and prepared.by_chapter[chapter].verified_at is not None:
                book.save(run)
                book.log.info(f"traces: stamped {book.cache.path(chapter)} (replay verified {run.verified_at})")
        for name, text in sorted(pages.items()):
            book.check(prepared, name, text)
        book.check_rules(prepared, pages, rules=plugin.rules)
        book.publish(docs, prepared)
        assets.install(docs)
    finally:
        plugin.on_shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m primer.book``: returns the exit status."""
    import argparse

    from primer.book._book import LOGGER_NAME

    parser = argparse.ArgumentParser(prog="python -m primer.book", description="The book's commands.")
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="run what is needed, refresh the store, publish the trace JSON")
    build.add_argument("-f", "--config-file", default="mkdocs.yml", type=Path, help="the book's mkdocs.yml")
    build.add_argument("-s", "--strict", action="store_true", help="exit 1 if anything was warned about")
    build.add_argument("--stamp", action="store_true", help="stamp the frozen live traces a replay verified")
    new = commands.add_parser("new", help="write a new book, ready to build, into a new or empty folder")
    new.add_argument("dir", type=Path, help="the book's folder (new, or empty)")
    new.add_argument("--package", help="the chapters' package (default: the folder's name)")
    new.add_argument("--title", help="the site's name (default: the folder's name)")
    args = parser.parse_args(argv)
    log = logging.getLogger(LOGGER_NAME)
    shown, counted = logging.StreamHandler(sys.stderr), BufferingHandler(capacity=1 << 20)
    # As MkDocs shows its log; every record of the book's loggers is inert already.
    shown.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    counted.setLevel(logging.WARNING)
    log.setLevel(logging.INFO)
    log.addHandler(shown)
    log.addHandler(counted)
    try:
        if args.command == "new":
            from primer.book._new_book import write_book

            written = write_book(args.dir, package=args.package, title=args.title)
            print(*(f"  {path.as_posix()}" for path in written), sep="\n")
            print(f"A new book in {args.dir}, {len(written)} files. Then: cd {args.dir} && mkdocs serve")
        else:
            _build(args.config_file, stamp=args.stamp)
    except ConfigError as error:
        print(f"error: {inert(str(error))}", file=sys.stderr)
        return 2
    finally:
        log.removeHandler(shown)
        log.removeHandler(counted)
    if args.command == "build" and args.strict and counted.buffer:
        print(f"error: {len(counted.buffer)} warning(s) in strict mode: a strict build would fail.", file=sys.stderr)
        return 1
    return 0
