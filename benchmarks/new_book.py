"""A new author's book, from the wheel alone: how long to a served page, how many lines, how fast a save shows.

    .venv/bin/python benchmarks/new_book.py [--repeat 5] [--no-install]

Prints three things, measured in a temporary folder outside the checkout:

* **wheel to first page**: a fresh virtual environment, ``pip install`` of this
  checkout's wheel (its dependencies from pip's index and cache, as an
  author's install gets them), ``python -m primer.book new``, ``mkdocs serve``
  until the chapter page is served. Each step's seconds and the total.
  ``--no-install`` skips it.
* **lines an author writes** for a two-chapter book: what ``new`` wrote, then a
  second chapter added as the guide says (its module, its page, its test, one
  ``nav`` line), counted as the lines added or changed against what ``new``
  wrote, per file.
* **the writing loop**: seconds from saving a sentence of the chapter page to
  the served page showing it, under ``mkdocs serve``, ``mkdocs serve --dirty``
  and ``zensical serve`` (median of ``--repeat`` saves each, the servers run
  one after another from this checkout's environment). Zensical runs no
  MkDocs plugin: the book names the Markdown extension for it, as
  ``docs/authors.md`` says.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from serving import free_port, stop

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "greetings"
CHAPTER = "ch01_first_steps"
SENTENCE = "A loop of its own"

SECOND_CHAPTER = '''"""Saying no: a tool that refuses, and a model that answers without it.

Code: ``primer/tools.py`` (``ArgumentsRejected``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from primer import ArgumentsRejected, Scenario, ToolContext, ask, call, say, tool


class Shout(BaseModel):
    """Say a word loudly."""

    model_config = ConfigDict(title="shout")
    word: str


@tool(Shout)
def shout(args: Shout, ctx: ToolContext) -> str:
    """Shout the word, if it is one."""
    if " " in args.word:
        raise ArgumentsRejected("one word only")
    return args.word.upper() + "!"


shouts = Scenario(
    name="shouts",
    about="The tool shouts the word.",
    prompt="Shout 'hello'.",
    tools=[shout],
    mock=[ask(call("shout", word="hello")), say("HELLO!")],
)

refuses = Scenario(
    name="refuses",
    about="The tool refuses two words; the model says so.",
    prompt="Shout 'hello there'.",
    tools=[shout],
    mock=[ask(call("shout", word="hello there")), say("The tool takes one word only.")],
)
'''

SECOND_PAGE = """# 2. Saying no

A tool may refuse its arguments; the model is told why.

::: trace ch02_saying_no shouts

::: trace ch02_saying_no refuses

Open turn 1 of `refuses`: the tool line says `raised: one word only`.
"""

SECOND_TEST = '''"""Chapter 2: a tool that refuses."""

from greetings.ch02_saying_no import refuses

from primer.runner import run_scenario


def test_the_tool_refuses_two_words() -> None:
    run = run_scenario(refuses)
    assert run.turns[0].tools[0].result is None
'''


def get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(response.read().decode())
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


class Server:
    """A serving front end on a loopback port."""

    def __init__(self, book: Path, command: list[str], env: dict[str, str]) -> None:
        self.port = free_port()
        address = f"127.0.0.1:{self.port}"
        executable = Path(sys.executable).parent / command[0]  # both take --dev-addr
        self.process = subprocess.Popen(
            [str(executable), *command[1:], "--dev-addr", address],
            cwd=book,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = f"http://{address}/"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def wait_for_page(self, path: str, expect: str, limit: float = 120) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < limit:
            page = get(self.url + path)
            if page is not None and expect in page:
                return time.perf_counter() - started
            if self.process.poll() is not None:
                raise SystemExit("the server stopped:\n" + "\n".join(self.lines[-30:]))
            time.sleep(0.02)
        return float("nan")

    def stop(self) -> None:
        stop(self.process)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update(NO_MKDOCS_2_WARNING="1", **extra)
    return env


def timed(command: list[str], **kwargs: object) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - started


def wheel_to_first_page(scratch: Path) -> None:
    wheels = scratch / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [wheel] = wheels.glob("trace_book-*.whl")
    venv = scratch / "venv"
    steps = {"venv": timed([sys.executable, "-m", "venv", str(venv)])}
    python = venv / "bin" / "python"
    steps["pip install"] = timed([str(python), "-m", "pip", "install", "-q", str(wheel)])
    book = scratch / "author" / PACKAGE
    book.parent.mkdir()
    steps["new"] = timed([str(python), "-m", "primer.book", "new", str(book)], env=clean_env())
    port = free_port()
    started = time.perf_counter()
    server = subprocess.Popen(
        [str(venv / "bin" / "mkdocs"), "serve", "--dev-addr", f"127.0.0.1:{port}"],
        cwd=book,
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while (page := get(f"http://127.0.0.1:{port}/{CHAPTER}/")) is None or "scenario calls_a_tool" not in page:
            if server.poll() is not None or time.perf_counter() - started > 300:
                raise SystemExit("mkdocs serve did not serve the chapter page")
            time.sleep(0.05)
        steps["serve to the first page"] = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=20)
    print("wheel to a served first page (a fresh venv, pip's cache as it is):")
    for name, seconds in steps.items():
        print(f"  {name:<26} {seconds:6.1f} s")
    print(f"  {'total':<26} {sum(steps.values()):6.1f} s")


def new_book(folder: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "primer.book", "new", str(folder)], check=True, capture_output=True, env=clean_env()
    )
    return folder


def lines_written(scratch: Path) -> None:
    written = new_book(scratch / "as-written" / PACKAGE)
    book = scratch / "two-chapters" / PACKAGE
    shutil.copytree(written, book)
    (book / PACKAGE / "ch02_saying_no.py").write_text(SECOND_CHAPTER)
    (book / "docs" / "ch02_saying_no.md").write_text(SECOND_PAGE)
    (book / "tests" / "test_ch02_saying_no.py").write_text(SECOND_TEST)
    config = book / "mkdocs.yml"
    config.write_text(
        config.read_text().replace(
            "      - ch01_first_steps.md\n", "      - ch01_first_steps.md\n      - ch02_saying_no.md\n"
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict"],
        cwd=book,
        env=clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit("the two-chapter book does not build --strict:\n" + done.stderr)
    total, files = 0, 0
    print("lines an author writes for a two-chapter book (against what `new` wrote):")
    for path in sorted(p for p in book.rglob("*") if p.is_file() and not {"site", ".cache"} & set(p.parts)):
        before_path = written / path.relative_to(book)
        before = before_path.read_text().splitlines() if before_path.exists() else []
        added = sum(1 for line in difflib.ndiff(before, path.read_text().splitlines()) if line.startswith("+ "))
        if added:
            files += 1
            total += added
            print(f"  {path.relative_to(book).as_posix():<36} {added:4d}")
    generated = sum(len(p.read_text().splitlines()) for p in written.rglob("*") if p.is_file())
    print(f"  {'total':<36} {total:4d} lines in {files} files (`new` wrote {generated} lines the author did not)")


def writing_loop(scratch: Path, repeat: int) -> None:
    book = new_book(scratch / "loop" / PACKAGE)
    # Zensical runs no MkDocs plugin: it renders traces through the extension the book names for it.
    config = book / "mkdocs.yml"
    text = config.read_text()
    if "primer.book.markdown" not in text:
        text = text.replace(
            "markdown_extensions:\n", f"markdown_extensions:\n  - primer.book.markdown:\n      chapters: {PACKAGE}\n"
        )
    text += "extra_css: [assets/trace-book/traces.css]\nextra_javascript: [assets/trace-book/traces.js]\n"
    text += f"watch: [{PACKAGE}]\n"
    config.write_text(text)
    page = book / "docs" / f"{CHAPTER}.md"
    fronts = {
        "mkdocs serve": ["mkdocs", "serve"],
        "mkdocs serve --dirty": ["mkdocs", "serve", "--dirty", "--no-strict"],
        "zensical serve": ["zensical", "serve"],
    }
    print(f"the writing loop: a saved sentence of the chapter page to the served page (median of {repeat}):")
    for name, command in fronts.items():
        server = Server(book, command, clean_env())
        try:
            server.wait_for_page(f"{CHAPTER}/", "scenario calls_a_tool")
            seconds = []
            for number in range(repeat):
                time.sleep(1.0)  # past the server's settling after the last rebuild
                before = page.read_text()
                new = f"A loop ({name} {number}) of its own"
                page.write_text(before.replace(SENTENCE, new, 1))
                seconds.append(server.wait_for_page(f"{CHAPTER}/", new, limit=30))
                page.write_text(before)
                server.wait_for_page(f"{CHAPTER}/", SENTENCE, limit=30)
            print(
                f"  {name:<22} {statistics.median(seconds):5.2f} s   (each: {', '.join(f'{s:.2f}' for s in seconds)})"
            )
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="saves per front end (5)")
    parser.add_argument("--no-install", action="store_true", help="skip the fresh venv and pip install")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="new-book-") as scratch:
        if not args.no_install:
            wheel_to_first_page(Path(scratch))
        lines_written(Path(scratch))
        writing_loop(Path(scratch), args.repeat)


if __name__ == "__main__":
    main()
