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

A file that is not JSON, not a trace, of another schema version, or that
holds a number that is not finite (``NaN``, ``Infinity``: JSON readers
accept them) raises ``CorruptTrace``, naming the file and the field; the
build then runs the chapter again and replaces the file.

The store is also the renderer's ``TraceSource``: after the build has decided
what each chapter shows, ``traces(chapter)`` hands it over, with the address
of the chapter's published JSON (``traces/CHAPTER.json`` in the site, both
modes in one file, for readers to download; the raw ``*.live.json`` files
are left out of the site by ``exclude_docs`` in ``mkdocs.yml``). Beside it
goes ``traces/CHAPTER.otlp.json``, the same runs as OpenTelemetry spans for
Phoenix, Jaeger and the like, when the ``otel`` extra is installed.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from primer.book.atomic import write_if_changed
from primer.book.links import PUBLISHED_DIR
from primer.book.logs import book_logger
from primer.book.source import ChapterTraces
from primer.errors import MissingExtra, NotFound, PrimerError
from primer.trace import READABLE_VERSIONS, ChapterRun, Mode, versions_read

__all__ = ["PUBLISHED_DIR", "CorruptTrace", "TraceStore"]

_log = book_logger("mkdocs.plugins.primer.book")

#: Where published OTLP JSON places mock scenarios in time. They happened at
#: no moment of their own, and a fixed one keeps the file the same in every
#: build (``python -m primer export otlp`` places them at the export instead).
MOCK_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)



class CorruptTrace(PrimerError):
    """A trace file could not be read as a trace of this schema version."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"The trace file {path} could not be read: {reason}.")
        self.path = path
        self.reason = reason


def _where(loc: tuple[str | int, ...]) -> str:
    # As pydantic names a field: scenarios.0.timing.total_ms.
    return ".".join(str(part) for part in loc) or "the top level"


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        count = error.error_count()
        fields = "1 field does not" if count == 1 else f"{count} fields do not"
        at = "at" if count == 1 else "the first at"
        return f"{fields} fit the trace schema, {at} {_where(first['loc'])}: {first['msg']}"
    if isinstance(error, json.JSONDecodeError):
        # json's messages are made to be followed by a place ("Unterminated
        # string starting at"): the place is given here instead.
        what = re.sub(r"(?: starting)? at$", "", error.msg)
        return f"it is not valid JSON ({what} at line {error.lineno}, column {error.colno})"
    if isinstance(error, UnicodeDecodeError):
        return f"it is not UTF-8 text (the byte at offset {error.start} cannot be decoded)"
    return f"{type(error).__name__}: {error}"


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return f"a bare {json.dumps(value)}"
    return "a number"


def _non_finite(value: Any, loc: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], float] | None:
    """Where the first NaN or infinity of parsed JSON is, and what it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return loc, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, (*loc, key))
        if found is not None:
            return found
    return None


def parse(data: bytes, path: Path) -> ChapterRun:
    """A trace file's content as a ``ChapterRun``; raises ``CorruptTrace``."""
    constants: list[str] = []

    def constant(token: str) -> float:
        # NaN, Infinity, -Infinity: not JSON, but Python's reader takes them.
        constants.append(token)
        return float(token)

    try:
        raw: Any = json.loads(data, parse_constant=constant)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CorruptTrace(path, _reason(error)) from None
    if not isinstance(raw, dict):
        raise CorruptTrace(path, f"it holds {_kind(raw)}, where a trace file holds a JSON object")
    if "schema_version" not in raw:
        raise CorruptTrace(path, f"it has no schema_version, and this build reads {versions_read()}")
    version = raw["schema_version"]
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise CorruptTrace(path, f"its schema version is {version!r}, and this build reads {versions_read()}")
    found = _non_finite(raw) if constants else None
    if found is not None:
        loc, number = found
        token = "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        raise CorruptTrace(path, f"the field {_where(loc)} holds {token}, and a trace holds only finite numbers")
    try:
        return ChapterRun.model_validate(raw)
    except ValidationError as error:
        raise CorruptTrace(path, _reason(error)) from None


@cache
def _serialiser() -> str:
    """What a run's JSON depends on besides the file it was read from: the models' code and pydantic's version."""
    import pydantic

    from primer import trace

    models = Path(str(trace.__file__))
    digest = hashlib.sha256(f"published 1 pydantic {pydantic.VERSION}\n".encode())
    for path in (models, models.with_name("offsets.py")):  # offsets: the migration of older files
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _place(path: Path, text: str, cached: Path | None) -> None:
    """Put ``text`` at ``path``; a new file is a hard link to ``cached``, its copy in the cache, if there is one.

    A warm build writes the same megabytes of trace JSON into a fresh site
    folder every time, and writing them was most of what publishing cost; a
    link writes none. Nothing writes a published file in place (``write_if_changed``
    replaces it), so the cache's copy stays as it is. On another file system,
    or without a cached copy, the file is written.
    """
    if cached is not None and not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.link(cached, path)
            return
        except OSError:
            pass
    # Made again at will: atomic, but not flushed to disk.
    write_if_changed(path, text, durable=False)


def _keep(cached: Path, document: str) -> None:
    """Keep a chapter's published JSON in the cache folder, dropping its older versions."""
    chapter = cached.name.split(".")[0]
    try:
        if cached.parent.is_dir():
            for old in cached.parent.glob(f"{chapter}.*.json"):
                if old.name.count(".") == 2:  # CHAPTER.KEY.json
                    old.unlink(missing_ok=True)
        write_if_changed(cached, document, durable=False)
    except OSError as error:
        _log.info(f"traces: the published JSON of {chapter} could not be cached: {error}")


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


def _published(path: Path) -> bool:
    # Only what publish wrote: an author's own JSON beside the traces stays.
    try:
        with path.open("rb") as file:
            return file.read(12) == b'{"chapter": '
    except OSError:
        return False


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
        # Mock runs by chapter, kept even if the cache folder is not writable.
        self._mock: dict[str, ChapterRun] = {}
        self._shown: dict[str, ChapterTraces] = {}
        # chapter -> (the traces published, their key, their document, its copy in
        # the cache if kept): a serve rebuild republishes (the site folder was
        # emptied) without serialising again.
        self._published: dict[str, tuple[ChapterTraces, str, str, Path | None]] = {}
        # chapter -> (the key of its published JSON, its OTLP JSON), for the same reason.
        self._otlp: dict[str, tuple[str, str]] = {}
        self._otlp_missing = False

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
            stat = path.stat()
        except FileNotFoundError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        cached = self._parsed.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        data = path.read_bytes()
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

    def clear_shown(self) -> None:
        """Forget what the previous build showed (chapters may have gone)."""
        self._shown.clear()

    def chapters(self) -> list[str]:
        """The chapters this build shows, sorted."""
        return sorted(self._shown)

    def traces(self, chapter: str) -> ChapterTraces:
        """The renderer's view of one chapter; raises ``NotFound`` naming what exists."""
        try:
            return self._shown[chapter]
        except KeyError:
            chapters = ", ".join(sorted(self._shown)) or "none"
            raise NotFound(f"There are no traces for chapter {chapter!r}. The chapters are: {chapters}.") from None

    def publish(self, root: Path) -> list[Path]:
        """Write each chapter's traces (both modes) to ``root/traces/CHAPTER.json``.

        ``root`` is the site, or the docs folder (whose ``traces`` folder
        also holds the frozen live traces): a published file of a chapter
        that is no longer shown is removed, so no front end copies it.
        """
        written = []
        for chapter, traces in sorted(self._shown.items()):
            path = root / PUBLISHED_DIR / f"{chapter}.json"
            key, document = self._document(chapter, traces)
            _place(path, document, self._published[chapter][3])
            written.append(path)
            written += self._publish_otlp(root / PUBLISHED_DIR / f"{chapter}.otlp.json", traces, key)
        for path in (root / PUBLISHED_DIR).glob("*.json"):
            if path.stem not in self._shown and not path.name.endswith(".live.json") and _published(path):
                path.unlink(missing_ok=True)
        return written

    def _publish_otlp(self, path: Path, traces: ChapterTraces, key: str) -> list[Path]:
        """The chapter's runs as OTLP JSON beside its trace JSON, for OpenTelemetry tools (``primer.export.otlp``).

        The same traces give the same file, byte for byte, in every build and
        from every front end: mock scenarios, which happened at no moment of
        their own, are placed at ``MOCK_EPOCH``. So it is made once per
        version of the chapter's traces and kept in the cache folder by the
        key of the chapter's published JSON (``_document``); a warm build of a
        new process neither imports the OpenTelemetry packages nor encodes a span.
        Without the optional ``otel`` packages the file is left out, said once.
        """
        last = self._otlp.get(traces.chapter)
        if last is None or last[0] != key:
            text = self._otlp_cached(traces, key)
            if text is None:
                return []
            last = self._otlp[traces.chapter] = (key, text)
        _place(path, last[1], self.cache_dir / "otlp" / f"{traces.chapter}.{key}.json")
        return [path]

    def _otlp_cached(self, traces: ChapterTraces, key: str) -> str | None:
        folder = self.cache_dir / "otlp"
        cached = folder / f"{traces.chapter}.{key}.json"
        try:
            return cached.read_text(encoding="utf-8")
        except OSError:
            pass
        try:
            from primer.export.otlp import chapter_json  # optional, and slow to import: only on a miss
        except MissingExtra as missing:
            if not self._otlp_missing:
                self._otlp_missing = True
                _log.info(f"traces: no OTLP JSON is published: {missing}")
            return None
        text = chapter_json(traces.mock, traces.live, start=MOCK_EPOCH)
        try:
            for old in folder.glob(f"{traces.chapter}.*.json"):
                if old.name.count(".") == 2:  # CHAPTER.KEY.json: an older version of this chapter's file
                    old.unlink(missing_ok=True)
            write_if_changed(cached, text, durable=False)
        except OSError as error:
            _log.info(f"traces: the OTLP JSON of {traces.chapter} could not be cached: {error}")
        return text

    def _document(self, chapter: str, traces: ChapterTraces) -> tuple[str, str]:
        """The chapter's published JSON, and a key that stands for it (the OTLP JSON is kept by it).

        Made once per version of the chapter's traces. When the store knows
        the files both runs came from, the key is a digest of their bytes, the
        head and the code that serialises runs, and the document is kept in
        the cache folder by it: a warm build of a new process reads it back
        rather than serialising every run again.
        """
        last = self._published.get(chapter)
        # The same run objects: the store hands out one object per file
        # version, so identity means the same content.
        if (
            last is not None
            and last[0].mock is traces.mock
            and last[0].live is traces.live
            and last[0].live_status == traces.live_status
        ):
            return last[1], last[2]
        cached: Path | None = None
        status = traces.live_status
        head = json.dumps(
            {
                "chapter": chapter,
                "live_status": {
                    "state": status.state,
                    "reason": status.reason,
                    "failure": status.failure.model_dump() if status.failure else None,
                },
            },
            ensure_ascii=False,
        )
        digests = [self.digest(run) if run is not None else "null" for run in (traces.mock, traces.live)]
        if None not in digests:
            key = hashlib.sha256(f"{_serialiser()}\n{digests[0]}\n{digests[1]}\n{head}".encode()).hexdigest()[:24]
            cached = self.cache_dir / "published" / f"{chapter}.{key}.json"
            try:
                document = cached.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                document = self._serialised(head, traces)
                _keep(cached, document)
        else:
            document = self._serialised(head, traces)
            key = hashlib.sha256(document.encode()).hexdigest()[:24]
        self._published[chapter] = (traces, key, document, cached)
        return key, document

    @staticmethod
    def _serialised(head: str, traces: ChapterTraces) -> str:
        # The runs are serialised by pydantic itself (fast, and exactly
        # the stored form); only the small head goes through json.
        runs = {
            mode: run.model_dump_json() if run else "null"
            for mode, run in (("mock", traces.mock), ("live", traces.live))
        }
        return head[:-1] + f', "mock": {runs["mock"]}, "live": {runs["live"]}}}\n'

    @staticmethod
    def download_url(chapter: str) -> str:
        """Where ``publish`` puts a chapter's JSON, relative to the site root."""
        return f"{PUBLISHED_DIR}/{chapter}.json"
