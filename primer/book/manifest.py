"""A warm build's short way: the record of the last build that left nothing to do, checked by its inputs' bytes.

A build goes through every chapter before the first page renders: it imports
the engine (pydantic, the trace models), fingerprints every chapter's code,
and parses and validates every trace file. When nothing changed since the
last build, all of that gives the answer it gave last time, and at a hundred
chapters it was most of what traces added to a warm ``mkdocs build``. So a
build that ends *clean* (every chapter's traces current and stored, nothing
warned about) records, in ``.cache/trace-book/traces/manifest.json``:

* its **inputs**: the SHA-256 of every Python file under the packages the
  chapters are fingerprinted from (``primer`` and the chapters' package: all
  of them, so a module added counts too) and of the renderer's templates; of
  every trace file shown, or that it is absent (a live trace not recorded);
  the ``PRIMER_*`` variables set, but the secrets; the chapters' package; the
  versions of Python, pydantic, Jinja2 and MarkupSafe, and whether the OTLP
  export can be imported;
* its **outcome**: for each chapter, the scenario names shown, the live
  status, and the keys its rendered HTML and published JSON are kept by; the
  renderer's fingerprint; the number of scenarios reused.

The next build (``reuse``) looks at the same inputs again: a file whose size,
modification and change times and inode are as recorded is taken as it was
(the change time cannot be set back, so a file rewritten with the same size
and modification time is noticed), any other is hashed and compared (a
checkout that rewrote it byte for byte changes nothing). When every one is
as recorded, it hands the outcome to the store as
``TraceSummary`` objects. Pages check their markers against the names and
take their HTML from the cache; publishing links the cached JSON; no trace
is parsed unless a piece of the cache is missing, and then only that
chapter's, as the full build would. Anything else (a chapter edited, a trace
file changed, replaced or deleted, a setting, a package upgraded) and the
build takes the full way, which records anew if it ends clean; one that does
not removes the record.

With a secret set (``PRIMER_API_KEY``, ``PRIMER_SERVICE_KEY``) a build always
takes the full way: ``Settings`` must validate them, live runs may be due,
and the record holds no secret nor anything made from one. A book given its
``Settings`` (tests) takes the full way too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.book.atomic import write_if_changed
from primer.book.report import Report
from primer.book.source import LiveStatus, TraceSummary
from primer.variables import VARIABLES, unknown_variables

if TYPE_CHECKING:
    from collections.abc import Mapping

    from primer.book.build import Book
    from primer.trace import ChapterRun, Mode

__all__ = ["NAME", "Warnings", "code_inputs", "record", "reuse"]

#: The record's file, in the book's trace cache folder.
NAME = "manifest.json"
#: Bump when what is recorded, or how, changes.
_FORMAT = 1
_SECRETS = (VARIABLES["api_key"], VARIABLES["service_key"])
_LIBRARY = Path(__file__).resolve().parent.parent
_TEMPLATES = Path(__file__).resolve().parent / "templates"


class Warnings(logging.Filter):
    """Counts the warnings a logger passes (a build that warned is not recorded: the next one must warn too)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """Count the record if it is a warning or worse; let it through."""
        if record.levelno >= logging.WARNING:
            self.count += 1
        return True


def _digest(path: str | Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _signature(path: str | Path) -> list[int] | None:
    """What the file system says of a file without reading it: size, times, inode (None: no such file)."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    # The change time cannot be set back (os.utime itself sets it), so a
    # file rewritten with the same size and modification time still differs.
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


#: A file as recorded: [its digest, its signature when hashed], or None for a file that must not exist.
Entry = list[Any] | None


def _entry(path: str | Path) -> Entry:
    signature = _signature(path)  # before the bytes: a save in between shows as a change next time
    digest = _digest(path) if signature is not None else None
    return [digest, signature] if digest is not None else None


def _same(path: str | Path, recorded: Entry) -> bool:
    """Whether a file is as recorded: the same signature, or, if not, the same bytes (a checkout rewrote it)."""
    signature = _signature(path)
    if recorded is None or signature is None:
        return recorded is None and signature is None
    return bool(signature == recorded[1] or _digest(path) == recorded[0])


def _environment(environ: Mapping[str, str]) -> dict[str, str] | None:
    """The ``PRIMER_*`` settings as set; None if a secret is set (nothing of it is recorded)."""
    if any(name in environ for name in _SECRETS):
        return None
    return {name: environ[name] for name in sorted(VARIABLES.values()) if name in environ}


def _versions() -> dict[str, str]:
    """What the outcome depends on besides the files: how code is parsed, runs serialised, HTML escaped."""
    from importlib.metadata import PackageNotFoundError, version

    from primer.export import otlp_available

    found = {"python": sys.version, "otlp": str(otlp_available())}
    for package in ("pydantic", "jinja2", "markupsafe"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "?"
    return found


def _code_files(book: Book) -> list[str]:
    """Every Python file under the book's code packages and the library, and the templates."""
    files: set[str] = set()
    for root in {*book.chapters.graph.roots.values(), _LIBRARY}:
        for folder, subdirs, names in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != "__pycache__"]
            files.update(os.path.join(folder, name) for name in names if name.endswith(".py"))
    files.update(str(path) for path in _TEMPLATES.iterdir())
    return sorted(files)


def code_inputs(book: Book) -> dict[str, Entry]:
    """The book's code files as they are now (``_code_files``), each with its digest and signature."""
    return {path: _entry(path) for path in _code_files(book)}


def _inputs(book: Book) -> dict[str, Any]:
    return {
        "format": _FORMAT,
        "package": book.chapters.package,
        "environment": _environment(book.environ or os.environ),
        "versions": _versions(),
    }


def record(book: Book, code: dict[str, Entry] | None) -> None:
    """Record the build just made if it ended clean (``code``: its code inputs, None if not); else drop the record."""
    path = book.store.cache_dir / NAME
    clean = code is not None and book.enabled and _environment(book.environ or os.environ) is not None
    outcome = _outcome(book) if clean else None
    try:
        if outcome is None:
            path.unlink(missing_ok=True)
            return
        data = {**_inputs(book), "code": code, **outcome}
        write_if_changed(path, json.dumps(data, separators=(",", ":")), durable=False)
    except OSError as error:  # a cache: the next build takes the full way
        book.log.debug(f"traces: the build's record {path} could not be written: {error}")


def _outcome(book: Book) -> dict[str, Any] | None:
    """What every chapter shows, with the digests of the files it came from; None if one is not a clean, stored run."""
    store, reused = book.store, 0
    chapters: dict[str, Any] = {}
    traces_files: dict[str, Entry] = {}
    for chapter in store.chapters():
        traces = store.traces(chapter)
        status = traces.live_status
        if traces.mock is None or status.failure is not None or book.scenario_names.get(chapter) is None:
            return None
        published = store.publisher.document_key(chapter, traces)
        runs: tuple[tuple[Mode, ChapterRun | None], ...] = (("mock", traces.mock), ("live", traces.live))
        for mode, run in runs:
            path = store.path(chapter, mode)
            entry = traces_files[str(path)] = _entry(path)  # None: it must stay absent
            # The file as it is now must be the one the build showed.
            if (entry[0] if entry is not None else None) != (store.file_digest(run) if run is not None else None):
                return None
        if published is None:
            return None
        chapters[chapter] = {
            "mock": [run.name for run in traces.mock.scenarios],
            "live": [run.name for run in traces.live.scenarios] if traces.live is not None else None,
            "status": [status.state, status.reason],
            "html": book.rendered.traces_key(traces),
            "published": published,
        }
        reused += len(traces.mock.scenarios) + (len(traces.live.scenarios) if traces.live is not None else 0)
    renderer = book.rendered.renderer()
    return {"traces": traces_files, "chapters": chapters, "renderer": renderer, "reused": reused}


def _read(book: Book) -> dict[str, Any] | None:
    """The record, if it was made with the inputs of now."""
    if _environment(book.environ or os.environ) is None:
        return None
    try:
        data = json.loads((book.store.cache_dir / NAME).read_bytes())
    except (OSError, ValueError):
        return None
    try:
        # The cheap checks first; the files' bytes last.
        current = (
            all(data.get(k) == v for k, v in _inputs(book).items())
            and sorted(data["code"]) == (files := _code_files(book))
            and all(_same(path, data["code"][path]) for path in files)
            and all(_same(path, entry) for path, entry in data["traces"].items())
        )
    except (KeyError, AttributeError, TypeError):
        return None
    return data if current else None


def reuse(book: Book) -> Report | None:
    """Show every chapter as the last build did, if nothing changed since; None: take the full way."""
    data = _read(book)
    if data is None:
        return None
    try:
        summaries = [
            TraceSummary(
                chapter,
                tuple(entry["mock"]),
                tuple(entry["live"]) if entry["live"] is not None else None,
                LiveStatus(*entry["status"]),
                entry["html"],
                entry["published"],
            )
            for chapter, entry in data["chapters"].items()
        ]
        reused, renderer = int(data["reused"]), str(data["renderer"])
    except (KeyError, TypeError, ValueError):
        return None
    # What Settings.from_env says on every build, said here as it would.
    for message in unknown_variables(book.environ or os.environ):
        book.log.warning(f"traces: {message}")
    book.enabled = True
    book.store.show_summaries(summaries)
    book.scenario_names = {summary.chapter: list(summary.mock) for summary in summaries}
    book.rendered.fingerprint = renderer
    report = Report(reused=reused)
    book.log.info(report.line())
    return report
