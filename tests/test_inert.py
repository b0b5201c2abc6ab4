"""Untrusted text is inert in a terminal and in a log: no control character, no forged line.

``primer.inert.inert`` on its own; the book's log filter (``primer.book._logs``);
and end to end, with hostile text in a model's reply, its tool calls, a
service's answer and an exception's message: the real command line
(``python -m primer``) against the loopback provider and httpbin, and a real
``mkdocs build`` of a small book, each output scanned byte by byte.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import markdown
import pytest

from primer.book._book import Book
from primer.book._logs import InertRecords, book_logger
from primer.book._plugin import TraceBookPlugin  # noqa: F401 - it logs on mkdocs.plugins.primer once imported
from primer.book.markdown import TraceExtension
from primer.inert import _UNSAFE, inert
from tests.books import REPO, make_book
from tests.servers.provider import ReplayProvider, error_body
from tests.servers.service import LocalHttpbin

# A forged log line, with a nonce so the test can tell it from MkDocs' own
# "Documentation built in 0.12 seconds".
NONCE = "pwned-4e1c"
FORGED = "INFO    -  Documentation built in 0.1 seconds"
HOSTILE = (
    f"\x1b[31mred\x1b[0m \x1b]0;{NONCE}\x07 \x1b[2J\x1b[H \x00\x02\x03\x7f \x9b31m \x85"
    f" \u202eevil\u202c \u2066iso\u2069 \u2028 tail\r\x1b[2K\n{FORGED} ({NONCE})"
)
HOSTILE_NAME = f"price_of\x1b]0;{NONCE}\x07\n{FORGED}"

# What must never reach a terminal raw: every control character but the
# newline between lines, and the Unicode line breaks and bidi controls.
UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def scan(output: str) -> list[str]:
    """Every unsafe character and every forged line in ``output``."""
    found = [
        f"{m.group()!r} at {m.start()}: {output[max(0, m.start() - 30) : m.end() + 30]!r}"
        for m in UNSAFE.finditer(output)
    ]
    found += [f"forged line {line!r}" for line in output.split("\n") if line.lstrip(" ").startswith(FORGED)]
    return found


# -- the function ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),  # CSI: colour
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),  # OSC: set the window title
        ("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\\x1b]8;;http://x\\x1b\\link\\x1b]8;;\\x1b\\"),  # OSC 8 link
        ("\x1bP+q\x1b\\", "\\x1bP+q\\x1b\\"),  # DCS
        ("a\x00b\x02c\x03d", "a\\x00b\\x02c\\x03d"),  # NUL, STX, ETX
        ("a\rb", "a\\rb"),
        ("a\nb", "a\\nb"),
        ("a\tb", "a\\tb"),
        ("a\r\nb", "a\\r\\nb"),
        ("\x0b\x0c\x1c\x1d\x1e\x1f", "\\x0b\\x0c\\x1c\\x1d\\x1e\\x1f"),  # what splitlines breaks on
        ("a\x7fb", "a\\u007fb"),  # DEL
        ("\x9b31m", "\\u009b31m"),  # C1: the one-byte CSI
        ("\x85", "\\u0085"),  # C1: next line
        ("a\u2028b\u2029c", "a\\u2028b\\u2029c"),  # line and paragraph separators
        ("\u202eevil\u202c", "\\u202eevil\\u202c"),  # right-to-left override
        ("\ud800", "\\ud800"),  # a lone surrogate, which could not even be printed
    ],
)
def test_controls_and_escape_sequences_are_shown_as_escapes(text: str, shown: str) -> None:
    assert inert(text) == shown


def test_every_bidi_control_is_shown() -> None:
    assert inert(BIDI) == "".join(f"\\u{ord(c):04x}" for c in BIDI)
    for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        assert chr(code) in BIDI


def test_printable_text_is_left_as_it_is() -> None:
    text = "Milk is 1.20 · café 牛奶 🥛 👨‍👩‍👧 ‘quoted’ — C:\\path\\x1b [b]&amp;"  # noqa: RUF001 - typographic quotes are printable text, kept
    assert inert(text) == text
    assert inert(FORGED) == FORGED


def test_no_character_of_the_whole_plane_can_break_a_line_or_drive_a_terminal() -> None:
    for code in range(0x30000):
        char = chr(code)
        shown = inert(char)
        assert len(shown.splitlines()) == 1, hex(code)
        assert not UNSAFE.search(shown), hex(code)
        assert unicodedata.category(shown[0]) not in ("Cc", "Cs", "Zl", "Zp"), hex(code)
        if char.isprintable():
            assert shown == char, hex(code)


def test_inert_text_stays_inert() -> None:
    once = inert(HOSTILE)
    assert inert(once) == once
    assert scan(once) == []
    assert once.count("\n") == 0
    assert f"\\n{FORGED} ({NONCE})" in once  # still readable, on the same line


def test_json_made_inert_is_still_json_with_the_same_data() -> None:
    data = {"reply": HOSTILE + BIDI + "\ud800", "name": HOSTILE_NAME}
    text = json.dumps(data, ensure_ascii=False, indent=2)
    assert UNSAFE.search(text)  # json leaves DEL, C1, separators and bidi raw
    shown = "\n".join(inert(line) for line in text.split("\n"))
    assert scan(shown) == []
    assert json.loads(shown) == data


# -- the log filter ------------------------------------------------------------------------


@pytest.fixture
def log_output() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    log = book_logger(logging.getLogger("tests.test_inert"))
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)-8s-  %(message)s"))
    log.addHandler(handler)
    log.propagate = False
    yield log, stream
    log.removeHandler(handler)
    log.propagate = True


def test_a_record_is_one_line_whatever_its_arguments_say(log_output) -> None:
    log, stream = log_output
    log.warning("traces: %s / %s failed: %s", "ch09", HOSTILE_NAME, HOSTILE)
    log.warning(f"traces: {HOSTILE}")
    lines = stream.getvalue().split("\n")
    assert lines[-1] == ""
    assert len(lines) == 3
    assert all(line.startswith("WARNING -  traces: ") for line in lines[:2])
    assert scan(stream.getvalue()) == []
    assert f"({NONCE})" in lines[0]


def test_a_traceback_keeps_its_lines_but_each_message_is_one_line(log_output) -> None:
    log, stream = log_output

    def fails() -> None:
        try:
            raise KeyError(HOSTILE)
        except KeyError as error:
            error.add_note(f"note\n{FORGED}")
            raise ValueError(f"outer {HOSTILE}") from error

    try:
        fails()
    except ValueError:
        log.exception("could not render: %s", HOSTILE_NAME)
    text = stream.getvalue()
    assert scan(text) == []
    lines = text.splitlines()
    assert lines[0].startswith("ERROR   -  could not render: price_of\\x1b]0;")
    assert lines.count("Traceback (most recent call last):") == 2
    assert "The above exception was the direct cause of the following exception:" in lines
    assert any(line.startswith("KeyError: ") and line.endswith(f"({NONCE})'\\nnote\\n{FORGED}") for line in lines)
    assert lines[-1].startswith("ValueError: outer \\x1b[31mred")
    assert any(line.strip().startswith('File "') and "in fails" in line for line in lines)


def test_an_exception_group_and_a_stack_are_inert_too(log_output) -> None:
    log, stream = log_output
    try:
        raise ExceptionGroup("several", [RuntimeError(HOSTILE), OSError(f"disk\n{FORGED}")])
    except ExceptionGroup:
        log.error("group", exc_info=True, stack_info=True)
    text = stream.getvalue()
    assert scan(text) == []
    assert "  RuntimeError: \\x1b[31mred" in text
    assert f"  OSError: disk\\n{FORGED}" in text
    assert "Stack (most recent call last):" in text


def test_every_character_inert_escapes_is_one_isprintable_refuses() -> None:
    # inert returns printable text as it is without looking further: safe only while this holds.
    escaped = re.findall(_UNSAFE, "".join(map(chr, range(sys.maxunicode + 1))))
    # C0, C1 and DEL, the two separators, the surrogates, and the format characters (Cf), but
    # the joiners between two characters that are not ASCII (as every character here is).
    refused = {"Cc", "Cs", "Zl", "Zp", "Cf"}
    must = {chr(code) for code in range(sys.maxunicode + 1) if unicodedata.category(chr(code)) in refused}
    assert set(escaped) >= must - {"\u200c", "\u200d"}
    assert inert("a\u200db \U0001f468\u200d\U0001f469") == "a\\u200db \U0001f468\u200d\U0001f469"
    assert not [char for char in escaped if char.isprintable()]
    assert inert("plain, accents é, CJK 漢字, emoji 🙂") == "plain, accents é, CJK 漢字, emoji 🙂"


def test_a_malformed_call_is_left_to_logging() -> None:
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "%s and %s", ("one",), None)
    assert InertRecords().filter(record) is True
    assert (record.msg, record.args) == ("%s and %s", ("one",))


def test_every_logger_the_book_uses_has_the_filter(tmp_path: Path) -> None:
    # Those the modules log on, once imported (here: the file may run alone,
    # and the library loads some of them only on first use), and the one a Book is handed.

    for name in ("mkdocs.plugins.primer", "mkdocs.plugins.primer.book"):
        assert [f for f in logging.getLogger(name).filters if isinstance(f, InertRecords)], name
    given = logging.getLogger("tests.test_inert.given")
    book = Book(tmp_path / "docs", tmp_path / "cache", logger=given)
    assert book.log is given
    assert [f for f in given.filters if isinstance(f, InertRecords)]
    book_logger(given)  # twice is once
    assert len([f for f in given.filters if isinstance(f, InertRecords)]) == 1


def test_the_markdown_extension_alone_logs_inert_warnings(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def traces(self, chapter: str) -> None:
            raise OSError(HOSTILE)

    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.primer.book"):
        markdown.Markdown(extensions=[TraceExtension(source=Broken())]).convert("::: trace ch09_who_retries\n")
    assert caplog.records
    assert NONCE in caplog.text
    assert scan(caplog.text) == []


# -- end to end: the command line --------------------------------------------------------

# A chapter whose tools pass on what the service answered: httpbin's /get
# echoes the query back, so the service's answer is the hostile text.
HOSTILE_CHAPTER = f'''"""A chapter whose service answers with escape sequences."""

from pydantic import BaseModel, ConfigDict

from primer.loop import until_no_tool_calls
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import ToolContext, tool

HOSTILE = {HOSTILE!r}


class Note(BaseModel):
    """A note for the shop."""

    model_config = ConfigDict(title="shop_note")
    text: str


class Broken(BaseModel):
    """A note the shop chokes on."""

    model_config = ConfigDict(title="shop_breaks")
    text: str


def _echo(text: str, ctx: ToolContext) -> str:
    body = ctx.require_service().get({{"note": text}}, idempotent=True)
    return str(body["args"]["note"])


@tool(Note)
def shop_note(args: Note, ctx: ToolContext) -> str:
    """What the shop says back."""
    return _echo(args.text, ctx)


@tool(Broken)
def shop_breaks(args: Broken, ctx: ToolContext) -> str:
    """The shop's answer, raised."""
    raise RuntimeError("the shop said " + _echo(args.text, ctx))


echoes = Scenario(
    name="echoes",
    prompt="Ask the shop.",
    tools=[shop_note, shop_breaks],
    loop=until_no_tool_calls,
    mock=[ask(call("shop_note", text=HOSTILE), call("shop_breaks", text=HOSTILE)), say(HOSTILE)],
)
'''

API_KEY = "sk-inert-5d2b90"
SERVICE_KEY = "svc-inert-81c4aa"


def live_env(provider: ReplayProvider, httpbin: LocalHttpbin) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PRIMER_", "OPENAI_"))}
    return {
        **base,
        "PRIMER_API_KEY": API_KEY,
        "PRIMER_BASE_URL": provider.base_url,
        "PRIMER_MODEL": "deepseek-flash",
        "PRIMER_SERVICE_URL": httpbin.url,
        "PRIMER_SERVICE_KEY": SERVICE_KEY,
        "PRIMER_SERVICE_TIMEOUT": "2",
    }


def cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *argv], env=env, cwd=REPO, capture_output=True, timeout=120, check=False)


def hostile_turns(provider: ReplayProvider, *tools: str) -> None:
    """The model asks for ``tools`` (and one with a hostile name) with hostile text, then says hostile text."""
    calls = [(name, {"item": "milk", "text": HOSTILE, "note": HOSTILE}) for name in tools]
    provider.reply(
        ReplayProvider.completion(
            content=HOSTILE, tool_calls=[*calls, (HOSTILE_NAME, {"item": HOSTILE})], reasoning_content=HOSTILE
        )
    )
    provider.reply(ReplayProvider.completion(content=HOSTILE))


@pytest.mark.slow
def test_the_command_line_prints_hostile_replies_inert(replay_provider: ReplayProvider, httpbin: LocalHttpbin) -> None:
    env = live_env(replay_provider, httpbin)
    scenario = ["run", "ch09_who_retries", "--scenario", "service_says_no", "--mode", "live"]

    hostile_turns(replay_provider, "price_of")
    summary = cli(env, "-m", "primer", *scenario)
    hostile_turns(replay_provider, "price_of")
    as_json = cli(env, "-m", "primer", *scenario, "--json")
    replay_provider.fail(400, body=error_body(HOSTILE), times=None)
    refused = cli(env, "-m", "primer", *scenario)

    assert (summary.returncode, summary.stderr) == (0, b""), summary.stderr
    assert (as_json.returncode, as_json.stderr) == (0, b""), as_json.stderr
    assert refused.returncode == 1
    outputs = {
        "summary": summary.stdout.decode(),
        "json": as_json.stdout.decode(),
        "refused stdout": refused.stdout.decode(),
        "refused stderr": refused.stderr.decode(),
    }
    assert {name: scan(text) for name, text in outputs.items()} == {name: [] for name in outputs}
    # The hostile text got there, shown: the test is not passing on an empty output.
    lines = outputs["summary"].splitlines()
    assert any("responded with: \\x1b[31mred\\x1b[0m \\x1b]0;pwned-4e1c\\x07" in line for line in lines)
    assert any("asked for: price_of, price_of\\x1b]0;" in line for line in lines)
    assert any(line.strip().startswith("tool price_of") and "note=\\x1b[31mred" in line for line in lines)
    assert len(outputs["refused stderr"].splitlines()) == 1
    assert NONCE in outputs["refused stderr"]
    # The JSON is still the trace, the hostile text in it whole.
    run = json.loads(outputs["json"])
    reply = run["scenarios"][0]["turns"][-1]["model_call"]["reply"]
    assert reply["content"] == HOSTILE


@pytest.mark.slow
def test_the_command_line_prints_hostile_service_answers_inert(
    tmp_path: Path, replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    (tmp_path / "ch97_hostile.py").write_text(HOSTILE_CHAPTER)
    # The command line's own main, in a process of its own, with this test's
    # chapter beside the book's (as the in-process tests of the CLI add one).
    wrapper = (
        "import sys, primer.chapters; primer.chapters.__path__.append(sys.argv.pop(1)); "
        "from primer.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = live_env(replay_provider, httpbin)
    hostile_turns(replay_provider, "shop_note", "shop_breaks")
    done = cli(env, "-c", wrapper, str(tmp_path), "run", "ch97_hostile", "--mode", "live")

    assert done.returncode == 1, done.stderr  # shop_breaks raised: a scenario error
    out, err = done.stdout.decode(), done.stderr.decode()
    assert scan(out) == []
    assert scan(err) == []
    assert any(
        line.strip().startswith("tool shop_note") and "returned: \\x1b[31mred" in line for line in out.splitlines()
    )
    [error] = err.splitlines()
    assert error.startswith(
        "error: ch97_hostile echoes: tool shop_breaks raised RuntimeError: the shop said \\x1b[31mred"
    )
    assert error.endswith(f"\\n{FORGED} ({NONCE})")


# -- end to end: the book's build ---------------------------------------------------------

FAILS_TO_IMPORT = f'''"""A chapter that cannot be imported, with a hostile message."""

raise RuntimeError({HOSTILE!r})
'''


@pytest.mark.slow
def test_the_build_log_shows_hostile_text_inert(
    tmp_path: Path, replay_provider: ReplayProvider, httpbin: LocalHttpbin
) -> None:
    book = make_book(
        tmp_path,
        chapters={"ch_hostile": HOSTILE_CHAPTER, "ch_fails": FAILS_TO_IMPORT},
        pages={"index": "# Hostile\n\n::: trace ch_hostile\n\n::: trace ch_fails\n"},
    )
    # Every live call gets the hostile turn: both tools asked for, one breaks the scenario.
    replay_provider.reply(
        ReplayProvider.completion(
            content=HOSTILE, tool_calls=[("shop_note", {"text": HOSTILE}), ("shop_breaks", {"text": HOSTILE})]
        ),
        times=None,
    )
    env = {k: v for k, v in live_env(replay_provider, httpbin).items() if k.startswith("PRIMER_")}
    done = book.build(**env)

    assert done.returncode == 0, done.log
    assert replay_provider.requests  # the live run happened
    assert scan(done.log) == []  # MkDocs colours nothing when its output is not a terminal
    warnings = done.lines("WARNING")
    # The mock and the live run of the scenario broke with the service's answer; the import, with its message.
    assert len([line for line in warnings if "ch_hostile / echoes" in line and NONCE in line]) == 2, done.log
    assert [line for line in warnings if "ch_fails" in line and NONCE in line], done.log
