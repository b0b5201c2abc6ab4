"""The extension as Python-Markdown and MkDocs use it: markers found, errors shown, never raised."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import markdown
import pytest

from primer.book import markdown as extension_module
from primer.book._markers import Marker
from primer.book.markdown import NO_KEY, MockRunSource, TraceExtension, makeExtension
from primer.chapters import chapter_names
from primer.errors import ConfigError
from tests.books import placeholder
from tests.test_render_data import FixtureSource, mock_chapter, parse

ROOT = Path(__file__).resolve().parent.parent


def test_plain_markdown_by_name_runs_the_mock_scenarios() -> None:
    html = markdown.markdown("# Ch\n\n::: trace ch09_who_retries\n", extensions=["primer.book.markdown"])
    tree = parse(html)
    for scenario in mock_chapter("ch09_who_retries").scenarios:
        assert tree.by_id(f"ch09_who_retries-{scenario.name}-mock").tag == "details"
    assert NO_KEY in tree.find(class_="tr-status")[0].text
    assert tree.find("h1")[0].text == "Ch"


def test_one_scenario_marker_shows_only_that_scenario() -> None:
    tree = parse(markdown.markdown("::: trace ch05_loop_endings tokens_exhausted", extensions=["primer.book.markdown"]))
    assert [s.attrs["id"] for s in tree.find("section")] == ["ch05_loop_endings-tokens_exhausted"]


def test_unknown_chapter_and_scenario_show_an_error_listing_what_exists(caplog: pytest.LogCaptureFixture) -> None:
    text = "Before.\n\n::: trace no_such_chapter\n\n::: trace ch09_who_retries no_such_scenario\n\nAfter."
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer.book"):
        tree = parse(markdown.markdown(text, extensions=["primer.book.markdown"]))
    errors = tree.find("div", class_="tr-failed")
    assert len(errors) == 2
    assert all(name in errors[0].text for name in chapter_names())
    assert "::: trace no_such_chapter" in errors[0].text
    for scenario in mock_chapter("ch09_who_retries").scenarios:
        assert scenario.name in errors[1].text
    assert [p.text for p in tree.find("p") if p.text in ("Before.", "After.")] == ["Before.", "After."]
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 2


def test_a_source_that_breaks_shows_an_error_and_the_page_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def traces(self, chapter: str) -> None:
            raise ValueError("<b>disk</b> on fire")

    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer.book"):
        html = markdown.Markdown(extensions=[TraceExtension(source=Broken())]).convert(
            "::: trace ch09_who_retries\n\nok"
        )
    tree = parse(html)
    assert "ValueError: <b>disk</b> on fire" in tree.find("div", class_="tr-failed")[0].text
    assert not tree.find("b")
    assert tree.find("p")[-1].text == "ok"
    assert "ch09_who_retries" in caplog.text


def test_markers_in_code_stay_code() -> None:
    text = "```\n::: trace ch09_who_retries\n```\n\n    ::: trace ch09_who_retries\n"
    source = FixtureSource()
    html = markdown.Markdown(extensions=["fenced_code", TraceExtension(source=source)]).convert(text)
    tree = parse(html)
    assert not tree.find(class_="tr")
    assert [c.text.strip() for c in tree.find("code")] == ["::: trace ch09_who_retries"] * 2
    assert source.asked == []


def test_a_marker_inside_a_paragraph_block_or_an_admonition_is_found() -> None:
    text = (
        "Text before\n::: trace ch05_loop_endings tokens_exhausted\ntext after\n\n"
        "!!! note\n    ::: trace ch05_loop_endings"
    )
    html = markdown.Markdown(extensions=["admonition", TraceExtension(source=FixtureSource())]).convert(text)
    tree = parse(html)
    assert [p.text for p in tree.find("p") if p.text in ("Text before", "text after")] == ["Text before", "text after"]
    assert tree.find("p")[0].text == "Text before"
    admonition = tree.find("div", class_="admonition")[0]
    assert admonition.find("div", class_="tr-chapter")
    assert len(tree.find("div", class_="tr-chapter")) == 2


def test_the_chapter_head_leads_only_the_first_marker_of_a_chapter() -> None:
    text = "::: trace ch09_who_retries service_is_busy\n\nProse.\n\n::: trace ch09_who_retries service_says_no\n"
    md = markdown.Markdown(extensions=[TraceExtension(source=FixtureSource())])
    for _ in range(2):  # and again for the next page
        tree = parse(md.convert(text))
        chapters = tree.find("div", class_="tr-chapter")
        assert [len(c.find("div", class_="tr-head")) for c in chapters] == [1, 0]
        assert [s.attrs["id"] for s in tree.find("section")] == [
            "ch09_who_retries-service_is_busy",
            "ch09_who_retries-service_says_no",
        ]
        md.reset()


def test_the_html_is_stashed_not_reparsed_as_markdown() -> None:
    # Markdown syntax inside a trace (a tool's `**` and `[x](y)`) stays text: only a reply's is rendered,
    # by the renderer itself (test_reply_markdown), its raw text beside it.
    tree = parse(markdown.Markdown(extensions=[TraceExtension(source=FixtureSource())]).convert("::: trace hostile"))
    emphasis = tree.find("strong") + tree.find("em")
    assert emphasis
    assert all(any(a.tag == "section" and a.attrs.get("class") == "tr-md" for a in n.ancestors()) for n in emphasis)
    assert "**bold** _em_" in tree.text


def test_the_traces_are_put_back_whole_not_through_python_markdowns_stash() -> None:
    # Its postprocessor would search every trace block (tens of kilobytes) for placeholders nested in it.
    text = (
        '<div class="author">raw <em>HTML</em></div>\n\n::: trace ch09_who_retries service_is_busy\n\n'
        "- an item\n\n    ::: trace ch05_loop_endings\n"
    )
    md = markdown.Markdown(extensions=[TraceExtension(source=FixtureSource())])
    html = md.convert(text)
    assert not [block for block in md.htmlStash.rawHtmlBlocks if "tr-chapter" in block]
    assert '<div class="author">raw <em>HTML</em></div>' in html, "the page's own raw HTML is put back as before"
    assert "\x02" not in html
    assert html.count('<div class="tr tr-chapter"') == 2
    assert '<p><div class="tr tr-chapter"' not in html, "a block, not wrapped in the paragraph that held its place"
    tree = parse(html)
    assert len(tree.find("div", class_="tr-chapter")) == 2
    assert tree.find("li")[0].find("div", class_="tr-chapter"), "nested in the list item it was written in"


def test_with_traces_off_every_marker_is_a_placeholder_and_no_source_is_asked() -> None:
    class Untouchable:
        def traces(self, chapter: str) -> None:
            raise AssertionError(f"traces are off, yet {chapter} was asked for")

    text = (
        "::: trace ch_a\n\nBefore\n::: trace ch_a one\nafter\n\n!!! note\n    ::: trace ch_b\n\n"
        "::: live ch_a\nLive prose.\n::: end live\n\n```\n::: trace ch_c\n```\n\n:::trace ch_d\n"
    )
    md = markdown.Markdown(
        extensions=["admonition", "fenced_code", TraceExtension(source=Untouchable(), traces_off=True)]
    )
    html = md.convert(text)
    markers = [Marker("ch_a", None, 0), Marker("ch_a", "one", 0), Marker("ch_b", None, 0)]
    shown = [placeholder(marker) for marker in markers]
    # The same note as the hook writes without the extension, built as elements: never parsed
    # (the hook puts no raw HTML in the page), nothing stashed for Python-Markdown to put back.
    assert [html.count(each) for each in shown] == [1, 1, 1]
    assert not [block for block in md.htmlStash.rawHtmlBlocks if "primer-traces-off" in block]
    hostile = markdown.Markdown(extensions=[TraceExtension(traces_off=True)]).convert("::: trace _a_ __b__")
    assert hostile == placeholder(Marker("_a_", "__b__", 0)), "no emphasis read into the names"
    tree = parse(html)
    assert [p.text for p in tree.find("p") if p.text in ("Before", "after")] == ["Before", "after"]
    assert tree.find("div", class_="admonition")[0].find("p", class_="primer-traces-off")
    assert "Live prose." not in html
    assert "::: trace ch_c" in [code.text.strip() for code in tree.find("code")], "a fenced example stays as written"
    # A line meant as a marker that is not one is still shown as the error it is.
    assert "`:::trace ch_d` looks like a trace marker" in tree.find("div", class_="tr-failed")[0].text


def test_primer_traces_off_is_read_where_no_hook_sets_the_option(monkeypatch: pytest.MonkeyPatch) -> None:
    source = FixtureSource()
    monkeypatch.setenv("PRIMER_TRACES", " Off ")
    html = markdown.Markdown(extensions=[TraceExtension(source=source)]).convert("::: trace ch09_who_retries")
    assert html == placeholder(Marker("ch09_who_retries", None, 0))
    assert source.asked == []


def test_one_processor_registered_between_indented_code_and_mkdocstrings() -> None:
    md = markdown.Markdown(extensions=["primer.book.markdown"])
    processors = md.parser.blockprocessors
    ours = [name for name in processors._priority if name.name == "primer_trace"]
    assert len(ours) == 1
    assert 75 < ours[0].priority < processors._priority[[p.name for p in processors._priority].index("code")].priority


def test_anchors_reset_per_document_and_the_source_is_reused() -> None:
    source = FixtureSource()
    md = markdown.Markdown(extensions=[TraceExtension(source=source)])
    first = md.convert("::: trace ch05_loop_endings")
    md.reset()
    second = md.convert("::: trace ch05_loop_endings")
    assert first == second
    assert source.asked == ["ch05_loop_endings", "ch05_loop_endings"]


def test_the_default_source_runs_each_chapter_once() -> None:
    source = MockRunSource()
    assert source.traces("ch05_loop_endings") is source.traces("ch05_loop_endings")
    assert source.traces("ch05_loop_endings").live is None


def test_source_given_as_an_import_path() -> None:
    extension = makeExtension(source="tests.test_render_data:FixtureSource")
    assert isinstance(extension, TraceExtension)
    assert isinstance(extension.source, FixtureSource)
    html = markdown.Markdown(extensions=[makeExtension(source="no.such.module:thing")]).convert(
        "::: trace ch05_loop_endings"
    )
    assert "could not be imported" in parse(html).find("div", class_="tr-failed")[0].text


def test_an_unknown_option_is_an_error_naming_it_and_listing_the_options() -> None:
    with pytest.raises(ConfigError, match=r"no option 'chapter'\. Its options are: chapters, warn_missing"):
        markdown.markdown(
            "x", extensions=["primer.book.markdown"], extension_configs={"primer.book.markdown": {"chapter": "x"}}
        )
    assert makeExtension(chapters="mybook.chapters").getConfig("chapters") == "mybook.chapters"


def test_module_exports() -> None:
    assert set(extension_module.__all__) >= {"TraceExtension", "makeExtension"}


@pytest.mark.slow
def test_mkdocs_build_keeps_payloads_out_of_the_search_index(tmp_path: Path) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    docs = tmp_path / "docs"
    (docs / "assets").mkdir(parents=True)
    for name in ("traces.css", "traces.js"):
        shutil.copy(ROOT / "primer" / "book" / "assets" / name, docs / "assets" / name)
    (docs / "index.md").write_text("# Who retries\n\nProse about retries.\n\n::: trace ch09_who_retries\n", "utf-8")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nsite_url: http://127.0.0.1/\ntheme:\n  name: material\n  font: false\n"
        "plugins: [search]\nextra_css: [assets/traces.css]\nextra_javascript: [assets/traces.js]\n",
        "utf-8",
    )
    config = load_config(
        str(tmp_path / "mkdocs.yml"),
        markdown_extensions=["tables", {"primer.book.markdown": {"source": FixtureSource()}}],
    )
    build(config)
    index = json.loads((tmp_path / "site" / "search" / "search_index.json").read_text("utf-8"))
    text = " ".join(doc["text"] + " " + doc["title"] for doc in index["docs"])
    page = (tmp_path / "site" / "index.html").read_text("utf-8")
    assert "ch09_who_retries-service_is_busy-live-turn-2" in page
    # Summary lines are found by search ...
    assert "Prose about retries" in text
    assert "asked for: price_of" in text
    # ... the chapter's head is not (its switch, totals and download links read as a result's text).
    assert "mock turns=9" not in text
    assert "show:" not in text
    # ... payloads are not: the system prompt, schemas, headers, JSON bodies.
    for payload in ("You answer briefly and plainly", "GroceryItem", "x-amz-cf-pop", "chatcmpl", 'finish_reason"'):
        assert payload not in text, payload
