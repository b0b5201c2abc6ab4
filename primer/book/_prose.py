"""Prose true in every mode it shows in: mode blocks kept or dropped, and the check of what the prose quotes.

A live block shows when its chapter (or scenario) has a live run, a mock block whenever the chapter's traces
show, labelled. A *quoted trace fact* is inline code that is not a name, in a section holding a marker: it must
be found in what the page's runs show in each mode it shows in (whitespace, quotes and case aside; ``...`` is
any text). ``problems`` names page, line and text of each fact not found, so ``--strict`` fails.
"""

from __future__ import annotations

import bisect
import contextlib
import html
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from markdown.preprocessors import Preprocessor

from primer.book._markers import ModeBlock, numbered, scan

if TYPE_CHECKING:
    from markdown import Markdown

    from primer.book._book import Prepared
    from primer.book._source import ChapterTraces
    from primer.prices import PriceTable
    from primer.trace import ScenarioRun


_OPENING = re.compile(r"^ {0,3}:::[ \t]+(?:live|mock)[ \t]", re.M)  # what ``_markers._OPEN`` reads, at least


def opening_html(block: ModeBlock) -> str:
    """The element a shown block's content sits in, opened, with its label: ``</div>`` closes it."""
    scenario = f' data-tr-scenario="{html.escape(block.scenario)}"' if block.scenario else ""
    about = f"the {block.mode} run" + (f" of {block.scenario}" if block.scenario else "")
    return (
        f'<div class="tr-prose" data-mode="{block.mode}" data-tr-chapter="{html.escape(block.chapter)}"{scenario}>'
        f'<p class="tr-prose-mode"><span class="tr-badge">{block.mode}</span> about {html.escape(about)}</p>'
    )


def select(
    markdown: str, has_live: Callable[[str, str | None], bool], mock: bool, wrap: Callable[[ModeBlock], tuple[str, str]]
) -> str:
    """The page with each closed block's content kept or dropped, its two lines made what ``wrap(block)`` gives.

    A live block is kept when ``has_live(chapter, scenario)``, a mock block when ``mock`` (False: no traces show).
    """
    # A page holding no block's opening line is not scanned (again, once the preprocessors changed its text).
    if not _OPENING.search(markdown) or not (found := scan(markdown).blocks):
        return markdown
    lines = markdown.split("\n")
    for block in found:
        if mock if block.mode == "mock" else has_live(block.chapter, block.scenario):
            # Blank lines around: each stands as a paragraph, apart from the prose.
            lines[block.start - 1], lines[block.end - 1] = (f"\n{part}\n" if part else "" for part in wrap(block))
        else:  # blanked, not removed: line numbers stay, and the paragraphs around stay apart
            lines[block.start - 1 : block.end] = [""] * (block.end - block.start + 1)
    return "\n".join(lines)


class LiveProse(Preprocessor):
    """Keeps or drops a page's mode blocks, as ``shown(text)`` applies ``select``."""

    def __init__(self, md: Markdown, shown: Callable[[str], str]) -> None:
        super().__init__(md)
        self.shown = shown

    def run(self, lines: list[str]) -> list[str]:
        text = "\n".join(lines)
        shown = self.shown(text)
        return lines if shown is text else shown.split("\n")


# -- quoted trace facts ---------------------------------------------------------------

# A span of inline code: a run of backticks, text not crossing a blank line, the same run.
_CODE = re.compile(r"(?<!`)(?P<ticks>`+)(?!`)(?P<text>(?:(?!\n[ \t]*\n).)+?)(?<!`)(?P=ticks)(?!`)", re.S)
# What names code rather than quotes a trace: an identifier or a dashed word, a call or a decorator, a row's
# index (``[3]``), a command, an argument as code passes it (``max_attempts=3``), a host, a path, a marker.
_NAME = re.compile(
    r"[A-Za-z_][\w.-]*(?:\(\))?|@?[A-Za-z_][\w.]*\(.*\)|\[\d+\]|(?:mkdocs|python|pip|git|npm|\.venv/bin/\w+) .*"
    r"|[A-Za-z_]\w*=\S+|\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?|[\w.-]*/[\w./-]*|[\w-]+\.(?:py|md|json|ya?ml|toml|html|js|css)"
    r"|:::.*",
    re.S,
)
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]", re.M)
# What the comparison leaves out: whitespace, quotes, backslashes; and JSON's escaped line breaks and tabs.
_IGNORED = (" ", "\t", "\n", "\r", "\f", "\v", "\u00a0", '"', "'", "\\")
_ESCAPED_SPACE = re.compile(r"\\[nrt]")
# A header as the JSON has it (``["retry-after", "1"]``), read as the page lists it.
_HEADER = re.compile(r'\["((?:[^"\\]|\\.)*)", ?"((?:[^"\\]|\\.)*)"\]')
_APART = "\x00"  # between the pieces of what runs show: a fact is found within one piece
_HEAD = "*"  # the chapter's totals line (its first marker's head), among its scenarios: no scenario's name

#: What a chapter's runs show, as the check compares it: mode -> scenario (``*``: the chapter's head) -> text.
Corpora = Mapping[str, Mapping[str, str]]


class Fact(NamedTuple):  # the markers of its section, the mode block it sits in
    line: int
    text: str
    places: tuple[tuple[str, str | None], ...]
    mode: str | None


def facts(markdown: str) -> list[Fact]:
    scanned = scan(markdown)
    if not scanned.markers or "`" not in markdown:
        return []
    lines = markdown.split("\n")
    for first, last in scanned.fenced:  # blanked: offsets still give line numbers
        lines[first - 1 : last] = [""] * (last - first + 1)
    text = "\n".join(lines)
    headings = [0, *(number for number, _ in numbered(_HEADING, text)), 1 << 30]
    found = []
    for line, match in numbered(_CODE, text):
        words = " ".join(match["text"].split())
        if not words or _NAME.fullmatch(words) or line in headings:
            continue
        after = bisect.bisect_right(headings, line)  # its section: between the headings around it
        places = dict.fromkeys(
            (m.chapter, m.scenario) for m in scanned.markers if headings[after - 1] < m.line < headings[after]
        )
        if places:
            mode = next((block.mode for block in scanned.blocks if block.start < line < block.end), None)
            found.append(Fact(line, words, tuple(places), mode))
    return found


def _normal(text: str) -> str:
    for each in _IGNORED:  # str.replace, a C-speed pass each: five times as fast as one regex
        text = text.replace(each, "")
    return text.casefold()  # case too: a header's name is the same in any case


def _shown(run: ScenarioRun, cost: str | None) -> Iterator[str]:
    """The lines the page shows of a run, and its JSON (the payloads' values)."""
    from primer import summary
    from primer.book._render_markdown import ReplyMarkdown
    from primer.book._render_views import stream_view

    said = ReplyMarkdown().plain  # a reply in a folded line as the page words it (``**butter**`` as ``butter``)
    yield from (summary.scenario_line(run, cost=cost), summary.scenario_story(run), summary.ending_line(run.ending))
    for turn in run.turns:
        yield from (summary.turn_line(turn, said), summary.model_line(turn.model_call, said))
        for note in turn.model_call.notes:  # as the page shows one: ``label {json}``
            yield f"{note.label} {json.dumps(note.data, ensure_ascii=False, default=str)}"
        view = stream_view(turn.model_call)
        if view is not None:
            yield from (view.line, str(view.timeline), str(view.sse))
        yield from (summary.tool_line(tool, live=run.mode == "live") for tool in turn.tools)
    yield _ESCAPED_SPACE.sub(" ", _HEADER.sub(r"\1: \2", run.model_dump_json()))


def corpora(traces: ChapterTraces, prices: PriceTable | None = None) -> dict[str, dict[str, str]]:
    """What the chapter's runs show, per mode and scenario, normalised (a live run's cost where ``prices`` knows it)."""
    from primer import summary

    found: dict[str, dict[str, str]] = {}
    for mode, run in (("mock", traces.mock), ("live", traces.live)):
        if run is None:
            continue
        texts = found[mode] = {}
        for scenario in run.scenarios:
            cost = prices.cost([scenario]) if prices is not None else None
            texts[scenario.name] = _APART.join(
                _normal(piece) for piece in _shown(scenario, cost.text if cost else None)
            )
        total = prices.cost(run.scenarios) if prices is not None else None
        head = summary.chapter_line(run, cost=total.text if total else None)
        texts[_HEAD] = _normal(f"{head} ({total.read})" if total else head)
    return found


# No digest of this code in the name: the entry's key holds the renderer's version, which hashes
# every module of primer/book (this one and the price table's among them).
_KEPT = "prose.json"


def kept_corpora(shown: Prepared, chapter: str, prices: PriceTable | None) -> Corpora | None:
    """``corpora`` of a chapter a build shows (None: it shows none), kept in the chapter's entry of the one cache."""
    summary = shown.summary(chapter)
    if summary is None or shown.cache is None or not summary.importable:  # its pages show the import error alone
        return None
    entry = shown.cache.entry(chapter, summary.key)
    with contextlib.suppress(ValueError, TypeError):  # not kept, or unreadable: made again
        return dict(json.loads(entry.read(_KEPT) or ""))
    found = corpora(shown.traces(chapter), prices)
    if summary.key:  # "": shown from its traces alone, and kept nowhere
        entry.write(_KEPT, json.dumps(found))
    return found


def problems(page: str, markdown: str, corpora: Callable[[str], Corpora | None] = lambda chapter: None) -> list[str]:
    """Each quoted fact of a page not found in what ``corpora(chapter)`` shows (None: no traces), page and line."""
    quoted = facts(markdown)
    if not quoted:
        return []
    markers = list(dict.fromkeys((m.chapter, m.scenario) for m in scan(markdown).markers))
    shown = {chapter: corpora(chapter) or {} for chapter, _ in markers}
    said = []

    def texts(places: Sequence[tuple[str, str | None]], mode: str, *, heads: bool = False) -> list[str]:
        return [
            text
            for chapter, scenario in places
            for name, text in shown[chapter].get(mode, {}).items()
            if (heads if name == _HEAD else scenario in (None, name))
        ]

    # A fact is looked for in what any run of its mode on the page shows: a sentence may quote another scenario.
    page_shows = {mode: _APART.join(texts(markers, mode, heads=True)) for mode in ("mock", "live")}
    for fact in quoted:
        modes = [mode for mode in ([fact.mode] if fact.mode else ["mock", "live"]) if texts(fact.places, mode)]
        parts = [_normal(part) for part in re.split(r"\.\.\.|…", fact.text) if _normal(part)]
        # The parts in order, within one piece of what a run shows; one part (most facts) found as it is: a pattern
        # compiled for each took a tenth of the check.
        pattern = re.compile(f"[^{_APART}]*?".join(map(re.escape, parts)) or "$^") if len(parts) != 1 else None
        missing = [m for m in modes if not (pattern.search(page_shows[m]) if pattern else parts[0] in page_shows[m])]
        if not missing:
            continue
        runs = "mock and live runs" if len(missing) > 1 else f"{missing[0]} runs"
        advice = "say what the trace shows"
        if len(modes) > len(missing):  # it holds of the other mode's runs
            other = next(mode for mode in modes if mode not in missing)
            advice = f"put the sentence in a `::: {other} {fact.places[0][0]}` block, or say what both show"
        said.append(f"{page} line {fact.line}: the prose quotes `{fact.text}`, which the {runs} do not show: {advice}.")
    return said
