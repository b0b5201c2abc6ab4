"""Page weight grows with what happened, not with turns squared."""

from __future__ import annotations

import markdown

from primer.book._source import ChapterTraces, LiveStatus
from primer.book.markdown import TraceExtension
from primer.trace import ChapterRun
from tests.test_render_data import long_run, parse


class _One:
    """A source holding one generated scenario."""

    def __init__(self, turns: int) -> None:
        self.run = ChapterRun(chapter="long", mode="mock", scenarios=[long_run(turns)])

    def traces(self, chapter: str) -> ChapterTraces:
        return ChapterTraces(chapter, self.run, None, LiveStatus("missing", reason="no key yet"))


def weight(turns: int) -> int:
    md = markdown.Markdown(extensions=[TraceExtension(source=_One(turns))])
    return len(md.convert("::: trace long\n").encode("utf-8"))


def test_a_40_turn_scenario_weighs_at_most_25_times_a_2_turn_one() -> None:
    two, forty = weight(2), weight(40)
    assert forty <= 25 * two, f"{forty} bytes for 40 turns, {two} for 2: {forty / two:.1f} times"


def test_weight_is_linear_in_turns() -> None:
    # Doubling the turns at most doubles the page, plus a little: nothing is
    # repeated once per earlier turn.
    forty, eighty = weight(40), weight(80)
    assert eighty <= 2.1 * forty, f"{eighty / forty:.2f} times for twice the turns"


def test_the_long_run_is_all_there() -> None:
    md = markdown.Markdown(extensions=[TraceExtension(source=_One(40))])
    tree = parse(md.convert("::: trace long\n"))
    assert len(tree.find("div", class_="tr-turn")) == 40
    assert len(tree.find("details", class_="tr-tools")) == 1
    assert len(tree.find("details", class_="tr-whole")) == 39
