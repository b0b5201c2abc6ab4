"""The Python-Markdown extension that puts traces into chapter pages.

A line ``::: trace CHAPTER [SCENARIO]`` becomes the chapter's (or one
scenario's) traces as collapsible HTML. It works wherever Python-Markdown
does: in ``mkdocs.yml``'s ``markdown_extensions`` (the book's hook passes its
trace store as ``source``) or on its own::

    import markdown
    html = markdown.markdown("::: trace ch09_who_retries", extensions=["primer.book.markdown"])

Without a ``source`` the chapter's mock scenarios are run in-process, and the
live run is reported missing. Like mkdocstrings, it *loads* (asks the source
for the chapter's traces) and then *renders* (``primer.book.render``); a
trace that cannot be loaded is shown as an error block naming what exists,
and logged as a warning, so ``mkdocs build --strict`` fails but the rest of
the page still renders.

A line meant as a marker that is not a valid one (``:::trace x``,
``::: traces x``, ``::: trace``: see ``primer.book.source``) is shown as an
error block with the valid form, and logged, rather than left as text.

Two more options serve the book's hook, which sets them: ``cache``, an
``HtmlCache`` asked before rendering (``primer.book.html_cache``), and
``warn_missing``: with False, a marker naming an unknown chapter or scenario,
or a malformed one, still shows its error block but is not logged here,
because the hook warns about it already, naming the page and line.
"""

from __future__ import annotations

import importlib
import xml.etree.ElementTree as etree
from typing import Any

from markdown import Markdown
from markdown.blockparser import BlockParser
from markdown.blockprocessors import BlockProcessor
from markdown.extensions import Extension

from primer.book.html_cache import HtmlCache
from primer.book.live_prose import LiveProse
from primer.book.logs import book_logger
from primer.book.render import Anchors, render_error, render_traces
from primer.book.source import ChapterTraces, LiveStatus, Marker, NearMiss, TraceSource, parse_line
from primer.errors import ConfigError, NotFound, PrimerError
from primer.runner import run_chapter

__all__ = ["NO_KEY", "MockRunSource", "TraceExtension", "TraceProcessor", "collect", "makeExtension"]

# Under ``mkdocs.`` so MkDocs counts the warnings (``--strict``); elsewhere it
# is an ordinary logger.
log = book_logger("mkdocs.plugins.primer.book")

#: Why a standalone page has no live run.
NO_KEY = "no key yet: live runs are recorded by the book build when PRIMER_API_KEY is set"


class MockRunSource:
    """A ``TraceSource`` that runs a chapter's mock scenarios in-process.

    The fallback when no store is given: mock runs take milliseconds on the
    virtual clock, so a plain ``markdown.Markdown`` can show real traces.
    Each chapter is run once per source.
    """

    def __init__(self) -> None:
        self._runs: dict[str, ChapterTraces] = {}

    def traces(self, chapter: str) -> ChapterTraces:
        """The chapter's mock run (raises ``NotFound`` for an unknown chapter)."""
        if chapter not in self._runs:
            self._runs[chapter] = ChapterTraces(
                chapter=chapter,
                mock=run_chapter(chapter, "mock"),
                live=None,
                live_status=LiveStatus(state="missing", reason=NO_KEY),
            )
        return self._runs[chapter]


def collect(source: TraceSource, chapter: str, scenario: str | None = None) -> ChapterTraces:
    """Load a marker's traces: the chapter's, checked to hold the scenario asked for."""
    traces = source.traces(chapter)
    if scenario is not None:
        names = [s.name for run in (traces.mock, traces.live) if run for s in run.scenarios]
        if scenario not in names:
            raise NotFound(
                f"Chapter {chapter} has no scenario {scenario!r}. "
                f"Its scenarios are: {', '.join(dict.fromkeys(names)) or 'none'}."
            )
    return traces


def _resolve(source: Any) -> TraceSource:
    # ``source`` may come from YAML as "package.module:name": an object, or a
    # class or factory, called with no arguments.
    if isinstance(source, str):
        module, _, name = source.partition(":")
        try:
            source = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as error:
            raise ConfigError(
                f"The trace source {source!r} could not be imported ({error}). Give it as 'package.module:name'."
            ) from error
        if isinstance(source, type) or (callable(source) and not hasattr(source, "traces")):
            source = source()
    if not callable(getattr(source, "traces", None)):
        raise ConfigError(
            f"The trace extension's source must have a traces(chapter) method, not {type(source).__name__}."
        )
    return source  # type: ignore[no-any-return]


class TraceProcessor(BlockProcessor):
    """Replaces each marker line with its rendered traces (stashed, so never re-parsed)."""

    def __init__(self, parser: BlockParser, extension: TraceExtension) -> None:
        super().__init__(parser)
        self.extension = extension

    @staticmethod
    def _first(block: str) -> tuple[int, Marker | NearMiss] | None:
        # The first line of the block meant as a marker, valid or not.
        for index, line in enumerate(block.split("\n")):
            parsed = parse_line(line) if ":::" in line else None
            if parsed is not None:
                return index, parsed
        return None

    def test(self, parent: etree.Element, block: str) -> bool:
        """Whether the block holds a line meant as a marker (a near miss is shown as an error)."""
        return self._first(block) is not None

    def run(self, parent: etree.Element, blocks: list[str]) -> None:
        """Render the first marker of the block; the text around it is parsed as usual."""
        block = blocks.pop(0)
        found = self._first(block)
        if found is None:  # test() said yes; be safe if another processor changed it
            blocks.insert(0, block)
            return
        index, marker = found
        lines = block.split("\n")
        before, after = "\n".join(lines[:index]).rstrip("\n"), "\n".join(lines[index + 1 :]).lstrip("\n")
        if before:
            self.parser.parseBlocks(parent, [before])
        if isinstance(marker, Marker):
            html = self.extension.html_for(marker.chapter, marker.scenario)
        else:
            html = self.extension.html_for_near_miss(marker)
        placeholder = etree.SubElement(parent, "p")
        placeholder.text = self.parser.md.htmlStash.store(html)
        if after:
            blocks.insert(0, after)


class TraceExtension(Extension):
    """``::: trace CHAPTER [SCENARIO]`` → the rendered traces.

    Config: ``source``, a ``TraceSource`` (or ``"module:name"``); by default
    a ``MockRunSource``. ``cache``, an ``HtmlCache`` (by default none: every
    marker is rendered). ``warn_missing`` (default True): log markers naming
    an unknown chapter or scenario, and lines meant as markers that are not
    valid ones (the book's hook warns about those itself, naming page and line).
    """

    def __init__(self, **kwargs: Any) -> None:
        # The defaults are "" rather than None: Python-Markdown turns a value whose
        # default is None into a bool, and the object would be lost.
        self.config = {
            "source": ["", "A TraceSource giving each chapter's traces; default: run the mock scenarios."],
            "cache": ["", "An HtmlCache asked before rendering; default: none."],
            "warn_missing": [
                True,
                "Log markers naming an unknown chapter or scenario, and malformed markers (the book's hook does).",
            ],
        }
        super().__init__(**kwargs)
        self.anchors = Anchors()
        self._headed: set[str] = set()
        self._source: TraceSource | None = None

    @property
    def source(self) -> TraceSource:
        """The configured source, or the in-process mock runner."""
        if self._source is None:
            configured = self.getConfig("source")
            self._source = MockRunSource() if configured is None or configured == "" else _resolve(configured)
        return self._source

    @property
    def cache(self) -> HtmlCache | None:
        """The configured cache of rendered HTML, if any."""
        configured = self.getConfig("cache")
        if configured is None or configured == "":
            return None
        if not isinstance(configured, HtmlCache):
            raise ConfigError(f"The trace extension's cache must be an HtmlCache, not {type(configured).__name__}.")
        return configured

    def extendMarkdown(self, md: Markdown) -> None:
        """Register the one block processor, and reset anchors per document."""
        md.registerExtension(self)
        # Priority 77: below the indented-code processor (80), so a marker
        # quoted in an indented code sample stays code; above mkdocstrings'
        # `::: identifier` processor (75), which would read `trace CHAPTER` as
        # an identifier; far above paragraphs (10), which would swallow it.
        # Fenced code is stashed by preprocessors before any block runs.
        md.parser.blockprocessors.register(TraceProcessor(md.parser, self), "primer_trace", 77)
        # Priority 24: just after fenced code is stashed (25), so a live block
        # quoted in a code sample stays an example.
        md.preprocessors.register(LiveProse(md, self.has_live), "primer_live_prose", 24)

    def reset(self) -> None:
        """A new document: ids need only be unique within one page."""
        self.anchors = Anchors()
        self._headed = set()

    def html_for_near_miss(self, near: NearMiss) -> str:
        """The error block for a line meant as a marker that is not a valid one (logged unless the hook does)."""
        if self.getConfig("warn_missing"):
            log.warning("%s", near.message)
        return render_error(near.message, marker=near.text)

    def has_live(self, chapter: str, scenario: str | None) -> bool:
        """Whether a live block's prose shows: the chapter (or the scenario) has a live run (``live_prose``)."""
        try:
            live = self.source.traces(chapter).live
        except PrimerError as error:
            if self.getConfig("warn_missing") or not isinstance(error, NotFound):
                log.warning("::: live %s: %s", chapter, error)
            return False
        return live is not None and (scenario is None or any(s.name == scenario for s in live.scenarios))

    def html_for(self, chapter: str, scenario: str | None) -> str:
        """The HTML for one marker: the traces, or a visible error block."""
        marker = f"::: trace {chapter}{f' {scenario}' if scenario else ''}"
        try:
            traces = collect(self.source, chapter, scenario)
            # A chapter's switch, totals and live status head its first trace
            # on the page only: chapters mostly place one marker per scenario.
            head = chapter not in self._headed
            anchors = self.anchors

            def render() -> str:
                return render_traces(traces, scenario, anchors=anchors, head=head)

            cache = self.cache
            if cache is None:
                html = render()
            else:
                html = cache.html(traces, scenario, anchors=anchors, head=head, render=render)
            self._headed.add(chapter)
            return html
        except NotFound as error:
            if self.getConfig("warn_missing"):
                log.warning("%s: %s", marker, error)
            return render_error(str(error), marker=marker)
        except PrimerError as error:
            log.warning("%s: %s", marker, error)
            return render_error(str(error), marker=marker)
        except Exception as error:
            log.warning("%s could not be rendered: %s: %s", marker, type(error).__name__, error, exc_info=True)
            return render_error(
                f"The traces could not be rendered ({type(error).__name__}: {error}). "
                "This is a bug in the book machinery: the build log has the traceback.",
                marker=marker,
            )


def makeExtension(**kwargs: Any) -> TraceExtension:
    """The extension, as Python-Markdown loads it by module name."""
    return TraceExtension(**kwargs)
