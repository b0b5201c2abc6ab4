"""A book's rules (``docs/authors.md``), checked by its build: chapter names, placed scenarios, own pages.

Each broken rule is one sentence naming the module or page (and line) and what to do, logged as a warning
(``--strict`` fails). A chapter whose scenarios are not known (it could not be imported) is checked by name only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath

from primer.book._markers import scan

_CHAPTER = re.compile(r"ch(?P<number>\d{2,})_[a-z][a-z0-9_]*")


def check(package: str, scenarios: Mapping[str, Sequence[str] | None], pages: Mapping[str, str]) -> list[str]:
    """Every broken rule, one sentence each; ``scenarios`` None when not known, ``pages`` by name (``docs/x.md``)."""
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
    numbered: dict[int, list[str]] = {}
    for chapter in chapters:
        if named := _CHAPTER.fullmatch(chapter):
            numbered.setdefault(int(named["number"]), []).append(chapter)
        else:
            problems.append(
                f"{package}.{chapter}: a chapter module is named chNN_name: `ch`, its place in the book in two "
                "digits, `_` and a name in lower case (ch01_first_steps). Rename it; a module of the package "
                "that is not a chapter (a helper) has a name that starts with `_`."
            )
    for expected, (number, same) in enumerate(sorted(numbered.items()), start=1):
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
