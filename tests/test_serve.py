"""`mkdocs serve` on a loopback port: a saved edit rebuilds once, re-runs only what changed, reloads the page."""

from __future__ import annotations

import functools
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.books import ALPHA, BETA, BROKEN, PAGE, SmallBook, copy_library, edit, make_book, save

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Longer than several of the server's 0.5 s polling rounds: long enough to see a rebuild that should not happen.
QUIET = 1.5
#: How long a save may take to be seen by MkDocs' watcher (it polls every half second).
WATCHED = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """A running `mkdocs serve` and everything it has logged so far."""

    def __init__(self, book: SmallBook, port: int, *args: str) -> None:
        self.url = f"http://127.0.0.1:{port}/"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}", *args],
            cwd=book.root,
            env=book.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, *, after: int = 0, timeout: float = 600.0) -> int:
        """Index of the first log line from ``after`` on containing ``text``.

        What is waited for is the line; ``timeout`` only ends a hung server. A (re)build
        on a loaded machine takes minutes of wall time (a shorter limit failed tests under load).
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for index in range(after, len(self.lines)):
                if text in self.lines[index]:
                    return index
            assert self.process.poll() is None, "\n".join(self.lines)
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} in:\n" + "\n".join(self.lines))

    def builds(self) -> list[str]:
        """The ``traces:`` report line of every build so far."""
        return [line[line.index("traces:") :] for line in self.lines if "traces: ran" in line]

    def get(self, path: str = "") -> str:
        with urllib.request.urlopen(self.url + path, timeout=120) as response:
            return str(response.read().decode())

    def shown(self, path: str = "") -> str:
        """The page and its chapters' payload pages, where each run's turns and calls (a reply's words) are."""
        page = self.get(path)
        return page + "".join(self.get(url) for url in dict.fromkeys(re.findall(r'data-tr-payloads="([^"]+)"', page)))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def serving(book: SmallBook, *args: str) -> Iterator[Server]:
    server = Server(book, _free_port(), *args)
    try:
        server.wait_for("Serving on")
        yield server
    finally:
        server.stop()


def _rebuilt(server: Server, change: Callable[[], None]) -> str:
    """Save a file, wait for the one rebuild it causes, check no second follows; the new report line."""
    before = len(server.builds())
    start = len(server.lines)
    change()
    # MkDocs' watcher sees a save within seconds: a save that starts no rebuild fails in a minute, not in the
    # ten a rebuild on a loaded machine may take once begun.
    began = server.wait_for("Detected file changes", after=start, timeout=WATCHED)
    done = server.wait_for("Reloading browsers", after=began)
    time.sleep(QUIET)
    builds = server.builds()
    assert len(builds) == before + 1, "\n".join(server.lines[start:])
    assert not any("Reloading browsers" in line for line in server.lines[done + 1 :]), "\n".join(server.lines[start:])
    return builds[-1]


@pytest.mark.slow
def test_serve_rebuilds_once_and_reruns_only_the_edited_chapter(tmp_path: Path) -> None:
    book = make_book(tmp_path, {"ch_alpha": ALPHA, "ch_beta": BETA})
    with serving(book) as server:
        assert server.builds() == ["traces: ran 3, reused 0"]
        watching = server.lines[server.wait_for("Watching paths for changes")]
        assert book.package in watching
        page = server.shown()
        assert "Beta says hi." in page
        # Livereload is on with the installed click: the page carries its poller.
        epoch = int(re.search(r"livereload\((\d+), \d+\)", page)[1])  # type: ignore[index]

        # A browser waiting on the poller is answered as soon as the rebuild is visible.
        answer: list[str] = []
        poll = threading.Thread(target=lambda: answer.append(server.get(f"livereload/{epoch}/1")), daemon=True)
        poll.start()

        line = _rebuilt(server, lambda: edit(book.chapter("ch_beta"), "Beta says hi.", "Beta says hello."))
        assert line == "traces: ran 1, reused 2"
        poll.join(timeout=10)
        assert answer
        assert int(answer[0]) > epoch
        assert "Beta says hello." in server.shown()

        # Prose runs nothing.
        assert _rebuilt(server, lambda: edit(book.docs / "index.md", "Some prose.", "New prose.")) == (
            "traces: ran 0, reused 3"
        )
        assert "New prose." in server.get()

        # A chapter that breaks is shown broken; the server goes on.
        line = _rebuilt(server, lambda: book.write_chapter("ch_beta", BROKEN.replace("explodes", "greets")))
        assert line == "traces: ran 1, reused 2"
        assert "the &lt;scenario&gt; broke on purpose" in server.get()
        assert any("ch_beta / greets (mock)" in line and "WARNING" in line for line in server.lines)
        assert server.process.poll() is None


@pytest.mark.slow
def test_a_prose_save_runs_and_renders_nothing(tmp_path: Path) -> None:
    book = make_book(tmp_path, {"ch_alpha": ALPHA, "ch_beta": BETA})
    with serving(book, "--verbose") as server:

        def share(line: str) -> str:
            index = server.wait_for("the machinery's share of this build", after=server.wait_for(line))
            return server.lines[index]

        assert "markers rendered 2, reused 0" in share("traces: ran 3, reused 0")
        start = len(server.lines)
        assert _rebuilt(server, lambda: edit(book.docs / "index.md", "Some prose.", "New prose.")) == (
            "traces: ran 0, reused 3"
        )
        rebuild = server.lines[start:]
        [line] = [line for line in rebuild if "the machinery's share" in line]
        assert "markers rendered 0, reused 2" in line
        assert "New prose." in server.get()


REUSED = "nothing a prepare reads changed since the last build"


@pytest.mark.slow
def test_a_rebuild_that_changed_nothing_the_traces_are_made_from_shows_what_the_last_prepare_made(
    tmp_path: Path,
) -> None:
    book = make_book(tmp_path, {"ch_alpha": ALPHA, "ch_beta": BETA})
    with serving(book, "--verbose") as server:
        server.wait_for("traces: ran 3, reused 0")

        def rebuilt(save: Callable[[], None]) -> tuple[str, bool]:
            start = len(server.lines)
            line = _rebuilt(server, save)
            return line, any(REUSED in said for said in server.lines[start:])

        prose = "Some prose."
        # The first build ran the scenarios; a prepare from the cache follows, and the next save shows it again.
        for n, reused in enumerate([False, True, True]):
            saved, prose = prose, f"Prose edit {n}."
            assert rebuilt(functools.partial(edit, book.docs / "index.md", saved, prose)) == (
                "traces: ran 0, reused 3",
                reused,
            )
            assert prose in server.get()
        # Each thing a prepare reads, changed, has the next build prepare afresh: a chapter's code,
        assert rebuilt(lambda: edit(book.chapter("ch_alpha"), "Hello from alpha.", "Hi from alpha.")) == (
            "traces: ran 2, reused 1",
            False,
        )
        assert "Hi from alpha." in server.shown()
        # the cache (cleared by hand: its scenarios run again, the page is whole),
        assert rebuilt(functools.partial(edit, book.docs / "index.md", prose, "Again.")) == (
            "traces: ran 0, reused 3",
            False,
        )
        shutil.rmtree(book.root / ".cache" / "trace-book" / "entries")
        line, reused = rebuilt(functools.partial(edit, book.docs / "index.md", "Again.", "Cleared."))
        assert (line, reused) == ("traces: ran 3, reused 0", False)
        page = server.shown()
        assert "Cleared." in page
        assert "Hi from alpha." in page
        assert "Beta says hi." in page
        # and a frozen live trace written into its folder.
        assert rebuilt(functools.partial(edit, book.docs / "index.md", "Cleared.", "Once more.")) == (
            "traces: ran 0, reused 3",
            False,
        )
        # Bytecode another process writes beside the chapters is not code (CI's other worker compiles as it goes).
        (book.root / book.package / "__pycache__" / "elsewhere.cpython-311.pyc").write_bytes(b"compiled")
        time.sleep(QUIET)
        assert rebuilt(functools.partial(edit, book.docs / "index.md", "Once more.", "And again.")) == (
            "traces: ran 0, reused 3",
            True,
        )
        (book.docs / "traces").mkdir(exist_ok=True)
        start = len(server.lines)
        (book.docs / "traces" / "ch_beta.live.json").write_text("{broken")
        server.wait_for("Reloading browsers", after=start)
        assert not any(REUSED in said for said in server.lines[start:])
        assert any("ch_beta.live.json" in said for said in server.lines[start:]), "the broken file is read and named"


@pytest.mark.slow
def test_a_dirty_serve_rebuilds_the_pages_whose_traces_changed(tmp_path: Path) -> None:
    # --dirty rebuilds only pages whose Markdown is newer than their built
    # file; a saved chapter changes a page's traces, not its Markdown.
    other = "# Other\n\nOther prose.\n\n::: trace ch_beta\n"
    book = make_book(tmp_path, {"ch_alpha": ALPHA, "ch_beta": BETA}, {"index": PAGE, "other": other})
    with serving(book, "--dirty", "--no-strict") as server:
        assert server.builds() == ["traces: ran 3, reused 0"]
        assert _rebuilt(server, lambda: edit(book.chapter("ch_alpha"), "Hello from alpha.", "Hi from alpha.")) == (
            "traces: ran 2, reused 1"
        )
        assert "Hi from alpha." in server.shown()
        assert "Hi from alpha." in server.get("traces/ch_alpha.json"), "a chapter whose traces changed is published"
        assert _rebuilt(server, lambda: edit(book.chapter("ch_beta"), "Beta says hi.", "Beta says hello.")) == (
            "traces: ran 1, reused 2"
        )
        assert "Beta says hello." in server.shown()
        assert "Beta says hello." in server.shown("other/")
        # Prose saves, each served with its edit (no rebuild serves a page without it); they
        # publish nothing, and what was published stands.
        prose = "Other prose."
        for n in range(3):
            saved, prose = prose, f"Prose edit {n}."
            save = functools.partial(edit, book.docs / "other.md", saved, prose)
            assert _rebuilt(server, save) == "traces: ran 0, reused 3"
            assert prose in server.get("other/")
        assert "Beta says hello." in server.get("traces/ch_beta.json")
        assert "Hi from alpha." in server.get("traces/ch_alpha.json")


@pytest.mark.slow
@pytest.mark.browser
def test_a_saved_chapter_reloads_the_open_page(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    book = make_book(tmp_path)
    with serving(book) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(server.url)
            # The reply is in its run, which comes from the chapter's payload page as it opens.
            opened = "() => { document.querySelectorAll('details.tr-scn').forEach(d => { d.open = true; }); }"
            page.evaluate(opened)
            page.get_by_text("Beta says hi.").first.wait_for()
            # Gone after a reload: proves the page itself was reloaded, not patched.
            page.evaluate("window.primerMark = 1")
            with page.expect_event("load", timeout=30_000):
                edit(book.chapter("ch_beta"), "Beta says hi.", "Beta says hi from the browser test.")
            assert page.evaluate("window.primerMark") is None
            page.evaluate(opened)
            page.get_by_text("Beta says hi from the browser test.").first.wait_for()
        except Exception:
            print("\n".join(server.lines))
            raise
        finally:
            browser.close()


BUSY = '''"""Chapter busy: the service answers 429 once, and the client waits before trying again."""

from primer.models.mock import ask, call, say
from primer.scenario import Scenario
from primer.shop import price_of

busy = Scenario(
    name="busy",
    prompt="How much is milk?",
    tools=[price_of],
    service=["/status/429", "/get"],
    mock=[ask(call("price_of", item="milk")), say("Milk is 1.20.")],
)
'''


def _mock_trace(book: SmallBook) -> dict[str, object]:
    data = json.loads(book.mock_file("ch_busy").read_text())
    return {"source_hash": data["source_hash"], "simulated": data["scenarios"][0]["simulated_seconds"]}


@pytest.mark.slow
def test_a_library_edit_while_serving_runs_the_new_code_and_caches_it_under_its_own_fingerprint(
    tmp_path: Path,
) -> None:
    # The library is copied into the book, so editing it leaves the repository's alone.
    book = make_book(tmp_path, {"ch_busy": BUSY}, {"index": "# Busy\n\n::: trace ch_busy\n"})
    library = copy_library(book.root)
    # Warm, as an author's checkout is: serve starts by reusing every trace,
    # so nothing has asked about the library's files before the edit.
    assert book.build().count() == "traces: ran 1, reused 0"
    with serving(book) as server:
        assert server.builds() == ["traces: ran 0, reused 1"]
        assert "1s simulated" in server.get()
        line = _rebuilt(
            server, lambda: edit(library / "clock.py", "self.simulated += seconds", "self.simulated += 2 * seconds")
        )
        assert line == "traces: ran 1, reused 0"
        served = server.get()
        served_cache = _mock_trace(book)
        # A comment changes nothing a run does: the fingerprint stays, nothing runs.
        line = _rebuilt(server, lambda: edit(library / "clock.py", "    def sleep(", "    # Twice.\n    def sleep("))
        assert line == "traces: ran 0, reused 1"
    assert "2s simulated" in served
    assert "1s simulated" not in served
    # The next build agrees, from the cache the server left...
    assert book.build().count() == "traces: ran 0, reused 1"
    assert _mock_trace(book) == served_cache
    # ...and so does a cold build, from nothing.
    shutil.rmtree(book.root / ".cache")
    assert book.build().count() == "traces: ran 1, reused 0"
    assert _mock_trace(book) == served_cache == {"source_hash": served_cache["source_hash"], "simulated": 2.0}
    assert "2s simulated" in book.page()


@pytest.mark.slow
def test_a_package_the_book_first_imports_while_serving_is_watched_from_then_on(tmp_path: Path) -> None:
    # The author makes a package beside the book while the server runs, and a chapter imports it:
    # from the rebuild that found it, a save in it rebuilds and runs the chapter again.
    book = make_book(tmp_path, {"ch_alpha": ALPHA, "ch_beta": BETA})
    with serving(book) as server:
        assert server.builds() == ["traces: ran 3, reused 0"]
        helpers = book.root / "helpers"
        helpers.mkdir()
        (helpers / "__init__.py").write_text("")
        (helpers / "words.py").write_text('GREETING = "Beta says howdy."\n')
        beta = BETA.replace(
            "from primer.models.mock import say",
            "from helpers.words import GREETING\nfrom primer.models.mock import say",
        )
        line = _rebuilt(
            server, lambda: book.write_chapter("ch_beta", beta.replace('say("Beta says hi.")', "say(GREETING)"))
        )
        assert line == "traces: ran 1, reused 2"
        assert "Beta says howdy." in server.shown()
        line = _rebuilt(server, lambda: edit(helpers / "words.py", "Beta says howdy.", "Beta says hey there."))
        assert line == "traces: ran 1, reused 2"
        page = server.shown()
        assert "Beta says hey there." in page
        assert "Beta says howdy." not in page


def test_the_books_config_leaves_strictness_to_the_build_command() -> None:
    # With `strict: true` in mkdocs.yml, `mkdocs serve` aborts every rebuild that
    # warns (a broken scenario, a live trace that diverged) and the server looks
    # stuck; the author must see the page and the warning instead. Publishing
    # and CI pass --strict themselves (tests/test_workflows.py, the README).
    import yaml

    root = Path(__file__).resolve().parent.parent
    config = yaml.load((root / "mkdocs.yml").read_text("utf-8"), Loader=yaml.Loader)
    assert config.get("strict", False) is False
    assert "mkdocs build --strict" in (root / ".github" / "workflows" / "publish.yml").read_text("utf-8")
    assert "mkdocs build --strict" in (root / "README.md").read_text("utf-8")


@pytest.mark.slow
def test_a_template_saved_while_serving_shows_at_the_next_rebuild_and_in_later_builds(tmp_path: Path) -> None:
    # The renderer's fingerprint is read from the files at every build, not once a process:
    # the served page shows the edit, and the record a fresh build reuses pairs it with the new bytes.
    book = make_book(tmp_path)
    template = copy_library(book.root) / "book" / "templates" / "chapter.html.j2"
    original = template.read_text()
    probe = "template-probe-7f3a"
    with serving(book) as server:
        assert probe not in server.get()
        # The machinery's templates are watched: the save alone rebuilds, once.
        _rebuilt(server, lambda: save(template, f"<span hidden>{probe}</span>\n{original}"))
        assert server.get().count(probe) == 2, "both markers of the page are drawn anew"
    done = book.build()
    assert done.returncode == 0, done.log
    assert book.page().count(probe) == 2
    template.write_text(original)
    assert book.build().returncode == 0
    assert probe not in book.page()


@pytest.mark.slow
def test_library_code_saved_while_serving_draws_nothing_that_is_kept(tmp_path: Path) -> None:
    # A server cannot re-import the library code its renderer runs (primer.summary words the folded lines):
    # what it draws after such a save is drawn with the code it started with. It says so and keeps none
    # of it, so a later build, a fresh process, draws with the code as it is (it reused the server's HTML).
    book = make_book(tmp_path)
    summary = copy_library(book.root) / "summary.py"
    original = summary.read_text()
    probe = "library-probe-9c2e"
    assert 'f"scenario {run.name}",' in original
    with serving(book) as server:
        assert probe not in server.get()
        start = len(server.lines)
        _rebuilt(server, lambda: save(summary, original.replace('f"scenario {run.name}",', f'f"{probe}",')))
        said = "\n".join(server.lines[start:])
        assert "(primer/summary.py), and it cannot import it again: what it draws now is kept nowhere" in said, said
    done = book.build()
    assert done.returncode == 0, done.log
    assert probe in book.page()
    summary.write_text(original)
    assert book.build().returncode == 0
    assert probe not in book.page()
