"""One build at a time per cache: a lock file in the cache folder, held from prepare to publish.

Two builds of one book at once (a ``mkdocs serve`` rebuilding while a ``mkdocs build`` runs) would
run the same scenarios twice and race to write the same files. The second waits, saying so once and
naming the process that holds the cache. The lock is the operating system's (``fcntl.flock``): a
build that dies leaves none behind. Without ``fcntl`` (Windows), builds are not kept apart.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import logging

__all__ = ["NAME", "BuildLock"]

#: The lock file's name in the cache folder.
NAME = "build.lock"
# How often a waiting build looks again, in seconds.
_POLL = 0.1


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
        said = False
        while True:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not said and log is not None:
                    file.seek(0)
                    holder = file.read().strip() or "unknown"
                    log.info(
                        f"traces: another build (process {holder}) is using the cache {self.path.parent}; "
                        "waiting for it to finish (one build at a time per cache)"
                    )
                    said = True
                time.sleep(_POLL)
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file

    def release(self) -> None:
        """Let the next build in (nothing if not held)."""
        file, self._file = self._file, None
        if file is None or fcntl is None:
            return
        fcntl.flock(file, fcntl.LOCK_UN)
        file.close()
