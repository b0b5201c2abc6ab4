"""Hostile and corrupt trace files are bad input, not crashes: one clear error on every path, files left as they are.

Each hostile file below was found to crash something: a value nested 300
levels deep in a frozen trace's ``settings`` (pydantic's writer fails in the
build's last step), 10,000 levels (a ``RecursionError`` in the reader), a
``live.json`` that is a link to ``/dev/zero`` (the reader exhausts memory),
negative durations and huge files (read without a word). With them, corrupt
ones: not JSON, a NaN, a newer schema version. Each is refused by the one
reader (``primer.trace_file``) with the same error whoever reads: the book's
store and worker in process; a real ``mkdocs build`` warns with it and goes
on, ``verify`` and both exports print it without a traceback, and no file is
rewritten.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from primer.book import UnreadableTrace as BooksName
from primer.book._cache import TraceCache
from primer.book._run import main as worker
from primer.cli import main
from primer.clock import VirtualClock
from primer.models.live import LiveModel
from primer.replay import UnreadableTrace as ReplaysName
from primer.trace import ChapterRun, Ending, Message, ScenarioRun, Turn
from primer.trace_file import MAX_BYTES, MAX_DEPTH, MAX_EVENTS, RESTORE, UPGRADE, UnreadableTrace, parse, read_trace
from tests.books import make_book
from tests.servers.provider import ReplayProvider

ROOT = Path(__file__).resolve().parent.parent
BASE = json.loads((ROOT / "docs" / "traces" / "ch05_loop_endings.live.json").read_text())


def trace(chapter: str, change: Callable[[dict[str, Any]], None] | None = None, *, deep: int = 0) -> str:
    run = json.loads(json.dumps(BASE))
    run["chapter"] = chapter
    if change is not None:
        change(run)
    text = json.dumps(run, indent=2, ensure_ascii=False)
    if deep:
        # Written as text: Python's own JSON writer cannot nest this deep either.
        nested = '{"down": [' * (deep // 2) + "0" + "]}" * (deep // 2)
        text = text.replace('"settings": {}', f'"settings": {{"deep": {nested}}}', 1)
        assert nested in text
    return text


def negative(run: dict[str, Any]) -> None:
    run["scenarios"][0]["turns"][0]["model_call"]["timing"]["total_ms"] = -5.0


def many_events(run: dict[str, Any]) -> None:
    exchange = run["scenarios"][0]["turns"][0]["model_call"]["exchanges"][0]
    events = [{"at_ms": 1.0, "text": "x"}] * (MAX_EVENTS + 1)
    exchange["response"]["stream"] = {"first_byte_ms": 1.0, "events": events}


def huge(run: dict[str, Any]) -> None:
    run["scenarios"][0]["turns"][-1]["model_call"]["reply"]["content"] = "x" * (MAX_BYTES + 10)


def newer(run: dict[str, Any]) -> None:
    run["schema_version"] = 99


def nan(run: dict[str, Any]) -> None:
    run["scenarios"][0]["timing"]["total_ms"] = float("nan")  # Python's writer writes NaN, as a careless tool would


def misnamed(run: dict[str, Any]) -> None:
    run["scenarios"][0]["name"] = "../../x<img src=x onerror=alert(1)>"  # a name becomes a file name and an anchor


def twice(run: dict[str, Any]) -> None:
    run["scenarios"][1]["name"] = run["scenarios"][0]["name"]


#: Each hostile file, written by a function of its path, and what the refusal must say.
def _write(text: str) -> Callable[[Path], None]:
    return lambda path: path.write_text(text)


def _utf16(text: str) -> Callable[[Path], None]:
    # json.loads reads UTF-16 bytes too; the nesting count, made for UTF-8, did not see their brackets.
    return lambda path: path.write_bytes(text.encode("utf-16"))


def _link(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _folder(path: Path) -> None:
    path.mkdir()


CASES: dict[str, tuple[Callable[[str], Callable[[Path], None]], str]] = {
    "300 levels deep": (lambda c: _write(trace(c, deep=300)), f"over the limit of {MAX_DEPTH}"),
    "10,000 levels deep": (lambda c: _write(trace(c, deep=10_000)), f"over the limit of {MAX_DEPTH}"),
    "10,000 levels deep in UTF-16": (lambda c: _utf16(trace(c, deep=10_000)), "it is not UTF-8 text (the byte at"),
    "UTF-16": (lambda c: _utf16(trace(c)), "it is not UTF-8 text (the byte at offset 0 cannot be decoded)"),
    "a link to /dev/zero": (lambda c: _link, "symbolic link"),
    "a folder": (lambda c: _folder, "not a regular file"),
    "a negative duration": (lambda c: _write(trace(c, negative)), "a duration is never negative"),
    "too many events": (lambda c: _write(trace(c, many_events)), f"over the limit of {MAX_EVENTS:,}"),
    "too large": (lambda c: _write(trace(c, huge)), f"over the limit of {MAX_BYTES:,}"),
    "not JSON": (lambda c: _write(trace(c)[:-40]), "it is not valid JSON ("),
    "a NaN": (lambda c: _write(trace(c, nan)), "the field scenarios.0.timing.total_ms holds NaN"),
    # Valid JSON, written as text (Python writes no integer that long either): reading it was a bare traceback.
    "a 5,001-digit number": (
        lambda c: _write(trace(c).replace('"total_ms": ', '"total_ms": ' + "9" * 5001 + ', "was": ', 1)),
        "it holds a number too long to read",
    ),
    "a newer schema version": (lambda c: _write(trace(c, newer)), "its schema version is 99"),
    "a name no scenario has": (lambda c: _write(trace(c, misnamed)), "the field scenarios.0.name holds '../../x<img"),
    "two scenarios of one name": (lambda c: _write(trace(c, twice)), "two scenarios are named"),
}


def snapshot(path: Path) -> Any:
    """What a file is, to compare before and after: its bytes, its link, or that it is a folder."""
    if path.is_symlink():
        return ("link", os.readlink(path))
    if path.is_dir():
        return ("folder", sorted(p.name for p in path.iterdir()))
    return ("file", path.read_bytes())


def refusal(path: Path) -> UnreadableTrace:
    """What the one reader says of a file."""
    with pytest.raises(UnreadableTrace) as refused:
        read_trace(path)
    return refused.value


@pytest.mark.parametrize("case", list(CASES))
def test_each_bad_file_is_refused_with_one_error_by_every_reader(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, reason = CASES[case]
    path = tmp_path / "ch05_loop_endings.live.json"
    make("ch05_loop_endings")(path)
    error = refusal(path)
    said = str(error)
    assert said.startswith(f"The trace file {path} could not be read: ")
    assert reason in said
    assert said.endswith(UPGRADE if case == "a newer schema version" else RESTORE), "it says what to do"
    assert BooksName is ReplaysName is UnreadableTrace, "one error, whichever public name"
    # The book's store, and its worker that verifies a replay in a fresh process.
    with pytest.raises(UnreadableTrace) as stored:
        TraceCache(tmp_path / "cache", tmp_path).load("ch05_loop_endings", "live")
    assert str(stored.value) == said
    assert worker(["--verify", str(path), "primer.chapters", "ch05_loop_endings"]) == 0
    [error] = json.loads(capsys.readouterr().out)["errors"].values()
    assert (error["type"], error["message"]) == ("UnreadableTrace", said)


def test_a_negative_connection_set_up_is_refused_too(tmp_path: Path) -> None:
    def negative_setup(run: dict[str, Any]) -> None:
        run["scenarios"][0]["turns"][0]["model_call"]["exchanges"][0]["timing"]["setup_ms"] = -1.0

    path = tmp_path / "ch05_loop_endings.live.json"
    path.write_text(trace("ch05_loop_endings", negative_setup))
    assert "exchanges.0.timing.setup_ms holds -1.0, and a duration is never negative" in str(refusal(path))


def test_the_committed_traces_are_well_within_the_limits() -> None:
    for path in (ROOT / "docs" / "traces").glob("*.live.json"):
        assert read_trace(path).chapter == path.name.removesuffix(".live.json")


CHAPTER = '''"""Chapter {name}: says hello."""

from primer.models.mock import say
from primer.scenario import Scenario

within_token_limit = Scenario(name="within_token_limit", prompt="Hi.", tools=[], mock=[say("Hello.")])
tokens_exhausted = Scenario(name="tokens_exhausted", prompt="Hi.", tools=[], mock=[say("Hello.")])
'''


def chapter_name(case: str) -> str:
    return "ch_" + "".join(c if c.isalnum() else "_" for c in case.lower()).strip("_")


@pytest.mark.slow
def test_a_build_verify_and_the_exports_warn_about_hostile_files_and_rewrite_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    names = {case: chapter_name(case) for case in CASES}
    chapters = {name: CHAPTER.format(name=name) for name in names.values()}
    page = "# Hostile\n\n" + "".join(f"::: trace {name}\n\n" for name in names.values())
    book = make_book(tmp_path / "book", chapters, {"index": page})
    traces = book.docs / "traces"
    traces.mkdir()
    paths = {}
    for case, name in names.items():
        paths[case] = traces / f"{name}.live.json"
        CASES[case][0](name)(paths[case])
    before = {case: snapshot(path) for case, path in paths.items()}
    errors = {case: refusal(path) for case, path in paths.items()}

    done = book.build()
    assert done.returncode == 0, done.log
    assert "Traceback" not in done.log
    for case, path in paths.items():
        [warning] = [line for line in done.lines("WARNING") if str(path) in line]
        assert str(errors[case]) in warning, (case, warning)  # a live file: the whole error, what to do too
    assert book.build("--strict").returncode != 0
    assert {case: snapshot(path) for case, path in paths.items()} == before

    # The commands in this process, as `primer` run in the book's folder (a fresh Python for each
    # of the 30 was most of this test's time); an exception out of one fails the test.
    for name in [name for name in os.environ if name.startswith("PRIMER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PRIMER_CHAPTERS", book.package)
    monkeypatch.chdir(book.root)
    monkeypatch.syspath_prepend(str(book.root))

    def command(*args: str) -> tuple[int, str]:
        try:
            status = main(list(args))
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 1
        said = capsys.readouterr()
        return status, said.out + said.err

    for case, name in names.items():
        for args in (
            ("verify", name),
            ("export", "otlp", name, "--mode", "live"),
            ("export", "inspect", name, "--mode", "live"),
        ):
            status, said = command(*args)
            assert status != 0, (case, args, said)
            assert "Traceback" not in said, (case, args, said)
            # The same error; the command names the file as it found it, from the book's root.
            assert str(errors[case]).replace(f"{book.root}/", "") in said, (case, args, said)
    assert {case: snapshot(path) for case, path in paths.items()} == before


@pytest.mark.slow
def test_the_recorder_keeps_no_more_events_than_a_reader_reads(replay_provider: ReplayProvider) -> None:
    piece = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "a"}}]}
    events: list[tuple[str | None, str]] = [(None, json.dumps(piece))] * (MAX_EVENTS + 50)
    events.append((None, json.dumps({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})))
    replay_provider.events([*events, (None, "[DONE]")])
    model = LiveModel(base_url=replay_provider.base_url, api_key="sk-hostile-0123", model="m", clock=VirtualClock())
    try:
        call = model.complete([Message(role="human", content="Go.")], [], {"stream": True})
    finally:
        model.close()
    assert call.reply is not None
    assert call.reply.content == "a" * (MAX_EVENTS + 50)  # the reply is whole: the SDK read every event
    stream = call.streamed
    assert stream is not None
    assert len(stream.events) == MAX_EVENTS
    assert stream.events[-2].data == {"not_recorded": {"events": 53, "past": MAX_EVENTS - 2}}
    assert stream.events[-1].done
    assert call.error is None
    run = ChapterRun(
        chapter="ch", mode="live", scenarios=[ScenarioRun(name="s", mode="live", ending=Ending(reason="no_tool_calls"))]
    )
    run.scenarios[0].turns.append(Turn(number=1, model_call=call))
    parse(run.model_dump_json().encode(), Path("ch.live.json"))  # within the limits: it reads back


def test_a_string_left_open_is_refused_in_one_pass() -> None:
    """A file of escaped quotes with no closing one: each quote began a scan to the end (quadratic: 32 KB took 3 s,
    the 16 MB a file may hold would take days). Now the open string runs to the end once; refused as bad JSON."""
    data = b'{"schema_version": 3, "chapter": "' + b'\\"' * 100_000  # 200 KB: minutes before
    started = time.perf_counter()
    with pytest.raises(UnreadableTrace, match="it is not valid JSON"):
        parse(data, Path("planted.live.json"))
    assert time.perf_counter() - started < 5  # a guard against the hang, not a speed target: it takes milliseconds
