"""The book's commands: ``python -m primer.book build``, the run step for any front end, and ``new``.

    python -m primer.book build [--strict] [--stamp] [-q] [-f mkdocs.yml]
    python -m primer.book new DIR [--package NAME] [--title TITLE]

``build`` does what the plugin does before a build, without building the site: reads
``mkdocs.yml`` as MkDocs does, refreshes the store, checks every page, and publishes ``traces/``
and the assets into the docs folder, from where every front end copies them (Zensical counts no
extension's warnings: ``python -m primer.book build --strict && zensical build``). ``--stamp``
writes the stamps of the frozen live traces a replay verified into them. ``new`` writes a book
that builds ``--strict`` as written. Exit status: 0 done, 1 warnings under ``--strict``, 2 a
usage or configuration error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book import _assets as assets
from primer.book._build import LOGGER_NAME
from primer.book._cache import BuildLock
from primer.book._configuration import read_config
from primer.book._session import SESSION
from primer.errors import ConfigError
from primer.inert import inert
from primer.variables import enable_with

if TYPE_CHECKING:
    from primer.book._build import Book

__all__ = ["main"]


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m primer.book", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="run what is needed, refresh the store, publish the trace JSON")
    build.add_argument("-f", "--config-file", default="mkdocs.yml", help="the book's mkdocs.yml (mkdocs.yml)")
    build.add_argument("-s", "--strict", action="store_true", help="exit 1 if anything was warned about")
    build.add_argument("-q", "--quiet", action="store_true", help="show warnings only")
    build.add_argument(
        "--stamp",
        action="store_true",
        help="write into the frozen live traces the stamps of those a replay verified (source_hash, verified_at)",
    )
    new = commands.add_parser("new", help="write a new book, ready to build, into a new or empty folder")
    new.add_argument("dir", type=Path, help="the book's folder (new, or empty)")
    new.add_argument("--package", help="the chapters' package (default: the folder's name)")
    new.add_argument("--title", help="the site's name (default: the folder's name)")
    return parser


def _stamp(book: Book) -> None:
    """Write the stamps of the frozen live traces a replay verified into their files (``--stamp``)."""
    for chapter in book.prepared.chapters():
        run = book.prepared.traces(chapter).live
        if run is None or not book.store.is_stamped(run):
            continue
        book.save(run)
        book.log.info(f"traces: stamped {book.store.path(run.chapter, 'live')} (verified by replay {run.verified_at})")


def _usage(message: str) -> int:
    print(f"error: {inert(message)}", file=sys.stderr)
    return 2


def _new(target: Path, package: str | None, title: str | None) -> int:
    from primer.book._new_book import write_book

    try:
        written = write_book(target, package=package, title=title)
    except ConfigError as error:
        return _usage(str(error))
    for path in written:
        print(f"  {path.as_posix()}")
    print(f"A new book in {target}, {len(written)} files. Then: cd {target} && mkdocs serve")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "new":
        return _new(args.dir, args.package, args.title)
    log = logging.getLogger(LOGGER_NAME)
    shown = logging.StreamHandler(sys.stderr)
    # As MkDocs shows its log; every record of the book's loggers is inert already.
    shown.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
    counted = _Count()
    log.setLevel(logging.WARNING if args.quiet else logging.INFO)
    log.addHandler(shown)
    log.addHandler(counted)
    try:
        try:
            config = read_config(Path(args.config_file))
            if not config.enabled:
                return _usage(
                    f"{config.path} does not enable the trace machinery: it names neither the trace-book plugin "
                    f"nor the trace extension, so its markers stay text: {enable_with(config.chapters)}."
                )
            book = SESSION.book(
                config.root,
                config.docs_dir,
                chapters=config.chapters,
                cache=config.cache_dir,
                live_dir=config.traces_dir,
                environ={**config.defaults, **os.environ},
            )
        except ConfigError as error:
            return _usage(str(error))
        book.rules = config.rules
        lock = BuildLock(config.cache_dir)
        lock.acquire(log)  # one build at a time per cache (a serve rebuilding, say): this one waits
        try:
            book.prepare()
            if args.stamp:
                _stamp(book)
            for page in sorted(config.docs_dir.rglob("*.md")):
                # Named as the hook names a page (docs/ch05_loop_endings.md); warnings only.
                name = f"{config.docs_dir.name}/{page.relative_to(config.docs_dir).as_posix()}"
                book.page(name, page.read_text(encoding="utf-8"))
            book.check_rules()
            book.publish(config.docs_dir)
            if book.enabled:
                assets.install(config.docs_dir)
        finally:
            lock.release()
    finally:
        log.removeHandler(shown)
        log.removeHandler(counted)
    if args.strict and counted.count:
        print(f"error: {counted.count} warning(s) in strict mode: a strict build would fail.", file=sys.stderr)
        return 1
    return 0
