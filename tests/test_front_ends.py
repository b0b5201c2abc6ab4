"""One engine, three front ends: MkDocs, ProperDocs and Zensical build the same book.

Each builds a copy of this repository's book from its own ``mkdocs.yml``,
with no other step, one after the other in the same folder (so they share
the mock traces the first one ran: mock timings are measured, and differ
between two runs). The first, MkDocs', is the session's ``built_book``
(tests/conftest.py), copied with its cache. The trace blocks of every page and the published
``traces/CHAPTER.json`` must be the same, frozen live traces included.

Normalised, because the tool itself rewrites it: Zensical drops the
``data-search-exclude`` attribute from the HTML it writes (its search reads
the attribute while indexing, then removes it). Nothing else is.

The run step as a command (``python -m primer.book build``) publishes the
same JSON, and its exit code is the strict check a Zensical build lacks.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.books import copy_the_book

pytestmark = pytest.mark.slow

#: What Zensical rewrites in the HTML it writes (see the module's docstring).
ZENSICAL_REWRITES = (" data-search-exclude", "")

BROKEN = "\n::: trace ch01_one_call no_such_scenario\n\n:::trace ch01_one_call\n"


class TraceBlocks(HTMLParser):
    """The outer HTML of every top-level trace block of a page, as written."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=False)
        self.text = text
        self.blocks: list[str] = []
        self._starts = [0]
        for line in text.splitlines(keepends=True):
            self._starts.append(self._starts[-1] + len(line))
        self._start: int | None = None
        self._depth = 0
        self.feed(text)

    def _offset(self) -> int:
        line, column = self.getpos()
        return self._starts[line - 1] + column

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "div":
            return
        if self._start is not None:
            self._depth += 1
        elif {"tr-chapter", "tr-failed"} & set((dict(attrs).get("class") or "").split()):
            self._start, self._depth = self._offset(), 1

    def handle_endtag(self, tag: str) -> None:
        if tag != "div" or self._start is None:
            return
        self._depth -= 1
        if self._depth == 0:
            end = self.text.index(">", self._offset()) + 1
            self.blocks.append(self.text[self._start : end])
            self._start = None


def trace_blocks(site: Path, rewrites: tuple[str, str] | None = None) -> dict[str, list[str]]:
    found = {}
    for page in sorted(site.rglob("*.html")):
        blocks = TraceBlocks(page.read_text(encoding="utf-8")).blocks
        if rewrites is not None:
            blocks = [block.replace(*rewrites) for block in blocks]
        if blocks:
            found[page.relative_to(site).as_posix()] = blocks
    return found


def published(folder: Path) -> dict[str, bytes]:
    # traces/CHAPTER.json, both modes, and CHAPTER.otlp.json beside it (mock spans at a fixed moment, so
    # the same traces give the same bytes), and the payload page CHAPTER.payloads.html; never the frozen
    # CHAPTER.live.json.
    files = [*folder.glob("*.json"), *folder.glob("*.payloads.html")]
    return {p.name: p.read_bytes() for p in sorted(files) if not p.name.endswith(".live.json")}


def run(book: Path, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    # The copy's library, whichever tool runs: they all import the same code.
    env.update(PYTHONPATH=str(book), NO_MKDOCS_2_WARNING="1", **extra)
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=book, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def warm_copy(built_book: tuple[Path, str], target: Path) -> Path:
    """A copy of the session's built book (``built_book``) without its site: the builds it ran are in its cache."""
    site, _ = built_book
    shutil.copytree(site.parent, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("site", "build.log"))
    return target


@pytest.fixture(scope="module")
def three_builds(built_book: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    # MkDocs' build is the session's own (``mkdocs build --strict`` of a copy of the book, as
    # here), its site and cache copied: the other two then build after it in the same folder.
    book = warm_copy(built_book, tmp_path_factory.mktemp("book"))
    shutil.copytree(built_book[0], book / "site_mkdocs")
    for command in (
        ("properdocs", "build", "--strict", "--config-file", "mkdocs.yml", "--site-dir", "site_properdocs"),
        ("zensical", "build"),  # into mkdocs.yml's site_dir: site
    ):
        done = run(book, *command)
        assert done.returncode == 0, done.stdout + done.stderr
    return book


def test_the_three_front_ends_show_the_same_traces(three_builds: Path) -> None:
    mkdocs = trace_blocks(three_builds / "site_mkdocs")
    assert trace_blocks(three_builds / "site_properdocs") == mkdocs
    # MkDocs' blocks as Zensical would write them.
    assert trace_blocks(three_builds / "site") == trace_blocks(three_builds / "site_mkdocs", ZENSICAL_REWRITES)
    # Every chapter page has its traces; the frozen live traces are among them.
    assert {page.split("/")[0] for page in mkdocs} >= {"ch01_one_call", "ch05_loop_endings", "ch09_who_retries"}
    for chapter in ("ch05_loop_endings", "ch09_who_retries"):
        head = mkdocs[f"{chapter}/index.html"][0]
        assert 'class="tr-total" data-mode="live"' in head, f"{chapter}: the frozen live trace is shown"
        assert f'href="../traces/{chapter}.json"' in head, "the JSON link is relative to the page"


def test_the_three_front_ends_publish_the_same_trace_json(three_builds: Path) -> None:
    mkdocs = published(three_builds / "site_mkdocs" / "traces")
    chapters = [page.stem for page in (three_builds / "docs").glob("ch*.md")]
    kinds = (".json", ".otlp.json", ".payloads.html")
    assert sorted(mkdocs) == sorted(f"{chapter}{kind}" for chapter in chapters for kind in kinds)
    assert published(three_builds / "site_properdocs" / "traces") == mkdocs
    assert published(three_builds / "site" / "traces") == mkdocs


def test_no_front_end_publishes_the_raw_live_traces_and_each_has_the_assets(three_builds: Path) -> None:
    for site in ("site_mkdocs", "site_properdocs", "site"):
        assert not list((three_builds / site).rglob("*.live.json")), site
        for asset in ("traces.css", "traces.js"):
            served = three_builds / site / "assets" / "trace-book" / asset
            assert served.read_bytes() == (three_builds / "primer" / "book" / "assets" / asset).read_bytes(), site
        page = (three_builds / site / "ch09_who_retries" / "index.html").read_text(encoding="utf-8")
        assert page.count("assets/trace-book/traces.css") == 1, f"{site}: the stylesheet once"
        assert page.count("assets/trace-book/traces.js") == 1, f"{site}: the script once"


def test_the_run_step_command_publishes_what_the_hook_does(three_builds: Path) -> None:
    generated = three_builds / "docs" / "traces"
    for path in generated.glob("*.json"):
        if not path.name.endswith(".live.json"):
            path.unlink()
    done = run(three_builds, "primer.book", "build", "--strict")
    assert done.returncode == 0, done.stderr
    assert "traces: ran 0, reused " in done.stderr, "the store the builds filled is reused"
    assert published(generated) == published(three_builds / "site_mkdocs" / "traces")


def test_a_broken_marker_fails_every_strict_check(built_book: tuple[Path, str], tmp_path: Path) -> None:
    book = warm_copy(built_book, tmp_path)  # warm: what is checked is the pages' markers
    with (book / "docs" / "index.md").open("a", encoding="utf-8") as page:
        page.write(BROKEN)
    for command in (
        ("mkdocs", "build", "--strict"),
        ("properdocs", "build", "--strict", "--config-file", "mkdocs.yml"),
        ("primer.book", "build", "--strict"),
    ):
        done = run(book, *command)
        log = done.stdout + done.stderr
        assert done.returncode == 1, f"{command[0]}: {log}"
        assert "docs/index.md line" in log
        assert "no_such_scenario" in log
        assert "looks like a trace marker but is not one" in log
    # Zensical does not count an extension's warnings: it shows them, and the command above is its strict check.
    done = run(book, "zensical", "build")
    assert done.returncode == 0
    assert "looks like a trace marker but is not one" in done.stdout + done.stderr


def test_with_traces_off_every_front_end_shows_the_placeholders_and_runs_nothing(tmp_path: Path) -> None:
    book = copy_the_book(tmp_path)
    pages = {}
    for command, site in (
        (("mkdocs", "build", "--strict", "--site-dir", "site_mkdocs"), "site_mkdocs"),
        (("properdocs", "build", "--strict", "--config-file", "mkdocs.yml", "--site-dir", "site_properdocs"), None),
        (("zensical", "build"), "site"),  # runs no hook: the extension reads PRIMER_TRACES itself
    ):
        done = run(book, *command, PRIMER_TRACES="off")
        assert done.returncode == 0, done.stdout + done.stderr
        page = (book / (site or "site_properdocs") / "ch09_who_retries" / "index.html").read_text(encoding="utf-8")
        pages[command[0]] = [line for line in page.splitlines() if "primer-traces-off" in line]
        assert not trace_blocks(book / (site or "site_properdocs")), f"{command[0]}: no trace and no error block"
        # The stylesheet and script mkdocs.yml names are published: the page links them (and styles the note).
        folder = book / (site or "site_properdocs") / "ch09_who_retries"
        linked = re.findall(r'(?:href|src)="([^"]*assets/trace-book/[^"?]*)', page)
        assert len(linked) == 2, linked
        assert [link for link in linked if not (folder / link).resolve().is_file()] == [], command[0]
    assert pages["mkdocs"], "a placeholder for each marker"
    assert pages["properdocs"] == pages["mkdocs"]
    assert pages["zensical"] == pages["mkdocs"]
    assert not (book / ".cache" / "trace-book").exists(), "nothing ran (.cache itself is Zensical's page cache)"
