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

Each document is made once per key of its chapter and kept in the chapter's
entry of the one cache (``primer.book._cache``): a warm build copies it from
there and serialises no run.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book._atomic import remove_stale, write_if_changed
from primer.book._links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR
from primer.book._logs import book_logger
from primer.errors import MissingExtra

if TYPE_CHECKING:
    from collections.abc import Callable

    #: A chapter's payload page, by the chapter's name: the name it is kept by in the entry, and how to make it.
    Payloads = Callable[[str], tuple[str, Callable[[], str]]]

    from primer.book._cache import Entry
    from primer.book._prepare import Prepared
    from primer.book._source import ChapterTraces
    from primer.book._store import TraceStore

__all__ = ["MOCK_EPOCH", "Publisher"]

_log = book_logger("mkdocs.plugins.primer.book")

#: Where published OTLP JSON places mock scenarios in time. They happened at
#: no moment of their own, and a fixed one keeps the file the same in every
#: build (``python -m primer export otlp`` places them at the export instead).
MOCK_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def _kept(entry: Entry, name: str, make: Callable[[], str | None]) -> str | None:
    """The part ``name`` of the entry, made (and kept) if it is not there."""
    text = entry.read(name)
    if text is None:
        text = make()
        if text is not None:
            entry.write(name, text)
    return text


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


def _document(shown: Prepared, chapter: str) -> str:
    return _serialised(chapter, shown.traces(chapter))


def _serialised(chapter: str, traces: ChapterTraces) -> str:
    # The runs are serialised by pydantic itself (fast, and exactly
    # the stored form); only the small head goes through json.
    runs = {
        mode: run.model_dump_json() if run else "null" for mode, run in (("mock", traces.mock), ("live", traces.live))
    }
    return _head(chapter, traces)[:-1] + f', "mock": {runs["mock"]}, "live": {runs["live"]}}}\n'


class Publisher:
    """Publishes a store's chapters from their entries in the cache."""

    def __init__(self, store: TraceStore) -> None:
        self.store = store
        self._otlp_missing = False

    def publish(self, root: Path, shown: Prepared, payloads: Payloads | None = None) -> list[Path]:
        """Write each chapter ``shown`` shows (both modes) to ``root/traces/CHAPTER.json``.

        ``root`` is the site, or the docs folder (whose ``traces`` folder
        also holds the frozen live traces): a published file of a chapter
        that is no longer shown is removed, so no front end copies it.
        With ``payloads`` (a chapter's payload page, by its name: its name
        in the entry and a way to make it), each chapter's payload page goes
        to ``root/traces/CHAPTER.payloads.html``.
        """
        written: list[Path] = []
        chapters = shown.chapters()
        folder = root / PUBLISHED_DIR
        remove_stale(folder)  # once, not at each of its files' writes
        for chapter in chapters:
            summary = shown.summary(chapter)
            if summary is None:
                continue
            entry = self.store.entry(chapter, summary.key)
            document = _kept(entry, "published.json", partial(_document, shown, chapter))
            written.append(_write(folder / f"{chapter}.json", document))
            otlp = _kept(entry, "otlp.json", partial(self._otlp, shown, chapter))
            if otlp is not None:
                written.append(_write(folder / f"{chapter}.otlp.json", otlp))
            if payloads is not None:
                name, make = payloads(chapter)
                written.append(_write(folder / f"{chapter}{PAYLOADS_SUFFIX}", _kept(entry, name, make)))
        for path in folder.glob("*.json"):
            if path.stem not in chapters and not path.name.endswith(".live.json") and _published(path):
                path.unlink(missing_ok=True)
        for path in folder.glob(f"*{PAYLOADS_SUFFIX}"):
            if path.name[: -len(PAYLOADS_SUFFIX)] not in chapters and _published_payloads(path):
                path.unlink(missing_ok=True)
        return written

    def _otlp(self, shown: Prepared, chapter: str) -> str | None:
        """The chapter's runs as OTLP JSON, for OpenTelemetry tools (``primer.export.otlp``); None without it.

        The same traces give the same file, byte for byte, in every build and
        from every front end: mock scenarios, which happened at no moment of
        their own, are placed at ``MOCK_EPOCH``. Without the optional ``otel``
        packages the file is left out, said once.
        """
        try:
            from primer.export.otlp import chapter_json  # optional, and slow to import: only on a miss
        except MissingExtra as missing:
            if not self._otlp_missing:
                self._otlp_missing = True
                _log.info(f"traces: no OTLP JSON is published: {missing}")
            return None
        traces = shown.traces(chapter)
        return chapter_json(traces.mock, traces.live, start=MOCK_EPOCH)


def _write(path: Path, text: str | None) -> Path:
    # Made again at will: atomic, but not flushed to disk.
    path.parent.mkdir(parents=True, exist_ok=True)
    write_if_changed(path, text or "", durable=False, sweep=False)
    return path
