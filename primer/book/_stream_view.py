"""A streamed reply as the page draws it (``stream.html.j2``): its timing in a line, its events folded.

The events are drawn one line each (arrival, gap, what came, by size) and as SSE:
a page grows with the events a stream had, no faster.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup

from primer.book._render_text import escape_text
from primer.streaming import fragments, sse_text
from primer.summary import count
from primer.trace import ModelCall, Stream, StreamEvent

__all__ = ["StreamView", "stream_view"]


@dataclass(frozen=True)
class StreamView:
    """What the page shows of one streamed reply: its line, its events' timeline and SSE (escaped), their ids."""

    stream: Stream
    line: str
    timeline: Markup
    timeline_anchor: str
    sse: Markup
    sse_label: str
    sse_anchor: str


def _what(event: StreamEvent) -> str:
    if event.done:
        return "[DONE]"
    if event.text is not None:
        return f"not JSON ({count(len(event.text), 'character')})"
    return (
        ", ".join(f"{kind} {size}" if size else kind for kind, size in fragments(event.data)) or "nothing of the reply"
    )


def _line(call: ModelCall, stream: Stream) -> str:
    marks = [
        ("first byte", stream.first_byte_ms),
        ("first token", stream.first_token_ms),
        ("last token", stream.last_token_ms),
    ]
    parts = [count(len(stream.events), "event"), *(f"{name} {ms:.1f}ms" for name, ms in marks if ms is not None)]
    first, last = stream.first_token_ms, stream.last_token_ms
    if first is not None and last is not None and last > first:
        # How fast the reply came once it had begun; without token counts (the mock's), the pieces that came.
        seconds = (last - first) / 1000
        if call.usage is not None and call.usage.output_tokens > 1:
            parts.append(f"{(call.usage.output_tokens - 1) / seconds:.1f} tokens/s")
        else:
            parts.append(f"{(stream.fragments - 1) / seconds:.1f} pieces/s")
    parts.append("ended with [DONE]" if stream.done else "no [DONE]")
    return " · ".join(parts)


def stream_view(call: ModelCall, anchor: str) -> StreamView | None:
    """What to draw for a model call's stream (None: not streamed); the blocks' ids are made from ``anchor``."""
    stream = call.streamed
    if stream is None:
        return None
    lines, before = [], None
    for event in stream.events:
        # ``   240.5ms  +40.0  content 4``: when it came, the gap since the one before, what it brought.
        gap = f"+{event.at_ms - before:.1f}" if before is not None else ""
        name = f"event: {event.event} · " if event.event else ""
        lines.append(f"{f'{event.at_ms:.1f}ms':>11} {gap:>8}  {name}{_what(event)}")
        before = event.at_ms
    if call.kind == "mock":
        label = "the events as SSE · simulated by the mock model: no wire"
    else:
        label = "the events as SSE on the wire · each event's data as recorded (redacted)"
    return StreamView(
        stream=stream,
        line=_line(call, stream),
        timeline=Markup(escape_text("\n".join(lines))),  # noqa: S704 - escaped here
        timeline_anchor=f"{anchor}-stream-events",
        sse=Markup(escape_text(sse_text(stream))),  # noqa: S704 - escaped here
        sse_label=f"{label} ({count(len(stream.events), 'event')})",
        sse_anchor=f"{anchor}-stream-sse",
    )
