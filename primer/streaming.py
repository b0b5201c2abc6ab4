"""Streamed replies: events in, one reply out, and the events kept as they came.

Asked to stream (``"stream": true``), a chat-completions endpoint answers
with server-sent events (SSE) instead of one JSON body. Each event's data is
a ``chat.completion.chunk`` whose ``delta`` holds the next piece of the
reply; the last chunk of the choice carries the ``finish_reason``, a final
one the ``usage`` (when ``stream_options.include_usage`` asked for it), and
``data: [DONE]`` ends the stream::

    data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Milk"}}]}

    data: {"choices": [{"index": 0, "delta": {"content": " is 1.20."}}]}

    data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}

    data: [DONE]

Tool calls arrive in pieces too: the first piece of each call names it
(``index``, ``id``, ``function.name``), the next ones add to its
``function.arguments``, and pieces of several calls may come in any order,
told apart by ``index``. ``Assembler`` puts the pieces together into the
body a non-streamed call would have had, so a streamed reply is read by the
same code as a whole one::

    assembler = Assembler()
    for chunk in chunks:
        assembler.add(chunk)
    assembler.completion()   # {"choices": [{"message": {...}, "finish_reason": "stop"}], "usage": ...}

For the record, ``EventParser`` reads the events from the bytes as they
pass (``primer.wire`` times each one), ``scrub_fragments`` keeps a secret
out of the record even when it arrived split across events, and
``sse_text`` writes the recorded events back as SSE (the page shows it, a
replay sends it).
"""

from __future__ import annotations

import bisect
import codecs
import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from primer.redact import Redactor
from primer.summary import count
from primer.trace import ModelCall, Stream, StreamEvent

__all__ = [
    "DONE",
    "Assembler",
    "EventParser",
    "InvalidChunk",
    "ParsedEvent",
    "fragments",
    "reassembled",
    "recorded_event",
    "scrub_fragments",
    "sse_text",
    "stream_line",
    "stream_timeline",
]

#: The data of the event that ends a chat-completions stream.
DONE = "[DONE]"


class InvalidChunk(Exception):
    """An event whose data is JSON but not a chat completion chunk the library can read."""


@dataclass
class _Call:
    """One tool call being assembled from its pieces."""

    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class Assembler:
    """Chat completion chunks in, in order; the completion they make up out.

    Only the first choice is read (the library asks for one). Text and
    reasoning are joined; tool calls are gathered by ``index``, their
    argument pieces joined in arrival order; the last ``finish_reason`` and
    the last ``usage`` seen win.
    """

    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    #: Whether any chunk had a ``content`` key, even an empty one.
    said_content: bool = False
    #: Chunks added so far.
    chunks: int = 0

    def add(self, chunk: Any) -> None:
        """Add one chunk; raises ``InvalidChunk`` when it is not one."""
        if not isinstance(chunk, dict):
            raise InvalidChunk("is not a JSON object")
        self.chunks += 1
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = chunk.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise InvalidChunk("has choices that are not a list")
        for choice in choices:
            if not isinstance(choice, dict):
                raise InvalidChunk("has a choice that is not an object")
            if choice.get("index", 0) != 0:
                continue  # only one choice is asked for; another is not this reply
            self._delta(choice.get("delta"))
            finish = choice.get("finish_reason")
            if isinstance(finish, str):
                self.finish_reason = finish

    def _delta(self, delta: Any) -> None:
        if delta is None:
            return
        if not isinstance(delta, dict):
            raise InvalidChunk("has a delta that is not an object")
        content = delta.get("content")
        if isinstance(content, str):
            self.said_content = True
            self.content.append(content)
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str):
            self.reasoning.append(reasoning)
        calls = delta.get("tool_calls")
        if calls is None:
            return
        if not isinstance(calls, list):
            raise InvalidChunk("has tool calls that are not a list")
        for piece in calls:
            self._call_piece(piece)

    def _call_piece(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            raise InvalidChunk("has a tool call piece that is not an object")
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # Without an index a piece could belong to any call: a new id
            # starts one, anything else continues the last (some providers
            # send calls one after another and leave the index out).
            starts = bool(piece.get("id")) or not self.calls
            index = max(self.calls, default=-1) + 1 if starts else max(self.calls)
        call = self.calls.setdefault(index, _Call())
        call_id = piece.get("id")
        if isinstance(call_id, str) and call_id and call_id != call.id:
            # The first piece names the call; some providers repeat the id in
            # every piece. One that sends the id in parts is joined, as a
            # name in parts is: so a secret split across them is seen whole.
            call.id = call_id if call.id is None else call.id + call_id
        function = piece.get("function")
        if function is None:
            return
        if not isinstance(function, dict):
            raise InvalidChunk("has a tool call whose function is not an object")
        name = function.get("name")
        if isinstance(name, str):
            call.name += name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)

    def completion(self) -> dict[str, Any]:
        """The body a non-streamed call would have answered, as far as the pieces go."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) if self.said_content else None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "index": index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": "".join(call.arguments)},
                }
                for index, call in sorted(self.calls.items())
            ]
        body: dict[str, Any] = {"choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}]}
        if self.usage is not None:
            body["usage"] = self.usage
        return body


# -- reading events off the wire -----------------------------------------------------


@dataclass(frozen=True)
class ParsedEvent:
    """One server-sent event: its ``event:`` name and its data lines joined."""

    event: str | None
    data: str


class EventParser:
    """Server-sent events from bytes fed in as they arrive (the SSE format, as browsers read it).

    Lines end with CR, LF or CRLF; a blank line ends an event; ``data:``
    lines are joined with newlines; a line starting with ``:`` is a comment.
    An event cut off before its blank line is not an event (nor is it for
    the SDK): ``pending`` says whether bytes of one are waiting.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""

    def feed(self, chunk: bytes) -> list[ParsedEvent]:
        """The events this chunk completes."""
        text = self._buffer + self._decoder.decode(chunk)
        if "\r" in text:
            # A CR at the very end may be the first half of a CRLF: keep it for the next chunk.
            held = text.endswith("\r")
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if held:
                text = text[:-1] + "\r"
        events = []
        start = 0
        while (end := text.find("\n\n", start)) >= 0:
            event = _event(text[start:end])
            if event is not None:
                events.append(event)
            start = end + 2
        self._buffer = text[start:]
        return events

    def finish(self) -> list[ParsedEvent]:
        """At the end of the body: an event ended by the body's end rather than a blank line is dropped."""
        self._buffer += self._decoder.decode(b"", final=True)
        return []

    @property
    def pending(self) -> bool:
        """Whether part of an unfinished event is waiting for its blank line."""
        return bool(self._buffer.strip("\r\n"))


def _event(block: str) -> ParsedEvent | None:
    name: str | None = None
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if key == "data":
            data.append(value)
        elif key == "event":
            name = value
    if not data:
        return None  # comments only (a keep-alive), or an event with no data: nothing is dispatched
    return ParsedEvent(name, "\n".join(data))


def recorded_event(event: ParsedEvent, at_ms: float, redactor: Redactor) -> StreamEvent:
    """An event as a trace keeps it: its data as JSON when it parses, else as text; all of it redacted.

    The ``event:`` name too: the SDK reads on past names it does not know,
    so a provider can send anything there.
    """
    data = event.data
    name = redactor.text(event.event) if event.event is not None else None
    if data[:1] in ("{", "["):
        try:
            return StreamEvent(at_ms=at_ms, event=name, data=redactor.json(json.loads(data)))
        except ValueError:
            pass
    return StreamEvent(at_ms=at_ms, event=name, text=redactor.text(data))


# -- what each event brought -------------------------------------------------------


def fragments(data: Any) -> Iterator[tuple[str, int]]:
    """What a chunk brought, read loosely: ``("content", 5)``, ``("tool 1 arguments", 8)``, ...

    For the page's timeline: each piece of the reply with its size in
    characters, and the finish reason and usage as pieces of their own.
    """
    if not isinstance(data, dict):
        return
    choices = data.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        if isinstance(delta, dict):
            yield from _delta_fragments(delta)
        if isinstance(choice.get("finish_reason"), str):
            yield f"finish_reason {choice['finish_reason']}", 0
    if isinstance(data.get("usage"), dict):
        yield "usage", 0


def _delta_fragments(delta: dict[str, Any]) -> Iterator[tuple[str, int]]:
    for key, label in (("reasoning_content", "reasoning"), ("content", "content")):
        value = delta.get(key)
        if isinstance(value, str) and value:
            yield label, len(value)
    calls = delta.get("tool_calls")
    for piece in calls if isinstance(calls, list) else ():
        if not isinstance(piece, dict):
            continue
        index = piece.get("index", "?")
        function = piece.get("function")
        if not isinstance(function, dict):
            function = {}
        name = function.get("name")
        if isinstance(name, str) and name:
            yield f"tool {index} {name}", 0
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            yield f"tool {index} arguments", len(arguments)


# -- secrets split across events --------------------------------------------------------


# Where one recorded string is: a dict and its key, or a list and its position.
_Slot = tuple[dict[str, Any] | list[Any], str | int]


@dataclass
class _Strings:
    """Every string of a stream: by the part of the stream it belongs to, and all in the order they came."""

    parts: dict[tuple[Any, ...], list[_Slot]] = field(default_factory=dict)
    #: Each string that is not the one its field held in the event before (an
    #: ``id``, ``object`` or ``model`` repeated in every chunk), in the order they came.
    in_order: list[_Slot] = field(default_factory=list)
    _last: dict[tuple[Any, ...], str] = field(default_factory=dict)

    def add(self, value: dict[str, Any] | list[Any], path: tuple[Any, ...]) -> None:
        """Every string inside a JSON object or array, by its path.

        An item of a list that says its ``index`` (a choice, a tool call
        piece) is found by that index, not by its place in the list: pieces
        of choice 1 or of tool call 2 are one part of the reply, whichever
        event brought them and wherever in it.
        """
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(item, str):
                at = (*path, key)
                self.parts.setdefault(at, []).append((value, key))
                if self._last.get(at) != item:
                    self.in_order.append((value, key))
                    self._last[at] = item
            elif isinstance(item, dict | list):  # numbers, booleans and nulls hold no text
                where: Any = key
                if isinstance(item, dict) and not isinstance(key, str):
                    index = item.get("index")
                    if isinstance(index, int) and not isinstance(index, bool):
                        where = ("index", index)
                self.add(item, (*path, where))


def scrub_fragments(events: list[StreamEvent], redactor: Redactor) -> None:
    """Scrub, in place, secrets whose pieces arrived in different events or fields.

    Each event was redacted as it came, which catches a secret inside one
    string; a model repeating a key it read writes it a few characters at a
    time, and no single piece holds it. So every part of the stream (each
    field of each choice: content, reasoning, refusal; each tool call's id,
    name and arguments; the event names; the data that was not JSON) is
    joined across the events, redacted whole, and the redacted text handed
    back to the pieces: every piece then holds a part of the redacted text,
    and no piece a part of the secret. Last, every string of the stream is
    joined in the order it came, which catches a secret split between two
    neighbouring fields.
    """
    if not redactor.secrets:
        return
    # Each event's name and text as a dict, so that they are slots like the strings of its data.
    plain = [{"event": event.event, "text": event.text} for event in events]
    strings = _Strings()
    for event, fields in zip(events, plain, strict=True):
        strings.add(fields, ())
        if isinstance(event.data, dict | list):
            strings.add(event.data, ("data",))
    for slots in [*strings.parts.values(), strings.in_order]:
        texts = [holder[key] for holder, key in slots]  # type: ignore[index]  # a slot names a string it holds
        whole = "".join(texts)
        scrubbed = redactor.text(whole)
        if scrubbed != whole:
            for (holder, key), text in zip(slots, _spread(texts, whole, scrubbed), strict=True):
                holder[key] = text  # type: ignore[index]
    for index, (event, fields) in enumerate(zip(events, plain, strict=True)):
        if (fields["event"], fields["text"]) != (event.event, event.text):
            events[index] = event.model_copy(update=fields)


def _spread(texts: list[str], whole: str, scrubbed: str) -> list[str]:
    """``scrubbed`` cut into as many pieces as ``texts``, each where its piece of ``whole`` was."""
    owners = [index for index, text in enumerate(texts) if text]  # an empty piece holds nothing
    starts, offset = [], 0
    for text in texts:
        if text:
            starts.append(offset)
        offset += len(text)
    out: list[list[str]] = [[] for _ in texts]
    matcher = difflib.SequenceMatcher(None, whole, scrubbed, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            # What replaced a stretch goes to the piece where the stretch began.
            out[owners[bisect.bisect_right(starts, min(i1, len(whole) - 1)) - 1]].append(scrubbed[j1:j2])
            continue
        position = i1
        while position < i2:  # an unchanged stretch stays with the pieces it was in
            found = bisect.bisect_right(starts, position) - 1
            end = min(i2, starts[found + 1] if found + 1 < len(starts) else len(whole))
            out[owners[found]].append(scrubbed[j1 + position - i1 : j1 + end - i1])
            position = end
    return ["".join(parts) for parts in out]


def reassembled(stream: Stream, chunks: int) -> Assembler:
    """The first ``chunks`` chunks of a recorded stream, assembled: the reply as the record has it.

    What the SDK read was redacted event by event only; a secret split
    across events is scrubbed from the record when the stream ends
    (``scrub_fragments``), so the reply is put together again from there,
    and says what its events say. Stops where a chunk cannot be read, as
    the reading did.
    """
    assembler = Assembler()
    for event in stream.events:
        if assembler.chunks >= chunks or event.done:
            break
        if event.data is not None:
            try:
                assembler.add(event.data)
            except InvalidChunk:
                break
    return assembler


# -- writing events back as SSE --------------------------------------------------------


def sse_text(stream: Stream) -> str:
    """The recorded events as SSE: ``data: {...}`` lines, each event ended by a blank line.

    JSON data is written compactly, as providers send it; what was recorded
    is the parsed (and redacted) value, so spacing may differ from the bytes
    that came, but nothing else does.
    """
    parts = []
    for event in stream.events:
        lines = [f"event: {event.event}"] if event.event is not None else []
        if event.data is not None:
            data = json.dumps(event.data, ensure_ascii=False, separators=(",", ":"))
        else:
            data = event.text or ""
        lines += [f"data: {line}" for line in data.split("\n")]
        parts.append("\n".join(lines) + "\n\n")
    return "".join(parts)


# -- what a stream brought, as the page and the terminal show it ----------------------------


def _brought(event: StreamEvent) -> str:
    if event.done:
        return "[DONE]"
    if event.text is not None:
        return f"not JSON ({count(len(event.text), 'character')})"
    pieces = [f"{kind} {size}" if size else kind for kind, size in fragments(event.data)]
    return ", ".join(pieces) or "nothing of the reply"


def stream_line(call: ModelCall) -> str | None:
    """``12 events · first byte 80.1ms · first token 240.5ms · ... · ended with [DONE]`` (None: not streamed)."""
    stream = call.streamed
    if stream is None:
        return None
    first, last = stream.first_token_ms, stream.last_token_ms
    marks = {"first byte": stream.first_byte_ms, "first token": first, "last token": last}
    parts = [count(len(stream.events), "event")]
    parts += [f"{n} {ms:.1f}ms" for n, ms in marks.items() if ms is not None]
    if first is not None and last is not None and last > first:
        # How fast the reply came once it had begun; without token counts (the mock's), the pieces that came.
        seconds = (last - first) / 1000
        if call.usage is not None and call.usage.output_tokens > 1:
            parts.append(f"{(call.usage.output_tokens - 1) / seconds:.1f} tokens/s")
        else:
            parts.append(f"{(stream.fragments - 1) / seconds:.1f} pieces/s")
    parts.append("ended with [DONE]" if stream.done else "no [DONE]")
    return " · ".join(parts)


def stream_timeline(stream: Stream) -> str:
    """The events one a line: ``   240.5ms  +40.0  content 4``: when each came, the gap since the one before, what."""
    lines, before = [], None
    for event in stream.events:
        gap = f"+{event.at_ms - before:.1f}" if before is not None else ""
        name = f"event: {event.event} · " if event.event else ""
        lines.append(f"{f'{event.at_ms:.1f}ms':>11} {gap:>8}  {name}{_brought(event)}")
        before = event.at_ms
    return "\n".join(lines)
