"""The Python-Markdown extension that puts traces into chapter pages: ``::: trace CHAPTER [SCENARIO]``.

Traces come from ``source`` (a ``TraceSource`` or ``"module:name"``; the plugin's ``Prepared`` gives its cache
and prices too), else the book Zensical names, else mock runs in this process: ``markdown.markdown(text,
extensions=["primer.book.markdown"])``. A marker that cannot be shown is an error block, and logged; with traces
off it is a note. Each marker's HTML is held as a token and put back whole: never parsed again.
"""

from __future__ import annotations

import html as htmllib
import posixpath
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

from primer.book import _sources as sources
from primer.book._links import page_relative
from primer.book._logs import book_logger
from primer.book._markers import OFF_CLASS, Marker, ModeBlock, NearMiss, off_note, parse_line
from primer.book._prose import LiveProse, opening_html, select
from primer.book._sources import NO_KEY, MockRunSource, collect
from primer.errors import ConfigError, NotFound, PrimerError
from primer.locator import ChapterLocator
from primer.variables import chapters_package, enable_with, traces_off

if TYPE_CHECKING:  # loaded on first use: MkDocs loads the extension with traces off too
    from collections.abc import Callable

    from primer.book._cache import TraceCache
    from primer.book._source import TraceSource
    from primer.prices import PriceTable

__all__ = ["NO_KEY", "MockRunSource", "TraceExtension", "collect", "makeExtension"]

# Under ``mkdocs.`` so MkDocs counts the warnings (``--strict``).
log = book_logger("mkdocs.plugins.primer.book")
#: One payload block (it holds no ``div``, the templates promise it), or its link to the payload page (``a``):
#: opening tag, its name, content, closing tag.
PAYLOAD = re.compile(r'(<(div|a) class="tr-(?:body|timeline|load)[^"]*" data-search-exclude[^>]*>)(.*?)(</\2>)', re.S)
#: The renderer's one script (templates/later.html.j2): its source is no text to search.
_SCRIPT = re.compile(r"<script>.*?</script>", re.S)
_TAG = re.compile(r"<[^>]*>")
_SPACE = re.compile(r"\s+")


#: What else search leaves out, as the page marks it: the chapter's head (switch, totals, downloads), its live
#: status lines and a scenario's switch, controls and labels a search result would show as its text.
_UNSEARCHED = re.compile(r"<(div|p|span)\b[^>]* data-search-exclude[^>]*>.*?</\1>", re.S)


def search_text(block: str) -> str:
    """A trace block's text outside its payloads, escaped, on one line: what search indexes of it (the plugin's)."""
    text = _TAG.sub(" ", _SCRIPT.sub("", _UNSEARCHED.sub("", PAYLOAD.sub("", block))))
    # Unescaped and escaped again: what search reads is exactly the text a reader sees. A character beyond
    # Latin-1 (the story line's arrow) as a reference: one would make the whole page, as search and the theme
    # read it, and the cached HTML two bytes a character (6 M instructions of a warm build at 100 chapters).
    said = htmllib.escape(_SPACE.sub(" ", htmllib.unescape(text)).strip(), quote=False)
    return said.encode("latin-1", "xmlcharrefreplace").decode("latin-1")


class TraceExtension(Extension):
    """``::: trace CHAPTER [SCENARIO]`` → the rendered traces (``source``: see the module)."""

    def __init__(self, *, source: TraceSource | str | None = None, **kwargs: Any) -> None:
        self.config = {
            # No default for a book (primer.variables.book_chapters); a plain Markdown instance runs primer.chapters.
            "chapters": ["", "The chapters' package (PRIMER_CHAPTERS wins over it)."],
            "warn_missing": [True, "Log markers naming what does not exist, and malformed ones (the plugin does)."],
            "traces_off": [False, "Show a placeholder for each marker, load and run nothing (PRIMER_TRACES=off)."],
            "rules": [True, "Have the book's build check its rules (primer.book._markers); the plugin reads it."],
            "prices": [{}, "Prices per model over the package's own (primer.prices): costs of live runs."],
        }
        super().__init__(**kwargs)
        #: Whether traces are off: the option, or ``PRIMER_TRACES=off`` where no plugin sets it (Zensical).
        self.off = bool(self.getConfig("traces_off")) or traces_off()
        self._given = source
        self._source: TraceSource | None = None
        self.md: Markdown | None = None
        #: The page being rendered: its name and Markdown as the plugin read them (``_warn``), and its URL.
        self.reading: tuple[str, str] | None = None
        self.page_url: str | None = None
        self.reset()

    @cached_property
    def options(self) -> PriceTable:
        """The prices the pages show costs by: the book's, else the option's (made on first use: off reads none)."""
        prices = getattr(self._given, "prices", None)
        return prices if prices is not None else render_options(self.getConfig("prices"), "the extension")

    def setConfig(self, key: str, value: Any) -> None:
        """Set an option; a name the extension has no option for is an error naming it (not a bare KeyError)."""
        if key not in self.config:
            raise ConfigError(
                f"The trace extension (primer.book.markdown) has no option {key!r}. "
                f"Its options are: {', '.join(self.config)}."
            )
        super().setConfig(key, value)

    def hold(self, html: str) -> AtomicString:
        """A token for ``html``, to stand as a paragraph's text until ``_PutBack`` puts ``html`` there."""
        self.held.append(html)
        return AtomicString(f"\x02trace-book:{len(self.held) - 1}\x03")

    @property
    def source(self) -> TraceSource:
        """The given source, the book Zensical names, or the in-process mock runner."""
        if self._source is None and self._given is not None:
            self._source = sources.resolve_source(self._given)
        elif self._source is None:
            book: TraceSource | None = sources.book_for_page(self.md, self.getConfig("chapters"), lambda: self.options)
            if book is None and self.md is not None and "relpath" in self.md.treeprocessors:
                # MkDocs' own treeprocessor: a MkDocs page, and no plugin (or hook) prepared its book.
                raise ConfigError(
                    "The trace machinery is not enabled for this book: mkdocs.yml names the trace extension "
                    f"but not the plugin that runs the scenarios and keeps their traces: "
                    f"{enable_with(self.getConfig('chapters') or None)}."
                )
            self._source = book or MockRunSource(ChapterLocator(chapters_package(self.getConfig("chapters") or None)))
        return self._source

    def extendMarkdown(self, md: Markdown) -> None:
        """Register the block processor, the live prose's preprocessor and the postprocessor."""
        self.md = md
        md.registerExtension(self)
        # 77: below indented code (80), so a quoted marker stays code; above mkdocstrings' `::: identifier` (75).
        md.parser.blockprocessors.register(_TraceProcessor(md.parser, self), "primer_trace", 77)
        # 24: just after fenced code is stashed (25), so a mode block quoted in a code sample stays one.
        prose = LiveProse(md, lambda text: select(text, self.has_live, mock=not self.off, wrap=self._wrap))
        md.preprocessors.register(prose, "primer_live_prose", 24)
        # 29: just after raw HTML is put back (30), before any other extension's postprocessor.
        md.postprocessors.register(_PutBack(md, self), "primer_put_back", 29)

    def reset(self) -> None:
        """A new document: ids need only be unique within one page."""
        self._ids: set[str] = set()
        self._headed: set[str] = set()
        #: The HTML of the page's markers and mode blocks so far, by token (``hold``).
        self.held: list[str] = []
        #: The page's trace blocks so far: (what search indexes of one, its HTML), for the plugin.
        self.blocks: list[tuple[str, str]] = []

    def _warn(self, said: str, meant: Callable[[str], bool]) -> None:
        # Standalone, every problem; under the plugin (which names page and line), a marker indented too far.
        if self.getConfig("warn_missing"):
            log.warning("%s", said)
            return
        page, markdown = self.reading or ("", "")
        for number, line in enumerate(markdown.split("\n"), 1):
            if ":::" in line and meant(text := line.lstrip(" \t")):
                if len(line.expandtabs(4)) - len(text.expandtabs(4)) > 3:
                    log.warning("traces: %s line %s: %s", page, number, said)
                return

    def _wrap(self, block: ModeBlock) -> tuple[str, str]:
        # What a shown mode block's two lines become: tokens for its labelled element, opened and closed.
        return self.hold(opening_html(block)), self.hold("</div>")

    def has_live(self, chapter: str, scenario: str | None) -> bool:
        """Whether a live block's prose shows: the chapter (or the scenario) has a live run."""
        if self.off:
            return False
        summary = getattr(self.source, "summary", lambda _: None)(chapter)
        if summary is not None:
            return summary.live is not None and (scenario is None or scenario in summary.live)
        try:
            live = self.source.traces(chapter).live
        except PrimerError as error:
            if self.getConfig("warn_missing") or not isinstance(error, NotFound):
                log.warning("::: live %s: %s", chapter, error)
            return False
        return live is not None and (scenario is None or any(s.name == scenario for s in live.scenarios))

    def html_for(self, marker: Marker | NearMiss) -> str:
        """The HTML for one marker: the traces, or a visible error block (a near miss is one)."""
        if isinstance(marker, NearMiss):
            self._warn(marker.message, lambda line: line.rstrip() == marker.text.strip())
            return _error(marker.message, marker.text)
        if self.off:  # a note, held as the traces are (never parsed again, nothing in Python-Markdown's stash)
            sources.assets_for_page(self.md)
            return f'<p class="{OFF_CLASS}">{htmllib.escape(off_note(marker))}</p>'
        said = f"::: trace {marker.chapter}{f' {marker.scenario}' if marker.scenario else ''}"
        try:
            search, _, html = self._stored(marker.chapter, marker.scenario).partition("\n")
        except NotFound as error:
            self._warn(f"the marker `{said}`: {error}", lambda line: parse_line(line) == marker)  # both on line 1
            return _error(str(error), said)
        except PrimerError as error:
            log.warning("%s: %s", said, error)
            return _error(str(error), said)
        except Exception as error:
            log.warning("%s could not be rendered: %s: %s", said, type(error).__name__, error, exc_info=True)
            return _error(
                f"The traces could not be rendered ({type(error).__name__}: {error}). "
                "This is a bug in the book machinery: the build log has the traceback.",
                said,
            )
        self._headed.add(marker.chapter)
        self.blocks.append((search, html))
        return html

    def _stored(self, chapter: str, scenario: str | None) -> str:
        """The marker's search text, a line, then its HTML: from the chapter's entry in the cache, else rendered."""
        source = self.source
        # A book's ``Prepared`` shows a chapter by its ``Shown`` from its cache: the runs are read on a miss only.
        summary = getattr(source, "summary", lambda _: None)(chapter)
        cache: TraceCache | None = getattr(source, "cache", None)
        # A chapter's switch, totals and live status head its first trace on the page only.
        head = chapter not in self._headed
        # Links are made relative to the page (MkDocs' URL, or the file Zensical renders): its folder is in the slot.
        page = self.page_url or sources.page_source(self.md) or ""
        variant = posixpath.dirname(page)
        checked = scenario if summary is None or summary.importable else None  # else its import error, at each marker
        if summary is not None and cache is not None:
            sources.require_scenario(chapter, checked, summary.names)
            kept = cache.cached(chapter, scenario, summary.key, used=self._ids, head=head, variant=variant)
            if kept is not None:
                return kept
        started = time.perf_counter()
        from primer.book._render import Anchors, render_traces  # the first marker's: its share too

        traces = collect(source, chapter, checked)

        def render() -> str:
            html = render_traces(traces, scenario, anchors=Anchors(used=self._ids), head=head, prices=self.options)
            html = page_relative(html, page)
            # Beyond ASCII as references: one `→` makes every later pass over the page read it character by character.
            return f"{search_text(html)}\n{html.encode('ascii', 'xmlcharrefreplace').decode('ascii')}"

        if cache is None:
            return render()
        cache.seconds += time.perf_counter() - started  # loading the renderer and the traces count here
        return cache.html(traces, scenario, used=self._ids, head=head, render=render, variant=variant)


class _TraceProcessor(BlockProcessor):
    """Replaces each marker line with its rendered traces (held as a token, put back whole: never re-parsed)."""

    def __init__(self, parser: BlockParser, extension: TraceExtension) -> None:
        super().__init__(parser)
        self.extension = extension
        # The line test() found a marker on, and the marker, for run(), which Python-Markdown calls next.
        self._found: tuple[int, Marker | NearMiss] = (0, NearMiss("", "", 0))

    def test(self, parent: etree.Element, block: str) -> bool:
        # Whether the block holds a line meant as a marker (a near miss is shown as an error).
        if ":::" not in block:  # asked of nearly every block of every page
            return False
        for index, line in enumerate(block.split("\n")):
            if ":::" in line and (parsed := parse_line(line)) is not None:
                self._found = (index, parsed)
                return True
        return False

    def run(self, parent: etree.Element, blocks: list[str]) -> None:
        # The block's first marker rendered; the text around it is parsed as usual.
        index, marker = self._found
        lines = blocks.pop(0).split("\n")
        if before := "\n".join(lines[:index]).rstrip("\n"):
            self.parser.parseBlocks(parent, [before])
        etree.SubElement(parent, "p").text = self.extension.hold(self.extension.html_for(marker))
        if after := "\n".join(lines[index + 1 :]).lstrip("\n"):
            blocks.insert(0, after)


class _PutBack(Postprocessor):
    """Puts each held HTML where its token is (``TraceExtension.hold``), replacing the paragraph around it.

    Not Python-Markdown's HTML stash, whose postprocessor searches every stashed block (a trace
    block is tens of kilobytes) for placeholders nested in it: a token is looked for once.
    """

    def __init__(self, md: Markdown, extension: TraceExtension) -> None:
        super().__init__(md)
        self.extension = extension

    def run(self, text: str) -> str:
        # Each token looked for as a string: a pattern of the two forms reads every character (14 ms a build).
        # STX and ETX: Python-Markdown removes them from a page's text, and the renderer from what a model, a
        # tool or a service says (``inert.clean``), so no page and no trace forges a token.
        for index, html in enumerate(self.extension.held):
            token = f"\x02trace-book:{index}\x03"
            text = text.replace(f"<p>{token}</p>", html).replace(token, html)
        return text


def _error(message: str, marker: str) -> str:
    from primer.book._render import render_error

    return render_error(message, marker=marker)


def render_options(prices: Any, where: str) -> PriceTable:
    """The price table of a ``prices`` option (model → price, over the package's table); ``where`` names it."""
    from primer.prices import default_prices

    return default_prices().extended(prices, where=f"the `prices` option of {where}")


def makeExtension(**kwargs: Any) -> TraceExtension:
    """The extension, as Python-Markdown loads it by module name."""
    return TraceExtension(**kwargs)
