"""MkDocs hook: run the book's scenarios and put their traces in the pages.

Thin on purpose: what runs, when and how is ``primer.book.build.Book``; this
file only ties it to MkDocs' events. Configured in ``mkdocs.yml``::

    hooks:
      - hooks/traces.py
    markdown_extensions:
      - primer.book.markdown      # renders `::: trace CHAPTER [SCENARIO]`

* ``on_startup``: notes whether this is ``mkdocs serve``, and ``--dirty``
  (``primer.book.session``: MkDocs says so once, the hook is loaded anew
  for every rebuild).
* ``on_config``: runs what is needed (``Book.prepare``) and hands the trace
  store to the ``primer.book.markdown`` extension as its ``source``, with
  the book's cache of rendered HTML; the extension leaves warnings about
  markers naming nothing to ``on_page_markdown``, which names the page.
* ``on_files``: leaves the raw frozen live files (``docs/traces/*.live.json``)
  out of the site; ``on_post_build`` publishes ``traces/CHAPTER.json``, both
  modes in one file, instead. Under ``mkdocs serve --dirty`` it also has
  the pages whose traces changed rebuilt, though their Markdown did not.
* ``on_page_markdown``: warns about markers naming what does not exist; with
  ``PRIMER_TRACES=off`` swaps markers for a placeholder, and without the
  extension for a plain listing of summary lines.
* ``on_page_content`` (last) and ``on_page_context`` (after the search
  plugin): trace payloads are set aside while the search plugin parses the
  page, which it would only do to leave them out of the index; the trace
  JSON links are made relative to the page (``primer.book.links``).
* ``on_post_build``: publishes the trace JSON, drops cached HTML no page
  used, and logs, at DEBUG, the machinery's own share of the build's time.
* ``on_env``: while serving, the theme's compiled templates are kept
  between rebuilds.
* ``on_serve``: watches the library's and the chapters' folders.

Environment: ``PRIMER_CHAPTERS`` (the chapters' package, default
``primer.chapters``) and the ``PRIMER_*`` settings (``primer.settings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.plugins import event_priority

from primer.book.build import Book
from primer.book.links import page_relative
from primer.book.session import SESSION, THEME_BYTECODE
from primer.book.store import PUBLISHED_DIR

if TYPE_CHECKING:
    from jinja2 import Environment
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.files import Files
    from mkdocs.structure.nav import Navigation
    from mkdocs.structure.pages import Page
    from mkdocs.utils.templates import TemplateContext

#: The renderer; the hook renders a plain listing when it is not configured.
EXTENSION = "primer.book.markdown"

# MkDocs loads this file anew for every build (serve re-reads its config on
# each rebuild), so the lasting state is the shared Book, not this module.
_book: Book | None = None


def _key(config: MkDocsConfig) -> str:
    return str(Path(config.config_file_path or config.docs_dir).resolve())


def _name(config: MkDocsConfig, src_uri: str) -> str:
    # How warnings name a page: docs/ch05_loop_endings.md.
    return f"{Path(config.docs_dir).name}/{src_uri}"


def on_startup(command: str, dirty: bool) -> None:
    SESSION.start(command, dirty=dirty)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    global _book  # noqa: PLW0603 - one book per build, for the events below
    root = Path(config.config_file_path).parent if config.config_file_path else Path.cwd()
    cache = root / ".cache"
    _book = Book.shared(
        _key(config), lambda: Book(Path(config.docs_dir), cache / PUBLISHED_DIR, html_dir=cache / "html")
    )
    _book.prepare()
    if EXTENSION in config.markdown_extensions:
        config.mdx_configs[EXTENSION] = {
            **config.mdx_configs.get(EXTENSION, {}),
            "source": _book.store,
            "cache": _book.rendered,
            # on_page_markdown warns about those, naming the page.
            "warn_missing": False,
        }
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for file in list(files):
        if file.src_uri.startswith(f"{PUBLISHED_DIR}/") and file.src_uri.endswith(".live.json"):
            files.remove(file)
    if SESSION.dirty and _book is not None:
        _book.expire({_name(config, f.src_uri): Path(f.abs_dest_path) for f in files.documentation_pages()})
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    assert _book is not None  # on_config ran
    return _book.page(_name(config, page.file.src_uri), markdown, renderer=EXTENSION in config.markdown_extensions)


def on_env(env: Environment, config: MkDocsConfig, files: Files) -> Environment:
    if SESSION.serving:
        env.bytecode_cache = THEME_BYTECODE
    return env


# Last, so every other plugin's on_page_content sees the whole page.
@event_priority(-100)
def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    assert _book is not None  # on_config ran
    # The trace JSON link, root-relative as rendered, made to work without JavaScript.
    return _book.hide_payloads(page.file.src_uri, page_relative(html, page.url))


# After the search plugin's (priority 0) has indexed the page without them;
# before the theme puts the page's content into its template.
@event_priority(-100)
def on_page_context(context: TemplateContext, page: Page, config: MkDocsConfig, nav: Navigation) -> TemplateContext:
    assert _book is not None  # on_config ran
    page.content = _book.restore_payloads(page.file.src_uri, page.content or "")
    return context


def on_post_build(config: MkDocsConfig) -> None:
    if _book is not None:
        _book.publish(Path(config.site_dir))
        if not SESSION.dirty:  # every page was rendered: unused cached HTML is stale
            _book.rendered.prune()
        _book.log_share()


def on_serve(server: LiveReloadServer, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
    if _book is not None:
        # Each package folder on its own, not recursively: bytecode written
        # to __pycache__ must not trigger a rebuild, and the book machinery's
        # own folder (primer/book) changes nothing a trace shows.
        for folder in _book.watched_dirs():
            server.watch(str(folder), recursive=False)
    return server
