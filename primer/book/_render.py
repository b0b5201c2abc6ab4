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

from primer import spent, summary
from primer.book._links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR, page_relative
from primer.book._render_markdown import ReplyMarkdown, escape_text, safe_url
from primer.book._render_views import Anchors, prepare, stream_view
from primer.book._source import ChapterTraces
from primer.export import otlp_available
from primer.inert import clean
from primer.prices import PriceTable, default_prices

__all__ = ["Anchors", "json_block", "render_error", "render_payloads", "render_traces"]


def _here(anchor: str) -> Markup:
    return Markup('href="#{}"').format(anchor)


def json_block(value: Any, indent: int | None = 2) -> Markup:
    """A JSON value escaped, pretty-printed for a ``<pre>`` (traces.js colours it when opened) or on one line."""
    return Markup(escape_text(json.dumps(value, indent=indent, ensure_ascii=False, default=str)))  # noqa: S704 - escaped


@cache
def _environment() -> Environment:
    # Not optimized: Jinja's constant folding finds nothing to fold here, and took 25 of the 90 ms of compiling.
    env = Environment(
        loader=PackageLoader("primer.book", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        optimized=False,
    )
    env.globals.update(
        summary=summary,
        json_block=json_block,
        # flex-grow in tenths of a millisecond, as the figures are printed; at
        # least 1: factors summing below 1 would leave part of the bar empty.
        grow=lambda ms: max(1, round(ms * 10)),
        stream_view=stream_view,
        spent=spent,
        keep=None,
        to=_here,
    )
    return env


def _chapter(
    traces: ChapterTraces,
    scenario: str | None,
    anchors: Anchors,
    prices: PriceTable | None,
    *,
    head: bool = True,
    **more: Any,
) -> str:
    # The chapter template rendered from the views prepared for it, not yet ``clean``ed (a payload page keeps
    # only the blocks ``more`` collects); ``more`` adds to what it is given.
    anchor = anchors.make(traces.chapter, *([scenario] if scenario else []), "traces")
    failure_anchor = anchors.make(anchor, "failure") if head and traces.live_status.failure else ""
    markdown = ReplyMarkdown()
    template = _environment().get_template("chapter.html.j2")
    return template.render(
        traces=traces,
        anchor=anchor,
        failure_anchor=failure_anchor,
        scenarios=prepare(traces, scenario, anchors, markdown.plain),
        download_url=safe_url(traces.download_url),
        otlp=otlp_available(),  # only where the book publishes it: the export needs the otel extra
        head=head,
        prices=prices or default_prices(),
        markdown=markdown,
        payloads_url=safe_url(traces.payloads_url),
        **more,
    )


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
    return clean(_chapter(traces, scenario, anchors or Anchors(), prices, head=head))


def render_error(message: str, *, marker: str | None = None) -> str:
    """A visible, escaped error block in place of a trace that could not be shown."""
    return clean(_environment().get_template("error.html.j2").render(message=message, marker=marker))


def render_payloads(traces: ChapterTraces, *, page_url: str | None = None, prices: PriceTable | None = None) -> str:
    """The chapter's payload page (``traces/CHAPTER.payloads.html``): every payload block, by the id it has on a page.

    It stands alone, for a reader without JavaScript: a link back to the chapter's page (``page_url``, from the
    site root), a heading per scenario and block (*mock run*: its turns and calls, their payloads in place), links
    that land here.
    """
    page = None if page_url is None else page_url or "./"
    kept: dict[str, list[tuple[str, str, Markup]]] = {}  # by scenario: each block's id, heading and HTML

    def there(anchor: str) -> Markup:  # root-relative, made relative to this page below
        return Markup('href="{0}#{1}" data-tr-root-relative="{0}"').format(page, anchor)

    def keep(anchor: str, scenario: str, what: str, html: Markup) -> str:
        kept.setdefault(scenario, []).append((anchor, what, html))
        return ""

    _chapter(traces, None, Anchors(), prices, keep=keep)
    template = _environment().get_template("payloads.html.j2")
    html = template.render(head=PAYLOADS_HEAD, chapter=traces.chapter, page=page, scenarios=kept.items(), there=there)
    return page_relative(clean(html), f"{PUBLISHED_DIR}/{traces.chapter}{PAYLOADS_SUFFIX}")
