"""What the trace machinery costs a build, and how fast `mkdocs serve` shows a saved edit.

    .venv/bin/python benchmarks/build.py [--repeat 5]

Works on a copy of the book (docs, mkdocs.yml, hooks, primer) in a temporary
folder, so the checkout's caches are left alone, and prints side by side:

* the warm build (every trace cached) with traces over the same build with
  ``PRIMER_TRACES=off`` (target: at most 1.25), as wall time of the whole
  ``mkdocs build`` command, and as the time MkDocs itself reports;
* the cold build (no trace cache: every mock scenario runs) over the warm one;
* during ``mkdocs serve``: the time from saving a chapter module (one reply
  text changed) to the rebuilt page being served, and the same for prose.
  The server polls for changes every 0.5 s, which bounds this from below.

Medians of ``--repeat`` runs. No key is set: live runs are not measured.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPIED = ["docs", "hooks", "primer", "tests", "mkdocs.yml", "README.md", "pyproject.toml"]
CHAPTER = "primer/chapters/ch05_loop_endings.py"
CHAPTER_TEXT = "there is only one left"
CHAPTER_PAGE = "ch05_loop_endings/"
PROSE = "docs/ch05_loop_endings.md"


def copy_book(target: Path) -> None:
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "traces"))
        elif source.exists():
            shutil.copy2(source, target / name)


def environment(book: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIMER_")}
    env.update(PYTHONPATH=str(book), NO_MKDOCS_2_WARNING="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def build(book: Path, **extra: str) -> float:
    """Wall seconds of one quiet ``mkdocs build``."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(book / "site")],
        cwd=book,
        env=environment(book, **extra),
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"mkdocs build failed:\n{done.stdout}{done.stderr}")
    return wall


def reported(book: Path, **extra: str) -> float:
    """The ``Documentation built in X seconds`` figure of one verbose build."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-d", str(book / "site")],
        cwd=book,
        env=environment(book, **extra),
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"Documentation built in ([0-9.]+) seconds", done.stdout + done.stderr)
    return float(match[1]) if match else float("nan")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Serve:
    """A ``mkdocs serve`` of the copy, with its log."""

    def __init__(self, book: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mkdocs", "serve", "--dev-addr", f"127.0.0.1:{self.port}"],
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
                raise SystemExit("mkdocs serve did not start:\n" + "\n".join(self.lines))
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
            if time.perf_counter() - started > 60:
                raise SystemExit("the page never showed the edit:\n" + "\n".join(self.lines[-20:]))
            time.sleep(0.02)
        return time.perf_counter() - started

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="primer-bench-") as folder:
        book = Path(folder)
        copy_book(book)
        cache = book / ".cache"

        cold, warm, off = [], [], []
        for _ in range(args.repeat):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(build(book))
            warm.append(build(book))
            off.append(build(book, PRIMER_TRACES="off"))
        warm_inside = reported(book)
        off_inside = reported(book, PRIMER_TRACES="off")

        server = Serve(book)
        try:
            chapter, prose = [], []
            for n in range(args.repeat):
                edited = f"{CHAPTER_TEXT} (edit {n})"
                chapter.append(server.save_and_wait(book / CHAPTER, CHAPTER_TEXT, edited, CHAPTER_PAGE, edited))
                time.sleep(1.0)
                said = f"Prose edit {n}."
                prose.append(server.save_and_wait(book / PROSE, "\n", f"\n\n{said}\n\n", CHAPTER_PAGE, said))
                time.sleep(1.0)
            reruns = [line[line.index("traces:") :] for line in server.lines if "traces: ran" in line]
        finally:
            server.stop()

    median = statistics.median
    rows = [
        ("warm build, traces on (wall)", median(warm), ""),
        ("warm build, PRIMER_TRACES=off (wall)", median(off), ""),
        ("  on / off (wall)", median(warm) / median(off), "target <= 1.25"),
        ("warm build, traces on (MkDocs' own figure)", warm_inside, ""),
        ("warm build, PRIMER_TRACES=off (MkDocs' own)", off_inside, ""),
        ("  on / off (MkDocs' own)", warm_inside / off_inside, ""),
        ("cold build, no trace cache (wall)", median(cold), ""),
        ("  cold / warm (wall)", median(cold) / median(warm), ""),
        ("serve: save chapter -> rebuilt page", median(chapter), "polling every 0.5 s"),
        ("serve: save prose -> rebuilt page", median(prose), ""),
    ]
    print(f"{'measure':<46} {'value':>8}  note")
    for label, value, note in rows:
        unit = "x" if label.startswith("  ") else "s"
        print(f"{label:<46} {value:>7.2f}{unit}  {note}")
    print(f"serve rebuilds: {'; '.join(reruns)}")


if __name__ == "__main__":
    main()
