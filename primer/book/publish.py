"""Publishing: each chapter's traces as ``traces/CHAPTER.json`` (and its OTLP JSON) for readers to download.

Beside them goes ``traces/CHAPTER.payloads.html``, the chapter's payloads as
a plain page (one element per payload block, by the block's id): the pages
link each payload block to it, and traces.js fills a block in from it when
it is opened.

Both modes of a chapter go into one file, ``{"chapter", "live_status",
"mock", "live"}``, beside it ``traces/CHAPTER.otlp.json``: the same runs as
OpenTelemetry spans for Phoenix, Jaeger and the like, when the ``otel``
extra is installed. The raw ``*.live.json`` files are left out of the site
by ``exclude_docs`` in ``mkdocs.yml``.

A warm build publishes the same megabytes every time, so each document is
kept in the cache folder by a key that stands for it (a digest of the trace
files' bytes, the head, and the code that serialises runs) and a new file in
the site is a hard link to that copy. A chapter the build shows by its
``TraceSummary`` (``primer.book.manifest``) is published from the copy its
summary names, without reading its runs; if the copy is gone, its runs are
read and the document made again.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book.atomic import write_if_changed
from primer.book.links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR
from primer.book.logs import book_logger
from primer.errors import MissingExtra

if TYPE_CHECKING:
    from collections.abc import Callable

    #: A chapter's payload page, by the chapter's name: the key it is kept by, and how to make it.
    Payloads = Callable[[str], tuple[str, Callable[[], str]]]

    from primer.book.source import ChapterTraces
    from primer.book.store import TraceStore

__all__ = ["MOCK_EPOCH", "Publisher"]

_log = book_logger("mkdocs.plugins.primer.book")

#: Where published OTLP JSON places mock scenarios in time. They happened at
#: no moment of their own, and a fixed one keeps the file the same in every
#: build (``python -m primer export otlp`` places them at the export instead).
MOCK_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


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


def _place_cached(path: Path, cached: Path) -> bool:
    """Put the content of ``cached`` at ``path`` (a hard link when new); False if it cannot be read."""
    try:
        try:
            os.link(cached, path)
            return True
        except FileNotFoundError:
            if not cached.exists():
                return False
            path.parent.mkdir(parents=True, exist_ok=True)  # the first file of a new site
            os.link(cached, path)
            return True
    except OSError:
        pass  # there already (a docs folder), or another file system: compared and written
    try:
        # Bytes, not read_text: newline translation would change the document.
        text = cached.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    write_if_changed(path, text, durable=False)
    return True


def _keep(cached: Path, document: str, what: str) -> None:
    """Keep a published file (``CHAPTER.KEY.json``, ``.html``) in the cache folder, dropping its older versions.

    ``what`` names the file in the message said if it cannot be kept.
    """
    chapter = cached.name.split(".")[0]
    try:
        if cached.parent.is_dir():
            for old in cached.parent.glob(f"{chapter}.*{cached.suffix}"):
                if old.name.count(".") == 2:  # CHAPTER.KEY.json
                    old.unlink(missing_ok=True)
        write_if_changed(cached, document, durable=False)
    except OSError as error:
        _log.info(f"traces: the {what} of {chapter} could not be cached: {error}")


def _published(path: Path) -> bool:
    # Only what publish wrote: an author's own JSON beside the traces stays.
    try:
        with path.open("rb") as file:
            return file.read(12) == b'{"chapter": '
    except OSError:
        return False


def _published_payloads(path: Path) -> bool:
    # Only a payload page publish wrote: an author's own HTML there stays.
    try:
        with path.open("rb") as file:
            return file.read(len(PAYLOADS_HEAD)) == PAYLOADS_HEAD.encode()
    except OSError:
        return False


def _head(chapter: str, traces: ChapterTraces) -> str:
    status = traces.live_status
    return json.dumps(
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


def _serialised(head: str, traces: ChapterTraces) -> str:
    # The runs are serialised by pydantic itself (fast, and exactly
    # the stored form); only the small head goes through json.
    runs = {
        mode: run.model_dump_json() if run else "null" for mode, run in (("mock", traces.mock), ("live", traces.live))
    }
    return head[:-1] + f', "mock": {runs["mock"]}, "live": {runs["live"]}}}\n'


class Publisher:
    """Publishes a store's chapters, keeping what it made for the next build (and the next process)."""

    def __init__(self, store: TraceStore) -> None:
        self.store = store
        # chapter -> (the traces published, their key, their document, its copy in
        # the cache if kept): a serve rebuild republishes (the site folder was
        # emptied) without serialising again.
        self._published: dict[str, tuple[ChapterTraces, str, str, Path | None]] = {}
        # chapter -> (the key of its published JSON, its OTLP JSON), for the same reason.
        self._otlp: dict[str, tuple[str, str]] = {}
        self._otlp_missing = False

    def publish(self, root: Path, payloads: Payloads | None = None) -> list[Path]:
        """Write each chapter's traces (both modes) to ``root/traces/CHAPTER.json``.

        ``root`` is the site, or the docs folder (whose ``traces`` folder
        also holds the frozen live traces): a published file of a chapter
        that is no longer shown is removed, so no front end copies it.
        With ``payloads`` (a chapter's payload page, by its name: its key
        and a way to make it), each chapter's payload page goes to
        ``root/traces/CHAPTER.payloads.html``.
        """
        written: list[Path] = []
        shown = self.store.chapters()
        for chapter in shown:
            path = root / PUBLISHED_DIR / f"{chapter}.json"
            otlp = root / PUBLISHED_DIR / f"{chapter}.otlp.json"
            if not self._from_summary(chapter, path, otlp, written):
                key, document = self._document(chapter, self.store.traces(chapter))
                _place(path, document, self._published[chapter][3])
                written.append(path)
                written += self._publish_otlp(otlp, self.store.traces(chapter), key)
            if payloads is not None:
                page = root / PUBLISHED_DIR / f"{chapter}{PAYLOADS_SUFFIX}"
                self._publish_payloads(page, chapter, *payloads(chapter))
                written.append(page)
        for path in (root / PUBLISHED_DIR).glob("*.json"):
            if path.stem not in shown and not path.name.endswith(".live.json") and _published(path):
                path.unlink(missing_ok=True)
        for path in (root / PUBLISHED_DIR).glob(f"*{PAYLOADS_SUFFIX}"):
            if path.name[: -len(PAYLOADS_SUFFIX)] not in shown and _published_payloads(path):
                path.unlink(missing_ok=True)
        return written

    def _publish_payloads(self, page: Path, chapter: str, key: str, make: Callable[[], str]) -> None:
        # Like the JSON: a hard link to the copy kept in the cache by its key,
        # which a warm build neither reads nor writes; made when there is none.
        cached = self.store.cache_dir / "payloads" / f"{chapter}.{key}.html"
        if _place_cached(page, cached):
            return
        document = make()
        _keep(cached, document, "payload page")
        _place(page, document, cached if cached.exists() else None)

    def _from_summary(self, chapter: str, path: Path, otlp: Path, written: list[Path]) -> bool:
        """Publish from the copies a chapter's summary names; False if it has none, or its JSON is gone."""
        summary = self.store.summary(chapter)
        if summary is None or summary.published is None:
            return False
        key = summary.published
        if not _place_cached(path, self.store.cache_dir / "published" / f"{chapter}.{key}.json"):
            return False
        written.append(path)
        from primer.export import otlp_available  # cached: the manifest asked it already

        if not otlp_available():
            return True
        if _place_cached(otlp, self._otlp_copy(chapter, key)):
            written.append(otlp)
        else:  # made again from the runs (the key is the one their document has)
            written += self._publish_otlp(otlp, self.store.traces(chapter), key)
        return True

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
        _place(path, last[1], self._otlp_copy(traces.chapter, key))
        return [path]

    def _otlp_copy(self, chapter: str, key: str) -> Path:
        """Where the cache keeps a chapter's OTLP JSON: by its document's key and the export's version."""
        from primer.export import otlp_version  # no exporter imported: a digest of its code and packages

        # One dot between the two, as _keep expects of CHAPTER.KEY.json: older versions are dropped.
        return self.store.cache_dir / "otlp" / f"{chapter}.{key}-{otlp_version()}.json"

    def _otlp_cached(self, traces: ChapterTraces, key: str) -> str | None:
        cached = self._otlp_copy(traces.chapter, key)
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
        _keep(cached, text, "OTLP JSON")
        return text

    def document_key(self, chapter: str, traces: ChapterTraces) -> str | None:
        """The key a chapter's published JSON is kept by in the cache; None when a run's file is not known."""
        digests = [self.store.digest(run) if run is not None else "null" for run in (traces.mock, traces.live)]
        if None in digests:
            return None
        head = _head(chapter, traces)
        return hashlib.sha256(f"{_serialiser()}\n{digests[0]}\n{digests[1]}\n{head}".encode()).hexdigest()[:24]

    def _document(self, chapter: str, traces: ChapterTraces) -> tuple[str, str]:
        """The chapter's published JSON, and a key that stands for it (the OTLP JSON is kept by it).

        Made once per version of the chapter's traces. When the store knows
        the files both runs came from, the key is a digest of their bytes, the
        head and the code that serialises runs (``document_key``), and the
        document is kept in the cache folder by it: a warm build of a new
        process reads it back rather than serialising every run again.
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
        head = _head(chapter, traces)
        known = self.document_key(chapter, traces)
        if known is not None:
            key = known
            cached = self.store.cache_dir / "published" / f"{chapter}.{key}.json"
            try:
                document = cached.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                document = _serialised(head, traces)
                _keep(cached, document, "published JSON")
        else:
            document = _serialised(head, traces)
            key = hashlib.sha256(document.encode()).hexdigest()[:24]
        self._published[chapter] = (traces, key, document, cached)
        return key, document
