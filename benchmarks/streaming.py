"""What recording a stream costs: a 1,000-event stream read with and without the wire recorder.

    python benchmarks/streaming.py              # 30 rounds of each
    python benchmarks/streaming.py --rounds 100 --events 5000

One stream of chat completion chunks (text, then two tool calls' arguments in
pieces, the finish reason, the usage, ``[DONE]``), one event per HTTP chunk as
a network delivers them, served from memory so that only the client side is
timed. Each way of reading it runs once per round, in turn, so that the
machine's drift falls on all of them alike:

* the ``openai`` SDK iterating its typed chunks (``ChatCompletionChunk``),
  through a plain ``httpx2.Client`` (**typed bare**) and through
  ``RecordingClient`` (**typed recorded**: every event parsed, timed and
  redacted as it passes, the exchange kept when the body closes);
* the same with the chunks as plain dicts, as ``LiveModel`` reads them
  (**dicts bare**, **dicts recorded**);
* ``LiveModel.complete`` with ``{"stream": True}`` (**model**): recorded,
  assembled into the reply and read into a ``ModelCall``, as a run does it.

It prints the median of each and the recorder's overhead over the same read
unrecorded, per stream and per event. The redactor knows two secrets, as a
live run's does, so the scrubbing is paid for too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import openai

# Runnable from a checkout without installing: the repository root holds `primer`.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from primer.clock import RealClock
from primer.models.live import LiveModel
from primer.redact import Redactor
from primer.trace import Message
from primer.wire import RecordingClient

KEY = "sk-bench-7a1c93e2"
SERVICE_KEY = "svc-bench-40d2f8"
BASE_URL = "https://provider.test/v1"
CONTEXT = [Message(role="human", content="What do bread and milk cost?")]


def chunks(events: int) -> list[bytes]:
    """``events`` server-sent events making up one reply, each as the bytes of one HTTP chunk."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [choice],
        }

    text = max(events - 16, 1)  # the rest: two calls, a finish, the usage
    data = [chunk({"role": "assistant", "content": "Bread"})]
    data += [chunk({"content": f" w{n}"}) for n in range(text - 1)]
    for index, item in enumerate(("bread", "milk")):
        head = {"index": index, "id": f"call_{index}", "type": "function"}
        data.append(chunk({"tool_calls": [{**head, "function": {"name": "price_of", "arguments": ""}}]}))
        arguments = json.dumps({"item": item, "note": "x" * 20})
        pieces = [arguments[start : start + 6] for start in range(0, len(arguments), 6)]
        data += [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in pieces]
    data.append(chunk({}, "tool_calls"))
    data.append({"id": "chatcmpl-bench", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": events}})
    wire = [f"data: {json.dumps(item)}\n\n".encode() for item in data]
    return [*wire, b"data: [DONE]\n\n"]


def transport(body: list[bytes]) -> httpx2.MockTransport:
    """A provider in memory: the same stream to every request, one event per chunk."""

    class Events(httpx2.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield from body

    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Events())

    return httpx2.MockTransport(answer)


def read_with(client: httpx2.Client, *, typed: bool) -> int:
    """Stream once through the SDK over ``client``; how many chunks it gave."""
    sdk = openai.OpenAI(api_key=KEY, base_url=BASE_URL, http_client=client, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "hi"}]
    if typed:
        return sum(1 for _ in sdk.chat.completions.create(model="m", messages=messages, stream=True))
    raw = sdk.chat.completions.with_raw_response.create(model="m", messages=messages, stream=True)
    return sum(1 for _ in raw.parse(to=openai.Stream[dict[str, Any]]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", "-n", type=int, default=30, help="rounds of each (default 30)")
    parser.add_argument("--events", type=int, default=1000, help="events in the stream (default 1000)")
    args = parser.parse_args(argv)
    body = chunks(max(args.events, 20))
    events = len(body)
    redactor = Redactor([KEY, SERVICE_KEY])

    bare_client = httpx2.Client(transport=transport(body))
    recording = RecordingClient(clock=RealClock(), redactor=redactor, transport=transport(body))
    model = LiveModel(
        base_url=BASE_URL,
        api_key=KEY,
        model="m",
        redactor=redactor,
        http_client=RecordingClient(clock=RealClock(), redactor=redactor, transport=transport(body)),
    )

    def recorded(typed: bool) -> None:
        read_with(recording, typed=typed)
        [wired] = recording.recorder.take()
        assert wired.exchange.response is not None
        assert wired.exchange.response.stream is not None
        assert len(wired.exchange.response.stream.events) == events

    def modelled() -> None:
        call = model.complete(CONTEXT, [], {"stream": True})
        assert call.error is None, call.error
        assert call.reply is not None
        assert len(call.reply.tool_calls) == 2

    ways: dict[str, Callable[[], object]] = {
        "typed bare": lambda: read_with(bare_client, typed=True),
        "typed recorded": lambda: recorded(typed=True),
        "dicts bare": lambda: read_with(bare_client, typed=False),
        "dicts recorded": lambda: recorded(typed=False),
        "model": modelled,
    }
    for way in ways.values():  # once unmeasured: imports, pydantic's caches
        way()
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(max(args.rounds, 1)):
        for name, way in ways.items():
            started = time.perf_counter()
            way()
            times[name].append((time.perf_counter() - started) * 1000)

    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"a stream of {events} events, {sum(map(len, body)):,} bytes; {args.rounds} rounds, interleaved; medians:")
    for name, value in median.items():
        spread = f"{min(times[name]):.1f}-{max(times[name]):.1f}"
        print(f"  {name:<15} {value:7.1f} ms   (min-max {spread} ms)")
    for kind in ("typed", "dicts"):
        bare, with_record = median[f"{kind} bare"], median[f"{kind} recorded"]
        overhead = with_record - bare
        print(
            f"recording, {kind}: {overhead:+.1f} ms a stream ({overhead / bare * 100:+.0f}%), "
            f"{overhead / events * 1000:+.1f} µs an event"
        )
    whole = median["model"] - median["dicts bare"]
    print(
        f"LiveModel (recorded, assembled, read) over dicts bare: {whole:+.1f} ms a stream, "
        f"{whole / events * 1000:+.1f} µs an event"
    )
    bare_client.close()
    recording.close()
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
