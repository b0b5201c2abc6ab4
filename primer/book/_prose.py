"""Prose true in every mode it shows in: mode blocks, and the check of what the prose quotes.

A *mode block* (``::: live CHAPTER [SCENARIO]`` to ``::: end live``, or ``mock``) holds prose about one mode's
runs: a live block shows when its chapter (or scenario) has a live run on the page, a mock block whenever the
chapter's traces show, labelled with its mode; its two lines never show, and in fenced code they are examples.

A *quoted trace fact* is inline code that is not a name (an identifier, a call, a path, a command, a host), in a
section (heading to heading) that holds a marker. It must be found in what the runs on the page show (summary
lines, stories, stream lines, notes, the JSON with headers as ``name: value``) in each mode the sentence shows in,
ignoring whitespace, quotes, backslashes and case (``...`` stands for any text). ``problems`` names page, line
and text of each fact not found and each malformed block, so ``mkdocs build --strict`` fails.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import html
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from markdown.preprocessors import Preprocessor

from primer.book._markers import _lines_outside_code, find_markers
from primer.locator import unknown

if TYPE_CHECKING:
    from markdown import Markdown

    from primer.book._prepare import Prepared
    from primer.book._prices import PriceTable
    from primer.book._source import ChapterTraces
    from primer.trace import ScenarioRun

__all__ = ["Corpora", "LiveProse", "ModeBlock", "blocks", "corpora", "facts", "kept_corpora", "problems", "select"]

_OPEN = re.compile(r" {0,3}:::[ \t]+(?P<mode>live|mock)[ \t]+(?P<chapter>\w+)(?:[ \t]+(?P<scenario>\w+))?\s*", re.A)
_CLOSE = re.compile(r" {0,3}:::[ \t]+end[ \t]+(?P<mode>live|mock)\s*")
# A line meant as a block's line: ":::", then "live", "mock", "end live" or "end mock", any case and spacing.
_MEANT = re.compile(r"[ \t]*:::[ \t]*(?:end[ \t]*)?(?:live|mock)(?:\s|$)", re.I)
# Asked of every page, traces off too: a page without such a line is not read line by line.
_EITHER = re.compile(r"^[ \t]*:::[ \t]*(?i:live|mock|end)", re.M)
_FORMS = (
    "The valid forms are `::: live CHAPTER [SCENARIO]` (or `::: mock ...`) and `::: end live` (or `::: end mock`), "
    "at the start of the line, a space after `:::`, the names made of letters, digits and underscores."
)


class ModeBlock(NamedTuple):
    """One closed mode block: its mode, what it is about, its first and last lines."""

    mode: str
    chapter: str
    scenario: str | None
    start: int
    end: int = 0

    @property
    def about(self) -> str:
        """The block as a sentence names it: ``the live block `::: live ch09_who_retries```."""
        return f"the {self.mode} block `::: {self.mode} {self.chapter}{f' {self.scenario}' if self.scenario else ''}`"


def _scan(markdown: str) -> tuple[list[ModeBlock], list[tuple[int, str]]]:
    """The page's closed mode blocks, and what is wrong with its blocks' lines as (line, sentence)."""
    found: list[ModeBlock] = []
    wrong: list[tuple[int, str]] = []
    if _EITHER.search(markdown) is None:
        return found, wrong
    current: ModeBlock | None = None
    for number, line in _lines_outside_code(markdown):
        opened, closed = _OPEN.fullmatch(line), _CLOSE.fullmatch(line)
        if opened and current is None:
            current = ModeBlock(opened["mode"], opened["chapter"], opened["scenario"], number)
        elif opened and current is not None:
            why = f"holds another one (line {number}): {current.mode} blocks do not nest."
            wrong.append((current.start, f"{current.about} {why}"))
        elif closed and current is not None:
            if closed["mode"] != current.mode:
                why = f"is closed on line {number} by the other mode's line: write `::: end {current.mode}`."
                wrong.append((current.start, f"{current.about} {why}"))
            found.append(current._replace(end=number))
            current = None
        elif _MEANT.match(line) and not closed:
            wrong.append((number, f"`{line.strip()}` looks like the line of a mode block but is not one. {_FORMS}"))
    if current is not None:  # left as written: what it would hide is unclear
        wrong.append((current.start, f"{current.about} is not closed: end it with a line `::: end {current.mode}`."))
    return found, wrong


def blocks(markdown: str) -> list[ModeBlock]:
    """Every closed mode block of a page, in order, fenced code left out."""
    return _scan(markdown)[0]


def opening_html(block: ModeBlock) -> str:
    """The element a shown block's content sits in, opened, with its label: ``</div>`` closes it."""
    scenario = f' data-tr-scenario="{html.escape(block.scenario)}"' if block.scenario else ""
    about = f"the {block.mode} run" + (f" of {block.scenario}" if block.scenario else "")
    return (
        f'<div class="tr-prose" data-mode="{block.mode}" data-tr-chapter="{html.escape(block.chapter)}"{scenario}>'
        f'<p class="tr-prose-mode"><span class="tr-badge">{block.mode}</span> about {html.escape(about)}</p>'
    )


def select(
    markdown: str,
    has_live: Callable[[str, str | None], bool],
    *,
    mock: bool = True,
    wrap: Callable[[ModeBlock], tuple[str, str]] = lambda block: ("", ""),
) -> str:
    """The page with each closed block's content kept or dropped, its two lines gone (or what ``wrap`` gives).

    A live block is kept when ``has_live(chapter, scenario)``, a mock block when ``mock`` (False: no traces show).
    """
    found = blocks(markdown)
    if not found:
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
    """The Markdown preprocessor that keeps or drops a page's mode blocks, as ``shown(text)`` applies ``select``."""

    def __init__(self, md: Markdown, shown: Callable[[str], str]) -> None:
        super().__init__(md)
        self.shown = shown

    def run(self, lines: list[str]) -> list[str]:
        """The page's lines, each block kept or dropped."""
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
_HEADING = re.compile(r" {0,3}#{1,6}[ \t]")
# What the comparison leaves out: whitespace, quotes, backslashes; and JSON's escaped line breaks and tabs.
_IGNORED = (" ", "\t", "\n", "\r", "\f", "\v", "\u00a0", '"', "'", "\\")
_ESCAPED_SPACE = re.compile(r"\\[nrt]")
# A header as the JSON has it (``["retry-after", "1"]``), read as the page lists it.
_HEADER = re.compile(r'\["((?:[^"\\]|\\.)*)", ?"((?:[^"\\]|\\.)*)"\]')
_APART = "\x00"  # between the pieces of what runs show: a fact is found within one piece
_HEAD = "*"  # the chapter's totals line (its first marker's head), among its scenarios: no scenario's name

#: What a chapter's runs show, as the check compares it: mode -> scenario (``*``: the chapter's head) -> text.
Corpora = Mapping[str, Mapping[str, str]]


class Fact(NamedTuple):
    """One quoted trace fact: its line, its text, the markers of its section, the mode block it sits in."""

    line: int
    text: str
    places: tuple[tuple[str, str | None], ...]
    mode: str | None


def facts(markdown: str) -> list[Fact]:
    """The page's quoted trace facts, in order."""
    markers = find_markers(markdown)
    if not markers:
        return []
    kept, closed = dict(_lines_outside_code(markdown)), blocks(markdown)
    # Fenced code keeps its line breaks (so offsets still give line numbers) and loses its text.
    text = "\n".join(kept.get(number, "") for number in range(1, markdown.count("\n") + 2))
    headings = [0, *(number for number, line in kept.items() if _HEADING.match(line)), 1 << 30]
    found = []
    for match in _CODE.finditer(text):
        line, words = text.count("\n", 0, match.start()) + 1, " ".join(match["text"].split())
        after = bisect.bisect_right(headings, line)  # its section: between the headings around it
        places = dict.fromkeys(
            (m.chapter, m.scenario) for m in markers if headings[after - 1] < m.line < headings[after]
        )
        if places and words and line not in headings and not _NAME.fullmatch(words):
            mode = next((block.mode for block in closed if block.start < line < block.end), None)
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
    from primer.book._stream_view import stream_view

    said = ReplyMarkdown().plain  # a reply in a folded line as the page words it (``**butter**`` as ``butter``)
    yield from (summary.scenario_line(run, cost=cost), summary.scenario_story(run), summary.ending_line(run.ending))
    for turn in run.turns:
        yield from (summary.turn_line(turn, said), summary.model_line(turn.model_call, said))
        for note in turn.model_call.notes:  # as the page shows one: ``label {json}``
            yield f"{note.label} {json.dumps(note.data, ensure_ascii=False, default=str)}"
        view = stream_view(turn.model_call, "x")
        if view is not None:
            yield from (view.line, str(view.timeline), str(view.sse))
        yield from (summary.tool_line(tool) for tool in turn.tools)
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


# What the kept corpora depend on besides the chapter's key (which has the summary lines): this code, the costs'.
_CODE_DIGEST = hashlib.sha256(b"".join(Path(__file__).with_name(n).read_bytes() for n in ("_prose.py", "_prices.py")))
_KEPT = f"prose-{_CODE_DIGEST.hexdigest()[:16]}.json"


def kept_corpora(shown: Prepared, chapter: str, prices: PriceTable | None) -> Corpora | None:
    """``corpora`` of a chapter a build shows (None: it shows none), kept in the chapter's entry of the one cache."""
    summary = shown.summary(chapter)
    if summary is None or shown.store is None:
        return None
    entry = shown.store.cache.entry(chapter, summary.key)
    with contextlib.suppress(ValueError, TypeError):  # not kept, or unreadable: made again
        return dict(json.loads(entry.read(_KEPT) or ""))
    found = corpora(shown.traces(chapter), prices)
    if summary.key:  # "": shown from its traces alone, and kept nowhere
        entry.write(_KEPT, json.dumps(found))
    return found


def problems(
    page: str,
    markdown: str,
    scenarios: Mapping[str, Sequence[str] | None],
    corpora: Callable[[str], Corpora | None] = lambda chapter: None,
) -> list[str]:
    """What is wrong with a page's prose, one sentence each naming page and line, in the page's order.

    Its mode blocks, against ``scenarios`` (chapter -> scenario names, None when not known); its quoted facts,
    against what ``corpora(chapter)`` shows in each mode the fact shows in (None: the chapter shows no traces).
    """
    found, said = _scan(markdown)
    said += [(b.start, f"{b.about} {why}") for b in found if (why := unknown(b.chapter, b.scenario, scenarios))]
    quoted = facts(markdown)
    markers = list(dict.fromkeys((m.chapter, m.scenario) for m in find_markers(markdown))) if quoted else []
    shown = {chapter: corpora(chapter) or {} for chapter, _ in markers}  # read only for a page that quotes

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
        parts = [re.escape(_normal(part)) for part in re.split(r"\.\.\.|…", fact.text) if _normal(part)]
        pattern = re.compile(f"[^{_APART}]*?".join(parts) or "$^")
        missing = [mode for mode in modes if not pattern.search(page_shows[mode])]
        if not missing:
            continue
        runs = "mock and live runs" if len(missing) > 1 else f"{missing[0]} runs"
        advice = "say what the trace shows"
        if len(modes) > len(missing):  # it holds of the other mode's runs
            other = next(mode for mode in modes if mode not in missing)
            advice = f"put the sentence in a `::: {other} {fact.places[0][0]}` block, or say what both show"
        said.append((fact.line, f"the prose quotes `{fact.text}`, which the {runs} do not show: {advice}."))
    return [f"{page} line {line}: {sentence}" for line, sentence in sorted(said, key=lambda each: each[0])]
