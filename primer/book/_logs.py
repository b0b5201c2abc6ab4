"""The book's loggers, each record made inert (``primer.inert.inert``) before it is shown.

The book logs untrusted text (an exception's message, a worker's stderr): a filter on each of its
loggers (a filter sees only its own logger's records) keeps a record one line with no escape
sequence, and a traceback its own lines but each exception's message one line.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterator

from primer.inert import inert

__all__ = ["InertRecords", "book_logger"]


class InertRecords(logging.Filter):
    """A logging filter that makes a record's message, traceback and stack inert; it drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed call is left to logging's own error report
            return True
        record.msg, record.args = inert(message), ()
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            # Formatters use exc_text when it is set, and format exc_info only when not.
            record.exc_text = "\n".join(_exception_lines(traceback.TracebackException(*record.exc_info)))
        elif record.exc_text:
            record.exc_text = _lines(record.exc_text)
        record.stack_info = record.stack_info and _lines(record.stack_info)
        return True


def book_logger(name: str | logging.Logger) -> logging.Logger:
    """The logger (by name, or itself), with ``InertRecords`` added once."""
    log = logging.getLogger(name) if isinstance(name, str) else name
    if not any(isinstance(f, InertRecords) for f in log.filters):
        log.addFilter(InertRecords())
    return log


def _lines(text: str) -> str:
    return "\n".join(inert(line) for line in text.splitlines())


def _exception_lines(error: traceback.TracebackException) -> Iterator[str]:
    # As traceback.format_exception lays it out, but each exception's own text (type, message, notes) one line.
    if error.__cause__ is not None:
        yield from _exception_lines(error.__cause__)
        yield from ("", "The above exception was the direct cause of the following exception:", "")
    elif error.__context__ is not None and not error.__suppress_context__:
        yield from _exception_lines(error.__context__)
        yield from ("", "During handling of the above exception, another exception occurred:", "")
    if error.stack:
        yield "Traceback (most recent call last):"
        yield from (inert(line) for frame in error.stack.format() for line in frame.rstrip("\n").split("\n"))
    yield inert("".join(error.format_exception_only()).rstrip("\n"))
    for inner in error.exceptions or ():  # an ExceptionGroup's members, indented
        yield from (f"  {line}" for line in _exception_lines(inner))
