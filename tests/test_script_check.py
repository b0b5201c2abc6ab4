"""A mock script with replies (or approvals) a run never used: a note in the trace, a warning in CLI and build.

Checked on real runs (``run_scenario``), through the real command line, and
in a real ``mkdocs build --strict`` of a small book (``tests/books.py``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from primer.approval import approve, refuse
from primer.models.mock import ask, call, cut, say
from primer.runner import run_scenario
from primer.scenario import Scenario
from primer.script_check import UNUSED_APPROVALS, UNUSED_REPLIES, describe, unused_warnings
from primer.shop import shelf_price_of
from primer.trace import ScenarioRun
from tests.books import make_book

LEFT_OVER = '''"""Chapter leftover: one script too long."""

from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import shelf_price_of

too_long = Scenario(
    name="too_long",
    prompt="How much is milk?",
    tools=[shelf_price_of],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20."), say("And bread is 1.45.")],
)

just_right = Scenario(name="just_right", prompt="Hi.", tools=[], mock=[say("Hello.")])
'''

PAGE = "# Leftovers\n\n::: trace ch_leftover\n"


def _notes(run: ScenarioRun, label: str) -> list[dict[str, object]]:
    return [note.data for note in run.turns[-1].model_call.notes if note.label == label]


def _scenario(mock: list[object], **extra: object) -> Scenario:
    return Scenario(name="s", prompt="How much is milk?", tools=[shelf_price_of], mock=mock, **extra)  # type: ignore[arg-type]


def test_a_script_used_up_leaves_no_note() -> None:
    run = run_scenario(_scenario([ask(call("price_of", item="milk")), say("Milk is 1.20.")]))
    assert _notes(run, UNUSED_REPLIES) == []
    assert unused_warnings(run) == []


def test_replies_left_over_are_noted_on_the_last_model_call_and_named_in_a_warning() -> None:
    run = run_scenario(_scenario([say("Milk is 1.20."), ask(call("price_of", item="bread")), say("Bread too.")]))
    assert _notes(run, UNUSED_REPLIES) == [{"scripted": 3, "used": 1, "unused": 2, "next": "ask(price_of)"}]
    (warning,) = unused_warnings(run)
    assert warning == (
        "s: the mock script holds 3 replies and the run used 1; 2 never ran, from ask(price_of) on. "
        "Remove them from the scenario's mock list, or change the scenario so the run reaches them."
    )


def test_approvals_left_over_are_noted_too() -> None:
    scenario = _scenario([say("Milk is 1.20.")], approvals=[approve(), refuse("no")])
    run = run_scenario(scenario)
    assert _notes(run, UNUSED_APPROVALS) == [{"scripted": 2, "used": 0, "unused": 2, "next": "approve()"}]
    assert "the scripted approver holds 2 approvals and the run used 0" in unused_warnings(run)[0]


def test_a_broken_run_and_a_live_run_are_not_checked() -> None:
    broken = run_scenario(_scenario([ask(call("price_of", item="milk"))]))  # runs out: scenario_error
    assert broken.ending.reason == "scenario_error"
    assert unused_warnings(broken) == []


def test_scripted_replies_are_described_as_written() -> None:
    assert describe(say("Milk is 1.20.")) == "say('Milk is 1.20.')"
    assert describe(cut()) == "cut()"
    assert describe(ask(call("price_of", item="milk"), call("place_order", item="milk", quantity=1))) == (
        "ask(price_of, place_order)"
    )
    assert describe(refuse("Not now.")) == "refuse('Not now.')"


@pytest.mark.slow
def test_the_command_line_warns_naming_chapter_and_scenario(tmp_path: Path) -> None:
    book = make_book(tmp_path, {"ch_leftover": LEFT_OVER}, {"index": PAGE})
    done = subprocess.run(
        [sys.executable, "-m", "primer", "run", "ch_leftover"],
        capture_output=True,
        text=True,
        env=book.env(),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "warning: ch_leftover too_long: the mock script holds 3 replies and the run used 2; 1 never ran, "
        "from say('And bread is 1.45.') on. Remove them from the scenario's mock list, or change the scenario "
        "so the run reaches them."
    ]


@pytest.mark.slow
def test_the_build_warns_naming_chapter_and_scenario_so_strict_fails(tmp_path: Path) -> None:
    book = make_book(tmp_path, {"ch_leftover": LEFT_OVER}, {"index": PAGE})
    build = book.build("--strict")
    assert build.returncode == 1, build.log
    (line,) = build.lines("replies and the run used")
    assert "traces: ch_leftover / too_long: the mock script holds 3 replies and the run used 2" in line
    assert not build.lines("just_right:")
    # The note is in the last model call's payload, in the chapter's payload page the page links to.
    payloads = (book.root / "site" / "traces" / "ch_leftover.payloads.html").read_text()
    assert "scripted replies never used" in payloads, "the note is in the last model call"
    assert "traces/ch_leftover.payloads.html#" in book.page()


def test_a_scripted_call_to_an_undeclared_tool_is_a_warning_naming_the_declared_names() -> None:
    from pydantic import BaseModel

    from primer.tools import ToolContext, tool

    class WeatherIn(BaseModel):
        """The weather in a city."""

        city: str

    @tool(WeatherIn)
    def weather(args: WeatherIn, ctx: ToolContext) -> str:
        """Look it up."""
        return "sunny"

    wrong = Scenario(
        name="wrong_name",
        prompt="Weather?",
        tools=[weather],
        mock=[ask(call("weather_in", city="Paris")), say("Sunny.")],
    )
    run = run_scenario(wrong, "mock")
    [warning] = unused_warnings(run)
    assert warning.startswith("wrong_name: the mock script calls 'weather_in' in turn 1, which is not a declared tool")
    assert "the declared tools are: WeatherIn." in warning
    right = Scenario(
        name="right_name",
        prompt="Weather?",
        tools=[weather],
        mock=[ask(call("WeatherIn", city="Paris")), say("Sunny.")],
    )
    run = run_scenario(right, "mock")
    assert unused_warnings(run) == []
    assert run.turns[0].tools[0].result == "sunny"


def test_a_code_scenario_calling_an_undeclared_tool_is_warned_about_too() -> None:
    from primer.code_scenario import CodeScenario
    from tests.fixtures.code_agents import WEATHER, raw_agent

    wrong = CodeScenario(
        name="code_wrong_name", code=raw_agent, services=[WEATHER], mock=[ask(call("weather", city="Paris")), say("x")]
    )
    run = run_scenario(wrong, "mock")
    assert any(
        "calls 'weather' in turn 1" in w and "declared tools are: weather_in." in w for w in unused_warnings(run)
    )
