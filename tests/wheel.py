"""The package as another author gets it: its wheel, built from this checkout and unpacked.

A pure-Python wheel installs by being unpacked; a folder holding it, put
first on ``PYTHONPATH``, is what the commands import, never this checkout's
editable ``primer``.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_wheel(wheels: Path) -> Path:
    """``pip wheel --no-deps`` of this checkout into ``wheels``; the wheel's path."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(wheels), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("trace_book-*.whl")
    return wheel


def unpack(wheel: Path, target: Path) -> Path:
    """The wheel unpacked into ``target``, as pip would install it."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(target)
    return target
