"""One build at a time per cache (``mkdocs serve`` rebuilding while ``mkdocs build`` runs would race).

The second waits, saying so once and naming the holder's process. The lock is
the operating system's: a build that dies leaves none. Without ``fcntl``
(Windows) builds are not kept apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, TYPE_CHECKING

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import logging

__all__ = ["NAME", "BuildLock"]

NAME = "build.lock"


class BuildLock:
    """The cache folder's build lock (``acquire`` waits, saying why; ``release`` lets the next build in)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / NAME
        self._file: IO[str] | None = None

    def acquire(self, log: logging.Logger | None = None) -> None:
        """Take the lock, waiting for another build that holds it (said once, naming its process)."""
        if fcntl is None or self._file is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log is not None:
                file.seek(0)
                log.info(
                    f"traces: another build (process {file.read().strip() or 'unknown'}) is using the cache "
                    f"{self.path.parent}; waiting for it to finish (one build at a time per cache)"
                )
            fcntl.flock(file, fcntl.LOCK_EX)
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file

    def release(self) -> None:
        """Let the next build in (nothing if not held)."""
        file, self._file = self._file, None
        if file is not None and fcntl is not None:
            fcntl.flock(file, fcntl.LOCK_UN)
            file.close()
