"""The worker that runs a chapter's mocks (or a replay) in a new interpreter: what the build is told when it fails.

The build uses it when library code changed under ``mkdocs serve``; what it says reaches the log and the page,
so it is scrubbed of keys and says why in words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from primer.book._run import in_worker

KEY = "sk-live-0123456789abcdefSECRET"

CHAPTERS = {
    "ch01_prints_the_key.py": (
        "import os, sys\n"
        "print('connecting with', os.environ['PRIMER_API_KEY'], file=sys.stderr)\n"
        "sys.stderr.flush()\n"
        "os._exit(3)\n"
    ),
    "ch02_hangs.py": "import sys, time\nsys.stderr.write('loading \\u00fc\\n'); sys.stderr.flush()\ntime.sleep(60)\n",
    "ch03_plain.py": (
        "from primer.models.mock import say\nfrom primer.scenario import Scenario\n\n"
        "hello = Scenario(name='hello', prompt='Hi.', tools=[], mock=[say('Hello.')])\n"
    ),
}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder = tmp_path / "workerbook" / "chapters"
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    for name, text in CHAPTERS.items():
        (folder / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))  # the worker is given this process's import path
    monkeypatch.setenv("PRIMER_API_KEY", KEY)
    return "workerbook.chapters"


def test_a_worker_that_dies_is_said_without_the_key_it_printed(package: str) -> None:
    output = in_worker([package, "ch01_prints_the_key"], ["ch01_prints_the_key"], 60)
    said = output.errors["ch01_prints_the_key"].message
    assert said.startswith("the worker in a new interpreter failed: connecting with ")
    assert KEY not in said
    assert KEY[-12:] not in said


def test_a_worker_that_takes_too_long_says_so_in_words(package: str) -> None:
    # 8 s: time enough, on a loaded machine, for the worker to start and print before it waits.
    output = in_worker([package, "ch02_hangs"], ["ch02_hangs"], 8)
    said = output.errors["ch02_hangs"].message
    assert said == "the worker in a new interpreter failed: it took over 8 s: loading \u00fc"


def test_a_setting_the_build_only_warns_about_does_not_fail_the_worker(
    package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRIMER_MODEL_TIMEOUT", "soon")  # the build warns and runs the mocks without live runs
    output = in_worker([package, "ch03_plain"], ["ch03_plain"], 60)
    assert output.errors == {}
    assert [run.chapter for run in output.runs] == ["ch03_plain"]
    assert output.runs[0].scenarios[0].ending.label == "no_tool_calls"
