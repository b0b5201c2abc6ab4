"""MkDocs hook: run the book's scenarios and put their traces in the pages.

Thin on purpose: what runs, when and how is ``primer.book.build.Book``; this
file only ties it to MkDocs' events. Configured in ``mkdocs.yml``::

    hooks:
      - hooks/traces.py
    markdown_extensions:
      - primer.book.markdown      # renders `::: trace CHAPTER [SCENARIO]`

* ``on_config``: runs what is needed (``Book.prepare``) and hands the trace
  store to the ``primer.book.markdown`` extension as its ``source``.
* ``on_files``: leaves the raw frozen live files (``docs/traces/*.live.json``)
  out of the site; ``on_post_build`` publishes ``traces/CHAPTER.json``, both
  modes in one file, instead.
* ``on_page_markdown``: warns about markers naming what does not exist; with
  ``PRIMER_TRACES=off`` swaps markers for a placeholder, and without the
  extension for a plain listing of summary lines.
* ``on_serve``: watches the library's and the chapters' folders.

Environment: ``PRIMER_CHAPTERS`` (the chapters' package, default
``primer.chapters``) and the ``PRIMER_*`` settings (``primer.settings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.book.build import Book
from primer.book.store import PUBLISHED_DIR

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.files import Files
    from mkdocs.structure.pages import Page

#: The renderer; the hook renders a plain listing when it is not configured.
EXTENSION = "primer.book.markdown"

# MkDocs loads this file anew for every build (serve re-reads its config on
# each rebuild), so the lasting state is the shared Book, not this module.
_book: Book | None = None


def _key(config: MkDocsConfig) -> str:
    return str(Path(config.config_file_path or config.docs_dir).resolve())


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _book  # noqa: PLW0603 - one book per build, for the events below
    root = Path(config.config_file_path).parent if config.config_file_path else Path.cwd()
    _book = Book.shared(_key(config), lambda: Book(Path(config.docs_dir), root / ".cache" / PUBLISHED_DIR))
    _book.prepare()
    if EXTENSION in config.markdown_extensions:
        config.mdx_configs[EXTENSION] = {**config.mdx_configs.get(EXTENSION, {}), "source": _book.store}
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for file in list(files):
        if file.src_uri.startswith(f"{PUBLISHED_DIR}/") and file.src_uri.endswith(".live.json"):
            files.remove(file)
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    assert _book is not None  # on_config ran
    name = f"{Path(config.docs_dir).name}/{page.file.src_uri}"
    return _book.page(name, markdown, renderer=EXTENSION in config.markdown_extensions)


def on_post_build(config: MkDocsConfig) -> None:
    if _book is not None:
        _book.publish(Path(config.site_dir))


def on_serve(server: LiveReloadServer, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
    if _book is not None:
        # Each package folder on its own, not recursively: bytecode written
        # to __pycache__ must not trigger a rebuild, and the book machinery's
        # own folder (primer/book) changes nothing a trace shows.
        for folder in _book.watched_dirs():
            server.watch(str(folder), recursive=False)
    return server
