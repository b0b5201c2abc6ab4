"""The Python-Markdown extension that puts traces into chapter pages.

A line ``::: trace CHAPTER [SCENARIO]`` becomes the chapter's (or one
scenario's) traces as collapsible HTML. It works wherever Python-Markdown
does, and finds its traces in the first of these that applies:

1. ``source``, a ``TraceSource`` given to the constructor (or as
   ``"module:name"``): a test's, or a program's own;
2. **the book** whose docs folder the site generator names: the MkDocs hook
   sets the ``docs_dir`` option to its own (and has prepared the book);
   Zensical, which runs no MkDocs hook, names it in the page's rendering
   context, and the extension then prepares the book itself, once per build
   (``primer.book._session``): frozen live traces from ``docs/traces``, cached
   mock traces, what is missing run, the trace JSON published into the docs;
3. otherwise the chapter's mock scenarios, run in-process; the live run is
   reported missing::

       import markdown
       html = markdown.markdown("::: trace ch09_who_retries", extensions=["primer.book.markdown"])

The chapters are those of the ``chapters`` option's package (``primer.chapters``
by default; ``PRIMER_CHAPTERS`` wins over it). Like mkdocstrings, it *loads*
(asks the source for the chapter's traces) and then *renders*
(``primer.book._render``); a trace that cannot be loaded is shown as an
error block naming what exists, and logged as a warning, so
``mkdocs build --strict`` fails but the rest of the page still renders.

A line meant as a marker that is not a valid one (``:::trace x``,
``::: traces x``, ``::: trace``: see ``primer.book._source``) is shown as an
error block with the valid form, and logged, rather than left as text.

Three more options serve the book's hook, which sets them: ``docs_dir``;
``warn_missing``: with False, a marker naming an unknown chapter or scenario,
or a malformed one, still shows its error block but is not logged here,
because the hook warns about it already, naming the page and line; and
``traces_off``: with True, each marker shows the short note
``primer.book._pages.placeholder`` writes, no live block's prose shows, and
nothing is loaded or run. ``PRIMER_TRACES=off`` does the same where no hook
sets the option (Zensical, a plain ``markdown.Markdown``). The note is built as elements, never parsed
(as raw HTML, or as Markdown): the build then costs what it costs without
the machinery (``benchmarks/scale.py``). A book's
rendered markers are kept in its ``Rendered`` (``primer.book._rendered``), in
each chapter's entry of the one cache; a ``cache`` may also be given to the constructor.

The trace JSON link a block carries is written relative to the site root.
The MkDocs hook makes it relative to the page (``primer.book._links``);
Zensical resolves the links of a page's HTML as links of its Markdown file,
so when it names the file being rendered the link is made relative to that
file here, and Zensical makes it relative to the page: the same link either
way, which works without JavaScript.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.util import AtomicString

from primer.book._links import page_relative
from primer.book._logs import book_logger
from primer.book._markers import Marker, NearMiss, parse_line
from primer.book._placement import PutBack, TraceProcessor, token
from primer.book._prices import RenderOptions
from primer.book._prose import LiveProse, ModeBlock, opening_html, select
from primer.book._sources import (
    NO_KEY,
    MockRunSource,
    book_for_page,
    collect,
    page_source,
    require_scenario,
    resolve_source,
)
from primer.errors import ConfigError, NotFound, PrimerError
from primer.locator import ChapterLocator
from primer.variables import enable_with, traces_off

if TYPE_CHECKING:  # loaded on first use: MkDocs loads the extension with traces off too
    from collections.abc import Callable

    from primer.book._render import Anchors
    from primer.book._rendered import Rendered
    from primer.book._source import Shown, TraceSource

__all__ = ["NO_KEY", "MockRunSource", "PutBack", "TraceExtension", "TraceProcessor", "collect", "makeExtension"]

# Under ``mkdocs.`` so MkDocs counts the warnings (``--strict``); elsewhere it
# is an ordinary logger.
log = book_logger("mkdocs.plugins.primer.book")


class PageIds:
    """The ids a page uses so far, while its traces all come from the cache (the renderer not loaded)."""

    # A plain class: this module is loaded by every build, traces off too.
    def __init__(self, used: set[str]) -> None:
        self.used = used


def _names(line: str) -> tuple[str, str | None] | None:
    # The chapter and scenario a line names, if it is a valid marker.
    parsed = parse_line(line)
    return (parsed.chapter, parsed.scenario) if isinstance(parsed, Marker) else None


class TraceExtension(Extension):
    """``::: trace CHAPTER [SCENARIO]`` → the rendered traces.

    Constructor only: ``source``, a ``TraceSource`` (or ``"module:name"``);
    ``cache``, a ``Rendered`` asked before rendering. Options (from
    ``mkdocs.yml``): ``chapters``, the chapters' package; ``docs_dir``, the
    book's docs folder (set by the MkDocs hook; Zensical gives it in the
    page's rendering context); ``warn_missing`` (default True): log markers
    naming an unknown chapter or scenario, and lines meant as markers that
    are not valid ones (the book's hook warns about those itself, naming
    page and line); ``traces_off`` (default False): show a placeholder for
    each marker, load and run nothing (the book's hook sets it when
    ``PRIMER_TRACES=off``, which the extension also reads itself).
    """

    def __init__(
        self,
        *,
        source: TraceSource | str | None = None,
        cache: Rendered | None = None,
        options: RenderOptions | None = None,
        **kwargs: Any,
    ) -> None:
        self.config = {
            # No default for a book (primer.variables.book_chapters); a plain Markdown instance runs primer.chapters.
            "chapters": ["", "The chapters' package (PRIMER_CHAPTERS wins over it)."],
            "docs_dir": ["", "The book's docs folder; none: the one the site generator names, if it does."],
            "warn_missing": [
                True,
                "Log markers naming an unknown chapter or scenario, and malformed markers (the book's hook does).",
            ],
            "traces_off": [False, "Show a placeholder for each marker, load and run nothing (PRIMER_TRACES=off)."],
            "rules": [True, "Have the book's build check its rules (primer.book._rules); the hook reads it."],
            "prices": [{}, "Prices per model over the package's own (primer.book._prices): costs of live runs."],
        }
        super().__init__(**kwargs)
        #: Whether traces are off: the option, or ``PRIMER_TRACES=off`` where no hook sets it (Zensical).
        self.off = bool(self.getConfig("traces_off")) or traces_off()
        if cache is not None:
            from primer.book._rendered import Rendered

            if not isinstance(cache, Rendered):
                raise ConfigError(f"The trace extension's cache must be a Rendered, not {type(cache).__name__}.")
        #: What the book's configuration changes in the HTML (the plugin's, or from the ``prices`` option).
        self.options = options if options is not None else render_options(self.getConfig("prices"), "the extension")
        self._given = source
        self._source: TraceSource | None = None
        self._cache = cache
        self.md: Markdown | None = None
        self._anchors: Anchors | None = None
        # The ids used on the page so far: the renderer's Anchors hold this
        # set, and a page whose every trace comes from the cache needs no more.
        self._ids = PageIds(set())
        self._headed: set[str] = set()
        #: The HTML of the page's markers so far, by token (``hold``).
        self.held: list[str] = []
        #: The page being rendered, its name and Markdown, as the plugin read it (``_unseen``).
        self.reading: tuple[str, str] | None = None

    def setConfig(self, key: str, value: Any) -> None:
        """Set an option; a name the extension has no option for is an error naming it (not a bare KeyError)."""
        if key not in self.config:
            raise ConfigError(
                f"The trace extension (primer.book.markdown) has no option {key!r}. "
                f"Its options are: {', '.join(self.config)}."
            )
        super().setConfig(key, value)

    def hold(self, html: str) -> AtomicString:
        """A token for ``html``, to stand as a paragraph's text until ``PutBack`` puts ``html`` there."""
        self.held.append(html)
        return AtomicString(token(str(len(self.held) - 1)))

    @property
    def anchors(self) -> Anchors:
        """The ids used on the page so far (a new page, new anchors: ``reset``)."""
        if self._anchors is None:
            from primer.book._render import Anchors

            self._anchors = Anchors(used=self._ids.used)
        return self._anchors

    @property
    def source(self) -> TraceSource:
        """The given source, the book's trace store, or the in-process mock runner."""
        if self._source is None:
            if self._given is not None:
                self._source = resolve_source(self._given)
            else:
                book = book_for_page(self.md, self.getConfig("chapters"), self.getConfig("docs_dir"))
                if book is None and self.md is not None and "relpath" in self.md.treeprocessors:
                    # MkDocs' own treeprocessor: a MkDocs page, and no plugin (or hook) prepared its book.
                    raise ConfigError(
                        "The trace machinery is not enabled for this book: mkdocs.yml names the trace extension "
                        f"but not the plugin that runs the scenarios and keeps their traces: "
                        f"{enable_with(self.getConfig('chapters') or None)}."
                    )
                if book is None:
                    from primer.settings import Settings

                    package = Settings.without_live().chapters_package(self.getConfig("chapters") or None)
                    self._source = MockRunSource(ChapterLocator(package))
                else:
                    self._source = book.store
                    self._cache = self._cache or book.rendered
                    book.prices = self.options.prices  # Zensical: the extension's prices are the book's
        return self._source

    @property
    def cache(self) -> Rendered | None:
        """The cache of rendered HTML: the one given, or the book's."""
        _ = self.source  # the book's, once it is known
        return self._cache

    def extendMarkdown(self, md: Markdown) -> None:
        """Register the one block processor, and reset anchors per document."""
        self.md = md
        md.registerExtension(self)
        # Priority 77: below the indented-code processor (80), so a marker
        # quoted in an indented code sample stays code; above mkdocstrings'
        # `::: identifier` processor (75), which would read `trace CHAPTER` as
        # an identifier; far above paragraphs (10), which would swallow it.
        # Fenced code is stashed by preprocessors before any block runs.
        md.parser.blockprocessors.register(TraceProcessor(md.parser, self), "primer_trace", 77)
        # Priority 24: just after fenced code is stashed (25), so a live block
        # quoted in a code sample stays an example.
        # A kept block's two lines become tokens PutBack swaps for its labelled element.
        prose = LiveProse(md, lambda text: select(text, self.has_live, mock=not self.off, wrap=self._wrap))
        md.preprocessors.register(prose, "primer_live_prose", 24)
        # Priority 29: just after raw HTML is put back (30), before any
        # postprocessor of another extension, which sees the page whole.
        md.postprocessors.register(PutBack(md, self), "primer_put_back", 29)

    def reset(self) -> None:
        """A new document: ids need only be unique within one page."""
        self._anchors = None
        self._ids = PageIds(set())
        self._headed = set()
        self.held = []

    def html_for_near_miss(self, near: NearMiss) -> str:
        """The error block for a line meant as a marker that is not a valid one (logged unless the hook does)."""
        from primer.book._render import render_error

        if self.getConfig("warn_missing"):
            log.warning("%s", near.message)
        elif (where := self._unseen(lambda line: line.rstrip() == near.text.strip())) is not None:
            log.warning("traces: %s: %s", where, near.message)
        return render_error(near.message, marker=near.text)

    def _unseen(self, meant: Callable[[str], bool]) -> str | None:
        """``page line N`` of a marker the hook did not see, as it warns; None if it did, or there is no hook.

        The hook warns about markers, naming page and line, from the lines it
        reads as the page's own (``markers.scan``: indented at most three
        spaces). One inside an admonition, a content tab or a list item is
        indented more, and only this extension, parsing the page as Markdown
        does, finds it; so it warns itself, or ``--strict`` would pass a
        marker that shows an error block. ``meant`` says whether a line,
        unindented, is the one found.
        """
        reading = self.reading
        if reading is None:
            return None
        page, markdown = reading
        for number, line in enumerate(markdown.split("\n"), 1):
            if ":::" in line and meant(text := line.lstrip(" \t")):
                indent = len(line.expandtabs(4)) - len(text.expandtabs(4))
                return f"{page} line {number}" if indent > 3 else None
        return None

    def _wrap(self, block: ModeBlock) -> tuple[str, str]:
        """What a shown mode block's two lines become: tokens for its labelled element, opened and closed."""
        return self.hold(opening_html(block)), self.hold("</div>")

    def _summary(self, chapter: str) -> Shown | None:
        # A book's store shows every chapter by its ``Shown`` (names, status,
        # its key in the cache): its runs are read only on a miss.
        summary = getattr(self.source, "summary", None)
        return summary(chapter) if summary is not None else None

    def has_live(self, chapter: str, scenario: str | None) -> bool:
        """Whether a live block's prose shows: the chapter (or the scenario) has a live run (``primer.book._prose``)."""
        if self.off:
            return False
        summary = self._summary(chapter)
        if summary is not None:
            return summary.live is not None and (scenario is None or scenario in summary.live)
        try:
            live = self.source.traces(chapter).live
        except PrimerError as error:
            if self.getConfig("warn_missing") or not isinstance(error, NotFound):
                log.warning("::: live %s: %s", chapter, error)
            return False
        return live is not None and (scenario is None or any(s.name == scenario for s in live.scenarios))

    def _kept(self, chapter: str, scenario: str | None, started: float) -> str | None:
        """The marker's HTML from the chapter's entry in the cache, its runs unread; None: render it."""
        summary = self._summary(chapter)
        cache = self.cache
        if summary is None or cache is None:
            return None
        require_scenario(chapter, scenario, summary.names)
        cache.seconds += time.perf_counter() - started
        head = chapter not in self._headed
        return cache.cached(chapter, scenario, summary.key, anchors=self._ids, head=head, variant=self.options.key)

    def html_for(self, chapter: str, scenario: str | None) -> str:
        """The HTML for one marker: the traces, or a visible error block."""
        started = time.perf_counter()
        marker = f"::: trace {chapter}{f' {scenario}' if scenario else ''}"
        try:
            html = self._kept(chapter, scenario, started)
            if html is None:
                html = self._rendered(chapter, scenario, started)
            self._headed.add(chapter)
            # Zensical resolves links as written in the page's Markdown file, as for its
            # own links: relative to that file, which it then makes relative to the page.
            source = page_source(self.md)
            return html if source is None else page_relative(html, source)
        except NotFound as error:
            if self.getConfig("warn_missing"):
                log.warning("%s: %s", marker, error)
            elif (where := self._unseen(lambda line: _names(line) == (chapter, scenario))) is not None:
                log.warning("traces: %s: the marker `%s`: %s", where, marker, error)
            return _error(str(error), marker)
        except PrimerError as error:
            log.warning("%s: %s", marker, error)
            return _error(str(error), marker)
        except Exception as error:
            log.warning("%s could not be rendered: %s: %s", marker, type(error).__name__, error, exc_info=True)
            return _error(
                f"The traces could not be rendered ({type(error).__name__}: {error}). "
                "This is a bug in the book machinery: the build log has the traceback.",
                marker,
            )

    def _rendered(self, chapter: str, scenario: str | None, started: float) -> str:
        """The marker's HTML rendered from its traces (and kept in the chapter's entry)."""
        from primer.book._render import render_traces  # the first marker's: its share too

        traces = collect(self.source, chapter, scenario)
        # A chapter's switch, totals and live status head its first trace
        # on the page only: chapters mostly place one marker per scenario.
        head = chapter not in self._headed
        anchors = self.anchors

        def render() -> str:
            return render_traces(traces, scenario, anchors=anchors, head=head, options=self.options)

        cache = self.cache
        if cache is None:
            return render()
        # Loading the renderer and the traces count with the cache's own time.
        cache.seconds += time.perf_counter() - started
        return cache.html(traces, scenario, anchors=anchors, head=head, render=render, variant=self.options.key)


def _error(message: str, marker: str) -> str:
    from primer.book._render import render_error

    return render_error(message, marker=marker)


def render_options(prices: Any, where: str) -> RenderOptions:
    """The render options of a ``prices`` option (model → price, over the package's table); ``where`` names it."""
    from primer.book._prices import default_prices

    return RenderOptions(default_prices().extended(prices, where=f"the `prices` option of {where}"))


def makeExtension(**kwargs: Any) -> TraceExtension:
    """The extension, as Python-Markdown loads it by module name."""
    return TraceExtension(**kwargs)
