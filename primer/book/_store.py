"""The trace store: each chapter's traces, reading them, and publishing what a build shows.

Frozen live traces are ``docs/traces/CHAPTER.live.json`` (committed); mock traces and replays'
verdicts are kept in the chapter's entry of the one cache. A file that does not read as a
``ChapterRun`` raises ``CorruptTrace`` naming it. ``publish`` writes each chapter's JSON, OTLP JSON
(with the ``otel`` extra) and payload page, made once per key and kept in the entry.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.book._atomic import write_if_changed
from primer.book._links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR
from primer.book._logs import book_logger
from primer.book._source import ChapterTraces, Shown
from primer.errors import MissingExtra
from primer.trace_file import UnreadableTrace as CorruptTrace
from primer.trace_file import parse, read

if TYPE_CHECKING:  # the trace models are loaded by the first file parsed (primer.trace_file)
    from primer.book._book import Prepared
    from primer.book._cache import TraceCache
    from primer.replay import ChapterCheck
    from primer.trace import ChapterRun, Mode

__all__ = ["MOCK_EPOCH", "PUBLISHED_DIR", "CorruptTrace", "TraceStore", "parse"]

_log = book_logger("mkdocs.plugins.primer.book")

#: Where published OTLP JSON places mock scenarios, which happened at no moment of their own.
MOCK_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


class TraceStore:
    """Trace files and the cache's entries."""

    def __init__(self, live_dir: Path, cache: TraceCache | Path) -> None:
        self.live_dir = live_dir
        if isinstance(cache, Path):
            from primer.book._cache import TraceCache

            cache = TraceCache(cache)
        self.cache = cache
        # chapter -> (copy, the frozen run it stamps): the verified copy shown, never written.
        self._stamped: dict[str, tuple[ChapterRun, ChapterRun]] = {}
        self._otlp_missing = False

    def path(self, chapter: str, mode: Mode = "live", key: str = "") -> Path:
        """Where a chapter's frozen live trace is kept, or its mock trace in its entry of ``key``."""
        if mode == "live":
            return self.live_dir / f"{chapter}.live.json"
        return self.cache.folder / chapter / key / "mock.json"

    def frozen_bytes(self, chapter: str) -> bytes | None:
        """The bytes of the chapter's frozen live trace (part of its key), or None if it has none."""
        try:
            return read(self.path(chapter))  # the reader's guard: a pipe or a device is not read
        except FileNotFoundError:
            return None
        except CorruptTrace as refused:
            return f"refused: {refused.problem}".encode()  # the full way warns about it

    def load(self, chapter: str, mode: Mode, key: str = "") -> ChapterRun | None:
        """The stored run (a mock one from the entry of ``key``), or None if there is none; raises ``CorruptTrace``."""
        path = self.path(chapter, mode, key)
        try:
            run = parse(read(path), path) if mode == "live" or self.cache.enabled else None
        except FileNotFoundError:
            return None
        if run is not None and (run.chapter != chapter or run.mode != mode):
            raise CorruptTrace(
                path, f"it holds the {run.mode} trace of {run.chapter}, not the {mode} trace of {chapter}"
            )
        return run

    def _earlier(self, chapter: str, key: str, name: str, inputs: str) -> str | None:
        """The part ``name`` made from ``inputs`` in another of the chapter's entries, kept under ``key`` too."""
        for entry in self.cache.others(chapter, key):
            text = entry.read(name)
            if text is not None and inputs in text:  # a part names what it was made from
                self.cache.entry(chapter, key).write(name, text)
                return text
        return None

    def earlier_mock(self, chapter: str, key: str, code: str) -> ChapterRun | None:
        """A mock run of the code ``code`` in another of the chapter's entries (it depends on the code alone)."""
        if self._earlier(chapter, key, "mock.json", f'"source_hash":"{code}"') is None:
            return None
        try:
            return self.load(chapter, "mock", key)
        except CorruptTrace:
            return None  # run again, and replaced

    def verdict(self, chapter: str, key: str, code: str | None = None) -> tuple[ChapterCheck, str, str] | None:
        """What replaying the frozen trace under the chapter's code found, its day and that code; None if not kept.

        Kept by its inputs (the frozen file's bytes, the code): with ``code``, found in another entry too.
        """
        text = self.cache.entry(chapter, key).read("verdict.json")
        if text is None and code is not None:
            inputs = f'"frozen":"{self._frozen_digest(chapter)}","code":"{code}"'
            text = self._earlier(chapter, key, "verdict.json", inputs)
        from primer.replay import ChapterCheck

        try:
            data: dict[str, Any] = json.loads(text) if text is not None else {}
            return ChapterCheck.model_validate(data["check"]), str(data["day"]), str(data["code"])
        except (KeyError, TypeError, ValueError):
            return None

    def keep_verdict(self, chapter: str, key: str, code: str, check: ChapterCheck, day: str) -> None:
        """Keep a replay's verdict under the code of fingerprint ``code`` in the chapter's entry (``verdict``)."""
        data = {
            "frozen": self._frozen_digest(chapter),
            "code": code,
            "day": day,
            "check": check.model_dump(mode="json"),
        }
        self.cache.entry(chapter, key).write("verdict.json", json.dumps(data, separators=(",", ":")))

    def _frozen_digest(self, chapter: str) -> str:
        frozen = self.frozen_bytes(chapter)
        return hashlib.sha256(frozen).hexdigest() if frozen is not None else "none"

    def stamped(self, frozen: ChapterRun, key: str, day: str) -> ChapterRun:
        """A copy of ``frozen`` as verified under the code ``key`` on ``day`` (``build --stamp`` writes it)."""
        copy = frozen.model_copy(update={"source_hash": key, "verified_at": day})
        self._stamped[frozen.chapter] = (copy, frozen)
        return copy

    def is_stamped(self, run: ChapterRun) -> bool:
        """Whether ``run`` is a verified copy shown in place of its frozen file (``stamped``)."""
        return self._stamped.get(run.chapter, (None,))[0] is run

    def save(self, run: ChapterRun, key: str = "") -> bool:
        """Keep a run (a mock one in the entry of ``key``, compact); write a file only if its content changed."""
        if run.mode == "mock":
            self.cache.entry(run.chapter, key).write("mock.json", run.model_dump_json())
            return True
        # Committed: indented, so a refresh reads well in a diff.
        return write_if_changed(self.path(run.chapter, run.mode), run.model_dump_json(indent=2) + "\n")

    def read(self, shown: Shown) -> ChapterTraces:
        """The runs of a chapter as ``shown`` (from its entry) says, read now; raises ``CorruptTrace``."""
        chapter = shown.chapter
        mock = self.load(chapter, "mock", shown.key)
        live = self.load(chapter, "live", shown.key) if shown.live is not None else None
        verdict = self.verdict(chapter, shown.key) if live is not None else None
        if live is not None and verdict is not None and verdict[0].verified:
            live = self.stamped(live, verdict[2], verdict[1])  # as the build that kept the entry showed it
        return ChapterTraces(
            chapter, mock, live, shown.live_status, self.download_url(chapter), self.payloads_url(chapter)
        )

    @staticmethod
    def download_url(chapter: str) -> str:
        """Where ``publish`` puts a chapter's JSON, relative to the site root."""
        return f"{PUBLISHED_DIR}/{chapter}.json"

    @staticmethod
    def payloads_url(chapter: str) -> str:
        """Where ``publish`` puts a chapter's payload page, relative to the site root."""
        return f"{PUBLISHED_DIR}/{chapter}{PAYLOADS_SUFFIX}"

    def publish(self, root: Path, shown: Prepared, pages: Mapping[str, str | None]) -> list[Path]:
        """Write the files of each chapter ``shown`` to ``root/traces/`` (the site, or the docs); remove gone ones'.

        Each chapter's payload page links back to its page in ``pages`` (its URL; None: none). A file
        not there yet (MkDocs cleans the site) is written plainly; one there only if it changed.
        """
        folder = root / PUBLISHED_DIR
        written: list[Path] = []
        chapters = shown.chapters()
        for chapter in chapters:
            entry = self.cache.entry(chapter, shown.by_chapter[chapter].shown.key)
            parts: list[tuple[str, str, Callable[[], str | None]]] = [
                ("published.json", ".json", partial(_document, shown, chapter)),
                ("otlp.json", ".otlp.json", partial(self._otlp, shown, chapter)),
            ]
            # Named in the entry by the page it links back to.
            page = pages.get(chapter)
            name = f"payloads-{hashlib.sha256(str(page).encode()).hexdigest()[:12]}.html"
            parts.append((name, PAYLOADS_SUFFIX, partial(_payloads, shown, chapter, page)))
            for name, suffix, make in parts:
                data = entry.data(name)  # as kept: bytes are copied fastest
                if data is None and (text := make()) is not None:
                    entry.write(name, text)
                    data = text.encode()
                if data is not None:
                    written.append(folder / f"{chapter}{suffix}")
                    _write(written[-1], data)
        for path in folder.glob("*.*"):  # only what publish wrote: an author's own files there stay
            gone = path.name.split(".")[0] not in chapters and not path.name.endswith(".live.json")
            if gone and _head(path).startswith((b'{"chapter": ', b'{"resourceSpans":', PAYLOADS_HEAD.encode())):
                path.unlink(missing_ok=True)
        return written

    def _otlp(self, shown: Prepared, chapter: str) -> str | None:
        try:
            from primer.export.otlp import chapter_json  # optional, and slow to import: only on a miss
        except MissingExtra as missing:
            if not self._otlp_missing:
                self._otlp_missing = True
                _log.info(f"traces: no OTLP JSON is published: {missing}")
            return None
        traces = shown.traces(chapter)
        return chapter_json(traces.mock, traces.live, start=MOCK_EPOCH)


def _document(shown: Prepared, chapter: str) -> str:
    traces = shown.traces(chapter)
    status = traces.live_status
    failure = status.failure.model_dump() if status.failure else None
    live_status = {"state": status.state, "reason": status.reason, "failure": failure}
    head = json.dumps({"chapter": chapter, "live_status": live_status}, ensure_ascii=False)
    # The runs serialised by pydantic itself (fast, and exactly the stored form).
    runs = [run.model_dump_json() if run else "null" for run in (traces.mock, traces.live)]
    return f'{head[:-1]}, "mock": {runs[0]}, "live": {runs[1]}}}\n'


def _payloads(shown: Prepared, chapter: str, page: str | None) -> str:
    from primer.book._render import render_payloads

    return render_payloads(shown.traces(chapter), page_url=page)


def _write(path: Path, data: bytes) -> None:
    try:
        with path.open("xb") as out:
            out.write(data)
    except FileExistsError:
        write_if_changed(path, data, durable=False)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write(path, data)


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            return file.read(len(PAYLOADS_HEAD))
    except OSError:
        return b""
