"""The test doubles the library ships: the virtual clock, the grocery service, the mock model.

The promise of mock mode is that nothing really waits: a scenario that backs
off for a second and sits through a ten-second delay finishes at once, with
the waiting recorded as simulated time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from primer.clock import RealClock, VirtualClock
from primer.grocery import PRICES, GroceryItem
from primer.mock_service import ORDER_REFERENCE, GroceryService
from primer.models.mock import MockModel, ask, call, cut, say
from primer.redact import Redactor
from primer.runner import Environment, run_chapter, run_scenario
from primer.scenario import Scenario
from primer.service import RetryPolicy, ServiceClient, ServiceScript
from primer.settings import DEFAULT_SERVICE_KEY
from primer.summary import ending_line, scenario_line
from primer.trace import Backoff, Message

HTTPBIN = "https://httpbin.org"


# -- clocks -----------------------------------------------------------------------------------------------------------


def test_the_virtual_clock_advances_by_what_it_is_asked_to_sleep_and_returns_at_once(sleeps: list[float]) -> None:
    clock = VirtualClock()
    before = clock.now()
    started = time.perf_counter()

    clock.sleep(10.0)
    clock.sleep(0.5)
    clock.sleep(0)
    clock.sleep(-1)  # a negative wait is no wait, not time travel

    # Had it really waited, 10.5 s would have passed; the bound leaves a loaded machine its slack.
    assert time.perf_counter() - started < 5.0
    assert clock.simulated == 10.5
    assert clock.now() - before >= 10.5
    assert sleeps == []


def test_the_virtual_clock_still_measures_real_work() -> None:
    clock = VirtualClock()
    before = clock.now()
    deadline = time.perf_counter() + 0.01
    while time.perf_counter() < deadline:
        pass
    assert clock.now() - before >= 0.01
    assert clock.simulated == 0.0


def test_the_real_clock_really_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[float] = []
    monkeypatch.setattr(time, "sleep", asked.append)
    clock = RealClock()
    clock.sleep(0.25)
    clock.sleep(0)
    assert asked == [0.25]
    assert clock.now() <= time.perf_counter()


# -- the grocery service ----------------------------------------------------------------------------------------------


def grocery(clock: VirtualClock | None = None) -> tuple[GroceryService, httpx.Client, VirtualClock]:
    clock = clock or VirtualClock()
    service = GroceryService(clock)
    return service, httpx.Client(base_url=HTTPBIN, transport=service.transport(), timeout=2.0), clock


@pytest.mark.parametrize("item", list(GroceryItem))
def test_get_answers_the_shelf_price(item: GroceryItem) -> None:
    service, client, _ = grocery()
    with client:
        response = client.get("/get", params={"item": item.value})
    assert response.status_code == 200
    assert response.json() == {"args": {"item": item.value}, "price": PRICES[item]}
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    assert len(service.received) == 1


def test_get_with_a_quantity_is_an_order_with_the_seed_reference() -> None:
    _, client, _ = grocery()
    with client:
        body = client.get("/get", params={"item": "milk", "quantity": 12}).json()
    assert body == {"args": {"item": "milk", "quantity": "12"}, "reference": ORDER_REFERENCE}
    assert ORDER_REFERENCE == "ord-8812"


def test_the_price_body_is_as_long_as_the_seed_says() -> None:
    _, client, _ = grocery()
    with client:
        response = client.get("/get", params={"item": "milk"})
    # The seed page's wire response: content-length 39.
    assert response.headers["content-length"] == "39"


@pytest.mark.parametrize("status", [429, 503])
def test_busy_statuses_carry_retry_after(status: int) -> None:
    _, client, _ = grocery()
    with client:
        response = client.get(f"/status/{status}")
    assert response.status_code == status
    assert response.headers["retry-after"] == "1"
    assert response.headers["content-length"] == "0"
    assert response.content == b""


@pytest.mark.parametrize("status", [404, 500, 418])
def test_other_statuses_are_plain(status: int) -> None:
    _, client, _ = grocery()
    with client:
        response = client.get(f"/status/{status}")
    assert response.status_code == status
    assert "retry-after" not in response.headers
    # Exactly the two headers the seed shows for a 404.
    assert sorted(response.headers.keys()) == ["content-length", "content-type"]


def test_unknown_paths_are_not_found() -> None:
    _, client, _ = grocery()
    with client:
        assert client.get("/nothing/here").status_code == 404


def test_a_delay_shorter_than_the_timeout_answers_after_that_long_on_the_virtual_clock(sleeps: list[float]) -> None:
    service, client, clock = grocery()
    started = time.perf_counter()
    with client:
        response = client.get("/delay/1", params={"item": "milk"})
    assert response.status_code == 200
    assert response.json()["price"] == "1.20"
    assert clock.simulated == 1.0
    assert time.perf_counter() - started < 1.0  # a real wait would take the whole second
    assert len(service.received) == 1
    assert sleeps == []


def test_a_delay_longer_than_the_timeout_times_out_at_the_timeout_after_arriving(sleeps: list[float]) -> None:
    service, client, clock = grocery()
    with client, pytest.raises(httpx.ReadTimeout):
        client.get("/delay/10", params={"item": "milk", "quantity": 2})
    assert clock.simulated == 2.0
    # The request arrived: that is why an order that timed out may have been placed.
    assert [dict(r.url.params) for r in service.received] == [{"item": "milk", "quantity": "2"}]
    assert sleeps == []


def test_post_places_an_order_and_each_order_gets_the_next_reference() -> None:
    service, client, _ = grocery()
    with client:
        first = client.post("/post", json={"item": "milk", "quantity": 2}).json()
        second = client.post("/post", json={"item": "bread", "quantity": 1}).json()
    assert first == {"args": {}, "json": {"item": "milk", "quantity": 2}, "reference": ORDER_REFERENCE}
    assert second["reference"] == "ord-8813"
    assert service.orders == {"ord-8812": {"item": "milk", "quantity": 2}, "ord-8813": {"item": "bread", "quantity": 1}}


@pytest.mark.parametrize(("method", "path"), [("POST", "/get"), ("GET", "/post"), ("PUT", "/post")])
def test_get_and_post_answer_only_their_own_method_as_httpbin_does(method: str, path: str) -> None:
    service, client, _ = grocery()
    with client:
        response = client.request(method, path, json={"item": "milk", "quantity": 1})
    assert response.status_code == 405
    assert service.orders == {}


def test_a_repeated_idempotency_key_is_answered_from_the_first_answer_and_orders_once() -> None:
    service, client, _ = grocery()
    headers = {"idempotency-key": "k-1"}
    order = {"item": "milk", "quantity": 2}
    with client:
        first = client.post("/post", json=order, headers=headers)
        again = client.post("/post", json=order, headers=headers)
        other = client.post("/post", json=order, headers={"idempotency-key": "k-2"})
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert other.json()["reference"] == "ord-8813"
    assert list(service.orders) == ["ord-8812", "ord-8813"]
    assert len(service.received) == 3


def test_a_key_reused_for_a_different_order_is_refused() -> None:
    service, client, _ = grocery()
    with client:
        client.post("/post", json={"item": "milk", "quantity": 2}, headers={"idempotency-key": "k-1"})
        response = client.post("/post", json={"item": "milk", "quantity": 9}, headers={"idempotency-key": "k-1"})
    assert response.status_code == 422
    assert list(service.orders) == ["ord-8812"]


def test_an_order_sent_to_a_slow_endpoint_is_placed_even_though_its_answer_is_lost() -> None:
    service, client, clock = grocery()
    order, headers = {"item": "milk", "quantity": 2}, {"idempotency-key": "k-1"}
    with client:
        with pytest.raises(httpx.ReadTimeout):
            client.post("/delay/10", json=order, headers=headers)
        assert list(service.orders) == [ORDER_REFERENCE]
        assert clock.simulated == 2.0
        replayed = client.post("/post", json=order, headers=headers)
    assert replayed.json()["reference"] == ORDER_REFERENCE
    assert replayed.headers["idempotent-replayed"] == "true"


def test_drip_sends_its_bytes_a_pause_apart_on_the_virtual_clock(sleeps: list[float]) -> None:
    _, client, clock = grocery()
    with client:
        response = client.get("/drip", params={"duration": "5", "numbytes": "5"})
    assert response.content == b"*****"
    assert response.headers["content-type"] == "application/octet-stream"
    # The first byte at once, the last after four pauses of a second, as httpbin sends them.
    assert clock.simulated == 4.0
    assert sleeps == []


def test_a_drip_slower_than_the_read_timeout_times_out_between_bytes() -> None:
    _, client, clock = grocery()
    with client, pytest.raises(httpx.ReadTimeout):
        client.get("/drip", params={"duration": "9", "numbytes": "3"})
    assert clock.simulated == 2.0


def test_a_scripted_retry_after_replaces_the_services_own() -> None:
    _, client, _ = grocery()
    with client:
        response = client.get("/status/429", params={"retry_after": "30"})
    assert response.headers["retry-after"] == "30"


# -- the mock model ---------------------------------------------------------------------------------------------------


def test_the_mock_model_replies_in_order_and_says_it_read_nothing() -> None:
    model = MockModel([ask(call("price_of", item="milk")), say("Milk is 1.20.")], VirtualClock(), scenario="s")
    context = [Message(role="system", content="sys"), Message(role="human", content="How much is milk?")]

    first = model.complete(context, [], {"max_tokens": 5})
    context.append(first.reply or Message(role="ai"))
    second = model.complete(context, [], {})

    assert first.kind == "mock"
    assert first.reply is not None
    assert first.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.reply.tool_calls] == [("mock_1_0", "price_of", {"item": "milk"})]
    assert first.settings == {"max_tokens": 5}
    # The record keeps the context as it was when sent, not as it grew after.
    assert [m.role for m in first.context] == ["system", "human"]
    assert [n.model_dump() for n in first.notes] == [
        {"label": "tools declared to the mock model", "data": {"names": [], "consulted": False}},
        {"label": "context ignored by the mock model", "data": {"messages": 2, "roles": ["system", "human"]}},
    ]
    assert second.reply is not None
    assert second.reply.content == "Milk is 1.20."
    assert second.reply.tool_calls == []
    assert second.finish_reason == "stop"
    assert second.notes[1].data == {"messages": 3, "roles": ["system", "human", "ai"]}
    assert first.usage is None
    assert first.exchanges == []


def test_a_cut_reply_is_empty_with_finish_reason_length() -> None:
    record = MockModel([cut()], VirtualClock()).complete([Message(role="human", content="hi")], [], {})
    assert record.reply is not None
    assert record.reply.content is None
    assert record.reply.tool_calls == []
    assert record.finish_reason == "length"


def test_a_mock_model_out_of_replies_records_an_error_naming_the_scenario() -> None:
    model = MockModel([say("only one")], VirtualClock(), scenario="tiny_story")
    model.complete([], [], {})
    record = model.complete([], [], {})
    assert record.reply is None
    assert record.error is not None
    assert record.error.type == "ScriptExhausted"
    assert "tiny_story" in record.error.message
    assert "reply 2" in record.error.message
    assert "holds 1" in record.error.message


def test_several_calls_in_one_reply_keep_their_order_and_distinct_ids() -> None:
    reply = MockModel([ask(call("a"), call("b", x=1), text="two things")], VirtualClock()).complete([], [], {}).reply
    assert reply is not None
    assert reply.content == "two things"
    assert [(c.id, c.name) for c in reply.tool_calls] == [("mock_1_0", "a"), ("mock_1_1", "b")]
    assert reply.written() == 'two things a({}) b({"x": 1})'


# -- a whole mock run on the virtual clock ----------------------------------------------------------------------------


def test_a_mock_run_with_a_1s_backoff_and_a_10s_delay_never_really_sleeps(sleeps: list[float]) -> None:
    from primer.chapters.ch09_who_retries import TOOLS

    scenario = Scenario(
        name="slow_and_busy",
        prompt="How much is milk?",
        tools=TOOLS,
        service=["/status/429", "/delay/10"],
        mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
    )
    clock = VirtualClock()
    # A patient client: a 30 s timeout, so the 10 s delay is waited out (virtually) rather than timed out.
    service = ServiceClient(
        base_url=HTTPBIN,
        clock=clock,
        transport=GroceryService(clock).transport(),
        policy=RetryPolicy(timeout=30.0),
        script=ServiceScript(scenario.service),
    )
    env = Environment(MockModel(scenario.mock, clock, scenario=scenario.name), service, clock, Redactor())

    started = time.perf_counter()
    run = run_scenario(scenario, environment=env)
    wall = time.perf_counter() - started

    assert sleeps == []
    assert wall < 5.5  # half the simulated 11 s: a real wait cannot hide under it
    assert run.ending.reason == "no_tool_calls"
    assert run.simulated_seconds == 11.0
    (tool,) = run.turns[0].tools
    assert tool.result == "1.20"
    assert [s.seconds for s in tool.steps if isinstance(s, Backoff)] == [1.0]
    # The trace tells the simulated story: the tool took 11 s, 10 of them at the service, 1 waiting.
    assert tool.timing.waited_ms == 1000.0
    # The simulated 10 s, plus the real time the in-process service took, which a loaded machine stretches.
    assert 10_000 <= tool.timing.outside_ms <= 10_000 + wall * 1000
    assert run.timing.total_ms >= 11_000
    assert "(11s simulated)" in scenario_line(run)


def test_the_seed_chapters_mock_runs_simulate_their_waits_and_take_no_real_time(sleeps: list[float]) -> None:
    started = time.perf_counter()
    runs = {name: run_chapter(name) for name in ("ch09_who_retries", "ch05_loop_endings")}
    wall = time.perf_counter() - started

    assert sleeps == []
    # Real waits would add the simulated 3 s; the benchmark measures the real figure (~20 ms).
    assert wall < 3.0
    simulated = {s.name: s.simulated_seconds for run in runs.values() for s in run.scenarios}
    assert simulated == {
        "service_is_busy": 1.0,  # the 429's retry-after
        "order_may_have_landed": 2.0,  # the 2 s timeout on /delay/10
        "arguments_are_wrong": 0.0,
        "service_says_no": 0.0,
        "within_token_limit": 0.0,
        "tokens_exhausted": 0.0,
    }


# -- mock runs that go wrong ------------------------------------------------------------------------------------------

BROKEN_CHAPTER = '''
"""A chapter whose scenarios go wrong in every way the book names."""

from primer.chapters.ch09_who_retries import TOOLS
from primer.grocery import PriceOf
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.settings import DEFAULT_SERVICE_KEY
from primer.tools import tool


@tool(PriceOf)
def price_of(args, ctx):
    raise ZeroDivisionError(f"the shelf list is empty (key {DEFAULT_SERVICE_KEY})")


def loop_that_breaks(agent, context, max_turns):
    agent.ask(context)
    raise KeyError("the loop lost its place")


ASK = ask(call("price_of", item="milk"))

fine_before = Scenario(name="fine_before", prompt="How much is milk?", tools=TOOLS, mock=[ASK, say("1.20")])
tool_breaks = Scenario(name="tool_breaks", prompt="How much?", tools=[price_of], mock=[ASK, say("never asked")])
script_runs_out = Scenario(name="script_runs_out", prompt="How much?", tools=TOOLS, mock=[ASK])
never_stops = Scenario(name="never_stops", prompt="How much?", tools=TOOLS, mock=[ASK] * 5, max_turns=3)
loop_breaks = Scenario(name="loop_breaks", prompt="How much?", tools=TOOLS, mock=[ASK], loop=loop_that_breaks)
fine_after = Scenario(name="fine_after", prompt="How much is milk?", tools=TOOLS, mock=[ASK, say("1.20")])
'''


@pytest.fixture
def broken_chapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A chapter module found the way real ones are: by looking in the chapters package's path."""
    import primer.chapters

    name = "ch99_things_go_wrong"
    (tmp_path / f"{name}.py").write_text(BROKEN_CHAPTER)
    monkeypatch.setattr(primer.chapters, "__path__", [*primer.chapters.__path__, str(tmp_path)])
    yield name
    sys.modules.pop(f"primer.chapters.{name}", None)


def test_each_way_of_going_wrong_ends_its_scenario_with_a_named_ending_and_the_others_run(
    broken_chapter: str, sleeps: list[float]
) -> None:
    run = run_chapter(broken_chapter)

    endings = {s.name: (s.ending.reason, len(s.turns)) for s in run.scenarios}
    assert endings == {
        "fine_before": ("no_tool_calls", 2),
        "tool_breaks": ("scenario_error", 1),
        "script_runs_out": ("scenario_error", 2),
        "never_stops": ("turn_limit", 3),
        "loop_breaks": ("scenario_error", 1),
        "fine_after": ("no_tool_calls", 2),
    }
    assert sleeps == []


def test_a_tool_that_raises_ends_the_scenario_with_its_error_recorded(broken_chapter: str) -> None:
    run = run_chapter(broken_chapter, only="tool_breaks").scenario("tool_breaks")

    assert run.ending.detail == "tool price_of raised ZeroDivisionError: the shelf list is empty (key [secret])"
    (tool_run,) = run.turns[0].tools
    assert tool_run.error is not None
    assert tool_run.error.type == "ZeroDivisionError"
    assert tool_run.error.traceback is not None
    assert "ZeroDivisionError" in tool_run.error.traceback
    assert tool_run.failure is not None
    assert not tool_run.failure.retryable
    # The model is not asked again after a bug: its second scripted reply is never used.
    assert [m.content for m in run.transcript if m.role == "ai"] == [None]
    assert DEFAULT_SERVICE_KEY not in run.model_dump_json()
    assert ending_line(run.ending).startswith('ended {"reason": "scenario_error", "detail": "tool price_of raised')


def test_a_script_that_runs_out_names_the_scenario_and_what_to_do(broken_chapter: str) -> None:
    run = run_chapter(broken_chapter, only="script_runs_out").scenario("script_runs_out")
    assert run.ending.reason == "scenario_error"
    assert run.ending.detail is not None
    assert "script_runs_out" in run.ending.detail
    assert "add a reply" in run.ending.detail
    failed = run.turns[-1].model_call
    assert failed.reply is None
    assert failed.error is not None
    assert failed.error.type == "ScriptExhausted"


def test_a_turn_limit_stops_a_loop_that_would_go_on(broken_chapter: str) -> None:
    run = run_chapter(broken_chapter, only="never_stops").scenario("never_stops")
    assert (run.ending.reason, run.ending.detail) == ("turn_limit", "stopped after 3 turns")
    assert [t.number for t in run.turns] == [1, 2, 3]


def test_an_exception_in_the_loop_itself_is_recorded_with_its_traceback(broken_chapter: str) -> None:
    run = run_chapter(broken_chapter, only="loop_breaks").scenario("loop_breaks")
    assert run.ending.reason == "scenario_error"
    assert run.ending.detail == "KeyError: 'the loop lost its place'"
    assert run.error is not None
    assert run.error.type == "KeyError"
    assert run.error.traceback is not None
    assert "loop_that_breaks" in run.error.traceback
    # The turn made before the exception is kept.
    assert len(run.turns) == 1


def test_a_mock_scenario_still_running_after_a_while_is_said_to_be(monkeypatch: pytest.MonkeyPatch) -> None:
    # A mock run takes milliseconds; one whose code waits or loops for ever hung the build with no line at all.
    from primer import runner
    from primer.models.mock import ask, call, say
    from primer.scenario import Scenario
    from primer.settings import Settings
    from primer.shop import price_of

    real = runner.run_scenario

    def waiting(*args: object) -> object:
        time.sleep(1.5)  # its code waits, as one waiting for ever does for its first 1.5 s
        return real(*args)  # type: ignore[arg-type]

    slow = Scenario(
        name="waits", prompt="Milk?", tools=[price_of], mock=[ask(call("price_of", item="milk")), say("1.20")]
    )
    quick = Scenario(name="quick", prompt="Hi.", tools=[], mock=[say("Hello.")])
    monkeypatch.setattr(runner, "SLOW_MOCK", 0.5)
    said: list[str] = []
    runner.run_mock("ch_quick", [quick], Settings(), slow=said.append)
    time.sleep(1.0)
    assert said == []  # a quick one is not said: its watch went with it
    monkeypatch.setattr(runner, "run_scenario", waiting)
    run = runner.run_mock("ch_slow", [slow], Settings(), slow=said.append)
    assert said == [
        "ch_slow / waits (mock) has run for 0.5 s, where a mock run takes milliseconds: its code may wait or loop "
        "for ever (Ctrl+C stops the build; the traceback shows where)"
    ]
    assert run.scenarios[0].ending.label == "no_tool_calls"
