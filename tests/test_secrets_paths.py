"""A key reaches no output by the paths a hostile provider can try: one redaction for every recorded field.

A provider on loopback streams what it likes: the key as an event's name,
split across the pieces of a refusal, of a second choice interleaved with the
first, of broken events that are not JSON, of a tool call's id; and the key
disguised (zero-width spaces, soft hyphens, full-width forms, spaced out,
reversed, split by Markdown a page would render joined). Every output (the
model call's record, the events written back as SSE, the command line's
``--json``, and a real ``mkdocs build``'s frozen trace, pages, payload pages,
search index, published JSON, cache and log) is searched
for the key in every form the redactor claims (``tests.secret_forms``), and for
its halves.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import quote

import pytest

from primer.clock import VirtualClock
from primer.errors import ConfigError, ExportFailed
from primer.inert import inert
from primer.models.live import LiveModel
from primer.redact import SCRUBBED, Redactor
from primer.replay import read_trace
from primer.settings import Settings
from primer.streaming import sse_text
from primer.trace import ChapterRun, Message
from tests.books import REPO, edit, make_book
from tests.secret_forms import leaks
from tests.servers.provider import ReplayProvider

API_KEY = "sk-leak/Te+st=4b1d9e77"
SERVICE_KEY = "svc-leak+Se/cret=77a0c3"
KEYS = (API_KEY, SERVICE_KEY)
CONTEXT = [Message(role="human", content="What does milk cost?")]
ROOT = Path(__file__).resolve().parent.parent


def halves(secret: str) -> list[str]:
    """The two halves of a key, and its middle: none may be left where a split key was."""
    middle = len(secret) // 2
    return [secret[:middle], secret[middle:], secret[middle // 2 : middle + middle // 2]]


def found(text: str) -> list[str]:
    """Every form of either key, or a half of one, that ``text`` holds."""
    pieces = [f"half {piece!r}" for secret in KEYS for piece in halves(secret) if piece in text]
    return leaks(text, KEYS) + pieces


def chunk(delta: dict[str, object] | None = None, *, index: int = 0, finish: str | None = None) -> str:
    choice = {"index": index, "delta": delta or {}, "finish_reason": finish}
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]})


def split(secret: str) -> tuple[str, str]:
    middle = len(secret) // 2
    return secret[:middle], secret[middle:]


A, B = split(API_KEY)
S, T = split(SERVICE_KEY)

#: Each hostile stream, by what it tries: (event name, data) in the order sent.
ATTACKS: dict[str, list[tuple[str | None, str]]] = {
    "the key as the event's name": [
        (API_KEY, chunk({"role": "assistant", "content": "Milk"})),
        (f"x{SERVICE_KEY}", chunk({"content": " is 1.20."})),
        (None, chunk(finish="stop")),
        (None, "[DONE]"),
    ],
    "split across event names": [
        (A, chunk({"content": "Milk"})),
        (B, chunk({"content": " is 1.20."}, finish="stop")),
        (None, "[DONE]"),
    ],
    "split across a refusal": [
        (None, chunk({"role": "assistant", "refusal": f"No: {A}"})),
        (None, chunk({"refusal": f"{B} is mine."})),
        (None, chunk(finish="stop")),
        (None, "[DONE]"),
    ],
    "choice 1 interleaved with choice 0": [
        (None, chunk({"content": "Milk "}, index=0)),
        (None, chunk({"content": S}, index=1)),
        (None, chunk({"content": "is "}, index=0)),
        (None, chunk({"content": T}, index=1)),
        (None, chunk({"content": "1.20."}, index=0, finish="stop")),
        (None, chunk(index=1, finish="stop")),
        (None, "[DONE]"),
    ],
    "split across events that are not JSON": [
        (None, chunk({"content": "Milk"})),
        (None, f"oops {A}"),
        (None, f"{B} oops"),
        (None, chunk(finish="stop")),
        (None, "[DONE]"),
    ],
    "split across a tool call's id": [
        (None, chunk({"tool_calls": [{"index": 0, "id": A, "function": {"name": "price_of", "arguments": ""}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "id": B, "function": {"arguments": '{"item": "milk"}'}}]})),
        (None, chunk(finish="tool_calls")),
        (None, "[DONE]"),
    ],
    "split between a refusal and the content beside it": [
        (None, chunk({"content": "Milk", "refusal": A})),
        (None, chunk({"content": B})),
        (None, chunk(finish="stop")),
        (None, "[DONE]"),
    ],
    "disguised in the content": [
        (None, chunk({"content": "\u200b".join(API_KEY) + " and " + "\u00ad".join(SERVICE_KEY)})),
        (None, chunk({"content": " or " + "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in API_KEY)})),
        (None, chunk({"content": " or " + " ".join(SERVICE_KEY) + " or " + API_KEY[::-1]})),
        (None, chunk({"content": " or \u202e" + SERVICE_KEY[::-1] + "\u202c."}, finish="stop")),
        (None, "[DONE]"),
    ],
    "split by the Markdown a page renders": [
        (None, chunk({"content": f"{A}**{B}** and `{SERVICE_KEY[:5]}`{SERVICE_KEY[5:]}"})),
        (None, chunk({"content": f" or {A}&#{ord(B[0])};{B[1:]} or [{A}](https://shop.example/){B}"})),
        (None, chunk({"content": " or " + " ".join(A) + " _" + B[0] + "_ " + " ".join(B[1:])}, finish="stop")),
        (None, "[DONE]"),
    ],
}


@pytest.fixture
def model(replay_provider: ReplayProvider) -> Iterator[LiveModel]:
    live = LiveModel(
        base_url=replay_provider.base_url,
        api_key=API_KEY,
        model="m",
        clock=VirtualClock(),
        redactor=Redactor([SERVICE_KEY]),
    )
    yield live
    live.close()


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_no_recorded_field_of_a_hostile_stream_keeps_the_key(
    replay_provider: ReplayProvider, model: LiveModel, attack: str
) -> None:
    replay_provider.events(ATTACKS[attack])
    call = model.complete(CONTEXT, [], {"stream": True})
    assert replay_provider.requests[-1].has_api_key  # the key really went out
    stream = call.streamed
    assert stream is not None
    assert len(stream.events) == len(ATTACKS[attack])  # every event was kept, none dropped to hide it
    outputs = {"record": call.model_dump_json(), "as SSE": sse_text(stream), "inert": inert(call.model_dump_json())}
    assert {name: found(text) for name, text in outputs.items()} == {name: [] for name in outputs}


def test_the_reply_still_reads_where_no_secret_was(replay_provider: ReplayProvider, model: LiveModel) -> None:
    replay_provider.events(ATTACKS["choice 1 interleaved with choice 0"])
    call = model.complete(CONTEXT, [], {"stream": True})
    assert call.reply is not None
    assert call.reply.content == "Milk is 1.20."  # choice 0, untouched
    stream = call.streamed
    assert stream is not None
    second = "".join(
        e.data["choices"][0]["delta"].get("content", "")
        for e in stream.events
        if isinstance(e.data, dict) and e.data["choices"][0]["index"] == 1
    )
    assert second == SCRUBBED


def test_disguised_keys_are_scrubbed_wherever_text_is_recorded() -> None:
    redactor = Redactor(KEYS)
    wide = "".join(chr(ord(c) + 0xFEE0) for c in API_KEY)
    for disguised in (
        "\u200b".join(API_KEY),
        "\u00ad".join(API_KEY),
        "\u2060".join(API_KEY),
        wide,
        " ".join(API_KEY),
        "\n".join(API_KEY),
        API_KEY[::-1],
        " ".join(API_KEY[::-1]),
        "\u202e" + API_KEY[::-1],
    ):
        text = f"before {disguised} after"
        assert redactor.text(text) in (f"before {SCRUBBED} after", f"before \u202e{SCRUBBED} after"), repr(text)
        assert redactor.json({"note": text}) == {"note": redactor.text(text)}
    # Ordinary text is left alone, spaces and Markdown and all.
    markdown = "**Milk** is `1.20` &amp; [bread](https://x.example/) <b>1.45</b>"
    for ordinary in ("Milk is 1.20 and bread 1.45.", markdown):
        assert redactor.text(ordinary) == ordinary


# -- a real command line run and a real build ---------------------------------------------------

STREAMED = '''"""A streamed answer from a provider that says what it likes."""

from primer.models.mock import say
from primer.scenario import Scenario

streams = Scenario(name="streams", prompt="What does milk cost?", tools=[], mock=[say("Milk is 1.20.")],
                   settings={"stream": True})
'''

PAGE = "# Streams\n\n::: trace ch_streams\n"


def hostile_events() -> list[tuple[str | None, str]]:
    """One stream that tries every path at once."""
    return [
        (API_KEY, chunk({"role": "assistant", "content": "Milk ", "refusal": A})),
        (None, chunk({"refusal": B, "content": "\u200b".join(SERVICE_KEY)})),
        (S, chunk({"content": " " + API_KEY[::-1]}, index=1)),
        (T, f"not json {A}"),
        (None, f"{B} still not json"),
        (None, chunk({"content": f" is 1.20.{HIDDEN}"}, finish="stop")),
        (None, "[DONE]"),
    ]


#: What reorders or hides text on a page or in a terminal: the right-to-left override, a
#: zero-width space, a one-byte CSI (C1).
HIDDEN = " \u202eevil\u202c \u200bhidden \x9b[31mred"


def everything(root: Path) -> dict[str, str]:
    """Every file under ``root``, by its path: pages, payload pages, search index, traces, caches."""
    return {
        str(path.relative_to(root)): path.read_text(errors="replace")
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix not in (".py", ".pyc")
    }


@pytest.mark.slow
def test_a_live_build_and_the_command_line_keep_the_key_out(replay_provider: ReplayProvider, tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", {"ch_streams": STREAMED}, {"index": PAGE})
    live = {
        "PRIMER_API_KEY": API_KEY,
        "PRIMER_SERVICE_KEY": SERVICE_KEY,
        "PRIMER_BASE_URL": replay_provider.base_url,
        "PRIMER_MODEL": "m",
    }
    replay_provider.events(hostile_events())
    built = book.build(**live)
    assert built.returncode == 0, built.log
    trace = json.loads((book.docs / "traces" / "ch_streams.live.json").read_text())
    [exchange] = trace["scenarios"][0]["turns"][0]["model_call"]["exchanges"]
    assert len(exchange["response"]["stream"]["events"]) == len(hostile_events())  # recorded live, every event
    outputs = {"build log": built.log, **everything(book.root)}
    assert any(name.startswith("site/") and "search" in name for name in outputs)
    # The characters that hide or reorder text are shown as escapes, on the page and the payload page.
    shown = {name: text for name, text in outputs.items() if name.startswith("site/") and name.endswith(".html")}
    assert len(shown) >= 2, list(outputs)
    assert any("\\u202eevil" in text for text in shown.values())
    assert {name: [c for c in "\u202e\u202c\u200b\x9b" if c in text] for name, text in shown.items()} == {
        name: [] for name in shown
    }

    replay_provider.events(hostile_events())
    done = subprocess.run(
        [sys.executable, "-m", "primer", "run", "ch_streams", "--mode", "live", "--json"],
        env=book.env(**live),
        cwd=book.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # The stream breaks (events that are not JSON): the run fails, says why, and prints its trace.
    assert done.returncode == 1, done.stderr
    assert "sent an event that is not JSON" in done.stderr
    assert json.loads(done.stdout)["chapter"] == "ch_streams"
    outputs |= {"cli stdout": done.stdout, "cli stderr": done.stderr}
    assert all(r.has_api_key for r in replay_provider.requests)
    assert {name: found(text) for name, text in outputs.items()} == {name: [] for name in outputs}


# -- the replay knows the secrets the recording knew ----------------------------------------------

LEAKY = '''"""A tool that returns what it should not: the keys in its environment."""

import os

from pydantic import BaseModel, ConfigDict

from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import ToolContext, tool


class Nothing(BaseModel):
    """No arguments."""

    model_config = ConfigDict(title="read_env")


@tool(Nothing)
def read_env(args: Nothing, ctx: ToolContext) -> str:
    """Read the environment."""
    return "keys: " + os.environ.get("PRIMER_API_KEY", "none") + " " + os.environ.get("PRIMER_SERVICE_KEY", "none")


leaks = Scenario(name="leaks", prompt="Read it.", tools=[read_env], mock=[ask(call("read_env")), say("Done.")])
'''


def answer_the_leaky_chapter(provider: ReplayProvider) -> None:
    provider.reply(ReplayProvider.completion(tool_calls=[("read_env", {})]))
    provider.reply(ReplayProvider.completion("Done."))


@pytest.mark.slow
def test_a_replay_scrubs_the_environments_keys_and_never_prints_them(
    replay_provider: ReplayProvider, tmp_path: Path
) -> None:
    book = make_book(tmp_path / "book", {"ch_leaky": LEAKY}, {"index": "# Leaky\n\n::: trace ch_leaky\n"})
    both = {
        "PRIMER_API_KEY": API_KEY,
        "PRIMER_SERVICE_KEY": SERVICE_KEY,
        "PRIMER_BASE_URL": replay_provider.base_url,
        "PRIMER_MODEL": "m",
    }
    answer_the_leaky_chapter(replay_provider)
    recorded = book.build(**both)
    assert recorded.returncode == 0, recorded.log
    path = book.docs / "traces" / "ch_leaky.live.json"
    assert f"keys: {SCRUBBED} {SCRUBBED}" in path.read_text()
    outputs = {"recording build": recorded.log}

    def verify(**env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "primer", "verify", "ch_leaky"],
            env=book.env(**env),
            cwd=book.root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    # Right after the recording, with the same keys: verified, no false divergence.
    done = verify(**both)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "leaks: verified by replay" in done.stdout
    outputs |= {"verify stdout": done.stdout, "verify stderr": done.stderr}
    # Without the provider key, the tool returns another text now: a true divergence, told without a key.
    done = verify(PRIMER_SERVICE_KEY=SERVICE_KEY)
    assert done.returncode == 1, done.stdout
    assert "diverged" in done.stdout
    outputs |= {"diverged stdout": done.stdout, "diverged stderr": done.stderr}

    # A keyless build after a code edit replays the trace: with the service key alone, and with
    # both keys but live runs off. Nothing it writes or says holds a key.
    edit(book.chapter("ch_leaky"), "class Nothing(BaseModel):", "UNUSED = 1\n\n\nclass Nothing(BaseModel):")
    for name, env in {
        "service key alone": {"PRIMER_SERVICE_KEY": SERVICE_KEY},
        "live off": {**both, "PRIMER_LIVE": "off"},
    }.items():
        built = book.build(**env)
        outputs |= {f"build, {name}": built.log, **{f"{name}: {k}": v for k, v in everything(book.root).items()}}
        assert not any(SERVICE_KEY in line for line in built.log.splitlines()), name
    assert {name: found(text) for name, text in outputs.items()} == {name: [] for name in outputs}


# -- configuration errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PRIMER_BASE_URL", f"https://api.example.test/v1 {API_KEY}"),
        ("PRIMER_BASE_URL", f"{API_KEY}"),
        ("PRIMER_BASE_URL", f"https://api.example.test:{API_KEY}/v1"),
        ("PRIMER_SERVICE_URL", f"ftp://{SERVICE_KEY}.example.test"),
        ("PRIMER_SERVICE_URL", f"https://example.test/#{SERVICE_KEY}"),
        ("PRIMER_LIVE", API_KEY),
        ("PRIMER_TRACES", SERVICE_KEY),
        ("PRIMER_MODEL", f"m {API_KEY}"),
        ("PRIMER_MODEL_TIMEOUT", API_KEY),
        ("PRIMER_SERVICE_TIMEOUT", f"-{SERVICE_KEY}"),
    ],
)
def test_a_configuration_error_names_the_variable_and_never_quotes_a_key(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({variable: value})
    message = str(caught.value)
    assert message.startswith(variable)
    assert found(message) == []


# -- the OTLP export ----------------------------------------------------------------------------


class Redirecting(BaseHTTPRequestHandler):
    """A collector that answers every export with a redirect to ``target``, counting what reaches it."""

    target: ClassVar[str] = ""
    status: ClassVar[int] = 307
    posts: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        type(self).posts.append(self.path)
        self.send_response(type(self).status)
        self.send_header("location", type(self).target)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collectors() -> Iterator[tuple[str, type[Redirecting], type[Redirecting]]]:
    """A redirecting collector, and the one it points to (which answers 200)."""
    target = type("Target", (Redirecting,), {"posts": [], "status": 200})
    first = type("First", (Redirecting,), {"posts": []})
    servers = [ThreadingHTTPServer(("127.0.0.1", 0), handler) for handler in (first, target)]
    threads = [threading.Thread(target=server.serve_forever, daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    first.target = f"http://127.0.0.1:{servers[1].server_address[1]}/v1/traces"
    try:
        yield f"http://127.0.0.1:{servers[0].server_address[1]}", first, target
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


@pytest.mark.parametrize("status", [301, 302, 307, 308, 202, 204, 404, 500])
def test_otlp_follows_no_redirect_and_any_answer_but_2xx_is_a_failure_naming_it(
    collectors: tuple[str, type[Redirecting], type[Redirecting]], status: int
) -> None:
    from primer.export.otlp import send

    url, first, target = collectors
    first.status = status
    run = read_trace(ROOT / "docs" / "traces" / "ch05_loop_endings.live.json")
    if status in (202, 204):
        assert send([run], url, timeout=2) > 0
        return
    with pytest.raises(ExportFailed, match=rf"it answered {status}"):
        send([run], url, timeout=2)
    assert target.posts == []  # the spans went nowhere else
    assert first.posts


@pytest.mark.slow
def test_otlp_never_shows_a_key_in_the_endpoint(collectors: tuple[str, type[Redirecting], type[Redirecting]]) -> None:
    url, first, _ = collectors
    first.status = 401
    encoded = quote(API_KEY, safe="")
    valid = (
        f"{url.replace('http://', f'http://user:{encoded}@')}/{quote(SERVICE_KEY, safe='')}/v1/traces?api_key={encoded}"
    )
    raw = f"{url.replace('http://', f'http://user:{API_KEY}@')}/{SERVICE_KEY}/v1/traces"
    for endpoint, said in ((valid, "it answered 401"), (raw, "did not take")):
        done = subprocess.run(
            [sys.executable, "-m", "primer", "export", "otlp", "ch05_loop_endings", "--endpoint", endpoint],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 1, done.stdout + done.stderr
        assert said in done.stderr
        assert found(done.stdout + done.stderr) == []
    assert len(first.posts) == 1  # the valid endpoint was sent to, where it was asked


# -- the workflows ------------------------------------------------------------------------------


def test_every_job_that_pushes_nothing_checks_out_without_persisted_credentials() -> None:
    import yaml

    checked = []
    for path in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name, job in workflow["jobs"].items():
            runs = " ".join(str(step.get("run", "")) for step in job.get("steps", []))
            for step in job.get("steps", []):
                if str(step.get("uses", "")).startswith("actions/checkout@"):
                    persisted = (step.get("with") or {}).get("persist-credentials", True)
                    checked.append((path.name, name, persisted, "git push" in runs))
    assert checked
    assert [(file, job) for file, job, persisted, pushes in checked if persisted and not pushes] == []


def test_a_trace_file_that_holds_a_secret_is_read_as_the_recorder_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A frozen live trace edited by hand (or planted by a pull request): the key in a header, a URL, a body, a
    # reply and a Basic credential, and credentials the recorder never keeps, whatever their value.
    key = "sk-planted-0123456789abcdef"
    monkeypatch.setenv("PRIMER_API_KEY", key)
    raw = json.loads((REPO / "docs" / "traces" / "ch09_who_retries.live.json").read_text())
    call = raw["scenarios"][0]["turns"][0]["model_call"]
    request, response = call["exchanges"][0]["request"], call["exchanges"][0]["response"]
    basic = base64.b64encode(f"user:{key}".encode()).decode()
    request["headers"] += [["authorization", "Bearer not-a-known-key-at-all"], ["x-trace-token", key]]
    request["headers"] += [["x-debug", f"Basic {basic}"]]
    request["url"] += f"?api_key=another-unknown-value&x={key}"
    request["json_body"]["api_key"] = "a-credential-field-9876"
    response["headers"] += [["set-cookie", "session=abcdef0123456789"]]
    call["reply"]["content"] = f"The key is {key}."
    path = tmp_path / "ch09_who_retries.live.json"
    path.write_text(json.dumps(raw))

    run = read_trace(path)
    text = run.model_dump_json()
    assert leaks(text, [key]) == []
    for value in ("not-a-known-key-at-all", "another-unknown-value", "a-credential-field-9876", "abcdef0123456789"):
        assert value not in text
    request_read = run.scenarios[0].turns[0].model_call.exchanges[0].request
    assert ("authorization", "not recorded") in request_read.headers
    assert "api_key=not+recorded" in request_read.url or "api_key=not%20recorded" in request_read.url
    assert run.scenarios[0].turns[0].model_call.reply.content == f"The key is {SCRUBBED}."
    # What the recorder wrote reads as it was: the book's own file, unchanged by being read again.
    monkeypatch.delenv("PRIMER_API_KEY")
    original = REPO / "docs" / "traces" / "ch09_who_retries.live.json"
    assert read_trace(original) == ChapterRun.model_validate_json(original.read_bytes())
