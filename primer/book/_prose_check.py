"""Prose that quotes a trace says what the trace shows, in every mode the reader sees it in.

A *quoted trace fact* is inline code after the page's first trace marker, outside fenced code, that
is not a name (an identifier, a call, a dashed word, a path, a marker: names point at code; a fact
has a figure, a space, a colon or a quote). It must be found in the runs of the last marker above it
(the chapter, or its one scenario), in each mode shown there (only that mode's inside a ``::: live``
or ``::: mock`` block, ``primer.book._live_prose``): their summary lines, stories, stream lines,
notes and JSON (a header read as ``name: value``). The comparison ignores whitespace, quotes,
backslashes and case; ``...`` in a fact stands for any text. ``problems`` warns of each fact not
found, naming page, line and text, so ``mkdocs build --strict`` fails.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib.util
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Protocol

from primer.book import _live_prose as live_prose
from primer.book._atomic import write_if_changed
from primer.book._markers import _lines_outside_code, find_markers

if TYPE_CHECKING:
    from primer.book._prices import PriceTable
    from primer.book._source import ChapterTraces, Shown
    from primer.trace import ChapterRun, ScenarioRun

__all__ = ["Fact", "ProseChecks", "corpus", "facts", "problems"]

# A span of inline code: a run of backticks, text not crossing a blank line, the same run.
_CODE = re.compile(r"(?<!`)(?P<ticks>`+)(?!`)(?P<text>(?:(?!\n[ \t]*\n).)+?)(?<!`)(?P=ticks)(?!`)", re.S)
# What names code, rather than quoting a trace.
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.-]*(?:\(\))?")
# A call or a decorator (``RetryPolicy(attempt_deadline=2.0)``), a row's index (``[3]``), a command
# (``mkdocs build``), an argument as code passes it (``max_attempts=3``), a host (``127.0.0.1``).
_CODE_LIKE = re.compile(
    r"@?[A-Za-z_][\w.]*\(.*\)|\[\d+\]|(?:mkdocs|python|pip|git|npm|\.venv/bin/\w+) .*"
    r"|[A-Za-z_]\w*=\S+|\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?",
    re.S,
)
_PATH = re.compile(r"[\w.-]*/[\w./-]*|[\w-]+\.(?:py|md|json|yml|yaml|toml|html|js|css)")
_HEADING = re.compile(r" {0,3}#{1,6}[ \t]")
_ELLIPSIS = re.compile(r"\.\.\.|…")
# Left out of both sides: whitespace, quotes, backslashes.
_IGNORED = (" ", "\t", "\n", "\r", "\f", "\v", "\u00a0", '"', "'", "\\")
# Between the pieces of the text looked in: a fact is found within one piece.
_APART = "\x00"


class Fact(NamedTuple):
    """One quoted trace fact: where it is, what it says, where it must be found."""

    line: int
    text: str
    chapter: str
    scenario: str | None
    #: The mode block it sits in, or None: it shows beside both modes.
    mode: str | None
    #: The other markers of its section: a mode shows there if any of their runs is of it.
    also: tuple[tuple[str, str | None], ...] = ()


def _blank_fences(markdown: str) -> str:
    # Fenced code keeps its line breaks (so offsets still give line numbers) and loses its text.
    kept = dict(_lines_outside_code(markdown))
    return "\n".join(kept.get(number, "") for number in range(1, markdown.count("\n") + 2))


def _is_name(text: str) -> bool:
    return bool(
        _IDENTIFIER.fullmatch(text) or _PATH.fullmatch(text) or _CODE_LIKE.fullmatch(text) or text.startswith(":::")
    )


def facts(markdown: str) -> list[Fact]:
    """The page's quoted trace facts, in order: inline code in the sections (heading to heading) that hold a marker.

    Each notes the section's markers (where its modes show) and the mode block it sits in.
    """
    markers = find_markers(markdown)
    if not markers:
        return []
    blocks = [b for b in live_prose.blocks(markdown) if b.end is not None]
    text = _blank_fences(markdown)
    lines = text.split("\n")
    headings = [n for n, line in enumerate(lines, 1) if _HEADING.match(line)]
    starts = [0, *accumulate(len(line) + 1 for line in lines)]
    found = []
    for match in _CODE.finditer(text):
        line = bisect.bisect_right(starts, match.start())  # the last line starting at or before it
        words = " ".join(match["text"].split())
        if line in headings or not words or _is_name(words):
            continue
        before, after = _section(headings, line)
        near = [m for m in markers if before < m.line < after]
        if not near:
            continue
        block = next((b for b in blocks if b.start < line < (b.end or 0)), None)
        also = tuple((m.chapter, m.scenario) for m in near[1:])
        found.append(Fact(line, words, near[0].chapter, near[0].scenario, block.mode if block else None, also))
    return found


def _section(headings: list[int], line: int) -> tuple[int, int]:
    """The lines of the headings around ``line`` (0 and a line past the end where there is none)."""
    before = max((h for h in headings if h < line), default=0)
    after = min((h for h in headings if h > line), default=1 << 30)
    return before, after


# A header as the JSON has it (``["retry-after", "1"]``), to be read as the page lists it.
_HEADER = re.compile(r'\["((?:[^"\\]|\\.)*)", ?"((?:[^"\\]|\\.)*)"\]')
# An escaped line break or tab in JSON text: a space, as the page shows it.
_ESCAPED_SPACE = re.compile(r"\\[nrt]")


def _payloads(run: ScenarioRun) -> str:
    """Every value the payloads show, as the run's JSON (one C-speed dump), headers as ``name: value``."""
    text = run.model_dump_json()
    return _ESCAPED_SPACE.sub(" ", _HEADER.sub(r"\1: \2", text))


def _lines(run: ScenarioRun, cost: str | None) -> Iterator[str]:
    from primer import summary
    from primer.book._stream_view import stream_view

    yield summary.scenario_line(run, cost=cost)
    yield summary.scenario_story(run)
    yield summary.ending_line(run.ending)
    for turn in run.turns:
        yield summary.turn_line(turn)
        yield summary.model_line(turn.model_call)
        for note in turn.model_call.notes:  # as the page shows one: ``label {json}``
            yield f"{note.label} {json.dumps(note.data, ensure_ascii=False, default=str)}"
        view = stream_view(turn.model_call, "x")
        if view is not None:
            yield from (view.line, str(view.timeline), str(view.sse))
        yield from (summary.tool_line(tool) for tool in turn.tools)


def _normal(text: str) -> str:
    # Case too: a header's name is the same whatever its case (``Retry-After``, ``retry-after``).
    for each in _IGNORED:  # str.replace, each a C-speed pass: far faster than a regex or translate
        text = text.replace(each, "")
    return text.casefold()


def corpus(run: ScenarioRun, prices: PriceTable | None = None) -> str:
    """What a run shows, as the check compares it: its pieces, normalised, kept apart.

    With ``prices``, its line shows what it cost, as the page does (a live run's, where its model's price is known).
    """
    cost = prices.cost([run]) if prices is not None else None
    return _APART.join(_normal(piece) for piece in [*_lines(run, cost.text if cost else None), _payloads(run)])


def _head(run: ChapterRun, prices: PriceTable | None) -> str:
    """The chapter's totals line as its head shows it (``live turns=9 · ... · $0.0014 (prices read ...)``)."""
    from primer import summary

    cost = prices.cost(run.scenarios) if prices is not None else None
    line = summary.chapter_line(run, cost=cost.text if cost else None)
    return _normal(f"{line} ({cost.read})" if cost else line)


def _pattern(fact: str) -> re.Pattern[str]:
    parts = [re.escape(_normal(part)) for part in _ELLIPSIS.split(fact) if _normal(part)]
    return re.compile(f"[^{_APART}]*?".join(parts) or "$^")


class _Shown:
    """What the page's runs show, per mode, made once per check."""

    def __init__(
        self,
        traces: Callable[[str], ChapterTraces | None],
        markers: list[tuple[str, str | None]],
        prices: PriceTable | None = None,
    ) -> None:
        self.traces = traces
        self.markers = markers
        self.prices = prices
        self.made: dict[str, list[str]] = {}
        self.read: dict[str, ChapterTraces | None] = {}

    def _chapter(self, chapter: str, mode: str) -> ChapterRun | None:
        if chapter not in self.read:
            self.read[chapter] = self.traces(chapter)
        found = self.read[chapter]
        return None if found is None else found.mock if mode == "mock" else found.live

    def _runs(self, chapter: str, scenario: str | None, mode: str) -> list[ScenarioRun]:
        run = self._chapter(chapter, mode)
        return [s for s in run.scenarios if scenario in (None, s.name)] if run is not None else []

    def shows(self, places: tuple[tuple[str, str | None], ...], mode: str) -> bool:
        """Whether a reader sees a run of that mode at any of these markers."""
        return any(self._runs(chapter, scenario, mode) for chapter, scenario in places)

    def corpora(self, mode: str) -> list[str]:
        """What every run of that mode on the page shows (a sentence may quote another scenario of it)."""
        if mode not in self.made:
            self.made[mode] = [
                corpus(run, self.prices)
                for chapter, scenario in self.markers
                for run in self._runs(chapter, scenario, mode)
            ]
            # Each chapter's head: its totals (the first marker of a chapter on a page draws it).
            chapters = [self._chapter(chapter, mode) for chapter in dict.fromkeys(c for c, _ in self.markers)]
            self.made[mode] += [_head(run, self.prices) for run in chapters if run is not None]
        return self.made[mode]


def problems(
    page: str, markdown: str, traces: Callable[[str], ChapterTraces | None], prices: PriceTable | None = None
) -> list[str]:
    """A warning for each quoted fact not found in a mode it shows in; ``traces(chapter)`` None: no traces.

    ``prices``: the table the page's costs come from (a live run's cost is found where the page shows it).
    """
    found = facts(markdown)
    if not found:
        return []
    markers = list(dict.fromkeys((m.chapter, m.scenario) for m in find_markers(markdown)))
    shown = _Shown(traces, markers, prices)
    warnings = []
    for fact in found:
        pattern = _pattern(fact.text)
        places = ((fact.chapter, fact.scenario), *fact.also)
        modes = [fact.mode] if fact.mode else [m for m in live_prose.MODES[::-1] if shown.shows(places, m)]
        missing = [m for m in modes if shown.shows(places, m) and not any(map(pattern.search, shown.corpora(m)))]
        if not missing:
            continue
        runs = "mock and live runs" if len(missing) > 1 else f"{missing[0]} runs"
        advice = (
            f"put the sentence in a `::: {modes[0] if modes[0] not in missing else modes[-1]} {fact.chapter}` block, "
            "or say what both show"
            if len(modes) > len(missing)
            else "say what the trace shows"
        )
        warnings.append(
            f"{page} line {fact.line}: the prose quotes `{fact.text}`, which the {runs} do not show: {advice}."
        )
    return warnings


class _Store(Protocol):
    """What the check asks of a book's trace store (``primer.book._store.TraceStore``)."""

    def chapters(self) -> list[str]: ...
    def summary(self, chapter: str) -> Shown | None: ...
    def traces(self, chapter: str) -> ChapterTraces: ...


class ProseChecks:
    """The check as a book's build runs it on every page, its answers kept while nothing changed.

    A warm build reads no run (``primer.book._cache``), and the check would read them all: so a
    page's answer is kept (in memory, and with a ``folder`` in a file per page) by a digest of its
    Markdown, its chapters' trace keys and this code. A file that cannot be read or written is a miss.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._kept: dict[str, tuple[str, list[str]]] = {}

    def problems(self, page: str, markdown: str, store: _Store, prices: PriceTable | None = None) -> list[str]:
        """``problems`` for a page of the book whose traces ``store`` holds, its costs from ``prices``."""
        named = dict.fromkeys(m.chapter for m in find_markers(markdown))
        shown = set(store.chapters())

        def traces(chapter: str) -> ChapterTraces | None:
            return store.traces(chapter) if chapter in shown else None

        summaries = [store.summary(chapter) if chapter in shown else None for chapter in named]
        if not named or any(s is None for s in summaries):  # read anyway to be rendered: nothing to save
            return problems(page, markdown, traces, prices)
        parts = [_code_digest(), markdown, *(f"{s.chapter}={s.key}" for s in summaries if s is not None)]
        parts.append(f"prices={prices.key if prices is not None else None}")
        key = hashlib.sha256("\0".join(parts).encode()).hexdigest()
        kept = self._kept.get(page) or self._read(page)
        if kept is not None and kept[0] == key:
            return kept[1]
        found = problems(page, markdown, traces, prices)
        self._kept[page] = (key, found)
        self._write(page, key, found)
        return found

    def _file(self, page: str) -> Path | None:
        name = hashlib.sha256(page.encode()).hexdigest()[:16]
        return None if self.folder is None else self.folder / f"{name}.json"

    def _read(self, page: str) -> tuple[str, list[str]] | None:
        path = self._file(page)
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path is not None else None
            return (str(data["key"]), [str(w) for w in data["warnings"]]) if isinstance(data, dict) else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write(self, page: str, key: str, warnings: list[str]) -> None:
        path = self._file(page)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_if_changed(path, json.dumps({"page": page, "key": key, "warnings": warnings}), durable=False)
        except OSError:
            pass  # the next build checks again


@cache
def _code_digest() -> str:
    # What decides a page's answer besides its Markdown and traces: this module and the summary lines.
    # Found, not imported: a warm build must not load the trace models (pydantic) for a file's path.
    names = (__name__, "primer.summary", "primer.book._stream_view", "primer.book._prices", live_prose.__name__)
    sources = [Path(getattr(importlib.util.find_spec(name), "origin", None) or "") for name in names]
    return hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()
