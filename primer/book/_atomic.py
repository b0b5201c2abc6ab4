"""Write a file atomically, and only when its content changed.

A reader (the renderer, a browser, ``git``) sees the old file or the new one,
never half of one: the bytes go to a temporary file in the same folder,
renamed over the target. An unchanged file is not touched, so ``mkdocs
serve`` never rebuilds because of its own output. A process killed mid-write
leaves ``.NAME.PID-RANDOM.tmp`` (a dotfile: never published, ignored by git);
the next write of that target (or ``remove_stale`` of its folder) removes it
once its writer has ended, or it is an hour old.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from itertools import count
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "remove_stale", "write_if_changed"]

TEMP_SUFFIX = ".tmp"
#: A temporary file this old is stale whoever wrote it: no write takes an hour.
STALE_AFTER = 3600.0
_WRITES = count()
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
_TEMP = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]+)-[a-z0-9_]+" + re.escape(TEMP_SUFFIX))


def _alive(pid: int) -> bool:
    if os.name != "posix":
        return True  # elsewhere os.kill ends the process, not probes it: age decides
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # another user's
    except (OSError, OverflowError):
        return False
    return True


def remove_stale(folder: Path, name: str | None = None) -> None:
    """Remove the temporary files in ``folder`` (of the target ``name``, or of any) left by killed writers."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        found = _TEMP.fullmatch(entry.name)
        if found is None or name not in (None, found["name"]):
            continue
        pid = int(found["pid"])
        with contextlib.suppress(OSError):  # gone already: its writer finished
            old = time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER
            if old or (pid != os.getpid() and not _alive(pid)):
                os.unlink(entry.path)


def write_if_changed(path: Path, data: bytes | str, *, durable: bool = True, sweep: bool = True) -> bool:
    """Replace ``path`` with ``data`` (text as UTF-8) unless it holds exactly that; whether it was written.

    ``durable=False`` skips the flush to disk, for output made again at will;
    ``sweep=False`` leaves killed writers' files to the caller's ``remove_stale``.
    """
    data = data.encode() if isinstance(data, str) else data
    try:
        old = path.stat()
        if old.st_size == len(data) and path.read_bytes() == data:
            return False
        mode = stat.S_IMODE(old.st_mode)  # a replaced file keeps its permissions
    except OSError:
        mode = 0o644  # not there yet
    if sweep:
        remove_stale(path.parent, path.name)
    # The writer's pid in the name tells a later write whether it is still under way; the count, which write.
    temp = path.with_name(f".{path.name}.{os.getpid()}-{next(_WRITES)}{TEMP_SUFFIX}")
    try:
        fd = os.open(temp, _FLAGS, 0o644)
    except FileNotFoundError:  # the folder first
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, _FLAGS, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if durable:  # on disk before the rename: a power cut cannot leave an empty file
                out.flush()
                os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return True
