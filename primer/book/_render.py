"""Render traces as collapsible HTML: ``ChapterTraces`` in, one HTML string out.

``render_traces`` draws the views ``_render_views.prepare`` makes as nested ``<details>``: summary
lines tell the story closed, payloads are a click deeper. What came from a model, a tool or a service
is escaped by Jinja2's autoescaping. With a ``payloads_url``, each payload block links to the chapter's
payload page (``render_payloads``, drawn from the same views), which traces.js fills the block in from.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from primer import summary
from primer.book._links import BLOCK_END, BLOCK_START, PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR, page_relative
from primer.book._prices import PriceTable, default_prices
from primer.book._render_markdown import ReplyMarkdown, clean, escape_text, safe_url
from primer.book._render_views import Anchors, prepare, stream_view, totals
from primer.book._source import ChapterTraces
from primer.export import otlp_available
from primer.trace import Backoff

__all__ = ["Anchors", "json_block", "render_error", "render_payloads", "render_traces"]


def _grow(ms: float) -> int:
    # flex-grow in tenths of a millisecond, as the figures are printed; at
    # least 1: factors summing below 1 would leave part of the bar empty.
    return max(1, round(ms * 10))


def _here(anchor: str) -> Markup:
    return Markup('href="#{}"').format(anchor)


def json_block(value: Any) -> Markup:
    """A JSON value pretty-printed (indent 2) and escaped, for a ``<pre>`` (traces.js colours it when opened)."""
    return Markup(escape_text(json.dumps(value, indent=2, ensure_ascii=False, default=str)))  # noqa: S704 - escaped


def _json_inline(value: Any) -> Markup:
    # On one line, as the seeds print ``attempt {"number": 1}``.
    return Markup(escape_text(json.dumps(value, ensure_ascii=False, default=str)))  # noqa: S704 - escaped


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("primer.book", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        summary=summary,
        json_block=json_block,
        json_inline=_json_inline,
        attempt_json=lambda step: {"number": step.number, **(step.failure.model_dump() if step.failure else {})},
        is_backoff=lambda step: isinstance(step, Backoff),
        grow=_grow,
        count=summary.count,
        stream_view=stream_view,
        totals=totals,
        keep=None,
        to=_here,
        to_page=_here,
        here=_here,
    )
    return env


def _chapter(
    traces: ChapterTraces,
    scenario: str | None,
    anchors: Anchors,
    prices: PriceTable,
    *,
    head: bool = True,
    **more: Any,
) -> str:
    # The chapter template rendered from the views prepared for it; ``more`` adds to what it is given.
    anchor = anchors.make(traces.chapter, *([scenario] if scenario else []), "traces")
    failure_anchor = anchors.make(anchor, "failure") if head and traces.live_status.failure else ""
    markdown = ReplyMarkdown()
    views = prepare(traces, scenario, anchors, markdown.plain)
    html = (
        _environment()
        .get_template("chapter.html.j2")
        .render(
            {
                "traces": traces,
                "anchor": anchor,
                "failure_anchor": failure_anchor,
                "scenarios": views,
                "download_url": safe_url(traces.download_url),
                "status": traces.live_status,
                "otlp": otlp_available(),  # only where the book publishes it: the export needs the otel extra
                "head": head,
                "prices": prices,
                "markdown": markdown,
                "payloads_url": safe_url(traces.payloads_url),
                **more,
            }
        )
    )
    return clean(html)


def render_traces(
    traces: ChapterTraces,
    scenario: str | None = None,
    *,
    anchors: Anchors | None = None,
    head: bool = True,
    prices: PriceTable | None = None,
) -> str:
    """The HTML of a chapter's traces, or of one scenario's (``NotFound`` names the scenarios there are).

    ``anchors`` keeps ids unique across several traces on a page; ``head=False`` leaves out the chapter's
    switch, totals, live status and download link (a page's second marker of a chapter).
    """
    prices = prices if prices is not None else default_prices()
    html = _chapter(traces, scenario, anchors if anchors is not None else Anchors(), prices, head=head)
    # Marked, so a search plugin can be given the block's summary lines alone (_payloads); comments are inert.
    return f"{BLOCK_START}{html}{BLOCK_END}"


def render_error(message: str, *, marker: str | None = None) -> str:
    """A visible, escaped error block in place of a trace that could not be shown."""
    return clean(_environment().get_template("error.html.j2").render(message=message, marker=marker))


def render_payloads(traces: ChapterTraces, *, page_url: str | None = None, prices: PriceTable | None = None) -> str:
    """The chapter's payload page (``traces/CHAPTER.payloads.html``): every payload block, by the id it has on a page.

    It stands alone, for a reader without JavaScript: a link back to the chapter's page (``page_url``, from the
    site root), a heading per scenario and block (*mock run · turn 2 · model call*), links to here or the page.
    """
    page = None if page_url is None else page_url or "./"
    kept: dict[str, list[tuple[str, str, Markup]]] = {}  # by scenario: each block's id, heading and HTML

    def there(anchor: str) -> Markup:
        # Root-relative (made relative to this page below), and the fragment traces.js
        # links to in place once the block is filled into the chapter page.
        return Markup('href="{0}#{1}" data-tr-page-link="#{1}" data-tr-root-relative="{0}"').format(page, anchor)

    def keep(anchor: str, scenario: str, what: str, html: Markup) -> str:
        kept.setdefault(scenario, []).append((anchor, what, html))
        return ""

    def to(anchor: str) -> Markup:  # a call lands here, on its payload (a turn or an ending: ``there``)
        return _here(f"{anchor}-body")

    prices = prices if prices is not None else default_prices()
    _chapter(traces, None, Anchors(), prices, keep=keep, to=to, to_page=there if page else _here, payloads_url=None)
    page_html = (
        _environment()
        .get_template("payloads.html.j2")
        .render(head=PAYLOADS_HEAD, chapter=traces.chapter, page=page, scenarios=kept.items(), there=there)
    )
    return page_relative(clean(page_html), f"{PUBLISHED_DIR}/{traces.chapter}{PAYLOADS_SUFFIX}")
