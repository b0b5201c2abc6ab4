"""The ``trace-book`` MkDocs plugin: the book's traces in its pages, and MkDocs' quirks kept here.

Options are ``primer.book._configuration``'s, the environment winning; it adds the Markdown extension
itself, as mkdocstrings does. A hook file (``primer.book.mkdocs_hook``) is the same class. What lasts
across ``mkdocs serve`` rebuilds lives on the instance; a build holds the cache's lock throughout.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mkdocs.config.config_options import ExtraScriptValue
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority
from mkdocs.structure.files import File, InclusionLevel

from primer.book import _configuration as plugin_options
from primer.book import _payloads as payloads
from primer.book._cache import BuildLock
from primer.book._configuration import EXTENSION, TraceBookConfig
from primer.book._logs import book_logger
from primer.book._markers import check, scan
from primer.book._session import Session
from primer.errors import ConfigError
from primer.variables import traces_off, unknown_variables

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from mkdocs.config import base
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.livereload import LiveReloadServer
    from mkdocs.structure.files import Files
    from mkdocs.structure.nav import Navigation
    from mkdocs.structure.pages import Page
    from mkdocs.utils.templates import TemplateContext

    from primer.book._build import Book
    from primer.book._prices import PriceTable
    from primer.book.markdown import TraceExtension

__all__ = ["EXTENSION", "TraceBookConfig", "TraceBookPlugin"]

#: The book's logger (``primer.book._build.LOGGER_NAME``), for what the plugin says with traces off.
log = book_logger("mkdocs.plugins.primer")


class TraceBookPlugin(BasePlugin[TraceBookConfig]):  # type: ignore[no-untyped-call]
    """The book's traces in its pages: prepare before the pages, render through the extension, publish after."""

    def __init__(self) -> None:
        #: The books, by docs folder (``primer.book._session``).
        self.session = Session()
        #: This build's book (None with traces off), and its extension, rendering from it.
        self.book: Book | None = None
        self.extension: TraceExtension | None = None
        #: The cache's build lock, held from on_config to on_post_build (``primer.book._cache``).
        self.lock: BuildLock | None = None
        #: Whether this serve rebuilds only the pages whose source changed (``--dirty``).
        self.dirty = False
        #: Page -> the chapters its markers and live blocks name, as last rendered (for ``--dirty``).
        self.page_chapters: dict[str, set[str]] = {}
        #: Page -> its HTML, and its trace blocks' stand-ins and blocks, while search reads it.
        self.taken: dict[str, tuple[str, list[tuple[str, str]]]] = {}
        #: The site this process last published the trace JSON into (``on_post_build``).
        self._published: Path | None = None

    @classmethod
    def hook(cls) -> TraceBookPlugin:
        """The plugin as a hook file's: its default options."""
        plugin = cls()
        plugin.load_config({})
        return plugin

    def events(self) -> dict[str, Callable[..., Any]]:
        """The plugin's events by name, for a hook file's namespace: ``globals().update(plugin.events())``."""
        return {name: getattr(self, name) for name in dir(type(self)) if name.startswith("on_")}

    def load_config(
        self, options: dict[str, Any], config_file_path: str | None = None
    ) -> tuple[base.ConfigErrors, base.ConfigWarnings]:
        """Validate the options; one no option reads is an error naming it (MkDocs only warns)."""
        errors, warnings = super().load_config(options, config_file_path)
        return plugin_options.unknown_as_errors([name for name, _ in self.config_scheme], errors, warnings)

    def environ(self) -> Mapping[str, str]:
        """The ``PRIMER_*`` settings of this build: the options as defaults, the environment over them."""
        return plugin_options.environ(self.config)

    def on_startup(self, *, command: str, dirty: bool) -> None:
        """Note whether MkDocs serves with ``--dirty``."""
        self.dirty = dirty

    def on_config(self, config: MkDocsConfig) -> MkDocsConfig:
        """Prepare the book, put the extension in, and add the stylesheet and script."""
        # Traces off loads nothing of the engine (nor pydantic): benchmarks/scale.py.
        environ = self.environ()
        options = dict(config.mdx_configs.get(EXTENSION, {}))
        chapters = self.config.chapters or options.get("chapters")
        self.book = None
        self.taken.clear()
        if traces_off(environ):
            for message in unknown_variables(environ):
                log.warning(f"traces: {message}")
            log.info("traces: off (PRIMER_TRACES=off), nothing ran")
            # The extension shows the placeholders as elements (raw HTML would be parsed twice a page).
            self._put_extension(config, off=True, chapters=chapters)
            self._leave(config, "page_content", "page_context")
            _add_assets(config, scripts=False)  # the stylesheet sets the placeholders apart from the prose
            return config
        started = time.perf_counter()
        root = Path(config.config_file_path).parent if config.config_file_path else Path.cwd()
        self._release()  # an earlier build of this process that stopped before its end
        self.lock = BuildLock(root / self.config.cache_dir)
        self.lock.acquire(log)  # one build at a time per cache: a second one waits, and says so
        try:
            # The engine is imported here, on the first build: its share of the time.
            self.book = book = self.session.book(
                root,
                Path(config.docs_dir),
                chapters=chapters,
                cache=root / self.config.cache_dir,
                live_dir=Path(config.docs_dir) / self.config.traces_dir,
                environ=environ,
            )
            book.rules = self.config.rules and options.get("rules", True) is not False
            opened = time.perf_counter() - started
            book.prepare()
        except BaseException as error:
            self.lock.release()
            if isinstance(error, ConfigError):  # the book's configuration: MkDocs says it as an error
                raise PluginError(str(error)) from None
            raise
        book.clock.add("load", opened)
        self._put_extension(config, off=False, chapters=chapters)
        if book.enabled:
            _add_assets(config, scripts=True)
        return config

    def _put_extension(self, config: MkDocsConfig, *, off: bool, chapters: str | None) -> None:
        """Put this build's extension instance in, where ``mkdocs.yml`` names it or last."""
        from primer.book.markdown import TraceExtension

        book = self.book
        options: dict[str, Any] = {
            "traces_off": off,
            "warn_missing": False,  # on_page_markdown warns, naming page and line
            **({"chapters": chapters} if chapters else {}),
        }
        if book is not None:
            options.update(source=book.prepared, cache=book.cache)
        if not off:  # a build with traces off shows no costs and reads no price table
            options["options"] = rendering = self._render_options(config)
            if book is not None:
                book.prices = rendering  # the prose check finds the costs the pages show
        self.extension = TraceExtension(**options)
        if EXTENSION in config.markdown_extensions:
            config.markdown_extensions.remove(EXTENSION)
        config.markdown_extensions.append(self.extension)  # type: ignore[arg-type]  # MkDocs takes instances

    def _render_options(self, config: MkDocsConfig) -> PriceTable:
        """The prices of ``mkdocs.yml``: the extension's ``prices``, then the plugin's over them."""
        from primer.book.markdown import render_options

        name = Path(config.config_file_path or "mkdocs.yml").name
        named = dict(config.mdx_configs.get(EXTENSION, {})).get("prices") or {}
        try:
            table = render_options(named, f"{EXTENSION} in {name}")
            return table.extended(self.config.prices, where=f"{name}, the trace-book plugin's prices")
        except ConfigError as error:
            raise PluginError(str(error)) from None

    def _leave(self, config: MkDocsConfig, *events: str) -> None:
        # Page events it has nothing to do in (traces off), out of this build's
        # list: MkDocs neither calls them nor, with --verbose, logs two lines a page.
        registered = getattr(getattr(config, "plugins", None), "events", {})
        for event in events:
            handlers = registered.get(event, [])
            if (mine := getattr(self, f"on_{event}")) in handlers:
                handlers.remove(mine)

    def on_files(self, files: Files, *, config: MkDocsConfig) -> Files:
        """Serve the assets from the package; under ``--dirty``, have pages whose traces changed rebuilt."""
        frozen = (Path(config.docs_dir) / self.config.traces_dir).resolve()
        for file in list(files):
            raw = file.src_uri.endswith(".live.json") and Path(file.abs_src_path or "").resolve().parent == frozen
            if raw and file.inclusion is not InclusionLevel.EXCLUDED:
                # Zensical runs no plugin and would publish it: the configuration must leave it out.
                folder = Path(file.src_uri).parent.as_posix()
                log.warning(
                    f"traces: {_name(config, file.src_uri)} would be published as it is: add "
                    f"`exclude_docs: {folder}/*.live.json` to {Path(config.config_file_path or 'mkdocs.yml').name}."
                )
                files.remove(file)
        # What the pages link: what on_config added, and what the configuration names itself (Zensical's too).
        from primer.book import _assets as assets

        named = {*config.extra_css, *(str(script) for script in config.extra_javascript)}
        for path, source in assets.SOURCES.items():
            if path in named:
                if (earlier := files.get_file_from_path(path)) is not None:  # a copy another front end wrote
                    files.remove(earlier)
                files.append(File.generated(config, path, abs_src_path=str(source)))
        if self.book is not None and self.dirty:  # date back the built pages that show traces changed
            for page in files.documentation_pages():
                if self.page_chapters.get(_name(config, page.src_uri), set()) & self.book.changed:
                    with contextlib.suppress(FileNotFoundError):  # not built yet: MkDocs builds it anyway
                        os.utime(page.abs_dest_path, ns=(0, 0))
        return files

    def on_page_markdown(self, markdown: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        """Check the page's markers, warning naming page and line (the extension renders them)."""
        name = _name(config, page.file.src_uri)
        if self.extension is not None:  # for the extension: the links it renders, and the markers only it finds
            self.extension.reading, self.extension.page_url = (name, markdown), page.url
        if self.book is None:  # traces off: the extension shows the placeholders
            for warning in check(name, markdown):
                log.warning(f"traces: {warning}")
            return markdown
        if self.dirty:  # the chapters its traces depend on: its markers' and its mode blocks'
            found = scan(markdown)
            self.page_chapters[name] = {m.chapter for m in found.markers} | {b.chapter for b in found.blocks}
        return self.book.page(name, markdown, url=page.url)

    # Last, so every other plugin's on_page_content sees the whole page.
    @event_priority(-100)
    def on_page_content(self, html: str, *, page: Page, config: MkDocsConfig, files: Files) -> str:
        """Last: set the trace blocks aside from the search plugin, each swapped for its search text."""
        if self.book is None or self.extension is None or not self.extension.blocks:
            return html
        stashed, taken = payloads.take(html, self.extension.blocks)
        self.taken[page.file.src_uri] = (html, taken)
        return stashed

    # After the search plugin's (priority 0) has indexed the page without them;
    # before the theme puts the page's content into its template.
    @event_priority(-100)
    def on_page_context(
        self, context: TemplateContext, *, page: Page, config: MkDocsConfig, nav: Navigation
    ) -> TemplateContext:
        """After the search plugin, before the theme: give the page its trace blocks back."""
        if (taken := self.taken.pop(page.file.src_uri, None)) is None:
            return context
        original, blocks = taken
        given = payloads.give_back(page.content or "", blocks)
        if given is None:
            log.warning(
                f"traces: {page.file.src_uri}: a plugin changed the page while its trace blocks were set aside "
                "for search; the page keeps its HTML from before."
            )
        page.content = original if given is None else given
        return context

    def on_post_build(self, *, config: MkDocsConfig) -> None:
        """Publish the trace JSON into the site, drop unused cached HTML, log the machinery's share."""
        book = self.book
        if book is None:
            return
        site = Path(config.site_dir)
        # Under --dirty the site is kept between rebuilds: what was published there stands
        # unless a chapter's traces changed (a prose save publishes nothing).
        if not (self.dirty and self._published == site and not book.changed):
            book.publish(site)
            self._published = site
        if not self.dirty:  # every page was read: the rules can be checked, and unused cached HTML is stale
            book.check_rules()
            book.prune()
        book.log_share()
        self._release()

    def on_build_error(self, *, error: Exception) -> None:
        """Give the cache to the next build."""
        self._release()

    def on_shutdown(self) -> None:
        """The process ends: the cache is the next build's."""
        self._release()

    def _release(self) -> None:
        if self.lock is not None:
            self.lock.release()

    def on_serve(self, server: LiveReloadServer, *, config: MkDocsConfig, builder: Any) -> LiveReloadServer:
        """Watch the library's and the chapters' folders, each on its own, and the machinery's templates and assets."""
        if self.book is None:
            return server
        # Each package folder on its own, not recursively (bytecode written to __pycache__
        # must not trigger a rebuild); a `watch:` entry covering them (Zensical's) is
        # dropped, since MkDocs would watch it recursively.
        folders = list(self.book.watched_dirs())
        config.watch[:] = [
            entry for entry in config.watch if not any(Path(entry).resolve() in (f, *f.parents) for f in folders)
        ]
        # The machinery's templates and assets too: an edit to them changes every page
        # (the cache key holds their bytes), so it must start a rebuild like a chapter's.
        from primer.book import _assets as assets

        for folder in (*folders, assets.FOLDER, assets.FOLDER.parent / "templates"):
            server.watch(str(folder), recursive=False)
        return server


def _name(config: MkDocsConfig, src_uri: str) -> str:
    # How warnings name a page: docs/ch05_loop_endings.md.
    return f"{os.path.basename(config.docs_dir)}/{src_uri}"


def _add_assets(config: MkDocsConfig, *, scripts: bool) -> None:
    """Link the package's stylesheet (and, with ``scripts``, its script) from every page."""
    from primer.book import _assets as assets

    for path in assets.STYLESHEETS:
        if path not in config.extra_css:
            config.extra_css.append(path)
    for path in assets.SCRIPTS if scripts else []:
        if path not in [str(script) for script in config.extra_javascript]:
            config.extra_javascript.append(ExtraScriptValue(path))
