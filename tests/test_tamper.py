"""A frozen trace verifies only when replaying its own recorded responses reproduces what it shows.

The committed live trace of ch05 is edited as a forger would: the final
reply and the transcript say something the recorded wire response does not
(or a tool's result, the message sent back, the ending, the title). The
requests the code sends are unchanged, so a replay that compared only those
would verify it. It must diverge, naming the field; ``python -m primer
verify`` must fail; a real ``mkdocs build --strict`` must fail, show no
forged answer as "verified by replay" and leave the file byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from primer.chapters import scenarios_of
from primer.replay import read_trace, verify_chapter
from primer.trace import ChapterRun
from tests.test_verify_build import frozen, live_book

ROOT = Path(__file__).resolve().parent.parent
CH05 = "ch05_loop_endings"
ORIGINAL = (ROOT / "docs" / "traces" / f"{CH05}.live.json").read_text()
FORGED = "Milk is £1.20, and the forger says hello."

Tamper = Callable[[dict[str, Any]], None]


def _last_reply(run: dict[str, Any]) -> None:
    scenario = run["scenarios"][0]
    scenario["turns"][-1]["model_call"]["reply"]["content"] = FORGED
    scenario["transcript"][-1]["content"] = FORGED


def _tool_result(run: dict[str, Any]) -> None:
    run["scenarios"][0]["turns"][0]["tools"][0]["result"] = "milk"


def _tool_message(run: dict[str, Any]) -> None:
    run["scenarios"][0]["turns"][1]["tools"][0]["message"] = "0.10"


def _ending(run: dict[str, Any]) -> None:
    run["scenarios"][1]["ending"]["detail"] = "the forger's ending"


def _title(run: dict[str, Any]) -> None:
    run["scenarios"][0]["title"] = "<b>verified</b>"


def _usage(run: dict[str, Any]) -> None:
    run["scenarios"][0]["turns"][0]["model_call"]["usage"]["output_tokens"] = 1


#: Each tampering, and the field the divergence must name.
TAMPERINGS: dict[str, tuple[Tamper, str]] = {
    "the final reply and the transcript": (_last_reply, "turns[2].model_call.reply.content"),
    "a tool's result": (_tool_result, "turns[0].tools[0].result"),
    "the message a tool sent back": (_tool_message, "turns[1].tools[0].message"),
    "the ending": (_ending, "ending.detail"),
    "the title": (_title, "title"),
    "the tokens used": (_usage, "turns[0].model_call.usage.output_tokens"),
}


def tampered(how: Tamper) -> str:
    run = json.loads(ORIGINAL)
    how(run)
    return json.dumps(run, indent=2, ensure_ascii=False)


def test_the_untouched_trace_verifies() -> None:
    check = verify_chapter(ChapterRun.model_validate_json(ORIGINAL), scenarios_of(CH05))
    assert check.verified, [c.line() for c in check.scenarios]


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_tampering_with_a_shown_field_diverges_naming_it(name: str) -> None:
    how, field = TAMPERINGS[name]
    check = verify_chapter(ChapterRun.model_validate_json(tampered(how)), scenarios_of(CH05))
    assert not check.verified
    divergence = check.divergence
    assert divergence is not None
    assert divergence.kind == "shown"
    assert divergence.field == field
    assert "recorded responses replayed give" in divergence.line()


@pytest.mark.slow
def test_verify_fails_on_a_tampered_trace_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / f"{CH05}.live.json"
    path.write_text(tampered(_last_reply))
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "primer", "verify", CH05, "--traces", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "turns[2].model_call.reply.content" in done.stdout
    assert "diverged" in done.stdout
    assert path.read_bytes() == before
    assert read_trace(path).scenarios[0].transcript[-1].content == FORGED


@pytest.mark.slow
def test_a_build_does_not_publish_a_forged_trace_as_verified(tmp_path: Path) -> None:
    book, _ = live_book(tmp_path)
    run = json.loads(tampered(_last_reply))
    run["source_hash"] = "0" * 20  # bogus: the build replays it to know whether it still holds
    path = frozen(book, CH05)
    path.write_text(json.dumps(run, indent=2, ensure_ascii=False))
    before = path.read_bytes()
    done = book.build("--strict")
    assert done.returncode != 0, done.log
    assert any("turns[2].model_call.reply.content" in line for line in done.lines("WARNING")), done.log
    assert "Traceback" not in done.log
    assert path.read_bytes() == before
    published = json.loads((book.root / "site" / "traces" / f"{CH05}.json").read_text())
    assert published["live_status"]["state"] != "current"
    assert "verified_at" not in json.loads(before) or json.loads(before)["verified_at"] == run.get("verified_at")
