"""What a build costs on each path an author takes, and how fast `mkdocs serve` shows a saved edit.

    .venv/bin/python benchmarks/build.py [--books this 100] [--repeat 7] [--saves 7] [--no-serve] [--baseline DIR]

Each book is built in a scratch folder in memory (``books.py``): ``this``, a
copy of this checkout's book (all its chapters, the frozen live traces, the
listings its pages include), or a number, a synthetic book of that many
chapters x 4 scenarios with its own copy of ``primer``. No key is set: live
runs are not measured (a library edit verifies the frozen live traces).

**Builds** (``mkdocs build``, as an author runs it: no ``--verbose``), every
kind once a round, in rotating order, ``--repeat`` rounds:

* ``warm``: nothing changed, every trace cached;
* ``off``: the same with ``PRIMER_TRACES=off``;
* ``cold``: no cache (``.cache`` removed): every mock scenario runs, every
  trace renders;
* ``after a prose / comment / chapter / library / template edit``: the
  build right after saving a new edit of that kind (``books.EDITS``: a
  sentence in a chapter's page; a comment in its module; a reply text in
  its module; a function added to ``primer/loop.py``; a line in the chapter
  template). Each edit is new (a content-addressed cache would answer a
  revert from its entries); each page is checked for the edit's probe, so
  a build that published stale HTML shows as ``shown 0/7``.

Every build but the cold and the edited ones starts from a full cache, so
any order is fair. Printed: each kind's median (wall; CPU; MkDocs' own
figure, which leaves out Python's start-up), the machinery's log line, and
each kind over the same round's warm build as the median of the rounds'
ratios with its 95 % interval and IQR (``figures.py``); cold - off, the
machinery's cost in a cold build, and its own timing line from one more
cold build with ``--verbose`` (target <= 0.8 s for this book, issue 21).

**Serve** (``mkdocs serve`` without ``-v``, which would log every event of
every page, and with ``--dirty``): ``--saves`` saves each of a chapter
module (a reply text), of prose and of the template, rotating. Before each
save the server is idle (no log line for a second); the time is from the
save to the page being served with the edit's probe where the trace
changes (the chapter edit's probe cannot match the page's source listing),
polled every 20 ms. MkDocs holds a request until its rebuild ends, so the
page comes at the end of the rebuild the save started; its rebuild time is
read from the log lines after that save, which also count how many
rebuilds it set off (more than one: the build's own writes woke the
watcher). A page that never shows the edit within ``--wait`` seconds
counts as not a number (``shown 0/7``).

``--callgrind N`` counts the instructions of a warm build, an off one and
one after a comment edit under ``valgrind --tool=callgrind`` (N of each):
the comment edit's target (1.05x warm) is finer than timed pairs resolve on
a shared machine.

``--baseline DIR`` measures a second checkout the same way, in the same
rounds (``git worktree add DIR HEAD``). ``--quick``: a 3-chapter book, one
round, one save of each under a plain serve, for CI (tests/test_benchmarks.py); its figures mean
nothing.
"""

from __future__ import annotations

import argparse
import math
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from books import (
    BUILT,
    ROOT,
    Edit,
    Editor,
    Run,
    callgrind,
    copy_book,
    edits,
    environment,
    generate,
    has_callgrind,
    mkdocs,
    scratch,
)
from figures import differences, median, ratios, spread, turns

#: Issue 21's targets: a comment-only edit at most this over warm; a cold build's machinery share (ms).
COMMENT_TARGET, COLD_SHARE_TARGET = 1.05, 800
SERVED_KINDS = ("chapter", "prose", "template")
SERVES = ("", "--dirty --no-strict")


@dataclass
class Book:
    """One book of one checkout, and what was measured of it."""

    label: str
    path: Path
    synthetic: bool
    edits: list[Edit]
    editor: Editor
    runs: dict[str, list[Run]] = field(default_factory=dict)
    shown: dict[str, list[bool | None]] = field(default_factory=dict)
    cold_share: float | None = None
    #: (serve arguments, kind) -> the saves.
    saves: dict[tuple[str, str], Saves] = field(default_factory=dict)
    edited: int = 0

    def kinds(self) -> list[str]:
        return ["warm", "off", "cold", *(f"after a {e.kind} edit" for e in self.edits)]

    def next_edit(self) -> int:
        self.edited += 1
        return self.edited


def make(label: str, checkout: Path, spec: str, work: Path) -> Book:
    """The book ``spec`` names (``this`` or a chapter count) of ``checkout``, in ``work``."""
    folder = work / f"{label}-{spec}"
    if spec == "this":
        path, synthetic = copy_book(checkout, folder), False
    elif spec.isdigit():
        path, synthetic = generate(folder, int(spec), library=checkout), True
    else:
        raise SystemExit(f"--books takes 'this' or a number of chapters, not {spec!r}")
    name = f"{label}: {'this book' if spec == 'this' else f'{spec} synthetic chapters'}"
    return Book(name, path, synthetic, edits(path, synthetic=synthetic), Editor(path))


def prepare(book: Book, kind: str) -> tuple[dict[str, str], Edit | None, int]:
    """Set the book up for a build of ``kind``: its environment, and the edit saved (with its number)."""
    env = {"PRIMER_TRACES": "off"} if kind == "off" else {}
    edit = next((e for e in book.edits if kind == f"after a {e.kind} edit"), None)
    n = 0
    if kind == "cold":
        shutil.rmtree(book.path / ".cache", ignore_errors=True)
    elif edit is not None:
        n = book.next_edit()
        book.editor.apply(edit, n)
    return env, edit, n


def one(book: Book, kind: str) -> None:
    """One build of ``kind``, recorded on the book."""
    env, edit, n = prepare(book, kind)
    book.runs.setdefault(kind, []).append(mkdocs(book.path, **env))
    if edit is not None:
        book.shown.setdefault(kind, []).append(edit.shown(book.path, n))


#: The kinds counted under callgrind: the fine ratio (a comment edit over warm) and warm over off.
COUNTED = ("warm", "off", "after a comment edit")


def count(book: Book, runs: int) -> None:
    """Instructions of the ``COUNTED`` kinds under callgrind, ``runs`` of each; printed with their ratios."""
    mkdocs(book.path)  # the cache full for the current files
    lines: dict[str, str] = {}
    counts: dict[str, list[float]] = {kind: [] for kind in COUNTED}
    for n in range(runs):
        for kind in turns(list(COUNTED), n):
            env, _, _ = prepare(book, kind)
            counted = callgrind(book.path, "mkdocs", "build", "-d", str(book.path / "site"), **env)
            counts[kind].append(counted.instructions)
            lines[kind] = counted.ran
            print(f"  {book.label}: callgrind {kind} {n + 1}/{runs}", file=sys.stderr)
    print(f"\n{book.label}: instructions (valgrind --tool=callgrind, {runs} of each, PYTHONHASHSEED=0)")
    for kind, values in counts.items():
        print(f"  {kind:26} {median(values) / 1e9:8.3f} G   {lines.get(kind) or '(no machinery line)'}")
    comment = ratios(counts["after a comment edit"], counts["warm"])
    print(f"  after a comment edit / warm  {comment.text(4)}   target <= {COMMENT_TARGET:g}")
    print(f"  warm / off                   {ratios(counts['warm'], counts['off']).text(4)}")


def rounds(books: list[Book], repeat: int) -> None:
    """``repeat`` rounds: every kind of every book once, in rotating order."""
    for book in books:
        mkdocs(book.path)  # fills the caches for the first warm build
    for n in range(repeat):
        for book in turns(books, n):
            for kind in turns(book.kinds(), n):
                one(book, kind)
        print(f"  builds: round {n + 1}/{repeat} done", file=sys.stderr)
    for book in books:  # the machinery's own figure for a cold build, logged at DEBUG
        shutil.rmtree(book.path / ".cache", ignore_errors=True)
        book.cold_share = mkdocs(book.path, "--verbose").share


# -- serve -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Serve:
    """A ``mkdocs serve`` of a book (no ``-v``), with its log."""

    def __init__(self, book: Path, *args: str) -> None:
        port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}", *args],
            cwd=book,
            env=environment(book),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 180
        while not (serving := [line for _, line in self.lines if "Serving on" in line]):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise SystemExit("mkdocs serve did not start:\n" + "\n".join(line for _, line in self.lines[-40:]))
            time.sleep(0.05)
        # site_url's path is the mount point (/trace-book/ for this book).
        self.url = serving[0].split("Serving on ", 1)[1].strip().rstrip("/") + "/"

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append((time.monotonic(), line.rstrip()))

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=120) as response:
            return str(response.read().decode())

    def idle(self, quiet: float = 1.0, limit: float = 60) -> None:
        """Wait until no line was logged for ``quiet`` seconds (or ``limit``)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            last = self.lines[-1][0] if self.lines else 0.0
            if time.monotonic() - last >= quiet:
                return
            time.sleep(0.05)

    def built(self, start: int) -> list[float]:
        """MkDocs' rebuild figures logged since line ``start``."""
        return [float(m[1]) for _, line in self.lines[start:] if (m := BUILT.search(line))]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Saves:
    """One kind of save in one serve mode: seconds to the page, the same rebuild's figure, rebuilds set off."""

    seconds: list[float] = field(default_factory=list)
    rebuild: list[float] = field(default_factory=list)
    rebuilds: list[int] = field(default_factory=list)


def serve(book: Book, args: str, saves: int, wait: float) -> None:
    """``saves`` saves of each served kind under one ``mkdocs serve``; each timed to the page that shows it."""
    mkdocs(book.path)  # the server starts warm, as an author's does
    server = Serve(book.path, *args.split())
    by_kind = {e.kind: e for e in book.edits}
    gave_up: set[str] = set()
    try:
        server.get(by_kind["prose"].page + "/")
        for n in range(saves):
            for kind in turns(list(SERVED_KINDS), n):
                record = book.saves.setdefault((args, kind), Saves())
                if kind in gave_up:  # it never showed: waiting again says nothing new
                    record.seconds.append(math.nan)
                    continue
                edit = by_kind[kind]
                server.idle()
                start, k = len(server.lines), book.next_edit()
                probe, page = edit.probe(k), edit.page + "/"
                started = time.perf_counter()
                book.editor.apply(edit, k)
                seconds = math.nan
                while time.perf_counter() - started < wait:
                    if probe in server.get(page):
                        seconds = time.perf_counter() - started
                        break
                    time.sleep(0.02)
                server.idle()
                figures = server.built(start)
                record.seconds.append(seconds)
                record.rebuild.extend(figures[:1])
                record.rebuilds.append(len(figures))
                if math.isnan(seconds):
                    gave_up.add(kind)
        print(f"  serve {args or '(plain)'}: {book.label} done", file=sys.stderr)
    finally:
        server.stop()


# -- the report --------------------------------------------------------------


def report(book: Book) -> None:
    """Print one book's figures."""
    warm = [r.wall for r in book.runs["warm"]]
    print(f"\n{book.label}: {len(warm)} interleaved rounds (wall seconds, medians; IQR)")
    for kind in book.kinds():
        runs = book.runs[kind]
        s = spread([r.wall for r in runs])
        shown = book.shown.get(kind, [])
        seen = f"   shown {sum(1 for x in shown if x)}/{len(shown)}" if shown and shown[0] is not None else ""
        line = runs[-1].ran or "(no machinery line)"
        print(
            f"  {kind:26} {s.value:7.3f} s (IQR {s.q1:.3f}-{s.q3:.3f})   CPU {median([r.cpu for r in runs]):6.2f} s"
            f"   MkDocs' own {median([r.inside for r in runs]):6.2f} s{seen}"
        )
        if kind != "off":
            print(f"  {'':26} {line}")
    print("  over the same round's warm build (median of the pairs, 95 % interval, IQR):")
    for kind in book.kinds():
        if kind == "warm":
            continue
        ratio = ratios([r.wall for r in book.runs[kind]], warm)
        text = ratio.against(COMMENT_TARGET) if kind == "after a comment edit" else ratio.text()
        print(f"    {kind + ' / warm':33} {text}")
    cost = differences([r.wall for r in book.runs["cold"]], [r.wall for r in book.runs["off"]])
    print(f"  cold - off (the machinery's cost in a cold build): {cost.text(3, ' s')}")
    share = f"{book.cold_share:.0f} ms" if book.cold_share is not None else "not logged"
    print(f"  the machinery's timing line, one cold build with --verbose: {share} (target <= {COLD_SHARE_TARGET} ms)")
    if book.saves:
        print("  mkdocs serve, save -> page served with the edit (seconds; medians, IQR):")
    for (args, kind), record in book.saves.items():
        name = f"serve {args}".replace(" --no-strict", "").strip()
        s = spread(record.seconds)
        shown = sum(1 for x in record.seconds if not math.isnan(x))
        rebuild = median(record.rebuild)
        extra = max(record.rebuilds, default=0)
        print(
            f"    {name + ': save ' + kind:28} {s.value:6.2f} s (IQR {s.q1:.2f}-{s.q3:.2f})"
            f"   its rebuild {rebuild:5.2f} s   shown {shown}/{len(record.seconds)}   rebuilds per save <= {extra}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--books", nargs="+", default=["this", "100"], help="'this' or a number of chapters")
    parser.add_argument("--repeat", type=int, default=7, help="rounds of builds")
    parser.add_argument("--saves", type=int, default=7, help="saves of each kind in each serve mode")
    parser.add_argument("--wait", type=float, default=20, help="seconds a save may take to show")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure alongside, e.g. before a change")
    parser.add_argument("--no-serve", action="store_true", help="measure builds only")
    parser.add_argument("--callgrind", type=int, default=0, metavar="N", help="count instructions too, N runs each")
    parser.add_argument("--no-timed", action="store_true", help="skip the timed builds and serve (with --callgrind)")
    parser.add_argument("--quick", action="store_true", help="a 3-chapter book, one round, one save each: for CI")
    args = parser.parse_args()
    if args.quick:
        args.books, args.repeat, args.saves, args.wait = ["3"], 1, 1, 5

    if args.callgrind and not has_callgrind():
        raise SystemExit("--callgrind needs valgrind (apt-get install valgrind)")
    checkouts = {"this": ROOT}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve()
    with scratch() as folder:
        work = Path(folder)
        books = [make(label, checkout, spec, work) for spec in args.books for label, checkout in checkouts.items()]
        if not args.no_timed:
            rounds(books, args.repeat)
            if not args.no_serve:
                for mode in SERVES[:1] if args.quick else SERVES:  # --dirty is the same code with one more flag
                    for book in books:
                        serve(book, mode, args.saves, args.wait)
            for book in books:
                report(book)
        for book in books if args.callgrind else []:
            count(book, args.callgrind)


if __name__ == "__main__":
    main()
