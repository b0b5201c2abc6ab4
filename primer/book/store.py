"""The trace store: where each chapter's traces live, on disk and in memory.

Two kinds of file, kept apart on purpose::

    docs/traces/CHAPTER.live.json              frozen live traces: committed,
                                               reused as they are when no key is set
    .cache/trace-book/traces/CHAPTER.mock.json mock traces: a cache, rebuilt at will,
                                               outside the docs so it is never published

Every file is a ``ChapterRun`` as JSON, stamped with the ``source_hash`` of the
code that produced it. Files are written atomically and only when their
content changed (``primer.book.atomic``). A parsed file is kept in memory
against its size and modification time, so a ``mkdocs serve`` rebuild after a
prose edit reads no JSON at all.

A file that does not read as a trace raises ``CorruptTrace``, naming the
file and the field (``primer.trace_file``); the build then runs the
chapter again and replaces the file.

The store is also the renderer's ``TraceSource``: after the build has decided
what each chapter shows, ``traces(chapter)`` hands it over, with the address
of the chapter's published JSON (``traces/CHAPTER.json`` in the site, both
modes in one file, for readers to download: ``primer.book.publish``). A
warm build with nothing to do shows each chapter by its ``TraceSummary``
(``primer.book.manifest``): ``summary(chapter)`` gives it, and the runs are
read only when ``traces(chapter)`` is asked.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.book.atomic import write_if_changed
from primer.book.links import PAYLOADS_SUFFIX, PUBLISHED_DIR
from primer.book.publish import MOCK_EPOCH, Publisher
from primer.book.source import ChapterTraces, TraceSummary
from primer.errors import NotFound
from primer.trace_file import UnreadableTrace as CorruptTrace
from primer.trace_file import parse, read

if TYPE_CHECKING:  # the trace models are loaded by the first file parsed (primer.trace_file)
    from primer.book.publish import Payloads
    from primer.replay import ChapterCheck
    from primer.trace import ChapterRun, Mode

__all__ = ["MOCK_EPOCH", "PUBLISHED_DIR", "CorruptTrace", "TraceStore", "parse"]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a trace file is parsed.

    A parsed trace is thousands of new objects, none of them garbage: the
    collections their allocation sets off would only walk them (and every
    older object) for nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class TraceStore:
    """Trace files on disk and in memory; the renderer's ``TraceSource``."""

    def __init__(self, live_dir: Path, cache_dir: Path) -> None:
        self.live_dir = live_dir
        self.cache_dir = cache_dir
        # path -> ((mtime_ns, size), run): files already parsed.
        self._parsed: dict[Path, tuple[tuple[int, int], ChapterRun]] = {}
        # id(run) -> (run, digest of the bytes of the file it was read from or written to):
        # what the rendered HTML and the published documents are kept by, so a
        # warm build serialises no run to know that it is unchanged.
        self._digests: dict[int, tuple[ChapterRun, str]] = {}
        # chapter -> (copy, the frozen run it stamps): the verified copy shown, never written.
        self._stamped: dict[str, tuple[ChapterRun, ChapterRun]] = {}
        # Mock runs by chapter, kept even if the cache folder is not writable.
        self._mock: dict[str, ChapterRun] = {}
        self._shown: dict[str, ChapterTraces] = {}
        # Chapters shown by a summary (primer.book.manifest): their runs are
        # read only if a page or the publisher needs them (then in _shown too).
        self._summaries: dict[str, TraceSummary] = {}
        self.publisher = Publisher(self)

    def path(self, chapter: str, mode: Mode) -> Path:
        """Where a chapter's trace of one mode is kept."""
        if mode == "live":
            return self.live_dir / f"{chapter}.live.json"
        return self.cache_dir / f"{chapter}.mock.json"

    def load(self, chapter: str, mode: Mode) -> ChapterRun | None:
        """The stored run, or None if there is none; raises ``CorruptTrace``."""
        if mode == "mock" and chapter in self._mock:
            return self._mock[chapter]
        path = self.path(chapter, mode)
        try:
            stat = path.lstat()  # a link is refused by read, not followed here
        except FileNotFoundError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            data = read(path)
        except FileNotFoundError:
            return None
        with _collector_paused():
            run = parse(data, path)
        if run.chapter != chapter or run.mode != mode:
            raise CorruptTrace(
                path, f"it holds the {run.mode} trace of {run.chapter}, not the {mode} trace of {chapter}"
            )
        self._remember(path, key, run, data)
        return run

    def _remember(self, path: Path, key: tuple[int, int], run: ChapterRun, data: bytes) -> None:
        earlier = self._parsed.get(path)
        if earlier is not None:
            self._digests.pop(id(earlier[1]), None)
        self._parsed[path] = (key, run)
        self._digests[id(run)] = (run, hashlib.sha256(data).hexdigest())

    def digest(self, run: ChapterRun) -> str | None:
        """A digest of the file ``run`` was read from or written to (None: a run the store did not keep).

        The same bytes give the same run, so it stands for the run's content
        (under this library's code) without serialising it.
        """
        kept = self._digests.get(id(run))
        return kept[1] if kept is not None and kept[0] is run else None

    def file_digest(self, run: ChapterRun) -> str | None:
        """The digest of the file ``run`` stands for: its own, or a stamped copy's frozen file's (``stamped``)."""
        kept = self._stamped.get(run.chapter)
        return self.digest(kept[1] if kept is not None and kept[0] is run else run)

    # -- verdicts: what a replay of a frozen live trace found, by its inputs --

    def verdict_path(self, chapter: str) -> Path:
        """Where the last verdict on a chapter's frozen live trace is kept (the cache, never the docs)."""
        return self.cache_dir / f"{chapter}.verdict.json"

    def verdict(self, frozen: ChapterRun, key: str) -> tuple[ChapterCheck, str] | None:
        """What replaying ``frozen`` under the code of fingerprint ``key`` found, and the day: None if not kept.

        Kept by its inputs, the frozen file's bytes and the fingerprint, as
        any result is: a trace that diverged is not replayed again at every
        build while it stays so (its warning is still given), and one that
        verified is shown with the day it did, its committed file untouched.
        """
        data = self._verdict_data(frozen.chapter)
        if data is None or data.get("frozen") != self.digest(frozen) or data.get("key") != key:
            return None
        from primer.replay import ChapterCheck

        try:
            return ChapterCheck.model_validate(data["check"]), str(data["day"])
        except (KeyError, TypeError, ValueError):
            return None

    def keep_verdict(self, frozen: ChapterRun, key: str, check: ChapterCheck, day: str) -> None:
        """Keep a replay's verdict on ``frozen`` (``verdict``); one that cannot be written is found again later."""
        data = {"frozen": self.digest(frozen), "key": key, "day": day, "check": check.model_dump(mode="json")}
        write_if_changed(self.verdict_path(frozen.chapter), json.dumps(data, separators=(",", ":")), durable=False)

    def _verdict_data(self, chapter: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.verdict_path(chapter).read_bytes())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def stamped(self, frozen: ChapterRun, key: str, day: str) -> ChapterRun:
        """``frozen`` as shown once a replay verified it under ``key`` on ``day``: a copy, its file unchanged.

        ``python -m primer.book build --stamp`` writes such copies into the
        frozen files (``stamped_runs``); an ordinary build never does, so a
        clean checkout stays clean.
        """
        copy = frozen.model_copy(update={"source_hash": key, "verified_at": day})
        earlier = self._stamped.get(frozen.chapter)
        if earlier is not None:
            self._digests.pop(id(earlier[0]), None)
        self._stamped[frozen.chapter] = (copy, frozen)
        original = self.digest(frozen)
        if original is not None:  # the copy's content is the file's and the stamp: it stands for it
            self._digests[id(copy)] = (copy, hashlib.sha256(f"{original} stamped {key} {day}".encode()).hexdigest())
        return copy

    def stamped_runs(self) -> list[ChapterRun]:
        """The verified copies this build shows in place of their frozen files (``stamped``)."""
        shown = [self.traces(chapter).live for chapter in self.chapters()]
        return [run for run in shown if run is not None and self._stamped.get(run.chapter, (None,))[0] is run]

    def save(self, run: ChapterRun) -> bool:
        """Keep a run; write its file only if the content changed. Returns whether it wrote."""
        if run.mode == "mock":
            self._mock[run.chapter] = run
            # A cache: compact, nobody reads it but the build.
            data = run.model_dump_json()
        else:
            # Committed: indented, so a refresh reads well in a diff.
            data = run.model_dump_json(indent=2) + "\n"
        path = self.path(run.chapter, run.mode)
        written = write_if_changed(path, data)
        stat = path.stat()
        self._remember(path, (stat.st_mtime_ns, stat.st_size), run, data.encode())
        return written

    def forget(self, chapter: str) -> None:
        """Drop a chapter's mock run from memory (its file stays)."""
        self._mock.pop(chapter, None)

    def show(self, traces: ChapterTraces) -> None:
        """Set what the pages show for a chapter in this build."""
        self._shown[traces.chapter] = traces

    def show_summaries(self, summaries: list[TraceSummary]) -> None:
        """Set what the pages show by summaries: each chapter's runs are read only when asked for (``traces``)."""
        self.clear_shown()
        self._summaries = {summary.chapter: summary for summary in summaries}

    def clear_shown(self) -> None:
        """Forget what the previous build showed (chapters may have gone)."""
        self._shown.clear()
        self._summaries.clear()

    def chapters(self) -> list[str]:
        """The chapters this build shows, sorted."""
        return sorted(self._shown.keys() | self._summaries.keys())

    def summary(self, chapter: str) -> TraceSummary | None:
        """The chapter's summary, when this build shows it by one (None otherwise: ask ``traces``)."""
        return self._summaries.get(chapter)

    def shown(self, chapter: str) -> ChapterTraces | TraceSummary | None:
        """What this build shows for a chapter, without reading a run: its summary, or its traces."""
        return self._summaries.get(chapter) or self._shown.get(chapter)

    def traces(self, chapter: str) -> ChapterTraces:
        """The renderer's view of one chapter; raises ``NotFound`` naming what exists.

        A chapter shown by its summary has its runs read now (raising
        ``CorruptTrace`` if a file no longer reads): a page whose HTML was
        not in the cache, or a document to publish again.
        """
        found = self._shown.get(chapter)
        if found is not None:
            return found
        summary = self._summaries.get(chapter)
        if summary is None:
            chapters = ", ".join(self.chapters()) or "none"
            raise NotFound(f"There are no traces for chapter {chapter!r}. The chapters are: {chapters}.")
        mock = self.load(chapter, "mock")
        live = self.load(chapter, "live") if summary.live is not None else None
        data = self._verdict_data(chapter) if live is not None else None
        # Shown as the build that made the summary showed it: stamped if its verdict verified it.
        if live is not None and data is not None and data.get("key") != live.source_hash:
            verdict = self.verdict(live, str(data.get("key")))
            if verdict is not None and verdict[0].verified:
                live = self.stamped(live, str(data["key"]), verdict[1])
        found = ChapterTraces(
            chapter, mock, live, summary.live_status, self.download_url(chapter), self.payloads_url(chapter)
        )
        self._shown[chapter] = found
        return found

    def publish(self, root: Path, payloads: Payloads | None = None) -> list[Path]:
        """Write each chapter's traces (both modes) to ``root/traces/CHAPTER.json`` (``primer.book.publish``).

        With ``payloads`` (a chapter's payload page by its name: its key, and
        how to make it), each chapter's goes to ``root/traces/CHAPTER.payloads.html``.
        """
        return self.publisher.publish(root, payloads)

    @staticmethod
    def download_url(chapter: str) -> str:
        """Where ``publish`` puts a chapter's JSON, relative to the site root."""
        return f"{PUBLISHED_DIR}/{chapter}.json"

    @staticmethod
    def payloads_url(chapter: str) -> str:
        """Where ``publish`` puts a chapter's payload page, relative to the site root."""
        return f"{PUBLISHED_DIR}/{chapter}{PAYLOADS_SUFFIX}"
