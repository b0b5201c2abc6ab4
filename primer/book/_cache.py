"""The one cache and the frozen live traces: what a build made of each chapter, by one key.

``chapter_key`` hashes a chapter's code fingerprint (``primer.fingerprint``), its frozen live
trace's bytes, the options that matter (a secret only as set) and ``renderer_version``:
``entries/CHAPTER/KEY/`` keeps what the pages show, the markers' HTML and the published files.
What depends on less is kept by its own inputs: a mock run by the code and the installed distributions
(``mock-CODE-RAN/``), a replay's verdict by those and the frozen file (``verdict-DIGEST/``). Entries
unused by a full build are pruned but the last ``KEEP`` of each kind. Off (``PRIMER_CACHE=off``) nothing is read
or kept; a file not read or written is a miss; a process whose renderer code changed since it started
keeps nothing it draws (``changed_code``). Frozen live traces are ``docs/traces/CHAPTER.live.json``
(committed); one that does not read as a ``ChapterRun`` raises ``CorruptTrace`` naming it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book._logs import book_logger
from primer.book._source import ChapterTraces, Shown, traces_of
from primer.files import file_bytes, file_digest, write_if_changed
from primer.trace_file import UnreadableTrace as CorruptTrace
from primer.trace_file import parse, read
from primer.variables import VARIABLES

if TYPE_CHECKING:
    from primer.replay import ChapterCheck
    from primer.settings import Settings
    from primer.trace import ChapterRun, Mode

__all__ = [
    "KEEP",
    "CorruptTrace",
    "Entry",
    "TraceCache",
    "build_key",
    "changed_code",
    "chapter_key",
    "renderer_files",
    "renderer_version",
]

log = book_logger("mkdocs.plugins.primer.book")

#: Bump when what an entry holds, or how a key is made, changes.
FORMAT = 2
#: Set to ``off`` to turn the cache off.
CACHE_VARIABLE = "PRIMER_CACHE"
#: Entries of a chapter kept besides those a build used: the last this many of each kind (keys, mock runs, verdicts).
KEEP = 2
#: The part of an entry that keeps its markers' HTML: a JSON line (slot -> [ids, length]), then the HTML as it is.
MARKERS = "markers.txt"

_LIBRARY = Path(__file__).resolve().parent.parent
#: What can change pages and files: the machinery with its templates and assets, and the library it renders
#: with (its price table too). By folder and ending (any: ""): a module added later is in the key without a list.
_RENDERER = {"book/templates": ("",), "book/assets": ("",), "book": (".py",), "": (".py", ".toml"), "export": (".py",)}
_SECRETS = (VARIABLES["api_key"], VARIABLES["service_key"])


def _installed() -> str:
    # Every distribution this process imports from, by its metadata folder's name (name and version): the
    # renderer's, the export's and this package's among them. Listed, not looked up in importlib.metadata,
    # which would cost a warm build more than its pages do; listed again when a folder's time changes (a
    # pip install under ``mkdocs serve``, which the process can import from as the import system sees it too).
    stamps = []
    for folder in sys.path:
        with contextlib.suppress(OSError):
            stamps.append((folder or ".", os.stat(folder or ".").st_mtime_ns))
    return _listed(tuple(stamps))


@functools.lru_cache(maxsize=4)
def _listed(folders: tuple[tuple[str, int], ...]) -> str:
    found = []
    for folder, _ in folders:
        with contextlib.suppress(OSError):
            found += [name for name in os.listdir(folder) if name.endswith((".dist-info", ".egg-info"))]
    return "\n".join([f"renderer {FORMAT}", *sorted(found)])


def renderer_files() -> dict[str, str]:
    """The files that turn traces into pages and files, named relative to the library (``book/_render.py``), by digest.

    A file is hashed again when its size or modification time changes (a template saved under ``mkdocs serve``).
    """
    found = []  # by name, as strings: pathlib's glob and sort took more than the hashing
    for folder, endings in _RENDERER.items():
        with contextlib.suppress(OSError):  # a folder gone
            names = [name for name in os.listdir(_LIBRARY / folder) if name.endswith(endings) and name[0] != "."]
            found += [f"{folder}/{name}".lstrip("/") for name in names]  # not a dotfile (an editor's), as glob
    files = {}
    for name in sorted(found):
        with contextlib.suppress(OSError):  # gone since
            if stat.S_ISREG((each := os.stat(path := os.path.join(_LIBRARY, name))).st_mode):
                files[name] = file_digest(path, each) or ""
    return files


def renderer_version(files: Mapping[str, str] | None = None) -> str:
    """A digest of the installed versions and the ``renderer_files``: what every chapter's key holds of the renderer."""
    lines = [_installed(), *(f"{name} {digest}" for name, digest in (files or renderer_files()).items())]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def changed_code(first: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """The renderer's modules changed since ``first`` that this process imported, so runs as they were (``primer/…``).

    A long-lived process (``mkdocs serve``) cannot import them again: what it draws with them must be kept nowhere.
    """
    changed = [name for name, digest in now.items() if name.endswith(".py") and first.get(name, digest) != digest]
    return [f"primer/{name}" for name in changed if _module(name) in sys.modules]


def _module(name: str) -> str:  # book/_render.py: primer.book._render; book/__init__.py: primer.book
    parts = ["primer", *name.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def environ_options(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``PRIMER_*`` settings that can change what a build makes: their values, a secret only as set."""
    options = {name: environ[name] for name in sorted(VARIABLES.values()) if name in environ}
    for name in _SECRETS:
        if name in options:
            options[name] = "set" if options[name].strip() else ""
    return options


def settings_options(settings: Settings) -> dict[str, str]:
    return {
        "settings": settings.model_dump_json(exclude={"api_key", "service_key"}),
        "live": str(settings.live_enabled),
    }


def build_key(options: Mapping[str, str], renderer: str) -> str:
    """What every chapter's key holds of the build: the options that matter and the ``renderer_version``."""
    return f"{renderer}\n{json.dumps(sorted(options.items()))}"


def chapter_key(chapter: str, code: str, frozen: bytes | None, build: str) -> str:
    """The one key of what a build makes of a chapter (the module's docstring); ``build`` is ``build_key``'s."""
    live = hashlib.sha256(frozen).hexdigest() if frozen is not None else "none"
    head = f"trace-book {FORMAT}\n{chapter}\n{code}\n{build}\nlive {live}"
    return hashlib.sha256(head.encode()).hexdigest()[:32]


class Entry:
    """What the cache keeps of one chapter under one key: named files (``folder`` None: the cache is off)."""

    def __init__(self, chapter: str, key: str, folder: str | None) -> None:
        self.chapter, self.key, self.folder = chapter, key, folder

    def read(self, name: str) -> bytes | None:
        """The part ``name`` as kept (bytes: JSON reads them, publishing copies them), or None (not kept, or off)."""
        return None if self.folder is None else file_bytes(os.path.join(self.folder, name))

    def write(self, name: str, text: str | bytes) -> None:
        """Keep the part ``name`` (nothing with the cache off; one not written is made again next time)."""
        try:
            if self.folder is not None:
                write_if_changed(Path(self.folder, name), text, durable=False)
        except OSError as error:
            log.debug("traces: the %s of %s could not be cached (%s)", name, self.chapter, error)


def _slot(scenario: str | None, used: set[str], head: bool, variant: str) -> str:
    # A marker's HTML depends on the ids the page ``used`` before it and on what the extension says (``variant``).
    said = "\n".join(sorted(used)) + (f"\0{variant}" if variant else "")
    page = hashlib.blake2b(said.encode(), digest_size=6).hexdigest() if said else "first"
    return f"{scenario or 'all'}-{'head' if head else 'body'}-{page}"


class TraceCache:
    """The entries of a book's chapters under ``folder``, and its frozen live traces in ``live_dir``.

    The markers' HTML is kept under the key ``key_of(chapter)`` gives (None: not kept).
    """

    def __init__(
        self,
        folder: Path,
        live_dir: Path | None = None,
        *,
        enabled: bool = True,
        key_of: Callable[[str], str | None] | None = None,
    ) -> None:
        self.folder, self.live_dir = folder, live_dir or folder
        self.enabled = enabled
        #: False: this process draws with renderer code changed since it started, so what it draws is kept nowhere.
        self.keeps_drawn = True
        self.key_of = key_of or (lambda chapter: None)
        self.reset()

    def reset(self) -> None:
        self._used: set[tuple[str, str]] = set()
        self.made = False
        self._markers: dict[tuple[str, str], dict[str, tuple[list[str], str]]] = {}  # read once a build
        self.recount()
        # The distributions installed now, listed once a build: what a run depends on besides the code (a framework).
        self._ran = hashlib.sha256(_installed().encode()).hexdigest()[:12]
        self._frozen: set[str] | None = None  # the frozen traces' file names, listed once a build

    def recount(self) -> None:
        """Count a build's markers and time afresh."""
        self.rendered = self.reused = 0
        self.seconds = 0.0

    def mock_name(self, code: str) -> str:
        """The entry of the mock run of the code ``code`` (a fingerprint) made with the distributions installed now."""
        return f"mock-{code}-{self._ran}"

    def entry(self, chapter: str, key: str) -> Entry:
        self._used.add((chapter, key))
        # Drawn by code changed since this process started (``changed_code``): kept nowhere. Runs and verdicts are
        # kept by the code they ran, in a new interpreter if it changed.
        kept = self.enabled and (self.keeps_drawn or key.startswith(("mock-", "verdict-")))
        return Entry(chapter, key, os.path.join(self.folder, chapter, key) if kept else None)

    def _entries(self, chapter: str, used: set[str]) -> list[Path]:
        try:
            found = [path for path in (self.folder / chapter).iterdir() if path.is_dir() and path.name not in used]
            return sorted(found, key=lambda path: path.stat().st_mtime_ns, reverse=True)
        except OSError:
            return []

    def prune(self, chapters: list[str]) -> None:
        """Remove the entries not used since ``reset`` but the last ``KEEP`` of each of ``chapters``."""
        if not self.enabled or not self._used or not self.folder.is_dir():
            return
        used = {key for _, key in self._used}
        for chapter, key in self._used:  # the newest, for the next build's choice of what to keep
            with contextlib.suppress(OSError):
                os.utime(self.folder / chapter / key)
        for folder in self.folder.iterdir():
            if folder.is_dir() and not folder.name.startswith("."):
                # The last of each kind (keys, mock runs, verdicts): a build shown from its key's entry uses no other,
                # and an undone edit must find its mock run and verdict again, not only its key's entry.
                kinds: dict[str, list[Path]] = {}
                for path in self._entries(folder.name, used):
                    kinds.setdefault(path.name.split("-")[0] if "-" in path.name else "", []).append(path)
                for path in (old for same in kinds.values() for old in same[KEEP if folder.name in chapters else 0 :]):
                    shutil.rmtree(path, ignore_errors=True)
                with contextlib.suppress(OSError):
                    folder.rmdir()  # a chapter gone, its entries removed

    def path(self, chapter: str, mode: Mode = "live", code: str = "") -> Path:
        if mode == "live":
            return self.live_dir / f"{chapter}.live.json"
        return self.folder / chapter / self.mock_name(code) / "mock.json"

    def frozen_state(self) -> list[tuple[str, int, int]]:
        """Each frozen trace's name, size and time, as the folder holds them now: what ``frozen_bytes`` reads."""
        try:
            with os.scandir(self.live_dir) as files:
                traces = [file for file in files if file.name.endswith(".live.json")]
                found = sorted((file.name, (at := file.stat()).st_size, at.st_mtime_ns) for file in traces)
        except OSError:
            return []
        # A file saved in the last two seconds may be saved again within its time stamp's tick: never the same.
        recent = any(time.time_ns() - file[2] < 2e9 for file in found)
        return [*found, ("recent", time.time_ns(), 0)] if recent else found

    def frozen_bytes(self, chapter: str) -> bytes | None:
        """The bytes of the chapter's frozen live trace (part of its key), or None if it has none."""
        if self._frozen is None:  # listed once a build: most chapters have none, and looking for one cost a read
            self._frozen = {name for name, _, _ in self.frozen_state()}
        if f"{chapter}.live.json" not in self._frozen:
            return None
        try:
            return read(self.path(chapter))  # the reader's guard: a pipe or a device is not read
        except FileNotFoundError:
            return None
        except CorruptTrace as refused:
            return f"refused: {refused.problem}".encode()  # the full way warns about it

    def load(self, chapter: str, mode: Mode, code: str = "") -> ChapterRun | None:
        """The stored run (a mock one of the code ``code``), or None if there is none; raises ``CorruptTrace``."""
        path = self.path(chapter, mode, code)
        if mode == "mock":
            self.entry(chapter, path.parent.name)
        try:
            run = parse(read(path), path) if mode == "live" or self.enabled else None
        except FileNotFoundError:
            return None
        if run is not None and (run.chapter != chapter or run.mode != mode):
            raise CorruptTrace(
                path, f"it holds the {run.mode} trace of {run.chapter}, not the {mode} trace of {chapter}"
            )
        return run

    def save(self, run: ChapterRun) -> bool:
        """Keep a run (a mock one by its code, compact); write a file only if its content changed."""
        if run.mode == "mock":
            self.entry(run.chapter, self.mock_name(run.source_hash or "")).write("mock.json", run.model_dump_json())
            return True
        # Committed: indented, so a refresh reads well in a diff.
        path = self.path(run.chapter)
        written = write_if_changed(path, run.model_dump_json(indent=2) + "\n")
        if self._frozen is not None:
            self._frozen.add(path.name)  # a chapter's first: its key holds it from now on
        return written

    def _verdict(self, chapter: str, code: str) -> Entry:
        frozen = hashlib.sha256(self.frozen_bytes(chapter) or b"").hexdigest()
        said = f"{frozen} {code} {self._ran}"
        return self.entry(chapter, "verdict-" + hashlib.sha256(said.encode()).hexdigest()[:32])

    def verdict(self, chapter: str, code: str) -> tuple[ChapterCheck, str] | None:
        from primer.replay import ChapterCheck

        try:
            day, check = json.loads(self._verdict(chapter, code).read("verdict.json") or "null")
            return ChapterCheck.model_validate(check), str(day)
        except (TypeError, ValueError):
            return None

    def keep_verdict(self, chapter: str, code: str, check: ChapterCheck, day: str) -> None:
        """Keep a replay's verdict by its inputs: the frozen file's bytes and the code ``code``."""
        self._verdict(chapter, code).write("verdict.json", json.dumps([day, check.model_dump(mode="json")]))

    def read(self, shown: Shown) -> ChapterTraces:
        mock = self.load(shown.chapter, "mock", shown.code)
        live = self.load(shown.chapter, "live") if shown.live is not None else None
        if live is not None and shown.verified_at is not None:  # as the build that kept the entry showed it
            live = live.model_copy(update={"source_hash": shown.code, "verified_at": shown.verified_at})
        return traces_of(shown.chapter, mock, live, shown.live_status)

    def _kept(self, chapter: str, key: str) -> dict[str, tuple[list[str], str]]:
        if (chapter, key) not in self._markers:
            # slot -> (the ids its HTML uses, added to the page's when reused; the HTML, not quoted: JSON is slow)
            found: dict[str, tuple[list[str], str]] = {}
            try:
                head, _, body = (self.entry(chapter, key).read(MARKERS) or b"{}").partition(b"\n")
                html, at = body.decode("latin-1"), 0  # as written: Latin-1 is decoded byte for character
                for slot, (ids, size) in json.loads(head).items():
                    found[str(slot)], at = (list(map(str, ids)), html[at : at + size]), at + size
                if at != len(html):
                    raise ValueError(MARKERS)  # cut short
            except (ValueError, TypeError, AttributeError):
                found = {}  # rendered again and replaced
            self._markers[chapter, key] = found
        return self._markers[chapter, key]

    def cached(
        self, chapter: str, scenario: str | None, key: str, *, used: set[str], head: bool, variant: str = ""
    ) -> str | None:
        """The HTML kept for this marker under the chapter's ``key``, its ids added to ``used``; None: render it."""
        started = time.perf_counter()
        kept = self._kept(chapter, key).get(_slot(scenario, used, head, variant))
        self.seconds += time.perf_counter() - started
        if kept is None:
            return None
        used.update(kept[0])
        self.reused += 1
        return kept[1]

    def html(
        self,
        traces: ChapterTraces,
        scenario: str | None,
        *,
        used: set[str],
        head: bool,
        render: Callable[[], str],
        variant: str = "",
    ) -> str:
        """The HTML ``render()`` gives for this marker (drawing ``traces`` as the slot says), kept in the entry."""
        chapter, key = traces.chapter, self.key_of(traces.chapter)
        kept = self.cached(chapter, scenario, key, used=used, head=head, variant=variant) if key else None
        if kept is not None:
            return kept
        started = time.perf_counter()
        slot, before = _slot(scenario, used, head, variant), set(used)
        html = render()
        self.rendered += 1
        if key is not None and self.enabled:
            markers = self._kept(chapter, key)
            markers[slot] = (sorted(used - before), html)
            index = json.dumps({slot: [ids, len(kept)] for slot, (ids, kept) in markers.items()})
            # Latin-1: the HTML is ASCII and its search text Latin-1 (``markdown.search_text``); were a character
            # beyond, its reference would not match the index's length, and the slot would be drawn again.
            data = "\n".join([index, "".join(kept for _, kept in markers.values())])
            self.entry(chapter, key).write(MARKERS, data.encode("latin-1", "xmlcharrefreplace"))
        self.seconds += time.perf_counter() - started
        return html
