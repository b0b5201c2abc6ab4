"""The one cache: what a build made of each chapter, content-addressed by one key.

``chapter_key`` hashes all a chapter's output depends on: its code's
fingerprint (``primer.book._chapters``), its frozen live trace's bytes, the
options that matter (a secret only as set) and ``renderer_version`` (read at
every build: a template saved under ``mkdocs serve`` is a new key at once).
``entries/CHAPTER/KEY/`` keeps the mock trace, a replay's verdict, what the
pages show, each marker's HTML and the published files; the mock trace and a
verdict, which depend on less, are also looked for in the chapter's other
entries. Entries unused by a full build are pruned but the last ``KEEP``.
Off (``PRIMER_CACHE=off``), nothing is read or kept; a file that cannot be
read or written is a miss: the cache never fails a build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from primer.book._atomic import write_if_changed
from primer.book._logs import book_logger
from primer.variables import VARIABLES

if TYPE_CHECKING:
    from primer.settings import Settings

__all__ = ["CACHE_VARIABLE", "KEEP", "Entry", "TraceCache", "chapter_key", "environ_options", "renderer_version"]

log = book_logger("mkdocs.plugins.primer.book")

#: Bump when what an entry holds, or how a key is made, changes.
FORMAT = 1
#: Set to ``off`` to turn the cache off.
CACHE_VARIABLE = "PRIMER_CACHE"
#: Entries of a chapter kept besides those a build used.
KEEP = 2

_LIBRARY = Path(__file__).resolve().parent.parent
#: What can change an entry's pages and files: the machinery with its templates, assets and price
#: table, and the library it renders with (summary, trace, redaction...). By pattern, not by a list
#: of render modules: a module added or renamed later is in the key without anyone keeping a list.
_RENDERER = ["book/templates/*", "book/assets/*", "book/*.py", "book/*.toml", "*.py", "export/*.py"]
_SECRETS = (VARIABLES["api_key"], VARIABLES["service_key"])


def renderer_version() -> str:
    """A digest of the versions and files (named relative to the library) that turn traces into pages and files."""
    from primer.export import otlp_available, otlp_version  # found, not imported

    lines = [f"renderer {FORMAT}", f"otlp {otlp_version() if otlp_available() else 'none'}"]
    for package in ("trace-book", "jinja2", "markupsafe", "pydantic"):
        try:
            lines.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            lines.append(f"{package} ?")
    for path in sorted({path for pattern in _RENDERER for path in _LIBRARY.glob(pattern) if path.is_file()}):
        lines.append(f"{path.relative_to(_LIBRARY).as_posix()} {hashlib.sha256(path.read_bytes()).hexdigest()}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def environ_options(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``PRIMER_*`` settings that can change what a build makes: their values, a secret only as set."""
    options = {name: environ[name] for name in sorted(VARIABLES.values()) if name in environ}
    for name in _SECRETS:
        if name in options:
            options[name] = "set" if options[name].strip() else ""
    return options


def settings_options(settings: Settings) -> dict[str, str]:
    """The settings that can change what a build makes, for a book given its ``Settings`` (no secret)."""
    return {
        "settings": settings.model_dump_json(exclude={"api_key", "service_key"}),
        "live": str(settings.live_enabled),
    }


def chapter_key(chapter: str, code: str, frozen: bytes | None, options: Mapping[str, str], renderer: str) -> str:
    """The one key of what a build makes of a chapter (the module's docstring)."""
    live = hashlib.sha256(frozen).hexdigest() if frozen is not None else "none"
    head = f"trace-book {FORMAT}\n{chapter}\n{code}\n{renderer}\n{json.dumps(sorted(options.items()))}\nlive {live}"
    return hashlib.sha256(head.encode()).hexdigest()[:32]


class Entry:
    """What the cache keeps of one chapter under one key: named files (``folder`` None: the cache is off)."""

    def __init__(self, chapter: str, key: str, folder: str | None) -> None:
        self.chapter, self.key, self.folder = chapter, key, folder

    def data(self, name: str) -> bytes | None:
        """The part ``name`` as kept, or None (not kept, unreadable, or the cache is off)."""
        if self.folder is None:
            return None
        try:
            with open(os.path.join(self.folder, name), "rb") as file:
                return file.read()
        except FileNotFoundError:
            return None
        except OSError as error:
            log.debug("traces: the cached %s of %s could not be read (%s)", name, self.chapter, error)
            return None

    def read(self, name: str) -> str | None:
        """The part ``name`` as text (bytes decoded: no newline translation), or None (``data``)."""
        data = self.data(name)
        try:
            return data.decode() if data is not None else None
        except UnicodeDecodeError:
            return None

    def write(self, name: str, text: str) -> None:
        """Keep the part ``name`` (nothing with the cache off; one not written is made again next time)."""
        try:
            if self.folder is not None:
                write_if_changed(Path(self.folder, name), text, durable=False)
        except OSError as error:
            log.debug("traces: the %s of %s could not be cached (%s)", name, self.chapter, error)


class TraceCache:
    """The entries of a book's chapters under one folder, by key."""

    def __init__(self, folder: Path, *, enabled: bool = True) -> None:
        self.folder = folder
        self.enabled = enabled
        self._used: set[tuple[str, str]] = set()  # (chapter, key) used since ``reset``

    def reset(self) -> None:
        """A new build: no entry used yet."""
        self._used = set()

    def entry(self, chapter: str, key: str) -> Entry:
        """The entry of ``chapter`` under ``key``, marked used by this build."""
        self._used.add((chapter, key))
        return Entry(chapter, key, os.path.join(self.folder, chapter, key) if self.enabled else None)

    def _entries(self, chapter: str, used: set[str]) -> list[Path]:
        try:
            found = [path for path in (self.folder / chapter).iterdir() if path.is_dir() and path.name not in used]
            return sorted(found, key=lambda path: path.stat().st_mtime_ns, reverse=True)
        except OSError:
            return []

    def others(self, chapter: str, key: str) -> list[Entry]:
        """The chapter's other entries, newest first: where a part that depends on less than the key may be."""
        found = self._entries(chapter, {key}) if self.enabled else []
        return [Entry(chapter, path.name, str(path)) for path in found]

    def prune(self, chapters: list[str]) -> list[Path]:
        """Remove the entries not used since ``reset`` but the last ``KEEP`` of each of ``chapters``."""
        if not self.enabled or not self._used or not self.folder.is_dir():
            return []
        used = {key for _, key in self._used}
        for chapter, key in self._used:  # the newest, for the next build's choice of what to keep
            with contextlib.suppress(OSError):
                os.utime(self.folder / chapter / key)
        removed: list[Path] = []
        for folder in self.folder.iterdir():
            if folder.is_dir() and not folder.name.startswith("."):
                for path in self._entries(folder.name, used)[KEEP if folder.name in chapters else 0 :]:
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
                with contextlib.suppress(OSError):
                    folder.rmdir()  # a chapter gone, its entries removed
        return removed
