"""The trace store: where each chapter's traces live, and what this build shows of them.

Two kinds of trace, kept apart on purpose::

    docs/traces/CHAPTER.live.json   frozen live traces: committed, reused as
                                    they are when no key is set
    the one cache (primer.book._cache) mock traces and replays' verdicts, in
                                    the chapter's entry by its key, outside
                                    the docs so they are never published

Every trace is a ``ChapterRun`` as JSON, stamped with the ``source_hash`` of
the code that produced it. Files are written atomically and only when their
content changed (``primer.book._atomic``). A file that does not read as a
trace raises ``CorruptTrace``, naming the file and the field
(``primer.trace_file``); the build then runs the chapter again and
replaces the file.

What each chapter shows is the build's value (``primer.book._prepare.Prepared``); a chapter
shown from its entry has its runs read here (``read``) only when a page or publishing asks.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.book._links import PAYLOADS_SUFFIX, PUBLISHED_DIR
from primer.book._publish import MOCK_EPOCH
from primer.book._source import ChapterTraces, Shown
from primer.trace_file import UnreadableTrace as CorruptTrace
from primer.trace_file import parse, read

if TYPE_CHECKING:  # the trace models are loaded by the first file parsed (primer.trace_file)
    from primer.book._cache import Entry, TraceCache
    from primer.replay import ChapterCheck
    from primer.trace import ChapterRun, Mode

__all__ = ["MOCK_EPOCH", "PUBLISHED_DIR", "CorruptTrace", "TraceStore", "parse"]


class TraceStore:
    """Trace files and the cache's entries; the renderer's ``TraceSource``."""

    def __init__(self, live_dir: Path, cache: TraceCache | Path) -> None:
        self.live_dir = live_dir
        if isinstance(cache, Path):
            from primer.book._cache import TraceCache

            cache = TraceCache(cache)
        self.cache = cache
        # chapter -> (copy, the frozen run it stamps): the verified copy shown, never written.
        self._stamped: dict[str, tuple[ChapterRun, ChapterRun]] = {}
        # (chapter, key) -> its mock run, kept even if the cache is off or not writable.
        self._mock: dict[tuple[str, str], ChapterRun] = {}

    def path(self, chapter: str, mode: Mode = "live", key: str = "") -> Path:
        """Where a chapter's frozen live trace is kept, or its mock trace in its entry of ``key``."""
        if mode == "live":
            return self.live_dir / f"{chapter}.live.json"
        return self.cache.folder / chapter / key / "mock.json"

    def frozen_bytes(self, chapter: str) -> bytes | None:
        """The bytes of the chapter's frozen live trace (part of its key), or None if it has none."""
        try:
            # Through the reader's guard: a pipe, a device or a link to one must not be read (or block) for a key.
            return read(self.path(chapter))
        except FileNotFoundError:
            return None
        except CorruptTrace as refused:
            return f"refused: {refused.problem}".encode()  # the full way warns about it

    def entry(self, chapter: str, key: str) -> Entry:
        """The chapter's entry in the cache under ``key``."""
        return self.cache.entry(chapter, key)

    def load(self, chapter: str, mode: Mode, key: str = "") -> ChapterRun | None:
        """The stored run (a mock one from the entry of ``key``), or None if there is none; raises ``CorruptTrace``."""
        if mode == "mock":
            if (chapter, key) in self._mock:
                return self._mock[chapter, key]
            entry = self.entry(chapter, key)
            text = entry.read("mock.json")
            if text is None:
                return None
            path = self.path(chapter, mode, key)
            run = self._checked(parse(text.encode(), path), chapter, mode, path)
            self._mock[chapter, key] = run
            return run
        path = self.path(chapter, mode)
        try:
            data = read(path)
        except FileNotFoundError:
            return None
        return self._checked(parse(data, path), chapter, mode, path)

    def earlier_mock(self, chapter: str, key: str, code: str) -> ChapterRun | None:
        """A mock run of the code of fingerprint ``code`` in another entry of the chapter, kept under ``key`` too.

        A mock run depends on the code alone: a new key for another reason (a
        template edit, a refreshed frozen file) finds it there. A part that
        does not read is passed over.
        """
        for entry in self.cache.others(chapter, key):
            text = entry.read("mock.json")
            if text is None or f'"source_hash":"{code}"' not in text:
                continue  # not of this code: not parsed
            try:
                run = self._checked(
                    parse(text.encode(), self.path(chapter, "mock", entry.key)), chapter, "mock", Path()
                )
            except CorruptTrace:
                continue
            if run.source_hash == code:
                self.save(run, key)
                return run
        return None

    @staticmethod
    def _checked(run: ChapterRun, chapter: str, mode: Mode, path: Path) -> ChapterRun:
        if run.chapter != chapter or run.mode != mode:
            raise CorruptTrace(
                path, f"it holds the {run.mode} trace of {run.chapter}, not the {mode} trace of {chapter}"
            )
        return run

    # -- verdicts: what a replay of a frozen live trace found, by its inputs --

    def verdict(self, chapter: str, key: str, code: str | None = None) -> tuple[ChapterCheck, str, str] | None:
        """What replaying the frozen trace under the code the chapter's ``key`` stands for found, the day, the code.

        Kept in the entry, by its inputs (the frozen file's bytes and the
        code, which the key covers), as any result is: a trace that diverged
        is not replayed again at every build while it stays so (its warning
        is still given), and one that verified is shown with the day it did,
        its committed file untouched. The code is the fingerprint the trace is
        stamped with. With ``code``, a verdict on the same file and code in
        another of the chapter's entries is found too (and kept under ``key``).
        None if none is kept.
        """
        text = self.entry(chapter, key).read("verdict.json")
        if text is None and code is not None:
            frozen = self._frozen_digest(chapter)
            for entry in self.cache.others(chapter, key):
                other = entry.read("verdict.json")
                if other is not None and f'"frozen":"{frozen}","code":"{code}"' in other:
                    text = other
                    self.entry(chapter, key).write("verdict.json", text)
                    break
        if text is None:
            return None
        from primer.replay import ChapterCheck

        try:
            data: dict[str, Any] = json.loads(text)
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
        self.entry(chapter, key).write("verdict.json", json.dumps(data, separators=(",", ":")))

    def _frozen_digest(self, chapter: str) -> str:
        frozen = self.frozen_bytes(chapter)
        return hashlib.sha256(frozen).hexdigest() if frozen is not None else "none"

    def stamped(self, frozen: ChapterRun, key: str, day: str) -> ChapterRun:
        """``frozen`` as shown once a replay verified it under the fingerprint ``key`` on ``day``: a copy.

        ``python -m primer.book build --stamp`` writes such copies into the
        frozen files (``is_stamped``); an ordinary build never does, so a
        clean checkout stays clean.
        """
        copy = frozen.model_copy(update={"source_hash": key, "verified_at": day})
        self._stamped[frozen.chapter] = (copy, frozen)
        return copy

    def is_stamped(self, run: ChapterRun) -> bool:
        """Whether ``run`` is a verified copy shown in place of its frozen file (``stamped``)."""
        return self._stamped.get(run.chapter, (None,))[0] is run

    def save(self, run: ChapterRun, key: str = "") -> bool:
        """Keep a run (a mock one in the entry of ``key``); write a file only if its content changed."""
        if run.mode == "mock":
            self._mock[run.chapter, key] = run
            # A cache: compact, nobody reads it but the build.
            self.entry(run.chapter, key).write("mock.json", run.model_dump_json())
            return True
        from primer.book._atomic import write_if_changed

        # Committed: indented, so a refresh reads well in a diff.
        return write_if_changed(self.path(run.chapter, run.mode), run.model_dump_json(indent=2) + "\n")

    def reset(self) -> None:
        """A new build: forget the mock runs kept in memory."""
        self._mock.clear()

    def read(self, shown: Shown) -> ChapterTraces:
        """The runs of a chapter as ``shown`` (from its entry) says, read now; raises ``CorruptTrace``."""
        chapter = shown.chapter
        mock = self.load(chapter, "mock", shown.key)
        live = self.load(chapter, "live", shown.key) if shown.live is not None else None
        verdict = self.verdict(chapter, shown.key) if live is not None else None
        if live is not None and verdict is not None and verdict[0].verified:
            # Shown as the build that kept the entry showed it: stamped with its verdict's day.
            live = self.stamped(live, verdict[2], verdict[1])
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
