"""Reading a file's bytes, and its digest hashed once a process while its size and time stay.

The cache's entries (``primer.book._cache``) and the code graph (``primer.book._chapters``) are read
here; the code graph and the renderer's version hash the same library modules.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from pathlib import Path

__all__ = ["digest_of", "file_bytes", "file_digest"]

# How much earlier than a look a file must have been saved for its bytes to be those
# executed after it, and for its digest to be kept: file systems stamp coarsely (FAT: 2 s).
_MARGIN_NS = 2_000_000_000


def digest_of(data: bytes) -> str:
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
