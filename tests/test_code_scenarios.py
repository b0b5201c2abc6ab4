"""A scenario that is the author's own code, on the real openai SDK, recorded at the HTTP seam.

Mock runs answer from the scripted provider and the scenario's own mock
service, and nothing leaves the machine; live runs go to the loopback
provider and httpbin; a frozen live trace verifies by replay and diverges
when the code's prompt changes. Every fault is its scenario's named error.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from primer.code_scenario import CodeScenario
from primer.errors import ChapterError
from primer.models.mock import ask, call, say
from primer.replay import verify_chapter
from primer.runner import run_scenario
from primer.script_check import unused_warnings
from primer.seam import PROVIDER, Seam
from primer.settings import Settings
from primer.trace import ChapterRun
from tests.books import make_book
from tests.fixtures import code_agents
from tests.fixtures.code_agents import SCRIPT, WEATHER, raw_sdk
from tests.servers.provider import ReplayProvider
from tests.servers.service import LocalHttpbin

KEY = "sk-code-scenarios-0123456789"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Fail on any socket connection: a mock run must not open one."""
    tried: list[tuple[str, int]] = []
    real = socket.create_connection

    def refuse(address: tuple[str, int], *args: object, **kwargs: object) -> socket.socket:
        tried.append(address)
        raise AssertionError(f"a mock run connected to {address}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    yield tried
    monkeypatch.setattr(socket, "create_connection", real)


def scenario(name: str, code: object, mock: object = SCRIPT) -> CodeScenario:
    return CodeScenario(name=name, code=code, services=[WEATHER], mock=mock)  # type: ignore[arg-type]


def test_the_raw_sdk_loop_shows_its_turns_tools_and_service_attempts(offline: list[object]) -> None:
    run = run_scenario(raw_sdk, "mock")
    assert run.ending.label == "answer_received (finish_reason = stop)", run.ending
    assert [len(turn.tools) for turn in run.turns] == [1, 0]
    first = run.turns[0].model_call
    assert first.kind == "mock"
    assert [m.role for m in first.context] == ["system", "human"]
    assert first.context[1].content == code_agents.PROMPT
    assert [tool.name for tool in first.tools] == ["weather_in"]
    assert first.tools[0].parameters["required"] == ["city"]
    assert first.exchanges[0].request.url == "https://provider.mock/v1/chat/completions"
    # The SDK's key is never recorded.
    assert ("authorization", "not recorded") in [(k.lower(), v) for k, v in first.exchanges[0].request.headers]
    assert "temperature" in (first.exchanges[0].request.defaulted or [])
    notes = {note.label: note.data for note in first.notes}
    assert notes["tools declared to the mock model"] == {"names": ["weather_in"], "consulted": False}
    assert notes["services the code was given"] == {"weather": "https://weather.example"}
    tool = run.turns[0].tools[0]
    assert (tool.name, tool.arguments, tool.call_id) == ("weather_in", {"city": "Paris"}, "mock_1_0")
    assert tool.result == "Paris"
    assert tool.service == "https://weather.example"
    [attempt] = tool.attempts
    assert attempt.request is not None
    assert attempt.request.url == "https://weather.example/get?city=Paris"
    assert attempt.response is not None
    assert attempt.response.json_body["sky"] == "sunny"
    assert attempt.failure is None, "no retry classification is invented"
    # The next request carried the result back: the second turn's context holds it.
    second = run.turns[1].model_call
    assert [m.role for m in second.context] == ["system", "human", "ai", "tool"]
    assert second.context[3].tool_call_id == "mock_1_0"
    assert run.transcript[-1].content == "Sunny in Paris."
    assert run.tools == ["weather_in"]
    assert unused_warnings(run) == []
    assert offline == []


def test_async_code_is_recorded_too(offline: list[object]) -> None:
    run = run_scenario(scenario("async_sdk", code_agents.async_agent), "mock")
    assert run.ending.reason == "answer_received", run.ending
    assert len(run.turns) == 2
    [attempt] = run.turns[0].tools[0].attempts
    assert attempt.response is not None
    assert attempt.response.json_body["args"] == {"city": "Paris"}


def test_a_streamed_reply_is_answered_as_events_and_kept_event_by_event(offline: list[object]) -> None:
    run = run_scenario(scenario("streamed", code_agents.streamed), "mock")
    assert run.ending.reason == "answer_received", run.ending
    first = run.turns[0].model_call
    assert first.settings["stream"] is True
    stream = first.streamed
    assert stream is not None
    assert stream.done
    assert stream.fragments > 2
    assert [e.at_ms for e in stream.events] == sorted(e.at_ms for e in stream.events)
    assert first.reply is not None
    assert first.reply.tool_calls[0].arguments == {"city": "Paris"}
    assert run.turns[1].model_call.reply is not None
    assert run.turns[1].model_call.reply.content == "Sunny in Paris."
    assert any(note.label == "stream simulated by the scripted provider" for note in first.notes)


def test_a_host_that_is_neither_provider_nor_service_is_an_error_naming_the_url(offline: list[object]) -> None:
    run = run_scenario(scenario("leaks", code_agents.leaks), "mock")
    assert run.ending.reason == "scenario_error"
    assert run.error is not None
    assert run.error.type == "UnmockedHost"
    assert "https://elsewhere.example/track?user=1" in (run.ending.detail or "")
    assert offline == [], "nothing left the machine"


def test_a_script_that_runs_out_is_named(offline: list[object]) -> None:
    run = run_scenario(scenario("greedy", code_agents.greedy), "mock")
    assert run.ending.reason == "scenario_error"
    assert run.error is not None
    assert run.error.type == "ScriptExhausted"
    assert "greedy was asked for reply 3 but its script holds 2" in (run.ending.detail or "")
    # The call that found nothing is on the page, with the reason.
    assert run.turns[-1].model_call.error is not None
    assert "add a reply" in run.turns[-1].model_call.error.message


def test_replies_left_unused_are_noted_and_warned_about(offline: list[object]) -> None:
    extra = [*SCRIPT, say("Still sunny.")]
    run = run_scenario(scenario("left_over", code_agents.raw_agent, extra), "mock")
    assert run.ending.reason == "answer_received"
    [warning] = unused_warnings(run)
    assert warning.startswith("left_over: the mock script holds 3 replies and the run used 2")
    assert "say('Still sunny.')" in warning


def test_a_tool_result_that_answers_no_call_is_named(offline: list[object]) -> None:
    run = run_scenario(scenario("wrong_id", code_agents.wrong_id), "mock")
    assert run.ending.reason == "scenario_error"
    assert "'call_made_up'" in (run.ending.detail or "")
    assert "mock_1_0" in (run.ending.detail or "")


def test_a_function_that_raises_ends_its_scenario_with_the_error(offline: list[object]) -> None:
    run = run_scenario(scenario("raises", code_agents.raises), "mock")
    assert run.ending.reason == "scenario_error"
    assert run.ending.detail == "RuntimeError: the agent's own bug"
    assert run.error is not None
    assert "raises" in (run.error.traceback or "")
    assert len(run.turns) == 1, "what it did before it raised is kept"


def test_a_function_that_never_calls_the_model_is_named(offline: list[object]) -> None:
    run = run_scenario(scenario("silent", code_agents.silent), "mock")
    assert run.ending.reason == "scenario_error"
    assert run.error is not None
    assert run.error.type == "NoModelCall"
    assert "silent returned without calling the model" in run.error.message


def test_outside_a_seam_the_transports_are_untouched(httpbin: LocalHttpbin) -> None:
    with Seam(lambda _url: PROVIDER, {}, live=True):
        pass  # installs the wrapping
    assert httpx.get(f"{httpbin.url}/get", params={"a": "1"}).json()["args"] == {"a": "1"}


def test_a_code_scenario_refuses_what_only_primers_agent_uses() -> None:
    with pytest.raises(ChapterError, match="sets prompt, which only primer's Agent uses"):
        CodeScenario(name="x", code=code_agents.raw_agent, prompt="Hi.")


@pytest.fixture
def live_settings(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> Settings:
    return Settings(
        api_key=KEY, base_url=replay_provider.base_url, model="deepseek-flash", services={"weather": httpbin.url}
    )


def _script_provider(provider: ReplayProvider) -> None:
    provider.reply(ReplayProvider.completion(tool_calls=[("weather_in", {"city": "Paris"})]))
    provider.reply(ReplayProvider.completion("Sunny in Paris."))


def test_live_the_same_code_goes_to_the_provider_and_the_service(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin, live_settings: Settings
) -> None:
    _script_provider(replay_provider)
    run = run_scenario(raw_sdk, "live", live_settings)
    assert run.ending.label == "answer_received (finish_reason = stop)", run.ending
    first = run.turns[0].model_call
    assert first.kind == "live"
    assert first.model == "deepseek-flash"
    assert first.usage is not None
    assert first.exchanges[0].request.url == f"{replay_provider.base_url}/chat/completions"
    [attempt] = run.turns[0].tools[0].attempts
    assert attempt.request is not None
    assert attempt.request.url.startswith(f"{httpbin.url}/get?city=Paris")
    assert attempt.response is not None
    assert attempt.response.json_body["args"] == {"city": "Paris"}
    assert run.turns[0].tools[0].result == "Paris"
    # The key went to the provider, and is in no part of the trace.
    assert KEY not in run.model_dump_json()


def test_a_frozen_live_trace_of_code_verifies_by_replay_and_diverges_when_the_prompt_changes(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin, live_settings: Settings
) -> None:
    _script_provider(replay_provider)
    recorded = run_scenario(raw_sdk, "live", live_settings)
    frozen = ChapterRun(chapter="ch_code", mode="live", model="deepseek-flash", scenarios=[recorded])
    frozen = ChapterRun.model_validate_json(frozen.model_dump_json())
    check = verify_chapter(frozen, [raw_sdk])
    assert check.verified, check.divergence
    assert check.scenarios[0].requests == 3
    changed = CodeScenario(name="raw_sdk", code=code_agents.other_prompt, services=[WEATHER], mock=SCRIPT)
    check = verify_chapter(frozen, [changed])
    assert not check.verified
    assert check.divergence is not None
    assert check.divergence.field == "body messages[1].content"
    assert "Rome" in (check.divergence.now or "")


CODE_CHAPTER = '''"""Chapter code: the raw SDK's loop, and every way code can go wrong."""

from primer.code_scenario import CodeScenario
from tests.fixtures import code_agents
from tests.fixtures.code_agents import SCRIPT, WEATHER

raw_sdk = code_agents.raw_sdk
leaks = CodeScenario(name="leaks", code=code_agents.leaks, services=[WEATHER], mock=SCRIPT)
greedy = CodeScenario(name="greedy", code=code_agents.greedy, services=[WEATHER], mock=SCRIPT)
wrong_id = CodeScenario(name="wrong_id", code=code_agents.wrong_id, services=[WEATHER], mock=SCRIPT)
raises = CodeScenario(name="raises", code=code_agents.raises, services=[WEATHER], mock=SCRIPT)
silent = CodeScenario(name="silent", code=code_agents.silent, services=[WEATHER], mock=SCRIPT)
'''


@pytest.mark.slow
def test_a_book_shows_each_fault_on_its_page_and_warns_so_strict_fails(tmp_path: Path) -> None:
    book = make_book(tmp_path, {"ch_code": CODE_CHAPTER}, {"index": "# Code\n\n::: trace ch_code\n"})
    build = book.build("--strict")
    assert build.returncode == 1, build.log
    for name, said in [
        ("leaks", "https://elsewhere.example/track?user=1"),
        ("greedy", "asked for reply 3 but its script holds 2"),
        ("wrong_id", "'call_made_up'"),
        ("raises", "the agent's own bug"),
        ("silent", "returned without calling the model"),
    ]:
        [line] = build.lines(f"traces: ch_code / {name} (mock) failed: scenario_error")
        assert said in line, (name, build.log)
    assert not build.lines("raw_sdk"), "the good scenario is unaffected"
    page = book.page()
    assert "scenario raw_sdk" in page
    assert "https://elsewhere.example/track?user=1" in page
    assert "the agent&#39;s own bug" in page or "the agent's own bug" in page


@pytest.mark.parametrize("code", [code_agents.raw_agent, code_agents.async_agent], ids=["sync", "async"])
def test_an_asgi_app_answers_as_the_service(code: object, offline: list[object]) -> None:
    run = run_scenario(CodeScenario(name="asgi", code=code, services=[code_agents.WEATHER_APP], mock=SCRIPT), "mock")  # type: ignore[arg-type]
    assert run.ending.reason == "answer_received", run.ending
    [attempt] = run.turns[0].tools[0].attempts
    assert attempt.response is not None
    assert attempt.response.json_body == {"args": {"city": "Paris"}, "path": "/get", "sky": "sunny"}


def test_several_calls_in_one_reply_keep_their_service_exchanges_under_the_first_and_say_so(
    offline: list[object],
) -> None:
    script = [ask(call("weather_in", city="Paris"), call("weather_in", city="Rome")), say("Sunny in both.")]
    run = run_scenario(scenario("two", code_agents.two_at_once, script), "mock")
    first, second = run.turns[0].tools
    assert [a.request.url for a in first.attempts if a.request] == [
        "https://weather.example/get?city=Paris",
        "https://weather.example/get?city=Rome",
    ]
    assert second.attempts == []
    assert (first.result, second.result) == ("Paris", "Rome")
    notes = {note.label: note.data for note in run.turns[0].model_call.notes}
    assert notes["service exchanges not told apart"] == {
        "calls": ["weather_in", "weather_in"],
        "exchanges": 2,
        "shown_under": "weather_in",
    }


def test_the_books_shared_live_runner_runs_code_scenarios_too(
    replay_provider: ReplayProvider, live_settings: Settings
) -> None:
    from primer.live_pool import shared_live

    _script_provider(replay_provider)
    with shared_live() as runner:
        run = runner(raw_sdk, live_settings)
    assert run.ending.reason == "answer_received", run.ending
    assert run.turns[0].tools[0].attempts[0].response is not None


def test_a_live_stream_is_kept_event_by_event_and_verifies_by_replay(
    replay_provider: ReplayProvider, live_settings: Settings
) -> None:
    _script_provider(replay_provider)
    streamed = CodeScenario(name="streamed", code=code_agents.streamed, services=[WEATHER], mock=SCRIPT)
    run = run_scenario(streamed, "live", live_settings)
    assert run.ending.reason == "answer_received", run.ending
    stream = run.turns[0].model_call.streamed
    assert stream is not None
    assert stream.done
    assert stream.fragments > 1
    reply = run.turns[0].model_call.reply
    assert reply is not None
    assert reply.tool_calls[0].arguments == {"city": "Paris"}
    frozen = ChapterRun.model_validate_json(
        ChapterRun(chapter="ch_code", mode="live", model="deepseek-flash", scenarios=[run]).model_dump_json()
    )
    check = verify_chapter(frozen, [streamed])
    assert check.verified, check.divergence


def test_a_thread_the_code_starts_bare_is_still_under_its_mock_seam(offline: list[object]) -> None:
    def in_a_thread(reach: object) -> None:
        import threading

        thread = threading.Thread(target=code_agents.raw_agent, args=(reach,))  # no context copied
        thread.start()
        thread.join()

    run = run_scenario(scenario("threaded", in_a_thread), "mock")
    assert run.ending.reason == "answer_received", run.ending
    assert len(run.turns) == 2
    assert offline == []


def test_a_live_seam_takes_no_stranger_thread(httpbin: LocalHttpbin) -> None:
    import threading

    seam = Seam(lambda _url: None, {}, live=True)
    answers: list[int] = []
    with seam:
        thread = threading.Thread(target=lambda: answers.append(httpx.get(f"{httpbin.url}/get").status_code))
        thread.start()
        thread.join()
    assert answers == [200], "another scenario's request went its own way"
    assert seam.crossings == []
