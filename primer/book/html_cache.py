"""Rendered traces, kept so that a build renders a trace only when it changed.

Rendering a chapter's traces (Jinja2 templates, highlighted JSON) takes tens
of milliseconds, and the first render of a process also compiles the
templates: together most of what traces add to a warm ``mkdocs build``, and
all of it wasted when nothing changed. The Markdown extension asks this cache
before it renders (the book's hook hands it one as the extension's ``cache``)::

    cache = HtmlCache(Path(".cache/trace-book/html"))
    html = cache.html(traces, None, anchors=anchors, head=True,
                      render=lambda: render_traces(traces, anchors=anchors))

An entry is found by everything the HTML depends on:

* **where it goes**, the *slot*: the chapter, the scenario asked for, whether
  the chapter's head is drawn, and the anchors the page used before (ids
  must stay unique within a page, so a second trace of a run on one page is
  different HTML);
* **what it shows**, the *key*: a digest of the ``ChapterTraces`` (both runs,
  the live status, the download address) and of the renderer's code (the
  library's normalised source but the chapters, its templates, Jinja2's and
  MarkupSafe's versions), hashed once per process since that is the code a
  process runs.

A slot holds one entry, in memory (a ``mkdocs serve`` rebuild reads nothing)
and, with a folder, on disk as ``SLOT.html``: a first line of JSON (the key
and the anchors) and the HTML as it is, so reading it back parses no HTML
into a string (a new ``mkdocs build`` process renders nothing either). A slot whose key changed is rendered and
overwritten, and after a full build ``prune`` removes the files of slots it
did not use (markers moved or gone), so the folder holds one file per marker
of the book. A cache file that cannot be read is a miss, one that cannot be
written is left to the next build: the cache never fails a build.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from primer.book.atomic import write_if_changed
from primer.book.depends import code_digest
from primer.book.logs import book_logger
from primer.book.source import ChapterTraces
from primer.export import otlp_available

if TYPE_CHECKING:
    from primer.trace import ChapterRun

__all__ = ["Anchors", "HtmlCache", "renderer_fingerprint", "traces_digest"]

log = book_logger("mkdocs.plugins.primer.book")

#: Bump when the file layout below changes.
_FORMAT = 1
_LIBRARY = Path(__file__).resolve().parent.parent


def renderer_fingerprint(kept: Path | None = None) -> str:
    """A digest of the code that turns traces into HTML, as its files are now.

    That is the package's version, every module of the library but the
    chapters (whose code changes what a trace holds, which the traces' digest
    covers, not how it is drawn), the templates and assets, and the versions
    of Jinja2 and MarkupSafe. The
    modules count by their normalised code (``primer.book.depends.code_digest``):
    a comment or a docstring re-renders nothing. Normalising means parsing
    every module (some 50 ms).

    ``kept``, a JSON file, holds the last result by a digest of the files'
    bytes, so a build parses the modules only when a byte changed. The
    bytes are read at every call (a few milliseconds; ``HtmlCache`` asks
    once a build): a template saved while ``mkdocs serve`` runs is a new
    fingerprint at the next rebuild, and the record the result is kept
    with pairs it with the bytes it came from.
    """
    versions = []
    for package in ("trace-book", "jinja2", "markupsafe"):
        try:
            versions.append(f"{package} {version(package)}\n")
        except PackageNotFoundError:
            versions.append(f"{package} ?\n")
    # Whether chapters link their OTLP JSON (primer.export.otlp_available) is part of how they are drawn.
    versions.append(f"otlp {otlp_available()}\n")
    sources = [p for p in _LIBRARY.rglob("*.py") if p.relative_to(_LIBRARY).parts[0] != "chapters"]
    # The templates and the assets by their bytes; the render modules (render*.py) among the sources.
    templates = [*(_LIBRARY / "book" / "templates").iterdir(), *(_LIBRARY / "book" / "assets").iterdir()]
    files = {path: path.read_bytes() for path in sorted(sources + templates)}
    raw = hashlib.sha256(f"html-cache {_FORMAT}\n{''.join(versions)}".encode())
    for path, data in files.items():
        raw.update(f"{path.relative_to(_LIBRARY).as_posix()} ".encode())
        raw.update(hashlib.sha256(data).digest())
    known = _kept_fingerprint(kept, raw.hexdigest())
    if known is not None:
        return known
    digest = hashlib.sha256(f"html-cache {_FORMAT} normalised\n{''.join(versions)}".encode())
    for path, data in files.items():
        digest.update(f"{path.relative_to(_LIBRARY).as_posix()} ".encode())
        digest.update((code_digest(data) if path.suffix == ".py" else hashlib.sha256(data).hexdigest()).encode())
    fingerprint = digest.hexdigest()
    if kept is not None:
        try:
            write_if_changed(kept, json.dumps({"bytes": raw.hexdigest(), "code": fingerprint}))
        except OSError as error:
            log.debug("traces: the renderer's fingerprint could not be kept in %s (%s)", kept, error)
    return fingerprint


def _kept_fingerprint(kept: Path | None, raw: str) -> str | None:
    if kept is None:
        return None
    try:
        data = json.loads(kept.read_bytes())
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("bytes") == raw and isinstance(data.get("code"), str):
        return str(data["code"])
    return None


def traces_digest(traces: ChapterTraces, run_digest: Callable[[ChapterRun], str | None] | None = None) -> str:
    """A digest of everything the renderer reads from a ``ChapterTraces``.

    ``run_digest`` gives a digest of a run's stored file, if known (the
    store's ``digest``): the same bytes give the same run, so the run need
    not be serialised. Otherwise the run's JSON is digested.
    """
    digest = hashlib.sha256()
    for run in (traces.mock, traces.live):
        known = run_digest(run) if run is not None and run_digest is not None else None
        if known is not None:
            digest.update(f"file {known}".encode())
        else:
            # pydantic-core serialises a whole chapter in well under a millisecond.
            digest.update(run.model_dump_json().encode() if run is not None else b"null")
        digest.update(b"\n")
    status = traces.live_status
    failure = status.failure.model_dump(mode="json") if status.failure is not None else None
    head = [traces.chapter, status.state, status.reason, failure, traces.download_url, traces.payloads_url]
    digest.update(json.dumps(head, sort_keys=True).encode())
    return digest.hexdigest()


class Anchors(Protocol):
    """The ids a page uses so far: ``primer.book.render.Anchors``, or the extension's ``PageIds`` (no renderer)."""

    used: set[str]


@dataclass(frozen=True)
class _Entry:
    key: str
    html: str
    #: The ids the HTML uses, added to the page's anchors when it is reused.
    anchors: tuple[str, ...]


class HtmlCache:
    """Rendered trace HTML by slot, in memory and (with ``folder``) on disk.

    ``fingerprint_file`` keeps the renderer's fingerprint between processes
    (``renderer_fingerprint``'s ``kept``); ``run_digest``, a digest of a
    run's stored file if known, spares serialising runs (``traces_digest``).
    """

    def __init__(
        self,
        folder: Path | None = None,
        *,
        fingerprint_file: Path | None = None,
        run_digest: Callable[[ChapterRun], str | None] | None = None,
    ) -> None:
        self.folder = folder
        self.fingerprint_file = fingerprint_file
        self.run_digest = run_digest
        #: The renderer's fingerprint when known without reading the library
        #: (``primer.book.manifest`` found every file of it unchanged); None: computed.
        self.fingerprint: str | None = None
        self._memory: dict[str, _Entry] = {}
        # chapter -> (the traces last digested, their digest). The build
        # shows one ChapterTraces per chapter, made anew each build around
        # the same run objects while they are unchanged (runs are never
        # changed once shown): a digest stands for as long as the runs are
        # the same objects and the rest is equal.
        self._digests: dict[str, tuple[ChapterTraces, str]] = {}
        # The renderer's fingerprint for this build (``reset`` forgets it).
        self._renderer: str | None = None
        #: Markers rendered and reused since ``reset``, and the seconds spent in ``html``.
        self.rendered = 0
        self.reused = 0
        self.seconds = 0.0
        self._used: set[str] = set()

    def reset(self) -> None:
        """Start counting a new build (the entries stay)."""
        self.rendered = self.reused = 0
        self.seconds = 0.0
        self._used = set()
        self._renderer = None

    def renderer(self) -> str:
        """The renderer's fingerprint for this build: the one known (``fingerprint``), or read once."""
        if self.fingerprint is not None:
            return self.fingerprint
        if self._renderer is None:
            self._renderer = renderer_fingerprint(self.fingerprint_file)
        return self._renderer

    def traces_key(self, traces: ChapterTraces) -> str:
        """The digest of what the renderer reads from ``traces`` (``traces_digest``), kept per chapter."""
        kept = self._digests.get(traces.chapter)
        if kept is not None:
            last, digest = kept
            if (
                last.mock is traces.mock
                and last.live is traces.live
                and last.live_status == traces.live_status
                and last.download_url == traces.download_url
                and last.payloads_url == traces.payloads_url
            ):
                return digest
        digest = traces_digest(traces, self.run_digest)
        self._digests[traces.chapter] = (traces, digest)
        return digest

    def _slot(
        self, chapter: str, scenario: str | None, traces_key: str, anchors: Anchors, head: bool
    ) -> tuple[str, str]:
        """Where a marker's HTML is kept, and the key it must have there."""
        used = "\n".join(sorted(anchors.used))
        page = hashlib.sha256(used.encode()).hexdigest()[:12] if used else "first"
        return self._use(f"{chapter}-{scenario or 'all'}-{'head' if head else 'body'}-{page}", traces_key)

    def _use(self, slot: str, traces_key: str) -> tuple[str, str]:
        """Mark ``slot`` used by this build; it and the key its entry must have for traces of ``traces_key``."""
        renderer = self.renderer()
        self._used.add(slot)
        return slot, hashlib.sha256(f"{renderer} {traces_key}".encode()).hexdigest()

    def _kept(self, slot: str, key: str, anchors: Anchors | None) -> str | None:
        entry = self._memory.get(slot) or self._read(slot)
        if entry is None or entry.key != key:
            return None
        self._memory[slot] = entry
        if anchors is not None:  # a marker's, not a payload page
            anchors.used.update(entry.anchors)
            self.reused += 1
        return entry.html

    def _payloads_slot(self, chapter: str, traces_key: str) -> tuple[str, str]:
        # A chapter's payload page (``render_payloads``): one per chapter, whatever pages show it.
        return self._use(f"{chapter}-payloads", traces_key)

    def payloads_key(self, chapter: str, traces_key: str) -> str:
        """The key the chapter's payload page has for traces of key ``traces_key`` (its slot is in use)."""
        return self._payloads_slot(chapter, traces_key)[1]

    def cached_payloads(self, chapter: str, traces_key: str) -> str | None:
        """The chapter's payload page kept for traces of key ``traces_key`` (a summary's ``html``); None otherwise."""
        return self._kept(*self._payloads_slot(chapter, traces_key), None)

    def payloads(self, traces: ChapterTraces, render: Callable[[], str], *, key: str = "") -> str:
        """The chapter's payload page ``render()`` gives, rendered only if not kept (not counted as a marker).

        ``key`` adds what else the page depends on (the chapter page it links back to).
        """
        started = time.perf_counter()
        try:
            return self._made(*self._payloads_slot(traces.chapter, self.traces_key(traces) + key), None, render)
        finally:
            self.seconds += time.perf_counter() - started

    def cached(
        self, chapter: str, scenario: str | None, traces_key: str, *, anchors: Anchors, head: bool
    ) -> str | None:
        """The HTML kept for this marker, if it was rendered from traces of key ``traces_key``; None otherwise.

        For a chapter shown by its ``TraceSummary``, whose runs are not read:
        ``traces_key`` is the summary's ``html``. On None, render with ``html``.
        """
        started = time.perf_counter()
        try:
            return self._kept(*self._slot(chapter, scenario, traces_key, anchors, head), anchors)
        finally:
            self.seconds += time.perf_counter() - started

    def html(
        self,
        traces: ChapterTraces,
        scenario: str | None,
        *,
        anchors: Anchors,
        head: bool,
        render: Callable[[], str],
        key: str = "",
    ) -> str:
        """The HTML ``render()`` gives for this marker, rendered only if not kept.

        ``render`` must draw ``traces`` (one ``scenario``, or all) with
        ``anchors`` and ``head`` as given: it is what the key stands for;
        ``key`` adds what else it depends on (the render options), as it
        is added to the ``traces_key`` given to ``cached``.
        """
        started = time.perf_counter()
        try:
            slot, key = self._slot(traces.chapter, scenario, self.traces_key(traces) + key, anchors, head)
            return self._made(slot, key, anchors, render)
        finally:
            self.seconds += time.perf_counter() - started

    def _made(self, slot: str, key: str, anchors: Anchors | None, render: Callable[[], str]) -> str:
        """The entry kept in ``slot`` if it has ``key``, else ``render()``, kept there (``anchors``: a marker's)."""
        kept = self._kept(slot, key, anchors)
        if kept is not None:
            return kept
        before = set(anchors.used) if anchors is not None else set()
        html = render()
        entry = _Entry(key, html, tuple(sorted(anchors.used - before)) if anchors is not None else ())
        self._memory[slot] = entry
        self._write(slot, entry)
        self.rendered += anchors is not None  # markers only, as reused counts them
        return html

    def prune(self) -> list[Path]:
        """Remove the slots not used since ``reset``; call it after a build that rendered every page."""
        if self.folder is None or not self._used:
            return []
        removed = []
        for slot in set(self._memory) - self._used:
            del self._memory[slot]
        try:
            paths = list(self.folder.glob("*.html"))
        except OSError:
            return []
        for path in paths:
            if path.stem not in self._used:
                try:
                    path.unlink()
                except OSError:
                    continue
                removed.append(path)
        return removed

    def _path(self, slot: str) -> Path | None:
        return self.folder / f"{slot}.html" if self.folder is not None else None

    def _read(self, slot: str) -> _Entry | None:
        if self.folder is None:
            return None
        # A plain string path and open(): a warm build reads one file per marker.
        path = os.path.join(self.folder, f"{slot}.html")
        try:
            # Bytes, not text mode: newline translation would change the HTML.
            with open(path, "rb") as file:
                raw = file.read()
            end = raw.index(b"\n")  # ValueError if there is none: read as unreadable
            head = json.loads(raw[:end])
            return _Entry(head["key"], raw[end + 1 :].decode("utf-8"), tuple(head["anchors"]))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as error:
            # Rendered again and overwritten below.
            log.debug("traces: the cached HTML %s could not be read (%s)", path, error)
            return None

    def _write(self, slot: str, entry: _Entry) -> None:
        path = self._path(slot)
        if path is None:
            return
        # json.dumps escapes newlines: the head is one line.
        head = json.dumps({"format": _FORMAT, "key": entry.key, "anchors": list(entry.anchors)})
        try:
            write_if_changed(path, f"{head}\n{entry.html}")
        except OSError as error:
            # Kept in memory; the next process renders it again.
            log.debug("traces: the rendered HTML could not be cached in %s (%s)", path, error)
