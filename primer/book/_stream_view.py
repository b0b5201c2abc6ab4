"""A streamed reply as the page draws it (``stream.html.j2``): its timing in a line, its events folded.

One line of timing, then, folded, a timeline of one line per event (its arrival and what it brought,
by size, not content) and the events as SSE: a page grows with the events a stream had, no faster::

    stream  38 events · first byte 182.0ms · first token 240.5ms · last token 1630.2ms · 27.3 tokens/s · ...
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from primer.streaming import fragments, sse_text
from primer.summary import count
from primer.trace import ModelCall, Stream, StreamEvent

__all__ = ["StreamView", "stream_view", "timeline_line"]


@dataclass(frozen=True)
class StreamView:
    """What the page shows of one streamed reply."""

    stream: Stream
    #: Its timing in one line (``38 events · first token 240.5ms · ...``).
    line: str
    #: One line per event: when it came and what it brought (escaped).
    timeline: Markup
    timeline_anchor: str
    #: The events as SSE (escaped), and what to call them.
    sse: Markup
    sse_label: str
    sse_anchor: str


def _text(text: str) -> Markup:
    # Element content only: quotes may stay, which keeps JSON light (as render.json_block).
    return Markup(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))  # noqa: S704 - escaped here


def _ms(value: float) -> str:
    return f"{value:.1f}ms"


def _what(event: StreamEvent) -> str:
    if event.done:
        return "[DONE]"
    if event.text is not None:
        return f"not JSON ({count(len(event.text), 'character')})"
    parts = [f"{kind} {size}" if size else kind for kind, size in fragments(event.data)]
    return ", ".join(parts) or "nothing of the reply"


def timeline_line(event: StreamEvent, before: float | None) -> str:
    """``   240.5ms  +40.0  content 4``: when an event came, the gap since the one before, what it brought."""
    gap = f"+{event.at_ms - before:.1f}" if before is not None else ""
    name = f"event: {event.event} · " if event.event else ""
    return f"{_ms(event.at_ms):>11} {gap:>8}  {name}{_what(event)}"


def _rate(call: ModelCall, stream: Stream) -> str | None:
    """How fast the reply came once it had begun: what came after the first piece, per second."""
    first, last = stream.first_token_ms, stream.last_token_ms
    if first is None or last is None or last <= first:
        return None
    seconds = (last - first) / 1000
    if call.usage is not None and call.usage.output_tokens > 1:
        return f"{(call.usage.output_tokens - 1) / seconds:.1f} tokens/s"
    # No token counts (the mock model has none): the pieces that came are what can be counted.
    return f"{(stream.fragments - 1) / seconds:.1f} pieces/s"


def _line(call: ModelCall, stream: Stream) -> str:
    parts = [count(len(stream.events), "event")]
    if stream.first_byte_ms is not None:
        parts.append(f"first byte {_ms(stream.first_byte_ms)}")
    if stream.first_token_ms is not None:
        parts.append(f"first token {_ms(stream.first_token_ms)}")
    if stream.last_token_ms is not None:
        parts.append(f"last token {_ms(stream.last_token_ms)}")
    rate = _rate(call, stream)
    if rate:
        parts.append(rate)
    parts.append("ended with [DONE]" if stream.done else "no [DONE]")
    return " · ".join(parts)


def stream_view(call: ModelCall, anchor: str) -> StreamView | None:
    """What to draw for a model call's stream (None: not streamed); the blocks' ids are made from ``anchor``."""
    stream = call.streamed
    if stream is None:
        return None
    lines, before = [], None
    for event in stream.events:
        lines.append(timeline_line(event, before))
        before = event.at_ms
    if call.kind == "mock":
        label = "the events as SSE · simulated by the mock model: no wire"
    else:
        label = "the events as SSE on the wire · each event's data as recorded (redacted)"
    return StreamView(
        stream=stream,
        line=_line(call, stream),
        timeline=_text("\n".join(lines)),
        timeline_anchor=f"{anchor}-stream-events",
        sse=_text(sse_text(stream)),
        sse_label=f"{label} ({count(len(stream.events), 'event')})",
        sse_anchor=f"{anchor}-stream-sse",
    )
