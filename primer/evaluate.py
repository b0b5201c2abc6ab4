"""Evaluating an agent: one scenario run many times, each trial checked, the pass rate and the cost counted.

A model does not give the same answer every time, so one run proves little:
run the same question ``times`` times, check each trial's outcome with plain
code, and count how many passed and what they cost. ``repeated`` is a
``Loop``, so the trials are one run with one trace::

    price_asked_five_times = Scenario(
        ...,
        loop=repeated(5, all_of(called("price_of"), answer_contains("1.20"))),
        mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")] * 5,
    )

Each trial starts from the scenario's first context (system and question)
and runs the inner loop (``until_no_tool_calls`` by default). The model call
that ends a trial carries a note, ``trial 2 of 5``, with whether it passed,
why not, and what it cost; the ending's detail has the totals::

    ended {"reason": "no_tool_calls", "detail": "3 of 5 trials passed (60%) · ..."}

Tokens are the provider's count when it gives one (live). The mock model
counts none, so a mock evaluation gives the characters it sent and an
*estimate* of tokens at four characters a token, and says it is one. A mock
script replies the same whatever it is sent: its pass rate measures the
script, not a model; vary the script's replies to see what a flaky model
would score, and run live to learn what the real one does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from primer.agent import Agent
from primer.errors import ChapterError
from primer.loop import Loop, until_no_tool_calls
from primer.trace import Ending, Message, Note, ScenarioRun, Turn

__all__ = [
    "CHARACTERS_PER_TOKEN",
    "TRIAL_NOTE",
    "Check",
    "Evaluation",
    "Trial",
    "TrialResult",
    "all_of",
    "answer_contains",
    "called",
    "evaluation_of",
    "repeated",
]

#: The rough rule a mock evaluation uses to estimate tokens from characters.
CHARACTERS_PER_TOKEN = 4
#: The start of the note on each trial's last model call: ``trial 2 of 5``.
TRIAL_NOTE = "trial"


@dataclass(frozen=True)
class Trial:
    """One trial as a check sees it: its turns, its final context and how it ended."""

    number: int
    turns: list[Turn]
    context: list[Message]
    ending: Ending

    @property
    def answer(self) -> str:
        """The trial's last reply text ("" when it ended without one)."""
        last = self.context[-1]
        return (last.content or "") if last.role == "ai" else ""

    @property
    def tools_called(self) -> list[str]:
        """The tools the model asked for, in order."""
        return [tool.name for turn in self.turns for tool in turn.tools]


#: A check returns None when the trial passed, or why it did not.
Check = Callable[[Trial], str | None]


def called(tool: str) -> Check:
    """Passes when the model asked for ``tool`` at least once."""

    def check(trial: Trial) -> str | None:
        return None if tool in trial.tools_called else f"{tool} was not called"

    return check


def answer_contains(text: str) -> Check:
    """Passes when the last reply contains ``text``."""

    def check(trial: Trial) -> str | None:
        return None if text in trial.answer else f"the answer does not say {text}"

    return check


def all_of(*checks: Check) -> Check:
    """Passes when every check passes; fails with every reason that applies."""

    def check(trial: Trial) -> str | None:
        reasons = [why for why in (c(trial) for c in checks) if why is not None]
        return "; ".join(reasons) or None

    return check


@dataclass(frozen=True)
class TrialResult:
    """A trial's verdict and cost, as its note records them."""

    number: int
    passed: bool
    why: str | None
    turns: int
    characters_sent: int
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None


@dataclass(frozen=True)
class Evaluation:
    """Every trial's result, and the totals."""

    trials: list[TrialResult]

    @property
    def passed(self) -> int:
        """How many trials passed."""
        return sum(trial.passed for trial in self.trials)

    @property
    def pass_rate(self) -> float:
        """The share of trials that passed, 0 to 1."""
        return self.passed / len(self.trials) if self.trials else 0.0

    @property
    def characters_sent(self) -> int:
        """Characters of context sent over every trial, resends counted."""
        return sum(trial.characters_sent for trial in self.trials)

    def tokens(self, which: str) -> int | None:
        """``input``, ``output`` or ``cached`` tokens over every trial, when the provider counted them all."""
        counts: list[int | None] = [getattr(trial, f"{which}_tokens") for trial in self.trials]
        known = [count for count in counts if count is not None]
        return sum(known) if counts and len(known) == len(counts) else None

    @property
    def estimated_tokens(self) -> int:
        """Input tokens estimated from characters, for a run whose model counted none."""
        return round(self.characters_sent / CHARACTERS_PER_TOKEN)

    def summary(self) -> str:
        """The line the ending's detail carries: pass rate, then cost."""
        head = f"{self.passed} of {len(self.trials)} trials passed ({self.pass_rate:.0%})"
        tokens_in, tokens_out = self.tokens("input"), self.tokens("output")
        if tokens_in is not None and tokens_out is not None:
            cached = self.tokens("cached")
            cost = f"{tokens_in:,} tokens in, {tokens_out:,} out, counted by the provider"
            if cached:
                cost += f" ({cached:,} of the input cached)"
        else:
            cost = (
                f"{self.characters_sent:,} characters sent, about {self.estimated_tokens:,} tokens "
                f"(estimated at {CHARACTERS_PER_TOKEN} characters a token: the model counted none)"
            )
        return f"{head} · {cost}"


def _result(trial: Trial, why: str | None) -> TrialResult:
    calls = [turn.model_call for turn in trial.turns]
    usages = [call.usage for call in calls]
    counted = all(usage is not None for usage in usages) and bool(usages)

    def total(field: str) -> int | None:
        return sum(getattr(usage, field) or 0 for usage in usages) if counted else None

    return TrialResult(
        number=trial.number,
        passed=why is None,
        why=why,
        turns=len(trial.turns),
        characters_sent=sum(len(m.written()) for call in calls for m in call.context),
        input_tokens=total("input_tokens"),
        output_tokens=total("output_tokens"),
        cached_tokens=total("cached_tokens"),
    )


def _note(result: TrialResult, times: int) -> Note:
    data: dict[str, object] = {"passed": result.passed}
    if result.why:
        data["why"] = result.why
    data |= {"turns": result.turns, "characters_sent": result.characters_sent}
    if result.input_tokens is not None:
        data |= {"input_tokens": result.input_tokens, "output_tokens": result.output_tokens}
        if result.cached_tokens:
            data["cached_tokens"] = result.cached_tokens
    return Note(label=f"{TRIAL_NOTE} {result.number} of {times}", data=data)


def repeated(times: int, check: Check, loop: Loop = until_no_tool_calls) -> Loop:
    """A loop that runs ``loop`` ``times`` times from the same start, checking each trial."""
    if times < 1:
        raise ChapterError(f"repeated(times={times}) needs at least one trial.")

    def trials(agent: Agent, context: list[Message], max_turns: int) -> Ending:
        start = list(context)
        results: list[TrialResult] = []
        endings: list[Ending] = []
        for number in range(1, times + 1):
            own = list(start)
            first = len(agent.turns)
            ending = loop(agent, own, max_turns)
            trial = Trial(number=number, turns=agent.turns[first:], context=own, ending=ending)
            context[:] = own
            if ending.failed:
                # A broken trial is the author's (or the provider's) problem, not a failed check.
                detail = f"trial {number} of {times}: {ending.detail or ending.label}"
                return Ending(reason=ending.reason, detail=detail)
            result = _result(trial, check(trial))
            if trial.turns:
                trial.turns[-1].model_call.notes.append(_note(result, times))
            results.append(result)
            endings.append(ending)
        summary = Evaluation(results).summary()
        reasons = sorted({e.label for e in endings})
        if len(reasons) > 1:
            summary += " · endings: " + ", ".join(reasons)
        last = endings[-1]
        return Ending(reason=last.reason, finish_reason=last.finish_reason, detail=summary)

    return trials


def evaluation_of(run: ScenarioRun) -> Evaluation:
    """The evaluation a ``repeated`` run recorded, read back from its trial notes."""
    results = []
    for turn in run.turns:
        for note in turn.model_call.notes:
            if note.label.startswith(f"{TRIAL_NOTE} ") and " of " in note.label:
                data = note.data
                results.append(
                    TrialResult(
                        number=int(note.label.split()[1]),
                        passed=bool(data["passed"]),
                        why=data.get("why"),
                        turns=int(data["turns"]),
                        characters_sent=int(data["characters_sent"]),
                        input_tokens=data.get("input_tokens"),
                        output_tokens=data.get("output_tokens"),
                        cached_tokens=data.get("cached_tokens"),
                    )
                )
    return Evaluation(results)
