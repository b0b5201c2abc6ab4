"""What recording foreign code costs, and what the frameworks cost in a mock build.

    python benchmarks/foreign_code.py              # 20 rounds of each
    python benchmarks/foreign_code.py --rounds 50

Two measures, each way run once per round, in turn, so that the machine's
drift falls on all of them alike:

* **recording overhead per exchange**: the raw-SDK agent of the tests
  (``tests/fixtures/code_agents.py``) on one service client, ten turns of it
  (ten model calls and nine service requests), run live against the loopback provider and httpbin, once under
  the seam (``run_code``: every exchange intercepted, read whole, recorded,
  redacted, and the trace rebuilt from the wire) and once called bare with
  the same ``Reach`` (no seam, nothing recorded). The difference over the
  three exchanges is the seam's cost per exchange.
* **mock run time of chapter 18's scenarios**: the book's own loop, the
  pydantic-ai agent and the Agents SDK agent, each ``run_scenario`` in mock
  mode. The first run of each framework in the process pays for importing
  it, printed apart (``cold``); the rounds after are warm.
"""

from __future__ import annotations

import argparse
import functools
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai

# Runnable from a checkout without installing: the repository root holds `primer` and `tests`.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from primer.code_runner import live_wiring, run_code
from primer.code_scenario import CodeScenario, Reach
from primer.models.mock import ask, call, say
from primer.runner import run_scenario
from primer.scripted_provider import MOCK_PROVIDER_URL, ScriptedProvider
from primer.seam import Plain
from primer.settings import Settings
from tests.fixtures.code_agents import TOOLS, WEATHER
from tests.servers.provider import ReplayProvider
from tests.servers.service import start_httpbin

KEY = "sk-bench-foreign-0123456789"


#: Turns per run: enough exchanges that the clients' set-up (certificates, ~0.1 s each) does not hide their cost.
TURNS = 10
#: A model call per turn, and a service request per turn but the last.
EXCHANGES = 2 * TURNS - 1


def _script(provider: ReplayProvider) -> None:
    for _ in range(TURNS - 1):
        provider.reply(ReplayProvider.completion(tool_calls=[("weather_in", {"city": "Paris"})]))
    provider.reply(ReplayProvider.completion("Sunny in Paris."))


def _agent(reach: Reach) -> None:
    """The tests' raw-SDK loop, its service requests on one client (a client per request costs ~0.1 s)."""
    with httpx.Client(base_url=reach.service("weather")) as service:
        _loop(reach.openai, reach.model, service)


def _loop(client: openai.OpenAI, model: str, service: httpx.Client) -> None:
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    for _ in range(TURNS):
        reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)  # type: ignore[arg-type]
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for tool_call in message.tool_calls or []:
            answer = service.get("/get", params={"city": "Paris"})
            messages.append({"role": "tool", "tool_call_id": tool_call.id, "content": answer.text})


SCRIPT = [*(ask(call("weather_in", city="Paris")) for _ in range(TURNS - 1)), say("Sunny in Paris.")]
LONG = CodeScenario(name="long", code=_agent, services=[WEATHER], mock=SCRIPT)


def in_process(rounds: int) -> None:
    """The seam's cost per exchange in process: mock run against the same answers through MockTransports."""

    def bare() -> None:
        provider = ScriptedProvider(SCRIPT)

        def answer(request: httpx2.Request) -> httpx2.Response:
            plain = Plain(request.method, str(request.url), request.headers.multi_items(), request.read())
            given = provider.answer(plain)
            return httpx2.Response(given.status, headers=given.headers, content=given.body)

        # Clients built as the seam's are (the default transport, certificates and all), answered by the mounts.
        http = httpx2.Client(mounts={"all://": httpx2.MockTransport(answer)})
        client = openai.OpenAI(api_key=KEY, base_url=MOCK_PROVIDER_URL, http_client=http)
        mounts = {"all://": httpx.MockTransport(WEATHER.mock)}
        with client, httpx.Client(base_url=WEATHER.mock_url(), mounts=mounts) as service:
            _loop(client, "mock", service)

    def recorded() -> None:
        run = run_code(LONG, "mock", Settings())
        assert run.ending.reason == "answer_received", run.ending

    _report("in process (mock)", _rounds(rounds, bare, recorded), rounds)


def _rounds(rounds: int, bare: Callable[[], None], recorded: Callable[[], None]) -> dict[str, list[float]]:
    for work in (bare, recorded):  # warm: imports, connections
        work()
    times: dict[str, list[float]] = {"bare": [], "recorded": []}
    for _ in range(rounds):
        times["bare"].append(_timed(bare))
        times["recorded"].append(_timed(recorded))
    return times


def _report(where: str, times: dict[str, list[float]], rounds: int) -> None:
    bare_ms, recorded_ms = (statistics.median(times[k]) for k in ("bare", "recorded"))
    print(f"raw-SDK agent, {where}, {EXCHANGES} exchanges, median of {rounds} rounds")
    print(f"  bare (no seam)          {bare_ms:8.2f} ms")
    print(f"  recorded (seam+rebuild) {recorded_ms:8.2f} ms")
    per = (recorded_ms - bare_ms) / EXCHANGES
    print(f"  overhead per exchange   {per:8.2f} ms  ({recorded_ms / bare_ms:.2f}x the bare run)")


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def overhead(rounds: int) -> None:
    """The seam's cost per exchange, live on loopback: recorded against bare."""
    httpbin = start_httpbin()
    provider = ReplayProvider().start()
    try:
        settings = Settings(api_key=KEY, base_url=provider.base_url, model="bench", services={"weather": httpbin.url})
        wiring = live_wiring(LONG, settings)

        def bare() -> None:
            _script(provider)
            reach = Reach(wiring.base_url, wiring.api_key, wiring.model, dict(wiring.services))
            _agent(reach)
            reach.openai.close()

        def recorded() -> None:
            _script(provider)
            run = run_code(LONG, "live", settings)
            assert run.ending.reason == "answer_received", run.ending

        times = _rounds(rounds, bare, recorded)
    finally:
        provider.stop()
        httpbin.stop()
    _report("live on loopback", times, rounds)


def frameworks(rounds: int) -> None:
    """Chapter 18's three scenarios in mock mode: cold (imports) and warm."""
    from primer.chapters.ch18_three_ways import agents_sdk, own_loop, pydantic_ai

    scenarios = [own_loop, pydantic_ai, agents_sdk]
    cold = {s.name: _timed(functools.partial(run_scenario, s, "mock")) for s in scenarios}
    warm: dict[str, list[float]] = {s.name: [] for s in scenarios}
    for _ in range(rounds):
        for scenario in scenarios:
            warm[scenario.name].append(_timed(functools.partial(run_scenario, scenario, "mock")))
    base = statistics.median(warm["own_loop"])
    print(f"chapter 18, mock runs, median of {rounds} warm rounds (cold: the first run in the process)")
    for name, times in warm.items():
        median = statistics.median(times)
        print(f"  {name:<10} warm {median:8.2f} ms  ({median / base:5.1f}x own_loop)   cold {cold[name]:9.1f} ms")


def main() -> None:
    """Print both measures."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # httpbin's request lines
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    frameworks(args.rounds)
    in_process(args.rounds)
    overhead(args.rounds)


if __name__ == "__main__":
    main()
