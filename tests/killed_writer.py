"""A write of ``primer.files`` killed half way, in a process of its own (SIGKILL: no cleanup runs)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.books import REPO

__all__ = ["killed_writer"]


def killed_writer(path: Path, size: int = 1000) -> Path:
    """Write ``size`` bytes to ``path`` in a process killed before the rename; the temporary file it left."""
    before = set(path.parent.iterdir())
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(REPO)!r})
        from primer.files import write_if_changed

        os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
        write_if_changed(Path({str(path)!r}), b"x" * {size})
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    [left] = set(path.parent.iterdir()) - before
    return left
