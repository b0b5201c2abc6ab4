"""Malformed input is reported, never dropped or mangled silently.

A careless author's markers, a chapter with two scenarios of one name, a
scenario name with a ``/``, a trace file holding ``NaN``, a write killed half
way, a ``PRIMER_*`` variable set to nothing, a corrupt trace file, and a live
refresh in which the model misbehaved: each through the real build, the real
command line or the real store, each with a message that names what to fix.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import markdown
import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort

from primer.book._book import Book
from primer.book._cache import CorruptTrace, TraceCache
from primer.book._chapters import Chapters
from primer.book._markers import MARKER_FORM, Marker, NearMiss, parse_line, scan
from primer.errors import ChapterError
from primer.files import STALE_AFTER, TEMP_SUFFIX, write_if_changed
from primer.locator import chapter_names_in
from primer.settings import VARIABLES
from primer.summary import anomalies
from primer.trace import ChapterRun, Ending, ScenarioRun
from primer.trace_file import RESTORE, UPGRADE
from tests.books import BETA, hook_plugin, make_book
from tests.killed_writer import killed_writer
from tests.servers import live_settings
from tests.servers.provider import ReplayProvider
from tests.servers.service import LocalHttpbin

REPO = Path(__file__).resolve().parents[1]

# -- markers ------------------------------------------------------------------

#: Lines an author might write meaning a marker, and what is wrong with each.
NEAR_MISSES = {
    "::: trace": "it names no chapter",
    ":::trace ch_alpha": "a space must follow `:::`",
    "::: traces ch_alpha": "the word is `trace`, not `traces`",
    "::: Trace ch_alpha": "the word is `trace`, not `Trace`",
    "::: trace ch_alpha asks_price again": "it has 3 words after `trace`",
    "::: trace ch_alpha asks-price": "`asks-price` is not a name",
    "::: trace ch-alpha": "`ch-alpha` is not a name",
    "  ::: trace ch_alpha": "it is indented",
    "::: trcae ch_alpha": "the word is `trace`, not `trcae`",  # a typo before a name
    "::: Tarce ch_alpha asks_price": "the word is `trace`, not `Tarce`",
    "::: trac ch_alpha": "the word is `trace`, not `trac`",
    "::: tracee ch_alpha": "the word is `trace`, not `tracee`",
}


@pytest.mark.parametrize(("line", "problem"), NEAR_MISSES.items())
def test_a_line_meant_as_a_marker_is_a_near_miss_saying_what_is_wrong(line: str, problem: str) -> None:
    found = parse_line(line, 7)
    assert isinstance(found, NearMiss)
    assert found.line == 7
    assert problem in found.message
    assert f"`{MARKER_FORM}`" in found.message


@pytest.mark.parametrize(
    "line",
    [
        "::: package.module",  # mkdocstrings' identifiers are not ours
        "::: tracemalloc",
        "::: tracer",  # a word near trace naming nothing after it: another extension's
        "::: care x",  # another extension's word in trace's letters, more than one typo away
        "::: crate ch_alpha",
        "::: react ch_alpha",
        "::: tracemalloc ch_alpha",
        "::: trace.module",
        "::: live ch_alpha",
        "    ::: trace ch_alpha",  # indented code: an example
        "Prose about ::: trace ch_alpha in a sentence.",
        "::::: tabs",
    ],
)
def test_other_lines_are_left_alone(line: str) -> None:
    assert parse_line(line) is None


def test_valid_markers_are_markers() -> None:
    assert parse_line("::: trace ch_alpha", 3) == Marker("ch_alpha", None, 3)
    assert parse_line("::: trace ch_alpha asks_price \t", 4) == Marker("ch_alpha", "asks_price", 4)


def test_the_one_match_for_a_marker_as_written_agrees_with_the_full_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    # parse_line reads a valid marker in one match; every other line goes the full way. Over lines
    # of every shape, the two agree: the same marker where the match answers, none where it does not.
    from itertools import product

    from primer.book import _markers

    shapes = product(
        ["", " ", "    "],
        ["", " ", "\t"],
        ["trace", "traces", "Trace"],
        [" ", "\t", ""],
        ["", "ch09", "ch_9", "ch-9", "ch09 retries", "ch09\tretries", "a b c", "é"],
        ["", " \t", "\r"],
    )
    lines = [f"{indent}:::{gap}{word}{space}{names}{end}" for indent, gap, word, space, names, end in shapes]
    fast = [parse_line(line, 5) for line in lines]
    monkeypatch.setattr(_markers, "_VALID", re.compile(r"(?!)"))  # matches nothing: the full way for all
    full = [parse_line(line, 5) for line in lines]
    assert fast == full
    assert sum(isinstance(found, Marker) for found in full) >= 36


#: Lines meant as markers, valid or not, and some that are not ours.
FINE_OR_NOT = [
    *NEAR_MISSES,
    "::: trace ch_alpha",
    "::: trace ch_alpha asks_price \t",
    ":::\ttrace\tch_alpha\tasks_price",
    "::: TRACE ch_alpha",
    "::: trace ch_alpha\r asks_price",
    "::: trace ch_alpha\x0basks_price",
    "::: tracemalloc",
    "::::: trace ch_alpha",
]


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r\r\n"])
@pytest.mark.parametrize("line", FINE_OR_NOT)
def test_the_quick_look_for_near_misses_finds_what_reading_line_by_line_does(line: str, ending: str) -> None:
    # scan reads only the lines that open a fence or start with ":::" (every page is asked, traces off too).
    pages = [
        (f"# Page{ending}{ending}::: trace ch_alpha{ending}{ending}{line}{ending}After.", 5),
        (f"{line}", 1),
        (f"```{ending}{line}{ending}```{ending}{ending}::: trace ch_beta{ending}", None),
        (f"Text{ending}{line}{ending}text", 2),
    ]
    for page, number in pages:
        read = parse_line(line + ending[:-1], number) if number else None
        assert list(scan(page).near_misses) == ([read] if isinstance(read, NearMiss) else []), repr(page)


def test_the_quick_look_for_near_misses_agrees_with_parse_line_on_lines_made_at_random() -> None:
    chance = random.Random(10)
    starts = (
        ["", "", "", " ", "    "],
        [":::", ":::", ":::", "::"],
        [" ", " ", "\t", ""],
        ["trace", "trace", "traces", "Trace"],
    )
    spaces, words = [" ", "\t", "  ", ""], ["ch_a", "b", "b-c", ".", "\r", ":::", ""]

    def line() -> str:
        start = "".join(chance.choice(each) for each in starts)
        return start + "".join(chance.choice(spaces) + chance.choice(words) for _ in range(chance.randint(0, 3)))

    lines = [line() for _ in range(3000)]
    kinds = [type(parse_line(each)) for each in lines]
    assert kinds.count(Marker) > 50
    assert kinds.count(NearMiss) > 300
    for line in lines:
        read = parse_line(line)
        assert list(scan(line).near_misses) == ([read] if isinstance(read, NearMiss) else []), repr(line)


BAD_PAGE = """# Careless

Prose.

{near_misses}

::: trace ch_alpha asks_price

An example, in a fence, is not a mistake:

```
::: traces ch_alpha
:::trace
```
"""


def _bad_page() -> tuple[str, dict[str, int]]:
    near_misses = "\n\n".join(NEAR_MISSES)
    page = BAD_PAGE.format(near_misses=near_misses)
    lines = {line: page.split("\n").index(line) + 1 for line in NEAR_MISSES}
    return page, lines


@pytest.mark.slow
def test_every_near_miss_fails_the_strict_build_naming_page_line_and_the_valid_form(tmp_path: Path) -> None:
    page, lines = _bad_page()
    book = make_book(tmp_path, pages={"index": "# Home\n\n::: trace ch_beta\n", "careless": page})

    done = book.build("--strict")
    assert done.returncode != 0, done.log
    warnings = done.lines("WARNING")
    # One warning per near miss, the hook's: the renderer, which cannot name
    # the page, leaves them to it. Nothing for the valid marker or the fence.
    assert len(warnings) == len(NEAR_MISSES), done.log
    for line, problem in NEAR_MISSES.items():
        [warning] = [w for w in warnings if f"docs/careless.md line {lines[line]}:" in w]
        assert problem in warning
        assert f"`{line.strip()}` looks like a trace marker" in warning
        assert f"The valid form is `{MARKER_FORM}`" in warning
    # The page shows each as an error block, not as text, and the valid marker's trace.
    shown = book.page("careless")
    assert shown.count("tr-failed-title") == len(NEAR_MISSES)
    assert "scenario asks_price" in shown
    assert "::: traces ch_alpha" in shown, "the fenced example stays as written"

    # With traces off the markers become placeholders; the near misses are still warned about.
    off = book.build("--strict", PRIMER_TRACES="off")
    assert off.returncode != 0
    assert len(off.lines("docs/careless.md line")) == len(NEAR_MISSES), off.log

    # Valid markers and near misses in code fences pass --strict.
    (book.docs / "careless.md").write_text(
        "# Fine\n\n::: trace ch_alpha\n\n::: trace ch_alpha asks_price\n\n```\n::: trace\n:::trace x\n```\n"
    )
    fine = book.build("--strict")
    assert fine.returncode == 0, fine.log
    assert not fine.lines("WARNING"), fine.log


@pytest.mark.slow
def test_without_the_renderer_near_misses_are_warned_about_too(tmp_path: Path) -> None:
    book = make_book(tmp_path, pages={"index": "# Home\n\n:::trace ch_beta\n"}, renderer=False)
    done = book.build("--strict")
    assert done.returncode != 0
    # With no extension to take the option, the book's rules are on, and this book breaks
    # them (its chapters' names, scenarios on no page): the page's own warnings are these.
    [warning] = done.lines("traces: docs/")
    assert "docs/index.md line 3:" in warning
    assert "a space must follow `:::`" in warning


def test_the_extension_alone_warns_once_per_near_miss(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    text = "Prose.\n\n::: traces ch01_one_call\n\n:::trace ch01_one_call\n\n```\n::: trace\n```\n"
    html = markdown.markdown(text, extensions=["primer.book.markdown", "fenced_code"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "`::: traces ch01_one_call` looks like a trace marker" in warnings[0]
    assert "a space must follow `:::`" in warnings[1]
    assert all(MARKER_FORM in w for w in warnings)
    assert html.count('role="alert"') == 2
    assert "<code>::: trace\n</code>" in html, "the fenced example is code"

    # The hook's configuration: shown on the page, logged by the hook instead.
    caplog.clear()
    html = markdown.markdown(
        text,
        extensions=["primer.book.markdown", "fenced_code"],
        extension_configs={"primer.book.markdown": {"warn_missing": False}},
    )
    assert html.count('role="alert"') == 2
    assert not caplog.records


def test_one_parser_reads_the_books_own_pages() -> None:
    # Every marker of the real book is valid: none of its lines is a near miss.
    for page in sorted((REPO / "docs").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert [parse_line(line) for line in text.split("\n") if isinstance(parse_line(line), NearMiss)] == []
        assert all(isinstance(m, Marker) for m in scan(text).markers)


# -- duplicate scenario names -------------------------------------------------

DUPLICATE = '''"""Chapter dup: two scenarios, one name."""

from primer.models.mock import say
from primer.scenario import Scenario

greets = Scenario(name="greets", prompt="Greet me.", tools=[], mock=[say("Hi.")])

waves = Scenario(name="waves", prompt="Wave.", tools=[], mock=[say("*waves*")])

greets_again = Scenario(name="greets", prompt="Greet me again.", tools=[], mock=[say("Hi again.")])
'''


def _duplicate_message(module: str, path: Path) -> str:
    return (
        f"The chapter module {module} ({path}) declares two scenarios named 'greets': "
        "`greets` (line 6) and `greets_again` (line 10). Pages, traces and the command line find a "
        "scenario by its name: give each its own."
    )


@pytest.mark.slow
def test_two_scenarios_of_one_name_are_an_error_naming_both_through_the_cli(tmp_path: Path) -> None:
    extra = tmp_path / "more_chapters"
    extra.mkdir()
    (extra / "ch_dup.py").write_text(DUPLICATE)
    # The real command line, with one more folder of chapters in primer.chapters' path.
    script = (
        "import sys, primer.chapters as chapters; chapters.__path__.append(sys.argv[1]); "
        "from primer.cli import main; raise SystemExit(main(sys.argv[2:]))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    for args in (["run", "ch_dup"], ["list"]):
        done = subprocess.run(
            [sys.executable, "-c", script, str(extra), *args],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip() == f"error: {_duplicate_message('primer.chapters.ch_dup', extra / 'ch_dup.py')}"


@pytest.mark.slow
def test_two_scenarios_of_one_name_show_the_error_and_fail_strict(tmp_path: Path) -> None:
    page = "# Dup\n\n::: trace ch_dup\n\n::: trace ch_beta\n"
    book = make_book(tmp_path, {"ch_dup": DUPLICATE, "ch_beta": BETA}, {"index": page})
    done = book.build()
    assert done.returncode == 0, done.log
    expected = _duplicate_message(f"{book.package}.ch_dup", book.chapter("ch_dup"))
    [warning] = done.lines("WARNING")
    assert "ch_dup" in warning
    assert expected in warning
    shown = book.page()
    assert "declares its scenarios wrongly" in shown
    assert "`greets_again` (line 10)" in shown
    assert "scenario greets" in shown, "the other chapter is not held up"
    published = json.loads((book.root / "site" / "traces" / "ch_dup.json").read_text())
    assert [s["name"] for s in published["mock"]["scenarios"]] == ["import"], "no half of the chapter is shown"
    assert book.build("--strict").returncode != 0


def test_a_scenario_bound_to_two_names_is_a_duplicate_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = make_book(tmp_path, {"ch_alias": BETA + "\nsame = greets\n"})
    monkeypatch.syspath_prepend(str(book.root))
    with pytest.raises(ChapterError, match=r"`greets` \(line 6\) and `same` \(line 8\)"):
        Chapters(book.package).scenarios("ch_alias")


# -- names are identifiers -------------------------------------------------------

SLASHED = '''"""Chapter slashed: scenario names that hold a slash."""

from primer.models.mock import say
from primer.scenario import Scenario

raises = Scenario(name="price/of/milk", prompt="Milk?", tools=[], mock=[say("1.20")])
fine = Scenario(name="fine", prompt="Fine?", tools=[], mock=[say("fine")])
'''


def _build_in_process(
    book_root: Path, caplog: pytest.LogCaptureFixture, *, strict: bool = False
) -> list[logging.LogRecord]:
    caplog.clear()
    config = load_config(str(book_root / "mkdocs.yml"), strict=strict)
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    finally:
        config.plugins.on_shutdown()
    return [r for r in caplog.records if r.name.startswith("mkdocs")]


@pytest.mark.slow
def test_a_scenario_name_that_is_not_an_identifier_is_an_error_naming_the_module(tmp_path: Path) -> None:
    book = make_book(tmp_path, {"ch_slashed": SLASHED}, {"index": "# S\n\n::: trace ch_slashed\n"})
    done = book.build()
    assert done.returncode == 0, done.log
    [warning] = [line for line in done.lines("WARNING") if "price/of/milk" in line]
    assert f"{book.package}.ch_slashed" in warning
    assert "lower-case letters, digits and underscores" in warning
    assert "Traceback" not in done.log
    assert not [path for path in (book.root / "site").rglob("*") if "price" in path.name]


@pytest.mark.parametrize("name", ["ch\x1bx", "ch\nx", "ch'x", "ch<img src=x>", "Chapter", "ch-x"])
def test_a_chapter_module_whose_name_is_not_an_identifier_is_an_error_naming_it(tmp_path: Path, name: str) -> None:
    package = tmp_path / "oddly_named_chapters"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ch_fine.py").write_text("")
    (package / f"{name}.py").write_text("")
    with pytest.raises(ChapterError) as caught:
        chapter_names_in([str(package)])
    assert repr(name) in str(caught.value)
    assert str(package) in str(caught.value)


# -- numbers that are not finite --------------------------------------------------


def _run_json(total: str) -> bytes:
    scenario = ScenarioRun(name="s", mode="mock", ending=Ending(reason="no_tool_calls"))
    text = ChapterRun(chapter="ch", mode="mock", scenarios=[scenario]).model_dump_json()
    return text.replace('"total_ms":0.0', f'"total_ms":{total}', 1).encode()


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_number_is_a_corrupt_file_naming_file_and_field(tmp_path: Path, token: str) -> None:
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    path = store.path("ch", "mock")
    path.parent.mkdir(parents=True)
    path.write_bytes(_run_json(token))
    with pytest.raises(CorruptTrace) as caught:
        store.load("ch", "mock")
    assert str(caught.value) == (
        f"The trace file {path} could not be read: the field scenarios.0.timing.total_ms holds {token}, "
        f"and a trace holds only finite numbers. {RESTORE}"
    )


def test_a_non_finite_number_anywhere_is_found(tmp_path: Path) -> None:
    # In a recorded body too, which the schema does not type; and an overflow is infinite.
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    path = store.path("ch", "mock")
    path.parent.mkdir(parents=True)
    path.write_bytes(_run_json("0").replace(b'"settings":{}', b'"settings":{"temperature":[1, NaN]}', 1))
    with pytest.raises(CorruptTrace, match=r"the field scenarios\.0\.settings\.temperature\.1 holds NaN"):
        store.load("ch", "mock")
    path.write_bytes(_run_json("1e999"))
    with pytest.raises(CorruptTrace, match=r"at scenarios\.0\.timing\.total_ms: Input should be a finite number"):
        store.load("ch", "mock")


@pytest.mark.slow
def test_a_trace_file_with_nan_is_reported_and_run_again(tmp_path: Path) -> None:
    book = make_book(tmp_path)
    assert book.build().returncode == 0
    cache = book.mock_file("ch_alpha")
    raw = json.loads(cache.read_text())
    raw["scenarios"][1]["turns"][0]["timing"]["total_ms"] = float("nan")
    cache.write_text(json.dumps(raw))  # Python writes NaN, as a careless tool would
    (book.entry("ch_alpha") / "shown.json").unlink()  # a build that finds its entry whole reads no trace: this one must

    # The build's own cache, repaired as it goes: said, and nothing for --strict to fail on.
    done = book.build("--strict")
    assert done.returncode == 0, done.log
    assert not done.lines("WARNING")
    [said] = [line for line in done.lines("INFO") if "runs again and is replaced" in line]
    assert str(cache) in said
    assert "the field scenarios.1.turns.0.timing.total_ms holds NaN" in said
    assert done.count() == "traces: ran 2, reused 1"
    assert "NaN" not in cache.read_text()
    assert "nanms" not in book.page()
    assert book.build("--strict").returncode == 0


# -- stale temporary files ----------------------------------------------------------


@pytest.mark.skipif(os.name != "posix", reason="killed with SIGKILL")
def test_a_killed_writes_temporary_file_goes_on_the_next_write_of_its_target(tmp_path: Path) -> None:
    path = tmp_path / "ch.live.json"
    other = tmp_path / "other.json"
    write_if_changed(path, "old")
    write_if_changed(other, "other")
    left = killed_writer(path)
    others = killed_writer(other)
    assert left.name.startswith(".ch.live.json.")
    assert left.name.endswith(TEMP_SUFFIX)
    # A write under way in a living process (this one's parent, say) is left alone.
    busy = tmp_path / f".ch.live.json.{os.getppid()}-busy1234{TEMP_SUFFIX}"
    busy.write_text("half")
    own = tmp_path / f".ch.live.json{TEMP_SUFFIX}"  # an author's dotfile, however old, is not ours
    own.write_text("mine")
    os.utime(own, (time.time() - STALE_AFTER - 60,) * 2)

    assert write_if_changed(path, "old") is False
    assert left.exists(), "no write, nothing removed"
    assert write_if_changed(path, "new") is True
    assert path.read_text() == "new"
    assert not left.exists()
    assert busy.exists()
    assert others.exists(), "another target's leftovers wait for its own next write"

    # Whoever wrote it, an hour-old temporary file is stale.
    old = time.time() - STALE_AFTER - 60
    os.utime(busy, (old, old))
    write_if_changed(path, "newer")
    assert not busy.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, other.name, others.name, own.name])


def test_git_ignores_temporary_files(tmp_path: Path) -> None:
    # The repository's own .gitignore, in a repository of its own: the check
    # runs in a fresh clone, an unpacked archive or a checkout alike.
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "--quiet", str(tmp_path)], check=True, capture_output=True, timeout=30)
    temp = f"docs/traces/.ch09_who_retries.live.json.4242-abcd1234{TEMP_SUFFIX}"
    ignored = subprocess.run(
        ["git", "check-ignore", "--quiet", temp], cwd=tmp_path, check=False, capture_output=True, timeout=30
    )
    assert ignored.returncode == 0
    kept = subprocess.run(
        ["git", "check-ignore", "--quiet", "docs/traces/ch09_who_retries.live.json"],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        timeout=30,
    )
    assert kept.returncode == 1, "the trace itself is committed"


# -- empty settings -----------------------------------------------------------------


@pytest.mark.parametrize("variable", VARIABLES.values())
def test_an_empty_variable_stops_the_cli_naming_it(variable: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    done = subprocess.run(
        [sys.executable, "-m", "primer", "run", "ch01_one_call"],
        cwd=REPO,
        env={**env, variable: ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert re.fullmatch(rf"error: {variable} is set but empty\. [^\n]* unset it [^\n]*\.\n", done.stderr), done.stderr


@pytest.mark.slow
def test_an_empty_variable_is_a_build_warning_naming_it(tmp_path: Path) -> None:
    book = make_book(tmp_path)
    done = book.build("--strict", PRIMER_MODEL="")
    assert done.returncode != 0
    [warning] = done.lines("WARNING")
    assert "PRIMER_MODEL is set but empty. Give it a value, or unset it for the default (gpt-4o-mini)." in warning
    assert "Live runs are off for this build." in warning


def test_the_publish_workflow_unsets_repository_variables_it_does_not_have(tmp_path: Path) -> None:
    # GitHub expands a variable or secret that is not defined to "": the
    # refresh step must not hand those to the build as empty values.
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "publish.yml").read_text(encoding="utf-8"))
    [step] = [s for s in workflow["jobs"]["refresh"]["steps"] if s.get("name") == "Refresh live traces"]
    probe = f'{sys.executable} -c "from primer.settings import Settings; print(Settings.from_env().model)"'
    script = f"mkdocs() {{ {probe}; }}\n{step['run']}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update({name: "" for name in step["env"] if name not in ("PRIMER_API_KEY", "PRIMER_LIVE")})
    env.update(PRIMER_API_KEY="sk-test-0123456789abcdef", PRIMER_LIVE="auto", RUNNER_TEMP=str(tmp_path))
    done = subprocess.run(
        ["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gpt-4o-mini"


# -- corrupt files ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            '{"schema_version": 1, "chapter": "ch", "mo',
            "it is not valid JSON (Unterminated string at line 1, column 40)",
        ),
        ("{not json", "it is not valid JSON (Expecting property name enclosed in double quotes at line 1, column 2)"),
        ("[]", "it holds an array, where a trace file holds a JSON object"),
        ("null", "it holds a bare null, where a trace file holds a JSON object"),
        ('{"chapter": "ch"}', "it has no schema_version, and this version of primer reads versions 1, 2 and 3"),
        ('{"schema_version": 7}', "its schema version is 7, and this version of primer reads versions 1, 2 and 3"),
        ('{"schema_version": "1"}', "its schema version is '1', and this version of primer reads versions 1, 2 and 3"),
        (
            '{"schema_version": 1, "chapter": "ch", "mode": "mock", "surprise": 1}',
            "1 field does not fit the trace schema, at surprise: Extra inputs are not permitted",
        ),
        (
            '{"schema_version": 1, "chapter": "ch", "mode": "both", "surprise": 1}',
            "2 fields do not fit the trace schema, the first at mode: Input should be 'mock' or 'live'",
        ),
    ],
)
def test_corrupt_file_messages_read_correctly(tmp_path: Path, content: str, reason: str) -> None:
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    path = store.path("ch", "mock")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(CorruptTrace) as caught:
        store.load("ch", "mock")
    advice = UPGRADE if "is 7" in reason else RESTORE  # what to do: a newer primer wrote version 7
    assert str(caught.value) == f"The trace file {path} could not be read: {reason}. {advice}"


# -- a refresh in which the model misbehaved ---------------------------------------------

REFRESHED = '''"""Chapter refreshed: one price asked for."""

from primer.grocery import PRICES, PriceOf
from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.tools import ToolContext, tool


@tool(PriceOf)
def price_of(args: PriceOf, ctx: ToolContext) -> str:
    """Look the price up on the shelf list."""
    return PRICES[args.item]


asks_price = Scenario(
    name="asks_price",
    prompt="How much is milk?",
    tools=[price_of],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)
'''


def test_anomalies_are_what_no_tool_could_act_on() -> None:
    from primer.trace import Message, ModelCall, ToolCall, Turn

    reply = Message(
        role="ai",
        tool_calls=[
            ToolCall(id="1", name="price_of", raw_arguments="{milk"),
            ToolCall(id="2", name="teleport\x1b[2J"),
            ToolCall(id="3", name="price_of", arguments={"item": "milk"}),
        ],
    )
    turn = Turn(number=1, model_call=ModelCall(kind="live", context=[], reply=reply))
    run = ScenarioRun(name="s", mode="live", tools=["price_of"], turns=[turn], ending=Ending(reason="no_tool_calls"))
    assert anomalies(run) == [
        "sent ['price_of'] arguments that are not a JSON object",
        "asked for ['teleport\\x1b[2J'], a tool it was not given",
    ]
    # The terminal says so under the scenario's line, as the build warns of it.
    from primer.cli import summary_lines
    from primer.trace import ChapterRun

    lines = summary_lines(ChapterRun(chapter="ch01_x", mode="live", model="m", scenarios=[run]))
    assert lines[3:5] == [f"  note: the model {what}" for what in anomalies(run)]


@pytest.mark.slow
def test_a_refresh_that_brings_a_model_anomaly_says_so(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    replay_provider: ReplayProvider,
    httpbin: LocalHttpbin,
) -> None:
    book = make_book(tmp_path, {"ch_refreshed": REFRESHED}, {"index": "# R\n\n::: trace ch_refreshed\n"})
    monkeypatch.syspath_prepend(str(book.root))
    settings = live_settings(
        replay_provider, httpbin, api_key="sk-test-0123456789abcdef", service_key="svc-test-0123456789"
    )
    registered = Book(book.docs, book.root / ".cache" / "traces", chapters=Chapters(book.package), settings=settings)
    hook_plugin().book = registered
    caplog.set_level(logging.INFO, logger="mkdocs")
    frozen = book.docs / "traces" / "ch_refreshed.live.json"

    def answers(*tool_calls: tuple[str, object]) -> None:
        replay_provider.reply(ReplayProvider.completion(tool_calls=list(tool_calls)))  # type: ignore[arg-type]
        replay_provider.reply(ReplayProvider.completion("Milk is 1.20."))

    def anomaly_warnings(records: list[logging.LogRecord]) -> list[str]:
        return [r.getMessage() for r in records if r.levelno == logging.WARNING and "refreshed trace" in r.getMessage()]

    try:
        # Recorded first with a well-behaved model.
        answers(("price_of", {"item": "milk"}))
        records = _build_in_process(book.root, caplog)
        assert frozen.exists()
        assert not [r for r in records if r.levelno >= logging.WARNING], [r.getMessage() for r in records]

        # Refreshed: now the model sends broken arguments and names a tool it was not given.
        registered.settings = settings.model_copy(update={"live": "refresh"})
        answers(("price_of", "{'item': milk"), ("teleport", {"to": "moon"}))
        with pytest.raises(Abort):  # a warning: --strict does not publish it unseen
            _build_in_process(book.root, caplog, strict=True)
        [warning] = anomaly_warnings([r for r in caplog.records if r.name.startswith("mkdocs")])
        assert warning.startswith("traces: ch_refreshed / asks_price (live): in the refreshed trace the model ")
        assert "sent ['price_of'] arguments that are not a JSON object" in warning
        assert "asked for ['teleport'], a tool it was not given" in warning
        assert "which the frozen trace did not show" in warning
        assert str(frozen) in warning
        replaced = ChapterRun.model_validate_json(frozen.read_text())
        assert anomalies(replaced.scenario("asks_price")), "the refresh did replace the trace"

        # Refreshed again with the same behaviour: the frozen trace had it, nothing new to say.
        answers(("price_of", "{'item': milk"), ("teleport", {"to": "moon"}))
        assert anomaly_warnings(_build_in_process(book.root, caplog)) == []
    finally:
        hook_plugin().book = None
