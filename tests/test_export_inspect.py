"""The Inspect AI export: a chapter as an eval log that Inspect's own reader reads back.

Written as JSON and as Inspect's zipped ``.eval``, read with ``inspect_ai.log.read_eval_log``:
a sample per scenario, a model event per model call and a tool event per tool call, in the
order and at the moments the trace recorded, for ch09 in mock mode and live.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import read_eval_log

from primer.cli import main
from primer.export.inspect_log import eval_log, write
from primer.replay import read_trace
from primer.runner import run_chapter
from primer.settings import DEFAULT_SERVICE_KEY
from primer.trace import ChapterRun
from tests.secret_forms import leaks

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "docs" / "traces"
CHAPTER = "ch09_who_retries"
START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def runs() -> dict[str, ChapterRun]:
    return {"mock": run_chapter(CHAPTER), "live": read_trace(TRACES / f"{CHAPTER}.live.json")}


@pytest.mark.parametrize("suffix", [".json", ".eval"])
@pytest.mark.parametrize("mode", ["mock", "live"])
def test_the_log_reads_back_a_sample_per_scenario_and_an_event_per_step(
    runs: dict[str, ChapterRun], mode: str, suffix: str, tmp_path: Path
) -> None:
    run = runs[mode]
    log = read_eval_log(write(run, tmp_path / f"log{suffix}", start=START))
    assert log.status == "success"
    assert log.eval.task == CHAPTER
    assert log.eval.model == ("mockllm/model" if mode == "mock" else "openai-api/deepseek/deepseek-flash")
    assert log.samples is not None
    samples = {sample.id: sample for sample in log.samples}
    assert sorted(samples) == sorted(s.name for s in run.scenarios)
    for scenario in run.scenarios:
        sample = samples[scenario.name]
        expected: list[tuple[str, str]] = []
        for turn in scenario.turns:
            expected.append(("model", ""))
            expected += [("tool", tool.call_id) for tool in turn.tools]
        found = [
            ("model", "") if isinstance(event, ModelEvent) else ("tool", event.id)
            for event in sample.events
            if isinstance(event, (ModelEvent, ToolEvent))
        ]
        assert found == expected
        assert [m.role for m in sample.messages] == [
            {"human": "user", "ai": "assistant"}.get(m.role, m.role) for m in scenario.transcript
        ]
        assert sample.output.completion == (scenario.transcript[-1].content or "")
        assert sample.metadata["ending"]["reason"] == scenario.ending.reason
        assert sample.turn_count == len(scenario.turns)


def test_the_events_are_at_the_recorded_moments_with_the_usage(runs: dict[str, ChapterRun], tmp_path: Path) -> None:
    run = runs["live"]
    log = read_eval_log(write(run, tmp_path / "live.json"))
    assert log.samples is not None
    scenario = run.scenario("service_is_busy")
    sample = next(s for s in log.samples if s.id == "service_is_busy")
    assert scenario.started_at is not None
    assert sample.started_at == scenario.started_at.isoformat()
    model, tool, _ = [e for e in sample.events if isinstance(e, (ModelEvent, ToolEvent))]
    assert isinstance(model, ModelEvent)
    assert isinstance(tool, ToolEvent)
    recorded = scenario.turns[0].tools[0]
    assert recorded.timing.start_ms is not None
    assert tool.timestamp == scenario.started_at + timedelta(milliseconds=recorded.timing.start_ms)
    assert tool.working_time == pytest.approx(recorded.timing.total_ms / 1000)
    assert tool.arguments == recorded.arguments
    assert tool.result == recorded.message
    call = scenario.turns[0].model_call
    assert call.usage is not None
    assert model.output.usage is not None
    assert model.output.usage.input_tokens == call.usage.input_tokens
    assert model.call is not None
    assert model.call.request["model"] == "deepseek-flash", "the wire's request, as it was sent"
    total = sum(t.model_call.usage.output_tokens for t in scenario.turns if t.model_call.usage)
    assert sample.model_usage["openai-api/deepseek/deepseek-flash"].output_tokens == total


def test_a_failed_tool_call_is_a_tool_error(runs: dict[str, ChapterRun]) -> None:
    log = eval_log(runs["live"])
    assert log.samples is not None
    sample = next(s for s in log.samples if s.id == "arguments_are_wrong")
    first = next(e for e in sample.events if isinstance(e, ToolEvent))
    assert first.error is not None
    assert first.error.type == "parsing", "the model can fix the arguments"
    landed = next(s for s in log.samples if s.id == "order_may_have_landed")
    timeout = next(e for e in landed.events if isinstance(e, ToolEvent))
    assert timeout.error is not None
    assert timeout.error.type == "timeout"


def test_the_command_writes_the_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "ch09.eval"
    assert main(["export", "inspect", CHAPTER, "--mode", "live", "--traces", str(TRACES), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}: 4 samples (live runs of {CHAPTER})"
    log = read_eval_log(out)
    assert log.samples is not None
    assert len(log.samples) == 4


@pytest.mark.parametrize("mode", ["mock", "live"])
def test_no_key_in_the_log(runs: dict[str, ChapterRun], mode: str, tmp_path: Path) -> None:
    text = write(runs[mode], tmp_path / "log.json", start=START).read_text()
    assert leaks(text, [DEFAULT_SERVICE_KEY]) == []
    assert "Bearer" not in text
