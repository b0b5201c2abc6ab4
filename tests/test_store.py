"""The trace store and the parts under it: atomic writes, trace files, dependency hashes, pages, the pool."""

from __future__ import annotations

import ast
import concurrent.futures
import errno
import importlib
import json
import os
import shutil
import sys
import threading
import time
import types
from concurrent.futures import Future
from pathlib import Path

import pytest

from primer import live_pool as run_module
from primer.book import _cache as cache_module
from primer.book._book import Book, Prepared, Report
from primer.book._cache import CorruptTrace, TraceCache
from primer.book._chapters import Chapters
from primer.book._markers import Marker, check, scan
from primer.book._publish import publish
from primer.book._render import render_payloads, render_traces
from primer.book._source import ChapterTraces, LiveStatus, Shown
from primer.errors import NotFound
from primer.files import TEMP_SUFFIX, write_if_changed, write_new
from primer.fingerprint import CodeGraph
from primer.live_pool import run_bounded
from primer.settings import Settings
from primer.trace import ChapterRun, Ending, ScenarioRun
from tests.books import ALPHA, BETA, REPO, edit, shown_of
from tests.killed_writer import killed_writer


def _run(chapter: str = "ch", mode: str = "mock", names: tuple[str, ...] = ("one",)) -> ChapterRun:
    return ChapterRun(
        chapter=chapter,
        mode=mode,  # type: ignore[arg-type]
        source_hash="abc",
        scenarios=[ScenarioRun(name=n, mode=mode, ending=Ending(reason="no_tool_calls")) for n in names],  # type: ignore[arg-type]
    )


# -- atomic writes ------------------------------------------------------------


def _traces(url=None):
    return ChapterTraces("ch", _run(), None, LiveStatus("missing", "no key"), "traces/ch.json", url)


def test_write_if_changed_writes_only_changes(tmp_path):
    path = tmp_path / "deep" / "trace.json"
    assert write_if_changed(path, "one") is True
    stamp = path.stat().st_mtime_ns
    time.sleep(0.01)
    assert write_if_changed(path, b"one") is False
    assert path.stat().st_mtime_ns == stamp
    assert write_if_changed(path, "two") is True
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["trace.json"]


def test_a_failure_in_the_middle_of_a_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "trace.json"
    write_if_changed(path, "old content")

    def full(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="disk full"):
        write_if_changed(path, "new content")
    assert path.read_text() == "old content"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"], "the temporary file is cleaned up"


def test_a_process_killed_in_the_middle_of_a_write_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "trace.json"
    write_if_changed(path, "old content")
    # The writer is killed outright (no cleanup runs) with its bytes on disk, before the rename.
    left = killed_writer(path, size=100_000)
    assert path.read_text() == "old content"
    # ...as a dotfile, which MkDocs never publishes, and never under the target's name.
    assert left.name.startswith(".")
    assert left.name.endswith(TEMP_SUFFIX)
    assert left.stat().st_size == 100_000


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text("old")
    path.chmod(0o640)
    write_if_changed(path, "new")
    assert path.stat().st_mode & 0o777 == 0o640
    # A new file is made as open() makes one: what the umask leaves of 0o666 (it was 0o644 whatever the umask, so
    # under umask 077 an export or a live trace was readable by every user).
    for umask, expected in ((0o022, 0o644), (0o077, 0o600)):
        fresh = tmp_path / f"fresh-{umask:o}.json"
        before = os.umask(umask)
        try:
            write_if_changed(fresh, "x")
        finally:
            os.umask(before)
        assert fresh.stat().st_mode & 0o777 == expected


# -- trace files --------------------------------------------------------------


def test_the_store_round_trips_and_keeps_modes_apart(tmp_path):
    store = TraceCache(tmp_path / ".cache", tmp_path / "docs" / "traces")
    assert store.load("ch", "mock", "abc") is None
    assert store.save(_run()) is True
    assert store.save(_run("ch", "live")) is True
    assert store.path("ch", "live").parent == tmp_path / "docs" / "traces"
    # The mock run, by its code and the distributions installed.
    assert (tmp_path / ".cache" / "ch" / store.mock_name("abc") / "mock.json").is_file()
    assert store.mock_name("abc").startswith("mock-abc-")
    # A new cache reads what the first wrote; a mock run by its own code only.
    again = TraceCache(tmp_path / ".cache", tmp_path / "docs" / "traces")
    assert again.load("ch", "live") == _run("ch", "live")
    assert again.load("ch", "mock", "abc") == _run()
    assert again.load("ch", "mock", "other") is None
    assert again.save(_run("ch", "live")) is False


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"schema_version": 7, "chapter": "ch", "mode": "mock"}', "schema version is 7"),
        ('{"schema_version": 1, "chapter": "ch", "mode": "mock", "surprise": 1}', "does not fit the trace schema"),
        ("[]", "it holds an array, where a trace file holds a JSON object"),
    ],
)
def test_a_corrupt_file_is_an_error_naming_it(tmp_path, content, reason):
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    path = tmp_path / "cache" / "ch" / store.mock_name("k") / "mock.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(CorruptTrace) as caught:
        store.load("ch", "mock", "k")
    assert str(path) in str(caught.value)
    assert reason in str(caught.value)


def test_a_file_holding_another_chapter_is_corrupt(tmp_path):
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    store.save(_run("other", "live"))
    store.path("other", "live").rename(store.path("ch", "live"))
    with pytest.raises(CorruptTrace, match="trace of other"):
        TraceCache(tmp_path / "cache", tmp_path / "live").load("ch", "live")


def shown(store: TraceCache, chapter: Shown, runs: ChapterTraces | None = None) -> Prepared:
    """What a build shows of this chapter, with its runs (None: read from its entry)."""
    return Prepared(Report(), {chapter.chapter: chapter}, store, runs={chapter.chapter: runs} if runs else None)


def test_the_prepared_value_is_the_renderers_source_and_the_store_publishes_both_modes(tmp_path):
    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    traces = ChapterTraces("ch", _run(), _run("ch", "live"), LiveStatus("stale", "older code"), "traces/ch.json")
    prepared = shown(store, shown_of(traces), traces)
    assert prepared.traces("ch") is traces
    with pytest.raises(NotFound, match="The chapters are: ch"):
        prepared.traces("nope")
    published, otlp, _page = publish(tmp_path / "site", prepared, {})
    assert published == tmp_path / "site" / "traces" / "ch.json"
    assert otlp == tmp_path / "site" / "traces" / "ch.otlp.json"  # beside it, for OpenTelemetry tools
    document = json.loads(published.read_text())
    assert document["live_status"] == {"state": "stale", "reason": "older code", "failure": None}
    assert ChapterRun.model_validate(document["live"]) == _run("ch", "live")


def test_the_store_publishes_each_chapters_payload_page_and_removes_a_gone_chapters_own(tmp_path):
    from primer.book._render import render_payloads

    store = TraceCache(tmp_path / "cache", tmp_path / "live")
    url = "traces/ch.payloads.html"
    prepared = shown(store, Shown("ch", "k1", "abc", ("one",), None, LiveStatus("missing", "no key")), _traces(url))
    folder = tmp_path / "site" / "traces"
    folder.mkdir(parents=True)
    (folder / "gone.payloads.html").write_text(
        render_payloads(ChapterTraces("gone", _run("gone"), None, LiveStatus("missing")))
    )
    (folder / "mine.payloads.html").write_text("<p>an author's own page</p>")
    written = publish(tmp_path / "site", prepared, {"ch": "ch/"})
    page = folder / "ch.payloads.html"
    assert page in written
    assert page.read_text() == render_payloads(prepared.traces("ch"), page_url="ch/")
    assert not (folder / "gone.payloads.html").exists()  # a chapter no longer shown
    assert (folder / "mine.payloads.html").exists()  # not the book's
    # Another site, the same key and page: the copy kept in the entry, not made again.
    [kept] = (tmp_path / "cache" / "ch" / "k1").glob("payloads-*.html")
    kept.write_text("<p>kept</p>")
    assert publish(tmp_path / "site2", prepared, {"ch": "ch/"})[-1].read_text() == "<p>kept</p>"
    # Another page to link back to is another payload page: made again.
    publish(tmp_path / "site3", prepared, {"ch": "other/"})
    again = (tmp_path / "site3" / "traces" / "ch.payloads.html").read_text()
    assert again == render_payloads(prepared.traces("ch"), page_url="other/")


def test_the_otlp_json_is_the_same_in_every_build_and_kept_in_the_entry(tmp_path):
    traces = ChapterTraces("ch", _run(), _run("ch", "live"), LiveStatus("current"), "traces/ch.json")
    first = TraceCache(tmp_path / "cache", tmp_path / "live")
    (_, otlp, _) = publish(tmp_path / "site1", shown(first, shown_of(traces, "k1"), traces), {})
    made = otlp.read_bytes()
    assert b'"startTimeUnixNano":"946684800' in made  # the mock scenario, at the fixed MOCK_EPOCH (2000-01-01)
    cached = tmp_path / "cache" / "ch" / "k1" / "otlp.json"
    assert cached.read_bytes() == made
    # A new process (a new store) reads the entry instead of encoding the spans again...
    cached.write_text("from the cache\n", encoding="utf-8")
    second = TraceCache(tmp_path / "cache", tmp_path / "live")
    published = publish(tmp_path / "site2", shown(second, shown_of(traces, "k1"), traces), {})
    assert published[1].read_text(encoding="utf-8") == "from the cache\n"
    # ...and without its entry, made again, byte for byte.
    cached.unlink()
    third = TraceCache(tmp_path / "cache", tmp_path / "live")
    assert publish(tmp_path / "site3", shown(third, shown_of(traces, "k1"), traces), {})[1].read_bytes() == made


def test_a_chapter_shown_from_its_entry_reads_its_runs_only_when_asked(tmp_path):
    first = TraceCache(tmp_path / "cache", tmp_path / "live")
    first.save(_run())
    first.save(_run("ch", "live"))
    kept = Shown("ch", "k1", "abc", ("one",), ("one",), LiveStatus("current"))
    second = TraceCache(tmp_path / "cache", tmp_path / "live")
    prepared = shown(second, kept)
    assert prepared.summary("ch") == kept
    traces = prepared.traces("ch")
    assert (traces.mock, traces.live) == (_run(), _run("ch", "live"))
    assert traces.download_url == "traces/ch.json"


# -- what a chapter depends on ------------------------------------------------


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``pkg_deps`` with a library module and a chapters subpackage."""
    name = f"pkg_deps_{os.getpid()}_{time.monotonic_ns()}"
    root = tmp_path / name
    (root / "chapters").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "lib.py").write_text("VALUE = 1\n")
    (root / "unrelated.py").write_text("OTHER = 1\n")
    (root / "chapters" / "__init__.py").write_text("")
    (root / "chapters" / "_helper.py").write_text("from .. import lib\nHELP = lib.VALUE\n")
    (root / "chapters" / "ch_one.py").write_text(
        "from primer.models.mock import say\nfrom primer.scenario import Scenario\n"
        "from . import _helper\n\n"
        "def later():\n    from primer.book import _source  # the book machinery is no dependency\n\n"
        "greets = Scenario(name='greets', prompt='Hi', tools=[], mock=[say(f'value {_helper.HELP}')])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, root


def test_the_dependencies_follow_imports_as_written(package):
    name, root = package
    graph = CodeGraph([name, "primer"])
    files = [Path(module[0]) for module in graph.modules(f"{name}.chapters.ch_one").values()]
    assert root / "chapters" / "_helper.py" in files
    assert root / "lib.py" in files
    assert REPO / "primer" / "scenario.py" in files
    assert root / "unrelated.py" not in files
    assert not any("book" in p.parts for p in files), "primer.book is left out"

    key = graph.fingerprint(f"{name}.chapters.ch_one")
    edit(root / "unrelated.py", "OTHER = 1", "OTHER = 2")
    assert graph.fingerprint(f"{name}.chapters.ch_one") == key
    edit(root / "lib.py", "VALUE = 1", "VALUE = 2")
    assert graph.fingerprint(f"{name}.chapters.ch_one") != key


def test_a_new_process_parses_only_the_modules_edited_since(package, tmp_path, monkeypatch):
    name, root = package
    cache = tmp_path / "imports.json"
    module = f"{name}.chapters.ch_one"
    key = CodeGraph([name, "primer"], imports_cache=cache).fingerprint(module)
    assert cache.is_file()

    parsed: list[str] = []
    real = ast.parse

    def counted(source, filename="<unknown>", *args, **kwargs):
        parsed.append(str(filename))
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counted)
    assert CodeGraph([name, "primer"], imports_cache=cache).fingerprint(module) == key
    assert parsed == []

    edit(root / "lib.py", "VALUE = 1", "import json\nVALUE = 2")
    graph = CodeGraph([name, "primer"], imports_cache=cache)
    assert graph.fingerprint(module) != key
    assert parsed == [str(root / "lib.py")]
    # Each file once, kept by content: a corrupt cache is only a slower start.
    cache.write_text("{not json")
    assert CodeGraph([name, "primer"], imports_cache=cache).fingerprint(module) == graph.fingerprint(module)


def test_a_snapshot_looks_at_the_files_once(package):
    name, root = package
    graph = CodeGraph([name, "primer"])
    module = f"{name}.chapters.ch_one"
    key = graph.fingerprint(module)
    with graph.snapshot():
        assert graph.fingerprint(module) == key
        edit(root / "lib.py", "VALUE = 1", "VALUE = 22")
        assert graph.fingerprint(module) == key, "one build, one look"
    assert graph.fingerprint(module) != key, "the next build sees the save"


def test_a_rebuild_with_nothing_changed_reads_and_validates_nothing(package, tmp_path, monkeypatch):
    name, _root = package
    book = Book(tmp_path / "docs", tmp_path / ".cache", chapters=Chapters(f"{name}.chapters"), settings=Settings())
    assert book.prepare().report.ran == 1

    def refuse(*args, **kwargs):
        raise AssertionError("a rebuild after a prose edit must not parse a trace or a module")

    monkeypatch.setattr(cache_module, "parse", refuse)
    monkeypatch.setattr(ast, "parse", refuse)
    prepared = book.prepare()
    assert (prepared.report.ran, prepared.report.reused) == (0, 1)
    assert not prepared.by_chapter["ch_one"].warnings


@pytest.mark.slow
def test_a_serve_session_sees_edited_chapters_and_library_code(package, tmp_path):
    name, root = package
    chapters = Chapters(f"{name}.chapters")
    assert chapters.names() == ["ch_one"], "modules starting with _ are helpers, not chapters"
    book = Book(tmp_path / "docs", tmp_path / ".cache", chapters=chapters, settings=Settings())

    def said() -> str:
        mock = prepared.traces("ch_one").mock
        assert mock is not None
        return mock.scenarios[0].transcript[-1].content or ""

    prepared = book.prepare()
    assert prepared.report.ran == 1
    assert said() == "value 1"
    assert book.prepare().report.ran == 0
    # Bytecode of the first import predates any watching; a re-import must write none.
    for cache in root.rglob("__pycache__"):
        shutil.rmtree(cache)

    # An edited helper of the chapters' package is re-imported in this process.
    edit(root / "chapters" / "_helper.py", "HELP = lib.VALUE", "HELP = lib.VALUE * 10")
    prepared = book.prepare()
    assert prepared.report.ran == 1
    assert said() == "value 10"

    # An edited library module cannot be: the chapter runs in a fresh interpreter.
    edit(root / "lib.py", "VALUE = 1", "VALUE = 3")
    prepared = book.prepare()
    assert prepared.report.ran == 1
    assert said() == "value 30"
    assert not list(root.rglob("*.pyc")), "no bytecode written into watched folders"

    # One that breaks the chapter's import there is said as one here: the module, the error, the line.
    edit(root / "lib.py", "VALUE = 3", "VALUE = 4\nraise RuntimeError('no value today')")
    prepared = book.prepare()
    [failure] = prepared.by_chapter["ch_one"].warnings
    assert failure == (
        f"traces: The chapter module {name}.chapters.ch_one could not be imported. RuntimeError: no value today "
        f"({root / 'lib.py'}, line 2). Its pages show the error."
    )
    mock = prepared.traces("ch_one").mock
    assert mock is not None
    error = mock.scenarios[0].error
    assert error is not None
    assert (error.type, error.message) == ("RuntimeError", "no value today")
    assert "Traceback (most recent call last)" in (error.traceback or "")


def _saved_long_ago(root):
    # As a checkout is: its files saved well before the process that imports them started.
    for path in root.rglob("*.py"):
        os.utime(path, ns=(time.time_ns() - 3600 * 10**9,) * 2)


def test_a_library_module_imported_by_other_means_is_current_until_it_is_edited(package):
    name, root = package
    _saved_long_ago(root)
    finders = list(sys.meta_path)
    chapters = Chapters(f"{name}.chapters")
    # Imported after the chapters' first look, not by a chapter (as the machinery imports the trace core).
    importlib.import_module(f"{name}.lib")
    assert chapters.stale_library("ch_one") == []
    edit(root / "lib.py", "VALUE = 1", "VALUE = 2")
    assert chapters.stale_library("ch_one") == [root / "lib.py"]
    assert sys.meta_path == finders, "nothing hooks the import system"


def test_a_library_module_edited_before_it_was_first_looked_for_counts_as_changed(package):
    name, root = package
    _saved_long_ago(root)
    chapters = Chapters(f"{name}.chapters")
    importlib.import_module(f"{name}.lib")
    # Saved after the import, before anything asked: its bytes now are not those it ran from.
    edit(root / "lib.py", "VALUE = 1", "VALUE = 2")
    assert chapters.stale_library("ch_one") == [root / "lib.py"]
    # A chapter's import reads what it depends on before it runs: the same edit, seen the same way.
    (root / "other.py").write_text("OTHER = 1\n")
    edit(root / "chapters" / "_helper.py", "from .. import lib", "from .. import lib, other")
    _saved_long_ago(root)
    chapters.load("ch_one")
    edit(root / "other.py", "OTHER = 1", "OTHER = 2")
    assert chapters.stale_library("ch_one") == [root / "lib.py", root / "other.py"]


def test_a_chapter_that_cannot_be_imported_is_shown_not_fatal(package, tmp_path, caplog):
    name, root = package
    (root / "chapters" / "ch_two.py").write_text("import json\nimport nowhere_to_be_found\n")
    book = Book(tmp_path / "docs", tmp_path / ".cache", chapters=Chapters(f"{name}.chapters"), settings=Settings())
    prepared = book.prepare()
    assert prepared.report.ran == 1
    # The module, the error and the line to look at; not a scenario called "import".
    [failure] = prepared.by_chapter["ch_two"].warnings
    assert failure == (
        f"traces: The chapter module {name}.chapters.ch_two could not be imported. ModuleNotFoundError: "
        f"No module named 'nowhere_to_be_found' ({root / 'chapters' / 'ch_two.py'}, line 2). Its pages show the error."
    )
    mock = prepared.traces("ch_two").mock
    assert mock is not None
    assert "nowhere_to_be_found" in (mock.scenarios[0].ending.detail or "")
    assert prepared.scenario_names["ch_two"] is None
    # A marker naming one of its scenarios shows why there are none, not that the scenario is unknown.
    html = render_traces(prepared.traces("ch_two"), "asks_price")
    assert "could not be imported" in html
    assert "nowhere_to_be_found" in render_payloads(prepared.traces("ch_two")), "in the run, on its payload page"
    assert not list((tmp_path / ".cache" / "entries" / "ch_two").glob("mock-*")), (
        "a failed import is tried again next build"
    )


# -- pages --------------------------------------------------------------------

PAGE = """# Page

::: trace ch_a

```python
::: trace ch_in_code
```

~~~~
```
::: trace ch_in_tilde
```
~~~~

::: trace ch_a two
"""


def test_markers_in_fenced_code_are_examples():
    assert scan(PAGE).markers == (Marker("ch_a", None, 3), Marker("ch_a", "two", 15))


def test_check_names_the_page_and_what_exists():
    warnings = check("docs/p.md", PAGE + "::: trace ch_b\n::: trace ch_a three\n", {"ch_a": ["one", "two"]})
    assert warnings == [
        "docs/p.md line 16: the marker `::: trace ch_b` names no chapter. The chapters are: ch_a.",
        "docs/p.md line 17: the marker `::: trace ch_a three` names no scenario of ch_a. Its scenarios are: one, two.",
    ]
    assert check("p", "::: trace ch_a x\n", {"ch_a": None}) == [], "unknown scenarios of a broken chapter"


# -- the pool -----------------------------------------------------------------


def test_the_pool_bounds_concurrency_and_keeps_order():
    running = 0
    most = 0
    lock = threading.Lock()

    def job(value: int):
        def run() -> int:
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(0.05)
            with lock:
                running -= 1
            return value

        return run

    results = run_bounded([(str(i), job(i)) for i in range(10)], limit=5, workers=3)
    assert results == list(range(10))
    assert most == 3


def test_the_pool_gives_up_slow_jobs_reports_errors_and_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pool's clock is the test's: it moves by `every` at each wait for progress, once every job
    # that ends has ended, so no load on the machine can reorder what happens. The slow job never
    # ends by itself; waiting for it ends when the clock reaches the time the pool waits for it:
    # the pool returning at all is its giving up.
    clock = [0.0]
    release, slow_waits, given_up = threading.Event(), threading.Event(), threading.Event()
    waited: dict[str, float | None] = {}

    class Thread(threading.Thread):
        def join(self, timeout: float | None = None) -> None:
            waited[self.name] = timeout
            if self.name == "primer-slow":
                slow_waits.set()
                given_up.wait(60)
            else:
                super().join(60)  # boom and quick: wait for them, whatever the load

    def wait(futures: list[Future[object]], timeout: float) -> object:
        slow_waits.wait(60)
        concurrent.futures.wait(futures[1:], timeout=60)  # boom's and quick's slots are done
        clock[0] += timeout
        if clock[0] >= (waited["primer-slow"] or 0.0) - 1e-9:
            given_up.set()
        return concurrent.futures.wait(futures, timeout=60 if given_up.is_set() else 0)

    monkeypatch.setattr(run_module, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(run_module, "threading", types.SimpleNamespace(Thread=Thread))
    monkeypatch.setattr(run_module, "wait", wait)
    progress: list[str] = []

    def boom() -> str:
        raise ValueError("bad")

    try:
        results = run_bounded(
            [("slow", lambda: "late" if release.wait(60) else "hung"), ("boom", boom), ("quick", lambda: "ok")],
            limit=0.4,
            workers=2,
            progress=progress.append,
            every=0.1,
        )
    finally:
        release.set()
    slow, boomed, quick = results
    assert slow is None, "given up"
    assert isinstance(boomed, ValueError)
    assert str(boomed) == "bad"
    assert quick == "ok"
    assert waited == dict.fromkeys(["primer-slow", "primer-boom", "primer-quick"], 0.4), "each within its limit"
    assert clock[0] == pytest.approx(0.4), "given up at its limit"
    assert progress == ["2 of 3 done after 0s; running slow"] * 3, "at 0.1, 0.2 and 0.3 s"


def test_chapters_discovery_is_the_default_package():
    chapters = Chapters()
    names = chapters.names()
    assert "ch09_who_retries" in names
    assert all(not n.startswith("_") for n in names)
    assert REPO / "primer" / "chapters" in chapters.watched_dirs()
    assert not any(d.name == "book" for d in chapters.watched_dirs())


def test_test_books_chapters_are_valid(tmp_path, monkeypatch):
    # The sources the build tests write must stay in step with the library's API: each imports and declares the
    # scenarios the build tests count (compiling them, as this test did, let a renamed import pass).
    from primer.locator import scenarios_of

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "apitest_chapters").mkdir()
    for name, source in (("alpha", ALPHA), ("beta", BETA)):
        (tmp_path / "apitest_chapters" / f"{name}.py").write_text(source)
    names = {
        n: [s.name for s in scenarios_of(importlib.import_module(f"apitest_chapters.{n}"))] for n in ("alpha", "beta")
    }
    assert len(names["alpha"]) + len(names["beta"]) == 3, names  # "traces: ran 3" in the build tests


def test_a_published_file_a_full_disk_cut_short_is_not_left_behind(tmp_path, monkeypatch):
    # A new file in the site (or docs/traces, which Zensical publishes) was written in place: a write that failed
    # part way left a truncated JSON there. Now it goes, and the error is raised to the build as before.
    real, calls = os.write, []

    def filling(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data[:10]))  # a short write, as a filling disk gives
        raise OSError(errno.ENOSPC, "No space left on device")

    target = tmp_path / "traces" / "ch01.json"
    monkeypatch.setattr(os, "write", filling)
    with pytest.raises(OSError, match="No space left"):
        write_new(target, b'{"chapter": "ch01", "mock": {"scenarios": []}, "live": null}\n')
    monkeypatch.undo()
    assert len(calls) == 2
    assert not target.exists()
