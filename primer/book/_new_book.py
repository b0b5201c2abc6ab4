"""A new book, written from the package's scaffold (a book that builds ``--strict``): ``python -m primer.book new DIR``.

Its words ``__PACKAGE__`` (a folder's name too) and ``__SITE_NAME__`` are the new book's; files git would read
are shipped renamed (``gitignore``, ``github/``). It is written beside ``DIR`` and moved into place whole: nothing
is half-written, and a ``DIR`` not empty is refused.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from primer.errors import ConfigError
from primer.variables import package_name

_RENAMED = {"gitignore": ".gitignore", "github": ".github"}


def write_book(target: Path, *, package: str | None = None, title: str | None = None) -> list[Path]:
    """Write a new book into ``target`` (new, or empty), named after it by default; the files written, relative."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConfigError(
            f"{target} {'is not empty' if target.is_dir() else 'is a file'}: a new book is written into a new or "
            "empty folder, so that nothing there is overwritten. Name another folder."
        )
    name = target.resolve().name
    default = re.sub(r"\W+", "_", name.lower()).strip("_") or "book"  # my-book: my_book
    package = package_name("--package", package or (f"book_{default}" if default[0].isdigit() else default))
    if package == "primer" or package.startswith("primer."):
        raise ConfigError(f"The chapters' package cannot be {package}: that is the library's. Choose another name.")
    spec = None
    with contextlib.suppress(ImportError, ValueError):
        spec = importlib.util.find_spec(package)
    if spec is not None:
        raise ConfigError(
            f"A package named {package} is importable already{f' ({spec.origin})' if spec.origin else ''}: the "
            "book's chapters would be looked for there. Name the book's package otherwise, with --package."
        )
    title = title or name.replace("-", " ").replace("_", " ").strip().capitalize() or "A trace book"
    words = {"__PACKAGE__": package, "__SITE_NAME__": title}
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        with resources.as_file(resources.files("primer.book") / "scaffold") as scaffold:
            shutil.copytree(scaffold, staging, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        for path in sorted(staging.rglob("*"), reverse=True):  # a folder's files before the folder
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                for word, value in words.items():
                    text = text.replace(word, value)
                path.write_text(text, encoding="utf-8")
            path.rename(path.with_name(_RENAMED.get(path.name, path.name).replace("__PACKAGE__", package)))
        written = sorted(path.relative_to(staging) for path in staging.rglob("*") if path.is_file())
        if target.exists():
            target.rmdir()  # empty, as checked: rename() takes its place
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written
