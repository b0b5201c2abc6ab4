"""One build at a time per cache folder: a serve's rebuild and a build would race on its entries."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import IO

if sys.platform != "win32":  # there, builds are not kept apart
    import fcntl

__all__ = ["BuildLock"]


class BuildLock:
    """One build at a time per cache folder (a serve's rebuild and a build would race): a dead build holds none."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "build.lock"
        self._file: IO[str] | None = None

    def acquire(self, log: logging.Logger) -> None:
        """Take the lock, waiting for another build that holds it (said once, naming its process)."""
        if sys.platform == "win32" or self._file is not None:
            return
        file = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            file = self.path.open("a+", encoding="utf-8")
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                file.seek(0)
                log.info(
                    f"traces: another build (process {file.read().strip() or 'unknown'}) is using the cache "
                    f"{self.path.parent}; waiting for it to finish (one build at a time per cache)"
                )
                fcntl.flock(file, fcntl.LOCK_EX)
            file.truncate(0)
            file.write(f"{os.getpid()}\n")
            file.flush()
        except OSError as error:  # like the cache it guards, a lock not taken fails no build (a folder under a file)
            if file is not None:
                file.close()
            log.info(f"traces: the cache {self.path.parent} cannot be used ({error.strerror}): builds go unlocked")
            return
        self._file = file  # held once taken: a failed try (NFS without locks) leaves the next to try again

    def release(self) -> None:
        """Let the next build in (nothing if not held): closing the file frees its lock."""
        if self._file is not None:
            self._file.close()
            self._file = None
