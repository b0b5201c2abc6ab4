"""A model's reply as a reader expects it: its Markdown rendered, safely, the raw text one click away.

Each reply below is put in the last turn of a live ch05 run and the chapter
rendered as a page shows it (payloads inline), then read back as a tree: what
the rendered reply holds, and what it must never hold.
"""

from __future__ import annotations

import re
import sys

import pytest

from primer import summary
from primer.book._render import render_payloads, render_traces
from primer.book._render_markdown import ReplyMarkdown
from primer.book._source import ChapterTraces, LiveStatus
from primer.inert import _page_controls, clean
from primer.redact import Redactor
from primer.trace import ChapterRun
from tests import secret_forms
from tests.test_render_data import LATER, Node, live_chapter, mock_chapter, parse

CHAPTER = "ch05_loop_endings"
KEY = "sk-reply-leak-4b1d9e0c77"
ANCHOR = f"{CHAPTER}-within_token_limit-live-turn-3-model"


def with_reply(text: str) -> ChapterTraces:
    """ch05's traces, the live run's last reply saying ``text``."""
    live = live_chapter(CHAPTER)
    scenario = live.scenarios[0]
    last = scenario.turns[-1]
    assert last.model_call.reply is not None
    reply = last.model_call.reply.model_copy(update={"content": text})
    turn = last.model_copy(update={"model_call": last.model_call.model_copy(update={"reply": reply})})
    changed = scenario.model_copy(update={"turns": [*scenario.turns[:-1], turn]})
    run = ChapterRun.model_validate(
        {**live.model_dump(), "scenarios": [changed.model_dump(), *live.model_dump()["scenarios"][1:]]}
    )
    return ChapterTraces(CHAPTER, mock_chapter(CHAPTER), run, LiveStatus("current"))


def reply_cell(text: str) -> tuple[Node, str]:
    """The reply's cell in the model call, and the chapter's HTML."""
    html = render_traces(with_reply(text))
    call = parse(html).by_id(ANCHOR)
    rows = [row for table in call.find("table", class_="tr-msgs") for row in table.find("tr")]
    [cell] = [row.find("td")[-1] for row in rows if row.find("td") and row.find("td")[1].text == "ai"][-1:]
    return cell, html


def rendered(cell: Node) -> Node:
    [section] = cell.find("section", class_="tr-md")
    return section


def test_a_replys_markdown_is_rendered_and_its_raw_text_is_one_click_away() -> None:
    text = "We're lowest on **butter**, see [the shelf](https://shop.example/butter?a=1&b=2).\n\n- one\n- two"
    cell, _ = reply_cell(text)
    shown = rendered(cell)
    assert [n.text for n in shown.find("strong")] == ["butter"]
    assert [n.text for n in shown.find("li")] == ["one", "two"]
    [link] = shown.find("a")
    assert link.attrs == {"href": "https://shop.example/butter?a=1&b=2", "rel": "noopener nofollow"}
    # The raw text, as the model wrote it, in a fold that works without JavaScript.
    [raw] = cell.find("details", class_="tr-raw")
    assert raw.summary() == "raw text"
    [pre] = raw.find("pre")
    assert pre.attrs["id"] == f"{ANCHOR}-raw"
    assert pre.text == text


def test_a_plain_reply_is_shown_once_as_it_is() -> None:
    cell, _ = reply_cell("Butter, at 3.10.\n\nThere is only one left.")
    assert not cell.find("section")
    assert not cell.find("details")
    assert cell.text == "Butter, at 3.10.\n\nThere is only one left."


@pytest.mark.parametrize(
    ("hostile", "shown_as"),
    [
        ("<script>window.__pwned = 1</script> **done**", "<script>window.__pwned = 1</script> done"),
        ('<img src=x onerror="alert(1)"> **b**', '<img src=x onerror="alert(1)"> b'),
        ("[click](javascript:alert(1)) **b**", "click b"),
        ("[click](JaVaScRiPt:alert(1)) **b**", "click b"),
        ("[click](&#106;avascript:alert(1)) **b**", "click b"),
        ("[click](jav&#x09;ascript:alert(1)) **b**", "click b"),
        ("[click](data:text/html;base64,PHNjcmlwdD4=) **b**", "click b"),
        ("[click][1] **b**\n\n[1]: javascript:alert(1)", "click b"),
        ("<a href='javascript:alert(1)'>x</a> **b**", "<a href='javascript:alert(1)'>x</a> b"),
        ("&lt;b&gt;not bold&lt;/b&gt; &amp; **b**", "<b>not bold</b> & b"),
        ("<someone@example.com> **b**", "<someone@example.com> b"),
        ("\x02wzxhzdk:0\x03 **b**", "\ufffdwzxhzdk:0\ufffd b"),
    ],
)
def test_a_hostile_reply_is_text_and_its_links_run_no_script(hostile: str, shown_as: str) -> None:
    cell, html = reply_cell(hostile)
    shown = rendered(cell)
    assert " ".join(shown.text.split()) == shown_as
    tags = {n.tag for n in shown.elements()}
    assert tags <= {"p", "strong", "em", "span", "a", "code"}, tags
    for node in parse(html).elements():
        assert not [name for name in node.attrs if name.startswith("on")], node
        href = re.sub(r"[\s\x00-\x20]", "", node.attrs.get("href") or "").lower()
        assert not href.startswith(("javascript:", "data:")), node
        assert node.tag not in ("img", "svg", "iframe"), node
        assert node.tag != "script" or node.source == LATER, node  # the renderer's own only
    # Every link a reply makes is to http(s) and says so.
    assert all(a.attrs.get("rel") == "noopener nofollow" for a in shown.find("a"))
    assert "\x02" not in html
    assert "\x03" not in html


def test_an_image_is_not_loaded_but_linked_and_a_heading_is_a_bold_line() -> None:
    cell, _ = reply_cell("# Prices\n\n![a cat](https://shop.example/cat.png) ![x](data:image/png;base64,AAAA)")
    shown = rendered(cell)
    assert not shown.find("img")
    assert not [n for n in shown.elements() if re.fullmatch(r"h\d", n.tag)]
    [heading, images] = shown.find("p")
    assert heading.attrs == {"class": "tr-md-h"}
    assert heading.text == "Prices"
    [link] = images.find("a")
    assert link.attrs == {"href": "https://shop.example/cat.png", "rel": "noopener nofollow"}
    assert link.text == "image: a cat"
    assert "image: x" in images.text  # an address that could run script is no link at all


def test_a_replys_code_block_is_escaped_and_has_an_id_for_its_copy_button() -> None:
    cell, _ = reply_cell("Run this:\n\n```python\nprint('<b>hi</b>')\n```\n\nand again:\n\n    echo <i>")
    blocks = rendered(cell).find("pre")
    assert [b.attrs.get("id") for b in blocks] == [f"{ANCHOR}-raw-code-1", f"{ANCHOR}-raw-code-2"]
    assert [b.text for b in blocks] == ["print('<b>hi</b>')\n", "echo <i>\n"]
    assert not [n for b in blocks for n in b.elements() if n.tag not in ("code",)]


def test_a_key_in_a_reply_stays_redacted_rendered_and_raw() -> None:
    # As recording redacts a reply (primer.redact); rendering it must not bring the key back.
    said = f"Your key is **{KEY}**, and [here it is](https://shop.example/?key={KEY})."
    cell, html = reply_cell(Redactor([KEY]).text(said))
    assert KEY not in html
    assert "[secret]" in rendered(cell).text
    assert "[secret]" in cell.find("details", class_="tr-raw")[0].text
    # And the payload page the chapter's page fills its payloads in from.
    assert KEY not in render_payloads(with_reply(Redactor([KEY]).text(said)))


def test_the_converter_is_reused_within_a_render_and_holds_nothing_over() -> None:
    # One Python-Markdown instance a thread, reset for each reply: a reference defined in one is not known in the next.
    shown = ReplyMarkdown()
    first = shown("[a][r] **x**\n\n[r]: https://one.example/", "a")
    second = shown("[a][r] **y**", "b")
    assert 'href="https://one.example/"' in str(first)
    assert second is not None
    assert "href" not in second
    assert "[a][r]" in second


# A key split by markup (``sk-…4b1d**9e0c77**``): the recorder scrubs it, and a trace recorded without the
# key known (frozen before, or by another build) reaches the page as written, which must not join it.
SPLIT = [f"{KEY[:-6]}**{KEY[-6:]}**", f"**{KEY[:-6]}**{KEY[-6:]}", f"{KEY[:-6]}`{KEY[-6:]}`", f"{KEY[:-6]}*{KEY[-6:]}*"]
SPLIT += [f"{KEY[:-6]}&#{ord(KEY[-6])};{KEY[-5:]}", f"{KEY[:-6]}&#x{ord(KEY[-6]):x};{KEY[-5:]}"]
SPLIT += [f"{KEY[:3]}**{KEY[3:]}**", f"[{KEY[:-6]}](https://shop.example/){KEY[-6:]}", f"{KEY[:-6]}<em>{KEY[-6:]}</em>"]


@pytest.mark.parametrize("known", [True, False], ids=["key known to the build", "key unknown"])
@pytest.mark.parametrize("split", SPLIT)
def test_a_key_split_by_markup_is_not_joined_on_the_page(
    split: str, known: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if known:
        monkeypatch.setenv("PRIMER_API_KEY", KEY)
    else:
        monkeypatch.delenv("PRIMER_API_KEY", raising=False)
    said = f"Your key is {split}, **keep it**."
    assert KEY[-6:] not in Redactor([KEY]).text(said)  # recorded with the key known, it is scrubbed
    cell, html = reply_cell(said)
    page = parse(html)
    # What a reader sees (text, character references read): never the key whole, not in a turn's folded line either.
    assert KEY not in page.text
    if "<em>" not in split:  # a tag written as text stays text: rendering joins nothing
        assert not cell.find("section", class_="tr-md")  # the raw text, escaped, in place of the rendered reply
    assert said in cell.text
    turn = page.by_id(ANCHOR.removesuffix("-model"))
    assert KEY not in turn.summary()
    assert KEY not in parse(render_payloads(with_reply(said))).text


def test_a_key_in_any_form_split_by_markup_is_not_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every encoded form the redactor knows (hex, base64, percent-encoded, ...), split inside a word.
    monkeypatch.setenv("PRIMER_API_KEY", KEY)
    for name, form in secret_forms.forms(KEY).items():
        _, html = reply_cell(Redactor([KEY]).text(f"look: {form[:5]}**{form[5:]}** and **more**"))  # as recorded
        assert not secret_forms.leaks(parse(html).text, [KEY]), name
    # Spaced out, one letter bold: a reader sees only the letters, and so does the recorder's redactor.
    spaced = " ".join(KEY[:4]) + " **" + KEY[4] + "** " + " ".join(KEY[5:])
    assert Redactor([KEY]).text(spaced) == "[secret]"
    cell, _ = reply_cell(f"{spaced} and **more**")
    assert not cell.find("section", class_="tr-md")
    assert Redactor([KEY]).text(" ".join(KEY)) != " ".join(KEY)  # what the reader would have seen is a key


def test_a_folded_line_shows_a_reply_as_a_reader_reads_it_and_the_terminal_as_written() -> None:
    said = "We're lowest on **butter**, see [the shelf](https://shop.example/) and `milk`."
    traces = with_reply(said)
    page = parse(render_traces(traces))
    line = page.by_id(ANCHOR.removesuffix("-model")).summary()
    assert "responded with: We're lowest on butter, see the shelf and milk." in line
    assert "responded with: We're lowest on butter" in page.by_id(ANCHOR).summary()
    assert "*" not in line
    # The side-by-side view words the turn the same way.
    assert "lowest on butter, see" in page.by_id(f"{CHAPTER}-within_token_limit-compare").text
    # The terminal (primer run, primer.summary) keeps the text as the model wrote it.
    assert traces.live is not None
    assert f"responded with: {said}" in summary.turn_line(traces.live.scenarios[0].turns[-1])


@pytest.mark.parametrize("beyond_ascii", [False, True], ids=["ascii text", "text beyond ascii"])
def test_clean_replaces_every_character_its_table_names_and_no_other(beyond_ascii: bool) -> None:
    # ASCII text is translated, any other searched for the table's characters (as ranges): the same result.
    last = 0x7F if not beyond_ascii else sys.maxunicode
    every = "".join(chr(code) for code in range(last + 1) if not 0xD800 <= code <= 0xDFFF)
    controls = _page_controls()[0]
    assert clean(every) == "".join(controls.get(ord(char), char) for char in every)
    assert clean("tab\there, → kept") == "tab\there, → kept"
