"""The one reader of a page's ``:::`` lines: trace markers, mode blocks, and lines meant as either.

``::: trace CHAPTER [SCENARIO]`` places traces; ``::: live CHAPTER [SCENARIO]`` to ``::: end live`` (or
``mock``) holds prose about one mode's runs. ``scan`` reads a page once (fenced code left out: an example),
looking only at lines that open a fence or start with ``:::``; ``check`` words the warnings, naming page and
line, so a typo fails ``--strict``. ``broken_rules`` checks a book's rules (``docs/authors.md``) once its
pages are read: chapter names, every scenario placed, a page placing its own chapter's traces only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import PurePosixPath
from typing import NamedTuple

from primer.locator import unknown

#: The valid form of a marker, as messages quote it.
MARKER_FORM = "::: trace CHAPTER [SCENARIO]"
#: The class of the note a marker becomes when traces are off.
OFF_CLASS = "primer-traces-off"

# The lines read, each after its line feed (a literal: found fast): a fence (indented or not, as fences nest in
# lists and admonitions), or one starting with ":::".
_LINE = re.compile(r"\n([ \t]*(?:(`{3,}|~{3,})|:::).*)")
# Meant as a marker: at most three spaces (four make code), ":::", "trace(s)" in any case or a typo before a name.
_MEANT = re.compile(r"(?i)(?P<indent> {0,3}):::(?P<gap>[ \t]*)(?P<word>traces?|[a-z]{4,6}(?=\s+\S))(?P<rest>[ \t].*)?")
_NAME = re.compile(r"[A-Za-z0-9_]+")
#: A marker as written (the common case, read in one match): what ``parse_line`` would find nothing wrong with.
_VALID = re.compile(r":::[ \t]+trace[ \t]+([A-Za-z0-9_]+)(?:[ \t]+([A-Za-z0-9_]+))?[ \t]*")
_SPACES = re.compile(r"[ \t]+")
# Placing traces for the book's rules, however indented: the extension finds them in admonitions too.
_PLACING = re.compile(r"[ \t]*:::[ \t]+trace[ \t]+(\w+)(?:[ \t]+(\w+))?\s*")
_OPEN = re.compile(r" {0,3}:::[ \t]+(live|mock)[ \t]+(\w+)(?:[ \t]+(\w+))?\s*", re.A)
_CLOSE = re.compile(r" {0,3}:::[ \t]+end[ \t]+(live|mock)\s*")
_BLOCK_MEANT = re.compile(r"(?i)[ \t]*:::[ \t]*(?:end[ \t]*)?(?P<word>live\b|mock\b|[a-z]{3,5}(?=\s+\w))")
_FORMS = (
    "The valid forms are `::: live CHAPTER [SCENARIO]` (or `::: mock ...`) and `::: end live` (or `::: end mock`), "
    "at the start of the line, a space after `:::`, the names made of letters, digits and underscores."
)


def _one_edit(word: str) -> frozenset[str]:
    # Every word one typo from `word` in its own letters (and `word` itself): one left out, doubled or swapped
    # with its neighbour, or put in another's place. Another extension's word made of those letters
    # (`::: care x`, `::: evil x`) is further off, and left alone.
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    letters = set(word)
    return frozenset(
        {a + b[1:] for a, b in splits if b}
        | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
        | {a + c + b[1:] for a, b in splits if b for c in letters}
        | {a + c + b for a, b in splits for c in letters}
    )


#: The words of a line meant as a marker, and of one meant as a mode block's.
_TRACE_WORDS = _one_edit("trace") | {"traces"}
_BLOCK_WORDS = _one_edit("live") | _one_edit("mock")


class Marker(NamedTuple):
    chapter: str
    scenario: str | None
    line: int


class NearMiss(NamedTuple):
    """A line meant as a marker that is not a valid one: what is wrong and the valid form (without page and line)."""

    text: str
    message: str
    line: int


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


class Scan(NamedTuple):
    """What a page's ``:::`` lines say, fenced code left out."""

    markers: tuple[Marker, ...] = ()
    near_misses: tuple[NearMiss, ...] = ()
    blocks: tuple[ModeBlock, ...] = ()
    #: What is wrong with the blocks' lines: (line, sentence).
    wrong: tuple[tuple[int, str], ...] = ()
    #: (chapter, scenario) of every line placing traces, however indented.
    placed: tuple[tuple[str, str | None], ...] = ()
    #: The fenced code's first and last lines.
    fenced: tuple[tuple[int, int], ...] = ()


def parse_line(line: str, number: int = 1) -> Marker | NearMiss | None:
    """One line of Markdown as a ``Marker``, a ``NearMiss``, or None (not meant as a marker)."""
    line = line.rstrip("\r")
    if valid := _VALID.fullmatch(line):
        return Marker(valid[1], valid[2], number)
    meant = _MEANT.fullmatch(line)
    if meant is None or meant["word"].lower() not in _TRACE_WORDS:
        return None
    words = [word for word in _SPACES.split(meant["rest"] or "") if word]
    problems = []
    if meant["indent"]:
        problems.append("it is indented, and a marker starts at the beginning of its line")
    if not meant["gap"]:
        problems.append("a space must follow `:::`")
    if meant["word"] != "trace":
        problems.append(f"the word is `trace`, not `{meant['word']}`")
    if not words:
        problems.append("it names no chapter")
    elif len(words) > 2:  # a chapter and a scenario
        problems.append(f"it has {len(words)} words after `trace`, and a marker takes two at most")
    problems += [f"`{word}` is not a name" for word in words if not _NAME.fullmatch(word)]
    if problems:
        text = line.strip()
        return NearMiss(
            text,
            f"`{text}` looks like a trace marker but is not one: {'; '.join(problems)}. The valid form is "
            f"`{MARKER_FORM}`, alone at the start of its line, the names made of letters, digits and underscores.",
            number,
        )
    return Marker(words[0], words[1] if len(words) > 1 else None, number)


def numbered(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each match of ``pattern`` in ``text``, with the number of the line it starts on."""
    number, at = 1, 0
    for match in pattern.finditer(text):
        number += text.count("\n", at, match.start())
        at = match.start()
        yield number, match


def _blocks(lines: list[tuple[int, str]]) -> tuple[list[ModeBlock], list[tuple[int, str]]]:
    # The closed mode blocks, and what is wrong with the blocks' lines as (line, sentence).
    blocks, wrong, current = [], [], None
    for number, line in lines:
        start, close = _OPEN.fullmatch(line), _CLOSE.fullmatch(line)
        if start and current is None:
            current = ModeBlock(start[1], start[2], start[3], number)
        elif start and current is not None:
            why = f"holds another one (line {number}): {current.mode} blocks do not nest."
            wrong.append((current.start, f"{current.about} {why}"))
        elif close and current is not None:
            if close[1] != current.mode:
                why = f"is closed on line {number} by the other mode's line: write `::: end {current.mode}`."
                wrong.append((current.start, f"{current.about} {why}"))
            blocks.append(current._replace(end=number))
            current = None
        elif (meant := _BLOCK_MEANT.match(line)) and meant["word"].lower() in _BLOCK_WORDS:
            # a close with no block open, or a line meant as a block's (a typo too)
            said = "closes no block" if close else "looks like the line of a mode block but is not one"
            wrong.append((number, f"`{line.strip()}` {said}. {_FORMS}"))
    if current is not None:  # left as written: what it would hide is unclear
        wrong.append((current.start, f"{current.about} is not closed: end it with a line `::: end {current.mode}`."))
    return blocks, wrong


# Asked of a page by the plugin, the checks, the rules and the extension: read once.
@lru_cache(maxsize=1024)
def scan(markdown: str) -> Scan:
    """What the page's ``:::`` lines say, in order (lines numbered as an editor does: only a line feed ends one)."""
    if ":::" not in markdown:
        return Scan()
    lines, fenced, fence, opened = [], [], "", 0  # the ":::" lines outside fenced code; the fences' first and last
    for number, match in numbered(_LINE, f"\n{markdown}"):
        found = match[2]
        if not fence and found:
            fence, opened = found, number
        elif not fence:
            lines.append((number, match[1], parse_line(match[1], number)))
        elif found and found[0] == fence[0] and len(found) >= len(fence):  # the same character, as long
            fenced.append((opened, number))
            fence = ""
    if fence:
        fenced.append((opened, markdown.count("\n") + 1))
    # A line meant as a marker is no block's; one placing traces, however indented, counts for the rules.
    blocks, wrong = _blocks([(number, line) for number, line, each in lines if each is None])
    markers = tuple(each for _, _, each in lines if isinstance(each, Marker))
    indented = (_PLACING.fullmatch(line) for _, line, each in lines if not isinstance(each, Marker))
    return Scan(
        markers,
        tuple(each for _, _, each in lines if isinstance(each, NearMiss)),
        tuple(blocks),
        tuple(wrong),
        tuple((m.chapter, m.scenario) for m in markers) + tuple((found[1], found[2]) for found in indented if found),
        tuple(fenced),
    )


def check(page: str, markdown: str, scenarios: Mapping[str, Sequence[str] | None] | None = None) -> list[str]:
    """Warnings for the page's ``:::`` lines, naming page and line, in the page's order.

    Near misses and malformed blocks; with ``scenarios`` (chapter -> scenario names, None when not known)
    also markers and blocks naming what does not exist.
    """
    found = scan(markdown)
    said = [(near.line, near.message) for near in found.near_misses]
    if scenarios is not None:
        said += found.wrong
        for marker in found.markers:
            if missing := unknown(marker.chapter, marker.scenario, scenarios):
                named = f"{marker.chapter} {marker.scenario}" if marker.scenario else marker.chapter
                said.append((marker.line, f"the marker `::: trace {named}` {missing}"))
        said += [
            (b.start, f"{b.about} {why}") for b in found.blocks if (why := unknown(b.chapter, b.scenario, scenarios))
        ]
    return [f"{page} line {line}: {sentence}" for line, sentence in sorted(said, key=lambda each: each[0])]


def off_note(marker: Marker) -> str:
    what = f"{marker.chapter} {marker.scenario}" if marker.scenario else marker.chapter
    return f"Traces of {what} are not shown: this build ran with traces off (PRIMER_TRACES=off, or enabled: false)."


# -- the book's rules: each broken one a sentence naming the module or page (and line) and what to do --

_CHAPTER = re.compile(r"ch(?P<number>\d{2,})_[a-z][a-z0-9_]*")


def broken_rules(package: str, scenarios: Mapping[str, Sequence[str] | None], pages: Mapping[str, str]) -> list[str]:
    """Every broken rule; ``scenarios`` None when not known (a chapter not imported: checked by name only)."""
    problems = _names(package, sorted(scenarios))
    stems = {name: PurePosixPath(name).stem for name in sorted(pages)}
    homes = {stem: name for name, stem in reversed(stems.items())}  # a chapter's page: the first named after it
    placed: dict[str, set[str | None]] = {}
    for markdown in pages.values():
        for chapter, scenario in scan(markdown).placed:
            placed.setdefault(chapter, set()).add(scenario)
    docs = min(pages, default="docs/index.md").split("/")[0]
    for chapter, names in scenarios.items():
        marked = placed.get(chapter, set())
        missing = [] if names is None or None in marked else [name for name in names if name not in marked]
        if missing:
            one = len(missing) == 1
            which = f"scenario {missing[0]} is" if one else f"scenarios {', '.join(missing)} are"
            problems.append(
                f"{package}.{chapter}: {which} on no page, so no reader sees {'it' if one else 'them'}. "
                f"Place {'it' if one else 'each'} on "
                f"{homes.get(chapter, f'{docs}/{chapter}.md')} with a marker line `::: trace {chapter} {missing[0]}`, "
                f"or `::: trace {chapter}` for every scenario of the chapter."
            )
    for name, stem in stems.items():
        markers = [marker for marker in scan(pages[name]).markers if marker.chapter in scenarios]
        # Any page not named after a chapter (a home page) may show one chapter.
        own = stem if stem in scenarios else next((marker.chapter for marker in markers), None)
        for marker in (marker for marker in markers if marker.chapter != own):
            home = homes.get(marker.chapter) or str(PurePosixPath(name).with_name(f"{marker.chapter}.md"))
            problems.append(
                f"{name} line {marker.line}: the marker `::: trace {marker.chapter}"
                f"{' ' + marker.scenario if marker.scenario else ''}` places {marker.chapter}'s traces on a page "
                f"that is {own}'s. A page places its own chapter's traces only: move the marker to {home}, "
                "the page named after the chapter."
            )
    return problems


def _names(package: str, chapters: list[str]) -> list[str]:
    problems: list[str] = []
    by_number: dict[int, list[str]] = {}
    for chapter in chapters:
        if named := _CHAPTER.fullmatch(chapter):
            by_number.setdefault(int(named["number"]), []).append(chapter)
        else:
            problems.append(
                f"{package}.{chapter}: a chapter module is named chNN_name: `ch`, its place in the book in two "
                "digits, `_` and a name in lower case (ch01_first_steps). Rename it; a module of the package "
                "that is not a chapter (a helper) has a name that starts with `_`."
            )
    for expected, (number, same) in enumerate(sorted(by_number.items()), start=1):
        if len(same) > 1:
            problems.append(
                f"{package}.{same[1]}: chapter {number:02d} is {', '.join(same[:-1])} already, and each chapter has "
                f"a place of its own: renumber {same[1]}."
            )
        if number != expected:
            problems.append(
                f"{package}.{same[0]}: the chapters are numbered ch01, ch02, ... with no gap, and this one is "
                f"ch{number:02d} where ch{expected:02d} comes next: rename it ch{expected:02d}{same[0][4:]}."
            )
    return problems
