"""What a live run cost, where the model's price is known: the package's table, the book's over it.

The package's table (``primer/prices.toml``) prices the models whose
traces this book shows; a book's ``mkdocs.yml`` extends or overrides it; the
table is a render option, so an edited price is a new page on the next build.
A mock run's tokens are scripted: no cost is shown for them, whatever the table.
"""

from __future__ import annotations

import datetime
import json
import re
import shutil
from pathlib import Path

import pytest

from primer import prices as _prices
from primer.book._prose import corpora, problems
from primer.book._render import render_traces
from primer.book._source import ChapterTraces, LiveStatus
from primer.cli import _book_here, summary_lines
from primer.errors import ConfigError
from primer.prices import PriceTable, default_prices, dollars
from primer.replay import read_trace
from primer.runner import run_chapter
from tests.books import REPO, edit, make_book
from tests.test_render_data import Node, parse

TRACES = REPO / "docs" / "traces"
CH09 = "ch09_who_retries"


def ch09(prices: PriceTable | None = None) -> str:
    live = read_trace(TRACES / f"{CH09}.live.json")
    return render_traces(ChapterTraces(CH09, run_chapter(CH09), live, LiveStatus("current")), prices=prices)


def lines(html: str) -> dict[str, str]:
    """The chapter's head lines and scenario lines, by mode and scenario."""
    tree = parse(html)
    found = {f"total {n.attrs['data-mode']}": n.text for n in tree.find("span", class_="tr-total")}
    for details in tree.find("details", class_="tr-scn"):
        found[details.attrs["id"].removeprefix(f"{CH09}-")] = details.summary()
    return found


def test_the_package_prices_exactly_the_models_the_books_live_traces_ran() -> None:
    models = {json.loads(path.read_text())["model"] for path in TRACES.glob("*.live.json")}
    table = default_prices()
    assert {price.model for price in table.prices} == models
    for price in table.prices:
        datetime.date.fromisoformat(price.read)
        assert (price.source or "").startswith("https://")
        assert min(price.input, price.output) > 0


def test_an_edit_to_the_package_prices_is_read_by_the_process_that_read_them_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under `mkdocs serve` the process lives on: an edited price is a new key, and must be a new price too.
    table = tmp_path / "prices.toml"
    shutil.copyfile(_prices._FILE, table)
    monkeypatch.setattr(_prices, "_FILE", table)
    before = default_prices().get("deepseek-flash")
    assert before is not None
    assert before.input != 9.5
    edit(table, "[deepseek-flash]\ninput = 0.30\n", "[deepseek-flash]\ninput = 9.5\n")
    after = default_prices().get("deepseek-flash")
    assert after is not None
    assert after.input == 9.5


def test_a_live_scenario_and_its_chapter_show_what_their_tokens_cost() -> None:
    table = PriceTable().extended(
        {"deepseek-flash": {"input": 0.30, "cached_input": 0.006, "output": 1.20, "read": "2026-12-01"}}, where="test"
    )
    found = lines(ch09(table))
    # service_is_busy: 886 in, 512 of them cached, 48 out.
    expected = ((886 - 512) * 0.30 + 512 * 0.006 + 48 * 1.20) / 1e6
    assert dollars(expected) == "$0.00017"
    assert (
        "· 886 in (512 cached) / 48 out (0 reasoning) · $0.00017 · ended: no_tool_calls"
        in found["service_is_busy-live"]
    )
    live = read_trace(TRACES / f"{CH09}.live.json")
    total = table.cost(live.scenarios)
    assert total is not None
    assert f"(266 reasoning) · {total.text} (prices read 2026-12-01)" in found["total live"]
    # The chapter's total is its scenarios' costs added up.
    assert total.dollars == pytest.approx(sum(c.dollars for s in live.scenarios if (c := table.cost([s]))))
    # The legend's title says which prices, per million tokens.
    [price] = parse(ch09(table)).find("span", class_="tr-price")
    assert "deepseek-flash at $0.30 in, $0.006 cached, $1.20 out per million tokens (read 2026-12-01)" in (
        price.attrs["title"] or ""
    )
    # No mock line shows a cost.
    assert not [text for key, text in found.items() if "mock" in key and "$" in text]


def test_a_model_not_in_the_table_shows_no_cost_not_zero() -> None:
    found = lines(ch09(PriceTable()))
    assert not [text for text in found.values() if "$" in text]
    assert "4,712 in (3,072 cached)" in found["total live"]  # the tokens are still there
    assert not parse(ch09(PriceTable())).find("span", class_="tr-price")


def test_a_mock_runs_scripted_tokens_are_never_priced() -> None:
    # ch21's mock model reports tokens; a table that priced "mock" still shows no cost for them.
    run = run_chapter("ch21_reasoning_models")
    table = default_prices().extended({"mock": {"input": 1, "output": 1, "read": "2026-11-01"}}, where="test")
    assert table.cost(run.scenarios) is None
    html = render_traces(ChapterTraces("ch21_reasoning_models", run, None, LiveStatus("missing")), prices=table)
    head = parse(html).find("span", class_="tr-total")[0].text
    assert " in / " in head
    assert "$" not in head


def test_the_books_prices_extend_and_override_the_packages() -> None:
    table = default_prices().extended(
        {
            "deepseek-flash": {"input": 3, "output": 12, "read": datetime.date(2026, 11, 2), "note": "made up"},
            "my-model": {"input": 0.5, "cached_input": 0.05, "output": 1.5, "read": "2026-11-01"},
        },
        where="mkdocs.yml",
    )
    flash = table.get("deepseek-flash")
    assert flash is not None
    assert (flash.input, flash.cached_input, flash.read) == (3.0, None, "2026-11-02")
    assert table.get("my-model") is not None
    assert table.key != default_prices().key


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ({"m": {"input": 1, "output": 1}}, "the price of `m` has read None"),
        ({"m": {"input": -1, "output": 1, "read": "2026-11-01"}}, "has input -1"),
        ({"m": {"input": "cheap", "output": 1, "read": "2026-11-01"}}, "has input 'cheap'"),
        ({"m": {"input": 1, "output": 1, "read": "last week"}}, "has read 'last week'"),
        ({"m": {"input": 1, "output": 1, "read": "2026-11-01", "currency": "EUR"}}, "has currency, which a price"),
        ({"m": 0.5}, "the price of `m` is float, not a mapping"),
        (["m"], "the prices must be a mapping of model names"),
    ],
)
def test_a_price_that_is_not_one_is_refused_naming_the_file_and_the_model(entries: object, says: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(says)) as raised:
        default_prices().extended(entries, where="mkdocs.yml, the trace-book plugin's prices")  # type: ignore[arg-type]
    assert str(raised.value).startswith("mkdocs.yml, the trace-book plugin's prices: ")
    assert "read: 2026-11-01" in str(raised.value)  # says how to write one


@pytest.mark.parametrize(
    ("amount", "text"), [(0.000173, "$0.00017"), (0.0012, "$0.0012"), (0.123, "$0.12"), (3.4, "$3.40"), (0, "$0")]
)
def test_costs_are_written_with_the_figures_that_tell_them_apart(amount: float, text: str) -> None:
    assert dollars(amount) == text


@pytest.mark.slow
def test_a_price_edited_in_mkdocs_yml_is_on_the_page_at_the_next_build(tmp_path: Path) -> None:
    # A book with ch09 and its frozen live trace; the price set, then edited, in the extension's options.
    chapter = (REPO / "primer" / "chapters" / f"{CH09}.py").read_text()
    book = make_book(tmp_path, {CH09: chapter}, {"index": f"# Retries\n\n::: trace {CH09}\n"})
    (book.docs / "traces").mkdir()
    shutil.copy(TRACES / f"{CH09}.live.json", book.docs / "traces" / f"{CH09}.live.json")
    price = "deepseek-flash: {input: 3.0, cached_input: 0.06, output: 12.0, read: 2026-11-02}"
    edit(book.root / "mkdocs.yml", "      rules: false\n", f"      rules: false\n      prices:\n        {price}\n")

    def shown() -> str:
        done = book.build()
        assert done.returncode == 0, done.log
        [total] = [n.text for n in parse_page(book.page()).find("span", class_="tr-total") if "live" in n.text]
        return total

    first = shown()
    assert first.endswith("· $0.014 (prices read 2026-11-02)"), first  # ten times the package's price
    edit(book.root / "mkdocs.yml", "output: 12.0, read: 2026-11-02", "output: 24.0, read: 2026-11-03")
    second = shown()
    assert second.endswith("· $0.022 (prices read 2026-11-03)"), second


def parse_page(html: str) -> Node:
    """The first trace block of a built page, as a tree."""
    return parse(html).find("div", class_="tr-chapter")[0]


@pytest.mark.slow
def test_a_wrong_price_in_the_plugins_options_fails_the_build_naming_the_file_and_model(tmp_path: Path) -> None:
    book = make_book(tmp_path, plugin="prices:\n  my-model: {input: 0.5, output: 1.5}")
    done = book.build()
    assert done.returncode != 0
    assert "mkdocs.yml, the trace-book plugin's prices: the price of `my-model` has read None" in done.log
    assert "Traceback" not in done.log


def test_the_prose_check_finds_a_cost_where_the_page_shows_one_and_only_there() -> None:
    live = read_trace(TRACES / f"{CH09}.live.json")

    traces = ChapterTraces(CH09, run_chapter(CH09), live, LiveStatus("current"))

    def check(text: str, prices: PriceTable) -> list[str]:
        return problems("docs/x.md", text, lambda chapter: corpora(traces, prices))

    said = "The busy service cost `· $0.00017 · ended`, in all `$0.0014 (prices read 2026-12-01)`.\n"
    page = f"# Retries\n\n::: trace {CH09}\n\n{said}"
    in_live = page.replace("The busy", f"::: live {CH09}\nThe busy") + "::: end live\n"
    assert check(in_live, default_prices()) == []
    # Beside both runs it is false for the mock, which shows no cost.
    warnings = check(page, default_prices())
    assert len(warnings) == 2
    assert all("which the mock runs do not show" in w for w in warnings)
    # With other prices, the figures the prose quotes are not the page's.
    dearer = default_prices().extended({"deepseek-flash": {"input": 1, "output": 1, "read": "2026-12-01"}}, where="t")
    assert len(check(in_live, dearer)) == 2


def test_the_terminal_shows_a_live_runs_cost_as_the_page_does() -> None:
    table = default_prices()
    live = read_trace(TRACES / f"{CH09}.live.json")
    printed = summary_lines(live, table)
    total, busy = table.cost(live.scenarios), table.cost([live.scenarios[0]])
    assert total is not None
    assert busy is not None
    assert printed[1].endswith(f"· {total.text}")  # the chapter's line
    [line] = [line for line in printed if line.startswith("scenario service_is_busy ")]
    assert f"· {busy.text} · ended: no_tool_calls" in line
    assert line.removeprefix("scenario ") in lines(ch09(table))["service_is_busy-live"]
    # A mock run's lines show no cost, whatever the table.
    priced = table.extended({"mock": {"input": 1, "output": 1, "read": "2026-11-01"}}, where="test")
    assert not [line for line in summary_lines(run_chapter("ch21_reasoning_models"), priced) if "$" in line]


def test_the_command_line_reads_the_books_prices_from_its_configuration(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_book(tmp_path, plugin="prices:\n  deepseek-flash: {input: 3, output: 12, read: 2026-11-02}")
    monkeypatch.chdir(tmp_path)
    _chapters, _traces, table = _book_here()
    price = table.get("deepseek-flash")
    assert price is not None
    assert (price.input, price.output, price.read) == (3, 12, "2026-11-02")
    # In a folder of the book: an error naming its root, not the package's own book.
    monkeypatch.chdir(tmp_path / "docs")
    with pytest.raises(ConfigError, match=f"inside the book at {tmp_path}"):
        _book_here()
    # No book here nor above: the package's own table.
    monkeypatch.chdir(tmp_path_factory.mktemp("no_book"))
    assert _book_here()[2].get("deepseek-flash") == default_prices().get("deepseek-flash")
