"""What the trace machinery costs a build, and how fast `mkdocs serve` shows a saved edit.

    .venv/bin/python benchmarks/build.py [--repeat 12] [--baseline DIR] [--no-serve]

Works on a copy of the book (docs with the frozen live traces, mkdocs.yml,
hooks, primer) in a temporary folder, so the checkout's caches are left
alone, and prints side by side:

* the warm build (every trace cached) with traces over the same build with
  ``PRIMER_TRACES=off`` (target: at most 1.25), as wall time of the whole
  ``mkdocs build`` command, as its CPU time, and as the time MkDocs itself
  reports (from loading the configuration to the last page, so without
  Python's start-up and imports);
* the cold build (no cache: every mock scenario runs, every trace renders)
  over the warm one;
* during ``mkdocs serve``: the time from saving a chapter module (one reply
  text changed) to the rebuilt page being served, and the same for prose;
  the rebuild as MkDocs times it; and the trace machinery's own share of
  each rebuild (the ``traces: the machinery's share`` line the hook logs at
  DEBUG). The server polls for changes every 0.5 s and waits 0.1 s for more,
  which bounds the latency from below. The same again with
  ``mkdocs serve --dirty --no-strict``, which rebuilds only the pages that
  changed (``--no-strict``: MkDocs warns on every dirty build). A page that
  never shows the edit (within 20 s) counts as not a number.

The machine may be shared, and its speed drifts by a quarter within
minutes, so builds are interleaved (each round: warm and off back to back,
taking turns at going first, then cold) and every figure is a median of
``--repeat`` runs; the on/off ratio is also given as the median of the
ratios of each round's pair, which the drift affects least, and as the
ratio of the fastest runs, the least disturbed by other work.

``--baseline DIR`` measures a second checkout the same way, in the same
rounds, and prints its figures in a second column: before and after a
change, in one run (make one with ``git worktree add DIR HEAD`` or
``git archive HEAD | tar -x -C DIR``). No key is set: live runs are not
measured.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ["docs", "hooks", "primer", "tests", "mkdocs.yml", "README.md", "pyproject.toml"]
CHAPTER = "primer/chapters/ch05_loop_endings.py"
CHAPTER_TEXT = "there is only one left"
CHAPTER_PAGE = "ch05_loop_endings/"
PROSE = "docs/ch05_loop_endings.md"
BUILT = re.compile(r"Documentation built in ([0-9.]+) seconds")
SHARE = re.compile(r"traces: the machinery's share of this build: ([0-9.]+) ms")


def copy_book(source: Path, target: Path) -> None:
    for name in COPIED:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, target / name, ignore=shutil.ignore_patterns("__pycache__", ".cache", "site"))
        elif path.exists():
            shutil.copy2(path, target / name)


def environment(book: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update(PYTHONPATH=str(book), NO_MKDOCS_2_WARNING="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


@dataclass
class Run:
    """One ``mkdocs build``: wall seconds, CPU seconds (user + system), MkDocs' own figure."""

    wall: float
    cpu: float
    inside: float


def build(book: Path, **extra: str) -> Run:
    """One ``mkdocs build`` of the copy."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-d", str(book / "site")],
        cwd=book,
        env=environment(book, **extra),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"mkdocs build failed:\n{done.stdout}{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    match = BUILT.search(done.stdout + done.stderr)
    return Run(wall, cpu, float(match[1]) if match else float("nan"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Serve:
    """A ``mkdocs serve -v`` of the copy, with its log."""

    def __init__(self, book: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "-v", "--dev-addr", f"127.0.0.1:{self.port}", *args],
            cwd=book,
            env=environment(book),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 120
        while not any("Serving on" in line for line in self.lines):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("mkdocs serve did not start:\n" + "\n".join(self.lines[-40:]))
            time.sleep(0.05)
        # site_url's path is the mount point (/trace-book/).
        [serving] = [line for line in self.lines if "Serving on" in line]
        self.url = serving.split("Serving on ", 1)[1].strip().rstrip("/") + "/"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=60) as response:
            return str(response.read().decode())

    def save_and_wait(self, path: Path, old: str, new: str, page: str, expect: str) -> float:
        """Seconds from saving ``path`` (``old`` replaced by ``new``) to ``page`` being served with ``expect``."""
        text = path.read_text()
        started = time.perf_counter()
        path.write_text(text.replace(old, new, 1))
        while expect not in self.get(page):
            if time.perf_counter() - started > 20:
                return float("nan")
            time.sleep(0.02)
        return time.perf_counter() - started

    def settle(self, start: int) -> None:
        """Wait until the rebuild begun after log line ``start`` is logged as done (or 20 s)."""
        deadline = time.monotonic() + 20
        while not any(BUILT.search(line) for line in self.lines[start:]) and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


@dataclass
class Saves:
    """One serve session's saves: seconds to the page, MkDocs' rebuild figure, the machinery's share (ms)."""

    seconds: list[float] = field(default_factory=list)
    rebuild: list[float] = field(default_factory=list)
    share: list[float] = field(default_factory=list)


@dataclass
class Figures:
    """Everything measured of one checkout."""

    cold: list[Run] = field(default_factory=list)
    warm: list[Run] = field(default_factory=list)
    off: list[Run] = field(default_factory=list)
    #: (serve arguments, "chapter" or "prose") -> the saves.
    saves: dict[tuple[str, str], Saves] = field(default_factory=dict)
    reruns: list[str] = field(default_factory=list)


def rounds(books: dict[str, Path], figures: dict[str, Figures], repeat: int) -> None:
    """Interleaved builds: each round builds every checkout warm and off back to back, then cold.

    The machine's speed drifts (other work on a shared host): a warm build
    and the off build it is compared with run one right after the other, in
    turns first, and the checkouts take turns too.
    """
    for book in books.values():
        build(book)  # fills the caches for the first round's warm build
    for n in range(repeat):
        labels = list(books) if n % 2 == 0 else list(reversed(books))
        for label in labels:
            book = books[label]
            pair = [("warm", {}), ("off", {"PRIMER_TRACES": "off"})]
            for kind, env in pair if (n // 2) % 2 == 0 else reversed(pair):
                getattr(figures[label], kind).append(build(book, **env))
        for label in labels:
            # Last in the round, so the next round's warm build finds a full cache.
            shutil.rmtree(books[label] / ".cache", ignore_errors=True)
            figures[label].cold.append(build(books[label]))
        print(f"  round {n + 1}/{repeat} done", file=sys.stderr)


SERVES = ("", "--dirty --no-strict")


def serve(book: Path, figures: Figures, repeat: int, args: str) -> None:
    """Save a chapter module, then prose, ``repeat`` times; time each until the page shows it."""
    shutil.rmtree(book / ".cache", ignore_errors=True)
    build(book)  # the server starts warm, as an author's does
    server = Serve(book, *args.split())
    try:
        for n in range(repeat):
            # Each session's edits say which they are: the copy keeps the earlier ones.
            tag = f"{n}{args.replace(' ', '')}"
            for kind, path, old, new in (
                ("chapter", book / CHAPTER, CHAPTER_TEXT, f"{CHAPTER_TEXT} (edit {tag})"),
                ("prose", book / PROSE, "\n", f"\n\nProse edit {tag}.\n\n"),
            ):
                saves = figures.saves.setdefault((args, kind), Saves())
                start = len(server.lines)
                saves.seconds.append(server.save_and_wait(path, old, new, CHAPTER_PAGE, new.strip()))
                server.settle(start)
                # Long enough to see a second rebuild, were the first to trigger one.
                time.sleep(1.0)
                logged = server.lines[start:]
                saves.rebuild.extend([float(m[1]) for line in logged if (m := BUILT.search(line))][:1])
                saves.share.extend([float(m[1]) for line in logged if (m := SHARE.search(line))][:1])
        if not args:
            figures.reruns = [line[line.index("traces:") :] for line in server.lines if "traces: ran" in line]
    finally:
        server.stop()


def median(values: list[float]) -> float:
    """The median of the values that are numbers (a page that never showed an edit is not one)."""
    numbers = [value for value in values if not math.isnan(value)]
    return statistics.median(numbers) if numbers else float("nan")


def table(figures: dict[str, Figures]) -> list[tuple[str, list[float], str, str]]:
    """Rows of (label, one value per checkout, unit, note)."""

    def of(pick: Callable[[Figures], float]) -> list[float]:
        return [pick(f) for f in figures.values()]

    def paired(f: Figures) -> float:
        return median([on.wall / off.wall for on, off in zip(f.warm, f.off, strict=False)])

    rows = [
        ("warm build, traces on (wall)", of(lambda f: median([r.wall for r in f.warm])), "s", ""),
        ("warm build, PRIMER_TRACES=off (wall)", of(lambda f: median([r.wall for r in f.off])), "s", ""),
        (
            "  on / off (wall, medians)",
            of(lambda f: median([r.wall for r in f.warm]) / median([r.wall for r in f.off])),
            "x",
            "target <= 1.25",
        ),
        ("  on / off (wall, median of paired rounds)", of(paired), "x", "target <= 1.25"),
        (
            "  on / off (wall, fastest of each)",
            of(lambda f: min([r.wall for r in f.warm] or [math.nan]) / min([r.wall for r in f.off] or [math.nan])),
            "x",
            "least disturbed",
        ),
        (
            "  on / off (CPU time)",
            of(lambda f: median([r.cpu for r in f.warm]) / median([r.cpu for r in f.off])),
            "x",
            "user + system",
        ),
        ("warm build, traces on (MkDocs' own figure)", of(lambda f: median([r.inside for r in f.warm])), "s", ""),
        ("warm build, PRIMER_TRACES=off (MkDocs' own)", of(lambda f: median([r.inside for r in f.off])), "s", ""),
        (
            "  on / off (MkDocs' own)",
            of(lambda f: median([r.inside for r in f.warm]) / median([r.inside for r in f.off])),
            "x",
            "no start-up",
        ),
        ("cold build, no cache (wall)", of(lambda f: median([r.wall for r in f.cold])), "s", ""),
        (
            "  cold / warm (wall)",
            of(lambda f: median([r.wall for r in f.cold]) / median([r.wall for r in f.warm])),
            "x",
            "",
        ),
    ]
    for args in SERVES:
        name = f"serve {args}".replace(" --no-strict", "").strip()
        for kind, note in (("chapter", "runs the chapter"), ("prose", "runs nothing")):

            def saves(f: Figures, key: tuple[str, str] = (args, kind)) -> Saves:
                return f.saves.get(key, Saves())

            rows += [
                (f"{name}: save {kind} -> rebuilt page", of(lambda f, s=saves: median(s(f).seconds)), "s", ""),
                ("  its rebuild (MkDocs' figure)", of(lambda f, s=saves: median(s(f).rebuild)), "s", ""),
                ("  the machinery's share of it", of(lambda f, s=saves: median(s(f).share)), "ms", note),
            ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=12, help="builds of each kind, and saves of each kind")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure alongside, e.g. before a change")
    parser.add_argument("--no-serve", action="store_true", help="measure builds only")
    args = parser.parse_args()

    sources = {"this": ROOT}
    if args.baseline is not None:
        sources["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory(prefix="primer-bench-") as folder:
        books = {label: Path(folder) / label for label in sources}
        for label, source in sources.items():
            books[label].mkdir()
            copy_book(source, books[label])
        figures = {label: Figures() for label in books}
        rounds(books, figures, args.repeat)
        if not args.no_serve:
            for mode in SERVES:
                for label, book in books.items():
                    serve(book, figures[label], args.repeat, mode)

    heads = "".join(f"{label:>10}" for label in figures)
    print(f"{'measure':<46}{heads}  note")
    for label, values, unit, note in table(figures):
        if all(math.isnan(value) for value in values):  # not measured
            continue
        cells = "".join(f"{value:>{10 - len(unit)}.{0 if unit == 'ms' else 2}f}{unit}" for value in values)
        print(f"{label:<46}{cells}  {note}")
    for label, f in figures.items():
        if f.reruns:
            print(f"serve rebuilds ({label}): {'; '.join(f.reruns)}")


if __name__ == "__main__":
    main()
