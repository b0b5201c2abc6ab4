"""Live mode tells the seed pages' live stories, over real HTTP on 127.0.0.1.

The real ``openai`` SDK talks to the replay provider, which answers with the provider traffic
recorded on the seed pages; the tools talk to a real local httpbin. The runs must send what
the seeds sent (the recorded requests) and end the way the seeds' live runs ended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from primer.chapters import scenarios_of
from primer.models.base import SAMPLING_PARAMETERS
from primer.runner import run_chapter
from primer.settings import Settings
from primer.summary import chapter_line
from primer.trace import ChapterRun, ScenarioRun
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider, scenario_file
from tests.servers.service import LocalHttpbin

pytestmark = pytest.mark.slow

API_KEY = "sk-seeds-5d20e7"
SERVICE_KEY = "svc-seeds-91ac4f"
ROOT = Path(__file__).resolve().parent.parent
#: The service the seeds were recorded against; the tool messages name it.
SEED_SERVICE = "https://httpbin.org"


def settings_for(provider: ReplayProvider, httpbin: LocalHttpbin) -> Settings:
    return live_settings(provider, httpbin, api_key=API_KEY, service_key=SERVICE_KEY)


def load_chapter(provider: ReplayProvider, chapter: str) -> dict[str, list[dict[str, Any]]]:
    """Queue every scenario's recorded exchanges, in the chapter's order."""
    return {s.name: provider.load(scenario_file(chapter, s.name)) for s in scenarios_of(chapter)}


def as_recorded(body: Any, httpbin: LocalHttpbin) -> Any:
    """A request body as the seeds would have sent it: the tool messages name httpbin.org."""
    return json.loads(json.dumps(body).replace(httpbin.url, SEED_SERVICE))


def run_live(provider: ReplayProvider, httpbin: LocalHttpbin, chapter: str) -> tuple[ChapterRun, dict[str, Any]]:
    recorded = load_chapter(provider, chapter)
    run = run_chapter(chapter, "live", settings=settings_for(provider, httpbin))
    return run, recorded


def assert_sent_as_recorded(
    run: ScenarioRun, recorded: list[dict[str, Any]], provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    """One exchange per turn; the request in the trace is the request the seeds sent."""
    assert len(run.turns) == len(recorded)
    for turn, exchange in zip(run.turns, recorded, strict=True):
        call = turn.model_call
        assert call.error is None
        assert len(call.exchanges) == 1
        wire = call.exchanges[0]
        assert wire.attempt == 1
        assert wire.request.method == "POST"
        assert wire.request.url == f"{provider.base_url}/chat/completions"
        assert as_recorded(wire.request.json_body, httpbin) == exchange["request"]
        assert wire.request.defaulted == [p for p in SAMPLING_PARAMETERS if p not in exchange["request"]]
        assert ("authorization", "not recorded") in wire.request.headers
        assert wire.response is not None
        assert wire.response.status == 200
        assert wire.response.json_body == exchange["response"]
        usage = exchange["response"]["usage"]
        assert call.usage is not None
        assert (call.usage.input_tokens, call.usage.output_tokens) == (
            usage["prompt_tokens"],
            usage["completion_tokens"],
        )
        assert call.usage.cached_tokens == usage["prompt_tokens_details"]["cached_tokens"]
        assert call.usage.reasoning_tokens == usage["completion_tokens_details"]["reasoning_tokens"]
        assert call.finish_reason == exchange["response"]["choices"][0]["finish_reason"]
        # The provider's share is inside the call's time, and the library's is what is left.
        assert call.timing.outside_ms is not None
        assert 0 < call.timing.outside_ms <= call.timing.total_ms
        assert wire.timing.outside_ms == wire.timing.total_ms


def test_ch09_live_tells_the_four_seed_stories(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    run, recorded = run_live(replay_provider, httpbin, "ch09_who_retries")
    assert chapter_line(run).startswith("live turns=9 · messages=23 · ")  # then the tokens counted
    assert run.mode == "live"
    assert run.model == "deepseek-flash"
    assert [s.ending.reason for s in run.scenarios] == ["no_tool_calls"] * 4
    for scenario in run.scenarios:
        assert_sent_as_recorded(scenario, recorded[scenario.name], replay_provider, httpbin)
    # Every model call got the reply recorded for its own conversation and turn.
    assert [r.outcome for r in replay_provider.requests] == [
        f"replay ch09_who_retries.{name}#{index}" for name in recorded for index in range(len(recorded[name]))
    ]

    busy = run.scenario("service_is_busy").turns[0].tools[0]
    assert [a.response.status if a.response else None for a in busy.attempts] == [429, 200]
    assert busy.attempts[0].failure is not None
    assert busy.attempts[0].failure.retryable is True
    assert busy.result == "1.20"

    landed = run.scenario("order_may_have_landed").turns[0].tools[0]
    assert len(landed.attempts) == 1  # an order that may have landed is not sent again
    assert landed.failure is not None
    assert landed.failure.message.endswith("did not answer in time, and the call may have been received")
    assert "Do not call it again" in landed.message

    wrong = run.scenario("arguments_are_wrong")
    assert wrong.turns[0].tools[0].failure is not None
    assert wrong.turns[0].tools[0].failure.caller_can_fix is True
    # The two parallel calls of turn 2, both placed.
    parallel = wrong.turns[1].tools
    assert [(t.name, t.arguments) for t in parallel] == [
        ("place_order", {"item": "milk", "quantity": 12}),
        ("place_order", {"item": "milk", "quantity": 8}),
    ]
    assert [t.result for t in parallel] == ["ordered 12 x milk", "ordered 8 x milk"]
    assert len({t.call_id for t in parallel}) == 2

    says_no = run.scenario("service_says_no").turns[0].tools[0]
    assert [a.response.status if a.response else None for a in says_no.attempts] == [404]
    assert says_no.failure is not None
    assert says_no.failure.retryable is False


def test_ch05_live_reasoning_is_sent_back_and_max_tokens_cuts_the_reply(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    run, recorded = run_live(replay_provider, httpbin, "ch05_loop_endings")
    for scenario in run.scenarios:
        assert_sent_as_recorded(scenario, recorded[scenario.name], replay_provider, httpbin)

    within = run.scenario("within_token_limit")
    assert within.ending.label == "answer_received (finish_reason = stop)"
    reasoning = recorded["within_token_limit"][0]["response"]["choices"][0]["message"]["reasoning_content"]
    first = within.turns[0].model_call.reply
    assert first is not None
    assert first.reasoning == reasoning
    assert first.content is None  # "" beside a tool call is no text
    # Kept, and sent back with the assistant's turn in the next request.
    second_request = replay_provider.requests[1].body
    assert second_request["messages"][2]["reasoning_content"] == reasoning
    assert second_request["messages"][2]["content"] is None

    cut = run.scenario("tokens_exhausted")
    assert cut.settings == {"max_tokens": 24}
    assert cut.ending.label == "tokens_exhausted (finish_reason = length)"
    wire = cut.turns[0].model_call.exchanges[0].request
    assert wire.json_body["max_tokens"] == 24
    assert wire.defaulted == ["temperature", "top_p", "stop", "seed", "tool_choice"]
    assert cut.turns[0].model_call.usage is not None
    assert cut.turns[0].model_call.usage.output_tokens == 24


def test_empty_reasoning_is_not_sent_back(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    # service_is_busy's provider sent reasoning_content "" and the seeds' next request had none.
    replay_provider.load(scenario_file("ch09_who_retries", "service_is_busy"))
    run = run_chapter(
        "ch09_who_retries", "live", only="service_is_busy", settings=settings_for(replay_provider, httpbin)
    )
    assert run.scenarios[0].turns[0].model_call.reply.reasoning is None  # type: ignore[union-attr]
    assert "reasoning_content" not in replay_provider.requests[1].body["messages"][2]


def cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMER_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "primer", *args],
        env={**base, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_runs_ch09_live_from_the_environment(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    load_chapter(replay_provider, "ch09_who_retries")
    env = {
        "PRIMER_API_KEY": API_KEY,
        "PRIMER_BASE_URL": replay_provider.base_url,
        "PRIMER_MODEL": "deepseek-flash",
        "PRIMER_SERVICE_URL": httpbin.url,
        "PRIMER_SERVICE_KEY": SERVICE_KEY,
        "PRIMER_SERVICE_TIMEOUT": "0.5",
    }
    done = cli(["run", "ch09_who_retries", "--mode", "live"], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ch09_who_retries"
    assert lines[1].startswith("live turns=9 · messages=23 · ")
    scenarios = [line for line in lines if line.startswith("scenario ")]
    assert [line.split(" · ")[0] for line in scenarios] == [
        "scenario service_is_busy",
        "scenario order_may_have_landed",
        "scenario arguments_are_wrong",
        "scenario service_says_no",
    ]
    assert all(line.endswith("ended: no_tool_calls") for line in scenarios)
    assert sum(line.strip().startswith("model live · ") for line in lines) == 9
    assert replay_provider.pending == 0
    assert all(r.has_api_key for r in replay_provider.requests)


def test_cli_live_without_a_key_says_what_to_set() -> None:
    done = cli(["run", "ch09_who_retries", "--mode", "live"], {})
    assert done.returncode == 2
    assert "PRIMER_API_KEY" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_names_a_malformed_variable() -> None:
    done = cli(["run", "ch09_who_retries", "--mode", "live"], {"PRIMER_API_KEY": API_KEY, "PRIMER_LIVE": "always"})
    assert done.returncode == 2
    assert "PRIMER_LIVE must be one of auto, off, refresh, not 'always'." in done.stderr
    assert API_KEY not in done.stderr
