"""Publishing what a build shows: each chapter's JSON, OTLP JSON (with the ``otel`` extra) and payload page.

Each file is made once per key and kept in the chapter's entry of the one cache (``primer.book._cache``),
then copied as bytes into the site (or the docs folder).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book._links import PAYLOADS_HEAD, PAYLOADS_SUFFIX, PUBLISHED_DIR
from primer.book._logs import book_logger
from primer.errors import MissingExtra
from primer.files import write_new

if TYPE_CHECKING:
    from primer.book._book import Prepared

__all__ = ["MOCK_EPOCH", "publish"]

_log = book_logger("mkdocs.plugins.primer.book")

#: Where published OTLP JSON places mock scenarios, which happened at no moment of their own.
MOCK_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def publish(root: Path, shown: Prepared, pages: Mapping[str, str | None]) -> list[Path]:
    """Write the files of each chapter ``shown`` to ``root/traces/`` (the site, or the docs); remove gone ones'.

    Each chapter's payload page links back to its page in ``pages`` (its URL; None: none). A file
    not there yet (MkDocs cleans the site) is written plainly; one there only if it changed.
    """
    folder, cache, chapters = root / PUBLISHED_DIR, shown.cache, shown.chapters()
    if cache is None:
        return []
    written: list[Path] = []
    said: list[str] = []  # that no OTLP JSON is published, once a build
    for chapter in chapters:
        entry = cache.entry(chapter, shown.by_chapter[chapter].key)
        # The payload page is named in the entry by the page it links back to.
        page = pages.get(chapter)
        parts: list[tuple[str, str, Callable[[], str | None]]] = [
            ("published.json", ".json", partial(_document, shown, chapter)),
            ("otlp.json", ".otlp.json", partial(_otlp, shown, chapter, said)),
            (f"payloads-{_digest(page)}.html", PAYLOADS_SUFFIX, partial(_payloads, shown, chapter, page)),
        ]
        for name, suffix, make in parts:
            data = entry.read(name)  # as kept: bytes are copied fastest
            if data is None and (text := make()) is not None:
                entry.write(name, text)
                data = text.encode()
            if data is not None:
                written.append(folder / f"{chapter}{suffix}")
                write_new(written[-1], data)
    for path in folder.glob("*.*"):  # only what publish wrote: an author's own files there stay
        gone = path.name.split(".")[0] not in shown.by_chapter and not path.name.endswith(".live.json")
        if gone and _head(path).startswith((b'{"chapter": ', b'{"resourceSpans":', PAYLOADS_HEAD.encode())):
            path.unlink(missing_ok=True)
    return written


def _digest(page: str | None) -> str:
    return hashlib.sha256(str(page).encode()).hexdigest()[:12]


def _otlp(shown: Prepared, chapter: str, said: list[str]) -> str | None:
    if said:  # the export is missing: a failed import is tried again each time (9 ms), so once a build
        return None
    try:
        from primer.export.otlp_json import chapter_json  # optional: only on a miss
    except MissingExtra as missing:
        said.append(str(missing))
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


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as file:
            return file.read(len(PAYLOADS_HEAD))
    except OSError:
        return b""
