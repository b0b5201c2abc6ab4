"""A book build verifies its frozen live traces by replay when their code changed.

Each test builds, with ``mkdocs build`` and no key, a book made of the real
chapters, the committed live traces of ch05 and ch09, and a *copy* of the
library (``tests.books.copy_library``), which the test then edits as a
maintainer would: a comment, a refactor, a new system prompt. What the build
says, what the page says and what happens to the frozen files is checked.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from primer.book._book import Book
from primer.book._chapters import Chapters
from primer.chapters import scenarios_of
from primer.scenario import Scenario
from primer.settings import Settings
from primer.trace import ScenarioRun
from tests.books import HOOK, RENDERER, SmallBook, copy_library, edit

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
LIVE = ("ch05_loop_endings", "ch09_who_retries")
#: The book's chapters: the live ones, and one without a live trace. Three, not the library's
#: every chapter: each library edit here re-runs them all (7.0 s of CPU a cold build with all
#: of them, 2.8 s with these).
CHAPTERS = ("ch01_one_call", *LIVE)
#: Every scenario of the book, run in mock mode by every cold build.
MOCK = sum(len(scenarios_of(name)) for name in CHAPTERS)
VERIFIED = sum(len(scenarios_of(name)) for name in LIVE)
PAGE = "# Live\n\n::: trace ch05_loop_endings\n\n::: trace ch09_who_retries\n"


def live_book(root: Path) -> tuple[SmallBook, Path]:
    """The real chapters (``CHAPTERS``) and their committed live traces, on a copy of the library."""
    library = copy_library(root)
    for chapter in (library / "chapters").glob("ch*.py"):
        if chapter.stem not in CHAPTERS:
            chapter.unlink()
    traces = root / "docs" / "traces"
    traces.mkdir(parents=True)
    for chapter in LIVE:
        (traces / f"{chapter}.live.json").write_bytes((REPO / "docs" / "traces" / f"{chapter}.live.json").read_bytes())
    (root / "docs" / "index.md").write_text(PAGE)
    (root / "mkdocs.yml").write_text(
        f"site_name: Live\ntheme:\n  name: mkdocs\nexclude_docs: |\n  traces/*.live.json\n"
        # Two chapters on one page, the others on none: the book's rules are off.
        f"hooks:\n  - {HOOK}\nmarkdown_extensions:\n  - {RENDERER}:\n      rules: false\n"
    )
    return SmallBook(root, "primer.chapters"), library


def frozen(book: SmallBook, chapter: str) -> Path:
    return book.docs / "traces" / f"{chapter}.live.json"


def published(book: SmallBook, chapter: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((book.root / "site" / "traces" / f"{chapter}.json").read_text())
    return data


def settled(book: SmallBook) -> dict[str, bytes]:
    """Build once (verifying the committed traces if the library changed since they were stamped)."""
    first = book.build("--strict")
    assert first.returncode == 0, first.log
    for chapter in LIVE:
        assert published(book, chapter)["live_status"]["state"] == "current"
    return {chapter: frozen(book, chapter).read_bytes() for chapter in LIVE}


#: A settled live book: the book, its library's copy, and the frozen files' bytes after its first build.
Settled = tuple[SmallBook, Path, dict[str, bytes]]


@pytest.fixture(scope="module")
def settled_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """The live book's first build (``settled``), done once for the module: a cold build runs every scenario."""
    root = tmp_path_factory.mktemp("settled")
    book, _library = live_book(root)
    return root, settled(book)


@pytest.fixture
def settled_book(tmp_path: Path, settled_once: tuple[Path, dict[str, bytes]]) -> Settled:
    """A copy of the settled live book for one test to edit: ``live_book`` and ``settled``, as if built here.

    Its cache, site and frozen files are the first build's, as a build of
    its own would leave them (the cache is the same from any folder).
    """
    root, before = settled_once
    shutil.copytree(root, tmp_path, symlinks=True, dirs_exist_ok=True)
    return SmallBook(tmp_path, "primer.chapters"), tmp_path / "primer", dict(before)


def verify(book: SmallBook, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "primer", "verify", *args],
        cwd=book.root,
        env=book.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_comment_or_docstring_edit_runs_nothing_and_the_live_traces_stay_current(settled_book: Settled) -> None:
    book, library, before = settled_book
    edit(library / "redact.py", "import json\n", "import json  # for the JSON forms of a secret\n")
    edit(
        library / "loop.py",
        '"""Go round while the model asks for tools;',
        '"""Go round, while the model asks for tools;',
    )
    edit(library / "agent.py", "from primer.clock import Clock\n", "from primer.clock import Clock\n\n")
    done = book.build("--strict")
    assert done.returncode == 0, done.log
    assert done.count() == f"traces: ran 0, reused {MOCK + VERIFIED}"
    for chapter in LIVE:
        assert frozen(book, chapter).read_bytes() == before[chapter]
        assert published(book, chapter)["live_status"]["state"] == "current"


def test_a_refactor_that_sends_the_same_requests_is_verified_and_stamped_only_when_asked(settled_book: Settled) -> None:
    book, library, settled_bytes = settled_book
    before = {chapter: json.loads(data) for chapter, data in settled_bytes.items()}
    committed = {chapter: frozen(book, chapter).read_bytes() for chapter in LIVE}
    # A new helper in the loop: the same calls, in the same order.
    edit(
        library / "loop.py",
        "def _failed(agent: Agent) -> Ending | None:\n",
        "def _ask(agent: Agent, context: list[Message]) -> Turn:\n"
        "    return agent.ask(context)\n\n\n"
        "def _failed(agent: Agent) -> Ending | None:\n",
    )
    edit(library / "loop.py", "        turn = agent.ask(context)\n", "        turn = _ask(agent, context)\n")
    done = book.build("--strict")
    assert done.returncode == 0, done.log
    assert done.count() == f"traces: ran {MOCK}, reused 0, verified {VERIFIED}"
    today = datetime.now(UTC).date().isoformat()
    unstamped = ("source_hash", "verified_at")
    for chapter in LIVE:
        # An ordinary build leaves the committed file as it is: a clean checkout stays clean.
        assert frozen(book, chapter).read_bytes() == committed[chapter]
        # What is shown and published carries the stamp; only the stamp differs.
        shown = published(book, chapter)["live"]
        assert shown["source_hash"] != before[chapter]["source_hash"]
        assert shown["verified_at"] == today
        assert published(book, chapter)["live_status"]["state"] == "current"
    assert f"verified by replay {today}" in book.page()
    # The verdict is kept by its inputs: the next build replays nothing, and shows the same.
    assert book.build().count() == f"traces: ran 0, reused {MOCK + VERIFIED}"
    assert f"verified by replay {today}" in book.page()
    assert published(book, "ch09_who_retries")["live"]["verified_at"] == today
    assert all(frozen(book, chapter).read_bytes() == committed[chapter] for chapter in LIVE)

    # Asked for, the stamps are written into the frozen files.
    stamped = subprocess.run(
        [sys.executable, "-m", "primer.book", "build", "--stamp"],
        cwd=book.root,
        env=book.env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert stamped.returncode == 0, stamped.stderr
    for chapter in LIVE:
        after = json.loads(frozen(book, chapter).read_text())
        assert after["source_hash"] == published(book, chapter)["live"]["source_hash"]
        assert after["verified_at"] == today
        # Only the stamp changed: the provider's answers, timings and usage are as recorded.
        assert {k: v for k, v in after.items() if k not in unstamped} == {
            k: v for k, v in before[chapter].items() if k not in unstamped
        }
        assert f"stamped {frozen(book, chapter)}" in stamped.stderr
    assert book.build().count() == f"traces: ran 0, reused {MOCK + VERIFIED}"


def test_a_changed_system_prompt_fails_verify_says_stale_and_fails_strict(settled_book: Settled) -> None:
    book, library, before = settled_book
    edit(library / "scenario.py", "You answer briefly and plainly.", "You answer tersely and plainly.")

    checked = verify(book)
    assert checked.returncode == 1, checked.stderr
    diverged = [line for line in checked.stdout.splitlines() if ": diverged: " in line]
    assert len(diverged) == VERIFIED
    assert diverged[0] == (
        "ch05_loop_endings within_token_limit: diverged: within_token_limit, turn 1, model request, attempt 1: "
        'body messages[0].content was "You answer briefly and plainly. Use the tools you are given.", '
        'and is now "You answer tersely and plainly. Use the tools you are given."'
    )
    # What has no live trace is counted in the summary line, and listed only with --all.
    assert "no live trace" not in checked.stdout
    assert checked.stdout.splitlines()[-1].startswith(f"verified 0 scenarios · {VERIFIED} diverged · ")
    assert " without a live trace (--all lists them) · " in checked.stdout.splitlines()[-1]
    # The prompt edited: both traces were recorded from earlier code, as their pages say.
    assert checked.stdout.splitlines()[-1].endswith(
        " · 2 chapters recorded from earlier code (python -m primer.book build --stamp marks what verified as current)"
    )
    assert "ch01_one_call plain_question: no live trace" in verify(book, "--all").stdout

    strict = book.build("--strict")
    assert strict.returncode != 0
    warnings = strict.lines("no longer matches the code")
    assert len(warnings) == len(LIVE)
    assert str(frozen(book, "ch09_who_retries")) in warnings[1]
    assert "body messages[0].content" in warnings[1]

    # The verdict is kept by its inputs: not replayed again while it stays diverged, still warned about.
    done = book.build()
    assert done.returncode == 0, done.log
    assert done.count() == f"traces: ran 0, reused {MOCK + VERIFIED}"
    assert len(done.lines("no longer matches the code")) == len(LIVE)
    status = published(book, "ch09_who_retries")["live_status"]
    assert status["state"] == "stale"
    assert "service_is_busy, turn 1, model request, attempt 1: body messages[0].content was" in status["reason"]
    assert "service_is_busy, turn 1, model request, attempt 1: body messages[0].content was" in book.page()
    for chapter in LIVE:
        assert frozen(book, chapter).read_bytes() == before[chapter], "a failed verification never rewrites"


def test_a_changed_field_description_is_named_by_verify(settled_book: Settled) -> None:
    book, library, _before = settled_book
    edit(
        library / "grocery.py",
        "from pydantic import BaseModel, ConfigDict,",
        "from pydantic import BaseModel, ConfigDict, Field,",
    )
    edit(library / "grocery.py", "    quantity: int\n", '    quantity: int = Field(description="How many, 1 to 12.")\n')
    checked = verify(book, "ch09_who_retries")
    assert checked.returncode == 1
    lines = checked.stdout.splitlines()
    assert lines[0] == (
        "ch09_who_retries service_is_busy: diverged: service_is_busy, turn 1, model request, attempt 1: "
        'body tools[0].function.parameters.properties.quantity.description was absent, and is now "How many, 1 to 12."'
    )
    # Only ch09 declares place_order: ch05's requests are the same.
    assert verify(book, "ch05_loop_endings").returncode == 0


def test_a_recording_shorter_than_the_new_run_is_named_as_such(settled_book: Settled) -> None:
    book, library, before = settled_book
    # The loop asks once more after the answer: a request no recording holds.
    edit(
        library / "loop.py",
        '        if not context[-1].tool_calls:\n            return Ending(reason="no_tool_calls")\n',
        "        if not context[-1].tool_calls:\n            agent.ask(context)\n"
        '            return Ending(reason="no_tool_calls")\n',
    )
    done = book.build()
    assert done.returncode == 0, done.log
    reason = published(book, "ch09_who_retries")["live_status"]["reason"]
    assert "service_is_busy: the recording ran out after turn 2: the code now sends a 3rd model request" in reason
    assert frozen(book, "ch09_who_retries").read_bytes() == before["ch09_who_retries"]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: "{not json at all", "is not valid JSON"),
        (lambda data: re.sub('"schema_version": [0-9]+', '"schema_version": 7', data), "its schema version is 7"),
        (
            # The timeout's failure no longer says what happened: nothing to replay it as.
            lambda data: data.replace("did not answer in time, and the call may have been received", "went wrong"),
            "could not be verified by replay",
        ),
    ],
    ids=["corrupt", "unknown-schema", "incomplete-recording"],
)
def test_a_bad_frozen_file_is_named_and_never_rewritten(settled_book: Settled, damage: Any, said: str) -> None:
    book, _library, _before = settled_book
    path = frozen(book, "ch09_who_retries")
    # Stamped by other code, so the build tries to verify it.
    text = path.read_text().replace(json.loads(path.read_text())["source_hash"], "0" * 20)
    path.write_text(damage(text))
    before = path.read_bytes()
    done = book.build()
    assert done.returncode == 0, done.log
    [warning] = [line for line in done.lines(said) if "WARNING" in line]
    assert str(path) in warning
    assert path.read_bytes() == before
    assert not list(path.parent.glob("*.tmp*")), "nothing half-written is left"


# -- with a key: a verified trace is not paid for again ----------------------------------


class Counting:
    """A live runner that must not be needed: counts calls, answers with a failure."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, scenario: Scenario, settings: Settings) -> ScenarioRun:
        self.calls.append(scenario.name)
        raise RuntimeError("no network in tests")


def keyed_book(tmp_path: Path, runner: Counting) -> Book:
    docs = tmp_path / "docs"
    (docs / "traces").mkdir(parents=True)
    data = (REPO / "docs" / "traces" / "ch05_loop_endings.live.json").read_text()
    stamp = json.loads(data)["source_hash"]
    (docs / "traces" / "ch05_loop_endings.live.json").write_text(data.replace(stamp, "0" * 20))
    return Book(
        docs,
        tmp_path / ".cache",
        chapters=Chapters(),
        settings=Settings(api_key=SecretStr("sk-test-0123456789")),
        live_runner=runner,
    )


def test_with_a_key_a_verified_trace_is_re_stamped_instead_of_recorded_again(tmp_path: Path) -> None:
    runner = Counting()
    book = keyed_book(tmp_path, runner)
    prepared = book.prepare()
    assert prepared.report.verified == len(scenarios_of("ch05_loop_endings"))
    # Chapters without a live trace are recorded; ch05 is not: its replay verified it.
    assert not any(name in runner.calls for name in ("within_token_limit", "tokens_exhausted"))
    assert prepared.traces("ch05_loop_endings").live_status.state == "current"


def test_with_a_key_a_diverged_trace_is_recorded_again_without_a_warning_about_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = Counting()
    book = keyed_book(tmp_path, runner)
    path = tmp_path / "docs" / "traces" / "ch05_loop_endings.live.json"
    path.write_text(path.read_text().replace("You answer briefly and plainly.", "You once answered otherwise."))
    caplog.set_level("INFO")
    book.prepare()
    assert {"within_token_limit", "tokens_exhausted"} <= set(runner.calls)
    [note] = [r for r in caplog.records if "no longer matches the code" in r.getMessage()]
    assert note.levelname == "INFO"
    assert "it is recorded again now" in note.getMessage()


def test_a_library_edit_while_serving_is_replayed_with_the_new_code(settled_book: Settled) -> None:
    from tests.test_serve import serving

    book, library, before = settled_book
    # A first build that finds every chapter's entry in the cache (primer.book._cache)
    # imports none of the library, and an edit is then read fresh in the server itself.
    # This server must have imported it: its first build runs every mock scenario (and
    # replays the live traces, unless they are stamped with the code as it is).
    shutil.rmtree(book.root / ".cache" / "trace-book" / "entries")
    with serving(book) as server:
        [first] = server.builds()
        assert first.startswith(f"traces: ran {MOCK}, reused "), first
        start = len(server.lines)
        # This server imported the library before the edit: a replay in it would send the
        # old prompt and verify. It must replay in a new interpreter, and diverge.
        edit(library / "scenario.py", "You answer briefly and plainly.", "You answer tersely and plainly.")
        server.wait_for("verified 0", after=start)
        log = server.lines[start:]
        assert sum("verifying" in line and "anew" in line for line in log) == len(LIVE)
        assert any("no longer matches the code" in line and "body messages[0].content" in line for line in log)
        page = server.get()
    assert "service_is_busy, turn 1, model request, attempt 1: body messages[0].content was" in page
    for chapter in LIVE:
        assert frozen(book, chapter).read_bytes() == before[chapter]
