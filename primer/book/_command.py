"""The book's commands: ``python -m primer.book build``, the run step for any front end, and ``new``.

``build`` does what the plugin does before MkDocs writes the site (``mkdocs.yml`` read by MkDocs' loader):
prepares, checks every page, and publishes ``traces/`` and the assets into the docs folder, from where every
front end copies them (``python -m primer.book build --strict && zensical build``). Exit status: 0 done, 1
warnings under ``--strict``, 2 a usage or configuration error.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from logging.handlers import BufferingHandler
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book import _assets as assets
from primer.book._book import LOGGER_NAME
from primer.book._configuration import read_config, start
from primer.book._logs import book_logger
from primer.book._markers import check
from primer.errors import ConfigError
from primer.inert import inert
from primer.variables import enable_with

if TYPE_CHECKING:
    from primer.book._book import Book, Prepared

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m primer.book", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="run what is needed, refresh the store, publish the trace JSON")
    build.add_argument("-f", "--config-file", default="mkdocs.yml", type=Path, help="the book's mkdocs.yml")
    build.add_argument("-s", "--strict", action="store_true", help="exit 1 if anything was warned about")
    build.add_argument("-q", "--quiet", action="store_true", help="show warnings only")
    build.add_argument("--stamp", action="store_true", help="stamp the frozen live traces a replay verified")
    new = commands.add_parser("new", help="write a new book, ready to build, into a new or empty folder")
    new.add_argument("dir", type=Path, help="the book's folder (new, or empty)")
    new.add_argument("--package", help="the chapters' package (default: the folder's name)")
    new.add_argument("--title", help="the site's name (default: the folder's name)")
    return parser


def _stamp(book: Book, prepared: Prepared) -> None:
    for chapter in prepared.chapters():
        run = prepared.traces(chapter).live
        if run is not None and prepared.by_chapter[chapter].verified_at is not None:
            book.save(run)
            book.log.info(f"traces: stamped {book.cache.path(chapter)} (verified by replay {run.verified_at})")


def _usage(message: str) -> int:
    print(f"error: {inert(message)}", file=sys.stderr)
    return 2


def _new(target: Path, package: str | None, title: str | None) -> int:
    from primer.book._new_book import write_book

    written = write_book(target, package=package, title=title)
    for path in written:
        print(f"  {path.as_posix()}")
    print(f"A new book in {target}, {len(written)} files. Then: cd {target} && mkdocs serve")
    return 0


def _build(path: Path, *, stamp: bool) -> None:
    config, plugin = read_config(path)
    if plugin is None:
        raise ConfigError(
            f"{path.resolve()} does not enable the trace machinery: it names neither the trace-book plugin "
            f"nor the trace extension, so its markers stay text: {enable_with(None)}."
        )
    start(plugin, config)  # the cache's lock is held from here to on_shutdown: one build at a time
    book, prepared, docs = plugin.book, plugin.prepared, Path(config.docs_dir)
    # Named as the plugin names a page (docs/ch05_loop_endings.md); warnings only.
    pages = {f"{docs.name}/{p.relative_to(docs).as_posix()}": p.read_text(encoding="utf-8") for p in docs.rglob("*.md")}
    try:
        if book is None or prepared is None:  # traces off
            for name, text in sorted(pages.items()):
                for warning in check(name, text):
                    book_logger(LOGGER_NAME).warning(f"traces: {warning}")
            return
        if stamp:
            _stamp(book, prepared)
        for name, text in sorted(pages.items()):
            book.check(prepared, name, text)
        if prepared.enabled:
            book.check_rules(prepared, pages, rules=plugin.rules)
            book.publish(docs, prepared)
            assets.install(docs)
    finally:
        plugin.on_shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    log = logging.getLogger(LOGGER_NAME)
    shown, counted = logging.StreamHandler(sys.stderr), BufferingHandler(capacity=1 << 20)
    # As MkDocs shows its log; every record of the book's loggers is inert already.
    shown.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    counted.setLevel(logging.WARNING)
    log.setLevel(logging.WARNING if args.command == "build" and args.quiet else logging.INFO)
    log.addHandler(shown)
    log.addHandler(counted)
    try:
        if args.command == "new":
            return _new(args.dir, args.package, args.title)
        _build(args.config_file, stamp=args.stamp)
    except ConfigError as error:
        return _usage(str(error))
    finally:
        log.removeHandler(shown)
        log.removeHandler(counted)
    if args.strict and counted.buffer:
        print(f"error: {len(counted.buffer)} warning(s) in strict mode: a strict build would fail.", file=sys.stderr)
        return 1
    return 0
