"""The command line: the seed pages' summary lines in a terminal, the JSON, and clear usage errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from primer.chapters import chapter_names, scenarios_of
from primer.cli import main
from primer.trace import ChapterRun

ROOT = Path(__file__).resolve().parent.parent

# The summary lines of the seed page's mock runs of ch09, in page order, verbatim.
SEED_CH09 = """\
mock turns=9 · messages=22
scenario service_is_busy · tools=place_order, price_of · 59.5ms · 2 turns · ended: no_tool_calls
turn 1 · 58.8ms · asked for: price_of
model mock · 3.1ms · asked for: price_of
tool price_of · 55.6ms (model provider 0.1 · library 55.5) · given: item=milk · attempts: 2 · returned: 1.20
turn 2 · 0.4ms · responded with: Milk is 1.20.
model mock · 0.4ms · responded with: Milk is 1.20.
ended {"reason": "no_tool_calls"}
scenario order_may_have_landed · tools=place_order, price_of · 0.8ms · 2 turns · ended: no_tool_calls
turn 1 · 0.5ms · asked for: place_order
model mock · 0.3ms · asked for: place_order
tool place_order · 0.2ms · given: item=milk, quantity=2 · raised: ['https://httpbin.org'] did not answer in time, and the call
turn 2 · 0.3ms · responded with: The order may or may not have been placed. Please check before ordering again.
model mock · 0.3ms · responded with: The order may or may not have been placed. Please check before ordering again.
ended {"reason": "no_tool_calls"}
scenario arguments_are_wrong · tools=place_order, price_of · 1.1ms · 3 turns · ended: no_tool_calls
turn 1 · 0.3ms · asked for: place_order
model mock · 0.3ms · asked for: place_order
tool place_order · 0.0ms · given: item=milk, quantity=20 · raised: quantity ['20'] must be between 1 and 12
turn 2 · 0.5ms · asked for: place_order
model mock · 0.2ms · asked for: place_order
tool place_order · 0.2ms (model provider 0.1 · library 0.2) · given: item=milk, quantity=12 · returned: ordered 12 x milk
turn 3 · 0.3ms · responded with: I ordered 12, the most allowed in one order.
model mock · 0.3ms · responded with: I ordered 12, the most allowed in one order.
ended {"reason": "no_tool_calls"}
scenario service_says_no · tools=place_order, price_of · 0.7ms · 2 turns · ended: no_tool_calls
turn 1 · 0.4ms · asked for: price_of
model mock · 0.2ms · asked for: price_of
tool price_of · 0.1ms (model provider 0.0 · library 0.1) · given: item=milk · raised: ['https://httpbin.org'] answered ['404']
turn 2 · 0.3ms · responded with: I could not get the price of milk.
model mock · 0.3ms · responded with: I could not get the price of milk.
ended {"reason": "no_tool_calls"}
""".splitlines()  # noqa: E501 - verbatim seed lines

SEED_CH05 = """\
mock turns=4 · messages=10
scenario within_token_limit · 4.2ms · 3 turns · ended: answer_received (finish_reason = stop)
turn 1 · 3.3ms · asked for: lowest_stock_item
model mock · 3.2ms · asked for: lowest_stock_item
tool lowest_stock_item · 0.2ms · returned: butter
turn 2 · 0.4ms · asked for: price_of
model mock · 0.3ms · asked for: price_of
tool price_of · 0.2ms · given: item=butter · returned: 3.10
turn 3 · 0.3ms · responded with: Butter, at 3.10 -- there is only one left, so it is the lowest we hold.
model mock · 0.3ms · responded with: Butter, at 3.10 -- there is only one left, so it is the lowest we hold.
ended {"reason": "answer_received (finish_reason = stop)"}
scenario tokens_exhausted · max_tokens=24 · 0.3ms · 1 turn · ended: tokens_exhausted (finish_reason = length)
turn 1 · 0.3ms · responded with: nothing
model mock · 0.3ms · responded with: nothing
ended {"reason": "tokens_exhausted (finish_reason = length)"}
""".splitlines()

# A duration with its optional split: `55.6ms (service 0.1 · library 55.5)`, `1.0ms (1s simulated)`.
DURATION = re.compile(r"\d+\.\dms(?: \([^)]*\))?")
# The seed page cut some free text short without saying so; ours may run on.
CUT_SHORT = ("raised: ", "responded with: ")


def parts(line: str) -> list[str]:
    return DURATION.sub("<duration>", line.strip()).split(" · ")


def matches(seed: str, ours: str) -> bool:
    """Our line tells the seed line's story: same head, its parts in order (ours may say more)."""
    want, have = parts(seed), parts(ours)
    if want[0] != have[0]:
        return False
    position = 0
    for part in want:
        while position < len(have) and not (
            have[position] == part or (part.startswith(CUT_SHORT) and have[position].startswith(part))
        ):
            position += 1
        if position == len(have):
            return False
        position += 1
    return True


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("PRIMER_"):
            monkeypatch.delenv(name)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize(("chapter", "seed"), [("ch09_who_retries", SEED_CH09), ("ch05_loop_endings", SEED_CH05)])
def test_the_summary_lines_tell_the_seed_pages_story(
    capsys: pytest.CaptureFixture[str], chapter: str, seed: list[str]
) -> None:
    status, out, err = run_cli(capsys, "run", chapter)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == chapter
    position = 0
    for wanted in seed:
        while position < len(lines) and not matches(wanted, lines[position]):
            position += 1
        assert position < len(lines), f"no line after the previous match tells: {wanted}"
        position += 1


def test_the_matching_is_strict_enough_to_fail() -> None:
    # Guards for the comparison above.
    assert matches(
        "tool price_of · 0.2ms · returned: 1.20", "tool price_of · 9.9ms (service 1.0 · library 8.9) · returned: 1.20"
    )
    assert not matches("tool price_of · 0.2ms · returned: 1.20", "tool price_of · 0.2ms · returned: 1.25")
    assert not matches("turn 1 · 0.2ms · asked for: a", "turn 2 · 0.2ms · asked for: a")
    assert not matches("scenario s · 2 turns · ended: x", "scenario s · 2 turns · ended: y")
    assert matches("tool t · 1.0ms · raised: it did not", "tool t · 1.0ms · raised: it did not answer")


def test_our_lines_show_the_waits_the_seed_page_did_not(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "run", "ch09_who_retries", "--scenario", "service_is_busy")
    scenario, *_ = [line for line in out.splitlines() if line.startswith("scenario ")]
    assert "(1s simulated)" in scenario
    (tool,) = [line.strip() for line in out.splitlines() if line.strip().startswith("tool ")]
    assert re.search(r"\(service \d+\.\d · waited 1000\.0 · library \d+\.\d\)", tool)
    assert "model provider" not in tool


def test_one_scenario_only(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "run", "ch09_who_retries", "--scenario", "service_says_no")
    assert status == 0
    assert [line.split(" · ")[0] for line in out.splitlines() if line.startswith("scenario ")] == [
        "scenario service_says_no"
    ]
    assert "mock turns=2 · messages=5" in out.splitlines()


def test_json_output_is_the_trace(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "run", "ch09_who_retries", "--json")
    assert (status, err) == (0, "")
    run = ChapterRun.model_validate_json(out)
    assert run.chapter == "ch09_who_retries"
    assert (run.turns, run.messages) == (9, 22)
    assert [s.name for s in run.scenarios] == [s.name for s in scenarios_of("ch09_who_retries")]


def test_json_of_one_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "run", "ch05_loop_endings", "--scenario", "tokens_exhausted", "--json")
    assert status == 0
    run = ChapterRun.model_validate_json(out)
    assert [s.name for s in run.scenarios] == ["tokens_exhausted"]
    assert run.scenarios[0].ending.label == "tokens_exhausted (finish_reason = length)"


def test_an_unknown_chapter_is_one_line_naming_the_chapters_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "run", "ch42_nothing")
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert "ch42_nothing" in err
    for name in chapter_names():
        assert name in err


def test_an_unknown_scenario_is_one_line_naming_the_scenarios_that_exist(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "run", "ch09_who_retries", "--scenario", "service_is_happy")
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1
    assert "service_is_happy" in err
    for scenario in scenarios_of("ch09_who_retries"):
        assert scenario.name in err


def test_list_names_every_chapter_and_its_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "list")
    assert status == 0
    assert out.splitlines() == [f"{name}: {', '.join(s.name for s in scenarios_of(name))}" for name in chapter_names()]
    assert "ch09_who_retries: service_is_busy, order_may_have_landed, arguments_are_wrong, service_says_no" in out


def cli_process(*argv: str, **kwargs: object) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "primer", *argv], cwd=ROOT, env=env, stderr=subprocess.PIPE, **kwargs
    )


def test_python_dash_m_primer_runs_a_chapter() -> None:
    process = cli_process("run", "ch05_loop_endings", stdout=subprocess.PIPE)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()
    assert out.decode().splitlines()[:2] == ["ch05_loop_endings", "mock turns=4 · messages=10"]


@pytest.mark.slow
def test_a_closed_pipe_is_not_a_traceback() -> None:
    # As `python -m primer run ... --json | head -1` does: the reader goes away before the writer is done.
    read, write = os.pipe()
    process = cli_process("run", "ch09_who_retries", "--json", stdout=write)
    os.close(write)
    os.close(read)
    _, err = process.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()
    assert b"BrokenPipeError" not in err
    assert err == b""
    assert process.returncode == 0, "the reader had what it wanted: not a failure"


def test_run_prints_each_scenarios_story_under_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "run", "ch09_who_retries")
    assert status == 0
    lines = out.splitlines()
    busy = next(i for i, line in enumerate(lines) if line.startswith("scenario service_is_busy"))
    assert lines[busy + 1] == "  story: price_of: 429 (retryable) → waited 1s → 200"


def test_a_missing_extra_is_named_by_what_pip_installs(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    from primer.errors import MissingExtra

    real = metadata.version

    def version(name: str) -> str:
        if name == "protobuf":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    cause = ImportError("No module named 'google'", name="google")
    message = str(MissingExtra("The OTLP export", "otel", cause))
    assert "and protobuf is not installed: pip install protobuf (or pip install -e '.[otel]'" in message, message
    assert "google" not in message


BROKEN = """
from primer.grocery import PriceOf
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import tool


@tool(PriceOf)
def price_of(args, ctx):
    raise ZeroDivisionError("no shelf")


fine = Scenario(name="fine", prompt="Hi.", tools=[], mock=[say("Hello.")])
tool_blows_up = Scenario(
    name="tool_blows_up", prompt="Milk?", tools=[price_of], mock=[ask(call("price_of", item="milk")), say("?")]
)
"""


@pytest.fixture
def broken_chapter_for_cli(tmp_path, monkeypatch):
    import primer.chapters

    name = "ch98_cli_breaks"
    (tmp_path / f"{name}.py").write_text(BROKEN)
    monkeypatch.setattr(primer.chapters, "__path__", [*primer.chapters.__path__, str(tmp_path)])
    yield name
    sys.modules.pop(f"primer.chapters.{name}", None)


def test_a_scenario_that_breaks_makes_the_cli_exit_1_and_says_which(broken_chapter_for_cli, capsys):
    status = main(["run", broken_chapter_for_cli])
    captured = capsys.readouterr()
    assert status == 1
    assert "ended: scenario_error" in captured.out
    assert f"error: {broken_chapter_for_cli} tool_blows_up: tool price_of raised ZeroDivisionError" in captured.err
    # The scenario that ran is not reported as broken.
    assert "fine:" not in captured.err


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("import json\nraise RuntimeError('no shelf today')\n", "RuntimeError: no shelf today ({path}, line 2)."),
        # Python's own message names the file only: the build adds where it is (four __init__.py in one book).
        ("x = (\n", "SyntaxError: '(' was never closed ({name}.py, line 1) (in {path})."),
    ],
)
def test_a_chapter_that_cannot_be_imported_is_one_line_naming_it_and_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], source: str, said: str
) -> None:
    import primer.chapters

    name = "ch97_cli_will_not_import"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    monkeypatch.setattr(primer.chapters, "__path__", [*primer.chapters.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, f"primer.chapters.{name}", raising=False)
    status, out, err = run_cli(capsys, "run", name)
    assert (status, out) == (2, "")
    expected = said.format(path=path, name=name)
    assert err == f"error: The chapter module primer.chapters.{name} could not be imported: {expected}\n"


def test_an_output_file_is_written_through_a_link_and_one_that_cannot_be_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Through a link, as a shell's `>` writes (a device or a pipe alike): the link stays a link.
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    status, out, err = run_cli(capsys, "export", "otlp", "ch01_one_call", "-o", str(tmp_path / "link.json"))
    assert (status, err) == (0, "")
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "real.json").read_text().splitlines()[0])["resourceSpans"]
    # A folder, or a file where a folder must be: the path and why, exit 2, nothing written.
    for output, why in (
        (tmp_path, "Is a directory"),
        (tmp_path / "real.json" / "x.json", f"{tmp_path / 'real.json'} is not a folder"),
    ):
        status, out, err = run_cli(capsys, "export", "otlp", "ch01_one_call", "-o", str(output))
        assert (status, out, err) == (2, "", f"error: {output} could not be written: {why}.\n")
    # An Inspect log is named for what Inspect reads it as.
    status, out, err = run_cli(capsys, "export", "inspect", "ch01_one_call", "-o", str(tmp_path / "log.txt"))
    assert (status, out) == (2, "")
    assert "An Inspect log is written as .json or .eval, not 'log.txt'" in err
    assert not (tmp_path / "log.txt").exists()


def test_export_refuses_a_moment_otlp_cannot_hold_and_a_file_without_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for moment in ("1900-01-01T00:00:00+00:00", "9999-12-31T23:59:59+00:00"):
        status, out, err = run_cli(capsys, "export", "otlp", "ch01_one_call", "--at", moment)
        assert (status, out) == (2, "")
        assert err == f"error: --at takes a time from 1970 to 2261 (OTLP's range), not {moment!r}.\n"
    for text in ("", "\n\n", "{}\n"):
        (tmp_path / "empty.json").write_text(text)
        status, out, err = run_cli(capsys, "export", "otlp", "--from", str(tmp_path / "empty.json"))
        assert (status, out) == (2, "")
        assert f"error: {tmp_path / 'empty.json'} holds no spans" in err


def test_a_chapter_without_a_live_trace_is_said_so_from_the_books_root(capsys: pytest.CaptureFixture[str]) -> None:
    # Run from the book's root (the suite's folder): no advice to go there, only what is there to export.
    status, out, err = run_cli(capsys, "export", "otlp", "ch16_evaluation", "--mode", "live")
    assert (status, out) == (2, "")
    assert err == (
        "error: There is no live trace of ch16_evaluation at docs/traces/ch16_evaluation.live.json: "
        "export the mock run (--mode mock).\n"
    )
