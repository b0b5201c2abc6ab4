"""Files as the book and the library read and write them: bytes, a digest kept while a file stays, atomic writes.

``file_bytes`` reads a file's bytes (the cache's entries, the code graph's modules); ``file_digest`` hashes
them once a process while a file's size and time stay. ``write_if_changed`` writes atomically, and only when
the content changed: the bytes go to ``.NAME.PID-N.tmp`` in the same folder, renamed over the target, so a
reader sees the old file or the new one; an unchanged file is not touched, so ``mkdocs serve`` never
rebuilds because of its own output. A killed writer's temporary file (a dotfile: never published, ignored
by git) goes at the next write of its target, once its process has ended or it is an hour old.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import stat
import time
from itertools import count
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "digest_of", "file_bytes", "file_digest", "write_if_changed", "write_new", "write_output"]

# How much earlier than a look a file must have been saved for its bytes to be those
# executed after it, and for its digest to be kept: file systems stamp coarsely (FAT: 2 s).
_MARGIN_NS = 2_000_000_000


def digest_of(data: bytes) -> str:
    """The digest ``file_digest`` gives of a file holding ``data``."""
    return hashlib.blake2b(data, digest_size=32).hexdigest()


@functools.lru_cache(maxsize=4096)
def _hashed(path: str, size: int, mtime_ns: int) -> str | None:
    data = file_bytes(path)
    return None if data is None else digest_of(data)


def file_digest(path: str, found: os.stat_result | None = None) -> str | None:
    """A digest of a file's bytes (None: unreadable), hashed once a process while its size and time stay.

    The code graph and the renderer's version ask it of the same library modules. A file saved in the last
    two seconds is hashed each time: a coarse stamp would not tell its next save.
    """
    try:
        found = found or os.stat(path)
    except OSError:
        return None
    if time.time_ns() - found.st_mtime_ns < _MARGIN_NS:
        return _hashed.__wrapped__(path, found.st_size, found.st_mtime_ns)
    return _hashed(path, found.st_size, found.st_mtime_ns)


def file_bytes(path: str | Path | None, *, saved_before: int | None = None) -> bytes | None:
    """A file's bytes; None if unreadable, or saved after ``saved_before`` (ns, less the margin)."""
    try:
        if not path or (saved_before is not None and os.stat(path).st_mtime_ns > saved_before - _MARGIN_NS):
            return None
        # os.read, not a file object (nor Path(path), whose parsing took more than the reading): a warm
        # build reads 500 parts of the cache and the code graph's files (3 M instructions at 100 chapters).
        file = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(file, os.fstat(file).st_size + 1)  # a regular file gives it all at once
        while more := os.read(file, 1 << 16):  # one that grew since
            data += more
        return data
    except OSError:  # a folder, say
        return None
    finally:
        os.close(file)


# -- writing --

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


def write_output(path: Path, data: bytes | str) -> None:
    """Write a command's output to ``path`` as a shell's ``>`` would, but a regular file whole or not at all.

    A regular file (or none yet) is replaced atomically (``write_if_changed``); a link, a device or a pipe is
    written through, not replaced (``-o /dev/stdout``). Raises ``OSError`` (``ValueError`` for an empty name).
    """
    if os.path.islink(path) or (path.exists() and not path.is_file()):
        with path.open("wb") as out:
            out.write(data.encode() if isinstance(data, str) else data)
    else:
        write_if_changed(path, data)


def write_if_changed(path: Path, data: bytes | str, *, durable: bool = True) -> bool:
    """Replace ``path`` with ``data`` (text as UTF-8) unless it holds exactly that; whether it was written.

    ``durable=False`` skips the flush to disk, for output made again at will.
    """
    data = data.encode() if isinstance(data, str) else data
    try:
        old = path.stat()
        if old.st_size == len(data) and path.read_bytes() == data:
            return False
        mode: int | None = stat.S_IMODE(old.st_mode)  # a replaced file keeps its permissions
    except OSError:
        mode = None  # not there yet: made as open() makes a file (0o666 less the umask)
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
        with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as out:
            out.write(data)
            if durable:  # on disk before the rename: a power cut cannot leave an empty file
                out.flush()
                os.fsync(out.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    return True


def write_new(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path``, made for it as ``open`` makes a file, or (there already) ``write_if_changed``.

    For output made again at will, many files at a time (a site's published traces): not flushed to disk, and
    not through a temporary file when new (``os.open``, no file object: 5 M instructions less for the 300
    files of a 100-chapter book). A write that fails part way (a full disk) leaves nothing behind.
    """
    try:
        file = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        write_if_changed(path, data, durable=False)
        return
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_new(path, data)
        return
    try:
        view = memoryview(data)
        while view:  # a regular file takes it whole; a short write is not an error
            view = view[os.write(file, view) :]
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    finally:
        os.close(file)
