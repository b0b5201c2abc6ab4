"""The Python-Markdown extension that puts traces into chapter pages.

A line ``::: trace CHAPTER [SCENARIO]`` becomes the chapter's (or one scenario's) traces, from
``source`` (a ``TraceSource`` or ``"module:name"``), else the book (the plugin's; under Zensical
the one ``primer.book._sources`` prepares once a build), else mock runs in this process::

    html = markdown.markdown("::: trace ch09_who_retries", extensions=["primer.book.markdown"])

A trace that cannot be loaded, or a near miss, shows an error block and is logged (``--strict``
fails); with traces off a marker is a note and nothing runs. Each marker's HTML is held as a
token and put back whole (``PutBack``): Python-Markdown never parses a trace block.
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as etree
from functools import cached_property
from typing import TYPE_CHECKING, Any

from markdown import Markdown
from markdown.blockparser import BlockParser
from markdown.blockprocessors import BlockProcessor
from markdown.extensions import Extension
from markdown.postprocessors import Postprocessor
from markdown.util import AtomicString

from primer.book._links import page_relative
from primer.book._logs import book_logger
from primer.book._markers import OFF_CLASS, Marker, ModeBlock, NearMiss, off_note, parse_line
from primer.book._prose import LiveProse, opening_html, select
from primer.book._sources import (
    NO_KEY,
    MockRunSource,
    assets_for_page,
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

    from primer.book._cache import TraceCache
    from primer.book._prices import PriceTable
    from primer.book._render import Anchors
    from primer.book._source import Shown, TraceSource

__all__ = ["NO_KEY", "MockRunSource", "PutBack", "TraceExtension", "TraceProcessor", "collect", "makeExtension"]

# Under ``mkdocs.`` so MkDocs counts the warnings (``--strict``).
log = book_logger("mkdocs.plugins.primer.book")


class PageIds:
    """The ids a page uses so far, while its traces all come from the cache (the renderer not loaded)."""

    def __init__(self, used: set[str]) -> None:
        self.used = used


def _names(line: str) -> tuple[str, str | None] | None:
    parsed = parse_line(line)
    return (parsed.chapter, parsed.scenario) if isinstance(parsed, Marker) else None


class TraceExtension(Extension):
    """``::: trace CHAPTER [SCENARIO]`` → the rendered traces (``source``, ``cache``, ``options``: see the module)."""

    def __init__(
        self,
        *,
        source: TraceSource | str | None = None,
        cache: TraceCache | None = None,
        options: PriceTable | None = None,
        **kwargs: Any,
    ) -> None:
        self.config = {
            # No default for a book (primer.variables.book_chapters); a plain Markdown instance runs primer.chapters.
            "chapters": ["", "The chapters' package (PRIMER_CHAPTERS wins over it)."],
            "warn_missing": [True, "Log markers naming what does not exist, and malformed ones (the plugin does)."],
            "traces_off": [False, "Show a placeholder for each marker, load and run nothing (PRIMER_TRACES=off)."],
            "rules": [True, "Have the book's build check its rules (primer.book._rules); the plugin reads it."],
            "prices": [{}, "Prices per model over the package's own (primer.book._prices): costs of live runs."],
        }
        super().__init__(**kwargs)
        #: Whether traces are off: the option, or ``PRIMER_TRACES=off`` where no plugin sets it (Zensical).
        self.off = bool(self.getConfig("traces_off")) or traces_off()
        if cache is not None:
            from primer.book._cache import TraceCache

            if not isinstance(cache, TraceCache):
                raise ConfigError(f"The trace extension's cache must be a TraceCache, not {type(cache).__name__}.")
        self._options = options
        self._given = source
        self._source: TraceSource | None = None
        self._cache = cache
        self.md: Markdown | None = None
        self._anchors: Anchors | None = None
        # The ids used on the page so far: the renderer's Anchors hold this set.
        self._ids = PageIds(set())
        self._headed: set[str] = set()
        #: The HTML of the page's markers so far, by token (``hold``).
        self.held: list[str] = []
        #: The page being rendered, its name and Markdown, as the plugin read it (``_unseen``).
        self.reading: tuple[str, str] | None = None

    @cached_property
    def options(self) -> PriceTable:
        """The prices the pages show costs by: made on first use, so a build with traces off reads none."""
        return self._options if self._options is not None else render_options(self.getConfig("prices"), "the extension")

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
                return self._source
            book = book_for_page(self.md, self.getConfig("chapters"), lambda: self.options)
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
                self._source = book
                self._cache = self._cache or book.cache
        return self._source

    @property
    def cache(self) -> TraceCache | None:
        """The cache of rendered HTML: the one given, or the book's."""
        _ = self.source  # the book's, once it is known
        return self._cache

    def extendMarkdown(self, md: Markdown) -> None:
        """Register the block processor, the live prose's preprocessor and the postprocessor."""
        self.md = md
        md.registerExtension(self)
        # 77: below indented code (80), so a quoted marker stays code; above mkdocstrings'
        # `::: identifier` (75), which would read `trace CHAPTER` as one; far above paragraphs.
        md.parser.blockprocessors.register(TraceProcessor(md.parser, self), "primer_trace", 77)
        # 24: just after fenced code is stashed (25), so a mode block quoted in a code sample stays one.
        prose = LiveProse(md, lambda text: select(text, self.has_live, mock=not self.off, wrap=self._wrap))
        md.preprocessors.register(prose, "primer_live_prose", 24)
        # 29: just after raw HTML is put back (30), before any other extension's postprocessor.
        md.postprocessors.register(PutBack(md, self), "primer_put_back", 29)

    def reset(self) -> None:
        """A new document: ids need only be unique within one page."""
        self._anchors = None
        self._ids = PageIds(set())
        self._headed = set()
        self.held = []

    def html_for_near_miss(self, near: NearMiss) -> str:
        """The error block for a line meant as a marker that is not a valid one (logged unless the plugin does)."""
        from primer.book._render import render_error

        if self.getConfig("warn_missing"):
            log.warning("%s", near.message)
        elif (where := self._unseen(lambda line: line.rstrip() == near.text.strip())) is not None:
            log.warning("traces: %s: %s", where, near.message)
        return render_error(near.message, marker=near.text)

    def _unseen(self, meant: Callable[[str], bool]) -> str | None:
        """``page line N`` of a marker indented more than the plugin reads (an admonition's, a list's); else None."""
        if self.reading is None:
            return None
        page, markdown = self.reading
        for number, line in enumerate(markdown.split("\n"), 1):
            if ":::" in line and meant(text := line.lstrip(" \t")):
                indent = len(line.expandtabs(4)) - len(text.expandtabs(4))
                return f"{page} line {number}" if indent > 3 else None
        return None

    def _wrap(self, block: ModeBlock) -> tuple[str, str]:
        """What a shown mode block's two lines become: tokens for its labelled element, opened and closed."""
        return self.hold(opening_html(block)), self.hold("</div>")

    def _summary(self, chapter: str) -> Shown | None:
        # A book's store shows every chapter by its ``Shown``: its runs are read only on a miss.
        summary = getattr(self.source, "summary", None)
        return summary(chapter) if summary is not None else None

    def has_live(self, chapter: str, scenario: str | None) -> bool:
        """Whether a live block's prose shows: the chapter (or the scenario) has a live run."""
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
            source = page_source(self.md)  # Zensical: relative to the page's Markdown file
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
        # A chapter's switch, totals and live status head its first trace on the page only.
        head = chapter not in self._headed
        anchors = self.anchors

        def render() -> str:
            return render_traces(traces, scenario, anchors=anchors, head=head, prices=self.options)

        cache = self.cache
        if cache is None:
            return render()
        cache.seconds += time.perf_counter() - started  # loading the renderer and the traces count here
        return cache.html(traces, scenario, anchors=anchors, head=head, render=render, variant=self.options.key)


class TraceProcessor(BlockProcessor):
    """Replaces each marker line with its rendered traces (held as a token, put back whole: never re-parsed)."""

    def __init__(self, parser: BlockParser, extension: TraceExtension) -> None:
        super().__init__(parser)
        self.extension = extension
        # What test() found in the block, for run(), which Python-Markdown calls next with it.
        self._tested: tuple[str, tuple[int, Marker | NearMiss] | None] = ("", None)

    @staticmethod
    def _first(block: str) -> tuple[int, Marker | NearMiss] | None:
        for index, line in enumerate(block.split("\n")):
            parsed = parse_line(line) if ":::" in line else None
            if parsed is not None:
                return index, parsed
        return None

    def test(self, parent: etree.Element, block: str) -> bool:
        """Whether the block holds a line meant as a marker (a near miss is shown as an error)."""
        if ":::" not in block:  # asked of nearly every block of every page
            return False
        self._tested = (block, self._first(block))
        return self._tested[1] is not None

    def run(self, parent: etree.Element, blocks: list[str]) -> None:
        """Render the first marker of the block; the text around it is parsed as usual."""
        block = blocks.pop(0)
        tested, found = self._tested
        if tested is not block:
            found = self._first(block)
        if found is None:  # another processor changed the block since test()
            blocks.insert(0, block)
            return
        index, marker = found
        lines = block.split("\n")
        before, after = "\n".join(lines[:index]).rstrip("\n"), "\n".join(lines[index + 1 :]).lstrip("\n")
        if before:
            self.parser.parseBlocks(parent, [before])
        if isinstance(marker, Marker) and self.extension.off:
            assets_for_page(self.parser.md)
            # An element of atomic text: no inline pattern reads it, and no stashed HTML to put back.
            note = etree.SubElement(parent, "p", {"class": OFF_CLASS})
            note.text = AtomicString(off_note(marker))
        else:
            if isinstance(marker, NearMiss):
                html = self.extension.html_for_near_miss(marker)
            else:
                html = self.extension.html_for(marker.chapter, marker.scenario)
            held = etree.SubElement(parent, "p")
            held.text = self.extension.hold(html)
        if after:
            blocks.insert(0, after)


class PutBack(Postprocessor):
    """Puts each marker's HTML where the paragraph holding its token is (``TraceExtension.hold``).

    Not Python-Markdown's HTML stash, whose postprocessor searches every stashed block (a trace
    block is tens of kilobytes) for placeholders nested in it: a token is looked for once.
    """

    def __init__(self, md: Markdown, extension: TraceExtension) -> None:
        super().__init__(md)
        self.extension = extension

    def run(self, text: str) -> str:
        """The document with each token, and the paragraph around it, replaced by its HTML."""
        held = self.extension.held
        if not held:
            return text

        def back(match: re.Match[str]) -> str:
            index = int(match[1] or match[2])
            return held[index] if index < len(held) else match[0]

        return _TOKEN.sub(back, text)


# STX and ETX, which the renderer never lets through from a model, a tool or a service
# (``render._clean``): no trace can forge a token.
def token(index: str) -> str:
    """The token that stands for the held HTML number ``index`` until ``PutBack`` puts it back."""
    return f"\x02trace-book:{index}\x03"


_TOKEN = re.compile(f"<p>{token('([0-9]+)')}</p>|{token('([0-9]+)')}")


def _error(message: str, marker: str) -> str:
    from primer.book._render import render_error

    return render_error(message, marker=marker)


def render_options(prices: Any, where: str) -> PriceTable:
    """The price table of a ``prices`` option (model → price, over the package's table); ``where`` names it."""
    from primer.book._prices import default_prices

    return default_prices().extended(prices, where=f"the `prices` option of {where}")


def makeExtension(**kwargs: Any) -> TraceExtension:
    """The extension, as Python-Markdown loads it by module name."""
    return TraceExtension(**kwargs)
