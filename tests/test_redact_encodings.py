"""No key leaks in any encoding: base64 at every alignment, hex, URL and JSON forms.

Two parts. The redactor itself: every form ``tests.secret_forms`` knows, of
two keys, inside longer text, is scrubbed, and for base64 exactly the
characters that hold a bit of the key go, no fewer (a leak) and no more than
the one character on either side shared with a neighbour. Then end to end:
a provider (the loopback replay server) and a service (the local httpbin)
that echo both keys in every one of those forms, through a real live
command-line run and a real MkDocs build; every byte of every output is
searched for every form of both keys.
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from pydantic import BaseModel, ConfigDict

from primer.clock import VirtualClock
from primer.models.mock import ask, call, say
from primer.redact import MIN_SECRET_LENGTH, NOT_RECORDED, SCRUBBED, Redactor
from primer.runner import run_scenario
from primer.scenario import SYSTEM, Scenario
from primer.service import ServiceClient, ServiceScript
from primer.settings import Settings
from primer.tools import ToolContext, tool
from primer.trace import Attempt
from primer.wire import RecordingClient
from tests.books import make_book
from tests.secret_forms import HEADS, TAILS, base64_cores, echo, forms, leaks, probes
from tests.servers.provider import ReplayProvider, error_body
from tests.servers.service import LocalHttpbin

# Neither length is a multiple of 3; each has characters that change in a URL or JSON, and
# "~" and "?" put "+" and "/" in every base64 alignment, so both alphabets differ.
API_KEY = "sk-enc/Te+st=~~~~???"
SERVICE_KEY = "svc-enc+Se/cret=~~~???"
KEYS = (API_KEY, SERVICE_KEY)
ROOT = Path(__file__).resolve().parent.parent


# -- the redactor --------------------------------------------------------------------


def test_the_keys_cover_every_alignment_and_both_alphabets() -> None:
    # The keys' lengths differ mod 3, so their ends fall at different alignments too.
    assert {len(key) % 3 for key in KEYS} == {1, 2}
    assert all("+" in core and "/" in core for key in KEYS for core in base64_cores(key))
    assert len(forms(API_KEY)) > 60


@pytest.mark.parametrize("key", KEYS)
def test_every_form_of_a_key_is_scrubbed_inside_longer_text(key: str) -> None:
    redactor = Redactor(KEYS)
    missed = {}
    for name, form in forms(key).items():
        for where, recorded in (
            ("text", redactor.text(f"The service said: {form}. Then nothing.")),
            ("JSON", json.dumps(redactor.json({"echo": [f"<{form}>"]}))),
            ("header", str(redactor.headers([("X-Debug", f"v={form};")]))),
        ):
            if found := leaks(recorded, KEYS):
                missed[f"{name} in {where}"] = found
            assert SCRUBBED in recorded, (name, where, recorded)
    assert missed == {}


def _expected(encoded: str, head: bytes, secret: bytes) -> str:
    # Replaced: every character holding a bit of the secret (the first and last
    # ones share theirs with a neighbour), and nothing else.
    first = 8 * len(head) // 6
    after = math.ceil(8 * (len(head) + len(secret)) / 6)
    return encoded[:first] + SCRUBBED + encoded[after:]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("head", [*HEADS, "user:", "Aladdin:", '{"authorization": "Bearer '])
@pytest.mark.parametrize("tail", TAILS)
def test_base64_loses_exactly_the_characters_that_hold_the_key(key: str, head: str, tail: str) -> None:
    redactor = Redactor([key])
    raw = f"{head}{key}{tail}".encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        encoded = encode(raw).decode()
        for text in (encoded, encoded.rstrip("=")):
            assert redactor.text(text) == _expected(text, head.encode(), key.encode())
    # The standard alphabet in a query string and in JSON that escapes "/".
    standard = base64.b64encode(raw).decode()
    expected = _expected(standard, head.encode(), key.encode())
    assert unquote(redactor.text(quote(standard, safe=""))) == expected
    assert redactor.text(standard.replace("/", "\\/")).replace("\\/", "/") == expected


def test_a_basic_credential_keeps_its_user_and_loses_the_key() -> None:
    header = "Basic " + base64.b64encode(f"user:{API_KEY}".encode()).decode()
    assert base64.b64encode(b"user:").decode().startswith("dXNlcj")
    assert Redactor([API_KEY]).text(header) == f"Basic dXNlcj{SCRUBBED}=="


@pytest.mark.parametrize("key", KEYS)
def test_hex_in_either_case_is_scrubbed_whole(key: str) -> None:
    redactor = Redactor([key])
    for hexed in (key.encode().hex(), key.encode().hex().upper()):
        assert redactor.text(f"0x{hexed}.") == f"0x{SCRUBBED}."


def test_an_encoded_form_is_never_shorter_than_the_key() -> None:
    # Why MIN_SECRET_LENGTH needs no raising for the encoded forms: a key's
    # base64 core is at least as long as the key (from a 64-letter alphabet),
    # its hex twice as long, so neither matches ordinary text more easily.
    for length in range(MIN_SECRET_LENGTH, 70):
        key = "".join(chr(33 + (i * 7) % 90) for i in range(length))
        assert min(len(core) for core in base64_cores(key)) >= length
    assert Redactor(["abc"]).secrets == []  # too short to scrub in any form


def test_credentials_in_a_url_are_kept_out_of_whatever_repeats_them() -> None:
    url = "https://user:pw-4f1e9a@service.test/anything?item=milk&api_key=abc123"
    redactor = Redactor(KEYS).with_url_credentials(url)
    echoed = {
        "url": url.replace("https://user:pw-4f1e9a@", "https://"),
        "args": {"item": "milk", "api_key": "abc123"},
        "note": "password pw-4f1e9a, key abc123, as base64 " + base64.b64encode(b"abc123").decode(),
    }
    recorded = json.dumps(redactor.json(echoed))
    assert "abc123" not in recorded
    assert "pw-4f1e9a" not in recorded
    assert base64.b64encode(b"abc123").decode()[:-1] not in recorded
    assert redactor.url(url) == "https://not-recorded@service.test/anything?item=milk&api_key=not+recorded"
    assert "milk" in recorded


def test_urls_inside_text_lose_their_credentials() -> None:
    message = "Client error '401' for url 'https://u:p@service.test/x?token=t0k3n-99&a=1'; see https://docs.test/#token"
    assert Redactor().text(message) == (
        "Client error '401' for url 'https://not-recorded@service.test/x?token=not+recorded&a=1'; "
        "see https://docs.test/#token"
    )
    # A key percent-encoded twice over in a query value is found once decoded.
    twice = quote(quote(API_KEY, safe=""), safe="")
    assert leaks(Redactor(KEYS).url(f"https://service.test/x?note={twice}"), KEYS) == []
    assert Redactor(KEYS).url("https://service.test/x?item=milk#top") == "https://service.test/x?item=milk#top"


def test_a_basic_credential_echoed_in_a_response_or_a_body_is_not_recorded() -> None:
    basic = "Basic " + base64.b64encode(b"user:whatever-it-is").decode()
    redactor = Redactor(KEYS)
    assert redactor.headers([("Authorization", basic), ("WWW-Authenticate", 'Basic realm="x"')]) == [
        ("authorization", NOT_RECORDED),
        ("www-authenticate", 'Basic realm="x"'),
    ]
    assert redactor.json({"headers": {"Authorization": basic}}) == {"headers": {"Authorization": NOT_RECORDED}}


@pytest.mark.slow
def test_both_recorders_record_a_url_with_credentials_the_same_way(httpbin: LocalHttpbin) -> None:
    origin = httpbin.url.replace("http://", "http://user:pw@")
    expected = f"{httpbin.url.replace('http://', 'http://not-recorded@')}/anything?api_key=not+recorded&item=milk"

    # The service: httpx, the attempt's record.
    service = ServiceClient(base_url=origin, clock=VirtualClock(), script=ServiceScript(["/anything"]))
    call = service.session()
    call.get({"api_key": "abc123", "item": "milk"}, idempotent=True)
    service.close()
    [attempt] = call.steps
    assert isinstance(attempt, Attempt)

    # The model wire: httpx2 under the SDK, the same URL.
    with RecordingClient(clock=VirtualClock(), redactor=Redactor()) as client:
        client.get(f"{origin}/anything?api_key=abc123&item=milk")
    [wired] = client.recorder.take()

    for request, response in ((attempt.request, attempt.response), (wired.exchange.request, wired.exchange.response)):
        assert request is not None
        assert response is not None
        assert request.url == expected
        assert response.json_body["args"] == {"api_key": NOT_RECORDED, "item": "milk"}
        assert response.json_body["headers"]["Authorization"] == NOT_RECORDED  # httpx sent Basic user:pw
        recorded = request.model_dump_json() + response.model_dump_json()
        assert "abc123" not in recorded
        assert "user:pw" not in recorded
    assert attempt.request.url == wired.exchange.request.url
    assert service.name == httpbin.url.replace("http://", "http://not-recorded@")


class Shout(BaseModel):
    """Nothing to say."""

    model_config = ConfigDict(title="shout")


@tool(Shout)
def shout(args: Shout, ctx: ToolContext) -> str:
    """Return the keys, as careless code might."""
    return f"the keys: {echo(KEYS)}"


def test_what_a_tool_returns_is_scrubbed_before_the_model_or_the_trace_sees_it() -> None:
    scenario = Scenario(name="shouts", prompt="Shout.", tools=[shout], mock=[ask(call("shout")), say("Done.")])
    run = run_scenario(scenario, "mock", Settings(api_key=API_KEY, service_key=SERVICE_KEY))
    [turn, _] = run.turns
    assert turn.tools[0].result is not None
    assert turn.tools[0].result.startswith(f"the keys: plain={SCRUBBED}")
    assert run.transcript[3].content == turn.tools[0].result  # what the model was sent
    assert leaks(run.model_dump_json(), KEYS) == []


# -- end to end: a real live command-line run and a real MkDocs build ----------------

PROMPTS = {"echoes": "Repeat after the service.", "raises": "Break something.", "refused": "Hello?"}

CHAPTER = f'''"""Chapter echo: a service and a provider that repeat the keys, encoded."""

import base64
import os

from pydantic import BaseModel, ConfigDict

from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import ToolContext, tool
from tests.secret_forms import echo

# A careless debugging echo: every form of both keys, read from the settings.
KEYS = [os.environ.get("PRIMER_API_KEY", "sk-none-0000"), os.environ.get("PRIMER_SERVICE_KEY", "svc-none-0000")]
DEBUG = echo(KEYS)
# httpbin's /base64/VALUE answers with VALUE decoded.
DECODES = base64.urlsafe_b64encode(f"user:{{KEYS[0]}} and svc:{{KEYS[1]}}".encode()).decode()


class Note(BaseModel):
    """What to have the service repeat."""

    model_config = ConfigDict(title="repeat")
    note: str


class Boom(BaseModel):
    """Nothing."""

    model_config = ConfigDict(title="explode")
    note: str


@tool(Note)
def repeat(args: Note, ctx: ToolContext) -> str:
    """Have the service repeat a note, and carelessly the keys."""
    return str(ctx.require_service().get({{"note": args.note, "debug": DEBUG}}, idempotent=True))


@tool(Boom)
def explode(args: Boom, ctx: ToolContext) -> str:
    """Fail with the keys in the message, as a careless error does."""
    raise RuntimeError(f"could not use {{DEBUG}}")


echoes = Scenario(
    name="echoes",
    prompt={PROMPTS["echoes"]!r},
    tools=[repeat],
    service=["/base64/" + DECODES, "/anything"],
    mock=[ask(call("repeat", note="mock")), ask(call("repeat", note="again")), say("Done.")],
)

raises = Scenario(name="raises", prompt={PROMPTS["raises"]!r}, tools=[explode], mock=[ask(call("explode", note="x"))])

refused = Scenario(name="refused", prompt={PROMPTS["refused"]!r}, tools=[], mock=[say("Hello.")])
'''

PAGE = "# Echo\n\nWhat the service said.\n\n::: trace ch_echo\n"


def _request(prompt: str, turn: int) -> dict[str, Any]:
    # What the replay server matches a call by: the opening messages and the turn.
    opening = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    return {"messages": opening + [{"role": "assistant", "content": ""}] * turn}


def _echoing_reply(tool: str, tool_calls: int = 1) -> dict[str, Any]:
    """A completion repeating both keys everywhere a provider can: text, reasoning, tool calls."""
    said = echo(KEYS)
    body = ReplayProvider.completion(
        said, tool_calls=[(tool, {"note": f"{n} {said}"}) for n in range(tool_calls)], reasoning_content=said
    )
    for index, tool_call in enumerate(body["choices"][0]["message"]["tool_calls"]):
        tool_call["id"] = f"call_{index}_{API_KEY.encode().hex()}"
    body["id"] = base64.b64encode(f"user:{SERVICE_KEY}".encode()).decode()
    return body


#: Response headers a debugging provider might add.
ECHO_HEADERS = {
    "x-echo": forms(API_KEY)["Basic user:KEY"],
    "x-debug": forms(SERVICE_KEY)["base64url at 1, 2 after, unpadded"],
    "x-trace": forms(API_KEY)["HEX"],
}

#: The provider quoting both keys back in a refusal.
REFUSAL = error_body(f"Incorrect API key provided: {echo(KEYS)}", code="invalid_api_key")


def _book_exchanges() -> list[dict[str, Any]]:
    breaks = _echoing_reply("explode")
    # A tool the model made up, named after the key.
    unknown = {
        "id": "call_9",
        "type": "function",
        "function": {"name": f"get_{API_KEY.encode().hex()}", "arguments": "{}"},
    }
    breaks["choices"][0]["message"]["tool_calls"].append(unknown)
    return [
        {"request": _request(PROMPTS["echoes"], 0), "headers": ECHO_HEADERS, "response": _echoing_reply("repeat", 2)},
        {"request": _request(PROMPTS["echoes"], 1), "response": ReplayProvider.completion(echo(KEYS))},
        {"request": _request(PROMPTS["raises"], 0), "response": breaks},
        {"request": _request(PROMPTS["refused"], 0), "status": 401, "response": REFUSAL},
    ]


def _environment(provider: ReplayProvider, httpbin: LocalHttpbin) -> dict[str, str]:
    return {
        "PRIMER_API_KEY": API_KEY,
        "PRIMER_BASE_URL": provider.base_url,
        "PRIMER_MODEL": "deepseek-flash",
        "PRIMER_SERVICE_URL": httpbin.url,
        "PRIMER_SERVICE_KEY": SERVICE_KEY,
        "PRIMER_SERVICE_TIMEOUT": "2",
    }


def _cli(provider: ReplayProvider, httpbin: LocalHttpbin, *options: str) -> subprocess.CompletedProcess[str]:
    provider.reset()
    provider.reply(_echoing_reply("price_of"), headers=ECHO_HEADERS)
    provider.fail(401, body=REFUSAL)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMER_", "OPENAI_"))}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "primer",
            "run",
            "ch09_who_retries",
            "--scenario",
            "service_says_no",
            "--mode",
            "live",
            *options,
        ],
        env={**base, **_environment(provider, httpbin), "PRIMER_MODEL_TIMEOUT": "10"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_no_form_of_either_key_in_any_output_of_a_live_run_or_a_build(
    replay_provider: ReplayProvider, httpbin: LocalHttpbin, tmp_path: Path
) -> None:
    outputs: dict[str, bytes] = {}

    # 1. The command line, twice: summary lines and JSON. The provider echoes
    #    the keys in its reply and headers, then quotes them in a 401.
    for options in ((), ("--json",)):
        done = _cli(replay_provider, httpbin, *options)
        assert done.returncode == 1, done.stderr  # the 401 ends the scenario: provider_failure
        assert all(request.has_api_key for request in replay_provider.requests)
        outputs[f"cli {options} stdout"] = done.stdout.encode()
        outputs[f"cli {options} stderr"] = done.stderr.encode()
    assert SCRUBBED in done.stdout
    assert "It said:" in done.stderr
    assert SCRUBBED in done.stderr
    cli_run = json.loads(done.stdout)
    [turn, refused] = cli_run["scenarios"][0]["turns"]
    headers = dict(turn["model_call"]["exchanges"][0]["response"]["headers"])
    assert headers["x-echo"] == f"Basic dXNlcj{SCRUBBED}=="
    assert refused["model_call"]["exchanges"][0]["response"]["status"] == 401

    # 2. A real MkDocs build with live runs: the service echoes the keys too.
    replay_provider.reset()
    replay_provider.load(_book_exchanges())
    book = make_book(tmp_path / "book", {"ch_echo": CHAPTER}, {"index": PAGE})
    build = book.build(**_environment(replay_provider, httpbin))
    assert build.returncode == 0, build.log
    outputs["build log"] = build.log.encode()
    files = [path for path in book.root.rglob("*") if path.is_file()]
    outputs.update({str(path.relative_to(book.root)): path.read_bytes() for path in files})

    # What is absent below was kept out, not never there: the runs happened.
    assert replay_provider.pending == 0, replay_provider.requests
    live = json.loads((book.docs / "traces" / "ch_echo.live.json").read_text())
    runs = {run["name"]: run for run in live["scenarios"]}
    assert runs["echoes"]["ending"]["reason"] == "no_tool_calls"
    attempts = [tool["steps"][0] for tool in runs["echoes"]["turns"][0]["tools"]]
    assert attempts[0]["response"]["text_body"] == f"user:{SCRUBBED} and svc:{SCRUBBED}"  # /base64 decoded
    assert SCRUBBED in attempts[1]["response"]["json_body"]["args"]["debug"]  # /anything echoed
    assert attempts[1]["response"]["json_body"]["headers"]["Authorization"] == NOT_RECORDED
    assert runs["raises"]["ending"]["reason"] == "scenario_error"
    assert SCRUBBED in runs["raises"]["turns"][0]["tools"][0]["error"]["traceback"]
    assert runs["raises"]["turns"][0]["tools"][1]["name"] == f"get_{SCRUBBED}"
    assert runs["refused"]["ending"]["reason"] == "provider_failure"
    assert build.lines("raises (live) failed")
    assert build.lines("refused (live) failed")
    for name in ("docs/traces/ch_echo.live.json", "site/index.html"):
        assert name in outputs, sorted(outputs)
    assert any(name.endswith("/mock.json") and "ch_echo" in name for name in outputs), sorted(outputs)
    for name in ("site/traces/ch_echo.json", "site/search/search_index.json"):
        assert SCRUBBED.encode() in outputs[name], name

    found = {name: leaks(data.decode("latin-1"), KEYS) for name, data in outputs.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
    assert len(outputs) > 8
    # Every probe was looked for: both keys, every alignment, both alphabets.
    assert len(probes(API_KEY)) == len(probes(SERVICE_KEY)) >= 19
