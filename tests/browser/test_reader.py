"""The trace pages as a reader uses them: folding, switches, deep links, copying, printing (the ``site``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.browser.pages import Book, is_open, open_everything, open_page
from tests.test_render_data import LATER

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_pages_load_clean(browser: Any, site: str) -> None:
    for path in ("/ch05/", "/ch09/"):
        watched = open_page(browser, site, path)
        assert watched.page.locator("details.tr-scn").count() > 0
        assert watched.errors == []
        assert watched.refused == []
        watched.page.context.close()


def test_the_hostile_corpus_executes_nothing(browser: Any, site: str) -> None:
    watched = open_page(browser, site, "/hostile/")
    page = watched.page
    page.evaluate("document.querySelectorAll('.tr details').forEach(d => d.open = true)")
    for summary in page.locator(".tr-whole > summary").all():
        summary.click()  # copies transcript rows: still text
    page.wait_for_timeout(200)
    assert watched.dialogs == []
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator(".tr img, .tr svg, .tr [onerror], .tr [onload]").count() == 0
    # The one script is the renderer's own (templates/later.html.j2), once a page.
    assert page.evaluate("[...document.querySelectorAll('.tr script')].map(s => s.textContent)") == [LATER]
    assert page.locator(".tr a[href^='javascript']").count() == 0
    assert "<script>window.__pwned = 1;" in page.locator(".tr").first.inner_text()
    assert watched.errors == []
    page.context.close()


def test_expand_and_collapse_by_mouse_and_keyboard(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    run = "ch09_who_retries-service_is_busy-mock"
    assert not is_open(page, run)
    page.locator(f"#{run} > summary").click()
    assert is_open(page, run)
    turn = f"{run}-turn-1"
    page.locator(f"#{turn} > summary").focus()
    page.keyboard.press("Enter")
    assert is_open(page, turn)
    assert page.locator(f"#{turn}-model > summary").is_visible()
    page.keyboard.press("Space")
    assert not is_open(page, turn)
    # The focus ring stands out from the page at 3:1 at least (WCAG 2.2, 1.4.11): the accent, amber, was 1.9:1.
    assert _contrast(*page.evaluate(RING, f"#{turn} > summary")) >= 3
    page.locator(f"#{run} > summary").click()
    assert not is_open(page, run)
    page.context.close()


#: The focused element's outline colour and the page's background, as [r, g, b] each.
RING = """selector => {
  const rgb = value => value.match(/[0-9.]+/g).slice(0, 3).map(Number);
  const ring = getComputedStyle(document.querySelector(selector)).outlineColor;
  return [rgb(ring), rgb(getComputedStyle(document.body).backgroundColor)];
}"""


def _contrast(one: list[float], other: list[float]) -> float:
    def luminance(rgb: list[float]) -> float:
        linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_the_switch_is_remembered_across_instant_navigation(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    live_runs = page.locator(".tr-run[data-mode='live']")
    assert live_runs.first.is_visible()
    chapter_live = page.locator(".tr-head .tr-mode[data-tr-mode='live']")
    assert chapter_live.get_attribute("aria-label") == "show the live runs of ch09_who_retries"
    chapter_live.click()
    assert chapter_live.get_attribute("aria-pressed") == "false"
    assert not live_runs.first.is_visible()
    assert page.locator(".tr-run[data-mode='mock']").first.is_visible()
    page.evaluate("window.__samePage = true")
    page.get_by_role("link", name="Loop endings").first.click()
    page.wait_for_url("**/ch05/")
    page.wait_for_selector(".tr-chapter[data-tr-chapter='ch05_loop_endings'][data-show] >> nth=1")
    assert page.evaluate("window.__samePage") is True  # Material swapped the page in, no reload
    assert page.locator(".tr-head .tr-mode[data-tr-mode='live']").get_attribute("aria-pressed") == "false"
    # Two markers on this page, one chapter head: the switch governs both.
    assert page.locator(".tr-chapter").count() == 2
    assert page.locator(".tr-head").count() == 1
    assert page.locator(".tr-run[data-mode='live']:visible").count() == 0
    assert page.locator(".tr-run[data-mode='mock']:visible").count() == 2
    # Turning the only mode shown off shows the other one instead.
    page.locator(".tr-head .tr-mode[data-tr-mode='mock']").click()
    assert page.locator(".tr-chapter").last.get_attribute("data-show") == "live"
    page.reload()
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "live"
    page.locator(".tr-head .tr-mode[data-tr-mode='mock']").click()
    assert page.locator(".tr-chapter").last.get_attribute("data-show") == "mock live"
    page.context.close()


def test_a_scenario_switch_changes_that_scenario_only(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    page.evaluate("localStorage.clear()")
    busy = page.locator("#ch09_who_retries-service_is_busy")
    busy.locator(".tr-mode[data-tr-mode='mock']").click()
    assert not busy.locator(".tr-run[data-mode='mock']").is_visible()
    assert busy.locator(".tr-run[data-mode='live']").is_visible()
    other = page.locator("#ch09_who_retries-service_says_no")
    assert other.locator(".tr-run[data-mode='mock']").is_visible()
    assert page.evaluate("localStorage.getItem('primer.traces.show')") is None
    page.context.close()


def test_a_runs_folds_become_details_when_it_first_opens(browser: Any, site: str) -> None:
    # A closed run is its summary and a link: its turns and calls come from the chapter's payload page when
    # a run is first opened (parts.html.j2), as divs made <details> then, folded.
    page = open_page(browser, site, "/ch09/").page
    runs = page.locator(".tr details.tr-scn")
    assert runs.count() == page.locator(".tr details.tr-scn > a.tr-load:only-of-type").count() > 0
    assert page.locator(".tr details.tr-scn details, .tr details.tr-scn div.tr-d").count() == 0
    run = "ch09_who_retries-service_is_busy-mock"
    page.locator(f"#{run} > summary").click()
    page.locator(f"#{run}-turn-1 > summary").wait_for()
    assert page.locator(f"#{run} div.tr-d, #{run} .tr-sum, #{run} a.tr-load").count() == 0
    folds = page.locator(f"#{run} details")
    assert folds.count() == page.locator(f"#{run} details:not([open])").count() > 0
    assert not page.locator(f"#{run}-turn-1-model > summary").is_visible()
    # A link to copy beside each turn, as the run opened.
    assert page.locator(f"#{run} > a.tr-anchor").count() == page.locator(f"#{run} > details.tr-turn").count() == 2
    # The payload page, fetched once, filled every run of the chapter in: each closed, its folds folded.
    other = "ch09_who_retries-order_may_have_landed-mock"
    assert not is_open(page, other)
    assert page.locator(f"#{other} div.tr-d, #{other} a.tr-load").count() == 0
    assert page.locator(f"#{other} details[open]").count() == 0
    page.context.close()


def test_a_runs_inside_is_on_the_payload_page_without_javascript(browser: Any, book: Book) -> None:
    page = open_page(browser, book.url, "/ch09_who_retries/", javascript=False).page
    run = "ch09_who_retries-order_may_have_landed-mock"
    link = page.locator(f"#{run} > a.tr-load")
    assert not link.is_visible()
    page.locator(f"#{run} > summary").click()
    assert link.inner_text() == "turns and calls (on their own page)"
    link.click()
    page.wait_for_url(f"**/traces/ch09_who_retries.payloads.html#{run}-body")
    # There, the run's turns and calls read as open, each under its line, their payloads in place.
    assert page.locator(f"#{run}-turn-1 > .tr-sum").is_visible()
    assert page.locator(f"#{run}-turn-1-model > .tr-sum").is_visible()
    assert page.locator(f"#{run}-turn-1-tool-1 > .tr-sum").is_visible()
    assert page.locator(f"#{run}-turn-1-tool-1-body").is_visible()
    # A timeline's turn lands there too.
    page.go_back()
    page.locator(f"#{run}").locator("xpath=..").locator("a.tr-tl-turn").first.click()
    page.wait_for_url(f"**/traces/ch09_who_retries.payloads.html#{run}-turn-1")
    assert page.locator(f"#{run}-turn-1 > .tr-sum").is_visible()
    page.context.close()


def test_a_deep_link_opens_every_details_around_its_target(browser: Any, site: str) -> None:
    target = "ch09_who_retries-service_is_busy-live-turn-2"
    page = open_page(browser, site, f"/ch09/#{target}").page
    # The turn is on the payload page: it opens once its run is filled in from there.
    page.wait_for_function(f"document.getElementById('{target}')?.open === true")
    assert is_open(page, "ch09_who_retries-service_is_busy-live")
    assert page.locator(f"#{target} > summary").is_visible()
    # hashchange, to a tool call two levels down in another run
    tool = "ch09_who_retries-order_may_have_landed-mock-turn-1-tool-1"
    page.evaluate(f"location.hash = '#{tool}'")
    page.wait_for_function(f"document.getElementById('{tool}')?.open === true")
    assert is_open(page, "ch09_who_retries-order_may_have_landed-mock-turn-1")
    assert page.locator(f"#{tool} > summary").is_visible()
    page.context.close()


def test_a_deep_link_followed_by_instant_navigation(browser: Any, site: str) -> None:
    context = browser.new_context()
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(site) else route.abort())
    page = context.new_page()
    page.goto(site + "/")
    page.evaluate("window.__samePage = true")
    page.get_by_role("link", name="A turn of arguments_are_wrong").click()
    target = "ch09_who_retries-arguments_are_wrong-mock-turn-2"
    page.wait_for_function(f"document.getElementById('{target}') && document.getElementById('{target}').open")
    assert page.evaluate("window.__samePage") is True
    assert is_open(page, "ch09_who_retries-arguments_are_wrong-mock")
    context.close()


def test_a_deep_link_to_a_payload_block_followed_by_instant_navigation(browser: Any, book: Book) -> None:
    # The book as published, at an origin with no port (Material's instant navigation takes only links its sitemap
    # lists, matched without the port) and the book's navigation.tracking: while the next page comes, tracking
    # rewrites the URL's fragment for the page still shown, and the payload block the link named was left closed,
    # the page at its top (4 runs of 4). The script takes the fragment from the link followed.
    origin = "http://127.0.0.1/trace-book"
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(route: Any) -> None:
        url = route.request.url
        if url.startswith(origin + "/"):
            route.continue_(url=book.url + url[len(origin) :])
        else:
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.goto(f"{origin}/ch16_evaluation/#ch16_evaluation-same_script_every_time-mock-turn-3-tool-1")
    page.wait_for_timeout(500)
    page.evaluate("window.__samePage = true")
    target = "ch09_who_retries-service_is_busy-live-turn-1-model-req-1"
    add = "to => document.querySelector('article').insertAdjacentHTML('afterbegin', `<a id=go href=${to}>go</a>`)"
    page.evaluate(add, f"{origin}/ch09_who_retries/#{target}")
    page.locator("#go").click()
    visible = "id => { const t = document.getElementById(id); return t !== null && t.checkVisibility(); }"
    page.wait_for_function(visible, arg=target, timeout=10_000)
    assert page.evaluate("window.__samePage") is True  # Material swapped the page in, no reload
    top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", target)
    assert 0 < top < 900, top  # scrolled to, below the header
    context.close()


def test_a_scenario_off_screen_costs_nothing_until_the_reader_nears_it(browser: Any, site: str) -> None:
    # On a phone the last scenario is far below the fold: the browser skips it
    # (content-visibility) until it is scrolled near, and a link into it still lands.
    rendered = "id => document.getElementById(id).checkVisibility({contentVisibilityAuto: true})"
    page = open_page(browser, site, "/ch09/", width=390).page
    page.set_viewport_size({"width": 390, "height": 300})  # a short screen: the last is far below
    page.reload()
    last = page.evaluate("[...document.querySelectorAll('.tr-scenario')].pop().id")
    assert page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", last) > 900
    assert page.evaluate(rendered, f"{last}-mock") is False
    page.locator(f"#{last}").scroll_into_view_if_needed()
    page.wait_for_function(f"({rendered})('{last}-mock')")
    page.context.close()
    target = f"{last}-live-turn-1"
    page = open_page(browser, site, f"/ch09/#{target}", width=390).page
    page.wait_for_function(f"document.getElementById('{target}')?.open === true")
    assert page.evaluate(rendered, target)
    top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", target)
    assert 0 <= top < 1000  # in view, where the link said
    page.context.close()


def test_a_deep_link_into_a_hidden_run_shows_it(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    page.locator(".tr-head .tr-mode[data-tr-mode='live']").click()
    target = "ch09_who_retries-service_says_no-live-turn-1"
    page.evaluate(f"location.hash = '#{target}'")
    page.wait_for_function(f"document.getElementById('{target}')?.open === true")
    assert page.locator(f"#{target} > summary").is_visible()
    page.evaluate("localStorage.clear()")
    page.context.close()


def test_the_whole_context_is_one_click_away(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/#ch09_who_retries-arguments_are_wrong-mock-turn-3-model").page
    whole = page.locator("#ch09_who_retries-arguments_are_wrong-mock-turn-3-model .tr-whole")
    count = int(whole.get_attribute("data-tr-count") or 0)
    whole.locator("summary").click()
    rows = whole.locator("tbody > tr")
    rows.first.wait_for()
    assert rows.count() == count
    assert rows.nth(0).inner_text().startswith("[0]")
    page.context.close()


def test_the_trace_json_link_is_relative_to_the_site_root(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    href = page.locator(".tr-download").evaluate("a => a.href")
    assert href == f"{site}/traces/ch09_who_retries.json"
    page.context.close()


def test_printing_prints_what_is_open(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    run = "ch09_who_retries-service_is_busy-mock"
    page.locator(f"#{run} > summary").click()
    page.locator(f"#{run}-turn-1 > summary").wait_for()  # its turns, from the payload page
    closed = page.locator(".tr details:not([open])").count()
    assert closed > 0
    # What the browser fires around printing. Material opens every <details>
    # to print; what the reader had folded stays folded on paper.
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.emulate_media(media="print")
    assert page.locator(".tr details[data-tr-folded]").count() == closed
    turn = page.locator(f"#{run}-turn-1")
    assert turn.locator("> summary").is_visible()
    assert not turn.locator(f"#{run}-turn-1-model").is_visible()
    assert page.locator(f"#{run}-turn-2 > summary").is_visible()
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    page.emulate_media(media="screen")
    page.wait_for_function(f"document.querySelectorAll('.tr details:not([open])').length === {closed}")
    assert page.locator(".tr details[data-tr-folded]").count() == 0
    page.context.close()


def test_print_all_prints_every_run_with_everything_open(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    # No dialog in a test. A function, not an assignment: Playwright calls what
    # an expression evaluates to when it is a function, which would "print" at once.
    page.evaluate("() => { window.print = () => { window.__printed = true; }; }")
    assert page.evaluate("window.__printed") is None
    page.locator(".tr-head .tr-mode[data-tr-mode='live']").click()  # live runs hidden on screen
    opened = page.locator(".tr details[open]").count()
    button = page.get_by_role("button", name="print all traces of ch09_who_retries, every part open")
    button.click()
    # Once every payload is filled in from the chapter's payload page.
    page.wait_for_function("window.__printed === true")
    assert page.locator("a.tr-load").count() == 0
    page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
    page.emulate_media(media="print")
    # Everything, but the views that repeat what is printed anyway.
    assert page.locator(".tr details:not([open]):not([data-tr-folded])").count() == 0
    folded = page.locator(".tr details[data-tr-folded]")
    assert folded.count() == page.locator(".tr-whole, .tr-sent").count()
    assert not folded.first.locator("p.tr-note").is_visible()
    assert page.locator(".tr-run[data-mode='live']").first.is_visible()
    # No control of the traces on paper (Material prints its copy buttons, as on its own code blocks): a turn's
    # "fold all" printed under each turn, its rule outranking the print rule.
    shown = "[...document.querySelectorAll('.tr button[class^=tr-]')].filter(b => b.getClientRects().length)"
    shown += ".map(b => b.className)"
    assert page.locator(".tr details.tr-d > .tr-all").count() > 0
    assert page.evaluate(shown) == []
    page.evaluate("window.dispatchEvent(new Event('afterprint'))")
    page.emulate_media(media="screen")
    assert page.locator(".tr details[open]").count() == opened
    assert not page.locator(".tr-run[data-mode='live']").first.is_visible()
    page.evaluate("localStorage.clear()")
    page.context.close()


# One block of each kind, by page: the id the renderer gave it. A payload block
# keeps it, so a link to it lands; one on the page at load Material renames "__code_" and it.
COPY_KINDS = {
    "/ch09/": {
        "a model request body": "[id='ch09_who_retries-service_is_busy-live-turn-1-model-req-1']",
        "a model response body": "[id='ch09_who_retries-service_is_busy-live-turn-1-model-res-1']",
        "a whole body as sent, rebuilt": "[id='ch09_who_retries-service_is_busy-live-turn-2-model-req-1-whole']",
        "a service response body": "[id='ch09_who_retries-service_is_busy-mock-turn-1-tool-1-res-2']",
        "a declared tool's schema": ".tr-tooldefs pre >> nth=1",
    },
    "/hostile/": {
        "a text body": "[id='hostile-hostile-mock-turn-1-model-res-1']",
        "an error and its traceback": "[id='hostile-hostile_error-mock-turn-1-tool-1-error']",
        "the last live run's failure": "[id='__code_hostile-traces-failure']",
    },
}


def test_every_copy_button_copies_its_own_block(browser: Any, site: str) -> None:
    for path, kinds in COPY_KINDS.items():
        watched = open_page(browser, site, path)
        page = watched.page
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
        open_everything(page)
        # Every block has an id of its own, which its button names.
        ids = page.evaluate("[...document.querySelectorAll('.tr pre')].map(p => p.id)")
        assert ids
        assert all(ids), ids
        assert len(ids) == len(set(ids))
        buttons = page.locator(".tr pre > .md-code__nav > button[data-md-type='copy']")
        assert buttons.count() == len(ids)
        targets = buttons.evaluate_all("bs => bs.map(b => b.getAttribute('data-clipboard-target'))")
        assert targets == [f"#{i} > code" for i in ids]
        for kind, selector in kinds.items():
            block = page.locator(selector)
            assert block.count() == 1, kind
            block.scroll_into_view_if_needed()
            block.hover()
            block.locator("> .md-code__nav > button[data-md-type='copy']").click()
            copied = page.evaluate("navigator.clipboard.readText()")
            assert copied.strip(), kind
            assert copied.strip() == (block.locator("code").text_content() or "").strip(), kind
            page.evaluate("navigator.clipboard.writeText('')")
        assert watched.errors == []
        page.context.close()


def test_json_is_coloured_when_its_block_is_opened(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/#ch09_who_retries-service_is_busy-live-turn-1-model").page
    block = page.locator("#ch09_who_retries-service_is_busy-live-turn-1-model-req-1 code")
    text = block.text_content()
    assert block.locator("span").count() == 0  # its request is still folded
    page.locator("#ch09_who_retries-service_is_busy-live-turn-1-model .tr-wire > summary").first.click()
    page.wait_for_function(
        "document.querySelector('#ch09_who_retries-service_is_busy-live-turn-1-model-req-1 code span')"
    )
    assert block.locator("span.nt").first.text_content() == '"messages"'
    assert block.text_content() == text
    page.context.close()


def test_the_whole_body_as_sent_is_rebuilt(browser: Any, site: str) -> None:
    from tests.test_render_data import live_chapter

    model = "ch09_who_retries-service_is_busy-live-turn-2-model"
    page = open_page(browser, site, f"/ch09/#{model}").page
    sent = page.locator(f"#{model} details.tr-sent")
    sent.evaluate("d => { d.parentElement.open = true; d.open = true; }")
    sent.locator("pre code").wait_for()
    body = json.loads(sent.locator("pre code").text_content() or "")
    turn = live_chapter("ch09_who_retries").scenario("service_is_busy").turns[1]
    assert body == turn.model_call.exchanges[0].request.json_body
    assert list(body) == list(turn.model_call.exchanges[0].request.json_body)  # in the order sent
    page.context.close()


def test_open_all_and_fold_all(browser: Any, site: str) -> None:
    page = open_page(browser, site, "/ch09/").page
    run = "#ch09_who_retries-arguments_are_wrong-live"
    button = page.get_by_role("button", name="open all of the live run of arguments_are_wrong")
    button.click()
    assert page.locator(f"{run}, {run} details").evaluate_all("ds => ds.every(d => d.open)")
    page.wait_for_function(
        "document.querySelector('.tr-all[aria-controls$=\"arguments_are_wrong-live\"]').textContent === 'fold all'"
    )
    page.get_by_role("button", name="fold all of the live run of arguments_are_wrong").click()
    assert page.locator(f"{run}, {run} details").evaluate_all("ds => ds.every(d => !d.open)")
    # A turn: its own button, once it is open.
    turn = "#ch09_who_retries-service_is_busy-mock-turn-1"
    page.locator("#ch09_who_retries-service_is_busy-mock > summary").click()
    page.locator(f"{turn} > summary").click()
    page.get_by_role("button", name="open all of turn 1 of the mock run of service_is_busy").click()
    assert page.locator(f"{turn}, {turn} details").evaluate_all("ds => ds.every(d => d.open)")
    page.context.close()


def test_copy_on_an_abridged_request_copies_the_whole_body_as_sent(browser: Any, site: str) -> None:
    from tests.test_render_data import live_chapter

    model = "ch09_who_retries-service_is_busy-live-turn-2-model"
    watched = open_page(browser, site, f"/ch09/#{model}")
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
    block = page.locator(f"[id='{model}-req-1']")
    block.wait_for(state="attached")
    shown = json.loads(block.locator("code").text_content() or "")
    page.locator(f"#{model} details.tr-wire").first.evaluate("d => d.open = true")
    block.hover()
    button = block.locator("> .md-code__nav > button[data-md-type='copy']")
    assert "the whole body as sent" in (button.get_attribute("title") or "")
    button.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    sent = live_chapter("ch09_who_retries").scenario("service_is_busy").turns[1].model_call.exchanges[0].request
    assert json.loads(copied) == sent.json_body, "what was sent, not the part shown"
    assert list(json.loads(copied)) == list(sent.json_body)
    assert len(copied) > len(json.dumps(shown, indent=2))
    assert watched.errors == []
    page.context.close()


def test_a_deep_link_to_a_payload_block_opens_it(browser: Any, site: str, book: Book) -> None:
    # A service response's body, two folds deep in a tool call, filled in from the payload page.
    target = "ch09_who_retries-service_is_busy-mock-turn-1-tool-1-res-2"
    for url, path in ((site, "/ch09/"), (book.url, "/ch09_who_retries/")):
        page = open_page(browser, url, f"{path}#{target}").page
        page.wait_for_function(f"document.getElementById('{target}') !== null")
        block = page.locator(f"[id='{target}']")
        block.wait_for(state="visible")
        assert block.evaluate("e => e.tagName") == "PRE"
        assert is_open(page, "ch09_who_retries-service_is_busy-mock-turn-1-tool-1")
        # Just below Material's sticky header, not under it, once what moves the page has been laid out.
        assert 0 <= _below_the_header(page, target) <= 40
        # The block alone, without the payload page's heading and link back to this page.
        assert page.locator(".tr-body .tr-payload-head, .tr-body .tr-payload-to").count() == 0
        # Its copy button is Material's, as on any code block (no outline of the traces' buttons).
        button = block.locator(".md-code__button").first
        assert button.evaluate("b => getComputedStyle(b).borderTopStyle") == "none"
        # Each link to copy stands on the line of what it links to.
        lines = page.evaluate(
            """() => [...document.querySelectorAll("a.tr-anchor")].filter(a => a.offsetParent).map(a => {
                 const linked = document.getElementById(a.getAttribute("href").slice(1));
                 const summary = linked.querySelector(":scope > summary");
                 return Math.abs(a.getBoundingClientRect().top - summary.getBoundingClientRect().top);
               })"""
        )
        assert lines
        assert max(lines) < 2, lines
        # Each turn and call of an opened run carries its own link to copy.
        anchor = page.locator("a.tr-anchor[href='#ch09_who_retries-service_is_busy-mock-turn-1-tool-1']")
        assert anchor.get_attribute("href") == "#ch09_who_retries-service_is_busy-mock-turn-1-tool-1"
        assert anchor.get_attribute("aria-label") == "link to this tool call"
        # Clicked as the element, not at a point: the payload filled in above it and off-screen
        # scenarios drawn for the first time move the page, and under load a click at the point
        # Playwright measured landed on the heading's permalink instead.
        anchor.evaluate("a => a.click()")
        assert page.evaluate("location.hash") == "#ch09_who_retries-service_is_busy-mock-turn-1-tool-1"
        assert is_open(page, "ch09_who_retries-service_is_busy-mock-turn-1-tool-1"), "a click leaves it open"
        # A new fragment on the loaded page, to a block in another run: there too.
        other = "ch09_who_retries-order_may_have_landed-mock-turn-1-model-body"
        page.evaluate("id => { location.hash = id; }", other)
        page.wait_for_function(f"document.getElementById('{other}') !== null")
        assert 0 <= _below_the_header(page, other) <= 40
        page.context.close()


def _below_the_header(page: Any, target: str) -> float:
    # Where the target's top is under Material's header's bottom, once the page is laid out again.
    return page.evaluate(
        """id => new Promise(done => setTimeout(() => requestAnimationFrame(() => requestAnimationFrame(
             () => done(document.getElementById(id).getBoundingClientRect().top
                        - document.querySelector(".md-header").getBoundingClientRect().bottom))), 300))""",
        target,
    )


def test_a_hand_edited_payload_page_runs_nothing_when_filled_in(browser: Any, site: str) -> None:
    # The payload page is fetched and copied in element by element: only what the renderer emits.
    watched = open_page(browser, site, "/ch09/")
    page = watched.page
    hostile = (
        '<div class="tr-payload" id="{id}"><p class="tr-note" onclick="window.__ran=1" '
        'onmouseover="window.__ran=1">evil <img src=x onerror="window.__ran=1"><a href="javascript:window.__ran=1" '
        'class="tr-evil">link</a><svg onload="window.__ran=1"></svg><script>window.__ran=1</script>'
        # The attributes traces.js itself turns into links: neither may become a javascript: one.
        '<a class="tr-evil-page" data-tr-page-link="javascript:window.__ran=1">to the page</a>'
        '<a class="tr-evil-root" data-tr-root-relative="javascript:window.__ran=1//">to the site</a>'
        '<a class="tr-evil-root" data-tr-root-relative="JaVaScRiPt:window.__ran=1">to the site</a></p></div>'
    )

    def edited(route: Any) -> None:
        stub_ids = page.evaluate("[...document.querySelectorAll('a.tr-load')].map(s => s.hash.slice(1))")
        route.fulfill(status=200, content_type="text/html", body="".join(hostile.format(id=i) for i in stub_ids))

    page.route("**/*.payloads.html", edited)
    page.evaluate("document.querySelectorAll('.tr details').forEach(d => d.open = true)")
    page.wait_for_function("!document.querySelector('a.tr-load')")
    note = page.locator(".tr-body .tr-note").first
    note.hover()
    note.click()
    assert page.evaluate("window.__ran") is None
    assert page.locator(".tr-body img, .tr-body svg, .tr-body script").count() == 0
    assert page.locator(".tr-body [onclick], .tr-body [onmouseover]").count() == 0
    assert page.locator(".tr-body a.tr-evil").first.get_attribute("href") is None
    hrefs = page.evaluate("[...document.querySelectorAll('.tr-body a[href]')].map(a => a.href)")
    assert not [href for href in hrefs if not href.startswith(("http:", "https:"))], hrefs
    assert page.locator(".tr-body a.tr-evil-page[href], .tr-body a.tr-evil-root[href]").count() == 0
    for link in (".tr-body a.tr-evil-page", ".tr-body a.tr-evil-root"):
        page.locator(link).first.click()
    assert page.evaluate("window.__ran") is None
    assert "evil" in (note.text_content() or "")
    page.context.close()
