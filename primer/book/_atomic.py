"""Write a file atomically, and only when its content changed.

A reader (the renderer, a browser, ``git``) sees the old file or the new one,
never half of one: the bytes go to a temporary file in the same folder, which
is then renamed over the target (``os.replace`` is atomic on one file system).
An unchanged file is not touched at all, so ``mkdocs serve``, which rebuilds
whenever a watched file changes, never rebuilds again because of its own
output::

    >>> write_if_changed(path, b"{}")      # doctest: +SKIP
    True
    >>> write_if_changed(path, b"{}")      # doctest: +SKIP
    False

A process killed in the middle of a write leaves its temporary file behind
(``.NAME.PID-RANDOM.tmp``: a dotfile, which MkDocs never publishes and
``.gitignore`` leaves out). The next write of the same target removes it,
once it is surely stale: the process named in it has ended, or it is more
than an hour old. A temporary file of a write still under way is left alone.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "remove_stale", "write_if_changed"]

#: Temporary files are dotfiles ending in this, so MkDocs (which leaves out
#: dotfiles) never publishes one left behind by a killed process.
TEMP_SUFFIX = ".tmp"

#: A temporary file this old is stale whoever wrote it: no write takes an hour.
STALE_AFTER = 3600.0

# What mkstemp puts between prefix and suffix, after our "PID-".
_WRITER = re.compile(r"(?P<pid>[0-9]+)-[a-z0-9_]+")


def _alive(pid: int) -> bool:
    if os.name != "posix":
        # Elsewhere os.kill would end the process, not probe it: age decides.
        return True
    if pid <= 0:
        return False  # no process has it (and os.kill would signal a group)
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except PermissionError:
        return True  # another user's process, alive
    except (OSError, OverflowError):
        return False  # ended, or no process can have that id
    return True


def remove_stale(folder: Path) -> None:
    """Remove the temporary files in ``folder`` left by writers that were killed (of any target)."""
    _remove_stale(folder / "x", prefix=".")


def _remove_stale(path: Path, prefix: str | None = None) -> None:
    """Remove temporary files of ``path`` (or, with ``prefix``, of every name so starting) left by killed writers."""
    prefix = prefix or f".{path.name}."
    now = time.time()
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(TEMP_SUFFIX)):
            continue
        # The writer's part follows the target's name: the last ".PID-RANDOM" before the suffix.
        writer = _WRITER.fullmatch(entry.name[: -len(TEMP_SUFFIX)].rpartition(".")[2])
        if writer is None and prefix == ".":
            continue  # sweeping a folder: only what this module names is surely ours
        try:
            old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER
        except OSError:
            continue  # gone already: its writer finished
        ended = writer is not None and int(writer["pid"]) != os.getpid() and not _alive(int(writer["pid"]))
        if old or ended:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _same(path: Path, data: bytes) -> bool:
    try:
        # A size check first: most changed files differ in length, and it
        # spares reading the old content.
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def write_if_changed(
    path: Path, data: bytes | str | Iterable[bytes], *, durable: bool = True, sweep: bool = True
) -> bool:
    """Replace ``path`` with ``data`` unless it already holds exactly that.

    ``data`` may be bytes, text (written as UTF-8) or an iterable of byte
    chunks, written as they come: if producing them fails half way, the
    temporary file is removed and the old file stands whole. Returns whether
    the file was written. ``durable=False`` skips flushing to the disk
    before the rename, for output that is made again at will (the site):
    still never half a file to a reader, but a power cut may leave it empty.
    ``sweep=False`` leaves stale temporary files to the caller, who writes
    many files into one folder and sweeps it once (``remove_stale``): each
    sweep reads the whole folder.
    """
    if isinstance(data, str):
        data = data.encode()
    if isinstance(data, bytes):
        if _same(path, data):
            return False
        chunks: Iterable[bytes] = (data,)
    else:
        chunks = data
    path.parent.mkdir(parents=True, exist_ok=True)
    if sweep:
        _remove_stale(path)
    # The writer's pid in the name tells a later write whether it is still under way.
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}-", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            # On disk before the rename, so a power cut cannot leave the new
            # name pointing at an empty file.
            if durable:
                os.fsync(out.fileno())
        if not isinstance(data, bytes) and path.is_file() and filecmp.cmp(temp, path, shallow=False):
            os.unlink(temp)
            return False
        # mkstemp makes the file private (0600); a published trace must stay
        # as readable as the file it replaces.
        os.chmod(temp, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return True
