"""Write a file atomically, and only when its content changed.

The bytes go to ``.NAME.PID-N.tmp`` in the same folder, renamed over the target: a reader sees the
old file or the new one. An unchanged file is not touched, so ``mkdocs serve`` never rebuilds
because of its own output. A killed writer's temporary file (a dotfile: never published, ignored
by git) goes at the next write of its target, once its process has ended or it is an hour old.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from itertools import count
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "write_if_changed"]

TEMP_SUFFIX = ".tmp"
#: A temporary file this old is stale whoever wrote it: no write takes an hour.
STALE_AFTER = 3600.0
_WRITES = count()


def _stale(temp: Path, prefix: int) -> bool:
    pid = temp.name[prefix:].partition("-")[0]
    if time.time() - temp.lstat().st_mtime > STALE_AFTER:
        return True
    if os.name != "posix" or not pid.isdigit():
        return False  # elsewhere os.kill ends a process, not probes it: age decides
    try:
        os.kill(int(pid), 0)
    except PermissionError:
        return False  # another user's, running
    except (OSError, OverflowError):
        return True
    return False


def write_if_changed(path: Path, data: bytes | str, *, durable: bool = True) -> bool:
    """Replace ``path`` with ``data`` (text as UTF-8) unless it holds exactly that; whether it was written.

    ``durable=False`` skips the flush to disk, for output made again at will.
    """
    data = data.encode() if isinstance(data, str) else data
    try:
        old = path.stat()
        if old.st_size == len(data) and path.read_bytes() == data:
            return False
        mode = stat.S_IMODE(old.st_mode)  # a replaced file keeps its permissions
    except OSError:
        mode = 0o644  # not there yet
    path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{path.name}."  # ``.NAME.*.tmp``: the dot before ``tmp`` is not the prefix's
    for name in os.listdir(path.parent):
        if name.startswith(prefix) and name[len(prefix) :].endswith(TEMP_SUFFIX):
            with contextlib.suppress(OSError):  # gone already: its writer finished
                if _stale(left := path.with_name(name), len(path.name) + 2):
                    left.unlink()
    # The writer's pid in the name tells a later write whether it is still under way; the count, which write.
    temp = path.with_name(f".{path.name}.{os.getpid()}-{next(_WRITES)}{TEMP_SUFFIX}")
    try:
        with temp.open("wb") as out:
            out.write(data)
            if durable:  # on disk before the rename: a power cut cannot leave an empty file
                out.flush()
                os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return True
