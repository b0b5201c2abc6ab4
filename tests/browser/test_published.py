"""The book as published (``book``): no page scrolls sideways, every link lands, what each mode shows."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urljoin

import pytest

from tests.browser.pages import SCHEMES, SCREENS, WIDTHS, Book, is_open, open_everything, open_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]


# Everything inside a trace box ends inside it; the page never scrolls sideways.
OVERFLOW = """() => {
  const found = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) found.push(`the page: ${doc.scrollWidth} px in ${doc.clientWidth}`);
  for (const box of document.querySelectorAll(".tr")) {
    if (box.scrollWidth > box.clientWidth + 1) found.push(`${box.id}: ${box.scrollWidth} px in ${box.clientWidth}`);
    const right = box.getBoundingClientRect().right + 0.5;
    for (const element of box.querySelectorAll("*")) {
      const edge = element.getBoundingClientRect();
      if (edge.width && edge.right > right) {
        const what = element.id || element.className || element.tagName;
        found.push(`${what} ends at ${edge.right} px, past its box (${right}): ${element.textContent.slice(0, 60)}`);
      }
    }
  }
  return found;
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_scrolls_sideways(browser: Any, site: str, book: Book, width: int) -> None:
    pages = [(book.url, "ch09_who_retries/"), (book.url, "ch05_loop_endings/"), (site, "/hostile/")]
    for scheme in SCHEMES:
        for url, path in pages:
            page = open_page(browser, url, f"/{path.lstrip('/')}", scheme, width=width).page
            states = {"folded": page.evaluate(OVERFLOW)}
            open_everything(page)
            states["everything open"] = page.evaluate(OVERFLOW)
            for mode in ("mock", "live"):  # the other mode's runs hidden by the switch
                other = "live" if mode == "mock" else "mock"
                page.locator(f".tr-head .tr-mode[data-tr-mode='{other}']").click()
                states[f"{mode} only"] = page.evaluate(OVERFLOW)
                page.locator(f".tr-head .tr-mode[data-tr-mode='{other}']").click()
            page.evaluate("localStorage.clear()")
            page.context.close()
            for state, found in states.items():
                assert found == [], f"{path} at {width} px, {scheme}, {state}: {found[:5]}"


def test_targets_are_at_least_24_px(browser: Any, book: Book) -> None:
    for width in (390, 1280):
        page = open_page(browser, book.url, "/ch09_who_retries/", width=width).page
        open_everything(page)
        small = page.evaluate(
            """() => [...document.querySelectorAll(".tr button, .tr summary, .tr .tr-tl-turn")]
              .filter(e => e.offsetParent)
              .map(e => [e.getAttribute("aria-label") || e.textContent.slice(0, 30), e.getBoundingClientRect()])
              .filter(([, r]) => r.width < 24 || r.height < 24)
              .map(([name, r]) => `${name}: ${r.width} x ${r.height}`)"""
        )
        assert small == [], f"at {width} px: {small[:5]}"
        page.context.close()


def test_a_column_heading_that_names_a_field_keeps_it_whole(browser: Any, book: Book) -> None:
    # ch09's table heads its columns with field names: broken mid-word (`idempoten` / `t`) they read as two.
    page = open_page(browser, book.url, "/ch09_who_retries/", width=1280).page
    broken = page.evaluate(
        """() => [...document.querySelectorAll(".md-typeset th code")]
          .filter(code => code.getClientRects().length > 1).map(code => code.textContent)"""
    )
    assert page.locator(".md-typeset th code").count() >= 3
    assert broken == []
    page.context.close()


def test_every_trace_link_works_without_javascript(browser: Any, book: Book) -> None:
    for path in book.trace_pages:
        page = open_page(browser, book.url, f"/{path}", javascript=False).page
        links = page.evaluate("[...document.querySelectorAll('.tr a[href]')].map(a => a.getAttribute('href'))")
        assert links, path
        followed = set()
        fetched: dict[str, tuple[int, bytes]] = {}  # each file once: a payload page is linked from each of its blocks
        for href in links:
            if href in followed:
                continue
            followed.add(href)
            assert not href.startswith("/"), f"{path}: {href} would not work under a project site's prefix"
            if href.startswith("#"):
                # Chromium opens the <details> around a fragment's target.
                page.goto(f"{book.url}/{path}{href}")
                target = page.locator(f"[id='{href[1:]}']")
                assert target.count() == 1, f"{path}: {href} has no target"
                shown = target.locator("> summary") if target.evaluate("e => e.tagName") == "DETAILS" else target
                assert shown.is_visible(), f"{path}: {href} is not shown when followed"
            else:
                address, _, fragment = href.partition("#")
                if address not in fetched:
                    response = page.context.request.get(urljoin(f"{book.url}/{path}", address))
                    fetched[address] = (response.status, response.body())
                status, body = fetched[address]
                assert status == 200, f"{path}: {href} -> {status}"
                if address.endswith(".payloads.html"):
                    # A payload block's link lands on the payload in the chapter's payload page.
                    assert address.endswith(f"traces/{path.rstrip('/')}.payloads.html"), href
                    assert f'id="{fragment}"'.encode() in body, f"{path}: {href} has no target"
                    continue
                data = json.loads(body)
                if href.endswith(f"traces/{path.rstrip('/')}.json"):
                    assert data["chapter"] == path.rstrip("/")
        # What the script fills in says where it is without it.
        for filled in page.locator(".tr-whole, .tr-sent").all():
            assert filled.locator("p.tr-note a").count() >= 1
        page.context.close()


def test_folded_ch09_scenarios_tell_their_story(browser: Any, book: Book) -> None:
    from tests.test_render import CH09_STORIES

    page = open_page(browser, book.url, "/ch09_who_retries/").page
    for name, story in CH09_STORIES.items():
        for mode, wait in (("mock", "1s"), ("live", "50ms")):
            summary = page.locator(f"#ch09_who_retries-{name}-{mode} > summary")
            summary.scroll_into_view_if_needed()  # as a reader would: off screen, it is not drawn
            assert summary.is_visible()
            lines = summary.inner_text().split("\n")
            assert lines[0].startswith(f"{mode} scenario {name} · tools=place_order, price_of · "), lines
            assert lines[0].endswith(" · ended: no_tool_calls"), lines
            assert lines[1] == story.format(wait=wait)
    page.context.close()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_screenshots(browser: Any, book: Book, scheme: str) -> None:
    # Left in /tmp/screens to be looked at: phone and desktop, folded and open.
    SCREENS.mkdir(parents=True, exist_ok=True)
    for width in (390, 1280):
        page = open_page(browser, book.url, "/ch09_who_retries/", scheme, width=width).page
        assert page.locator("body").get_attribute("data-md-color-scheme") == (
            "slate" if scheme == "dark" else "default"
        )
        page.locator("#ch09_who_retries-service_is_busy").scroll_into_view_if_needed()
        page.wait_for_timeout(400)  # Material's header title fades on scroll
        folded = SCREENS / f"ch09-{width}-{scheme}-folded.png"
        page.screenshot(path=str(folded))
        open_all = "document.querySelectorAll('#ch09_who_retries-service_is_busy details').forEach(d => d.open = true)"
        page.evaluate(open_all)
        # The runs' turns and calls come from the payload page as they open, folded: opened again.
        page.locator("#ch09_who_retries-service_is_busy-live-turn-1").wait_for(state="attached")
        page.evaluate(open_all)
        page.evaluate("document.getElementById('ch09_who_retries-service_is_busy-live-turn-1').scrollIntoView()")
        page.wait_for_timeout(400)
        expanded = SCREENS / f"ch09-{width}-{scheme}-open.png"
        page.screenshot(path=str(expanded))
        summary_colour = page.locator("#ch09_who_retries-service_is_busy-mock > summary").evaluate(
            "s => getComputedStyle(s).color"
        )
        channels = [
            int(c) for c in summary_colour[summary_colour.index("(") + 1 : summary_colour.index(")")].split(",")[:3]
        ]
        # Text is dark on the light palette and light on the dark one.
        assert (sum(channels) / 3 > 128) == (scheme == "dark")
        assert folded.stat().st_size > 10_000
        assert expanded.stat().st_size > 10_000
        page.context.close()


def _visible(page: Any, selector: str) -> int:
    return int(page.locator(f"{selector} >> visible=true").count())


def test_a_remembered_view_never_blanks_a_chapter_without_its_runs(browser: Any, book: Book) -> None:
    # A reader who chose nothing sees a chapter without live runs show its mock runs, with no word of a choice.
    page = open_page(browser, book.url, "/ch11_streaming/").page
    page.evaluate("localStorage.clear()")
    page.reload()
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "mock"
    assert page.locator(".tr-head .tr-why").count() == 0
    page.goto(f"{book.url}/ch09_who_retries/")
    page.wait_for_selector(".tr-chapter[data-show]")
    assert _visible(page, ".tr-prose[data-mode='mock']") >= 1
    assert _visible(page, ".tr-prose[data-mode='live']") >= 1
    # Live only: the chapter's mock runs and the prose about them go.
    page.locator(".tr-head .tr-mode[data-tr-mode='mock']").click()
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "live"
    assert _visible(page, ".tr-run[data-mode='mock']") == 0
    assert _visible(page, ".tr-prose[data-mode='mock']") == 0
    assert _visible(page, ".tr-prose[data-mode='live']") >= 1
    assert page.evaluate("localStorage.getItem('primer.traces.show')") == "live"

    # ch11 has no live run: it shows its mock runs, presses mock, and says why.
    page.goto(f"{book.url}/ch11_streaming/")
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "mock"
    runs = page.locator(".tr-run[data-mode='mock']")
    assert runs.count() >= 3
    assert _visible(page, ".tr-run[data-mode='mock']") == runs.count()
    head = page.locator(".tr-head").first
    assert head.locator(".tr-mode[data-tr-mode='mock']").get_attribute("aria-pressed") == "true"
    assert head.locator(".tr-mode[data-tr-mode='live']").is_disabled()
    why = head.locator(".tr-why")
    assert why.is_visible()
    assert why.text_content() == "Showing the mock runs: this chapter has no live run (you chose live)."
    # Pressing mock there neither blanks the page nor changes what was chosen.
    head.locator(".tr-mode[data-tr-mode='mock']").click()
    assert _visible(page, ".tr-run[data-mode='mock']") == runs.count()
    assert page.evaluate("localStorage.getItem('primer.traces.show')") == "live"

    # Back on ch09, the choice still holds where it can.
    page.goto(f"{book.url}/ch09_who_retries/")
    page.wait_for_selector(".tr-chapter[data-show]")
    assert page.locator(".tr-chapter").first.get_attribute("data-show") == "live"
    assert page.locator(".tr-head .tr-why").count() == 0
    page.evaluate("localStorage.clear()")
    page.context.close()


def test_mode_prose_is_labelled_without_javascript(browser: Any, book: Book) -> None:
    page = open_page(browser, book.url, "/ch09_who_retries/", javascript=False).page
    labels = page.locator(".tr-prose .tr-prose-mode").all_text_contents()
    assert "mock about the mock run of service_is_busy" in labels
    assert "live about the live run of service_is_busy" in labels
    assert _visible(page, ".tr-prose") == page.locator(".tr-prose").count()
    page.context.close()


def test_the_payload_page_links_land_without_javascript(browser: Any, book: Book) -> None:
    for chapter in ("ch09_who_retries", "ch05_loop_endings"):
        page = open_page(browser, book.url, f"/traces/{chapter}.payloads.html", javascript=False).page
        links = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
        assert len(links) > 10
        back = page.get_by_role("link", name="Back to the chapter page")
        assert back.get_attribute("href") == f"../{chapter}/"
        chapter_ids: set[str] = set()
        for href in dict.fromkeys(links):
            address, _, fragment = href.partition("#")
            if address.endswith(f"/traces/{chapter}.payloads.html"):
                assert page.locator(f"[id='{fragment}']").count() == 1, href
            elif address.endswith(".json"):
                assert page.context.request.get(href).status == 200, href
            else:
                assert address == f"{book.url}/{chapter}/", href
                if not chapter_ids:
                    response = page.context.request.get(address)
                    assert response.status == 200
                    chapter_ids = set(re.findall(r' id="([^"]+)"', response.text()))
                assert not fragment or fragment in chapter_ids, href
        assert page.locator("h3.tr-payload-head").count() == page.locator(".tr-payload").count()
        page.context.close()


def test_a_replys_markdown_is_rendered_with_and_without_javascript(browser: Any, book: Book) -> None:
    # Filled in from the payload page (traces.js copies only what the renderer makes), and on that page itself.
    anchor = "ch05_loop_endings-within_token_limit-live-turn-3-model"
    watched = open_page(browser, book.url, "/ch05_loop_endings/")
    page = watched.page
    open_everything(page)
    reply = page.locator(f"#{anchor} section.tr-md")
    assert reply.locator("strong").all_text_contents()[:1] == ["butter"]
    raw = page.locator(f"#{anchor} details.tr-raw")
    assert raw.locator("summary").text_content() == "raw text"
    assert "We're lowest on **butter**" in (raw.locator("pre").text_content() or "")
    assert reply.evaluate("e => getComputedStyle(e).whiteSpace") == "normal"
    page.context.close()
    without = open_page(browser, book.url, f"/traces/ch05_loop_endings.payloads.html#{anchor}-body", javascript=False)
    block = without.page.locator(f"#{anchor}-body")
    assert block.locator("section.tr-md strong").first.text_content() == "butter"
    assert block.locator("details.tr-raw pre").count() == 1
    without.page.context.close()


def test_a_payload_block_whose_page_cannot_be_fetched_keeps_a_link_to_it(browser: Any, book: Book) -> None:
    # The links of the payload blocks are made root-relative when their block opens, not at
    # load (one per run: that pass was a share of the page's setup), and keep their fragment.
    watched = open_page(browser, book.url, "/ch09_who_retries/")
    page = watched.page
    page.route("**/*.payloads.html", lambda route: route.abort())
    run = "ch09_who_retries-service_is_busy-mock"
    link = page.locator(f"a.tr-load[href$='#{run}-body']")
    # Instant navigation may resolve a relative href against another page: the chapter's
    # div keeps the payload page's root-relative path, which the opening resolves again.
    page.evaluate("a => { a.href = 'http://elsewhere.invalid/x.html' + a.hash; }", link.element_handle())
    chapter = link.evaluate("a => a.closest('.tr-chapter').getAttribute('data-tr-payloads')")
    assert chapter == "traces/ch09_who_retries.payloads.html"
    page.evaluate("id => { document.getElementById(id).open = true; }", run)
    page.wait_for_function("() => !document.querySelector(`a.tr-load[href^='http://elsewhere']`)")
    assert link.evaluate("a => a.href") == f"{book.url}/traces/ch09_who_retries.payloads.html#{run}-body"
    page.wait_for_timeout(300)
    assert page.locator(f"[id='{run}-turn-1']").count() == 0, "the run stays a link"
    assert link.is_visible()
    page.context.close()


def test_a_timeline_turn_opens_its_run_in_place(browser: Any, book: Book) -> None:
    # A turn's bar links to it on the payload page; with JavaScript, to it here: its run is filled in and opened
    # at it, without the page being loaded again by Material's instant navigation (which would drop what is filled).
    page = open_page(browser, book.url, "/ch09_who_retries/").page
    run = "ch09_who_retries-order_may_have_landed-mock"
    bar = page.locator(f"#{run}").locator("xpath=..").locator("a.tr-tl-turn").nth(1)
    page.wait_for_function("() => document.querySelector('a.tr-tl-turn').getAttribute('href').startsWith('#')")
    assert bar.get_attribute("href") == f"#{run}-turn-2"
    page.evaluate("document.querySelector('.tr-chapter').__same = true")
    bar.click()
    page.wait_for_function(f"document.getElementById('{run}-turn-2')?.open === true")
    assert is_open(page, run)
    assert page.evaluate("document.querySelector('.tr-chapter').__same") is True, "not loaded again"
    top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top", f"{run}-turn-2")
    assert 0 < top < 1000, top
    page.context.close()
