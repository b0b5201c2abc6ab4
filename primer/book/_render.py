"""Render traces as collapsible HTML: ``ChapterTraces`` in, one HTML string out.

This is the *render* half of the Markdown extension (the *load* half asks a
``TraceSource``, in ``primer.book.markdown``). It never runs a scenario and
never reads a file but its templates, so the same traces always give the same
page::

    html = render_traces(traces)                       # every scenario of the chapter
    html = render_traces(traces, "service_is_busy")    # one scenario

The page is nested ``<details>``: summary lines (worded by ``primer.summary``)
tell the story closed, payloads are one click deeper. Everything that came
from a model, a tool or a service goes through Jinja2's autoescaping. Payloads
sit in ``data-search-exclude`` blocks so only the summary lines reach
Material's search index; such a block never holds a ``div``, because
Material's indexer ends an exclusion at the first closing tag of the same name.

Page weight grows with what happened, not with turns squared: the declared
tools are shown once per page and referred to after, each turn's context
shows the messages new since the turn before (the whole context is one click
away, built from the run's transcript), and a live request body shows what
is new and refers to the messages and tools the previous request already
carried. What is referred to is a ``Ref``, drawn beside the payload and never
as a value inside its JSON; the whole body as sent is rebuilt by traces.js
(``Rebuild``), and the trace JSON holds it without JavaScript.

Payloads are plain escaped text (traces.js colours JSON when it is opened),
and every ``<pre>`` has an id of its own, which Material's copy button uses
to name the block it copies.

A book's page does not carry the payloads: when the traces name a
``payloads_url``, each payload block (``div.tr-body``, by an id of its own) is
a link to its element in the chapter's payload page (``render_payloads``,
published beside the trace JSON), which a reader without JavaScript lands
on and traces.js fills the block in from when it is first opened. The
timelines stay on the page: they are shown unopened.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from primer import summary
from primer.book._payloads import BLOCK_END, BLOCK_START
from primer.book._render_compare import compare
from primer.book._render_markdown import ReplyMarkdown
from primer.book._render_options import RenderOptions
from primer.book._render_prepare import scenarios
from primer.book._render_text import Anchors, clean, json_block, json_inline, safe_url
from primer.book._render_timeline import Segment
from primer.book._render_views import Comparison
from primer.book._source import ChapterTraces, LiveStatus
from primer.book._stream_view import stream_view
from primer.export import otlp_available
from primer.trace import Attempt, Backoff, ToolRun

__all__ = [
    "Anchors",
    "Comparison",
    "RenderOptions",
    "Segment",
    "compare",
    "json_block",
    "json_inline",
    "render_error",
    "render_payloads",
    "render_traces",
]


# -- the renderer ------------------------------------------------------------


def _exchange_json(run: ToolRun, step: Attempt) -> dict[str, Any]:
    data: dict[str, Any] = {"number": step.number}
    if step.failure is not None:
        data.update(step.failure.model_dump())
    return data


def _grow(ms: float) -> int:
    # flex-grow in tenths of a millisecond, as the figures are printed; at
    # least 1: factors summing below 1 would leave part of the bar empty.
    return max(1, round(ms * 10))


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
        json_inline=json_inline,
        attempt_json=_exchange_json,
        is_backoff=lambda step: isinstance(step, Backoff),
        grow=_grow,
        count=summary.count,
        stream_view=stream_view,
    )
    return env


def render_traces(
    traces: ChapterTraces,
    scenario: str | None = None,
    *,
    anchors: Anchors | None = None,
    head: bool = True,
    payloads: bool = True,
    options: RenderOptions | None = None,
) -> str:
    """The HTML of a chapter's traces, or of one scenario's.

    Raises ``NotFound`` (naming the scenarios there are) for an unknown
    scenario; ``anchors`` keeps ids unique across several traces on a page;
    ``head=False`` leaves out the chapter's switch, totals, live status and
    download link, for a page's second marker of the same chapter. When the
    traces name a ``payloads_url``, each payload block is a link into the
    chapter's payload page (``render_payloads``) unless ``payloads=False``.
    ``options`` are what the book's configuration changes (the price table
    the live runs' costs are worked out from; the package's own by default).
    """
    options = options if options is not None else RenderOptions()
    anchors = anchors if anchors is not None else Anchors()
    anchor = anchors.make(traces.chapter, *([scenario] if scenario else []), "traces")
    failure_anchor = anchors.make(anchor, "failure") if head and traces.live_status.failure else ""
    markdown = ReplyMarkdown()
    shown = list(scenarios(traces, scenario, anchors, markdown.plain))
    status: LiveStatus = traces.live_status
    html = (
        _environment()
        .get_template("chapter.html.j2")
        .render(
            traces=traces,
            anchor=anchor,
            failure_anchor=failure_anchor,
            scenarios=shown,
            status=status,
            download_url=safe_url(traces.download_url),
            payloads_url=safe_url(traces.payloads_url) if payloads else None,
            # Only where the book publishes it: the export needs the optional otel extra.
            otlp=otlp_available(),
            head=head,
            prices=options.prices,
            markdown=markdown,
        )
    )
    # Marked, so a search plugin can be given the block's summary lines alone
    # (primer.book._payloads); comments are inert on the page.
    return f"{BLOCK_START}{clean(html)}{BLOCK_END}"


def render_error(message: str, *, marker: str | None = None) -> str:
    """A visible, escaped error block in place of a trace that could not be shown."""
    html = _environment().get_template("error.html.j2").render(message=message, marker=marker)
    return clean(html)


def render_payloads(traces: ChapterTraces, *, page_url: str | None = None) -> str:
    """The chapter's payload page (``primer.book._render_payload_page``)."""
    from primer.book._render_payload_page import render_payloads as render

    return render(traces, page_url=page_url)
