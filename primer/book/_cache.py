"""The one cache: what a build made of each chapter, content-addressed by one key.

Everything a build makes of a chapter is a function of four inputs, and
``chapter_key`` hashes exactly those:

* the chapter's **code**: the fingerprint of its normalised code and of the
  library code it uses (``primer.book._depends``), the same from any checkout
  and wherever the virtual environment is;
* its **frozen live trace**: the bytes of ``docs/traces/CHAPTER.live.json``
  (or that there is none);
* the **options that matter**: the ``PRIMER_*`` settings (a secret only by
  whether it is set), and any other input a front end gives the renderer
  (``Book.render_options``);
* the **renderer's version**: the package's version and the bytes of its
  templates, assets and render modules (``renderer_version``), read at every
  build, so a template saved while ``mkdocs serve`` runs is a new key at the
  next rebuild, in that process and in every later one.

Under that key (``.cache/trace-book/entries/CHAPTER/KEY/``) the build keeps what it
made: the mock trace, the verdict of a replay of the frozen trace, what the
pages show (``shown.json``: scenario names, live status, the warnings to say
again), the HTML of each marker, the payload page, the published JSON. A
warm build computes the keys (hashing files), finds every entry and serves
the pages from them, without importing the trace models. A key not found is
made the full way and kept; what depends on less than the whole key (the
mock trace on the code alone, a verdict on the code and the frozen file) is
first looked for in the chapter's other entries, so a template edit or a
refreshed live trace runs no mock scenario again. Entries the build did not use are removed after
a full build, but the last few of each chapter (``KEEP``), so an edit
undone finds its entry again.

With the cache off (``enabled`` False: the plugin's ``cache`` option,
``PRIMER_CACHE=off``) nothing is read or kept, and every build computes
everything, with the same output. A file that cannot be read is a miss; one
that cannot be written is left to the next build: the cache never fails a
build.
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

__all__ = [
    "CACHE_VARIABLE",
    "KEEP",
    "Entry",
    "TraceCache",
    "chapter_key",
    "environ_options",
    "renderer_version",
    "settings_options",
]

log = book_logger("mkdocs.plugins.primer.book")

#: Bump when what an entry holds, or how a key is made, changes.
FORMAT = 1
#: Set to ``off`` to turn the cache off (as the plugin's ``cache: false``).
CACHE_VARIABLE = "PRIMER_CACHE"
#: Entries of a chapter kept besides those a build used.
KEEP = 2

_LIBRARY = Path(__file__).resolve().parent.parent
_BOOK = _LIBRARY / "book"
#: What draws and publishes a trace, besides the templates and assets: the
#: render modules, the summary lines, and the models that serialise runs.
_RENDER_MODULES = ("book/_render*.py", "book/_stream_view.py", "book/_links.py", "book/_publish.py", "summary.py")
_SERIALISERS = ("trace.py", "offsets.py")
_SECRETS = (VARIABLES["api_key"], VARIABLES["service_key"])


def renderer_version() -> str:
    """A digest of what turns traces into pages and published files, as its files are now.

    The package's version (and those of Jinja2, MarkupSafe and pydantic), the
    bytes of the templates, the assets and the render modules, named
    relative to the library, so the digest is the same wherever it is
    installed, and the OTLP export's version (none without the ``otel``
    extra: chapters then link no OTLP JSON). Read at every call (a few
    milliseconds, once a build).
    """
    from primer.export import otlp_available, otlp_version  # found, not imported: no exporter loaded

    otlp = otlp_version() if otlp_available() else "none"
    digest = hashlib.sha256(f"renderer {FORMAT}\notlp {otlp}\n".encode())
    for package in ("trace-book", "jinja2", "markupsafe", "pydantic"):
        try:
            digest.update(f"{package} {version(package)}\n".encode())
        except PackageNotFoundError:
            digest.update(f"{package} ?\n".encode())
    files = [*(_BOOK / "templates").iterdir(), *(_BOOK / "assets").iterdir()]
    for pattern in (*_RENDER_MODULES, *_SERIALISERS):
        files += _LIBRARY.glob(pattern)
    for path in sorted(files, key=lambda p: p.relative_to(_LIBRARY).as_posix()):
        try:
            data = path.read_bytes()
        except OSError:
            continue  # a folder, or a file gone: its absence is the digest
        digest.update(f"{path.relative_to(_LIBRARY).as_posix()} ".encode())
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def environ_options(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``PRIMER_*`` settings that can change what a build makes: their values, a secret only as set."""
    options = {name: environ[name] for name in sorted(VARIABLES.values()) if name in environ}
    for name in _SECRETS:
        if name in options:
            options[name] = "set" if options[name].strip() else ""
    return options


def settings_options(settings: Settings) -> dict[str, str]:
    """The settings that can change what a build makes, for a book given its ``Settings`` (no secret)."""
    settled = settings.model_dump_json(exclude={"api_key", "service_key"})
    return {"settings": settled, "live": str(settings.live_enabled)}


def chapter_key(chapter: str, code: str, frozen: bytes | None, options: Mapping[str, str], renderer: str) -> str:
    """The one key of what a build makes of a chapter (the module's docstring)."""
    digest = hashlib.sha256(f"trace-book {FORMAT}\n{chapter}\n{code}\n{renderer}\n".encode())
    digest.update(json.dumps(sorted(options.items())).encode())
    digest.update(b"\nlive " + (hashlib.sha256(frozen).digest() if frozen is not None else b"none"))
    return digest.hexdigest()[:32]


class Entry:
    """What the cache keeps of one chapter under one key: named files (``None`` folder: the cache is off)."""

    def __init__(self, chapter: str, key: str, folder: Path | None) -> None:
        self.chapter = chapter
        self.key = key
        self.folder = folder

    def read(self, name: str) -> str | None:
        """The part ``name`` as kept, or None (not kept, unreadable, or the cache is off)."""
        if self.folder is None:
            return None
        try:
            # Bytes, not text mode: newline translation would change the HTML.
            with open(os.path.join(self.folder, name), "rb") as file:
                return file.read().decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            log.debug("traces: the cached %s of %s could not be read (%s)", name, self.chapter, error)
            return None

    def write(self, name: str, text: str) -> None:
        """Keep the part ``name`` (nothing with the cache off; one not written is made again next time)."""
        if self.folder is None:
            return
        try:
            write_if_changed(self.folder / name, text, durable=False)
        except OSError as error:
            log.debug("traces: the %s of %s could not be cached (%s)", name, self.chapter, error)


class TraceCache:
    """The entries of a book's chapters under one folder, by key."""

    def __init__(self, folder: Path, *, enabled: bool = True) -> None:
        self.folder = folder
        self.enabled = enabled
        # (chapter, key) used since ``reset``.
        self._used: set[tuple[str, str]] = set()

    def reset(self) -> None:
        """A new build: no entry used yet."""
        self._used = set()

    def entry(self, chapter: str, key: str) -> Entry:
        """The entry of ``chapter`` under ``key``, marked used by this build."""
        self._used.add((chapter, key))
        return Entry(chapter, key, self.folder / chapter / key if self.enabled else None)

    def others(self, chapter: str, key: str) -> list[Entry]:
        """The chapter's other entries, newest first: where a part that depends on less than the key may be."""
        if not self.enabled:
            return []
        try:
            folders = [path for path in (self.folder / chapter).iterdir() if path.is_dir() and path.name != key]
            folders.sort(key=lambda path: path.stat().st_mtime_ns, reverse=True)
        except OSError:
            return []
        return [Entry(chapter, path.name, path) for path in folders]

    def prune(self, chapters: list[str]) -> list[Path]:
        """Remove the entries this build did not use, keeping the last ``KEEP`` of each of ``chapters``.

        Call it after a build that showed every chapter of ``chapters``: the
        folders of chapters that are gone are removed whole.
        """
        if not self.enabled or not self._used or not self.folder.is_dir():
            return []
        removed: list[Path] = []
        used = {key for _, key in self._used}
        for chapter, key in self._used:  # the newest, for the next build's choice of what to keep
            with contextlib.suppress(OSError):
                os.utime(self.folder / chapter / key)
        for folder in self.folder.iterdir():
            if not folder.is_dir() or folder.name.startswith("."):
                continue
            entries = [path for path in folder.iterdir() if path.is_dir() and path.name not in used]
            entries.sort(key=lambda path: path.stat().st_mtime_ns, reverse=True)
            keep = KEEP if folder.name in chapters else 0
            for path in entries[keep:]:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            if keep == 0 and not any(folder.iterdir()):
                folder.rmdir()
        return removed
