"""Time where it was spent: opening a connection is its own part of a live trace.

``primer.http_record.SetUp`` listens to httpcore's ``trace`` events; the
recorders keep what it measured as ``Timing.setup_ms``; the lines and the
timeline show it apart from the party's own time. Over real sockets on
127.0.0.1: the replay provider and the local httpbin the live tests use,
and a TLS server with a certificate made for the test (``trustme``).
"""

from __future__ import annotations

import asyncio
import re
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme

from primer.book._render import render_traces
from primer.book._source import ChapterTraces, LiveStatus
from primer.cli import summary_lines
from primer.http_record import SetUp
from primer.runner import run_chapter
from primer.seam import Seam
from primer.spent import segments, totals, untimed
from primer.summary import model_line, tool_line
from primer.trace import ChapterRun, Timing
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider, scenario_file
from tests.servers.service import LocalHttpbin

ROOT = Path(__file__).resolve().parent.parent


class Ticks:
    """A clock that moves one second each time it is read: each event's time is its place in line."""

    def __init__(self) -> None:
        self.t = -1.0

    def now(self) -> float:
        self.t += 1
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


class _Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection open for the next request

    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(name="tls_server")
def fixture_tls_server() -> Iterator[tuple[str, ssl.SSLContext]]:
    """An HTTPS server on 127.0.0.1 and a client context that trusts its certificate."""
    authority = trustme.CA()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1").configure_cert(served)
    server.socket = served.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    trusting = ssl.create_default_context()
    authority.configure_trust(trusting)
    try:
        yield f"https://127.0.0.1:{server.server_port}", trusting
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- SetUp, on httpcore's events ----------------------------------------------------------------


def test_set_up_runs_from_the_connects_start_to_the_handshakes_end_and_passes_every_event_on(
    tls_server: tuple[str, ssl.SSLContext],
) -> None:
    url, trusting = tls_server
    seen: list[str] = []
    with httpx.Client(verify=trusting) as client:
        request = client.build_request("GET", f"{url}/get")
        request.extensions["trace"] = lambda event, info: seen.append(event)
        setup = SetUp(Ticks()).watch(request.extensions)
        assert client.send(request).json() == {"ok": True}
        again = client.build_request("GET", f"{url}/get")
        reused = SetUp(Ticks()).watch(again.extensions)
        client.send(again)
    assert seen[:4] == [
        "connection.connect_tcp.started",
        "connection.connect_tcp.complete",
        "connection.start_tls.started",
        "connection.start_tls.complete",
    ]
    assert "http11.receive_response_headers.complete" in seen  # the callback that was there got them all
    # Four readings of the clock, one a second: from the connect's start to the handshake's end.
    assert setup.ms == 3000.0
    assert reused.ms == 0.0  # the pooled connection was reused: timed, and nothing was set up


def test_a_refused_connection_is_set_up_time_too() -> None:
    setup = SetUp(Ticks())
    with httpx.Client() as client:
        request = client.build_request("GET", "http://127.0.0.1:9/")  # discard: nothing listens
        setup.watch(request.extensions)
        with pytest.raises(httpx.ConnectError):
            client.send(request)
    assert setup.ms == 1000.0  # connect_tcp.started, then .failed


def test_an_async_transport_is_given_a_callback_it_can_await(httpbin: LocalHttpbin) -> None:
    async def fetch() -> tuple[float | None, list[str]]:
        seen: list[str] = []

        async def before(event: str, info: dict[str, Any]) -> None:
            seen.append(event)

        async with httpx.AsyncClient() as client:
            request = client.build_request("GET", f"{httpbin.url}/get")
            request.extensions["trace"] = before
            setup = SetUp(Ticks()).watch(request.extensions, asynchronous=True)
            await client.send(request)
        return setup.ms, seen

    ms, seen = asyncio.run(fetch())
    assert ms == 1000.0  # plain HTTP: the TCP connect only
    assert seen[0] == "connection.connect_tcp.started"


def test_a_mock_transport_reports_no_set_up_and_is_not_timed() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200))
    with httpx.Client(transport=transport) as client:
        request = client.build_request("GET", "https://service.test/get")
        setup = SetUp(Ticks()).watch(request.extensions)
        client.send(request)
    assert setup.ms is None


# -- recorded, live ------------------------------------------------------------------------------


def test_a_live_run_records_each_new_connections_set_up_and_shows_it_apart(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    replay_provider.load(scenario_file("ch09_who_retries", "service_is_busy"))
    settings = live_settings(replay_provider, httpbin, api_key="sk-setup-1f2e", service_key="svc-setup-9a8b")
    run = run_chapter("ch09_who_retries", "live", only="service_is_busy", settings=settings)
    scenario = run.scenarios[0]
    first = scenario.turns[0]
    trips = [e.timing for t in scenario.turns for e in t.model_call.exchanges]
    trips += [a.timing for t in scenario.turns for tool in t.tools for a in tool.attempts]
    # Loopback over plain HTTP: the TCP connect, short but measured; never more than the trip.
    assert first.model_call.exchanges[0].timing.setup_ms is not None
    assert first.tools[0].attempts[0].timing.setup_ms is not None
    # Every trip is timed: a new connection's set-up, or 0.0 where a pooled one was reused.
    assert all(timing.setup_ms is not None for timing in trips)
    assert any(timing.setup_ms == 0.0 for timing in trips)
    for timing in trips:
        assert 0 <= timing.setup_ms <= (timing.outside_ms or 0)
    # A call's set-up is its trips' together, inside its outside time.
    tool = first.tools[0]
    assert tool.timing.setup_ms == pytest.approx(sum(a.timing.setup_ms or 0 for a in tool.attempts), abs=0.002)
    assert "· connection set-up " in model_line(first.model_call)
    assert "· connection set-up " in tool_line(tool, live=True)
    assert "set-up" not in model_line(scenario.turns[1].model_call)  # a reused connection: nothing to say
    assert not untimed(scenario)
    spent = totals(s for t in scenario.turns for s in segments(t))
    assert spent["setup"] > 0
    # The stretches tile each turn's model call and tools, within the turn; the loop's own moment
    # between them is in neither (0.1 ms at rest, any length on a loaded machine).
    inside = sum(t.model_call.timing.total_ms + sum(r.timing.total_ms for r in t.tools) for t in scenario.turns)
    assert sum(spent.values()) == pytest.approx(inside, abs=0.01)
    assert inside <= sum(t.timing.total_ms for t in scenario.turns) + 0.01

    mock_run = run_chapter("ch09_who_retries", only="service_is_busy")
    html = render_traces(ChapterTraces("ch09_who_retries", mock_run, run, LiveStatus("fresh")))
    mock, live = _runs(html)
    assert "var(--tr-setup)" in live  # a stretch of its timeline
    assert "connection set-up" in _legend(live)
    assert "tr-setup" not in mock  # a mock run opens no connection
    assert "set-up" not in mock
    assert "library and set-up" not in live


def test_the_seam_records_set_up_for_any_code_sync_or_async(httpbin: LocalHttpbin) -> None:
    async def fetch_async() -> None:
        async with httpx.AsyncClient() as client:
            await client.get(f"{httpbin.url}/get")

    with Seam(lambda url: "shop", {}, live=True) as seam:
        with httpx.Client() as client:
            client.get(f"{httpbin.url}/get")
        asyncio.run(fetch_async())
    timings = [crossing.exchange.timing for crossing in seam.crossings]
    assert len(timings) == 2
    assert all(0 < (timing.setup_ms or 0) <= (timing.outside_ms or 0) for timing in timings)


def test_a_recording_made_before_set_up_was_timed_says_it_is_in_the_library_time() -> None:
    # Issue 23: its first model call read `library 228.0`, most of it the connection's opening, with no word of it.
    committed = ROOT / "docs" / "traces" / "ch09_who_retries.live.json"
    data = committed.read_bytes()
    run = ChapterRun.model_validate_json(data)
    assert b"setup_ms" not in data
    assert (run.model_dump_json(indent=2) + "\n").encode() == data  # read and written, byte for byte
    scenario = run.scenarios[0]
    assert untimed(scenario)
    call = scenario.turns[0].model_call
    assert model_line(call).startswith("model live · 1198.1ms (model provider 970.0 · library and set-up 228.0)")
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")  # the home page quotes it, as the page words it
    assert f"`{model_line(call).removesuffix(' · asked for: price_of')}`" in home
    [price_of] = scenario.turns[0].tools
    assert "(service 323.0 · waited 50.0 · library and set-up 201.2)" in tool_line(price_of, live=True)
    assert "· library 201.2)" in tool_line(price_of)  # not said to be live: a mock service's trip is not timed
    mock_run = run_chapter("ch09_who_retries")
    html = render_traces(ChapterTraces("ch09_who_retries", mock_run, run, LiveStatus("fresh")))
    mock, live = _runs(html)
    assert "library and set-up 442.7ms" in _legend(live)  # the timeline's legend names it so too
    assert "library and set-up 228.0)" in live
    assert "library and set-up 201.2)" in live
    assert "tr-setup" not in html  # nothing to draw apart
    assert "set-up" not in mock
    assert not untimed(mock_run.scenarios[0])
    terminal = summary_lines(run)  # `primer run` prints the legend and the lines alike
    assert "  time: model provider 1670.9ms · service 323.0ms · waited 50.0ms · library and set-up 442.7ms" in terminal
    assert any("(service 323.0 · waited 50.0 · library and set-up 201.2)" in line for line in terminal)


def test_set_up_is_kept_only_when_there_was_one() -> None:
    assert "setup_ms" not in Timing(total_ms=2.0, outside_ms=1.0).model_dump_json()
    timing = Timing(total_ms=10.0, outside_ms=8.0, setup_ms=3.0)
    assert Timing.model_validate_json(timing.model_dump_json()) == timing
    assert (timing.answering_ms, timing.library_ms) == (5.0, 2.0)


def _runs(html: str) -> tuple[str, str]:
    """The scenario's mock run and its live run, as rendered."""
    mock = html.index('<div class="tr-run" data-mode="mock">')
    live = html.index('<div class="tr-run" data-mode="live">')
    assert mock < live
    return html[mock:live], html[live:]


def _legend(html: str) -> str:
    legend = re.search(r'<span class="tr-tl-legend">(.*?)</span>\n</div>', html, re.S)
    assert legend is not None
    return re.sub(r"<[^>]+>", "", legend[1])
