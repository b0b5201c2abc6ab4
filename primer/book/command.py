"""The book's commands: ``python -m primer.book build``, the run step for any front end, and ``new``.

    python -m primer.book build [--strict] [-f mkdocs.yml]
    python -m primer.book new DIR [--package NAME] [--title TITLE]

``new`` writes a working book into ``DIR`` (new, or empty) from the
package's scaffold (``primer.book.new_book``): ``mkdocs build --strict``
passes on it as written.

Does what the MkDocs hook does before a build, without MkDocs: reads the
book's ``mkdocs.yml`` (its ``docs_dir``, and the trace extension's
``chapters`` option), runs what is needed and refreshes the store
(``Book.prepare``: mock runs, replays of frozen live traces, live runs when
a key is set), checks every page's markers and live blocks, and publishes
``traces/CHAPTER.json`` and the assets into the docs folder (generated
files, left out of version control), from where every front end copies them.

It logs as the hook does, and exits 1 with ``--strict`` if anything was
warned about: the same things that fail ``mkdocs build --strict``. Zensical
does not count a Markdown extension's warnings, so for a book built with it
this command's exit code is the strict check::

    python -m primer.book build --strict && zensical build

Exit status: 0 done, 1 warnings under ``--strict``, 2 a usage or
configuration error (no ``mkdocs.yml``, a ``docs_dir`` that is not there;
for ``new``, a folder that is not empty).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from primer.book import assets
from primer.book.build import LOGGER_NAME
from primer.book.session import SESSION
from primer.errors import ConfigError
from primer.inert import inert

__all__ = ["BookConfig", "main", "read_config"]

#: The trace extension's name in ``markdown_extensions``.
EXTENSION = "primer.book.markdown"


class _Loader(yaml.SafeLoader):
    """YAML as MkDocs writes it, its tags (``!ENV``, ``!!python/name:``) read as nothing."""


_Loader.add_multi_constructor("!", lambda _loader, _suffix, _node: None)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda _loader, _suffix, _node: None)


class BookConfig:
    """What the run step needs of a book's ``mkdocs.yml``."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.root = path.parent
        self.docs_dir = self.root / str(data.get("docs_dir") or "docs")
        self.options: dict[str, Any] = {}
        for entry in data.get("markdown_extensions") or []:
            if isinstance(entry, dict) and EXTENSION in entry:
                self.options = dict(entry[EXTENSION] or {})

    @property
    def chapters(self) -> str | None:
        """The chapters' package the extension's options name, if they do."""
        value = self.options.get("chapters")
        return str(value) if value else None


def read_config(path: Path) -> BookConfig:
    """Read a book's ``mkdocs.yml``; ``ConfigError`` naming the file if it cannot be."""
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - a SafeLoader
    except OSError as error:
        raise ConfigError(f"The book's configuration {path} could not be read ({error.strerror}).") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"The book's configuration {path} is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"The book's configuration {path} does not hold a mapping of settings.")
    config = BookConfig(path.resolve(), data)
    if not config.docs_dir.is_dir():
        raise ConfigError(f"The docs folder {config.docs_dir} named by {path} is not there.")
    return config


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
    new = commands.add_parser("new", help="write a new book, ready to build, into a new or empty folder")
    new.add_argument("dir", type=Path, help="the book's folder (new, or empty)")
    new.add_argument("--package", help="the chapters' package (default: the folder's name)")
    new.add_argument("--title", help="the site's name (default: the folder's name)")
    return parser


def _new(target: Path, package: str | None, title: str | None) -> int:
    from primer.book.new_book import write_book

    try:
        written = write_book(target, package=package, title=title)
    except ConfigError as error:
        print(f"error: {inert(str(error))}", file=sys.stderr)
        return 2
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
        except ConfigError as error:
            print(f"error: {inert(str(error))}", file=sys.stderr)
            return 2
        book = SESSION.book(config.root, config.docs_dir, chapters=config.chapters)
        book.rules = config.options.get("rules", True) is not False
        book.prepare()
        for page in sorted(config.docs_dir.rglob("*.md")):
            # Named as the hook names a page (docs/ch05_loop_endings.md); warnings only.
            name = f"{config.docs_dir.name}/{page.relative_to(config.docs_dir).as_posix()}"
            book.page(name, page.read_text(encoding="utf-8"), renderer=True)
        book.check_rules()
        book.publish(config.docs_dir)
        if book.enabled:
            assets.install(config.docs_dir)
    finally:
        log.removeHandler(shown)
        log.removeHandler(counted)
    if args.strict and counted.count:
        print(f"error: {counted.count} warning(s) in strict mode: a strict build would fail.", file=sys.stderr)
        return 1
    return 0
