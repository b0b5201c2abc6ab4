"""The Inspect AI export: a chapter as an eval log that Inspect's own reader reads back.

The log is written from Inspect's schema without inspect-ai, which the tests alone need:
written as JSON and as Inspect's zipped ``.eval``, read with ``inspect_ai.log.read_eval_log``
(which validates every field against Inspect's own models). A sample per scenario, a model
event per model call and a tool event per tool call, in the order and at the moments the
trace recorded, for ch09 in mock mode and live; the question as the input, tool messages
with their function and error; for ch16, an evaluation, an epoch per trial, each scored
with the check that decided it, and the pass rate as the run's metric.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessageTool

from primer.cli import main
from primer.evaluate import evaluation_of
from primer.export.inspect_log import SCORER, write
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


def read(run: ChapterRun, folder: Path, suffix: str = ".json") -> EvalLog:
    return read_eval_log(write(run, folder / f"log{suffix}", start=START))


def test_a_failed_tool_call_is_a_tool_error(runs: dict[str, ChapterRun], tmp_path: Path) -> None:
    log = read(runs["live"], tmp_path)
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


@pytest.mark.parametrize("mode", ["mock", "live"])
def test_the_input_is_the_question_and_the_tool_messages_name_their_function_and_error(
    runs: dict[str, ChapterRun], mode: str, tmp_path: Path
) -> None:
    run = runs[mode]
    log = read(run, tmp_path)
    assert log.samples is not None
    for sample, scenario in zip(log.samples, run.scenarios, strict=True):
        [question] = [m.content for m in scenario.transcript if m.role == "human"]
        assert sample.input == question, "the question, not the system prompt first"
        assert sample.output.completion == scenario.transcript[-1].content
        tools = {tool.call_id: tool for turn in scenario.turns for tool in turn.tools}
        told = [m for m in sample.messages if isinstance(m, ChatMessageTool)]
        assert len(told) == len(tools)
        for message in told:
            ran = tools[message.tool_call_id or ""]
            assert message.function == ran.name
            if ran.failure is None:
                assert message.error is None
            else:
                assert message.error is not None
                assert message.error.message == ran.failure.message
    landed = next(s for s in log.samples if s.id == "arguments_are_wrong")
    [rejected, *_] = [m for m in landed.messages if isinstance(m, ChatMessageTool)]
    assert rejected.error is not None
    assert rejected.error.type == "parsing"
    assert log.results is None, "nothing in ch09 is scored"
    assert all(not sample.scores for sample in log.samples)


EVALUATION = "ch16_evaluation"


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_an_evaluation_is_a_sample_per_scenario_an_epoch_per_trial_each_scored(suffix: str, tmp_path: Path) -> None:
    run = run_chapter(EVALUATION)
    log = read(run, tmp_path, suffix)
    assert log.samples is not None
    assert log.eval.config.epochs == 5
    assert log.eval.dataset.samples == len(run.scenarios) == 2
    for scenario in run.scenarios:
        trials = evaluation_of(scenario).trials
        samples = sorted((s for s in log.samples if s.id == scenario.name), key=lambda s: s.epoch)
        assert [s.epoch for s in samples] == [t.number for t in trials] == [1, 2, 3, 4, 5]
        for sample, trial in zip(samples, trials, strict=True):
            score = sample.scores[SCORER] if sample.scores else None
            assert score is not None
            assert score.value == ("C" if trial.passed else "I")
            assert score.explanation == (trial.why if not trial.passed else "every check passed")
            assert score.answer == sample.output.completion == sample.messages[-1].text
            assert sample.input == "How much is a bottle of milk? Look it up."
            assert sample.turn_count == trial.turns
    flaky = {s.epoch: s.scores[SCORER] for s in log.samples if s.id == "a_flaky_model" and s.scores}
    assert flaky[2].explanation == "price_of was not called; the answer does not say 1.20"
    assert flaky[4].answer == "Milk is 3.10."
    assert log.results is not None
    [scores] = log.results.scores
    assert (scores.name, scores.scorer, scores.scored_samples) == (SCORER, SCORER, 10)
    assert scores.metrics["accuracy"].value == pytest.approx(8 / 10), "5 of 5 and 3 of 5 passed"
    assert log.reductions is not None
    rates = {r.sample_id: r.value for reduction in log.reductions for r in reduction.samples}
    assert rates == {
        "same_script_every_time": 1.0,
        "a_flaky_model": pytest.approx(evaluation_of(run.scenario("a_flaky_model")).pass_rate),
    }


@pytest.mark.slow
def test_the_log_is_written_without_inspect_ai(tmp_path: Path) -> None:
    # inspect-ai cannot be imported in this process: the export needs none of it.
    out = tmp_path / "ch16.eval"
    script = (
        "import sys; sys.modules['inspect_ai'] = None\n"
        "from primer.cli import main\n"
        f"raise SystemExit(main(['export', 'inspect', {EVALUATION!r}, '-o', {str(out)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert read_eval_log(out).results is not None
    assert [path.name for path in tmp_path.iterdir()] == ["ch16.eval"], "no temporary file left beside it"


def test_the_command_counts_the_samples_the_log_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An evaluation is a sample per trial: ch16's two scenarios run five trials each.
    out = tmp_path / "ch16.json"
    assert main(["export", "inspect", "ch16_evaluation", "-o", str(out)]) == 0
    log = read_eval_log(str(out))
    assert log.samples is not None
    assert capsys.readouterr().out.strip() == f"wrote {out}: {len(log.samples)} samples (mock runs of ch16_evaluation)"
    assert len(log.samples) == 10
