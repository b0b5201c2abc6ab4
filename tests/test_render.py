"""The rendered traces, read back as HTML: what a reader of a chapter page gets.

Every page here goes through a real ``markdown.Markdown`` with the extension,
and is parsed back into a tree to assert on structure, not on snapshots.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import markdown
import pytest

from primer import summary
from primer.book._links import page_relative
from primer.book._render import Anchors, json_block, render_payloads, render_traces
from primer.book._source import ChapterTraces, LiveStatus
from primer.book.markdown import TraceExtension
from primer.trace import Backoff, ChapterRun, ErrorInfo
from tests.servers.provider import ReplayProvider
from tests.servers.service import LocalHttpbin
from tests.test_render_data import (
    HOSTILE,
    LATER,
    TAME,
    FixtureSource,
    Node,
    hostile_chapter,
    live_chapter,
    long_run,
    mock_chapter,
    parse,
)

ROOT = Path(__file__).resolve().parent.parent
DASH = "\N{EN DASH}"

# The summary lines of the seed pages' mock runs (shared/seeds), as printed there.
# Timings differ run to run, so they are compared with the figures masked.
SEED_MOCK_LINES = {
    "ch09_who_retries": [
        "mock turns=9 · messages=22",
        "scenario service_is_busy · tools=place_order, price_of · 59.5ms · 2 turns · ended: no_tool_calls",
        "turn 1 · 58.8ms · asked for: price_of",
        "model mock · 3.1ms · asked for: price_of",
        "tool price_of · 55.6ms (model provider 0.1 · library 55.5) · given: item=milk · attempts: 2 · returned: 1.20",
        "turn 2 · 0.4ms · responded with: Milk is 1.20.",
        "model mock · 0.4ms · responded with: Milk is 1.20.",
        'ended {"reason": "no_tool_calls"}',
        "scenario order_may_have_landed · tools=place_order, price_of · 0.8ms · 2 turns · ended: no_tool_calls",
        "turn 1 · 0.5ms · asked for: place_order",
        "model mock · 0.3ms · asked for: place_order",
        "tool place_order · 0.2ms · given: item=milk, quantity=2 · raised: ['https://httpbin.org'] did not answer in "
        "time, and the call",
        "turn 2 · 0.3ms · responded with: The order may or may not have been placed. "
        "Please check before ordering again.",
        "model mock · 0.3ms · responded with: The order may or may not have been placed. Please check before ordering "
        "again.",
        "scenario arguments_are_wrong · tools=place_order, price_of · 1.1ms · 3 turns · ended: no_tool_calls",
        "tool place_order · 0.0ms · given: item=milk, quantity=20 · raised: quantity ['20'] must be between 1 and 12",
        "tool place_order · 0.2ms (model provider 0.1 · library 0.2) · given: item=milk, quantity=12 · "
        "returned: ordered 12 x milk",
        "turn 3 · 0.3ms · responded with: I ordered 12, the most allowed in one order.",
        "model mock · 0.3ms · responded with: I ordered 12, the most allowed in one order.",
        "scenario service_says_no · tools=place_order, price_of · 0.7ms · 2 turns · ended: no_tool_calls",
        "tool price_of · 0.1ms (model provider 0.0 · library 0.1) · given: item=milk · raised: ['https://httpbin.org'] "
        "answered ['404']",
        "turn 2 · 0.3ms · responded with: I could not get the price of milk.",
    ],
    "ch05_loop_endings": [
        "mock turns=4 · messages=10",
        "scenario within_token_limit · 4.2ms · 3 turns · ended: answer_received (finish_reason = stop)",
        "turn 1 · 3.3ms · asked for: lowest_stock_item",
        "model mock · 3.2ms · asked for: lowest_stock_item",
        "tool lowest_stock_item · 0.2ms · returned: butter",
        "tool price_of · 0.2ms · given: item=butter · returned: 3.10",
        "turn 3 · 0.3ms · responded with: Butter, at 3.10 -- there is only one left, so it is the lowest we hold.",
        'ended {"reason": "answer_received (finish_reason = stop)"}',
        "scenario tokens_exhausted · max_tokens=24 · 0.3ms · 1 turn · ended: tokens_exhausted (finish_reason = length)",
        "turn 1 · 0.3ms · responded with: nothing",
        'ended {"reason": "tokens_exhausted (finish_reason = length)"}',
    ],
}

# A duration with its optional split: `59.5ms`, `1002.0ms (service 0.9 · waited 1000.0 · library 1.2)`,
# `(1s simulated)`.
_TIMING = re.compile(r"\d+\.\dms(?: \([^)]*\))?(?: \([\d.]+s simulated\))?")
_TOOLS = re.compile(r"tools=[^·]*· ")


def masked(line: str) -> str:
    return _TIMING.sub("<ms>", " ".join(line.split()))


def page(text: str, source: object | None = None, extensions: list[object] | None = None) -> str:
    extension = TraceExtension(source=source) if source is not None else TraceExtension()
    return markdown.Markdown(extensions=[*(extensions or []), extension]).convert(text)


def summaries(tree: Node) -> list[str]:
    return [" ".join(s.text.split()) for s in tree.elements() if s.is_summary()]


@pytest.fixture(scope="module")
def ch09() -> Node:
    return parse(page("# Who retries\n\n::: trace ch09_who_retries\n", FixtureSource()))


@pytest.mark.parametrize("chapter", sorted(SEED_MOCK_LINES))
def test_every_seed_mock_summary_line_is_on_the_page(chapter: str) -> None:
    # The standalone extension: mock runs made in-process, no store at all.
    tree = parse(page(f"::: trace {chapter}\n"))
    lines = [masked(line) for line in [*summaries(tree), *(n.text for n in tree.find(class_="tr-total"))]]
    lines += [masked(n.text) for n in tree.find("p", class_="tr-ended")]
    for seed in SEED_MOCK_LINES[chapter]:
        want = masked(seed)
        # A seed line is found whole, or as the start of ours where the seed cut a
        # long failure short without saying so; seed 001 left `tools=` out.
        candidates = lines if "tools=" in want else [_TOOLS.sub("", line) for line in lines]
        assert any(line.startswith(want) or line.removeprefix("mock ").startswith(want) for line in candidates), seed


def test_summary_lines_carry_the_trace_figures(ch09: Node) -> None:
    run = mock_chapter("ch09_who_retries")
    assert summary.chapter_line(run) in [n.text for n in ch09.find(class_="tr-total")]
    for scenario in run.scenarios:
        base = f"ch09_who_retries-{scenario.name}-mock"
        details = ch09.by_id(base)
        story = summary.scenario_story(scenario)
        assert details.summary() == f"mock {summary.scenario_line(scenario)} {story}"
        assert details.find("span", class_="tr-story")[0].text == story
        for turn in scenario.turns:
            anchor = f"{base}-turn-{turn.number}"
            assert ch09.by_id(anchor).summary() == summary.turn_line(turn)
            assert ch09.by_id(f"{anchor}-model").summary() == summary.model_line(turn.model_call)
            for index, tool in enumerate(turn.tools, 1):
                assert ch09.by_id(f"{anchor}-tool-{index}").summary() == summary.tool_line(tool)
        assert ch09.by_id(f"{base}-ended").text == summary.ending_line(scenario.ending)


def _fold(node: Node) -> bool:
    return node.tag == "details" or (node.tag == "div" and "tr-d" in (node.attrs.get("class") or "").split())


def test_details_nest_scenario_turn_call(ch09: Node) -> None:
    # A run is a <details>; the folds in it are div.tr-d, which traces.js makes <details>
    # when the run first opens: none of them is a <details> on the page as built.
    for mode in ("mock", "live"):
        for scenario in (mock_chapter if mode == "mock" else live_chapter)("ch09_who_retries").scenarios:
            base = f"ch09_who_retries-{scenario.name}-{mode}"
            run = ch09.by_id(base)
            assert run.tag == "details"
            assert not [
                d
                for kind in ("tr-trial", "tr-turn", "tr-model", "tr-tool", "tr-transcript")
                for d in run.find("details", class_=kind)
            ]
            for turn in scenario.turns:
                node = ch09.by_id(f"{base}-turn-{turn.number}")
                assert node.tag == "div"
                assert isinstance(node.children[0], Node)
                assert node.children[0].is_summary()
                assert next(a for a in node.ancestors() if _fold(a)) is run
                model = ch09.by_id(f"{base}-turn-{turn.number}-model")
                assert next(a for a in model.ancestors() if _fold(a)) is node
                for index in range(1, len(turn.tools) + 1):
                    tool = ch09.by_id(f"{base}-turn-{turn.number}-tool-{index}")
                    assert next(a for a in tool.ancestors() if _fold(a)) is node
            assert next(a for a in ch09.by_id(f"{base}-ended").ancestors() if _fold(a)) is run


def test_anchors_are_unique_stable_and_every_link_lands(ch09: Node) -> None:
    ids = [n.attrs["id"] for n in ch09.elements() if n.attrs.get("id")]
    assert len(ids) == len(set(ids))
    again = parse(page("# Who retries\n\n::: trace ch09_who_retries\n", FixtureSource()))
    assert ids == [n.attrs["id"] for n in again.elements() if n.attrs.get("id")]
    links = [n.attrs["href"] for n in ch09.find("a") if (n.attrs.get("href") or "").startswith("#")]
    assert links
    assert {link[1:] for link in links} <= set(ids)


def test_each_turn_shows_only_the_new_context_with_the_whole_one_click_away(ch09: Node) -> None:
    scenario = mock_chapter("ch09_who_retries").scenario("arguments_are_wrong")
    base = "ch09_who_retries-arguments_are_wrong-mock"
    shown_before = 0
    for turn in scenario.turns:
        model = ch09.by_id(f"{base}-turn-{turn.number}-model")
        context_table = model.find("table", class_="tr-msgs")[0]
        rows = [int(r.find("td")[0].text.strip("[]")) for r in context_table.find("tbody")[0].find("tr")]
        assert rows == list(range(shown_before, len(turn.model_call.context)))
        whole = model.find("details", class_="tr-whole")
        if shown_before:
            assert whole[0].attrs["data-tr-count"] == str(len(turn.model_call.context))
            link = whole[0].find("a")[0].attrs["href"]
            assert link == f"#{base}-transcript"
        else:
            assert not whole
        shown_before = len(turn.model_call.context)
    transcript = ch09.by_id(f"{base}-transcript")
    rows = transcript.find("tbody")[0].find("tr")
    assert [row.find("td")[0].text for row in rows] == [f"[{i}]" for i in range(len(scenario.transcript))]


def test_declared_tools_are_drawn_once_per_page_and_referred_to_after(ch09: Node) -> None:
    # Every ch09 run declares the same two tools: one list, drawn in the first run's first turn.
    runs = [*mock_chapter("ch09_who_retries").scenarios, *live_chapter("ch09_who_retries").scenarios]
    assert all(t.model_call.tools == runs[0].turns[0].model_call.tools for run in runs for t in run.turns)
    [drawn] = ch09.find("details", class_="tr-tools")
    first = ch09.by_id("ch09_who_retries-service_is_busy-mock-turn-1-model")
    assert drawn in first.find("details", class_="tr-tools")
    assert re.fullmatch(r"ch09_who_retries-service_is_busy-tools-[0-9a-f]{10}", drawn.attrs["id"] or "")
    assert drawn.summary() == "declared tools (2) · place_order, price_of"
    assert [dt.text for dt in drawn.find("dt")] == ["place_order", "price_of"]
    for tool, schema in zip(runs[0].turns[0].model_call.tools, drawn.find("pre"), strict=True):
        assert json.loads(schema.text) == tool.parameters
    references = [a for a in ch09.find("a") if a.attrs.get("href") == f"#{drawn.attrs['id']}"]
    assert len(references) == sum(len(run.turns) for run in runs) - 1
    said = {a.text for a in references}
    assert said == {
        "as declared in turn 1",  # the rest of its run
        "as declared in the mock run, turn 1",  # the scenario's live run
        "as declared in scenario service_is_busy",  # the other scenarios
    }


@pytest.mark.slow
def test_tools_declared_in_an_earlier_marker_are_referred_to_alike_from_the_cache(tmp_path: Path) -> None:
    # The HTML cache hands back a marker's HTML and its ids without rendering
    # it: a later marker refers to its tools just the same.
    from primer.book._cache import TraceCache

    first = "::: trace ch09_who_retries service_is_busy\n"
    text = first + "\n::: trace ch09_who_retries service_says_no\n"
    fresh = page(text, FixtureSource())
    source = FixtureSource()
    source.cache = TraceCache(tmp_path, key_of=lambda chapter: "key")  # type: ignore[attr-defined] # as Prepared has
    markdown.Markdown(extensions=[TraceExtension(source=source)]).convert(first)
    # The first marker comes from the cache, the second is rendered.
    mixed = markdown.Markdown(extensions=[TraceExtension(source=source)]).convert(text)
    cache = source.cache  # type: ignore[attr-defined]
    assert (cache.reused, cache.rendered) == (1, 2)
    assert mixed == fresh
    assert len(parse(mixed).find("details", class_="tr-tools")) == 1


def test_a_live_call_shows_its_wire_exchange(ch09: Node) -> None:
    scenario = live_chapter("ch09_who_retries").scenario("service_is_busy")
    exchange = scenario.turns[0].model_call.exchanges[0]
    model = ch09.by_id("ch09_who_retries-service_is_busy-live-turn-1-model")
    request, response = model.find("details", class_="tr-wire")
    # Attempt, method and URL are the summary line's: said once.
    assert request.summary() == f"wire request · attempt 1 · POST {exchange.request.url}"
    fields = [n.text for n in request.find("dl", class_="tr-dl")[0].find("dt")]
    assert fields == [f"defaulted ({len(exchange.request.defaulted or [])})"]
    headers = request.find("details", class_="tr-headers")[0]
    assert headers.summary() == f"headers ({len(exchange.request.headers)})"
    assert "open" not in headers.attrs  # collapsed
    names = [n.text for n in headers.find("dt")]
    values = [n.text for n in headers.find("dd")]
    assert list(zip(names, values, strict=True)) == [tuple(h) for h in exchange.request.headers]
    body = request.find("pre", class_="tr-json")[0]
    assert json.loads(body.text) == exchange.request.json_body  # the first request is whole
    assert "tr-req" in (body.attrs["class"] or "")
    assert response.summary() == "wire response · 200"
    assert json.loads(response.find("pre")[0].text)["choices"][0]["finish_reason"] == "tool_calls"


def test_json_payloads_are_plain_text_for_the_script_to_colour(ch09: Node) -> None:
    # Highlighting is done in the browser when a block is opened (traces.js):
    # the page ships no token markup inside a payload.
    blocks = ch09.find("pre", class_="tr-json")
    assert blocks
    for block in blocks:
        code = block.find("code")[0]
        assert [c for c in code.children if not isinstance(c, str)] == [], block.attrs["id"]
        json.loads(code.text)


def test_a_later_request_refers_to_what_the_earlier_one_carried(ch09: Node) -> None:
    first = live_chapter("ch09_who_retries").scenario("service_is_busy").turns[0].model_call.exchanges[0]
    sent = live_chapter("ch09_who_retries").scenario("service_is_busy").turns[1].model_call.exchanges[0]
    model = ch09.by_id("ch09_who_retries-service_is_busy-live-turn-2-model")
    pre = model.find("pre", class_="tr-json")[0]
    body = json.loads(pre.text)
    # What is new is there whole, as data; nothing in the JSON stands for something else.
    before = first.request.json_body["messages"]
    assert body["messages"] == sent.request.json_body["messages"][len(before) :]
    assert body["messages"][-1]["role"] == "tool"
    assert "tools" not in body
    assert "..." not in pre.text
    # What is repeated is said beside it, as a pointer to where it was shown.
    refs = model.find("p", class_="tr-refs")[0].find("span", class_="tr-ref")
    assert [" ".join(r.text.split()) for r in refs] == [
        f"messages [0]{DASH}[{len(before) - 1}] as sent in turn 1",
        "tools (2) as sent in turn 1",
    ]
    assert {r.find("a")[0].attrs["href"] for r in refs} == {"#ch09_who_retries-service_is_busy-live-turn-1-model"}
    # And traces.js can rebuild the body as sent from it and the request before.
    assert pre.attrs["data-tr-base"] == "ch09_who_retries-service_is_busy-live-turn-1-model"
    assert pre.attrs["data-tr-messages"] == str(len(before))
    assert json.loads(pre.attrs["data-tr-same"] or "") == ["tools"]
    assert json.loads(pre.attrs["data-tr-keys"] or "") == list(sent.request.json_body)
    rebuilt = {
        key: (
            before + body["messages"]
            if key == "messages"
            else first.request.json_body[key]
            if key == "tools"
            else body[key]
        )
        for key in json.loads(pre.attrs["data-tr-keys"] or "")
    }
    assert rebuilt == sent.request.json_body
    sent_details = model.find("details", class_="tr-sent")[0]
    assert sent_details.summary() == "the whole body as sent"
    links = [a.attrs["href"] for a in sent_details.find("a")]
    assert links == ["#ch09_who_retries-service_is_busy-live-turn-1-model", "traces/ch09_who_retries.json"]


def test_no_placeholder_sits_inside_json_anywhere() -> None:
    # A long run repeats the most: its notes and bodies refer back every turn.
    for tree in (parse(page("::: trace ch09_who_retries\n", FixtureSource())), parse(render_traces(long_traces(6)))):
        for code in [*tree.find("pre", class_="tr-json"), *tree.find("code", class_="highlight")]:
            assert "... " not in code.text, code.text
            json.loads(code.text)
    tree = parse(render_traces(long_traces(3)))
    note = tree.by_id("long-long_3-mock-turn-3-model").find("p", class_="tr-line")[-1]
    ref = note.find("span", class_="tr-ref")[0]
    assert " ".join(ref.text.split()) == f"roles [0]{DASH}[3] as in turn 2"
    assert ref.find("a")[0].attrs["href"] == "#long-long_3-mock-turn-2-model"
    assert json.loads(note.find("code")[0].text) == {"messages": 6, "roles": ["ai", "tool"]}


def test_a_tool_call_shows_attempts_backoff_result_and_the_message_back(ch09: Node) -> None:
    tool = mock_chapter("ch09_who_retries").scenario("service_is_busy").turns[0].tools[0]
    node = ch09.by_id("ch09_who_retries-service_is_busy-mock-turn-1-tool-1")
    lines = [" ".join(p.text.split()) for p in node.find("p", class_="tr-line")]
    backoff = next(s for s in tool.steps if isinstance(s, Backoff))
    assert lines[0] == 'args {"item": "milk"}'
    assert lines[1].startswith(
        'attempt {"number": 1, "message": "[\'https://httpbin.org\'] answered [\'429\']", "retryable": true'
    )
    step = {"seconds": backoff.seconds, "before_attempt": backoff.before_attempt, "source": backoff.source}
    assert lines[2] == f"backoff {json.dumps(step)}"
    assert lines[3] == 'attempt {"number": 2}'
    assert lines[4] == f'result {{"value": "{tool.result}"}}'
    assert lines[5] == f"sent back to the model {tool.message}"
    wire = [d.summary() for d in node.find("details", class_="tr-wire")]
    assert wire == [
        "wire request · attempt 1 · GET https://httpbin.org/status/429?item=milk",
        "wire response · 429",
        "wire request · attempt 2 · GET https://httpbin.org/get?item=milk",
        "wire response · 200",
    ]
    # A service request is not a model request: no sampling parameters listed.
    assert all("defaulted" not in dt.text for dt in node.find("dt"))


def test_a_failed_tool_call_shows_what_the_model_is_told(ch09: Node) -> None:
    tool = mock_chapter("ch09_who_retries").scenario("order_may_have_landed").turns[0].tools[0]
    node = ch09.by_id("ch09_who_retries-order_may_have_landed-mock-turn-1-tool-1")
    text = " ".join(node.text.split())
    assert 'failed {"message": "[\'https://httpbin.org\'] did not answer in time' in text
    assert "It may have taken effect. Do not call it again; say what is uncertain." in text
    assert tool.message in text


def test_side_by_side_marks_where_mock_and_live_diverge(ch09: Node) -> None:
    same = ch09.by_id("ch09_who_retries-service_is_busy-compare")
    assert "same tools asked in each of 2 turns" in same.summary()
    assert not same.find("tr", class_="tr-diverge")
    assert "tr-diverges" not in (same.attrs["class"] or "")
    differ = ch09.by_id("ch09_who_retries-arguments_are_wrong-compare")
    assert "diverge: turn 2 asked for place_order (mock) but place_order, place_order (live)" in differ.summary()
    assert "tr-diverges" in (differ.attrs["class"] or "")
    diverging = differ.find("tr", class_="tr-diverge")
    assert [row.find("th")[0].text.split()[0:2] for row in diverging] == [["turn", "2"]]
    cells = diverging[0].find("td")
    assert cells[0].find("a")[0].attrs["href"] == "#ch09_who_retries-arguments_are_wrong-mock-turn-2"
    assert cells[1].find("a")[0].attrs["href"] == "#ch09_who_retries-arguments_are_wrong-live-turn-2"


def test_a_different_number_of_turns_and_ending_are_divergences() -> None:
    mock = mock_chapter("ch05_loop_endings")
    live = live_chapter("ch05_loop_endings")
    # A live run that stopped after its first turn, on the turn limit.
    short = live.scenario("within_token_limit")
    short = short.model_copy(
        update={
            "turns": short.turns[:1],
            "ending": short.ending.model_copy(update={"reason": "turn_limit", "finish_reason": None}),
        }
    )
    live = live.model_copy(update={"scenarios": [short]})
    traces = ChapterTraces("ch05_loop_endings", mock, live, LiveStatus("current"))
    tree = parse(render_traces(traces, "within_token_limit"))
    compare = tree.by_id("ch05_loop_endings-within_token_limit-compare")
    assert "3 turns (mock) but 1 (live)" in compare.summary()
    assert "ended answer_received (finish_reason = stop) (mock) but turn_limit (live)" in compare.summary()
    rows = compare.find("tr", class_="tr-diverge")
    assert [r.find("th")[0].text.split()[0] for r in rows] == ["turn", "turn", "ended"]
    assert "no such turn" in rows[0].text


def test_a_chapter_without_a_live_run_says_why_once_and_presses_no_live_button() -> None:
    tree = parse(page("::: trace ch09_who_retries\n", FixtureSource(live=False)))
    # Said once, in the chapter's head, not once per scenario.
    assert [s.text for s in tree.find(class_="tr-status")] == ["live: no run · no key yet"]
    assert not tree.find("div", class_="tr-missing")
    assert not tree.find(class_="tr-compare")
    [live] = [b for b in tree.find("button") if b.attrs["data-tr-mode"] == "live"]
    assert live.attrs["aria-pressed"] == "false"
    assert "disabled" in live.attrs
    # With a live trace, the same button is pressed and pressable.
    tree = parse(page("::: trace ch09_who_retries\n", FixtureSource()))
    [live] = [b for b in tree.find("button") if b.attrs["aria-label"] == "show the live runs of ch09_who_retries"]
    assert live.attrs["aria-pressed"] == "true"
    assert "disabled" not in live.attrs


def test_a_stale_live_run_shows_the_failed_refresh() -> None:
    traces = ChapterTraces(
        "ch09_who_retries",
        mock_chapter("ch09_who_retries"),
        live_chapter("ch09_who_retries"),
        LiveStatus(
            "stale", reason="the refresh failed", failure=ErrorInfo(type="APIError", message="provider said 503")
        ),
    )
    tree = parse(render_traces(traces))
    status = tree.find(class_="tr-status")
    live = traces.live
    assert live is not None
    # Which model, and when: the reader knows what the live run is.
    assert status[0].text.startswith(f"live: {live.model}")
    assert f"recorded {live.recorded_at}" in status[0].text
    assert "live: the refresh failed" in status[1].text
    assert status[2].find("details")[0].summary() == "the last live run failed: APIError: provider said 503"


def test_long_text_is_cut_in_the_summary_and_whole_inside(ch09: Node) -> None:
    turn = live_chapter("ch09_who_retries").scenario("order_may_have_landed").turns[1]
    reply = turn.model_call.reply
    assert reply is not None
    assert reply.content is not None
    assert len(reply.content) > summary.SUMMARY_LIMIT
    node = ch09.by_id("ch09_who_retries-order_may_have_landed-live-turn-2")
    cut = summary.cut(reply.content)
    assert node.summary().endswith(cut)
    assert re.search(r"\.\.\. \(\d+ more characters\)$", cut)
    cells = [row.find("td")[-1].text for body in node.find("tbody") for row in body.find("tr")]
    assert any(cell.startswith(reply.content) for cell in cells)


def test_the_timeline_splits_each_turn_by_who_the_time_went_to(ch09: Node) -> None:
    scenario = mock_chapter("ch09_who_retries").scenario("service_is_busy")
    base = "ch09_who_retries-service_is_busy-mock"
    run = next(a for a in ch09.by_id(base).ancestors() if "tr-run" in (a.attrs.get("class") or ""))
    timeline = run.find("div", class_="tr-timeline")[0]
    turns = timeline.find("a", class_="tr-tl-turn")
    assert [t.attrs["href"] for t in turns] == [f"#{base}-turn-{t.number}" for t in scenario.turns]
    waited = sum(s.seconds for t in scenario.turns for r in t.tools for s in r.steps if isinstance(s, Backoff))
    assert "var(--tr-waited)" in turns[0].attrs["style"]  # the wait is one of the turn's stretches
    legend = " ".join(timeline.find(class_="tr-tl-legend")[0].text.split())
    assert f"waited {waited * 1000:.1f}ms" in legend
    assert "library" in legend


def test_json_is_pretty_printed_and_escaped() -> None:
    html = str(json_block({"a": [1, True, None], "<b>": "</pre><script>"}))
    tree = parse(f"<pre>{html}</pre>")
    assert tree.text == '{\n  "a": [\n    1,\n    true,\n    null\n  ],\n  "<b>": "</pre><script>"\n}'
    assert tree.find("pre")[0].children == [tree.text]  # text only: no element inside


def _rendered_reply(node: Node) -> bool:
    # A reply's Markdown, rendered, and its raw text beside it: the one place a reply makes elements.
    classes = (node.attrs.get("class") or "").split()
    return (node.tag == "section" and "tr-md" in classes) or (node.tag == "details" and "tr-raw" in classes)


def _skeleton(tree: Node) -> list[tuple[str, int]]:
    def depth(node: Node) -> int:
        return sum(1 for _ in node.ancestors())

    # Not the stretch before the first turn: drawn when the run took a millisecond or more to start,
    # which a loaded machine decides, not the text (two runs made one after another differ in it).
    return [
        (n.tag, depth(n))
        for n in tree.elements()
        if not _rendered_reply(n)
        and not any(map(_rendered_reply, n.ancestors()))
        and "tr-tl-before" not in (n.attrs.get("class") or "")
    ]


def test_the_hostile_corpus_is_shown_as_text_and_breaks_nothing() -> None:
    source = FixtureSource()
    html = page("::: trace hostile\n", source, extensions=["tables"])
    tree = parse(html)
    tags = {n.tag for n in tree.elements()}
    assert not tags & {"img", "svg", "b", "h1", "td-injected"}
    assert [n.source for n in tree.find("script")] == [LATER]  # the renderer's own, not the corpus's
    # Emphasis only where a reply's Markdown is rendered (test_reply_markdown), never from other text.
    emphasis = [n for n in tree.elements() if n.tag in ("strong", "em")]
    assert emphasis
    assert all(any(map(_rendered_reply, n.ancestors())) for n in emphasis)
    for node in tree.elements():
        assert not [name for name in node.attrs if name.startswith("on")], node
        href = (node.attrs.get("href") or "").strip().lower()
        assert not href.startswith("javascript"), node
    assert "\x02" not in html
    assert "\x03" not in html
    text = tree.text
    for hostile in HOSTILE[:7]:
        # Shown whole somewhere (in a table cell, a body, a reply), not interpreted.
        assert " ".join(hostile.split()) in " ".join(text.split()), hostile
    # {{ 7*7 }} was not evaluated
    assert "49" not in re.sub(r"[\d.]+ms|\d+ turns?|\[\d+\]|\(\d+ more characters?\)", "", text)
    # The same traces with harmless text have exactly the same element tree.
    tame_tree = parse(page("::: trace hostile\n", _Only(hostile_chapter(tuple(TAME))), extensions=["tables"]))
    assert _skeleton(tree) == _skeleton(tame_tree)
    raw = tree.find("details", class_="tr-raw")
    assert raw
    assert not tame_tree.find("details", class_="tr-raw")
    assert len(tree.find("details")) - len(raw) == len(tame_tree.find("details")) > 10


def long_traces(turns: int) -> ChapterTraces:
    """A chapter ``long`` whose one scenario ran ``turns`` turns (mock)."""
    run = ChapterRun(chapter="long", mode="mock", scenarios=[long_run(turns)])
    return ChapterTraces("long", run, None, LiveStatus("missing", reason="no key yet"))


class _Only:
    def __init__(self, traces: ChapterTraces) -> None:
        self.traces_ = traces

    def traces(self, chapter: str) -> ChapterTraces:
        return self.traces_


def test_anchors_stay_unique_when_a_page_shows_a_run_twice() -> None:
    anchors = Anchors()
    traces = FixtureSource().traces("ch09_who_retries")
    first = parse(render_traces(traces, "service_is_busy", anchors=anchors))
    second = parse(render_traces(traces, "service_is_busy", anchors=anchors))
    ids_first = {n.attrs["id"] for n in first.elements() if n.attrs.get("id")}
    ids_second = {n.attrs["id"] for n in second.elements() if n.attrs.get("id")}
    assert not ids_first & ids_second
    assert "ch09_who_retries-service_is_busy-mock-2-turn-1" in ids_second


def test_the_timeline_agrees_with_the_tool_line_when_attempt_times_are_unknown():
    from primer.spent import segments as _segments
    from primer.trace import Attempt, Backoff, ModelCall, Timing, ToolRun, Turn

    tool_run = ToolRun(
        call_id="c1",
        name="price_of",
        message="1.20",
        result="1.20",
        timing=Timing(total_ms=574.2, outside_ms=323.0, waited_ms=50.0),
        steps=[Attempt(number=1), Backoff(seconds=0.05, before_attempt=2), Attempt(number=2)],
    )
    turn = Turn(number=1, model_call=ModelCall(kind="live", context=[]), tools=[tool_run])
    by_kind: dict[str, float] = {}
    for segment in _segments(turn):
        by_kind[segment.kind] = by_kind.get(segment.kind, 0.0) + segment.ms
    assert by_kind["service"] == 323.0
    assert by_kind["waited"] == 50.0
    assert round(by_kind["library"], 1) == 201.2


def test_a_tool_whose_result_never_went_back_says_so_not_an_empty_returned() -> None:
    # A scenario that ended before a tool's result was sent (its agent raised after the call): "returned: " with
    # nothing after it read as an empty answer. An empty answer is still "returned: ".
    from primer.trace import ModelCall, ScenarioRun, ToolRun, Turn

    lost = ToolRun(call_id="c1", name="multiply", arguments={"a": 12, "b": 3}, message="")
    empty = ToolRun(call_id="c2", name="stock_of", arguments={"item": "apples"}, message="", result="")
    assert summary.tool_line(lost).endswith(" · given: a=12, b=3 · no result sent back")
    assert summary.tool_line(empty).endswith(" · given: item=apples · returned: ")
    turn = Turn(number=1, model_call=ModelCall(kind="mock", context=[]), tools=[lost, empty])
    run = ScenarioRun.model_validate(
        {"name": "s", "mode": "mock", "turns": [turn], "ending": {"reason": "no_tool_calls"}}
    )
    assert summary.scenario_story(run) == "multiply → no result · stock_of → "


# -- ids, plurals, stories, time -------------------------------------------------


def test_every_block_has_an_id_of_its_own_for_its_copy_button() -> None:
    # Material's copy button names its block `__code_` + the id of the closest
    # element with one (the <pre> itself when it has one): two blocks under
    # one id would copy the same text.
    pages = [
        page("::: trace ch09_who_retries\n", FixtureSource()),
        page("::: trace ch05_loop_endings within_token_limit\n\n::: trace ch05_loop_endings\n", FixtureSource()),
        page("::: trace hostile\n", FixtureSource(), extensions=["tables"]),
    ]
    kinds = set()
    for html in pages:
        tree = parse(html)
        ids = [n.attrs["id"] for n in tree.elements() if n.attrs.get("id")]
        assert len(ids) == len(set(ids))
        blocks = tree.find("pre")
        assert blocks
        assert all(block.attrs.get("id") for block in blocks)
        kinds |= {(block.attrs["class"] or "").split()[0] for block in blocks}
    assert kinds == {"tr-json", "tr-text"}


def test_counts_read_right_in_the_singular_and_plural() -> None:
    one = long_run(1)
    traces = ChapterTraces(
        "long",
        ChapterRun(chapter="long", mode="mock", scenarios=[one]),
        ChapterRun(chapter="long", mode="live", scenarios=[one.model_copy(update={"mode": "live"})]),
        LiveStatus("current"),
    )
    texts = [
        " ".join(parse(render_traces(traces)).text.split()),
        " ".join(parse(page("::: trace ch09_who_retries\n", FixtureSource())).text.split()),
    ]
    for text in texts:
        assert "(s)" not in text
        assert not re.search(r"\b1 (turns|messages|attempts)\b", text), text
        assert not re.search(r"\b([02-9]|\d\d+) (turn|message)\b(?! \d)", text)
    assert "scenario long_1 · tools=place_order, price_of" in texts[0]
    assert "1 turn ·" in texts[0]
    assert "same tools asked in its one turn" in texts[0]
    assert "transcript — 3 messages" in texts[0]
    assert summary.count(1, "message") == "1 message"
    assert summary.cut("x" * (summary.SUMMARY_LIMIT + 1)).endswith("... (1 more character)")
    assert summary.count(3, "message") == "3 messages"


# What each ch09 scenario's folded summary says, beside its figures: what sets it apart.
CH09_STORIES = {
    "service_is_busy": "price_of: 429 (retryable) → waited {wait} → 200",
    "order_may_have_landed": "place_order: no answer (retryable, not idempotent) → not retried",
    "arguments_are_wrong": "place_order: rejected (not retryable, caller can fix) · corrected in turn 2",
    "service_says_no": "price_of: 404 (not retryable)",
}


def test_a_folded_ch09_scenario_tells_its_story() -> None:
    published = ChapterRun.model_validate_json(
        (ROOT / "docs" / "traces" / "ch09_who_retries.live.json").read_text("utf-8")
    )
    traces = ChapterTraces("ch09_who_retries", mock_chapter("ch09_who_retries"), published, LiveStatus("current"))
    tree = parse(render_traces(traces))
    for mode, run, wait in (("mock", traces.mock, "1s"), ("live", published, "50ms")):
        assert run is not None
        for scenario in run.scenarios:
            folded = tree.by_id(f"ch09_who_retries-{scenario.name}-{mode}")
            story = folded.find("span", class_="tr-story")[0].text
            assert story == CH09_STORIES[scenario.name].format(wait=wait), (mode, scenario.name)
            line = " ".join(folded.summary().split())
            assert line.startswith(f"{mode} scenario {scenario.name} · ")
            assert f"· ended: {scenario.ending.label} {story}" in line
    # Four stories, four different summaries: folded, the scenarios no longer read alike.
    assert len(set(CH09_STORIES.values())) == 4


def test_a_service_that_did_not_answer_is_service_time_on_the_timeline() -> None:
    # The published live trace of order_may_have_landed was recorded without
    # splitting the tool's time: the order got no answer, so that time was
    # spent waiting for the service, not in the library.
    published = ChapterRun.model_validate_json(
        (ROOT / "docs" / "traces" / "ch09_who_retries.live.json").read_text("utf-8")
    )
    turn = published.scenario("order_may_have_landed").turns[0]
    [tool] = turn.tools
    assert tool.timing.outside_ms is None
    by_kind = _by_kind(turn)
    assert by_kind["service"] == pytest.approx(tool.timing.total_ms)
    assert by_kind["library"] == pytest.approx(turn.model_call.timing.library_ms)


def _by_kind(turn: object) -> dict[str, float]:
    from primer.spent import segments as _segments

    kinds: dict[str, float] = {"provider": 0.0, "service": 0.0, "setup": 0.0, "waited": 0.0, "library": 0.0}
    for segment in _segments(turn):  # type: ignore[arg-type]
        kinds[segment.kind] += segment.ms
    return kinds


@pytest.mark.slow
def test_live_tool_time_is_split_as_the_mocks_is(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    # A live run against the loopback servers: the timeout (0.5 s here) and
    # each attempt are the service's time, measured where the mock's are.
    from primer.chapters import scenarios_of
    from primer.runner import run_chapter
    from tests.servers import live_settings
    from tests.servers.provider import scenario_file

    for scenario in scenarios_of("ch09_who_retries"):
        replay_provider.load(scenario_file("ch09_who_retries", scenario.name))
    settings = live_settings(replay_provider, httpbin, api_key="sk-render-5e1f", service_key="svc-render-8d2a")
    run = run_chapter("ch09_who_retries", "live", settings=settings)
    mock = mock_chapter("ch09_who_retries")
    for name in ("order_may_have_landed", "service_is_busy"):
        for each in (run.scenario(name), mock.scenario(name)):
            turn = each.turns[0]
            [tool] = turn.tools
            outside = sum(a.timing.outside_ms or 0.0 for a in tool.attempts)
            assert tool.timing.outside_ms == pytest.approx(outside, abs=0.01)
            # The timeline and the tool's line agree; opening a connection (live) is its own part.
            service = sum(a.timing.answering_ms or 0.0 for a in tool.attempts)
            spent = _by_kind(turn)
            assert spent["service"] == pytest.approx(service, abs=0.01)
            setup = sum(a.timing.setup_ms or 0.0 for a in tool.attempts)
            assert service + setup == pytest.approx(outside, abs=0.01)
            assert spent["setup"] >= setup  # the model call's too, when it opened one
            # The line's one decimal, of the tool's own sum: 0.05 either way, and the rounding of each part.
            shown = re.search(r"\(service ([0-9.]+)", summary.tool_line(tool))
            assert shown is not None
            assert float(shown[1]) == pytest.approx(service, abs=0.051)
    landed = run.scenario("order_may_have_landed").turns[0].tools[0]
    assert landed.attempts[0].response is None
    assert (landed.attempts[0].timing.outside_ms or 0.0) >= 500  # the timeout was the service's
    assert landed.timing.library_ms < 500  # the timeout's 0.5 s, had it been counted as the library's


def test_the_trace_json_link_is_made_relative_to_its_page() -> None:
    html = page("::: trace ch09_who_retries\n", FixtureSource())
    assert 'href="traces/ch09_who_retries.json"' in html
    for url, up in [("ch09_who_retries/", "../"), ("", ""), ("a/b.html", "../"), ("a/b/", "../../")]:
        tree = parse(page_relative(html, url))
        links = [a for a in tree.find("a") if "data-tr-root-relative" in a.attrs]
        assert len(links) > 1  # the head's, and each "whole body as sent"
        assert all(a.attrs["href"] == f"{up}{a.attrs['data-tr-root-relative']}" for a in links)
        assert f"{up}traces/ch09_who_retries.json" in {a.attrs["href"] for a in links}
    assert page_relative('<a href="/x.json" data-tr-root-relative="/x.json">', "a/") == (
        '<a href="/x.json" data-tr-root-relative="/x.json">'
    )


# -- payloads in the chapter's payload page ---------------------------------


def _published(traces: ChapterTraces) -> ChapterTraces:
    url = f"traces/{traces.chapter}.payloads.html"
    return ChapterTraces(traces.chapter, traces.mock, traces.live, traces.live_status, traces.download_url, url)


_STUB = re.compile(
    r'<a class="tr-load" data-search-exclude href="(?P<href>(?P<path>[^"#]+)#(?P<id>[^"]+))">'
    r"(?:payloads|turns and calls) \(on their own page\)</a>"
)
_ELEMENT = re.compile(
    r'<div class="tr-payload" id="(?P<id>[^"]+)"><h3 class="tr-payload-head">[^<]*</h3>(?: <a [^>]*>[^<]*</a>)?\n'
    r"(?P<body>.*?)\n</div>",
    re.S,
)
_INLINE = re.compile(r'<div class="tr-body" data-search-exclude id="(?P<id>[^"]+)">\n(?P<body>.*?)\n</div>', re.S)


@pytest.mark.parametrize("chapter", ["ch09_who_retries", "hostile"])
def test_payload_blocks_link_to_the_payload_page_which_holds_each_one_as_drawn_inline(chapter: str) -> None:
    traces = _published(FixtureSource().traces(chapter))
    html = render_traces(traces)
    stubs = list(_STUB.finditer(html))
    assert stubs
    # Every payload block is a link, and nothing else of it is on the page; the chapter's div
    # names the payload page for traces.js.
    assert html.count('class="tr-body') == 0
    assert f'data-tr-payloads="traces/{chapter}.payloads.html"' in html
    for stub in stubs:
        assert stub["path"] == f"traces/{chapter}.payloads.html"
    assert "You answer briefly" not in html
    ids = [stub["id"] for stub in stubs]
    assert len(ids) == len(set(ids))

    payloads = render_payloads(traces)
    assert payloads.startswith("<!doctype html>\n<!-- trace-book payloads -->")
    elements = {m["id"]: m["body"] for m in _ELEMENT.finditer(payloads)}
    # One element per block, by the block's id, holding what the block holds when drawn inline.
    drawn_inline = render_traces(
        ChapterTraces(chapter, traces.mock, traces.live, traces.live_status, traces.download_url)
    )
    # A run is one block (its turns and calls, their payloads in place), the comparison another; each payload in
    # them as drawn inline, and every id of a run drawn inline is on the payload page. A run that broke is drawn
    # whole on the chapter page, its payloads links into its block.
    assert [i for i in elements if not i.endswith("-compare-body")] == [
        f"{run}-body" for run in re.findall(r'<details class="tr-d tr-scn" id="([^"]+)">', html)
    ]
    inline = {m["id"]: m["body"] for m in _INLINE.finditer(drawn_inline)}
    on_the_page = elements | {m["id"]: m["body"] for m in _INLINE.finditer(payloads)}
    assert set(ids) <= set(on_the_page)
    assert ("hostile-hostile_error-mock-turn-1-model-body" in ids) is (chapter == "hostile")
    assert inline
    for anchor, body in inline.items():
        assert on_the_page[anchor] == page_relative(body, f"traces/{chapter}.payloads.html")
    ids_of = functools.partial(re.findall, r' id="([^"]+)"')
    assert set(ids_of(drawn_inline)) - set(ids_of(html)) <= set(ids_of(payloads))
    assert "<script" not in payloads.lower().replace("&lt;script", "")
    if chapter == "ch09_who_retries":
        assert "You answer briefly" in payloads


def test_a_payload_link_is_made_relative_to_the_page_fragment_and_all() -> None:
    html = render_traces(_published(FixtureSource().traces("ch09_who_retries")))
    relative = page_relative(html, "ch09_who_retries/")
    stub = _STUB.search(relative)
    assert stub is not None
    assert stub["href"] == f"../traces/ch09_who_retries.payloads.html#{stub['id']}"
