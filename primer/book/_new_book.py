"""A new book, written from the package's scaffold: ``python -m primer.book new DIR``.

The scaffold (``primer/book/scaffold/``, shipped in the wheel) is a working book: ``mkdocs.yml``, a
chapters package with one chapter, its page, a test, ``.gitignore``, ``requirements.txt`` and a
GitHub workflow; ``mkdocs build --strict`` passes on it as written. Its words ``__PACKAGE__`` (a
folder's name too), ``__SITE_NAME__``, ``__SOURCE__`` and ``__VERSION__`` are the new book's; files
git and packaging would read are shipped renamed (``gitignore``, ``github/``). The book is written
into a temporary folder beside ``DIR`` and moved into place whole; a ``DIR`` that is not empty is
refused, so nothing is half-written or overwritten.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from importlib import metadata, resources
from importlib.resources.abc import Traversable
from pathlib import Path

from primer.errors import ConfigError
from primer.variables import package_name

__all__ = ["DISTRIBUTION", "default_package", "write_book"]

#: This project's distribution: the name ``pip`` knows it by (it is on no index).
DISTRIBUTION = "trace-book"
# Scaffold names that are not the written ones: a `.gitignore` in the package
# would be read by git and the wheel builder, a `.github` folder left out.
_RENAMED = {"gitignore": ".gitignore", "github": ".github"}
_PACKAGE_WORD = "__PACKAGE__"


def default_package(folder: Path) -> str:
    """The chapters' package for a book in ``folder``: its name as a Python identifier (``my-book`` -> ``my_book``)."""
    name = re.sub(r"\W+", "_", folder.resolve().name.lower()).strip("_") or "book"
    return f"book_{name}" if name[0].isdigit() else name


def _source() -> tuple[str, str]:
    """Where this distribution comes from, for ``requirements.txt``: its source repository and version."""
    try:
        found = metadata.metadata(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "https://github.com/example/trace-book", "0.1.0"
    urls = dict(url.split(", ", 1) for url in found.get_all("Project-URL") or [] if ", " in url)
    return urls.get("Source", "https://github.com/example/trace-book"), found["Version"]


def _check_package(package: str) -> None:
    if package == "primer" or package.startswith("primer."):
        raise ConfigError(f"The chapters' package cannot be {package}: that is the library's. Choose another name.")
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = f" ({spec.origin})" if spec.origin else ""
        raise ConfigError(
            f"A package named {package} is importable already{where}: the book's chapters would be looked for "
            "there. Name the book's package otherwise, with --package."
        )


def write_book(target: Path, *, package: str | None = None, title: str | None = None) -> list[Path]:
    """Write a new book into ``target`` (new, or empty); the files written, relative to it.

    ``package`` and ``title`` default to the folder's name; ``ConfigError`` says why nothing was written.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        what = "is a file" if not target.is_dir() else "is not empty"
        raise ConfigError(
            f"{target} {what}: a new book is written into a new or empty folder, so that nothing there is "
            "overwritten. Name another folder."
        )
    package = package_name("--package", package or default_package(target))
    _check_package(package)
    title = title or target.resolve().name.replace("-", " ").replace("_", " ").strip().capitalize() or "A trace book"
    source, version = _source()
    words = {_PACKAGE_WORD: package, "__SITE_NAME__": title, "__SOURCE__": source, "__VERSION__": version}
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        written = _copy(resources.files("primer.book") / "scaffold", staging, words)
        if target.exists():
            target.rmdir()  # empty, as checked: rename() takes its place
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written


def _copy(scaffold: Traversable, staging: Path, words: dict[str, str]) -> list[Path]:
    written: list[Path] = []

    def walk(folder: Traversable, into: Path) -> None:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name == "__pycache__":
                continue
            name = _RENAMED.get(entry.name, entry.name).replace(_PACKAGE_WORD, words[_PACKAGE_WORD])
            if entry.is_dir():
                walk(entry, into / name)
                continue
            text = entry.read_text(encoding="utf-8")
            for word, value in words.items():
                text = text.replace(word, value)
            into.mkdir(parents=True, exist_ok=True)
            (into / name).write_text(text, encoding="utf-8")
            written.append((into / name).relative_to(staging))

    walk(scaffold, staging)
    return written
