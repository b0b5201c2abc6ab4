"""``mkdocs serve`` as an author runs it (no ``-v``), and one save timed to the page that shows it.

MkDocs holds a request until the rebuild in progress ends, so polling the
page after a save gives the moment the rebuild the save set off was served.

MkDocs 1.6 watches by polling (``POLL``): a save is seen at the next poll, up
to half a second later. Each save waits for the server to be idle and then
a random part of a poll (the same sequence for every book), as an author's
save comes at any moment: waited for a fixed time instead, the save fell at
a fixed point of the poll, set by the previous rebuild's length, so a
faster rebuild waited longer to be seen (reproduced: markdown-exec's book,
24 ms slower to rebuild, was seen 51 ms sooner). Recorded apart: the save
to the moment MkDocs saw it, and from there to the page served.
Used by ``build.py`` (each kind of save, plain and ``--dirty``) and
``dirty_serve.py`` (``--dirty`` against markdown-exec's).
"""

from __future__ import annotations

import math
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from books import BUILT, Edit, Editor, environment

#: MkDocs' polling interval (``LiveReloadServer``'s default, which ``mkdocs serve`` keeps).
POLL = 0.5
_PHASE = random.Random(21)


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(process: subprocess.Popen[str]) -> None:
    """End a server this script started: asked first, killed if it does not go within 20 s."""
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Serve:
    """A ``mkdocs serve`` of a book (no ``-v``), with its log."""

    def __init__(self, book: Path, *args: str, **env: str) -> None:
        port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{port}", *args],
            cwd=book,
            env=environment(book, **env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[tuple[float, str]] = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 300
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
        """The served page at ``path`` (MkDocs answers once the rebuild in progress ends)."""
        with urllib.request.urlopen(self.url + path, timeout=300) as response:
            return str(response.read().decode())

    def idle(self, quiet: float = 1.0, limit: float = 120) -> None:
        """Wait until no rebuild is under way and no line was logged for ``quiet`` seconds (or ``limit``).

        A rebuild logs nothing for seconds between its first lines and its last: quiet alone
        would take one under way for rest, and a save timed then would be served by it.
        """
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            lines = list(self.lines)
            last = lines[-1][0] if lines else 0.0
            began = sum("Detected file changes" in line for _, line in lines)
            ended = sum(
                "Reloading browsers" in line or "error happened during the rebuild" in line for _, line in lines
            )
            if time.monotonic() - last >= quiet and began <= ended:
                return
            time.sleep(0.05)

    def built(self, start: int) -> list[float]:
        """MkDocs' rebuild figures logged since line ``start``."""
        return [float(m[1]) for _, line in self.lines[start:] if (m := BUILT.search(line))]

    def stop(self) -> None:
        """End the server (it is this script's own child)."""
        stop(self.process)


@dataclass
class Saves:
    """One kind of save in one serve mode: seconds to the page, the same rebuild's figure, rebuilds set off."""

    seconds: list[float] = field(default_factory=list)
    #: Of each: to MkDocs seeing the save (its poll), and from there to the page served.
    seen: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    rebuild: list[float] = field(default_factory=list)
    rebuilds: list[int] = field(default_factory=list)
    #: Why a save did not show: ``no rebuild`` (none began within the wait), ``rebuilt without it``, ``timed out``.
    missed: list[str] = field(default_factory=list)


def timed_save(server: Serve, editor: Editor, edit: Edit, n: int, *, wait: float, record: Saves, quiet: float) -> bool:
    """Save the ``n``-th ``edit`` with the server idle; time it to the served page showing its probe.

    Recorded in ``record``; returns whether it showed. A save that does not
    show is told apart by the log, not by a timeout alone (on a loaded
    machine a rebuild of this book can take longer than any fixed wait): no
    rebuild began within ``wait`` seconds, or one ended and the page it
    served lacks the edit, or (``timed out``) a rebuild began and had not
    ended in ``wait`` seconds more.
    """
    server.idle(quiet)
    time.sleep(_PHASE.uniform(0, POLL))
    start, probe, page = len(server.lines), edit.probe(n), edit.page + "/"
    started = time.monotonic()  # the clock the log lines are stamped with
    editor.apply(edit, n)
    seconds, missed = math.nan, "timed out"
    while True:
        began = any("Building documentation" in line for _, line in server.lines[start:])
        ended = bool(server.built(start))  # read before the page: the page then comes from that rebuild or a later one
        if probe in server.get(page):
            seconds = time.monotonic() - started
            break
        elapsed = time.monotonic() - started
        if ended:
            missed = "rebuilt without it"
            break
        if elapsed > (2 * wait if began else wait):
            missed = "timed out" if began else "no rebuild"
            break
        time.sleep(0.02)
    server.idle(quiet)
    figures = server.built(start)
    seen = next((at - started for at, line in server.lines[start:] if "Detected file changes" in line), math.nan)
    record.seen.append(seen)
    record.after.append(seconds - seen)
    record.seconds.append(seconds)
    record.rebuild.extend(figures[:1])
    record.rebuilds.append(len(figures))
    if math.isnan(seconds):
        record.missed.append(missed)
    return not math.isnan(seconds)


def missed(record: Saves) -> str:
    """Why saves did not show, for the report (empty if every one did)."""
    return "".join(f"   {reason}: {record.missed.count(reason)}" for reason in sorted(set(record.missed)))
