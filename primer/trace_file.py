"""The one reader of a trace file: read, parse, validate, migrate; or ``UnreadableTrace`` saying why.

Every reader of a trace file (the book's store and worker, ``primer verify``,
the exports) reads it here, so a file gives the same error on every path.
A trace file is input like any other, and may be edited by hand, truncated
or planted. Refused, each with a reason naming the field where there is one:

* a symbolic link, anything not a regular file (``/dev/zero``, a pipe, a
  folder), a file over ``MAX_BYTES``;
* JSON nested deeper than ``MAX_DEPTH`` (Python's reader and pydantic's
  writer fail on deep nesting far from the file that caused it), bytes that
  are not UTF-8 or not JSON, JSON that is not an object;
* no ``schema_version``, or one not in ``READABLE_VERSIONS``;
* ``NaN`` or an infinity (JSON readers accept them; a trace never holds one);
* a field that does not fit the schema, a negative duration, a stream of
  over ``MAX_EVENTS`` events.

The limits are far above what any recorded trace holds (the book's largest
is under 200 KB, 20 levels deep, with streams of a few hundred events) and
are named in ``docs/authors.md``. A file of an older schema version is
migrated as it is read, here and nowhere else: version 1 lacks the streams
and means the same read as version 2; a file older than version 3 gets its
start offsets from its recorded order and durations (``primer.offsets``).
pydantic and the trace models are imported by ``parse``, not with this
module: a warm build that reads no trace loads neither.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.errors import PrimerError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from primer.redact import Redactor
    from primer.trace import ChapterRun

__all__ = [
    "DURATIONS",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_EVENTS",
    "RESTORE",
    "UPGRADE",
    "UnreadableTrace",
    "parse",
    "read",
    "read_trace",
]

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

#: The first schema version that records start offsets (``Timing.start_ms``).
OFFSETS_SINCE = 3

#: What to do about a file that does not read.
RESTORE = "Restore it from version control, or delete it to record it again."
UPGRADE = "A newer primer wrote it: upgrade primer to read it, or delete it to record it again."

# A JSON string (escapes included), to leave out of the bracket count; one left open runs to the end, or
# every quote after it would start a scan to the end again (a file of escaped quotes took minutes).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 for b in range(256)]


class UnreadableTrace(PrimerError):
    """A trace file that could not be read as a trace: ``problem`` names the file and the field, then what to do."""

    def __init__(self, path: Path, reason: str, advice: str = RESTORE) -> None:
        self.path = path
        self.reason = reason
        self.problem = f"The trace file {path} could not be read: {reason}."
        super().__init__(f"{self.problem} {advice}")


def read_trace(path: Path) -> ChapterRun:
    """A trace file as a ``ChapterRun``; ``UnreadableTrace`` naming the file, ``FileNotFoundError`` if none."""
    return parse(read(path), path)


def read(path: Path) -> bytes:
    """A trace file's bytes; ``UnreadableTrace`` for a link, a file that is not regular, or one too large.

    The link is refused as it is opened (``O_NOFOLLOW``), so no file can be
    swapped in between a check and the read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if path.is_symlink():
            reason = "it is a symbolic link, and a trace file is read only as a regular file"
            raise UnreadableTrace(path, reason) from None
        if isinstance(error, FileNotFoundError):
            raise
        raise UnreadableTrace(path, f"it could not be opened ({error.strerror})") from None
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_BYTES:
        os.close(fd)
        if not stat.S_ISREG(found.st_mode):
            raise UnreadableTrace(path, "it is not a regular file (a device, a pipe or a folder)")
        raise UnreadableTrace(path, f"it is {found.st_size:,} bytes long, over the limit of {MAX_BYTES:,}")
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise UnreadableTrace(path, f"it grew past the limit of {MAX_BYTES:,} bytes as it was read")
    return data


def _text(data: bytes, path: Path) -> str:
    # UTF-8 first: json.loads reads UTF-16 and UTF-32 too, whose brackets the count below does not see.
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        reason = f"it is not UTF-8 text (the byte at offset {error.start} cannot be decoded)"
        raise UnreadableTrace(path, reason) from None
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if depth > MAX_DEPTH:
        raise UnreadableTrace(path, f"it nests {depth} levels deep, over the limit of {MAX_DEPTH}")
    return text


def parse(data: bytes, path: Path) -> ChapterRun:
    """A trace file's content as a ``ChapterRun`` of this schema version; ``UnreadableTrace`` naming ``path``."""
    from pydantic import ValidationError

    from primer.offsets import migrate
    from primer.settings import Settings
    from primer.trace import READABLE_VERSIONS, SCHEMA_VERSION, ChapterRun, versions_read

    text = _text(data, path)
    constants: list[str] = []

    def constant(token: str) -> float:
        # NaN, Infinity, -Infinity: not JSON, but Python's reader takes them.
        constants.append(token)
        return float(token)

    try:
        raw: Any = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as error:
        # json's messages are made to be followed by a place ("Unterminated string starting at").
        what = re.sub(r"(?: starting)? at$", "", error.msg)
        reason = f"it is not valid JSON ({what} at line {error.lineno}, column {error.colno})"
        raise UnreadableTrace(path, reason) from None
    except ValueError:  # valid JSON Python will not read: an integer of over 4,300 digits
        raise UnreadableTrace(path, "it holds a number too long to read (over 4,300 digits)") from None
    if not isinstance(raw, dict):
        raise UnreadableTrace(path, f"it holds {_kind(raw)}, where a trace file holds a JSON object")
    if "schema_version" not in raw:
        raise UnreadableTrace(path, f"it has no schema_version, and this version of primer reads {versions_read()}")
    version = raw["schema_version"]
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION
        reason = f"its schema version is {version!r}, and this version of primer reads {versions_read()}"
        raise UnreadableTrace(path, reason, UPGRADE if newer else RESTORE)
    found = _non_finite(raw) if constants else None
    if found is not None:
        loc, number = found
        token = "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        raise UnreadableTrace(path, f"the field {_where(loc)} holds {token}, and a trace holds only finite numbers")
    try:
        run = ChapterRun.model_validate(_as_recorded(raw, Settings.keys_redactor()))
    except ValidationError as error:
        first, count = error.errors()[0], error.error_count()
        fields, at = ("1 field does not", "at") if count == 1 else (f"{count} fields do not", "the first at")
        reason = f"{fields} fit the trace schema, {at} {_where(first['loc'])}: {first['msg']}"
        raise UnreadableTrace(path, reason) from None
    problem = _first_problem(run, ()) or _misnamed(run)
    if problem is not None:
        raise UnreadableTrace(path, problem)
    if version < OFFSETS_SINCE:  # the migration: version 1 is read as 2 as it is
        migrate(run)
    run.schema_version = SCHEMA_VERSION
    return run


def _as_recorded(value: Any, redactor: Redactor) -> Any:
    """A trace's JSON as the recorder keeps it, whatever the file holds (it may be edited by hand, or planted).

    The secrets the environment sets are scrubbed from every string, and in each wire message the credentials
    its headers, URL and body carry are not recorded (``primer.redact``): a file is never published with more.
    """
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [_as_recorded(item, redactor) for item in value]
    if not isinstance(value, dict):
        return value
    found = {key: _as_recorded(item, redactor) for key, item in value.items()}
    if "headers" in value and ("url" in value or "status" in value):  # a wire request or response
        headers = value["headers"]
        if isinstance(headers, list) and all(_pair(header) for header in headers):  # else the schema refuses it
            found["headers"] = [list(header) for header in redactor.headers(tuple(h) for h in headers)]
        if isinstance(value.get("url"), str):
            found["url"] = redactor.url(value["url"])
        found["json_body"] = redactor.json(value.get("json_body"))
    return found


def _pair(header: Any) -> bool:
    return isinstance(header, list) and len(header) == 2 and all(isinstance(part, str) for part in header)


def _where(loc: tuple[str | int, ...]) -> str:
    # As pydantic names a field: scenarios.0.timing.total_ms.
    return ".".join(map(str, loc)) or "the top level"


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool) or value is None:
        return f"a bare {json.dumps(value)}"
    return "a number"


def _non_finite(value: Any, loc: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], float] | None:
    """Where the first NaN or infinity of parsed JSON is, and what it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return loc, value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, (*loc, key))
        if found is not None:
            return found
    return None


def _misnamed(run: ChapterRun) -> str | None:
    """A name a chapter's module and scenarios could not have (they become file names and anchors), or one twice."""
    from primer.locator import NAME

    names = [scenario.name for scenario in run.scenarios]
    for where, name in [("chapter", run.chapter), *((f"scenarios.{i}.name", n) for i, n in enumerate(names))]:
        if not NAME.fullmatch(name):
            return f"the field {where} holds {name!r}, and a name is made of lower-case letters, digits and underscores"
    twice = next((name for index, name in enumerate(names) if name in names[:index]), None)
    return f"two scenarios are named {twice!r}, and each scenario has a name of its own" if twice else None


def _first_problem(model: BaseModel, loc: tuple[str | int, ...]) -> str | None:
    """The first negative duration or over-long stream of a parsed run, said as a reason."""
    from pydantic import BaseModel  # loaded already: a run was parsed

    for name in type(model).model_fields:
        value: Any = getattr(model, name)
        where = (*loc, name)
        if name in DURATIONS and isinstance(value, int | float) and value < 0:
            return f"the field {_where(where)} holds {value}, and a duration is never negative"
        if name == "events" and isinstance(value, list) and len(value) > MAX_EVENTS:
            return f"the stream at {_where(loc)} holds {len(value):,} events, over the limit of {MAX_EVENTS:,}"
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            if isinstance(item, BaseModel):
                found = _first_problem(item, (*where, index) if isinstance(value, list) else where)
                if found is not None:
                    return found
    return None
