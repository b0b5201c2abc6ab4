"""What the book machinery keeps for the life of a process (``SESSION``), or of a plugin instance.

* **the books**, one per docs folder (their chapters' imports, parsed traces and rendered HTML
  outlive one build: Zensical makes a new Markdown extension for every page). ``book`` opens one
  with the standard layout: ``ROOT/docs/traces/CHAPTER.live.json`` (frozen live traces,
  committed) and ``ROOT/.cache/trace-book/`` (the one cache, ``primer.book._cache``);
* **which build each book was prepared for** (``ready``): the Markdown extension alone (Zensical
  runs no MkDocs plugin) passes a token that is new for every build (Zensical's configuration
  object): the first page of a build prepares the book and publishes its files, the others find it
  ready.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine is loaded when a book is opened: not with traces off
    from collections.abc import Mapping

    from primer.book._build import Book

__all__ = ["CACHE_DIR", "SESSION", "Session"]

#: The machinery's caches, relative to the book's root (the folder of mkdocs.yml).
CACHE_DIR = Path(".cache") / "trace-book"


class Session:
    """The books, and which build each was prepared for."""

    # Not a dataclass: every build imports this module, traces off too, and making one costs 0.3 ms.
    def __init__(self) -> None:
        #: The books, by their docs folder (resolved).
        self.books: dict[str, Book] = {}
        # Book key -> the token of the build its traces were prepared for.
        self._prepared: dict[str, object] = {}
        self._lock = threading.Lock()
        # Absolute docs folders as spelled -> resolved (``key``).
        self._resolved: dict[str, str] = {}
        #: The configuration of the Zensical build the assets were last written for with traces off
        #: (``primer.book._sources.assets_for_page``): Zensical makes a new extension for every page.
        self.styled: object | None = None

    def key(self, docs_dir: Path) -> str:
        """How a book is known: its docs folder, resolved."""
        if not docs_dir.is_absolute():
            return str(docs_dir.resolve())
        # Asked for by every event of every page: an absolute path is resolved once.
        spelled = str(docs_dir)
        known = self._resolved.get(spelled)
        if known is None:
            known = self._resolved[spelled] = str(docs_dir.resolve())
        return known

    def book(
        self,
        root: Path,
        docs_dir: Path,
        *,
        chapters: str | None = None,
        cache: Path | None = None,
        live_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Book:
        """The book of ``docs_dir``, opened on first use with its caches under ``root``.

        ``chapters`` is the package the configuration names (``PRIMER_CHAPTERS`` wins), ``cache``
        the cache folder (``root / CACHE_DIR``), ``live_dir`` the frozen traces' (``docs/traces``),
        ``environ`` the ``PRIMER_*`` settings (the options under the environment).
        """
        key = self.key(docs_dir)
        with self._lock:
            if key not in self.books:
                from primer.book._build import Book
                from primer.book._chapters import Chapters
                from primer.variables import book_chapters

                # The chapters package beside mkdocs.yml: `mkdocs` and `zensical`, run as commands,
                # do not put that folder on the import path. Last: nothing installed is shadowed.
                if str(root.resolve()) not in sys.path:
                    sys.path.append(str(root.resolve()))
                cache = cache or root / CACHE_DIR
                package = book_chapters(chapters, environ)
                self.books[key] = Book(
                    docs_dir,
                    cache,
                    chapters=Chapters(package, imports_cache=cache / "imports.json"),
                    live_dir=live_dir,
                    environ=environ,
                )
            elif environ is not None:
                self.books[key].environ = environ  # the options of this build (a serve re-reads them)
            return self.books[key]

    def register(self, docs_dir: Path, book: Book | None) -> None:
        """Set (or with None, drop) the book ``book`` returns for ``docs_dir``: for tests."""
        key = self.key(docs_dir)
        with self._lock:
            self._prepared.pop(key, None)
            if book is None:
                self.books.pop(key, None)
            else:
                self.books[key] = book

    def ready(self, book: Book, token: object | None, *, site_dir: Path | None = None) -> None:
        """Prepare the book unless it was for the build ``token`` stands for (None: any), and publish its files.

        Pages may render in several threads: one prepares, the others wait. The trace JSON and the
        assets go into the docs folder (front ends copy its files) and into ``site_dir`` too:
        Zensical lists the docs' files before its first page, so on a first build it would miss them.
        """
        key = self.key(book.docs_dir)
        with self._lock:
            last = self._prepared.get(key)
            if last is not None and (token is None or last is token):
                return
            book.prepare()
            from primer.book import _assets as assets

            for root in (book.docs_dir, *([site_dir] if site_dir is not None else [])):
                book.publish(root)
                if book.enabled:
                    assets.install(root)
            self._prepared[key] = token if token is not None else object()


#: This process's session.
SESSION = Session()
