"""The ``trace-book`` MkDocs plugin: the book's traces in its pages, and MkDocs' quirks kept here.

Options are ``primer.book._configuration``'s, the environment winning; it adds the Markdown extension
itself, as mkdocstrings does. A hook file (``primer.book.mkdocs_hook``) is the same class. What lasts
across ``mkdocs serve`` rebuilds lives on the instance; a build holds the cache's lock throughout.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.config.base import ValidationError
from mkdocs.config.config_options import ExtraScriptValue
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, InclusionLevel
from watchdog.events import FileSystemEvent, FileSystemEventHandler

from primer.book import _assets as assets
from primer.book import _configuration as plugin_options
from primer.book._configuration import EXTENSION, TraceBookConfig
from primer.book._lock import BuildLock
from primer.book._logs import book_logger
from primer.book._markers import check, scan
from primer.errors import ConfigError
from primer.variables import traces_off, unknown_variables

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mkdocs.config import base
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.files import Files
    from mkdocs.structure.nav import Navigation
    from mkdocs.structure.pages import Page
    from mkdocs.utils.templates import TemplateContext

    from primer.book._book import Book, Prepared
    from primer.book.markdown import TraceExtension
    from primer.prices import PriceTable

#: The book's logger (``primer.book._book.LOGGER_NAME``), for what the plugin says with traces off.
log = book_logger("mkdocs.plugins.primer")
#: What stands for a trace block while search reads the page (``on_page_content``): its search text.
_STAND_IN = re.compile(r"<!--trace-book:[0-9]+--><p>[^<]*</p>")


class TraceBookPlugin(BasePlugin[TraceBookConfig]):  # type: ignore[no-untyped-call]
    """The book's traces in its pages: prepare before the pages, render through the extension, publish after."""

    def __init__(self) -> None:
        self.load_config({})  # a hook file's instance (primer.book.mkdocs_hook); MkDocs loads a plugin's own
        #: The book, kept across serve rebuilds, and what this build shows of it (None with traces off).
        self.book: Book | None = None
        self.prepared: Prepared | None = None
        self.extension: TraceExtension | None = None
        #: The cache's build lock, held from on_config to on_post_build.
        self.lock: BuildLock | None = None
        self.dirty = False  # ``--dirty``: this serve rebuilds only the pages whose source changed
        #: Page -> the chapters its markers and live blocks name, as last rendered (for ``--dirty``).
        self.page_chapters: dict[str, set[str]] = {}
        #: This build's pages read (name -> Markdown), each chapter's page (its URL), the chapters changed.
        self.pages: dict[str, str] = {}
        self.urls: dict[str, str] = {}
        self.changed: set[str] = set()
        self.rules = True
        #: Page -> its HTML, and its trace blocks by their stand-ins, while search reads it.
        self.taken: dict[str, tuple[str, dict[str, str]]] = {}
        #: The site this process last published the trace JSON into (``on_post_build``).
        self._published: Path | None = None
        #: Whether this is a serve, its server once what a prepare reads is watched (``on_serve``), whether that
        #: changed since the last prepare began, and what that one said and was made with (shown again if not).
        self.serving, self.inputs_changed = False, True
        self.server: LiveReloadServer | None = None
        self._said: tuple[list[logging.LogRecord], object] | None = None
        self._changed = FileSystemEventHandler()
        self._changed.on_any_event = self._saw  # type: ignore[method-assign]

    def load_config(
        self, options: dict[str, Any], config_file_path: str | None = None
    ) -> tuple[base.ConfigErrors, base.ConfigWarnings]:
        """Validate the options; one no option reads is an error naming it (MkDocs only warns)."""
        errors, warnings = super().load_config(options, config_file_path)
        names = ", ".join(name for name, _ in self.config_scheme)
        unknown = [(key, said) for key, said in warnings if str(said).startswith("Unrecognised configuration name")]
        for key, _said in unknown:
            errors.append((key, ValidationError(f"trace-book has no option {key!r}. Its options are: {names}.")))
        return errors, [warning for warning in warnings if warning not in unknown]

    def on_startup(self, *, command: str, dirty: bool) -> None:
        self.dirty, self.serving, self.server = dirty, command == "serve", None

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        """Prepare the book, put this build's extension in (last, for the one ``mkdocs.yml`` names), link the assets."""
        from primer.book.markdown import TraceExtension

        environ = plugin_options.environ(self.config)
        named = dict(config.mdx_configs.get(EXTENSION, {}))  # a hook book's options are the extension's
        chapters = self.config.chapters or named.get("chapters")
        before, self.prepared = self.prepared, None
        self.taken, self.pages, self.urls = {}, {}, {}
        self.on_shutdown()  # an earlier build of this process that stopped before its end
        if traces_off(environ):  # nothing of the engine (nor pydantic) is loaded: benchmarks/scale.py
            for message in unknown_variables(environ):
                log.warning(f"traces: {message}")
            log.info(f"traces: off ({'PRIMER_TRACES=off' if traces_off() else 'enabled: false'}), nothing ran")
            # Out of this build's list, the page events it has nothing to do in: MkDocs neither calls
            # them nor, with --verbose, logs two lines a page.
            for event in ("page_content", "page_context"):
                with contextlib.suppress(AttributeError, ValueError):  # no MkDocs plugins (a command's), not listed
                    config.plugins.events[event].remove(getattr(self, f"on_{event}"))
        else:
            started = time.perf_counter()
            root = Path(config.config_file_path).parent if config.config_file_path else Path.cwd()
            docs = Path(config.docs_dir)
            self.lock = BuildLock(root / self.config.cache_dir)
            self.lock.acquire(log)  # one build at a time per cache: a second one waits, and says so
            try:  # the engine is imported here, on the first build: its share of the time
                prices = plugin_options.book_prices(config, self.config)
                if self.book is None or self.book.docs_dir.resolve() != docs.resolve():
                    from primer.book._book import open_book

                    cache, live = root / self.config.cache_dir, docs / self.config.traces_dir
                    self.book = open_book(root, docs, chapters=chapters, cache=cache, live_dir=live, keep=False)
                    before = None
            except ConfigError as error:  # the book's configuration: MkDocs says it as an error, no traceback
                raise PluginError(str(error)) from None
            self.book.environ = environ  # the options of this build (a serve re-reads them)
            self.rules = self.config.rules and named.get("rules", True) is not False
            opened = time.perf_counter() - started
            self.prepared = prepared = self._prepare(before, environ, prices)
            prepared.clock.add("load", opened)
            self.changed = prepared.changed(before)
        # Its cache and prices are the prepared book's; on_page_markdown warns about markers, naming page and line.
        off, given = self.prepared is None, {"chapters": chapters} if chapters else {}
        self.extension = TraceExtension(source=self.prepared, warn_missing=False, traces_off=off, **given)
        config.markdown_extensions = [name for name in config.markdown_extensions if name != EXTENSION]
        config.markdown_extensions.append(self.extension)  # type: ignore[arg-type]  # MkDocs takes instances
        # Traces off too: the stylesheet sets the placeholders apart.
        config.extra_css += [path for path in assets.STYLESHEETS if path not in config.extra_css]
        linked = [str(script) for script in config.extra_javascript]
        scripts = assets.SCRIPTS if self.prepared is not None else ()
        config.extra_javascript += [ExtraScriptValue(path) for path in scripts if path not in linked]
        return config

    def _prepare(self, before: Prepared | None, environ: Mapping[str, str], prices: PriceTable) -> Prepared:
        # What the book shows this build; under serve, what the last prepare made while nothing it reads changed.
        assert self.book is not None
        if not self.serving:  # one build: what lasts until it ends frozen (what MkDocs made, then what the chapters'
            gc.freeze()  # code made), not walked by full collections for no garbage (30 and 125 ms); not under serve,
            return self.book.prepare(prices, freeze=True)  # where the last build's garbage stayed (8 MB a rebuild)
        made_with = (dict(environ), prices.key, dict(self.config), self.book.cache.frozen_state())
        unchanged = self.server is not None and not self.inputs_changed  # watched since the last prepare began
        kept = self._said if unchanged and self._said and self._said[1] == made_with else None
        # Nothing a prepare reads changed (a prose save under serve): what the last one made, said again.
        prepared = self.book.again(before, kept[0]) if before is not None and kept is not None else None
        if prepared is None:
            self.inputs_changed = False  # before it: a save while it runs is the next build's to see
            with self.book.recording() as said:
                prepared = self.book.prepare(prices)
            # Made from the cache alone, the next prepare would make the same; one that ran makes it anew.
            self._said = None if self.book.cache.made else (said, made_with)
            self._watch_new()
        return prepared

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        """Serve the assets from the package; under ``--dirty``, have pages whose traces changed rebuilt."""
        frozen = (Path(config.docs_dir) / self.config.traces_dir).resolve()
        for file in list(files):
            raw = file.src_uri.endswith(".live.json") and Path(file.abs_src_path or "").resolve().parent == frozen
            if raw and file.inclusion is not InclusionLevel.EXCLUDED:
                # Zensical runs no plugin and would publish it: the configuration must leave it out.
                log.warning(
                    f"traces: {_name(config, file.src_uri)} would be published as it is: add `exclude_docs: "
                    f"{Path(file.src_uri).parent.as_posix()}/*.live.json` to "
                    f"{Path(config.config_file_path or 'mkdocs.yml').name}."
                )
                files.remove(file)
        # What the pages link: what on_config added, and what the configuration names itself (Zensical's too).
        named = {*config.extra_css, *(str(script) for script in config.extra_javascript)}
        for path, source in assets.SOURCES.items():
            if path in named:
                if (earlier := files.get_file_from_path(path)) is not None:  # a copy another front end wrote
                    files.remove(earlier)
                files.append(File.generated(config, path, abs_src_path=str(source)))
        if self.prepared is not None and self.dirty:  # date back the built pages that show traces changed
            for page in files.documentation_pages():
                if self.page_chapters.get(_name(config, page.src_uri), set()) & self.changed:
                    with contextlib.suppress(FileNotFoundError):  # not built yet: MkDocs builds it anyway
                        os.utime(page.abs_dest_path, ns=(0, 0))
        return files

    def on_page_markdown(self, markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        """Check the page's markers, warning naming page and line (the extension renders them)."""
        name = _name(config, page.file.src_uri)
        if self.extension is not None:  # for the extension: the links it renders, and the markers only it finds
            self.extension.reading, self.extension.page_url = (name, markdown), page.url
        book, prepared = self.book, self.prepared
        if book is None or prepared is None:  # traces off: the extension shows the placeholders
            for warning in check(name, markdown):
                log.warning(f"traces: {warning}")
            return markdown
        if self.dirty:  # the chapters its traces depend on: its markers' and its mode blocks'
            found = scan(markdown)
            self.page_chapters[name] = {m.chapter for m in found.markers} | {b.chapter for b in found.blocks}
        self.pages[name] = markdown
        book.check(prepared, name, markdown, self.urls, page.url)
        return markdown  # the extension keeps or drops the live blocks

    # Last, so every other plugin's on_page_content sees the whole page. Material's search walks every
    # tag of a `data-search-exclude` block before it leaves it out (the largest cost traces added to a
    # build; MkDocs' search ignores the attribute): it is given each block's text outside its payloads.
    @event_priority(-100)
    def on_page_content(self, html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        """Set the trace blocks aside while search reads the page, each swapped for a paragraph of its search text."""
        if self.extension is None or not self.extension.blocks:
            return html
        # One pass: a page's blocks are in it in the order rendered (``in`` and ``replace`` cost 3x as much).
        taken, pieces, done = dict[str, str](), [], 0
        for search, block in self.extension.blocks:
            # Found by its opening, then compared: a whole block as the needle costs more to prepare than to find.
            found = html.find(opening := block[:100], done)
            while found >= 0 and not html.startswith(block, found):
                found = html.find(opening, found + 1)
            if found >= 0:  # one another plugin changed is left for search to read whole
                stand_in = f"<!--trace-book:{len(taken)}--><p>{search}</p>"
                pieces += [html[done:found], stand_in]
                taken[stand_in] = block
                done = found + len(block)
        self.taken[page.file.src_uri] = (html, taken)
        return "".join([*pieces, html[done:]])

    @event_priority(-100)
    def on_page_context(
        self, context: TemplateContext, *, page: Page, config: MkDocsConfig, nav: Navigation
    ) -> TemplateContext:
        """After the search plugin (priority 0) indexed the page, before the theme: give it its trace blocks back."""
        if (stashed := self.taken.pop(page.file.src_uri, None)) is not None:
            original, taken = stashed
            page.content = _STAND_IN.sub(lambda found: taken.pop(found[0], found[0]), page.content or "")
            if taken:  # a stand-in is gone: the page keeps its HTML from before
                log.warning(f"traces: {page.file.src_uri}: a plugin changed the page while its traces were set aside")
                page.content = original
        return context

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        """Publish the trace JSON into the site, drop unused cached HTML, log the machinery's share."""
        book, prepared = self.book, self.prepared
        if book is None or prepared is None:
            return
        site = Path(config.site_dir)
        # Under --dirty the site is kept between rebuilds: what was published there stands
        # unless a chapter's traces changed (a prose save publishes nothing).
        if not (self.dirty and self._published == site and not self.changed):
            book.publish(site, prepared, self.urls)
            self._published = site
        if not self.dirty:  # every page was read: the rules can be checked, and unused cached HTML is stale
            book.check_rules(prepared, self.pages, rules=self.rules)
            book.prune(prepared)
        book.log.debug(prepared.share())
        self.on_shutdown()

    def on_shutdown(self, *, error: Exception | None = None) -> None:
        """Give the cache to the next build: this one ended (or failed: ``on_build_error``), or the process does."""
        gc.unfreeze()
        if self.lock is not None:
            self.lock.release()

    on_build_error = on_shutdown

    def on_serve(self, server: LiveReloadServer, *, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
        """Watch the library's and the chapters' folders, each on its own, and the machinery's templates and assets."""
        if self.book is None or self.prepared is None:
            return server
        # Each package folder on its own, not recursively (bytecode written to __pycache__ must not rebuild):
        # a `watch:` entry covering them (Zensical's) is dropped, since MkDocs would watch it recursively.
        folders = self.book.chapters.watched_dirs()
        config.watch[:] = [
            entry for entry in config.watch if not any(Path(entry).resolve() in (f, *f.parents) for f in folders)
        ]
        self.server = server
        self._watch_new()
        return server

    def _saw(self, event: FileSystemEvent) -> None:  # not bytecode, any process's (a poll sees __pycache__ change)
        self.inputs_changed |= "__pycache__" not in Path(os.fsdecode(event.src_path)).parts

    def _watch_new(self) -> None:
        """Watch each folder a prepare reads, after each prepare too (a new package's): watched again, it is once."""
        if self.server is None or self.book is None:
            return
        # A save in the code's folders or the templates and assets rebuilds (an edit to them changes pages: their
        # bytes are in the cache key); in any, the next rebuild prepares again, else it shows what the last made.
        pages, rest = self.book.inputs()
        for folder in pages:
            self.server.watch(str(folder), recursive=False)
        for folder in (*pages, *rest):
            self.server.observer.schedule(self._changed, str(folder), recursive=False)


def _name(config: MkDocsConfig, src_uri: str) -> str:
    # How warnings name a page: docs/ch05_loop_endings.md.
    return f"{os.path.basename(config.docs_dir)}/{src_uri}"
