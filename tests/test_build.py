"""Real `mkdocs build` runs of small books: what runs, what is reused, what is reported."""

from __future__ import annotations

import html
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from primer.book._markers import Marker
from primer.book._plugin import EXTENSION, TraceBookPlugin
from primer.book.markdown import TraceExtension
from primer.summary import chapter_line, scenario_line
from primer.trace import SCHEMA_VERSION, ChapterRun
from tests.books import ALPHA, BETA, BROKEN, PAGE, edit, make_book, placeholder

pytestmark = pytest.mark.slow

#: The markers of the page ``test_traces_off_shows_a_placeholder_wherever_the_page_has_a_marker`` builds.
OFF_MARKERS = (("ch_alpha", None), ("ch_beta", None), ("ch_alpha", "asks_price"))


def _published(book, chapter: str) -> dict:
    return json.loads((book.root / "site" / "traces" / f"{chapter}.json").read_text())


@pytest.mark.parametrize("plugin", [None, ""], ids=["hook", "plugin"])
def test_rebuilds_run_only_what_changed(tmp_path, plugin):
    book = make_book(tmp_path, plugin=plugin)

    first = book.build()
    assert first.returncode == 0, first.log
    assert first.count() == "traces: ran 3, reused 0"
    page = book.page()
    published = _published(book, "ch_alpha")
    alpha = ChapterRun.model_validate(published["mock"])
    # The page shows what the trace holds, whichever renderer draws it.
    assert f"turns={alpha.turns} · messages={alpha.messages}" in html.unescape(page)  # beyond ASCII: references
    assert html.escape(scenario_line(alpha.scenario("asks_price")).split(" · ")[0]) in page
    assert "scenario greets" in page
    # Untrusted text from the model is escaped, never markup (a reply is in its run, on the payload page).
    shown = book.shown()
    assert "<b>1.20</b>" not in shown
    assert "&lt;b&gt;1.20&lt;/b&gt;" in shown
    # Both modes are published for download; the mock cache stays out of the site.
    assert set(published) >= {"chapter", "mock", "live", "live_status"}
    assert published["live"] is None
    assert published["live_status"]["state"] == "missing"
    cache = book.mock_file("ch_alpha")
    assert ChapterRun.model_validate_json(cache.read_text()).source_hash == alpha.source_hash
    assert not list((book.root / "site").rglob("*.mock.json"))
    stamp = cache.stat().st_mtime_ns

    second = book.build()
    assert second.returncode == 0, second.log
    assert second.count() == "traces: ran 0, reused 3"
    assert cache.stat().st_mtime_ns == stamp, "an unchanged trace must not be written again"

    edit(book.docs / "index.md", "Some prose.", "Some other prose.")
    prose = book.build()
    assert prose.count() == "traces: ran 0, reused 3"
    assert "Some other prose." in book.page()

    edit(book.chapter("ch_beta"), "Beta says hi.", "Beta says hello again.")
    code = book.build()
    assert code.count() == "traces: ran 1, reused 2"
    assert "Beta says hello again." in book.shown()
    assert cache.stat().st_mtime_ns == stamp, "editing beta must leave alpha's trace alone"


def test_without_the_extension_named_the_hook_adds_it_as_the_plugin_does(tmp_path):
    book = make_book(tmp_path, renderer=False)
    # Not --strict: with no extension to take the option, the book's rules are on, and this
    # test book breaks them (ch_alpha's traces on index.md).
    done = book.build()
    assert done.returncode == 0, done.log
    assert all("traces: docs/index.md line" not in w or "its own chapter's" in w for w in done.lines("WARNING"))
    page = book.shown()
    assert "scenario asks_price" in page
    assert "Milk is &lt;b&gt;1.20&lt;/b&gt; &amp; fresh." in page
    assert "<b>1.20</b>" not in page
    assert "::: trace" not in page.split("<code>")[0], "every marker outside code was rendered"


@pytest.mark.parametrize("plugin", [None, ""], ids=["hook", "plugin"])
def test_a_scenario_that_raises_is_shown_and_fails_strict(tmp_path, plugin):
    page = PAGE + "\n::: trace ch_broken\n"
    book = make_book(
        tmp_path, {"ch_alpha": ALPHA, "ch_beta": BETA, "ch_broken": BROKEN}, {"index": page}, plugin=plugin
    )

    done = book.build()
    assert done.returncode == 0, done.log
    warnings = done.lines("WARNING")
    assert any("ch_broken / explodes (mock)" in w and "scenario_error" in w for w in warnings), done.log
    assert len(warnings) == 1, done.log
    shown = book.page()
    assert "scenario explodes" in shown
    assert "the &lt;scenario&gt; broke on purpose" in shown
    assert "<scenario>" not in shown
    # The other chapters were not held up by it.
    assert "scenario greets" in shown

    # Reused from the cache, the failure is still reported: --strict keeps failing.
    strict = book.build("--strict")
    assert strict.returncode != 0
    assert strict.count() == "traces: ran 0, reused 4"
    assert any("ch_broken / explodes (mock)" in w for w in strict.lines("WARNING"))

    # Fixing the chapter re-runs it alone, and the build passes --strict again.
    book.write_chapter("ch_broken", BETA.replace("greets", "fixed"))
    fixed = book.build("--strict")
    assert fixed.returncode == 0, fixed.log
    assert fixed.count() == "traces: ran 1, reused 3"


def test_a_broken_marker_inside_an_admonition_or_a_list_item_fails_strict_naming_page_and_line(tmp_path):
    # Indented four spaces, these are markers only to the extension, which
    # parses the page as Markdown does; the hook's own scan never sees them.
    page = (
        "# Nested\n\n"
        "!!! note\n    ::: trace ch_alpha asks_price\n\n"  # valid: shown, no warning
        "!!! note\n    ::: trace ch_alpha nosuch\n\n"  # line 7
        "- an item\n\n    :::trace ch_beta\n\n"  # line 11
        "::: trace ch_beta nosuch\n\n"  # line 13: the hook's own warning, said once
        "    ::: trace ch_alpha indented_code\n"  # indented code: an example, not a marker
    )
    book = make_book(tmp_path, pages={"index": page})
    config = book.root / "mkdocs.yml"
    config.write_text(config.read_text() + "  - admonition\n")

    done = book.build("--strict")
    assert done.returncode != 0, done.log
    warnings = done.lines("WARNING")
    assert len(warnings) == 3, done.log
    assert any("index.md line 7: the marker `::: trace ch_alpha nosuch`" in w for w in warnings), done.log
    assert any("index.md line 11: `:::trace ch_beta` looks like a trace marker" in w for w in warnings), done.log
    assert any("index.md line 13" in w and "ch_beta nosuch" in w for w in warnings), done.log
    shown = book.page()
    assert shown.count('class="tr tr-failed"') == 3
    assert "scenario asks_price" in shown  # the valid nested marker
    assert "::: trace ch_alpha indented_code" in shown  # left as code
    # With traces off only malformed markers are checked: the nested one, said once.
    off = book.build("--strict", PRIMER_TRACES="off")
    assert off.returncode != 0, off.log
    assert [w.split("traces: ", 1)[1][:35] for w in off.lines("WARNING")] == ["docs/index.md line 11: `:::trace ch"]
    # Fixed, the build passes --strict.
    (book.docs / "index.md").write_text(page.replace(" nosuch", "").replace(":::trace", "::: trace"))
    fixed = book.build("--strict")
    assert fixed.returncode == 0, fixed.log


def test_a_corrupt_trace_is_reported_and_replaced(tmp_path):
    book = make_book(tmp_path)
    assert book.build().returncode == 0
    cache = book.mock_file("ch_alpha")
    good = ChapterRun.model_validate_json(cache.read_text())

    cache.write_text('{"schema_version": 1, "chapter": "ch_alpha", "mo')
    (book.entry("ch_alpha") / "shown.json").unlink()  # a build that finds its entry whole reads no trace: this one must
    # The build's own cache, mended as it goes: said as information, nothing for --strict to fail on.
    broken = book.build("--strict")
    assert broken.returncode == 0, broken.log
    assert not broken.lines("WARNING")
    [said] = broken.lines("runs again and is replaced")
    assert str(cache) in said
    assert "not valid JSON" in said
    assert broken.count() == "traces: ran 2, reused 1"
    assert ChapterRun.model_validate_json(cache.read_text()).source_hash == good.source_hash

    cache.write_text(json.dumps({**good.model_dump(mode="json"), "schema_version": 99}))
    (book.entry("ch_alpha") / "shown.json").unlink()
    future = book.build("--strict")
    assert future.returncode == 0, future.log
    assert any(str(cache) in w and "schema version is 99" in w for w in future.lines("INFO")), future.log
    assert future.count() == "traces: ran 2, reused 1"
    assert json.loads(cache.read_text())["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("plugin", [None, ""], ids=["hook", "plugin"])
def test_markers_naming_nothing_are_warnings_naming_the_page(tmp_path, plugin):
    page = "# Odd\n\n::: trace ch_nowhere\n\n::: trace ch_alpha no_such_scenario\n"
    book = make_book(tmp_path, pages={"index": PAGE, "odd": page}, plugin=plugin)

    done = book.build()
    assert done.returncode == 0, done.log
    # One warning per marker, the hook's: it names the page (the renderer,
    # which cannot, leaves these to it and only shows the error on the page).
    assert len(done.lines("WARNING")) == 2, done.log
    warnings = done.lines("docs/odd.md")
    assert len(warnings) == 2, done.log
    chapter, scenario = sorted(warnings, key=lambda w: "no_such_scenario" in w)
    assert "docs/odd.md line 3" in chapter
    assert "ch_nowhere" in chapter
    assert "ch_alpha, ch_beta" in chapter
    assert "docs/odd.md line 5" in scenario
    assert "answers_at_once" in scenario
    assert "asks_price" in scenario
    # The example marker in PAGE's code block is documentation, not a request.
    assert "CHAPTER" not in done.log
    odd = book.page("odd")
    assert "ch_alpha, ch_beta" in odd, "the page shows the error too"
    assert "answers_at_once" in odd
    # Rendered from the cache, the markers are reported all the same.
    again = book.build("--strict")
    assert again.returncode != 0
    assert len(again.lines("WARNING")) == 2, again.log


def test_a_warm_build_renders_nothing_and_search_skips_payloads(tmp_path):
    book = make_book(tmp_path, theme="material")
    first = book.build("--verbose")
    assert first.returncode == 0, first.log
    [share] = first.lines("the machinery's share of this build")
    assert "markers rendered 2, reused 0" in share
    # The chapters' own code (importing and running them) is counted apart, out of the machinery's prepare.
    parts = re.search(r"share of this build: ([0-9.]+) ms \(prepare ([0-9.]+), .*own code ([0-9.]+) ms$", share)
    assert parts is not None, share
    assert float(parts[3]) > 0
    assert float(parts[2]) >= 0
    page = book.page()

    second = book.build("--verbose")
    [share] = second.lines("the machinery's share of this build")
    assert "markers rendered 0, reused 2" in share
    assert "own code" not in share  # nothing of the chapters ran
    assert book.page() == page

    # Payloads are in the chapter's payload page, which the page links to, and search sees only summary lines.
    system = "You answer briefly and plainly."
    assert system not in page
    assert 'href="traces/ch_alpha.payloads.html#' in page
    assert system in (book.root / "site" / "traces" / "ch_alpha.payloads.html").read_text()
    index = json.loads((book.root / "site" / "search" / "search_index.json").read_text())
    text = " ".join(doc["title"] + " " + doc["text"] for doc in index["docs"])
    assert "scenario asks_price" in text
    assert "Some prose." in text
    assert system not in text

    # A chapter's new trace renders its marker again, and only it.
    edit(book.chapter("ch_beta"), "Beta says hi.", "Beta says hello.")
    third = book.build("--verbose")
    [share] = third.lines("the machinery's share of this build")
    assert "markers rendered 1, reused 1" in share
    assert "Beta says hello." in book.shown()


@pytest.mark.parametrize("plugin", [None, ""], ids=["hook", "plugin"])
def test_traces_off_runs_nothing_and_shows_a_placeholder(tmp_path, plugin):
    book = make_book(tmp_path, plugin=plugin)
    done = book.build(PRIMER_TRACES="off")
    assert done.returncode == 0, done.log
    assert done.count().startswith("traces: off")
    page = book.page()
    assert "PRIMER_TRACES=off" in page
    assert "scenario asks_price" not in page
    assert not (book.root / ".cache").exists()
    assert not (book.root / "site" / "traces").exists()
    # The stylesheet that sets the placeholders apart, served from the package; no script, nothing to drive.
    assert 'href="assets/trace-book/traces.css"' in page
    assert "primer-traces-off" in (book.root / "site" / "assets" / "trace-book" / "traces.css").read_text()
    assert "traces.js" not in page
    assert not (book.root / "site" / "assets" / "trace-book" / "traces.js").exists()


def test_traces_off_shows_a_placeholder_wherever_the_page_has_a_marker(tmp_path):
    page = (
        "# Off\n\n::: trace ch_alpha\n\n!!! note\n    ::: trace ch_beta\n\n"
        "- an item\n\n    ::: trace ch_alpha asks_price\n\n"
        "::: live ch_alpha\nIn the live run, look.\n::: end live\n\n```\n::: trace ch_beta\n```\n"
    )
    shown = [placeholder(Marker(chapter, scenario, 0)) for chapter, scenario in OFF_MARKERS]
    for renderer in (True, False):
        book = make_book(tmp_path / str(renderer), pages={"index": page}, renderer=renderer)
        config = book.root / "mkdocs.yml"
        extensions = "\n" if renderer else "\nmarkdown_extensions:\n"
        config.write_text(config.read_text().rstrip("\n") + extensions + "  - admonition\n")
        done = book.build("--strict", PRIMER_TRACES="off")
        assert done.returncode == 0, done.log
        built = book.page()
        # The extension shows a placeholder for each marker (inside an admonition or a list too),
        # named in mkdocs.yml or not (the hook adds it).
        assert [built.count(each) for each in shown] == [1, 1, 1], built
        assert "In the live run" not in built
        assert "::: trace ch_beta" in built, "the fenced example stays as written"
        assert "scenario asks_price" not in built
        assert not (book.root / ".cache").exists()


def test_with_traces_off_the_hook_leaves_the_markers_to_the_extension(monkeypatch, caplog):
    # Raw HTML put in the page would go through Python-Markdown's HTML block parser and
    # MkDocs' own, on every page: the extension stashes the placeholders instead.
    monkeypatch.setenv("PRIMER_TRACES", "off")
    hook = TraceBookPlugin()
    config = SimpleNamespace(
        config_file_path=None,
        docs_dir="/book/docs",
        markdown_extensions=["toc", EXTENSION],
        mdx_configs={},
        extra_css=[],
        extra_javascript=[],
    )
    assert hook.on_config(config) is config  # type: ignore[arg-type]
    assert hook.book is None
    # The named extension is replaced by the hook's own instance, which shows the placeholders.
    [toc, extension] = config.markdown_extensions
    assert toc == "toc"
    assert isinstance(extension, TraceExtension)
    assert extension.off
    assert not extension.getConfig("warn_missing")
    assert (config.extra_css, config.extra_javascript) == (["assets/trace-book/traces.css"], [])
    text = "# Ch\n\n::: trace ch_alpha\n\n:::trace ch_alpha\n"
    page = SimpleNamespace(file=SimpleNamespace(src_uri="ch.md"), url="ch/")
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer"):
        assert hook.on_page_markdown(text, page=page, config=config, files=None) == text  # type: ignore[arg-type]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith("traces: docs/ch.md line 5: `:::trace ch_alpha` looks like a trace marker")
    # Without the extension named the hook adds its own, as the plugin does.
    config.markdown_extensions = ["toc"]
    hook.on_config(config)  # type: ignore[arg-type]
    [toc, extension] = config.markdown_extensions
    assert isinstance(extension, TraceExtension)
    assert extension.off


def _imported(book, **environ):
    """The modules a build of ``book`` imports (``-X importtime``), and its log."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mkdocs", "build", "--verbose"],
        cwd=book.root,
        env=book.env(**environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}, done.stderr


def test_a_warm_build_with_every_page_cached_loads_neither_pydantic_nor_the_trace_schema(tmp_path):
    # Nothing runs nor renders: importing pydantic was the largest share of a warm build (benchmarks/scale.py).
    book = make_book(tmp_path)
    assert book.build().returncode == 0
    imported, log = _imported(book)
    assert "traces: ran 0, reused" in log
    assert "primer.book._book" in imported
    assert not {"pydantic", "primer.trace", "primer.book._render"} & imported


def test_traces_off_loads_neither_the_engine_nor_pydantic(tmp_path):
    # What makes a build with traces off cost what one without the hook does (benchmarks/scale.py).
    book = make_book(tmp_path)
    imported, log = _imported(book, PRIMER_TRACES="off")
    assert "primer.book.mkdocs_hook" in imported
    loaded = {
        "pydantic",
        "primer.trace",
        "primer.settings",
        "primer.book._book",
        "primer.book._render",
        "primer.agent",
    }
    assert not loaded & imported
    # Nor is the hook called on the events of each page it has nothing to do in (MkDocs logs each call).
    called = re.findall(r"Running `(\w+)` event from plugin '[^']*traces\.py'", log)
    assert called.count("page_markdown") == len(list((book.root / "docs").glob("*.md")))  # it checks markers
    assert not {"page_content", "page_context"} & set(called)


def _frozen_from_mock(book, chapter: str) -> tuple[ChapterRun, Path]:
    """The chapter's published mock run frozen as its live trace, as a publisher would have committed one."""
    mock = ChapterRun.model_validate(_published(book, chapter)["mock"])
    live = mock.model_copy(update={"mode": "live", "model": "some-model", "recorded_at": "2025-01-02T03:04:05+00:00"})
    live.scenarios = [s.model_copy(update={"mode": "live"}) for s in live.scenarios]
    frozen = book.docs / "traces" / f"{chapter}.live.json"
    frozen.parent.mkdir(exist_ok=True)
    frozen.write_text(live.model_dump_json(indent=2) + "\n")
    return live, frozen


def test_a_live_trace_without_a_key_is_published_as_it_is(tmp_path):
    book = make_book(tmp_path)
    assert book.build().returncode == 0
    live, frozen = _frozen_from_mock(book, "ch_beta")
    before = frozen.read_bytes()

    done = book.build("--strict")  # no PRIMER_* variable is set: no key
    assert done.returncode == 0, done.log
    assert done.count() == "traces: ran 0, reused 4"
    published = _published(book, "ch_beta")
    assert published["live"]["recorded_at"] == "2025-01-02T03:04:05+00:00"
    assert published["live_status"]["state"] == "current"
    assert chapter_line(live) in html.unescape(book.page())  # its `·` as a character reference
    assert frozen.read_bytes() == before
    # The raw frozen file is published once, inside traces/ch_beta.json.
    assert not (book.root / "site" / "traces" / "ch_beta.live.json").exists()

    edit(book.chapter("ch_beta"), "Beta says hi.", "Beta says hi, changed.")
    stale = book.build()
    assert stale.returncode == 0, stale.log
    assert _published(book, "ch_beta")["live_status"]["state"] == "stale"
    assert "earlier code" in _published(book, "ch_beta")["live_status"]["reason"]
    assert frozen.read_bytes() == before
    # Made from a mock trace, it holds no wire to replay: said, naming the file.
    [warning] = stale.lines("could not be verified by replay")
    assert str(frozen) in warning
    assert "no recorded request" in warning


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_published_files_are_world_readable(tmp_path):
    book = make_book(tmp_path)
    assert book.build().returncode == 0
    mode = (book.root / "site" / "traces" / "ch_alpha.json").stat().st_mode & 0o777
    assert mode & 0o044 == 0o044


@pytest.mark.parametrize("frozen", [True, False])
def test_each_marker_of_a_chapter_that_cannot_be_imported_shows_why(tmp_path, frozen):
    # ch_beta, with a frozen live trace or none (a new author's book), and a marker naming one of its scenarios:
    # once its module stops importing, that marker shows the error (not "no scenario greets. Its scenarios are:
    # import", nor its live run as if all were well).
    book = make_book(tmp_path)
    assert book.build().returncode == 0
    if frozen:
        _frozen_from_mock(book, "ch_beta")
    edit(book.chapter("ch_beta"), '"""Chapter beta: one scenario."""', '"""Chapter beta: one scenario."""\nx = (')
    done = book.build()
    assert done.returncode == 0, done.log
    [said] = done.lines("could not be imported")
    assert "ch_beta.py, line 2)" in said, said
    page = html.unescape(book.page())
    section = page[page.index("<h2") :]  # the ## Beta section: its one marker, `::: trace ch_beta greets`
    assert f"The chapter module {book.package}.ch_beta could not be imported." in section
    assert "SyntaxError" in section
    assert "has no scenario" not in page
