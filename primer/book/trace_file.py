"""Reading one trace file: its bytes as a ``ChapterRun``, or ``CorruptTrace`` saying what is wrong.

A file that is not JSON, not a trace, of another schema version, or that
holds a number that is not finite (``NaN``, ``Infinity``: JSON readers
accept them) raises ``CorruptTrace``, naming the file and the field. So does
a hostile one (``primer.trace_limits``): a symbolic link or a device, a file
over the size limit, nested too deep, with a stream of too many events or a
negative duration. The build warns and goes on; it runs the chapter again and replaces the file
(``primer.book.store`` keeps the files, ``primer.book.worker`` reads a
replay's). pydantic and the trace models are imported by ``parse``, not
with this module: a warm build that reads no trace loads neither.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from primer.errors import PrimerError
from primer.trace_limits import Refused, check_depth, check_run, read_bytes

if TYPE_CHECKING:
    from primer.trace import ChapterRun

__all__ = ["CorruptTrace", "parse", "read"]


class CorruptTrace(PrimerError):
    """A trace file could not be read as a trace of this schema version."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"The trace file {path} could not be read: {reason}.")
        self.path = path
        self.reason = reason


def _where(loc: tuple[str | int, ...]) -> str:
    # As pydantic names a field: scenarios.0.timing.total_ms.
    return ".".join(str(part) for part in loc) or "the top level"


def _reason(error: Exception) -> str:
    from pydantic import ValidationError  # loaded already: only a parse gives one

    if isinstance(error, ValidationError):
        first = error.errors()[0]
        count = error.error_count()
        fields = "1 field does not" if count == 1 else f"{count} fields do not"
        at = "at" if count == 1 else "the first at"
        return f"{fields} fit the trace schema, {at} {_where(first['loc'])}: {first['msg']}"
    if isinstance(error, json.JSONDecodeError):
        # json's messages are made to be followed by a place ("Unterminated
        # string starting at"): the place is given here instead.
        what = re.sub(r"(?: starting)? at$", "", error.msg)
        return f"it is not valid JSON ({what} at line {error.lineno}, column {error.colno})"
    if isinstance(error, UnicodeDecodeError):
        return f"it is not UTF-8 text (the byte at offset {error.start} cannot be decoded)"
    return f"{type(error).__name__}: {error}"


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


def read(path: Path) -> bytes:
    """A trace file's bytes, refused (``CorruptTrace``) if it is a link, not a regular file, or too large.

    ``FileNotFoundError`` when there is no file.
    """
    try:
        return read_bytes(path)
    except Refused as refused:
        raise CorruptTrace(path, refused.reason) from None


def parse(data: bytes, path: Path) -> ChapterRun:
    """A trace file's content as a ``ChapterRun``; raises ``CorruptTrace``."""
    from pydantic import ValidationError

    from primer.trace import READABLE_VERSIONS, ChapterRun, versions_read

    constants: list[str] = []

    def constant(token: str) -> float:
        # NaN, Infinity, -Infinity: not JSON, but Python's reader takes them.
        constants.append(token)
        return float(token)

    try:
        check_depth(data)
        raw: Any = json.loads(data, parse_constant=constant)
    except Refused as refused:
        raise CorruptTrace(path, refused.reason) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CorruptTrace(path, _reason(error)) from None
    if not isinstance(raw, dict):
        raise CorruptTrace(path, f"it holds {_kind(raw)}, where a trace file holds a JSON object")
    if "schema_version" not in raw:
        raise CorruptTrace(path, f"it has no schema_version, and this build reads {versions_read()}")
    version = raw["schema_version"]
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise CorruptTrace(path, f"its schema version is {version!r}, and this build reads {versions_read()}")
    found = _non_finite(raw) if constants else None
    if found is not None:
        loc, number = found
        token = "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        raise CorruptTrace(path, f"the field {_where(loc)} holds {token}, and a trace holds only finite numbers")
    try:
        run = ChapterRun.model_validate(raw)
        check_run(run)
    except ValidationError as error:
        raise CorruptTrace(path, _reason(error)) from None
    except Refused as refused:
        raise CorruptTrace(path, refused.reason) from None
    return run
