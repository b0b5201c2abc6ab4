"""The MkDocs hook: the book's engine tied to MkDocs' events, and MkDocs' quirks kept here.

The one module of the book machinery that knows MkDocs (and ProperDocs,
which runs it unchanged). A book's ``mkdocs.yml`` names a hook *file*; the
book's own, ``hooks/traces.py``, is one line that re-exports this module's
events, and another book's is the same line::

    # hooks/traces.py
    from primer.book.mkdocs_hook import *  # noqa: F403

    # mkdocs.yml
    hooks:
      - hooks/traces.py
    markdown_extensions:
      - primer.book.markdown               # renders `::: trace CHAPTER [SCENARIO]`

* ``on_startup``: notes whether this is ``mkdocs serve``, and ``--dirty``
  (MkDocs says so once; it loads the hook file anew for every rebuild, so
  what lasts is kept in ``primer.book.session.SESSION``).
* ``on_config``: opens the book of the configured ``docs_dir`` (the
  extension's ``chapters`` option names its chapters), runs what is needed
  (``Book.prepare``), points the extension at the book (``docs_dir``) and
  has it leave warnings about markers to ``on_page_markdown``, which names
  the page; adds the package's stylesheet and script to the site. With
  ``PRIMER_TRACES=off``: the stylesheet only (it sets the placeholders
  apart), and the hook leaves the page events it has nothing to do in.
* ``on_files``: serves the stylesheet and script from the package. Under
  ``mkdocs serve --dirty``, which rebuilds only pages whose Markdown
  changed, has the pages whose traces changed rebuilt too (their built file
  is dated to 1970, older than any source).
* ``on_page_markdown``: warns about markers naming what does not exist, and
  about lines meant as markers that are not valid ones; without the
  extension, swaps markers for a plain listing of summary lines, or with
  ``PRIMER_TRACES=off`` for a placeholder (which the extension shows itself:
  ``on_config`` sets its ``traces_off`` option).
* ``on_page_content`` (last) and ``on_page_context`` (after the search
  plugin): trace payloads are set aside while the search plugin parses the
  page, which it would only do to leave them out of the index
  (``primer.book.payloads``); the trace JSON links are made relative to the
  page (``primer.book.links``).
* ``on_post_build``: publishes ``traces/CHAPTER.json`` (both modes in one
  file) into the site, drops cached HTML no page used, and logs, at DEBUG,
  the machinery's own share of the build's time.
* From ``on_config`` on, what the book loaded is frozen out of the cyclic
  garbage collector's reach (``gc.freeze``): it lives as long as the build,
  and walking it at every collection while the pages are built, and once
  more as the interpreter exits, cost more than anything else traces add to
  a warm build. It is given back to the collector when a served build ends
  (``on_post_build``), when a build fails (``on_build_error``), and when the
  next build of the same process starts (``on_config``).
* ``on_env``: while serving, the theme's compiled templates are kept
  between rebuilds.
* ``on_serve``: watches the library's and the chapters' folders, each on its
  own (bytecode written to ``__pycache__`` must not trigger a rebuild).

The raw frozen live files (``docs/traces/*.live.json``) are left out of the
site by ``exclude_docs`` in ``mkdocs.yml``, which every front end reads.
Environment: the ``PRIMER_*`` settings (``primer.settings``).
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.config.config_options import ExtraScriptValue
from mkdocs.structure.files import File, InclusionLevel

from primer.book.links import PUBLISHED_DIR, page_relative
from primer.book.logs import book_logger
from primer.book.pages import chapters_named, malformed, off_page
from primer.book.session import CACHE_DIR, SESSION
from primer.variables import traces_off, unknown_variables

if TYPE_CHECKING:
    from jinja2 import Environment
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.files import Files
    from mkdocs.structure.nav import Navigation
    from mkdocs.structure.pages import Page
    from mkdocs.utils.templates import TemplateContext

    from primer.book.build import Book

__all__ = [
    "on_build_error",
    "on_config",
    "on_env",
    "on_files",
    "on_page_content",
    "on_page_context",
    "on_page_markdown",
    "on_post_build",
    "on_serve",
    "on_startup",
]

#: The renderer; the hook renders a plain listing when it is not configured.
EXTENSION = "primer.book.markdown"
#: The book's logger (``primer.book.build.LOGGER_NAME``), for what the hook says with traces off.
log = book_logger("mkdocs.plugins.primer")


def _book(config: MkDocsConfig) -> Book:
    # Opened by on_config: every later event of the build finds it, and
    # finds it here by the configuration object (asked several times a page).
    if _opened is not None and _opened[0] is config:
        return _opened[1]
    return SESSION.book(_root(config), Path(config.docs_dir))


#: The configuration of this build and its book (on_config sets it).
_opened: tuple[MkDocsConfig, Book] | None = None


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent if config.config_file_path else Path.cwd()


def _name(config: MkDocsConfig, src_uri: str) -> str:
    # How warnings name a page: docs/ch05_loop_endings.md.
    return f"{Path(config.docs_dir).name}/{src_uri}"


def on_startup(command: str, dirty: bool) -> None:
    """Note what MkDocs runs: ``build`` or ``serve``, and ``--dirty``."""
    SESSION.start(command, dirty=dirty)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Prepare the book, point the extension at it, and add the stylesheet and script."""
    # With traces off nothing of the engine is loaded (nor pydantic): the
    # build costs what it costs without the machinery (benchmarks/scale.py).
    gc.unfreeze()  # what an earlier build of this process froze
    SESSION.off = traces_off()
    if SESSION.off:
        for message in unknown_variables(os.environ):
            log.warning(f"traces: {message}")
        log.info("traces: off (PRIMER_TRACES=off), nothing ran")
        if EXTENSION in config.markdown_extensions:
            # The extension shows the placeholders, built as elements: raw HTML
            # put in the page here would go through Python-Markdown's HTML
            # block parser (and MkDocs' own) on every page.
            off = {"traces_off": True, "warn_missing": False}  # the hook warns, naming page and line
            config.mdx_configs[EXTENSION] = {**config.mdx_configs.get(EXTENSION, {}), **off}
        _leave(config, "page_content", "page_context")
        _add_assets(config, scripts=False)  # the stylesheet sets the placeholders apart from the prose
        return config
    options = config.mdx_configs.get(EXTENSION, {})
    started = time.perf_counter()
    # The engine is imported here, on the first build: its share of the time.
    book = SESSION.book(_root(config), Path(config.docs_dir), chapters=options.get("chapters"))
    global _opened  # noqa: PLW0603 - the one book of this build, for its other events
    _opened = (config, book)
    book.rules = options.get("rules", True) is not False
    opened = time.perf_counter() - started
    book.prepare()
    # What the book loaded (parsed traces, imported chapters) outlives every
    # page: the collector need not walk it while they are built, nor as the
    # process exits. Given back to it as the module's docstring says.
    gc.freeze()
    book.clock.add("load", opened)
    SESSION.prepared(book, object())  # this build's: the extension finds the book ready
    SESSION.payloads.clear()
    with book.clock("search"):
        SESSION.payloads.keep_in(_root(config) / CACHE_DIR / "search.json")
    if EXTENSION in config.markdown_extensions:
        # A path and a flag, not objects: the extension finds the book in the session.
        config.mdx_configs[EXTENSION] = {**options, "docs_dir": str(book.docs_dir), "warn_missing": False}
    if book.enabled:
        _add_assets(config, scripts=True)
    return config


def _add_assets(config: MkDocsConfig, *, scripts: bool) -> None:
    """Link the package's stylesheet (and, with ``scripts``, its script) from every page."""
    from primer.book import assets

    for path in assets.stylesheets():
        if path not in config.extra_css:
            config.extra_css.append(path)
    for path in assets.scripts() if scripts else []:
        if path not in [str(script) for script in config.extra_javascript]:
            config.extra_javascript.append(ExtraScriptValue(path))


def _leave(config: MkDocsConfig, *events: str) -> None:
    # Events of every page the hook has nothing to do in (traces off): taken
    # out of this build's list, MkDocs neither calls the hook there nor, with
    # --verbose, logs that it does (two lines a page). The list is this
    # configuration's: `mkdocs serve` loads the hook anew for each rebuild.
    registered = getattr(getattr(config, "plugins", None), "events", {})
    for event in events:
        handlers = registered.get(event, [])
        if globals()[f"on_{event}"] in handlers:
            handlers.remove(globals()[f"on_{event}"])


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Serve the assets from the package; under ``--dirty``, have pages whose traces changed rebuilt."""
    for file in list(files):
        raw = file.src_uri.startswith(f"{PUBLISHED_DIR}/") and file.src_uri.endswith(".live.json")
        if raw and file.inclusion is not InclusionLevel.EXCLUDED:
            # Zensical runs no hook and would publish it: the configuration must leave it out.
            log.warning(
                f"traces: {_name(config, file.src_uri)} would be published as it is: add "
                f"`exclude_docs: {PUBLISHED_DIR}/*.live.json` to {Path(config.config_file_path or 'mkdocs.yml').name}."
            )
            files.remove(file)
    if SESSION.off:
        # The stylesheet on_config added, and the script if the configuration
        # names it itself (as a book built with Zensical too does): pages link them.
        _serve_assets(files, config, only_named=True)
        return files
    book = _book(config)
    if book.enabled:
        _serve_assets(files, config, only_named=False)
    if SESSION.dirty:
        _expire(book, {_name(config, f.src_uri): Path(f.abs_dest_path) for f in files.documentation_pages()})
    return files


def _serve_assets(files: Files, config: MkDocsConfig, *, only_named: bool) -> None:
    """Serve the package's stylesheet and script (``only_named``: those the configuration names)."""
    from primer.book import assets

    named = {*config.extra_css, *(str(script) for script in config.extra_javascript)}
    for path, source in assets.sources().items():
        if only_named and path not in named:
            continue
        earlier = files.get_file_from_path(path)
        if earlier is not None:  # a copy another front end wrote into the docs
            files.remove(earlier)
        files.append(File.generated(config, path, abs_src_path=str(source)))


def _expire(book: Book, built: dict[str, Path]) -> list[str]:
    """Date back the built pages that show traces changed since the last build (``--dirty``)."""
    expired = []
    for name, path in built.items():
        if SESSION.page_chapters.get(name, set()) & book.changed:
            try:
                os.utime(path, ns=(0, 0))
            except FileNotFoundError:
                continue  # not built yet: MkDocs builds it anyway
            expired.append(name)
    return expired


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Check the page's markers (naming page and line); a placeholder or a listing where there is no renderer."""
    name = _name(config, page.file.src_uri)
    SESSION.reading = (name, markdown)  # for the extension, which warns about the markers only it finds
    if SESSION.off:
        if EXTENSION in config.markdown_extensions:  # it shows the placeholders (on_config)
            placed, warnings = markdown, malformed(name, markdown)
        else:
            placed, warnings = off_page(name, markdown)
        for warning in warnings:
            log.warning(f"traces: {warning}")
        return placed
    SESSION.page_chapters[name] = chapters_named(markdown)
    return _book(config).page(name, markdown, renderer=EXTENSION in config.markdown_extensions)


def on_env(env: Environment, config: MkDocsConfig, files: Files) -> Environment:
    """While serving, keep the theme's compiled templates between rebuilds."""
    if SESSION.serving:
        env.bytecode_cache = SESSION.theme_bytecode
    return env


# Last, so every other plugin's on_page_content sees the whole page.
def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Last: make trace links relative to the page, and set payloads aside from the search plugin."""
    if SESSION.off:
        return html
    book = _book(config)
    with book.clock("search"):
        # The trace JSON link, root-relative as rendered, made to work without JavaScript.
        return SESSION.payloads.take(page.file.src_uri, page_relative(html, page.url))


# After the search plugin's (priority 0) has indexed the page without them;
# before the theme puts the page's content into its template.
def on_page_context(context: TemplateContext, page: Page, config: MkDocsConfig, nav: Navigation) -> TemplateContext:
    """After the search plugin, before the theme: give the page its payloads back."""
    if SESSION.off:
        return context
    with _book(config).clock("search"):
        page.content = SESSION.payloads.give_back(page.file.src_uri, page.content or "")
    return context


# MkDocs' event_priority sets this attribute; set here, so the events read plainly.
on_page_content.mkdocs_priority = -100  # type: ignore[attr-defined]
on_page_context.mkdocs_priority = -100  # type: ignore[attr-defined]


def on_post_build(config: MkDocsConfig) -> None:
    """Publish the trace JSON into the site, drop unused cached HTML, log the machinery's share."""
    if SESSION.serving:  # a build's process ends here: its last collection need not walk the book
        gc.unfreeze()
    if SESSION.off:
        return
    book = _book(config)
    book.publish(Path(config.site_dir))
    if not SESSION.dirty:  # every page was read: the book's rules can be checked, and unused cached HTML is stale
        book.check_rules()
        book.rendered.prune()
    with book.clock("search"):
        SESSION.payloads.save(prune=not SESSION.dirty)
    book.log_share()


def on_build_error(error: Exception) -> None:
    """Give what on_config froze back to the garbage collector (the build stopped)."""
    gc.unfreeze()


def on_serve(server: LiveReloadServer, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
    """Watch the library's and the chapters' folders, each on its own."""
    if SESSION.off:
        return server
    # Each package folder on its own, not recursively: bytecode written to
    # __pycache__ must not trigger a rebuild, and the book machinery's own
    # folder (primer/book) changes nothing a trace shows. A `watch:` entry of
    # mkdocs.yml covering them (for Zensical, which watches nothing else) is
    # dropped: MkDocs would watch it recursively.
    folders = list(_book(config).watched_dirs())
    config.watch[:] = [
        entry for entry in config.watch if not any(Path(entry).resolve() in (f, *f.parents) for f in folders)
    ]
    for folder in folders:
        server.watch(str(folder), recursive=False)
    return server
