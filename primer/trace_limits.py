"""What a trace file may be before it is read: a hostile file is refused, not a crash.

A trace file is input like any other, and may be edited by hand, truncated,
or planted. Every reader (the book's store, ``primer.book.trace_file``; the
command line's, ``primer.replay.read_trace``) refuses, before parsing:

* a symbolic link, and anything that is not a regular file (a device such as
  ``/dev/zero``, a pipe, a folder);
* a file larger than ``MAX_BYTES``;
* JSON nested deeper than ``MAX_DEPTH`` (Python's reader and pydantic's
  writer both fail on deep nesting, with a ``RecursionError`` or a
  serialisation error, far from the file that caused it);

and after parsing, a run with a stream of more than ``MAX_EVENTS`` events
or a negative duration. Each is a ``Refused`` saying what is wrong; the
reader names the file. The limits are far above what any recorded trace
holds (the book's largest is under 200 KB, 20 levels deep, with streams of
a few hundred events) and are named in ``docs/authors.md``.
"""

from __future__ import annotations

import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["DURATIONS", "MAX_BYTES", "MAX_DEPTH", "MAX_EVENTS", "Refused", "check_depth", "check_run", "read_bytes"]

#: The largest trace file read, in bytes.
MAX_BYTES = 16 * 1024 * 1024
#: The deepest nesting of JSON arrays and objects read.
MAX_DEPTH = 64
#: The most events one recorded stream may hold (the recorder keeps no more).
MAX_EVENTS = 10_000
#: The fields that hold a duration or a time since a start: never negative.
DURATIONS = frozenset(
    {"total_ms", "outside_ms", "waited_ms", "setup_ms", "first_byte_ms", "at_ms", "seconds", "simulated_seconds"}
)

# A JSON string (escapes included), to leave out of the bracket count.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 for b in range(256)]


class Refused(Exception):
    """A trace file refused before or after parsing: ``reason`` ends a sentence about the file."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_bytes(path: Path) -> bytes:
    """A trace file's bytes; ``Refused`` for a link, a file that is not regular, or one too large.

    ``FileNotFoundError`` when there is nothing there, as ``Path.read_bytes``
    raises it. The link is refused as it is opened (``O_NOFOLLOW``), so no
    file can be swapped in between a check and the read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if path.is_symlink():
            raise Refused("it is a symbolic link, and a trace file is read only as a regular file") from None
        if isinstance(error, FileNotFoundError):
            raise
        raise Refused(f"it could not be opened ({error.strerror})") from None
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_BYTES:
        os.close(fd)
        if not stat.S_ISREG(found.st_mode):
            raise Refused("it is not a regular file (a device, a pipe or a folder)")
        raise Refused(f"it is {found.st_size:,} bytes long, over the limit of {MAX_BYTES:,}")
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise Refused(f"it grew past the limit of {MAX_BYTES:,} bytes as it was read")
    return data


def check_depth(data: bytes) -> None:
    """``Refused`` if the JSON in ``data`` nests arrays and objects deeper than ``MAX_DEPTH``."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if depth > MAX_DEPTH:
        raise Refused(f"it nests {depth} levels deep, over the limit of {MAX_DEPTH}")


def check_run(run: BaseModel) -> None:
    """``Refused`` if a parsed trace holds a negative duration or a stream of over ``MAX_EVENTS`` events."""
    found = _first_problem(run, ())
    if found is not None:
        raise Refused(found)


def _first_problem(model: BaseModel, loc: tuple[str | int, ...]) -> str | None:
    from pydantic import BaseModel  # loaded already: a run was parsed

    for name in type(model).model_fields:
        value: Any = getattr(model, name)
        where = (*loc, name)
        if name in DURATIONS and isinstance(value, int | float) and value < 0:
            return f"the field {'.'.join(map(str, where))} holds {value}, and a duration is never negative"
        if name == "events" and isinstance(value, list) and len(value) > MAX_EVENTS:
            return (
                f"the stream at {'.'.join(map(str, loc))} holds {len(value):,} events, over the limit of {MAX_EVENTS:,}"
            )
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            if isinstance(item, BaseModel):
                found = _first_problem(item, (*where, index) if isinstance(value, list) else where)
                if found is not None:
                    return found
    return None
