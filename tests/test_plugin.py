"""The ``trace-book`` plugin: a book configured with ``plugins:`` alone, its options, and the hook as the same class."""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from primer.book import _configuration as plugin_options
from primer.book._configuration import SETTINGS
from primer.book._plugin import TraceBookPlugin
from primer.book._steps import Run
from primer.fingerprint import CodeGraph
from primer.variables import BOOK_VARIABLES, VARIABLES
from tests.books import make_book


def _build(book, *args: str, drop: tuple[str, ...] = (), **env: str) -> subprocess.CompletedProcess[str]:
    # book.build, but with variables of its environment left out (``drop``).
    environment = {k: v for k, v in book.env(**env).items() if k not in drop}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *args],
        cwd=book.root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_an_unknown_option_is_an_error_naming_it() -> None:
    errors, warnings = TraceBookPlugin().load_config({"chapter": "mybook.chapters"})
    [(key, error)] = errors
    assert key == "chapter"
    assert "trace-book has no option 'chapter'" in str(error)
    assert "chapters" in str(error), "the message lists the options"
    assert warnings == []
    [(key, _)] = TraceBookPlugin().load_config({"live": "sometimes"})[0]
    assert key == "live"
    [(key, _)] = TraceBookPlugin().load_config({"enabled": "yes please"})[0]
    assert key == "enabled"
    [(key, error)] = TraceBookPlugin().load_config({"caches": False})[0]
    assert "trace-book has no option 'caches'" in str(error)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("cache", "sometimes", "write true or false; it is 'sometimes', read as text."),
        ("enabled", 1, "write true or false; it is 1, read as a number."),
        (
            "chapters",
            3.5,
            "write text (in quotes, if YAML would read it as something else); it is 3.5, read as a number.",
        ),
        (
            "prices",
            ["m"],
            "write a mapping (`name: value` lines, indented under the option); it is ['m'], read as a list.",
        ),
    ],
)
def test_an_option_of_the_wrong_type_says_what_to_write(option: str, value: object, said: str) -> None:
    # In an author's words, where MkDocs says "Expected type: <class 'bool'> but received: <class 'str'>".
    [(key, error)] = TraceBookPlugin().load_config({option: value})[0]
    assert (key, str(error)) == (option, said)
    assert (
        TraceBookPlugin().load_config({option: {"cache": True, "enabled": False, "chapters": "b.c"}.get(option, {})})[0]
        == []
    )


def test_the_options_are_defaults_the_environment_wins_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRIMER_LIVE", raising=False)
    monkeypatch.delenv("PRIMER_TRACES", raising=False)
    monkeypatch.delenv("PRIMER_CACHE", raising=False)
    plugin = TraceBookPlugin()
    assert plugin.load_config({"live": "off", "enabled": False, "cache": False}) == ([], [])
    said = ("PRIMER_LIVE", "PRIMER_TRACES", "PRIMER_CACHE")
    assert [plugin_options.environ(plugin.config)[name] for name in said] == ["off", "off", "off"]
    monkeypatch.setenv("PRIMER_LIVE", "refresh")
    monkeypatch.setenv("PRIMER_TRACES", "on")
    monkeypatch.setenv("PRIMER_CACHE", "on")
    assert [plugin_options.environ(plugin.config)[name] for name in said] == ["refresh", "on", "on"]


def test_each_option_a_variable_also_sets_is_an_option_and_names_a_setting() -> None:
    # For whoever adds an option: an entry of SETTINGS that names no option or no setting fails here.
    options = {name for name, _ in TraceBookPlugin().config_scheme}
    assert set(SETTINGS) <= options
    assert {variable for variable, _ in SETTINGS.values()} <= {*VARIABLES.values(), *BOOK_VARIABLES.values()}


def test_the_hook_is_the_plugin() -> None:
    from primer.book import mkdocs_hook

    owner = mkdocs_hook.on_config.__self__
    assert isinstance(owner, TraceBookPlugin)
    public = [name for name in dir(mkdocs_hook) if not name.startswith("_")]
    assert public == sorted(name for name in dir(TraceBookPlugin) if name.startswith("on_")), "what `import *` takes"
    assert all(getattr(mkdocs_hook, name).__self__ is owner for name in public)
    assert mkdocs_hook.on_page_content.mkdocs_priority == -100


@pytest.mark.slow
def test_a_book_configured_with_the_plugin_alone_shows_its_traces(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="")
    config = (book.root / "mkdocs.yml").read_text()
    assert "hooks:" not in config
    assert "primer.book.markdown" not in config
    done = book.build("--strict")
    assert done.returncode == 0, done.log
    assert done.count() == "traces: ran 3, reused 0"
    page = book.shown()
    assert "scenario asks_price" in page
    assert "Milk is &lt;b&gt;1.20&lt;/b&gt; &amp; fresh." in page
    assert 'href="assets/trace-book/traces.css"' in page
    assert (book.root / "site" / "traces" / "ch_alpha.json").is_file()
    # Search sees the summary lines, not the payloads (in the payload page), as with the hook.
    index = json.loads((book.root / "site" / "search" / "search_index.json").read_text())
    text = " ".join(doc["title"] + " " + doc["text"] for doc in index["docs"])
    assert "scenario asks_price" in text
    system = "You answer briefly and plainly."
    assert system not in text
    assert system in (book.root / "site" / "traces" / "ch_alpha.payloads.html").read_text()
    assert book.build("--strict").count() == "traces: ran 0, reused 3"


def _freezes_at(monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> list[int]:
    """How many objects were frozen (``gc.get_freeze_count``) at each call of ``owner.name``, as the build goes."""
    counts: list[int] = []
    method = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts.append(gc.get_freeze_count())
        return method(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return counts


def test_what_a_build_made_before_its_pages_is_frozen_for_them_and_unfrozen_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full collection during the pages would walk the whole heap for no garbage: frozen once made, in the
    # prepare, and collectable again once the build ends, failed or not (a serve builds again).
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    book = make_book(tmp_path / "book", plugin="")
    frozen: list[int] = []
    page_markdown = TraceBookPlugin.on_page_markdown

    def seen(self: TraceBookPlugin, markdown: str, **kwargs: object) -> str | None:
        frozen.append(gc.get_freeze_count())
        if "Broken" in markdown:
            raise RuntimeError("a page failed")
        return page_markdown(self, markdown, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(TraceBookPlugin, "on_page_markdown", seen)
    # Frozen in the prepare too: what MkDocs made before it (its config, the theme) is walked by no collection.
    in_prepare = _freezes_at(monkeypatch, CodeGraph, "fingerprint")
    # And once the chapters' code ran: what it made (its imports, a framework's) is walked by no collection either.
    ran = _freezes_at(monkeypatch, Run, "verify")
    # After each chapter's mocks, not once after all: a framework's import in one chapter was walked by every
    # full collection the next chapters' imports set off (350 ms of this book's cold build; about 190 ms now).
    mocked = _freezes_at(monkeypatch, Run, "mock")
    monkeypatch.chdir(book.root)
    monkeypatch.setenv("PRIMER_CHAPTERS", book.package)
    config = load_config(str(book.root / "mkdocs.yml"))
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
        assert frozen
        assert in_prepare
        assert min(frozen) > 0
        assert min(in_prepare) > 0
        assert ran  # the build ran the chapters (a cold one)
        assert min(ran) > max(in_prepare)
        assert len(mocked) == 2
        assert mocked[1] > mocked[0]
        assert gc.get_freeze_count() == 0
        (book.docs / "index.md").write_text("# Broken\n")
        with pytest.raises(RuntimeError, match="a page failed"):  # MkDocs calls on_build_error, and raises it
            build(load_config(str(book.root / "mkdocs.yml")))
        assert frozen[-1] > 0
        assert gc.get_freeze_count() == 0
        # Not under serve: what the last build left would die after the freeze and stay frozen, a rebuild's worth
        # of memory each time (measured under `mkdocs serve`: 8 MB a rebuild, where it levels off without).
        (book.docs / "index.md").write_text("# Served\n")
        config = load_config(str(book.root / "mkdocs.yml"))
        config.plugins.on_startup(command="serve", dirty=False)
        in_prepare.clear()
        ran.clear()
        (book.root / ".cache").rename(book.root / "cache-of-the-build")  # the chapters run again
        build(config, serve_url="http://127.0.0.1:8000/")
        assert frozen[-1] == 0
        assert in_prepare
        assert ran
        assert max(in_prepare + ran) == 0
    finally:
        config.plugins.on_shutdown()
        gc.unfreeze()


@pytest.mark.slow
def test_an_unknown_option_fails_the_build_naming_it(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="chapter: mybook.chapters")
    done = book.build()
    assert done.returncode == 1
    assert "Plugin 'trace-book' option 'chapter': trace-book has no option 'chapter'" in done.log
    assert not (book.root / ".cache").exists()


@pytest.mark.slow
def test_the_chapters_cache_and_enabled_options(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="")
    config = book.root / "mkdocs.yml"
    options = f"\n      chapters: {book.package}\n      cache_dir: build-cache\n      enabled: false"
    config.write_text(config.read_text().replace("\n      rules: false", options + "\n      rules: false"))
    # Off by the option: placeholders, nothing run.
    done = _build(book, "--strict", drop=("PRIMER_CHAPTERS",))
    assert done.returncode == 0, done.stderr
    assert "traces: off (enabled: false), nothing ran" in done.stderr, "the cause named: not the variable"
    assert "scenario asks_price" not in book.page()
    assert not (book.root / "build-cache").exists()
    done = _build(book, "--strict", drop=("PRIMER_CHAPTERS",), PRIMER_TRACES="off")
    assert "traces: off (PRIMER_TRACES=off), nothing ran" in done.stderr
    # The environment wins: on, with the option's chapters package, cached where the option says.
    done = _build(book, "--strict", drop=("PRIMER_CHAPTERS",), PRIMER_TRACES="on")
    assert done.returncode == 0, done.stderr
    assert "traces: ran 3, reused 0" in done.stderr
    assert "scenario asks_price" in book.page()
    assert book.mock_file("ch_alpha", "build-cache").is_file()
    assert not (book.root / ".cache").exists()


@pytest.mark.slow
def test_the_cache_option_turns_the_cache_off_and_the_variable_wins(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="cache: false")
    for _ in range(2):  # nothing kept, nothing read
        done = book.build("--strict")
        assert (done.returncode, done.count()) == (0, "traces: ran 3, reused 0"), done.log
    assert [book.build("--strict", PRIMER_CACHE="on").count() for _ in range(2)] == [
        "traces: ran 3, reused 0",
        "traces: ran 0, reused 3",
    ]


@pytest.mark.slow
def test_the_frozen_traces_folder_option(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="traces_dir: frozen")
    assert book.build().returncode == 0
    mock = json.loads((book.root / "site" / "traces" / "ch_beta.json").read_text())["mock"]
    live = {**mock, "mode": "live", "model": "some-model", "recorded_at": "2025-01-02T03:04:05+00:00"}
    live["scenarios"] = [{**s, "mode": "live"} for s in mock["scenarios"]]
    (book.docs / "frozen").mkdir()
    (book.docs / "frozen" / "ch_beta.live.json").write_text(json.dumps(live, indent=2) + "\n")
    done = book.build()
    assert done.returncode == 0, done.log
    published = json.loads((book.root / "site" / "traces" / "ch_beta.json").read_text())
    assert published["live"]["recorded_at"] == "2025-01-02T03:04:05+00:00"
    # Not left out by exclude_docs (which names traces/): warned about, naming the fix, and not published raw.
    [warning] = done.lines("would be published as it is")
    assert "exclude_docs: frozen/*.live.json" in warning
    assert not (book.root / "site" / "frozen" / "ch_beta.live.json").exists()


@pytest.mark.slow
def test_properdocs_builds_the_plugin_form(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="", theme="material")
    env = book.env()
    done = subprocess.run(
        [sys.executable, "-m", "properdocs", "build", "--strict", "-f", "mkdocs.yml"],
        cwd=book.root,
        env={**env, "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "traces: ran 3, reused 0" in done.stderr
    assert "scenario asks_price" in book.page()


@pytest.mark.slow
def test_a_second_build_of_one_cache_waits_for_the_first_and_says_so(tmp_path: Path) -> None:
    from primer.book._lock import BuildLock

    book = make_book(tmp_path / "book", plugin="")
    held = BuildLock(book.root / ".cache" / "trace-book")
    held.acquire(logging.getLogger("tests"))  # as a build of this process would: the subprocess's build must wait
    try:
        second = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "build"],
            cwd=book.root,
            env=book.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert second.stderr is not None
        lines: list[str] = []
        for line in second.stderr:
            lines.append(line)
            if "waiting for it to finish" in line:
                break
        assert f"another build (process {os.getpid()}) is using the cache" in lines[-1], lines
        assert second.poll() is None, "it waits"
        assert not (book.root / "site" / "traces").exists(), "and has run nothing yet"
    finally:
        held.release()
    rest = second.communicate(timeout=120)[1]
    assert second.returncode == 0, rest
    assert "traces: ran 3, reused 0" in rest
    assert (book.root / "site" / "traces" / "ch_alpha.json").is_file()
    # Released at the end of the build: the next one takes it at once.
    assert "waiting" not in book.build().log


@pytest.mark.slow
def test_a_chapters_package_that_cannot_be_imported_is_said_once_naming_the_option(tmp_path: Path) -> None:
    book = make_book(tmp_path / "book", plugin="chapters: no_such_chapters_here")
    done = _build(book, "--strict", drop=("PRIMER_CHAPTERS",))
    assert done.returncode != 0
    [said] = [line for line in done.stderr.splitlines() if "no_such_chapters_here" in line and "imported" in line]
    assert said.count("could not be imported") == 1, said
    assert "the trace-book plugin's chapters option" in said


def test_a_cache_folder_that_cannot_be_made_leaves_the_build_unlocked_not_failed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Like the cache it guards, the lock is best effort: a cache_dir under a file (or on a read-only disk) ended
    # every build in a traceback, PRIMER_CACHE=off or not. A lock not taken is tried again by the next build.
    import errno
    import fcntl

    from primer.book._lock import BuildLock

    (tmp_path / "a_file").write_text("")
    lock = BuildLock(tmp_path / "a_file" / "cache")
    with caplog.at_level(logging.INFO):
        lock.acquire(logging.getLogger("mkdocs.plugins.primer"))
    assert f"traces: the cache {tmp_path / 'a_file' / 'cache'} cannot be used (Not a directory)" in caplog.text
    lock.release()  # nothing held: nothing to do

    lock = BuildLock(tmp_path / "cache")

    def refused(file: object, how: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")  # NFS without a lock daemon

    monkeypatch.setattr(fcntl, "flock", refused)
    lock.acquire(logging.getLogger("mkdocs.plugins.primer"))
    monkeypatch.undo()
    lock.acquire(logging.getLogger("mkdocs.plugins.primer"))  # taken now, not skipped as if held
    try:
        assert (tmp_path / "cache" / "build.lock").read_text() == f"{os.getpid()}\n"
    finally:
        lock.release()
