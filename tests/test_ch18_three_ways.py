"""Chapter 18: one shop agent on the book's loop, pydantic-ai and the OpenAI Agents SDK, mock and live.

The frameworks run for real (the ``frameworks`` extra the test command
installs), mock against the scripted provider and the shop's mock, live
against the loopback provider and httpbin; their frozen live traces verify
by replay.
"""

from __future__ import annotations

import sys

import pytest

from primer.chapters.ch18_three_ways import PROMPT, agents_sdk, own_loop, pydantic_ai
from primer.code_scenario import CodeScenario
from primer.replay import verify_chapter
from primer.runner import run_scenario
from primer.settings import Settings
from primer.trace import ChapterRun, ScenarioRun
from tests.servers.provider import ReplayProvider
from tests.servers.service import LocalHttpbin

KEY = "sk-chapter-18-0123456789"
FRAMEWORKS = [pydantic_ai, agents_sdk]


def _story(run: ScenarioRun) -> list[tuple[str, dict[str, object], str | None]]:
    return [(tool.name, tool.arguments, tool.result) for turn in run.turns for tool in turn.tools]


def _first_request(run: ScenarioRun) -> dict[str, object]:
    body = run.turns[0].model_call.exchanges[0].request.json_body
    assert isinstance(body, dict)
    return body


@pytest.mark.slow
def test_the_three_tell_the_same_story_in_mock_mode() -> None:
    runs = [run_scenario(s, "mock") for s in (own_loop, pydantic_ai, agents_sdk)]
    expected = [
        ("price_of", {"item": "milk"}, "1.20"),
        ("place_order", {"item": "milk", "quantity": 2}, "ordered 2 x milk"),
    ]
    for run in runs:
        assert _story(run) == expected, run.name
        assert len(run.turns) == 3
        assert run.error is None
        assert run.turns[-1].model_call.reply is not None
        assert run.turns[-1].model_call.reply.content == "Milk is 1.20, under 1.50, so I ordered two."
        # The prompt and the system prompt are the same words in all three.
        first = run.turns[0].model_call.context
        assert [m.role for m in first] == ["system", "human"]
        assert first[1].content == PROMPT
        assert first[0].content == runs[0].turns[0].model_call.context[0].content
        assert [t.name for t in run.turns[0].model_call.tools] == ["price_of", "place_order"]
    for run in runs[1:]:
        get, post = (tool.attempts[0].request for turn in run.turns for tool in turn.tools)
        assert get is not None
        assert post is not None
        assert (get.method, get.url) == ("GET", "https://httpbin.org/get?item=milk")
        assert (post.method, post.json_body) == ("POST", {"item": "milk", "quantity": 2})


def test_what_each_framework_sends_for_you() -> None:
    sent = {s.name: _first_request(run_scenario(s, "mock")) for s in FRAMEWORKS}
    pydantic, agents = sent["pydantic_ai"], sent["agents_sdk"]
    assert (pydantic.get("tool_choice"), pydantic.get("stream")) == ("auto", False)
    assert "tool_choice" not in agents
    assert "stream" not in agents
    for body in (pydantic, agents):
        assert "parallel_tool_calls" not in body
        for declared in body["tools"]:  # type: ignore[union-attr]
            assert declared["function"]["strict"] is True
            assert declared["function"]["parameters"]["additionalProperties"] is False
    assert agents["tools"][0]["function"]["parameters"]["title"] == "price_of_args"  # type: ignore[index]
    assert "title" not in pydantic["tools"][0]["function"]["parameters"]  # type: ignore[index]


def test_without_the_extra_a_framework_scenario_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    run = run_scenario(pydantic_ai, "mock")
    assert run.ending.reason == "scenario_error"
    assert "pip install -e '.[frameworks]'" in (run.ending.detail or "")


def _asks(name: str, arguments: dict[str, object]) -> dict[str, object]:
    body = ReplayProvider.completion(tool_calls=[(name, arguments)])
    # Each call its own id, as real providers give them: the Agents SDK refuses an id used before.
    body["choices"][0]["message"]["tool_calls"][0]["id"] = f"call_{name}"
    return body


def _script(provider: ReplayProvider) -> None:
    provider.reply(_asks("price_of", {"item": "milk"}))
    provider.reply(_asks("place_order", {"item": "milk", "quantity": 2}))
    provider.reply(ReplayProvider.completion("Milk is 1.20, so I ordered two."))


@pytest.mark.parametrize("scenario", FRAMEWORKS, ids=lambda s: s.name)
def test_live_against_loopback_and_verified_by_replay(
    scenario: CodeScenario, replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    settings = Settings(
        api_key=KEY, base_url=replay_provider.base_url, model="deepseek-flash", services={"shop": httpbin.url}
    )
    _script(replay_provider)
    run = run_scenario(scenario, "live", settings)
    assert run.ending.label == "answer_received (finish_reason = stop)", run.ending
    assert [tool.name for turn in run.turns for tool in turn.tools] == ["price_of", "place_order"]
    get = run.turns[0].tools[0].attempts[0]
    assert get.request is not None
    assert get.request.url == f"{httpbin.url}/get?item=milk"
    assert get.response is not None
    assert get.response.json_body["args"] == {"item": "milk"}
    assert run.turns[0].model_call.model == "deepseek-flash"
    assert KEY not in run.model_dump_json()
    frozen = ChapterRun.model_validate_json(
        ChapterRun(chapter="ch18_three_ways", mode="live", model="deepseek-flash", scenarios=[run]).model_dump_json()
    )
    check = verify_chapter(frozen, [scenario])
    assert check.verified, check.divergence
    assert check.scenarios[0].requests == 5
