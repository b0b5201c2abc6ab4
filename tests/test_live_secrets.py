"""No secret in any trace, log or output of a live run, wherever it tried to get in.

The keys used here are sent for real (the provider checks the bearer key, httpbin echoes the
service's Authorization header back in its body), and the provider is made to repeat the key
in an error message, a reply and a tool call. Then every byte of every trace, of the captured
log and of the command line's output is searched for both keys, in every form they could take.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from primer.chapters import scenarios_of
from primer.clock import VirtualClock
from primer.runner import live_environment, run_chapter, run_scenario
from primer.settings import Settings
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider, error_body
from tests.servers.service import LocalHttpbin

pytestmark = pytest.mark.slow

# Characters that change in a URL or JSON, so each scrubbed form is exercised.
API_KEY = "sk-leak/Te+st=4b1d9e"
SERVICE_KEY = "svc-leak+Se/cret=77a0c3"
ROOT = Path(__file__).resolve().parent.parent


def forms(secret: str) -> set[str]:
    return {secret, quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1]}


def leaks(text: str) -> list[str]:
    return sorted(form for secret in (API_KEY, SERVICE_KEY) for form in forms(secret) if form in text)


def settings_for(provider: ReplayProvider, httpbin: LocalHttpbin) -> Settings:
    return live_settings(provider, httpbin, api_key=API_KEY, service_key=SERVICE_KEY)


def test_no_secret_in_any_trace_log_or_output(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # the SDK's and httpx's debug logs too
    settings = settings_for(replay_provider, httpbin)
    outputs: dict[str, str] = {}

    # 1. The four ch09 stories: the service is sent the key and echoes it back.
    for scenario in scenarios_of("ch09_who_retries"):
        replay_provider.load(f"ch09_who_retries.{scenario.name}")
    chapter = run_chapter("ch09_who_retries", "live", settings=settings)
    outputs["ch09 trace"] = chapter.model_dump_json(indent=2)

    # 2. The provider quotes the key back in a 401, and the model repeats the service key.
    says_no = next(s for s in scenarios_of("ch09_who_retries") if s.name == "service_says_no")
    replay_provider.reset()
    replay_provider.fail(401, body=error_body(f"Incorrect API key provided: {API_KEY}.", code="invalid_api_key"))
    refused = run_scenario(
        says_no, "live", settings, environment=live_environment(says_no, settings, clock=VirtualClock())
    )
    outputs["401 trace"] = refused.model_dump_json(indent=2)
    replay_provider.reply(
        ReplayProvider.completion(
            tool_calls=[("price_of", {"item": "milk", "note": SERVICE_KEY})],
            reasoning_content=f"The header said Bearer {SERVICE_KEY}.",
        )
    )
    replay_provider.reply(ReplayProvider.completion(f"Your key is {quote(API_KEY, safe='')}."))
    repeated = run_scenario(
        says_no, "live", settings, environment=live_environment(says_no, settings, clock=VirtualClock())
    )
    outputs["repeated trace"] = repeated.model_dump_json(indent=2)

    # 3. The command line, reading the keys from the environment.
    replay_provider.reset()
    for scenario in scenarios_of("ch09_who_retries"):
        replay_provider.load(f"ch09_who_retries.{scenario.name}")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMER_", "OPENAI_"))}
    env = {
        **base,
        "PRIMER_API_KEY": API_KEY,
        "PRIMER_BASE_URL": replay_provider.base_url,
        "PRIMER_MODEL": "deepseek-flash",
        "PRIMER_SERVICE_URL": httpbin.url,
        "PRIMER_SERVICE_KEY": SERVICE_KEY,
        "PRIMER_SERVICE_TIMEOUT": "0.5",
    }
    done = subprocess.run(
        [sys.executable, "-m", "primer", "run", "ch09_who_retries", "--mode", "live", "--json"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs["cli stdout"] = done.stdout
    outputs["cli stderr"] = done.stderr
    outputs["captured log"] = caplog.text

    # The keys really went out: what is absent below was kept out, not never there.
    assert all(r.has_api_key for r in replay_provider.requests)
    echo = chapter.scenario("service_is_busy").turns[0].tools[0].attempts[-1].response
    assert echo is not None
    assert echo.json_body["headers"]["Authorization"] == "not recorded"
    assert "[secret]" in outputs["401 trace"]
    assert refused.ending.reason == "provider_failure"
    assert "[secret]" in outputs["repeated trace"]
    assert "DEBUG" in caplog.text or caplog.records  # the log was captured at all
    assert json.loads(done.stdout)["chapter"] == "ch09_who_retries"

    found = {name: leaks(text) for name, text in outputs.items()}
    assert found == {name: [] for name in outputs}
